//! Who may reach the dashboard, and who may act through it.
//!
//! * **Where it listens.** Loopback unless told otherwise. Any other address
//!   needs an access token: configured (a file named by `BATON_DASHBOARD_TOKEN_FILE`), or
//!   generated and printed once on the terminal that started baton. Beyond
//!   loopback every request but the page itself needs the token (as a
//!   bearer header) or a signed-in session.
//! * **Which names it answers to.** `Host` must be `localhost`, an IP
//!   address, or a configured name: a web page that rebinds its own domain
//!   to 127.0.0.1 is refused (DNS rebinding).
//! * **Who may call it.** A request that carries `Origin` must come from the
//!   dashboard's own origin; the API and the event stream refuse
//!   cross-site fetches (`Sec-Fetch-Site`); a POST without `Origin` is
//!   refused (browsers always send it), so another site cannot act.
//! * **Who may act.** Actions (answer, approve, revise, abandon) are POST
//!   requests that need a *session that acts*: its secret in the
//!   `X-Baton-Session` header. Only a one-time sign-in link printed on the
//!   terminal of the person who started the dashboard creates one. The page
//!   keeps the secret in `sessionStorage`, which only the dashboard's own
//!   origin (scheme, host **and port**) can read, and sends it as a header —
//!   never a cookie: cookies ignore ports, so a cookie for 127.0.0.1 would
//!   also reach every other server on 127.0.0.1 the person's browser visits
//!   (an agent's dev server among them). A header another origin cannot set
//!   (it would need a CORS preflight, which is never granted) is also the
//!   CSRF defence. The access token (for `/mcp` beyond loopback, and for
//!   reading) signs in a *read-only* session: the secret an agent's MCP
//!   client holds never acts. An agent that can run `curl` against the port
//!   therefore reads what it could read from `.specs/` anyway, and cannot
//!   answer its own checkpoint: it has neither the link (printed on a
//!   terminal it does not see; no link is printed when baton's output is not
//!   a terminal) nor the session (in the person's browser tab).
//! * **Sign-in attempts** are limited per source address; a valid one-time
//!   link is never refused because others guessed wrong.
//!
//! docs/dashboard.md states the limits of this.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use baton_config::Secret;

/// How long a printed sign-in link stays valid (it also expires on first use).
pub const SIGN_IN_KEY_TTL: Duration = Duration::from_secs(15 * 60);

/// How long a session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Sessions kept at most (the oldest goes first).
pub const MAX_SESSIONS: usize = 64;

/// Failed sign-ins accepted per minute from one source address before its
/// next token attempts are refused (a valid one-time link always works).
pub const MAX_FAILED_SIGN_INS_PER_MINUTE: usize = 20;

/// Source addresses whose failures are remembered at most.
const MAX_FAILURE_SOURCES: usize = 1024;

/// The header that carries the session's secret on every request of the
/// page (origin-scoped: never a cookie).
pub const SESSION_HEADER: &str = "x-baton-session";

/// The query parameter that carries a session's read ticket on `/events`
/// (an `EventSource` cannot send headers): it lets its holder read the
/// event stream and nothing else.
pub const EVENTS_TICKET_PARAM: &str = "ticket";

/// Why the dashboard cannot start with these settings.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// Beyond loopback without an access token.
    #[error(
        "{0} is not a loopback address: the dashboard needs an access token there. Name a file holding one (16+ characters) with BATON_DASHBOARD_TOKEN_FILE, or start baton in a terminal to have one generated and printed once"
    )]
    TokenRequired(SocketAddr),
}

/// How a session was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignedInWith {
    /// A one-time link from the terminal.
    Link,
    /// The access token.
    Token,
}

#[derive(Debug, Clone)]
struct Session {
    /// Signed in with a one-time link: may act.
    acts: bool,
    /// Lets its holder read `/events` (and nothing else).
    events_ticket: String,
    created: Instant,
}

/// A live session, as a request presents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionView {
    /// It may act (a one-time link signed it in), or only read (the token).
    pub acts: bool,
    /// Its `/events` read ticket.
    pub events_ticket: String,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<String, Session>,
    keys: Vec<(String, Instant)>,
    failures: HashMap<IpAddr, VecDeque<Instant>>,
}

/// The dashboard's gatekeeper: one per listener.
#[derive(Debug)]
pub struct Guard {
    bound: SocketAddr,
    loopback: bool,
    token: Option<Secret>,
    allowed_hosts: Vec<String>,
    inner: Mutex<Inner>,
}

/// A random value from the operating system (two v4 UUIDs: 244 random bits).
pub fn random_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Compares without leaking where two values differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Guard {
    /// The guard of a listener on `bound`. Beyond loopback `token` is required.
    pub fn new(
        bound: SocketAddr,
        token: Option<Secret>,
        allowed_hosts: Vec<String>,
    ) -> Result<Guard, GuardError> {
        let loopback = bound.ip().is_loopback();
        if !loopback && token.is_none() {
            return Err(GuardError::TokenRequired(bound));
        }
        Ok(Guard {
            bound,
            loopback,
            token,
            allowed_hosts,
            inner: Mutex::new(Inner::default()),
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(i) => i,
            Err(p) => p.into_inner(),
        }
    }

    /// Whether only this machine can reach the listener.
    pub fn is_loopback(&self) -> bool {
        self.loopback
    }

    /// The address people open: loopback as `127.0.0.1`, else the bound one.
    pub fn base_url(&self) -> String {
        let ip = if self.bound.ip().is_unspecified() {
            IpAddr::from([127, 0, 0, 1])
        } else {
            self.bound.ip()
        };
        format!("http://{}", SocketAddr::new(ip, self.bound.port()))
    }

    /// A new one-time sign-in key (valid for [`SIGN_IN_KEY_TTL`], once).
    pub fn issue_sign_in_key(&self) -> String {
        let key = random_secret();
        let mut inner = self.inner();
        let now = Instant::now();
        inner
            .keys
            .retain(|(_, at)| now.duration_since(*at) < SIGN_IN_KEY_TTL);
        inner.keys.push((key.clone(), now));
        key
    }

    /// The link that signs a browser in with `key`. The key travels in the
    /// fragment, which browsers never send to a server or put in a
    /// `Referer`; the page posts it once and forgets it.
    pub fn sign_in_url(&self, key: &str) -> String {
        format!("{}/#signin={key}", self.base_url())
    }

    /// Signs in from `source` with a one-time key or the access token;
    /// returns the session's secret and how it was signed in. A live
    /// one-time key always signs in (it acts); the access token signs in a
    /// read-only session. Wrong attempts are counted per source, and a
    /// source with too many in the last minute has its token attempts
    /// refused (`429`) without being checked.
    pub fn sign_in(
        &self,
        source: IpAddr,
        key: Option<&str>,
        token: Option<&str>,
    ) -> Result<(String, SignedInWith), StatusCode> {
        let mut inner = self.inner();
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        inner.failures.retain(|_, times| {
            while times
                .front()
                .is_some_and(|t| now.duration_since(*t) > minute)
            {
                times.pop_front();
            }
            !times.is_empty()
        });
        inner
            .keys
            .retain(|(_, at)| now.duration_since(*at) < SIGN_IN_KEY_TTL);
        let limited = inner
            .failures
            .get(&source)
            .is_some_and(|t| t.len() >= MAX_FAILED_SIGN_INS_PER_MINUTE);
        let with = if let Some(k) = key.filter(|k| !k.is_empty()) {
            // A valid link works whatever others guessed.
            match inner.keys.iter().position(|(known, _)| same(known, k)) {
                Some(i) => {
                    inner.keys.swap_remove(i); // once
                    Some(SignedInWith::Link)
                }
                None => None,
            }
        } else if limited {
            return Err(StatusCode::TOO_MANY_REQUESTS);
        } else if let (Some(t), Some(expected)) = (token, &self.token) {
            same(t, expected.expose()).then_some(SignedInWith::Token)
        } else {
            None
        };
        let Some(with) = with else {
            if inner.failures.len() < MAX_FAILURE_SOURCES || inner.failures.contains_key(&source) {
                inner.failures.entry(source).or_default().push_back(now);
            }
            return Err(if limited {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::UNAUTHORIZED
            });
        };
        inner
            .sessions
            .retain(|_, s| now.duration_since(s.created) < SESSION_TTL);
        if inner.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = inner
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(id, _)| id.clone())
        {
            inner.sessions.remove(&oldest);
        }
        let id = random_secret();
        inner.sessions.insert(
            id.clone(),
            Session {
                acts: with == SignedInWith::Link,
                events_ticket: random_secret(),
                created: now,
            },
        );
        Ok((id, with))
    }

    /// The live session whose secret the request carries in
    /// [`SESSION_HEADER`] (never a cookie: cookies ignore ports).
    pub fn session(&self, headers: &HeaderMap) -> Option<SessionView> {
        let id = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())?;
        let now = Instant::now();
        let inner = self.inner();
        inner
            .sessions
            .iter()
            .find(|(known, s)| {
                same(known, id.trim()) && now.duration_since(s.created) < SESSION_TTL
            })
            .map(|(_, s)| SessionView {
                acts: s.acts,
                events_ticket: s.events_ticket.clone(),
            })
    }

    /// Whether `ticket` is a live session's `/events` read ticket.
    fn events_ticket_ok(&self, ticket: &str) -> bool {
        let now = Instant::now();
        !ticket.is_empty()
            && self.inner().sessions.values().any(|s| {
                same(&s.events_ticket, ticket) && now.duration_since(s.created) < SESSION_TTL
            })
    }

    /// Whether the request carries the access token as a bearer header.
    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        let Some(expected) = &self.token else {
            return false;
        };
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| same(t.trim(), expected.expose()))
    }

    /// Whether `host` (a `Host` header or an authority) is a name this
    /// listener answers to: `localhost`, an IP literal, or a configured one.
    pub fn host_ok(&self, host: &str) -> bool {
        let name = host_name(host);
        if name.is_empty() {
            return false;
        }
        name == "localhost"
            || name.ends_with(".localhost") && self.loopback
            || name.parse::<IpAddr>().is_ok()
            || self.allowed_hosts.iter().any(|h| h == &name)
    }
}

/// The host name of a `Host` value, lower-case, without port or brackets.
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_string();
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !name.contains(':') => {
            name.to_string()
        }
        _ => host,
    }
}

/// The `ticket` parameter of a query string.
fn events_ticket(query: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == EVENTS_TICKET_PARAM)
        .map(|(_, v)| v.to_string())
}

/// Largest error body turned into JSON (a framework's error text).
const MAX_ERROR_BODY: usize = 4096;

/// Every error of the dashboard's API is JSON (`{code, message}`): an
/// error the framework answered itself (a body that is not JSON, an
/// unknown route, a wrong method) arrives as text and is rewritten.
async fn json_error(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_ERROR_BODY).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => String::new(),
    };
    let code = match status {
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => "forbidden",
        StatusCode::PAYLOAD_TOO_LARGE => "invalid_parameter",
        s if s.is_client_error() => "invalid_parameter",
        _ => "internal",
    };
    let message = if text.is_empty() {
        match status {
            StatusCode::NOT_FOUND => "no such API route".to_string(),
            StatusCode::METHOD_NOT_ALLOWED => {
                "this route does not take that method (actions are POST)".to_string()
            }
            s => s.canonical_reason().unwrap_or("error").to_string(),
        }
    } else {
        text
    };
    let mut out = (
        status,
        axum::Json(serde_json::json!({"code": code, "message": message})),
    )
        .into_response();
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    out
}

/// Whether `origin` is the origin of a page served from `host`.
fn same_origin(origin: &str, host: &str) -> bool {
    let origin = origin.trim().to_ascii_lowercase();
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| a == host.trim().to_ascii_lowercase())
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"code": "forbidden", "message": message});
    (status, axum::Json(body)).into_response()
}

/// Paths anyone who reaches the listener may GET: the page and its files
/// (they hold no data), the health check, the session probe and sign-in.
fn is_public(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (path == "/"
            || path == "/stats"
            || path.starts_with("/runs/")
            || path.starts_with("/assets/")
            || path == "/healthz"
            || path == "/api/session")
        || (method == Method::POST && path == "/api/login")
}

/// The server's checks, in order: `Host`, `Origin` and fetch site,
/// authentication beyond loopback, and a session with its CSRF token for
/// every action. MCP (`/mcp…`, for agents' clients, which send no cookies)
/// only needs the access token beyond loopback; rmcp checks its `Host`.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    if path == "/mcp" || path.starts_with("/mcp/") {
        if guard.loopback || guard.bearer_ok(headers) {
            return next.run(request).await;
        }
        return refuse(
            StatusCode::UNAUTHORIZED,
            "this server listens beyond loopback: send Authorization: Bearer <access token>",
        );
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()))
        .unwrap_or_default();
    if !guard.host_ok(&host) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this Host is not one the dashboard answers to (DNS rebinding protection); add it to [dashboard] allowed_hosts if it is yours",
        );
    }
    let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
    if let Some(o) = origin
        && !same_origin(o, &host)
    {
        return refuse(StatusCode::FORBIDDEN, "cross-origin request refused");
    }
    let page = (method == Method::GET || method == Method::HEAD)
        && (path == "/"
            || path == "/stats"
            || path.starts_with("/runs/")
            || path.starts_with("/assets/"));
    let site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !page && !matches!(site, "" | "same-origin" | "none") {
        return refuse(StatusCode::FORBIDDEN, "cross-site request refused");
    }
    let reads = method == Method::GET || method == Method::HEAD;
    if !reads && origin.is_none() {
        return refuse(
            StatusCode::FORBIDDEN,
            "actions come from the dashboard page only (no Origin header)",
        );
    }
    let session = guard.session(headers);
    // An EventSource cannot send headers: `/events` takes a session's read
    // ticket in its query instead (it reads, nothing else).
    let events_ticket = (reads && path == "/events")
        .then(|| events_ticket(request.uri().query().unwrap_or("")))
        .flatten()
        .is_some_and(|t| guard.events_ticket_ok(&t));
    if !guard.loopback
        && !is_public(&method, &path)
        && session.is_none()
        && !events_ticket
        && !guard.bearer_ok(headers)
    {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "sign in: open the link baton printed, or give the access token",
        );
    }
    if !reads && path != "/api/login" {
        match session {
            Some(s) if s.acts => {}
            Some(_) => {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "this session was signed in with the access token, which only reads: actions need the one-time sign-in link printed on the terminal that started `baton dashboard` (a person's channel)",
                );
            }
            None => {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "actions need a signed-in dashboard: open the sign-in link printed on the terminal that started `baton dashboard` (a person's channel; an agent cannot act here)",
                );
            }
        }
    }
    let api = path.starts_with("/api/");
    let mut response = next.run(request).await;
    if api {
        response = json_error(response).await;
    }
    let h = response.headers_mut();
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            "127.0.0.1:8377".parse().unwrap(),
            None,
            vec!["box.lan".into()],
        )
        .unwrap()
    }

    #[test]
    fn beyond_loopback_a_token_is_required() {
        let err = Guard::new("0.0.0.0:8377".parse().unwrap(), None, vec![]).unwrap_err();
        assert!(err.to_string().contains("BATON_DASHBOARD_TOKEN_FILE"));
        assert!(
            Guard::new(
                "0.0.0.0:8377".parse().unwrap(),
                Some(Secret::new("0123456789abcdef")),
                vec![]
            )
            .is_ok()
        );
        assert!(Guard::new("[::1]:1".parse().unwrap(), None, vec![]).is_ok());
    }

    #[test]
    fn hosts_localhost_ip_literals_and_configured_names_only() {
        let g = guard();
        for ok in [
            "127.0.0.1:8377",
            "localhost:9000",
            "LOCALHOST",
            "[::1]:8377",
            "10.0.0.5:8377",
            "box.lan:8377",
        ] {
            assert!(g.host_ok(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8377",
            "127.0.0.1.nip.io:8377",
            "",
            "localhost.evil.example",
        ] {
            assert!(!g.host_ok(bad), "{bad}");
        }
    }

    #[test]
    fn origins_must_match_the_host_exactly() {
        assert!(same_origin("http://127.0.0.1:8377", "127.0.0.1:8377"));
        assert!(!same_origin("http://127.0.0.1:8378", "127.0.0.1:8377"));
        assert!(!same_origin("http://evil.example", "127.0.0.1:8377"));
        assert!(!same_origin("null", "127.0.0.1:8377"));
    }

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn a_sign_in_key_works_once_and_a_wrong_one_never() {
        let g = guard();
        let key = g.issue_sign_in_key();
        assert!(g.sign_in(LOCAL, Some(&key), None).is_ok());
        assert_eq!(
            g.sign_in(LOCAL, Some(&key), None).unwrap_err(),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            g.sign_in(LOCAL, Some("guess"), None).unwrap_err(),
            StatusCode::UNAUTHORIZED
        );
        // No token configured: a token never signs in.
        assert_eq!(
            g.sign_in(LOCAL, None, Some("")).unwrap_err(),
            StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn guessing_is_limited_per_source_and_never_locks_out_a_valid_link() {
        let g = Guard::new(
            "127.0.0.1:8377".parse().unwrap(),
            Some(Secret::new("0123456789abcdef")),
            vec![],
        )
        .unwrap();
        let guesser: IpAddr = "10.0.0.9".parse().unwrap();
        for _ in 0..MAX_FAILED_SIGN_INS_PER_MINUTE {
            let _ = g.sign_in(guesser, Some("guess"), None);
        }
        // The guesser's token attempts are refused unchecked, even right ones…
        assert_eq!(
            g.sign_in(guesser, None, Some("0123456789abcdef"))
                .unwrap_err(),
            StatusCode::TOO_MANY_REQUESTS
        );
        // …another source is not affected…
        assert!(g.sign_in(LOCAL, None, Some("0123456789abcdef")).is_ok());
        // …and a valid link works from anywhere, the guesser's address too.
        let key = g.issue_sign_in_key();
        assert_eq!(
            g.sign_in(guesser, Some(&key), None).unwrap().1,
            SignedInWith::Link
        );
    }

    #[test]
    fn a_session_is_found_by_its_header_only_and_only_a_link_acts() {
        let g = Guard::new(
            "127.0.0.1:8377".parse().unwrap(),
            Some(Secret::new("0123456789abcdef")),
            vec![],
        )
        .unwrap();
        let key = g.issue_sign_in_key();
        let (id, with) = g.sign_in(LOCAL, Some(&key), None).unwrap();
        assert_eq!(with, SignedInWith::Link);
        let mut headers = HeaderMap::new();
        headers.insert(SESSION_HEADER, HeaderValue::from_str(&id).unwrap());
        let seen = g.session(&headers).expect("the session");
        assert!(seen.acts);
        assert!(g.events_ticket_ok(&seen.events_ticket));
        assert!(!g.events_ticket_ok("nope"));
        // The same secret in a cookie is nothing.
        let mut cookie = HeaderMap::new();
        cookie.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("baton_session_8377={id}; session={id}")).unwrap(),
        );
        assert_eq!(g.session(&cookie), None);
        let mut wrong = HeaderMap::new();
        wrong.insert(SESSION_HEADER, HeaderValue::from_static("nope"));
        assert_eq!(g.session(&wrong), None);
        // The access token signs in a session that only reads.
        let (token_id, with) = g.sign_in(LOCAL, None, Some("0123456789abcdef")).unwrap();
        assert_eq!(with, SignedInWith::Token);
        let mut headers = HeaderMap::new();
        headers.insert(SESSION_HEADER, HeaderValue::from_str(&token_id).unwrap());
        assert!(!g.session(&headers).unwrap().acts);
    }
}
