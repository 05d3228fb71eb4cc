//! The dashboard: one page at `/` (embedded in the binary: hand-written
//! HTML, CSS and JavaScript, no CDN, no build step) and the JSON API it
//! reads and acts through. Served by `baton dashboard` and by
//! `baton serve --http`.
//!
//! | route | what |
//! |---|---|
//! | `GET /`, `GET /runs/{id}`, `GET /stats` | the page (a run's own link opens it on that run; `/stats` on the repository's numbers) |
//! | `GET /assets/app.js`, `/assets/app.css` | its code and style |
//! | `GET /api/runs?offset&limit&status&q` | a page of runs ([`baton_usecases::overview::run_page`]) |
//! | `GET /api/runs/{id}` | one run at a glance ([`baton_usecases::overview::run_overview`]), the question rendered |
//! | `GET /api/runs/{id}/artifacts/{name}` | an artifact rendered from Markdown, sanitised ([`render`]) |
//! | `GET /api/runs/{id}/insights` | the run's summary, estimate and its reviewers' patterns ([`baton_usecases::history::run_insights`]) |
//! | `GET /api/stats?workflow` | the repository's numbers from the run history ([`baton_usecases::history::dashboard`], as `analytics_dashboard` and `baton stats`) |
//! | `POST /api/runs/{id}/answer` | answer the pending question (`{question, answer, text?}`) |
//! | `POST /api/runs/{id}/abandon` | abandon the run (`{reason?}`) |
//! | `GET /api/session`, `POST /api/login` | the session probe and sign-in (one-time key or access token) |
//! | `GET /events` | every event of the repository, live (SSE) |
//!
//! Every action goes through the same use cases as MCP and the terminal
//! (`answer_question` as `person:dashboard`, `abandon_by`), so the same
//! guards apply and the same events are published. [`security`] decides
//! who may reach the page and who may act.

pub mod render;
pub mod security;

use std::net::SocketAddr;
use std::sync::Arc;

use std::time::Duration;
use tokio_util::sync::CancellationToken;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use baton_config::{Config, Secret};
use baton_state::Actor;
use baton_usecases::history;
use baton_usecases::overview::{self, PageArgs, RunFilter};
use baton_usecases::pipeline::answer::{AnswerArgs, answer_question, pending_question};
use baton_usecases::recovery::{AbandonArgs, abandon_by};
use baton_usecases::{Error, ErrorCode};

use crate::context::AppContext;
use crate::{ServeError, build_context};
use security::{Guard, random_secret};

/// A line on stderr; a closed stderr never stops the server.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// The page.
pub const INDEX_HTML: &str = include_str!("assets/index.html");
/// Its script.
pub const APP_JS: &str = include_str!("assets/app.js");
/// Its style.
pub const APP_CSS: &str = include_str!("assets/app.css");

/// The channel recorded for answers given here.
pub const CHANNEL: &str = "dashboard";

/// Shared by the dashboard's handlers.
#[derive(Debug, Clone)]
pub struct Dashboard {
    ctx: Arc<AppContext>,
    guard: Arc<Guard>,
    index: Arc<overview::RunIndex>,
}

/// The page and its API (no `/events`, no `/healthz`: the server that
/// mounts them has those), behind nothing: wrap the whole server in
/// [`security::check`].
pub fn routes(ctx: Arc<AppContext>, guard: Arc<Guard>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/runs/{id}", get(page))
        .route("/stats", get(page))
        .route("/assets/app.js", get(script))
        .route("/assets/app.css", get(style))
        .route("/api/session", get(session))
        .route("/api/login", post(login))
        .route("/api/runs", get(list))
        .route("/api/runs/{id}", get(show))
        .route("/api/runs/{id}/artifacts/{name}", get(artifact))
        .route("/api/runs/{id}/insights", get(insights))
        .route("/api/stats", get(stats))
        .route("/api/runs/{id}/answer", post(answer))
        .route("/api/runs/{id}/abandon", post(abandon))
        .with_state(Dashboard {
            ctx,
            guard,
            index: Arc::new(overview::RunIndex::default()),
        })
}

/// `routes` plus the event stream and the health check, behind the guard:
/// everything `baton dashboard` serves. Event streams end when `shutdown`
/// is cancelled.
pub fn app(ctx: Arc<AppContext>, guard: Arc<Guard>, shutdown: CancellationToken) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/events", get(crate::http::events))
        .with_state(crate::http::EventsState::new(Arc::clone(&ctx), shutdown))
        .merge(routes(ctx, Arc::clone(&guard)))
        .layer(axum::middleware::from_fn_with_state(guard, security::check))
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

async fn page() -> Response {
    let mut r = asset("text/html; charset=utf-8", INDEX_HTML);
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    r
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

/// A use-case error as JSON with a fitting status.
fn error_response(e: Error) -> Response {
    let status = match e.code {
        ErrorCode::InvalidParameter | ErrorCode::InvalidPath | ErrorCode::InvalidScope => {
            StatusCode::BAD_REQUEST
        }
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::OutOfScope | ErrorCode::Forbidden => StatusCode::FORBIDDEN,
        ErrorCode::InvalidState | ErrorCode::Blocked | ErrorCode::Conflict => StatusCode::CONFLICT,
        ErrorCode::CorruptState | ErrorCode::UnsupportedVersion => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, axum::Json(e)).into_response()
}

/// Runs a (file-reading, locking) use case off the async threads.
async fn blocking<T: serde::Serialize + Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(e)) => error_response(e),
        Err(_) => error_response(Error::new(ErrorCode::Internal, "the request's task failed")),
    }
}

/// The session probe: whether the request's `X-Baton-Session` names a live
/// session, whether it acts, and its `/events` read ticket. Nothing is
/// returned for a cookie (the dashboard sets none).
async fn session(State(d): State<Dashboard>, headers: axum::http::HeaderMap) -> Response {
    let s = d.guard.session(&headers);
    axum::Json(json!({
        "signedIn": s.is_some(),
        "canAct": s.as_ref().is_some_and(|s| s.acts),
        "eventsTicket": s.map(|s| s.events_ticket),
        "loopback": d.guard.is_loopback(),
        "version": d.ctx.version,
        "repository": d.ctx.config.repo_root.file_name().and_then(|n| n.to_str()).unwrap_or(""),
    }))
    .into_response()
}

/// Body of `POST /api/login`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    /// A one-time key from a printed sign-in link.
    #[serde(default)]
    key: Option<String>,
    /// The access token.
    #[serde(default)]
    token: Option<String>,
}

/// Signs in with a one-time link's key (a session that acts) or the access
/// token (a session that reads). The session's secret is returned in the
/// body for the page to keep in `sessionStorage` and send as
/// `X-Baton-Session`; no cookie is set.
async fn login(
    State(d): State<Dashboard>,
    peer: Option<axum::Extension<crate::http::Peer>>,
    body: axum::Json<LoginBody>,
) -> Response {
    let source = peer
        .map(|p| p.0.0.ip())
        .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
    match d
        .guard
        .sign_in(source, body.key.as_deref(), body.token.as_deref())
    {
        Ok((id, with)) => axum::Json(json!({
            "signedIn": true,
            "session": id,
            "canAct": with == security::SignedInWith::Link,
        }))
        .into_response(),
        Err(status) => (
            status,
            axum::Json(json!({"code": "forbidden", "message": if status == StatusCode::TOO_MANY_REQUESTS {
                "too many failed sign-ins from this address; wait a minute (a one-time link from the terminal still works)"
            } else if body.key.is_some() {
                "this sign-in link was already used, has expired, or is wrong: press Enter in the terminal running baton for a new one"
            } else {
                "wrong access token"
            }})),
        )
            .into_response(),
    }
}

/// Query of `GET /api/runs`. The numbers are taken as text and read here,
/// so a value that is not one gets a JSON error saying what to pass (the
/// framework's own refusal is a bare text line).
#[derive(Debug, Deserialize)]
struct ListQuery {
    #[serde(default)]
    offset: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    q: Option<String>,
}

/// A whole-number query parameter (absent or empty: 0).
fn whole_number(field: &str, text: Option<&str>) -> Result<usize, Error> {
    let text = text.unwrap_or("").trim();
    if text.is_empty() {
        return Ok(0);
    }
    text.parse().map_err(|_| {
        Error::invalid(
            field,
            format!(
                "{field} must be a whole number, 0 or more (e.g. {field}=20), not {text:?}; leave it out for the default"
            ),
        )
    })
}

async fn list(State(d): State<Dashboard>, Query(q): Query<ListQuery>) -> Response {
    blocking(move || {
        let filter = RunFilter::parse(q.status.as_deref().unwrap_or(""))?;
        overview::run_page_with(
            &d.ctx,
            &d.index,
            PageArgs {
                offset: whole_number("offset", q.offset.as_deref())?,
                limit: whole_number("limit", q.limit.as_deref())?,
                filter,
                search: q.q,
            },
        )
    })
    .await
}

async fn show(State(d): State<Dashboard>, Path(id): Path<String>) -> Response {
    blocking(move || {
        let o = overview::run_overview(&d.ctx, &id)?;
        let mut v =
            serde_json::to_value(&o).map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?;
        if let (Some(q), Some(slot)) = (&o.question, v.get_mut("question")) {
            slot["html"] = Value::String(render::markdown_to_html(&q.text));
        }
        Ok(v)
    })
    .await
}

async fn artifact(
    State(d): State<Dashboard>,
    Path((id, name)): Path<(String, String)>,
) -> Response {
    blocking(move || {
        let a = overview::artifact(&d.ctx, &id, &name)?;
        Ok(json!({
            "name": a.name,
            "size": a.size,
            "truncated": a.truncated,
            "html": render::markdown_to_html(&a.text),
        }))
    })
    .await
}

async fn insights(State(d): State<Dashboard>, Path(id): Path<String>) -> Response {
    blocking(move || history::run_insights(&d.ctx, history::SummaryArgs { workspace: id })).await
}

/// Query of `GET /api/stats`.
#[derive(Debug, Deserialize)]
struct StatsQuery {
    /// Only runs of this workflow.
    #[serde(default)]
    workflow: Option<String>,
}

/// The repository's numbers: the same use case as `analytics_dashboard`
/// and `baton stats`, over the history's records (no `state.json` read).
async fn stats(State(d): State<Dashboard>, Query(q): Query<StatsQuery>) -> Response {
    blocking(move || {
        history::dashboard(
            &d.ctx,
            history::DashboardArgs {
                workflow: q.workflow,
            },
        )
    })
    .await
}

/// Body of `POST /api/runs/{id}/answer`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    /// The question the person saw (refused when the run now waits at another).
    question: String,
    /// One of its options.
    answer: String,
    /// Free text (what to revise).
    #[serde(default)]
    text: Option<String>,
}

async fn answer(
    State(d): State<Dashboard>,
    Path(id): Path<String>,
    body: axum::Json<AnswerBody>,
) -> Response {
    let body = body.0;
    blocking(move || {
        let current = pending_question(&d.ctx, &id)?;
        match current {
            Some(q) if q.name == body.question => {}
            Some(q) => {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "the run now waits at {} (you answered {}); look again before answering",
                        q.name, body.question
                    ),
                ));
            }
            None => {
                return Err(Error::new(
                    ErrorCode::InvalidState,
                    "nothing in this run waits for an answer any more",
                ));
            }
        }
        let text = body.text.as_deref().map(str::trim).unwrap_or("");
        let answer = if text.is_empty() {
            body.answer.trim().to_string()
        } else {
            format!("{}: {text}", body.answer.trim())
        };
        answer_question(
            &d.ctx,
            AnswerArgs {
                workspace: id,
                answer,
            },
            Actor::person(CHANNEL),
        )
    })
    .await
}

/// Body of `POST /api/runs/{id}/abandon`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AbandonBody {
    /// Why.
    #[serde(default)]
    reason: Option<String>,
}

async fn abandon(
    State(d): State<Dashboard>,
    Path(id): Path<String>,
    body: axum::Json<AbandonBody>,
) -> Response {
    let reason = body.0.reason.filter(|r| !r.trim().is_empty());
    blocking(move || {
        // A run waiting at a question that offers `abandon` is abandoned by
        // answering it (the answer is recorded with the question).
        if let Some(q) = pending_question(&d.ctx, &id)?
            && q.options.iter().any(|o| o == "abandon")
        {
            let answer = match &reason {
                Some(r) => format!("abandon: {r}"),
                None => "abandon".into(),
            };
            let reply = answer_question(
                &d.ctx,
                AnswerArgs {
                    workspace: id,
                    answer,
                },
                Actor::person(CHANNEL),
            )?;
            return Ok(json!({"workspace": reply.workspace, "currentPhase": reply.current_phase, "currentPhaseStatus": reply.current_phase_status, "by": reply.by}));
        }
        let reply = abandon_by(&d.ctx, AbandonArgs { workspace: id, reason }, &Actor::person(CHANNEL))?;
        Ok(json!({"workspace": reply.workspace, "currentPhase": reply.current_phase, "currentPhaseStatus": reply.current_phase_status, "by": Actor::person(CHANNEL).label()}))
    })
    .await
}

/// The guard for a listener on `bound`: the configured token, or — beyond
/// loopback, on a person's terminal — a generated one, printed once.
pub fn guard_for(
    config: &Config,
    bound: SocketAddr,
    person: bool,
) -> Result<Arc<Guard>, ServeError> {
    let mut token = config.dashboard.token.clone();
    if token.is_none() && !bound.ip().is_loopback() && person {
        let generated = random_secret();
        say!(
            "baton: access token for {bound} (shown once; put your own in a file named by BATON_DASHBOARD_TOKEN_FILE to choose it): {generated}"
        );
        token = Some(Secret::new(generated));
    }
    Guard::new(bound, token, config.dashboard.allowed_hosts.clone())
        .map(Arc::new)
        .map_err(|e| ServeError::Io(e.to_string()))
}

/// Whether a person started this process at a terminal (its input and its
/// error output are one): only then is a sign-in link printed.
pub fn person_at_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Tells the person where the dashboard is and, on a terminal, prints a
/// one-time sign-in link (and a new one whenever they press Enter).
pub fn announce(guard: &Arc<Guard>, person: bool) {
    let url = guard.base_url();
    if person {
        let key = guard.issue_sign_in_key();
        say!(
            "baton: dashboard at {url}/\n       sign in to act (answer, revise, abandon) — this link works once, for 15 minutes:\n       {}\n       press Enter for a new link",
            guard.sign_in_url(&key)
        );
        let guard = Arc::clone(guard);
        // A person at the terminal asks for another link with Enter.
        let _ = std::thread::Builder::new()
            .name("baton-signin".into())
            .spawn(move || {
                let mut line = String::new();
                while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                    line.clear();
                    let key = guard.issue_sign_in_key();
                    say!(
                        "baton: new sign-in link (once, 15 minutes): {}",
                        guard.sign_in_url(&key)
                    );
                }
            });
    } else {
        say!(
            "baton: dashboard at {url}/ (read-only: no terminal to print a sign-in link on; start baton in a terminal to act from the browser)"
        );
    }
}

/// Starts the webhook notifier for the process's own events, if any
/// webhook is configured. A notifier that cannot start is logged, never fatal.
pub fn start_notifier(ctx: &Arc<AppContext>) -> Option<baton_notify::Notifier> {
    let c = Arc::clone(ctx);
    match baton_notify::start(
        &ctx.config.notify,
        ctx.bus.subscribe_local(),
        Arc::new(move |e| baton_usecases::notifications::notification_for(&c, e)),
    ) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    }
}

/// `baton dashboard`: follows the repository's event log and serves the
/// page, its API and `/events` on `addr` until SIGINT/SIGTERM.
pub async fn serve_dashboard(mut config: Config, addr: SocketAddr) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        ServeError::Io(format!(
            "cannot listen on {addr}: {e}{}",
            if e.kind() == std::io::ErrorKind::AddrInUse {
                " (another dashboard? try --port 0 for a free port)"
            } else {
                ""
            }
        ))
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    let person = person_at_terminal();
    let guard = guard_for(&config, bound, person)?;
    if config.notify.dashboard_url.is_none() {
        config.notify.dashboard_url = Some(guard.base_url());
    }
    let ctx = build_context(config)?;
    // The stats and a run's figures read the run history: load it in the
    // background, as `serve` does, so the first look does not wait for it.
    crate::warm_history(&ctx);
    ctx.bus
        .follow_log()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    let notifier = start_notifier(&ctx);
    let cancel = CancellationToken::new();
    let limits = crate::http::HttpLimits::from_env()?;
    let app = app(Arc::clone(&ctx), Arc::clone(&guard), cancel.clone());
    announce(&guard, person);
    let outcome = crate::serve_until_signal(listener, app, cancel, limits).await;
    if let Some(n) = notifier {
        n.finish(Duration::from_secs(3));
    }
    outcome
}
