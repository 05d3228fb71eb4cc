//! `baton serve --http`: streamable HTTP MCP, the SSE event stream, the
//! transcript of HTTP traffic, and an independent client (the Python SDK).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{Repo, baton_bin};
use serde_json::{Value, json};

struct HttpServer {
    child: Child,
    addr: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(repo: &Repo) -> HttpServer {
    start_on(repo, "127.0.0.1:0")
}

/// `baton serve --tools all --http ADDR`, once it announced where it listens.
fn start_on(repo: &Repo, addr: &str) -> HttpServer {
    let mut child = Command::new(baton_bin())
        .args(["serve", "--tools", "all", "--http", addr])
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    // Read the address line, then close the pipe: a server whose stderr is
    // gone (its warnings about refused requests included) must keep serving.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    drop(stderr);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    HttpServer { child, addr }
}

/// One HTTP/1.1 request; returns (status, headers, body).
fn request(
    addr: &str,
    method: &str,
    path: &str,
    host: &str,
    body: Option<&Value>,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body_text = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body_text}",
        body_text.len()
    );
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("{method} {path}: no status line in {raw:?}"))
        .parse()
        .unwrap();
    (status, head.to_string(), body.to_string())
}

/// Extracts the JSON document of a response body (plain or chunked).
fn json_body(body: &str) -> Value {
    let start = body
        .find('{')
        .unwrap_or_else(|| panic!("no JSON in body {body:?}"));
    let end = body.rfind('}').unwrap();
    serde_json::from_str(&body[start..=end]).unwrap()
}

#[test]
fn http_serves_mcp_events_and_health() {
    let repo = Repo::new();
    let server = start(&repo);
    let addr = server.addr.clone();

    let (status, _, body) = request(&addr, "GET", "/healthz", "127.0.0.1", None);
    assert_eq!(status, 200);
    assert!(body.contains("ok"));

    // Subscribe to the event stream before anything happens.
    let mut sse = TcpStream::connect(&addr).unwrap();
    sse.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    sse.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        .unwrap();

    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
    let (status, head, body) = request(&addr, "POST", "/mcp", "127.0.0.1", Some(&init));
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase().contains("application/json"),
        "{head}"
    );
    assert_eq!(json_body(&body)["result"]["serverInfo"]["name"], "baton");

    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"init","arguments":{"spec_name":"over http","workspace":"20260101-http"}}});
    let (status, _, body) = request(&addr, "POST", "/mcp", "127.0.0.1", Some(&call));
    assert_eq!(status, 200);
    let reply = json_body(&body);
    assert_eq!(
        reply["result"]["structuredContent"]["workspace"],
        ".specs/20260101-http"
    );

    // The event arrives on the open stream.
    let mut reader = BufReader::new(sse);
    let mut seen = String::new();
    for _ in 0..40 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        seen.push_str(&line);
        if seen.contains("event: pipeline-init") && seen.contains("\"specName\":\"over-http\"") {
            break;
        }
    }
    assert!(seen.contains("text/event-stream"), "{seen}");
    assert!(seen.contains("event: pipeline-init"), "{seen}");
    assert!(
        seen.contains("\"workspace\":\".specs/20260101-http\""),
        "{seen}"
    );

    // A late subscriber filtered by workspace gets the history replayed.
    let mut late = TcpStream::connect(&addr).unwrap();
    late.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    late.write_all(
        b"GET /events?workspace=.specs/20260101-http HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    )
    .unwrap();
    let mut reader = BufReader::new(late);
    let mut replay = String::new();
    for _ in 0..40 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        replay.push_str(&line);
        if replay.contains("\"event\":\"pipeline-init\"") {
            break;
        }
    }
    assert!(replay.contains("\"event\":\"pipeline-init\""), "{replay}");

    // DNS-rebinding guard: a foreign Host header is refused on /mcp.
    let (status, _, _) = request(&addr, "POST", "/mcp", "evil.example", Some(&init));
    assert_eq!(status, 403);
    let (status, _, _) = request(&addr, "GET", "/healthz", "127.0.0.1", None);
    assert_eq!(
        status, 200,
        "still serving after logging to a closed stderr"
    );

    drop(server);
    // The transcript recorded the HTTP exchange (written by the background task).
    let logs = repo.path().join(".baton/logs");
    // Wait for the reply's own line (the writer flushes in the background;
    // another call's reply can be on disk before it).
    let mut lines: Vec<Value> = Vec::new();
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(50));
        let text: String = std::fs::read_dir(&logs)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect();
        lines = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines
            .iter()
            .any(|l| l["direction"] == "out" && l["tool"] == "init")
        {
            break;
        }
    }
    assert!(
        lines
            .iter()
            .any(|l| l["direction"] == "in" && l["tool"] == "init")
    );
    assert!(
        lines.iter().any(|l| l["direction"] == "out"
            && l["tool"] == "init"
            && l["duration_ms"].is_number())
    );
}

/// `--http` takes names (resolved) and bare ports, as a person types them.
#[test]
fn http_listens_on_localhost_and_on_a_bare_port() {
    let repo = Repo::new();
    let server = start_on(&repo, "localhost:0");
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    assert!(
        server.addr.starts_with("127.0.0.1:") || server.addr.starts_with("[::1]:"),
        "{}",
        server.addr
    );
    let (status, _, body) = request(&server.addr, "GET", "/healthz", "localhost", None);
    assert_eq!((status, body.contains("ok")), (200, true));
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
    let host = format!("localhost:{port}");
    let (status, _, body) = request(&server.addr, "POST", "/mcp", &host, Some(&init));
    assert_eq!(status, 200, "{body}");
    assert_eq!(json_body(&body)["result"]["serverInfo"]["name"], "baton");
    drop(server);

    let server = start_on(&repo, "0");
    assert!(server.addr.starts_with("127.0.0.1:"), "{}", server.addr);
    drop(server);

    for bad in ["nowhere.invalid:8765", "localhost:99999", "local host"] {
        let out = Command::new(baton_bin())
            .args(["serve", "--http", bad])
            .current_dir(repo.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(
            stderr.contains("cannot listen on") && stderr.contains("Give HOST:PORT or PORT"),
            "{bad}: {stderr}"
        );
    }
}

/// Ctrl-C stops the HTTP server at once, even with event-stream subscribers
/// connected: their streams end and the process exits within a second.
#[test]
fn ctrl_c_stops_http_at_once_with_event_streams_open() {
    let repo = Repo::new();
    let mut server = start(&repo);
    let mut subscribers = Vec::new();
    for _ in 0..3 {
        let mut sse = TcpStream::connect(&server.addr).unwrap();
        sse.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        sse.write_all(
            b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
        )
        .unwrap();
        let mut reader = BufReader::new(sse);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains("200"), "{status}");
        subscribers.push(reader);
    }
    let pid = server.child.id().to_string();
    let sent = std::time::Instant::now();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(1),
            "still running 1 s after Ctrl-C with event streams open"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    // Every subscriber's stream was closed, not left hanging.
    for mut reader in subscribers {
        let mut rest = Vec::new();
        let read = reader.read_to_end(&mut rest);
        assert!(read.is_ok(), "the stream ends cleanly: {read:?}");
    }
}

/// The interpreter of the project-local virtual environment (`.venv`, made
/// by `./scripts/test`), never the machine's global one.
fn venv_python() -> std::path::PathBuf {
    std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../.venv/bin/python3"
    ))
    .to_path_buf()
}

/// The independent client: the official Python MCP SDK (`mcp`, pinned in
/// tests/python/requirements.txt), over stdio and over streamable HTTP.
/// `./scripts/test` installs it into the project's `.venv`.
#[test]
fn python_sdk_client_smoke() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/python/smoke.py");
    let python = venv_python();
    let probe = Command::new(&python).args(["-c", "import mcp"]).output();
    match probe {
        Ok(out) if out.status.success() => {}
        _ => panic!(
            "the Python MCP SDK is missing from .venv: run `python3 -m venv .venv && .venv/bin/pip install -r tests/python/requirements.txt` (./scripts/test does it)"
        ),
    }
    let out = Command::new(&python)
        .arg(script)
        .arg(baton_bin())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    common::record_suite_counts("python-smoke", &stdout);
    assert!(
        out.status.success(),
        "python smoke failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("2 passed, 0 failed"), "{stdout}");
}
