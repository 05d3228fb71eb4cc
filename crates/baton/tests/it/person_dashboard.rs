//! Dashboard sessions only the dashboard's origin can use (issue 19,
//! Done-means 4 and 5, and the lesser items of its point 10), over raw
//! HTTP as `curl` would send it: the sign-in flow sets no cookie, so
//! nothing replayed from another client (with a forged `Host` and
//! `Origin`) yields a session, a CSRF token or an answer; the access token
//! (the secret an agent's MCP client holds) signs in a session that only
//! reads; a valid one-time link works after a flood of wrong sign-ins;
//! held `/events` streams leave the page and the API reachable; every API
//! error is JSON.

use std::net::TcpStream;
use std::time::Duration;

use baton_testkit::http::{Reply, Server, open_stream, request, sign_in, start_at_terminal};

use crate::common::baton_bin;
use crate::common::pipeline::git_repo;

/// `baton run` with the scripted agent and no terminal: it stops at the
/// first checkpoint. Returns the run's folder name.
fn run_to_checkpoint(repo: &std::path::Path, text: &str) -> String {
    let out = std::process::Command::new(baton_bin())
        .args([
            "run",
            text,
            "--effort",
            "S",
            "--nopr",
            "--agent",
            "builtin:scripted",
        ])
        .current_dir(repo)
        .env("BATON_FSYNC", "off")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("checkpoint-a"), "{said}");
    std::fs::read_dir(repo.join(".specs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| n.ends_with(&text.to_lowercase().replace(' ', "-")))
        .expect("the run")
}

fn status(repo: &std::path::Path, id: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(repo.join(".specs").join(id).join("state.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["currentPhaseStatus"].clone()
}

fn dashboard_at_terminal(repo: &std::path::Path, env: &[(&str, &str)]) -> Server {
    let mut env = env.to_vec();
    env.push(("BATON_FSYNC", "off"));
    start_at_terminal(
        &baton_bin(),
        &["dashboard", "--port", "0", "--bind", "127.0.0.1"],
        repo,
        &env,
    )
}

/// Every `Set-Cookie` value of `replies`.
fn cookies(replies: &[&Reply]) -> Vec<String> {
    replies
        .iter()
        .flat_map(|r| r.headers("set-cookie"))
        .map(|c| c.split(';').next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn cookies_of_the_sign_in_flow_replayed_from_another_client_give_no_session_and_no_answer() {
    let repo = git_repo();
    let id = run_to_checkpoint(repo.path(), "Add a greeting");
    let server = dashboard_at_terminal(repo.path(), &[]);
    let a = server.addr.clone();
    let origin = format!("http://{a}");
    let key = Server::key_of(server.sign_in.as_ref().unwrap());
    // The person's browser: the page, the sign-in, the probe, a run.
    let page = request(&a, "GET", "/", &[], None);
    let login = sign_in(&a, &origin, &format!(r#"{{"key":"{key}"}}"#));
    assert_eq!(login.status, 200, "{}", login.body);
    let session = login.json()["session"].as_str().unwrap().to_string();
    let probe = request(
        &a,
        "GET",
        "/api/session",
        &[("X-Baton-Session", &session)],
        None,
    );
    assert_eq!(probe.json()["canAct"], true);
    let run = request(
        &a,
        "GET",
        &format!("/api/runs/{id}"),
        &[("X-Baton-Session", &session)],
        None,
    );
    // Keep only the cookies the flow set: there are none.
    let jar = cookies(&[&page, &login, &probe, &run]);
    assert!(jar.is_empty(), "the dashboard sets no cookie: {jar:?}");
    // Another client (the agent with curl) replays them — and, harder,
    // whatever it could guess — with forged Host and Origin headers.
    let mut replayed = jar.join("; ");
    for name in [
        "baton_session",
        &format!("baton_session_{}", a.rsplit(':').next().unwrap()),
        "session",
    ] {
        if !replayed.is_empty() {
            replayed.push_str("; ");
        }
        replayed.push_str(&format!("{name}={key}"));
    }
    let forged = [
        ("Host", a.as_str()),
        ("Origin", origin.as_str()),
        ("Cookie", replayed.as_str()),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    let probe = request(&a, "GET", "/api/session", &forged, None);
    assert_eq!(probe.status, 200);
    let p = probe.json();
    assert_eq!(p["signedIn"], false, "{p}");
    assert_eq!(p["canAct"], false, "{p}");
    assert!(p["eventsTicket"].is_null(), "{p}");
    assert!(
        p.get("csrf").is_none_or(|c| c.is_null()),
        "no CSRF token: {p}"
    );
    let answer = request(
        &a,
        "POST",
        &format!("/api/runs/{id}/answer"),
        &forged,
        Some(r#"{"question":"checkpoint-a","answer":"proceed"}"#),
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert_eq!(answer.json()["code"], "forbidden");
    let abandon = request(
        &a,
        "POST",
        &format!("/api/runs/{id}/abandon"),
        &forged,
        Some("{}"),
    );
    assert_eq!(abandon.status, 403, "{}", abandon.body);
    assert_eq!(status(repo.path(), &id), "awaiting_human");
    // The person's own session still works, from the page's origin.
    let ok = request(
        &a,
        "POST",
        &format!("/api/runs/{id}/answer"),
        &[("X-Baton-Session", &session), ("Origin", &origin)],
        Some(r#"{"question":"checkpoint-a","answer":"proceed"}"#),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["by"], "person:dashboard");
}

#[test]
fn the_mcp_access_token_never_makes_a_session_that_answers() {
    let repo = git_repo();
    let id = run_to_checkpoint(repo.path(), "Add a greeting");
    let dir = tempfile::tempdir().unwrap();
    let token = "mcp-token-0123456789abcdef";
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, token).unwrap();
    let token_env = token_file.display().to_string();
    // `serve --http` beyond loopback: the agent's MCP client holds the token.
    let server = baton_testkit::http::start(
        {
            let mut c = std::process::Command::new(baton_bin());
            c.args(["serve", "--http", "0.0.0.0:0"])
                .current_dir(repo.path())
                .env("BATON_DASHBOARD_TOKEN_FILE", &token_env)
                .env_remove("BATON_DASHBOARD_TOKEN")
                .stdin(std::process::Stdio::null());
            c
        },
        "listening on ",
    );
    let a = server.addr.replace("0.0.0.0", "127.0.0.1");
    let origin = format!("http://{a}");
    let bearer = format!("Bearer {token}");
    let body = r#"{"question":"checkpoint-a","answer":"proceed"}"#;
    let path = format!("/api/runs/{id}/answer");
    // As a bearer header.
    let r = request(
        &a,
        "POST",
        &path,
        &[("Authorization", &bearer), ("Origin", &origin)],
        Some(body),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    // As a sign-in: a session that reads, never acts.
    let login = sign_in(&a, &origin, &format!(r#"{{"token":"{token}"}}"#));
    assert_eq!(login.status, 200, "{}", login.body);
    assert_eq!(login.json()["canAct"], false);
    let session = login.json()["session"].as_str().unwrap().to_string();
    let reads = request(
        &a,
        "GET",
        &format!("/api/runs/{id}"),
        &[("X-Baton-Session", &session)],
        None,
    );
    assert_eq!(reads.status, 200, "it reads: {}", reads.body);
    for headers in [
        vec![
            ("X-Baton-Session", session.as_str()),
            ("Origin", origin.as_str()),
        ],
        vec![
            ("X-Baton-Session", session.as_str()),
            ("Origin", origin.as_str()),
            ("Authorization", bearer.as_str()),
        ],
    ] {
        let r = request(&a, "POST", &path, &headers, Some(body));
        assert_eq!(r.status, 403, "{}", r.body);
        let r = request(
            &a,
            "POST",
            &format!("/api/runs/{id}/abandon"),
            &headers,
            Some("{}"),
        );
        assert_eq!(r.status, 403, "{}", r.body);
    }
    assert_eq!(status(repo.path(), &id), "awaiting_human");
}

#[test]
fn a_flood_of_wrong_sign_ins_never_locks_out_a_valid_link() {
    let repo = git_repo();
    let mut server = dashboard_at_terminal(repo.path(), &[]);
    let a = server.addr.clone();
    let origin = format!("http://{a}");
    for _ in 0..30 {
        let r = sign_in(&a, &origin, r#"{"key":"00"}"#);
        assert!(matches!(r.status, 401 | 429), "{}", r.status);
        assert!(
            r.header("content-type")
                .is_some_and(|c| c.starts_with("application/json"))
        );
    }
    // From the same address, the printed link still signs the person in.
    let key = Server::key_of(server.sign_in.as_ref().unwrap());
    let r = sign_in(&a, &origin, &format!(r#"{{"key":"{key}"}}"#));
    assert_eq!(r.status, 200, "{}", r.body);
    // And a new link (Enter on the terminal) too.
    let link = server.new_sign_in_link();
    let key = Server::key_of(&link);
    let r = sign_in(&a, &origin, &format!(r#"{{"key":"{key}"}}"#));
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn held_event_streams_leave_the_page_and_the_api_reachable() {
    let repo = git_repo();
    let server = baton_testkit::http::start(
        {
            let mut c = std::process::Command::new(baton_bin());
            c.args(["dashboard", "--port", "0", "--bind", "127.0.0.1"])
                .current_dir(repo.path())
                .stdin(std::process::Stdio::null());
            c
        },
        "dashboard at ",
    );
    let a = server.addr.clone();
    // Open (and hold) streams until the server says no more.
    let mut held: Vec<TcpStream> = Vec::new();
    let mut refused = None;
    for _ in 0..100 {
        let (s, start) = open_stream(&a, "/events", 512);
        let head = String::from_utf8_lossy(&start).to_string();
        if head.starts_with("HTTP/1.1 200") {
            held.push(s);
        } else {
            refused = Some(head);
            break;
        }
    }
    let refused = refused.expect("a limit on event streams");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("application/json"), "{refused}");
    assert!(held.len() >= 16, "{} streams held", held.len());
    // With every stream slot taken, the page and the API still answer.
    assert_eq!(request(&a, "GET", "/", &[], None).status, 200);
    let runs = request(&a, "GET", "/api/runs", &[], None);
    assert_eq!(runs.status, 200, "{}", runs.body);
    // A stream closed frees its slot.
    held.pop();
    std::thread::sleep(Duration::from_millis(300));
    let mut again = None;
    for _ in 0..20 {
        let (s, start) = open_stream(&a, "/events", 64);
        if start.starts_with(b"HTTP/1.1 200") {
            again = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(again.is_some(), "a freed slot is used again");
}

#[test]
fn every_api_error_is_json() {
    let repo = git_repo();
    let id = run_to_checkpoint(repo.path(), "Add a greeting");
    let server = dashboard_at_terminal(repo.path(), &[]);
    let a = server.addr.clone();
    let origin = format!("http://{a}");
    let key = Server::key_of(server.sign_in.as_ref().unwrap());
    let login = sign_in(&a, &origin, &format!(r#"{{"key":"{key}"}}"#));
    let session = login.json()["session"].as_str().unwrap().to_string();
    let act = [
        ("X-Baton-Session", session.as_str()),
        ("Origin", origin.as_str()),
    ];
    let answer = format!("/api/runs/{id}/answer");
    let cases: Vec<(Reply, u16)> = vec![
        (request(&a, "GET", "/api/no-such-route", &[], None), 404),
        (request(&a, "GET", &answer, &[], None), 405),
        (request(&a, "POST", &answer, &act, Some("not json")), 400),
        (
            request(
                &a,
                "POST",
                &answer,
                &[act[0], act[1], ("Content-Type", "text/plain")],
                Some(r#"{"question":"checkpoint-a","answer":"proceed"}"#),
            ),
            415,
        ),
        (
            request(&a, "POST", &answer, &act, Some(r#"{"answer":"proceed"}"#)),
            422,
        ),
        (sign_in(&a, &origin, r#"{"nope":1}"#), 422),
        (request(&a, "GET", "/api/runs?offset=minus", &[], None), 400),
        (request(&a, "GET", "/api/runs/no-such-run", &[], None), 404),
    ];
    for (r, expected) in cases {
        assert_eq!(r.status, expected, "{}", r.body);
        assert!(
            r.header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "{} {}: {}",
            r.status,
            r.head,
            r.body
        );
        let v = r.json();
        assert!(v["code"].as_str().is_some_and(|c| !c.is_empty()), "{v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    }
    // A missing run is explained to the person, not with the agent's tools.
    let missing = request(&a, "GET", "/api/runs/no-such-run", &[], None).json();
    assert_eq!(missing["code"], "not_found", "{missing}");
    let m = missing["message"].as_str().unwrap_or_default();
    assert!(m.contains("baton run \"<task>\""), "{missing}");
    assert!(!m.contains("pipeline_init"), "{missing}");
    assert_eq!(status(repo.path(), &id), "awaiting_human");
}
