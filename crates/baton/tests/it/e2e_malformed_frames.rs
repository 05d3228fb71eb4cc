//! Malformed protocol frames, over stdio and over HTTP: every frame gets an
//! answer (a JSON-RPC error with the request's id when it can be found, or a
//! tool error for bad `arguments`) or, for a notification, a logged skip —
//! and the server goes on serving.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Repo, baton_bin};
use serde_json::{Value, json};

/// `baton serve` over pipes, read line by line.
struct Pipe {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Pipe {
    fn start(repo: &Repo) -> Pipe {
        let mut child = Command::new(baton_bin())
            .args(["serve", "--tools", "all"])
            .current_dir(repo.path())
            .env("MANUALS_ROOT", repo.path().join("manuals"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Pipe {
            child,
            stdin,
            stdout,
        };
        s.send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"frames","version":"0"}}}"#);
        assert_eq!(s.read()["id"], 1);
        s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the server closed stdout instead of answering");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Sends `frame`, reads one answer, checks its id and error code.
    fn refused(&mut self, frame: &[u8], id: Value, code: i64) -> Value {
        self.send(frame);
        let answer = self.read();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.len() > 20, "{answer}");
        answer
    }
}

fn deep(id: u64) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"init","arguments":{{"x":{}{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    )
    .into_bytes()
}

fn invalid_utf8(id: u64) -> Vec<u8> {
    let mut frame =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"x":""#).into_bytes();
    frame.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    frame.extend_from_slice(br#""}}"#);
    frame
}

fn lone_surrogate(id: u64) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"init","arguments":{{"spec_name":"a\ud800b"}}}}}}"#
    )
    .into_bytes()
}

#[test]
fn every_malformed_stdio_frame_is_answered_and_the_server_goes_on() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path().join("manuals/demo")).unwrap();
    std::fs::write(
        repo.path().join("manuals/demo/a.md"),
        "# A\n\n## One\n\nalpha beta gamma\n",
    )
    .unwrap();
    let mut s = Pipe::start(&repo);

    let e = s.refused(b"this is not json", Value::Null, -32700);
    assert!(e["error"]["message"].as_str().unwrap().contains("not JSON"));
    s.refused(&invalid_utf8(10), json!(10), -32700);
    let e = s.refused(&lone_surrogate(11), json!(11), -32700);
    assert!(e["error"]["message"].as_str().unwrap().contains("Unicode"));
    let e = s.refused(&deep(12), json!(12), -32700);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deeper than 128")
    );
    s.refused(
        br#"[{"jsonrpc":"2.0","id":13,"method":"ping"}]"#,
        Value::Null,
        -32600,
    );
    s.refused(
        br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
        Value::Null,
        -32600,
    );
    s.refused(
        br#"{"jsonrpc":"2.0","id":14,"method":"tools/call"}"#,
        json!(14),
        -32602,
    );
    s.refused(
        br#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":5}}"#,
        json!(15),
        -32602,
    );
    let e = s.refused(
        br#"{"jsonrpc":"2.0","id":16,"method":"nope/method"}"#,
        json!(16),
        -32601,
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/call")
    );

    // Non-object arguments: an invalid_parameter tool error, like any other.
    s.send(br#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"init","arguments":[1,2]}}"#);
    let r = s.read();
    assert_eq!(r["id"], 17);
    assert_eq!(r["result"]["isError"], true, "{r}");
    let error: Value =
        serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["code"], "invalid_parameter");
    assert_eq!(error["details"]["field"], "arguments");

    // Two messages on one line: both answered.
    s.send(
        br#"{"jsonrpc":"2.0","id":18,"method":"ping"}{"jsonrpc":"2.0","id":19,"method":"ping"}"#,
    );
    let mut ids = vec![s.read()["id"].clone(), s.read()["id"].clone()];
    ids.sort_by_key(|v| v.as_i64());
    assert_eq!(ids, [json!(18), json!(19)]);

    // A malformed notification has nobody to answer: skipped, the server goes on.
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#);
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/x" "#);

    // A line over 16 MiB: refused with its id, the rest of the line skipped.
    let mut huge = br#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"init","arguments":{"spec_name":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', 17 * 1024 * 1024));
    huge.extend_from_slice(br#""}}}"#);
    let e = s.refused(&huge, json!(20), -32600);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than")
    );

    // A request whose id is still in progress is refused; the first runs.
    s.send(br#"{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"manual_find","arguments":{"query":"alpha"}}}
{"jsonrpc":"2.0","id":21,"method":"ping"}"#);
    let (a, b) = (s.read(), s.read());
    let (dup, first) = if a.get("error").is_some() {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(dup["id"], 21);
    assert_eq!(dup["error"]["code"], -32600, "{dup}");
    assert!(
        dup["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still in progress")
    );
    assert_eq!(first["id"], 21);
    assert!(
        first["result"]["structuredContent"]["trace_id"].is_string(),
        "{first}"
    );
    // Once answered, the id may be used again.
    s.send(br#"{"jsonrpc":"2.0","id":21,"method":"ping"}"#);
    assert_eq!(s.read(), json!({"jsonrpc":"2.0","id":21,"result":{}}));

    // Still serving: a normal call works, then end of input ends the server.
    s.send(br#"{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"init","arguments":{"spec_name":"still here"}}}"#);
    let r = s.read();
    assert_eq!(r["id"], 22);
    assert!(
        r["result"]["structuredContent"]["workspace"].is_string(),
        "{r}"
    );
    drop(s.stdin);
    let status = s.child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    // Frames answered by the transport are in the transcript too.
    let text: String = std::fs::read_dir(repo.path().join(".baton/logs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        text.contains("\"unparsed\":\"this is not json\""),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.contains("\"code\":-32700"));
}

/// A typed line that is not JSON gets an answer on stdout, not silence.
#[test]
fn a_line_that_is_not_json_is_answered_even_before_initialize() {
    let repo = Repo::new();
    let out = Command::new(baton_bin())
        .arg("serve")
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(b"hello?\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], -32700);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Send one JSON-RPC message")
    );
}

/// `baton serve --http` with short timeouts, for the slow-client cases.
struct Http {
    child: Child,
    addr: String,
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_http(repo: &Repo) -> Http {
    let mut child = Command::new(baton_bin())
        .args(["serve", "--tools", "all", "--http", "127.0.0.1:0"])
        .env("BATON_HTTP_HEADER_TIMEOUT", "0.5")
        .env("BATON_HTTP_BODY_TIMEOUT", "0.5")
        .env("BATON_HTTP_IDLE_TIMEOUT", "1")
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Http { child, addr }
}

/// POSTs `body` to /mcp; returns (status, JSON body).
fn post(addr: &str, body: &[u8]) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before reading the whole body.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no status line: {raw:?}"))
        .parse()
        .unwrap();
    let start = rest
        .find('{')
        .unwrap_or_else(|| panic!("no JSON body: {raw:?}"));
    let end = rest.rfind('}').unwrap();
    (status, serde_json::from_str(&rest[start..=end]).unwrap())
}

/// Reads until the server closes the connection; returns how long it took.
fn closed_within(mut stream: TcpStream, limit: Duration) -> Duration {
    stream.set_read_timeout(Some(limit)).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return started.elapsed(),
            Ok(_) => continue,
            Err(e) => panic!("the connection was still open after {limit:?}: {e}"),
        }
    }
}

#[test]
fn every_malformed_http_request_is_answered_and_slow_clients_are_cut_off() {
    let repo = Repo::new();
    let server = start_http(&repo);
    let addr = server.addr.clone();

    let (status, body) = post(&addr, b"this is not json");
    assert_eq!(
        (status, &body["error"]["code"], &body["id"]),
        (400, &json!(-32700), &Value::Null)
    );
    for (frame, id) in [
        (invalid_utf8(30), 30),
        (lone_surrogate(31), 31),
        (deep(32), 32),
    ] {
        let (status, body) = post(&addr, &frame);
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["id"], id, "{body}");
        assert_eq!(body["error"]["code"], -32700, "{body}");
    }
    let (status, body) = post(
        &addr,
        br#"{"jsonrpc":"2.0","id":33,"method":"ping"}{"jsonrpc":"2.0","id":34,"method":"ping"}"#,
    );
    assert_eq!(
        (status, &body["error"]["code"], &body["id"]),
        (400, &json!(-32600), &json!(33))
    );
    let (status, body) = post(&addr, br#"[{"jsonrpc":"2.0","id":35,"method":"ping"}]"#);
    assert_eq!((status, &body["error"]["code"]), (400, &json!(-32600)));
    let (status, body) = post(&addr, br#"{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"init","arguments":"spec_name=x"}}"#);
    assert_eq!(status, 200);
    assert_eq!(body["id"], 36);
    assert_eq!(body["result"]["isError"], true, "{body}");
    let error: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["code"], "invalid_parameter");
    let (status, body) = post(
        &addr,
        br#"{"jsonrpc":"2.0","id":37,"method":"nope/method"}"#,
    );
    assert_eq!((status, &body["error"]["code"]), (200, &json!(-32601)));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/call"),
        "{body}"
    );
    let (status, body) = post(&addr, br#"{"jsonrpc":"2.0","id":38,"method":"tools/call"}"#);
    assert_eq!(
        (status, &body["error"]["code"], &body["id"]),
        (200, &json!(-32602), &json!(38))
    );
    let mut big = br#"{"jsonrpc":"2.0","id":39,"method":"ping","params":{"x":""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 5 * 1024 * 1024));
    big.extend_from_slice(br#""}}"#);
    let (status, body) = post(&addr, &big);
    assert_eq!(
        (status, &body["error"]["code"]),
        (413, &json!(-32600)),
        "{body}"
    );

    // Slow clients: silent, headers never finished, body never finished,
    // idle after a request — each is closed (or answered) within the limits.
    let silent = TcpStream::connect(&addr).unwrap();
    assert!(closed_within(silent, Duration::from_secs(5)) < Duration::from_secs(4));
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    closed_within(slow, Duration::from_secs(5));
    let mut slow_body = TcpStream::connect(&addr).unwrap();
    slow_body
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
        .unwrap();
    slow_body
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = String::new();
    let _ = slow_body.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within"), "{answer}");
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    closed_within(idle, Duration::from_secs(5));

    // Still serving.
    let (status, body) = post(&addr, br#"{"jsonrpc":"2.0","id":40,"method":"ping"}"#);
    assert_eq!((status, &body["id"]), (200, &json!(40)), "{body}");
}
