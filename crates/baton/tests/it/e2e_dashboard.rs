//! `baton dashboard` and the dashboard on `baton serve --http`, over raw
//! HTTP: events written by other processes reach `/events` live and in log
//! order; loopback by default and a token beyond it; foreign `Host` and
//! `Origin` refused; GET cannot act; actions need a signed-in session and its
//! CSRF token, and go through the same use cases (recorded as
//! `person:dashboard`). The repository's stats and a run's figures are the
//! run history's use cases' numbers (the same as `analytics_dashboard`,
//! `baton stats --json`, `analytics_summary`, `analytics_estimate`,
//! `history_patterns`). The browser suite (tests/browser) drives the page.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::baton_bin;
use crate::common::pipeline::{Script, create, drive, git_repo};
use serde_json::{Value, json};

const TOKEN: &str = "test-token-0123456789abcdef";

/// A file holding [`TOKEN`], outside the repository (the token is read from
/// a file, never from the environment), and the variable naming it.
struct TokenFile {
    _dir: tempfile::TempDir,
    path: String,
}

impl TokenFile {
    fn new() -> TokenFile {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dashboard-token");
        std::fs::write(&path, format!("{TOKEN}\n")).unwrap();
        TokenFile {
            path: path.display().to_string(),
            _dir: dir,
        }
    }

    fn env(&self) -> (&'static str, &str) {
        ("BATON_DASHBOARD_TOKEN_FILE", self.path.as_str())
    }
}

struct Server {
    child: Child,
    /// Where to connect (`127.0.0.1:port`).
    addr: String,
    /// What the server said on stderr at start.
    said: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(repo: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(baton_bin());
    c.args(args)
        .current_dir(repo)
        .env("BATON_FSYNC", "off")
        .env_remove("BATON_DASHBOARD_TOKEN")
        .env_remove("BATON_NOTIFY_SLACK_URL")
        .env_remove("BATON_NOTIFY_WEBHOOK_URL")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Starts a server and reads stderr up to the line naming `marker`.
fn start(repo: &std::path::Path, args: &[&str], env: &[(&str, &str)], marker: &str) -> Server {
    let mut child = command(repo, args, env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let addr = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("the server ended before saying {marker:?}:\n{said}");
        }
        said.push_str(&line);
        if let Some(rest) = line.split(marker).nth(1) {
            break rest
                .split("http://")
                .nth(1)
                .and_then(|r| r.split(['/', ' ', ')']).next())
                .unwrap_or_else(|| panic!("no address in {line:?}"))
                .to_string();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = stderr.read_to_string(&mut sink);
    });
    Server { child, addr, said }
}

fn dashboard(repo: &std::path::Path, bind: &str, env: &[(&str, &str)]) -> Server {
    start(
        repo,
        &["dashboard", "--port", "0", "--bind", bind],
        env,
        "dashboard at ",
    )
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// One HTTP/1.1 request with `headers` (a `Host` is added unless given).
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    if method != "GET" {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // Chunked bodies: keep only the JSON between the chunk sizes.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Reply {
        status,
        head: head.to_string(),
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Runs `baton run` with the scripted agent and no terminal: it stops at the
/// first checkpoint. Returns the run's folder name.
fn run_to_checkpoint(repo: &std::path::Path, text: &str) -> String {
    let before: Vec<String> = folders(repo);
    let out = command(
        repo,
        &[
            "run",
            text,
            "--effort",
            "S",
            "--nopr",
            "--agent",
            "builtin:scripted",
        ],
        &[],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("checkpoint-a waits for your answer"),
        "{stderr}"
    );
    folders(repo)
        .into_iter()
        .find(|f| !before.contains(f))
        .expect("a new run")
}

fn folders(repo: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(repo.join(".specs"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.as_bytes().first().is_some_and(u8::is_ascii_digit))
                .collect()
        })
        .unwrap_or_default()
}

fn state(repo: &std::path::Path, id: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(repo.join(".specs").join(id).join("state.json")).unwrap(),
    )
    .unwrap()
}

/// Waits for a process that must not start, killing it if it does.
fn must_exit(mut c: Command) -> (i32, String) {
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the server started although it must not");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn events_of_other_processes_reach_the_stream_live_and_in_log_order() {
    let repo = git_repo();
    let server = dashboard(repo.path(), "127.0.0.1", &[]);
    assert!(
        server.said.contains("read-only"),
        "no terminal, no sign-in link: {}",
        server.said
    );
    assert!(!server.said.contains("signin="), "{}", server.said);
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET /events HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.addr
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("200"), "{line}");
    // Another process drives a run while the stream is open.
    let writer = std::thread::spawn({
        let root = repo.path().to_path_buf();
        move || run_to_checkpoint(&root, "Add a greeting")
    });
    let mut streamed = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            panic!("the stream ended");
        }
        if let Some(data) = line.strip_prefix("data: ") {
            let v: Value = serde_json::from_str(data.trim()).unwrap();
            let done = v["event"] == "checkpoint";
            streamed.push(v);
            if done {
                break;
            }
        }
    }
    let id = writer.join().unwrap();
    let logged: Vec<Value> = repo
        .events()
        .into_iter()
        .filter(|e| e["workspace"].as_str().is_some_and(|w| w.ends_with(&id)))
        .take(streamed.len())
        .collect();
    assert_eq!(streamed, logged, "every event, once, in the log's order");
    let kinds: Vec<&str> = streamed
        .iter()
        .filter_map(|e| e["event"].as_str())
        .collect();
    assert_eq!(kinds.first(), Some(&"pipeline-init"));
    assert!(
        kinds.contains(&"agent-dispatch") && kinds.contains(&"phase-complete"),
        "{kinds:?}"
    );
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let repo = git_repo();
    let (code, err) = must_exit(command(
        repo.path(),
        &["dashboard", "--port", "0", "--bind", "0.0.0.0"],
        &[],
    ));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not a loopback address") && err.contains("BATON_DASHBOARD_TOKEN"),
        "{err}"
    );
    let (code, err) = must_exit(command(repo.path(), &["serve", "--http", "0.0.0.0:0"], &[]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("BATON_DASHBOARD_TOKEN"), "{err}");

    // A token exported in the environment is refused, never read: every
    // process started from that shell (the agent too) would inherit it.
    let (code, err) = must_exit(command(
        repo.path(),
        &["dashboard", "--port", "0", "--bind", "0.0.0.0"],
        &[("BATON_DASHBOARD_TOKEN", TOKEN)],
    ));
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("BATON_DASHBOARD_TOKEN_FILE"), "{err}");
    assert!(!err.contains(TOKEN), "{err}");

    // With a token (from a file): the page is public, everything else
    // needs the token.
    let token = TokenFile::new();
    let server = dashboard(repo.path(), "0.0.0.0", &[token.env()]);
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(http(&server.addr, "GET", "/", &[], None).status, 200);
    assert_eq!(http(&server.addr, "GET", "/healthz", &[], None).status, 200);
    assert_eq!(
        http(&server.addr, "GET", "/api/runs", &[], None).status,
        401
    );
    assert_eq!(http(&server.addr, "GET", "/stats", &[], None).status, 200);
    assert_eq!(
        http(&server.addr, "GET", "/api/stats", &[], None).status,
        401
    );
    assert_eq!(http(&server.addr, "GET", "/events", &[], None).status, 401);
    assert_eq!(
        http(
            &server.addr,
            "GET",
            "/api/runs",
            &[("Authorization", "Bearer wrong-token-0123456789")],
            None
        )
        .status,
        401
    );
    assert_eq!(
        http(
            &server.addr,
            "GET",
            "/api/runs",
            &[("Authorization", &bearer)],
            None
        )
        .status,
        200
    );
    assert_eq!(
        http(
            &server.addr,
            "GET",
            "/api/stats",
            &[("Authorization", &bearer)],
            None
        )
        .status,
        200
    );
    drop(server);

    // `serve --http` beyond loopback: MCP needs the token too.
    let serve = start(
        repo.path(),
        &["serve", "--http", "0.0.0.0:0"],
        &[token.env()],
        "listening on ",
    );
    let addr = serve.addr.replace("0.0.0.0", "127.0.0.1");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let accept = ("Accept", "application/json, text/event-stream");
    assert_eq!(
        http(&addr, "POST", "/mcp", &[accept], Some(init)).status,
        401
    );
    let ok = http(
        &addr,
        "POST",
        "/mcp",
        &[accept, ("Authorization", &bearer)],
        Some(init),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(http(&addr, "GET", "/events", &[], None).status, 401);
    assert_eq!(
        http(
            &addr,
            "GET",
            "/api/runs",
            &[("Authorization", &bearer)],
            None
        )
        .status,
        200
    );
}

#[test]
fn foreign_hosts_origins_and_cross_site_fetches_are_refused() {
    let repo = git_repo();
    for server in [
        dashboard(repo.path(), "127.0.0.1", &[]),
        start(
            repo.path(),
            &["serve", "--http", "127.0.0.1:0"],
            &[],
            "listening on ",
        ),
    ] {
        let a = server.addr.as_str();
        let port = a.rsplit(':').next().unwrap();
        // DNS rebinding: a page whose own name now points at 127.0.0.1.
        for path in ["/api/runs", "/events", "/"] {
            let r = http(
                a,
                "GET",
                path,
                &[("Host", &format!("evil.example:{port}"))],
                None,
            );
            assert_eq!(r.status, 403, "{path}: {}", r.body);
        }
        // A name that merely contains a loopback address is no loopback name.
        assert_eq!(
            http(a, "GET", "/api/runs", &[("Host", "127.0.0.1.nip.io")], None).status,
            403
        );
        // localhost, any port (an ssh tunnel), and IP literals are fine.
        assert_eq!(
            http(a, "GET", "/api/runs", &[("Host", "localhost:9999")], None).status,
            200
        );
        assert_eq!(http(a, "GET", "/api/runs", &[], None).status, 200);
        // Another origin reading or acting.
        let r = http(
            a,
            "GET",
            "/api/runs",
            &[("Origin", "http://evil.example")],
            None,
        );
        assert_eq!(r.status, 403);
        let r = http(
            a,
            "GET",
            "/api/runs",
            &[(
                "Origin",
                &format!("http://127.0.0.1:{}", port.parse::<u32>().unwrap() + 1),
            )],
            None,
        );
        assert_eq!(r.status, 403, "another port is another origin");
        assert_eq!(
            http(
                a,
                "GET",
                "/events",
                &[("Sec-Fetch-Site", "cross-site")],
                None
            )
            .status,
            403
        );
        assert_eq!(
            http(
                a,
                "GET",
                "/api/runs",
                &[("Sec-Fetch-Site", "same-site")],
                None
            )
            .status,
            403
        );
        // A link from elsewhere (Slack) still opens the page.
        let page = http(a, "GET", "/", &[("Sec-Fetch-Site", "cross-site")], None);
        assert_eq!(page.status, 200);
        assert!(
            page.header("content-security-policy")
                .is_some_and(|c| c.contains("script-src 'self'"))
        );
        assert_eq!(page.header("x-frame-options").as_deref(), Some("DENY"));
        let r = http(
            a,
            "POST",
            "/api/login",
            &[("Origin", "http://evil.example")],
            Some("{}"),
        );
        assert_eq!(r.status, 403);
    }
}

#[test]
fn get_cannot_act_and_actions_need_a_session_that_a_one_time_link_made() {
    let repo = git_repo();
    let id = run_to_checkpoint(repo.path(), "Fix the login timeout");
    let other = run_to_checkpoint(repo.path(), "Rename a flag");
    // Bound beyond loopback with a token, started on a terminal as a person
    // does: it prints a one-time sign-in link.
    let token = TokenFile::new();
    let server = baton_testkit::http::start_at_terminal(
        &baton_bin(),
        &["dashboard", "--port", "0", "--bind", "0.0.0.0"],
        repo.path(),
        &[token.env(), ("BATON_FSYNC", "off")],
    );
    let a = &server.addr.replace("0.0.0.0", "127.0.0.1");
    let a = a.as_str();
    let origin = format!("http://{a}");
    let bearer = format!("Bearer {TOKEN}");
    let answer = format!("/api/runs/{id}/answer");
    let body = r#"{"question":"checkpoint-a","answer":"revise","text":"split the API change"}"#;

    // GET never acts (and says so in JSON).
    for path in [answer.clone(), format!("/api/runs/{id}/abandon")] {
        let r = http(a, "GET", &path, &[("Authorization", &bearer)], None);
        assert_eq!(r.status, 405, "{path}");
        assert_eq!(r.json()["code"], "method_not_allowed", "{}", r.body);
    }
    // The token reads; it does not act (an agent with the token is still no person).
    let r = http(
        a,
        "POST",
        &answer,
        &[("Authorization", &bearer), ("Origin", &origin)],
        Some(body),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("signed-in dashboard"), "{}", r.body);
    assert_eq!(
        state(repo.path(), &id)["currentPhaseStatus"],
        "awaiting_human"
    );
    // Nor does a session the token signs in: it reads, never acts.
    let bad = http(
        a,
        "POST",
        "/api/login",
        &[("Origin", &origin)],
        Some(r#"{"token":"wrong-token-0123456789"}"#),
    );
    assert_eq!(bad.status, 401);
    let by_token = http(
        a,
        "POST",
        "/api/login",
        &[("Origin", &origin)],
        Some(&format!(r#"{{"token":"{TOKEN}"}}"#)),
    );
    assert_eq!(by_token.status, 200, "{}", by_token.body);
    assert_eq!(by_token.json()["canAct"], false);
    assert!(by_token.header("set-cookie").is_none(), "no cookie, ever");
    let reader = by_token.json()["session"].as_str().unwrap().to_string();
    let r = http(
        a,
        "POST",
        &answer,
        &[("X-Baton-Session", &reader), ("Origin", &origin)],
        Some(body),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("only reads"), "{}", r.body);
    let probe = http(
        a,
        "GET",
        "/api/session",
        &[("X-Baton-Session", &reader)],
        None,
    )
    .json();
    assert_eq!(probe["signedIn"], true);
    assert_eq!(probe["canAct"], false);

    // The person signs in with the printed link: a session that acts, kept
    // by the page in sessionStorage and sent as X-Baton-Session.
    let link = server.sign_in.clone().unwrap();
    let key = baton_testkit::http::Server::key_of(&link);
    let login = http(
        a,
        "POST",
        "/api/login",
        &[("Origin", &origin)],
        Some(&format!(r#"{{"key":"{key}"}}"#)),
    );
    assert_eq!(login.status, 200, "{}", login.body);
    assert!(login.header("set-cookie").is_none(), "no cookie, ever");
    assert_eq!(login.json()["canAct"], true);
    let session = login.json()["session"].as_str().unwrap().to_string();
    // Used once.
    let again = http(
        a,
        "POST",
        "/api/login",
        &[("Origin", &origin)],
        Some(&format!(r#"{{"key":"{key}"}}"#)),
    );
    assert_eq!(again.status, 401);
    assert_eq!(again.json()["code"], "forbidden");

    let r = http(
        a,
        "POST",
        &answer,
        &[("X-Baton-Session", "0000"), ("Origin", &origin)],
        Some(body),
    );
    assert_eq!(r.status, 401, "wrong session (not signed in): {}", r.body);
    let r = http(
        a,
        "POST",
        &answer,
        &[("X-Baton-Session", &session)],
        Some(body),
    );
    assert_eq!(r.status, 403, "no Origin: {}", r.body);
    let r = http(
        a,
        "POST",
        &answer,
        &[
            ("Cookie", &format!("baton_session={session}")),
            ("Origin", &origin),
        ],
        Some(body),
    );
    assert_eq!(
        r.status, 401,
        "the secret in a cookie is nothing (not signed in): {}",
        r.body
    );
    assert_eq!(
        state(repo.path(), &id)["currentPhaseStatus"],
        "awaiting_human"
    );

    let act = [
        ("X-Baton-Session", session.as_str()),
        ("Origin", origin.as_str()),
    ];
    // An answer to a question the run no longer asks is refused.
    let stale = http(
        a,
        "POST",
        &answer,
        &act,
        Some(r#"{"question":"checkpoint-b","answer":"proceed"}"#),
    );
    assert_eq!(stale.status, 409, "{}", stale.body);
    // Not an option: the use case's own check.
    let wrong = http(
        a,
        "POST",
        &answer,
        &act,
        Some(r#"{"question":"checkpoint-a","answer":"maybe"}"#),
    );
    assert_eq!(wrong.status, 400, "{}", wrong.body);
    assert_eq!(wrong.json()["code"], "invalid_parameter");

    let ok = http(a, "POST", &answer, &act, Some(body));
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["by"], "person:dashboard");
    let s = state(repo.path(), &id);
    assert_eq!(s["currentPhase"], "phase-3");
    let last = s["answers"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["by"],
        serde_json::json!({"who": "person", "channel": "dashboard"})
    );
    assert_eq!(last["feedback"], "split the API change");
    assert_eq!(s["humanFeedback"]["text"], "split the API change");

    // Abandon: through the question's own `abandon` answer.
    let r = http(
        a,
        "POST",
        &format!("/api/runs/{other}/abandon"),
        &act,
        Some(r#"{"reason":"not needed"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let s = state(repo.path(), &other);
    assert_eq!(s["currentPhaseStatus"], "abandoned");
    assert_eq!(
        s["answers"].as_array().unwrap().last().unwrap()["answer"],
        "abandon"
    );
    // A run without a question is abandoned through the lifecycle, recorded.
    let r = http(
        a,
        "POST",
        &format!("/api/runs/{id}/abandon"),
        &act,
        Some("{}"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let s = state(repo.path(), &id);
    assert_eq!(s["currentPhaseStatus"], "abandoned");
    let last = s["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["action"], "abandon");
    assert_eq!(last["by"], "person:dashboard");
    let again = http(
        a,
        "POST",
        &format!("/api/runs/{id}/abandon"),
        &act,
        Some("{}"),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    // The abandon events were published like any other.
    let kinds: Vec<String> = repo
        .events()
        .iter()
        .filter(|e| e["event"] == "abandon")
        .map(|e| e["workspace"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
}

/// A query parameter the dashboard cannot use is refused with a JSON error
/// whose message (person text) says what to pass, valid values included;
/// not only in `details`, and never as a bare framework text.
#[test]
fn a_bad_query_parameter_says_what_to_pass_in_its_message() {
    let repo = git_repo();
    let server = dashboard(repo.path(), "127.0.0.1", &[]);
    let a = server.addr.as_str();
    let bad = http(a, "GET", "/api/runs?status=bogus", &[], None);
    assert_eq!(bad.status, 400, "{}", bad.body);
    let e = bad.json();
    assert_eq!(e["code"], "invalid_parameter");
    assert_eq!(e["details"]["field"], "status");
    let message = e["message"].as_str().unwrap();
    for valid in e["details"]["valid"].as_array().unwrap() {
        assert!(message.contains(valid.as_str().unwrap()), "{message}");
    }
    assert!(message.contains("\"bogus\""), "{message}");
    for (query, field) in [
        ("limit=ten", "limit"),
        ("limit=-1", "limit"),
        ("offset=1.5", "offset"),
        ("offset=99999999999999999999999", "offset"),
    ] {
        let bad = http(a, "GET", &format!("/api/runs?{query}"), &[], None);
        assert_eq!(bad.status, 400, "{query}: {}", bad.body);
        let e = bad.json();
        assert_eq!(e["code"], "invalid_parameter", "{query}");
        assert_eq!(e["details"]["field"], field, "{query}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{field} must be a whole number")),
            "{query}: {message}"
        );
    }
    let fine = http(a, "GET", "/api/runs?limit=5&offset=0&status=", &[], None);
    assert_eq!(fine.status, 200, "{}", fine.body);
    let bad = http(a, "GET", "/api/stats?workflow=a%0Ab", &[], None);
    assert_eq!(bad.status, 400, "{}", bad.body);
    let message = bad.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("workflow"), "{message}");
}

#[test]
fn the_api_shows_runs_a_page_at_a_time_with_their_whole_picture() {
    let repo = git_repo();
    let first = run_to_checkpoint(repo.path(), "First change");
    let second = run_to_checkpoint(repo.path(), "Second change");
    let server = dashboard(repo.path(), "127.0.0.1", &[]);
    let a = server.addr.as_str();
    let page = http(a, "GET", "/api/runs?limit=1", &[], None).json();
    assert_eq!(page["total"], 2);
    assert_eq!(page["runs"].as_array().unwrap().len(), 1);
    assert_eq!(page["runs"][0]["id"], second.as_str(), "newest first");
    assert_eq!(page["counts"]["waiting"], 2);
    let next = http(a, "GET", "/api/runs?limit=1&offset=1", &[], None).json();
    assert_eq!(next["runs"][0]["id"], first.as_str());
    let found = http(a, "GET", "/api/runs?q=FIRST", &[], None).json();
    assert_eq!(found["total"], 1);
    assert_eq!(
        http(a, "GET", "/api/runs?status=completed", &[], None).json()["total"],
        0
    );
    assert_eq!(
        http(a, "GET", "/api/runs?status=sideways", &[], None).status,
        400
    );

    let run = http(a, "GET", &format!("/api/runs/{first}"), &[], None).json();
    assert_eq!(run["question"]["name"], "checkpoint-a");
    assert_eq!(
        run["question"]["options"],
        serde_json::json!(["proceed", "revise", "abandon"])
    );
    assert!(
        run["question"]["html"].as_str().unwrap().contains("<h2>"),
        "{}",
        run["question"]["html"]
    );
    let cp = run["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "checkpoint-a")
        .unwrap()
        .clone();
    assert_eq!(cp["state"], "waiting");
    assert!(
        run["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "loop" && e["from"] == "checkpoint-a" && e["when"] == "revise")
    );
    assert!(
        run["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "design.md" && x["phase"] == "phase-3")
    );
    assert!(
        run["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["what"] == "checkpoint")
    );

    // Artifacts come rendered and sanitised; nothing outside the workspace.
    let design = repo.path().join(".specs").join(&first).join("design.md");
    std::fs::write(
        &design,
        "# Design\n\n<script>alert(1)</script>\n\n[x](javascript:alert(2))\n",
    )
    .unwrap();
    let doc = http(
        a,
        "GET",
        &format!("/api/runs/{first}/artifacts/design.md"),
        &[],
        None,
    )
    .json();
    let html = doc["html"].as_str().unwrap();
    assert!(
        html.contains("<h1>Design</h1>")
            && !html.contains("<script")
            && !html.contains("javascript:"),
        "{html}"
    );
    for bad in [
        "..%2Fstate.json",
        "state.json",
        "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    ] {
        let r = http(
            a,
            "GET",
            &format!("/api/runs/{first}/artifacts/{bad}"),
            &[],
            None,
        );
        assert!(
            r.status == 400 || r.status == 404,
            "{bad}: {} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(
        http(a, "GET", "/api/runs/..%2F..%2Fetc", &[], None).status / 100,
        4
    );
    assert_eq!(
        http(a, "GET", "/api/runs/20990101-nothing", &[], None).status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_shows_the_same_run_at_a_glance_as_the_dashboard() {
    let repo = git_repo();
    let id = run_to_checkpoint(repo.path(), "Add a greeting");
    let server = dashboard(repo.path(), "127.0.0.1", &[]);
    let from_http = http(&server.addr, "GET", &format!("/api/runs/{id}"), &[], None).json();
    let c = common::spawn(repo.path(), &[], &[]).await;
    let from_mcp = c
        .ok(
            "run_overview",
            serde_json::json!({"workspace": format!(".specs/{id}")}),
        )
        .await;
    c.close().await;
    assert_eq!(from_mcp["question"]["name"], "checkpoint-a");
    assert_eq!(
        from_mcp["question"]["options"],
        from_http["question"]["options"]
    );
    assert_eq!(from_mcp["question"]["text"], from_http["question"]["text"]);
    // Phases compared by id and state (a waiting phase's wall-clock grows
    // between the two reads).
    let names = |v: &Value| -> Vec<String> {
        v["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| format!("{}:{}", p["id"], p["state"]))
            .collect()
    };
    assert_eq!(names(&from_mcp), names(&from_http));
    assert_eq!(from_mcp["timeline"], from_http["timeline"]);
}

/// A design review that approves with one CRITICAL finding, worded a little
/// differently in each run (the history merges them into one pattern).
fn review(wording: &str) -> String {
    format!(
        "# Review\n\n## Verdict: APPROVE\n\n**1. [CRITICAL] {wording}**\n\n**2. [MINOR] Naming**\n"
    )
}

/// `baton stats --json` in `repo`, with `env`.
fn stats_cli(repo: &std::path::Path, env: &[(&str, &str)]) -> Value {
    let out = command(repo, &["stats", "--json"], env).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stats_and_a_runs_figures_are_the_history_use_cases_numbers() {
    let repo = git_repo();
    // A price high enough that the scripted runs' tokens cost whole cents.
    let env = [("BATON_PRICE_USD_PER_MTOK", "1000")];
    let c = common::spawn(repo.path(), &["--tools", "pipeline,history"], &env).await;
    // Three similar runs completed with review findings — one sent back at
    // its design checkpoint by a person — and one abandoned.
    let mut completed = Vec::new();
    for (text, wording, answers) in [
        (
            "fix the login session timeout on the web app",
            "Missing error handling for session refresh failures",
            &["revise: split the refresh from the timeout"][..],
        ),
        (
            "extend the login session timeout for admin users",
            "Missing error handling for the session refresh failure",
            &[][..],
        ),
        (
            "login session timeout is too short on mobile",
            "Missing error handling for session refresh failures!",
            &[][..],
        ),
    ] {
        let ws = create(&c, text, "S", "--nopr").await;
        let mut script = Script::default().with("review-design.md", &[&review(wording)]);
        let trace = drive(&c, &repo, &ws, &mut script, answers, 80).await;
        assert_eq!(trace.last["type"], "done", "{:#?}", trace.steps);
        completed.push(ws.rsplit('/').next().unwrap().to_string());
    }
    let dropped = create(&c, "rename the billing export cookie", "S", "--nopr").await;
    let trace = drive(
        &c,
        &repo,
        &dropped,
        &mut Script::default(),
        &["abandon"],
        30,
    )
    .await;
    assert_eq!(trace.last["summary"], "Pipeline abandoned at checkpoint-a");
    // A live run about the same thing, waiting at its design checkpoint.
    let live = run_to_checkpoint(
        repo.path(),
        "make the login session timeout configurable per user",
    );

    let server = dashboard(repo.path(), "127.0.0.1", &env);
    let a = server.addr.as_str();

    // The repository's stats: the numbers of `analytics_dashboard` and of
    // `baton stats --json`, the same use case over the history's records.
    let stats = http(a, "GET", "/api/stats", &[], None);
    assert_eq!(stats.status, 200, "{}", stats.body);
    let stats = stats.json();
    let from_mcp = c.ok("analytics_dashboard", json!({})).await;
    assert_eq!(stats, from_mcp);
    assert_eq!(stats, stats_cli(repo.path(), &env)["dashboard"]);
    assert_eq!(
        (&stats["runs"], &stats["completed"], &stats["abandoned"]),
        (&json!(4), &json!(3), &json!(1)),
        "{stats}"
    );
    assert_eq!(stats["first_pass_rate"], 0.667, "one of three went back");
    assert_eq!(stats["loops_per_run"], 0.25, "{stats}");
    assert!(stats["cost_usd"].as_f64().unwrap() > 0.0, "{stats}");
    assert!(stats["tokens"].as_u64().unwrap() > 0, "{stats}");
    assert_eq!(stats["by_effort"][0]["effort"], "S");
    let design = stats["by_phase"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "phase-3")
        .unwrap_or_else(|| panic!("phase-3 in {stats}"))
        .clone();
    assert_eq!(design["visits"], 5, "twice in the revised run: {design}");
    // One workflow only, as `analytics_dashboard {workflow}` gives it.
    let forge = http(a, "GET", "/api/stats?workflow=forge", &[], None).json();
    assert_eq!(
        forge,
        c.ok("analytics_dashboard", json!({"workflow": "forge"}))
            .await
    );
    assert_eq!(
        http(a, "GET", "/api/stats?workflow=nothing", &[], None).json()["runs"],
        0
    );
    let bad = http(a, "GET", "/api/stats?workflow=a%0Ab", &[], None);
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(bad.json()["code"], "invalid_parameter");

    // A live run: its summary, the estimate for its request from the three
    // similar completed runs, and its design reviewer's patterns.
    let x = http(a, "GET", &format!("/api/runs/{live}/insights"), &[], None);
    assert_eq!(x.status, 200, "{}", x.body);
    let x = x.json();
    let summary = c
        .ok(
            "analytics_summary",
            json!({"workspace": format!(".specs/{live}")}),
        )
        .await;
    assert_eq!(x["summary"], summary);
    assert_eq!(x["summary"]["outcome"], "running");
    let request =
        std::fs::read_to_string(repo.path().join(".specs").join(&live).join("request.md")).unwrap();
    let estimate = c
        .ok("analytics_estimate", json!({"request": request}))
        .await;
    assert_eq!(x["estimate"], estimate);
    assert_eq!(
        (&x["estimate"]["basis"], &x["estimate"]["sample"]),
        (&json!("similar"), &json!(3)),
        "{x}"
    );
    assert!(
        x["estimate"]["display"]
            .as_str()
            .is_some_and(|d| d.starts_with("Estimate from 3 similar past runs")),
        "{x}"
    );
    let reviewer = x["review_patterns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["agent"] == "design-reviewer")
        .unwrap_or_else(|| panic!("design-reviewer in {x}"))
        .clone();
    let patterns = c
        .ok(
            "history_patterns",
            json!({"agent": "design-reviewer", "limit": 3}),
        )
        .await;
    assert_eq!(reviewer["patterns"], patterns["patterns"]);
    assert_eq!(reviewer["shared"], false);
    // The three wordings of the CRITICAL finding are one pattern; the
    // default review's MINOR "Naming" of every run (the abandoned one's
    // too) is another.
    let counts: Vec<(String, u64)> = reviewer["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let text = p["text"].as_str().unwrap();
            let head = text.split(" for ").next().unwrap_or(text).to_string();
            (head, p["count"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        counts,
        [
            ("Naming".to_string(), 4),
            ("Missing error handling".to_string(), 3)
        ],
        "{reviewer}"
    );

    // A completed run: its own numbers; with itself left out, two similar
    // runs remain — too few for an estimate for its request.
    let first = &completed[0];
    let x = http(a, "GET", &format!("/api/runs/{first}/insights"), &[], None).json();
    let summary = c
        .ok(
            "analytics_summary",
            json!({"workspace": format!(".specs/{first}")}),
        )
        .await;
    assert_eq!(x["summary"], summary);
    assert_eq!(x["summary"]["loops"], 1, "{x}");
    assert_eq!(x["summary"]["findings"]["critical"], 1, "{x}");
    assert!(x.get("estimate").is_none(), "{x}");
    c.close().await;

    assert_eq!(
        http(a, "GET", "/api/runs/20990101-nothing/insights", &[], None).status,
        404
    );
    // The page has a link of its own for the stats.
    let page = http(a, "GET", "/stats", &[], None);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("data-testid=\"stats\""), "{}", page.body);
}
