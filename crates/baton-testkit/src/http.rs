//! Raw HTTP/1.1 against a real baton server, the way `curl` or another
//! program on the machine talks to it (every header as given, nothing added
//! but `Host` when missing), and a server process started for a test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A server process (`baton dashboard`, `baton serve --http`), killed when
/// dropped.
pub struct Server {
    /// The process.
    pub child: Child,
    /// Where to connect (`127.0.0.1:port`).
    pub addr: String,
    /// What the server said on stderr up to the line that named its address.
    pub said: String,
    /// The one-time sign-in link it printed (started at a terminal).
    pub sign_in: Option<String>,
    /// Its terminal's input (started at a terminal): Enter asks for a new link.
    pub terminal: Option<std::process::ChildStdin>,
    /// What it printed on its terminal since (started at a terminal).
    pub printed: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Sends SIGTERM and waits up to `within` for the process to end;
    /// whether it ended.
    pub fn terminate_within(&mut self, within: Duration) -> bool {
        // SAFETY: kill(2) on the child's own pid; no memory is involved.
        let _ = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let started = std::time::Instant::now();
        while started.elapsed() < within {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

/// Starts `command` with stderr piped and reads stderr up to the line
/// containing `marker`; the address is the `http://host:port` on that line.
/// stderr keeps being drained afterwards, so the server never blocks on it.
pub fn start(mut command: Command, marker: &str) -> Server {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut said = String::new();
    let addr = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.kill();
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
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = stderr.read_to_string(&mut sink);
    });
    Server {
        child,
        addr,
        said,
        sign_in: None,
        terminal: None,
        printed: Default::default(),
    }
}

/// Starts `program args…` in `dir` on a pseudo-terminal (`script`), as a
/// person starts it in their terminal, and reads what it prints up to its
/// one-time sign-in link (`http://host:port/#signin=…`).
pub fn start_at_terminal(
    program: &std::path::Path,
    args: &[&str],
    dir: &std::path::Path,
    env: &[(&str, &str)],
) -> Server {
    let mut line = shell_word(&program.display().to_string());
    for a in args {
        line.push(' ');
        line.push_str(&shell_word(a));
    }
    let mut command = Command::new("script");
    command
        .args(["-qfec", &line, "/dev/null"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command
        .spawn()
        .expect("script (util-linux) runs the server on a terminal");
    let terminal = child.stdin.take();
    let mut out = child.stdout.take().expect("stdout");
    let printed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    {
        let printed = std::sync::Arc::clone(&printed);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match out.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let text = String::from_utf8_lossy(&buf[..n]).replace("\r\n", "\n");
                        if let Ok(mut p) = printed.lock() {
                            p.push_str(&text);
                        }
                        let _ = tx.send(());
                    }
                }
            }
        });
    }
    let started = std::time::Instant::now();
    let (addr, sign_in) = loop {
        let text = printed.lock().map(|p| p.clone()).unwrap_or_default();
        if let Some(link) = find_sign_in(&text) {
            let addr = link
                .trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap_or("")
                .to_string();
            break (addr, link);
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("no sign-in link within 30 s:\n{text}");
        }
        let _ = rx.recv_timeout(Duration::from_millis(200));
    };
    let said = printed.lock().map(|p| p.clone()).unwrap_or_default();
    Server {
        child,
        addr,
        said,
        sign_in: Some(sign_in),
        terminal,
        printed,
    }
}

impl Server {
    /// Presses Enter on the server's terminal and waits for the new
    /// sign-in link it prints.
    pub fn new_sign_in_link(&mut self) -> String {
        let before = self.printed.lock().map(|p| p.len()).unwrap_or(0);
        if let Some(t) = self.terminal.as_mut() {
            use std::io::Write;
            let _ = t.write_all(b"\n");
            let _ = t.flush();
        }
        let started = std::time::Instant::now();
        loop {
            let text = self
                .printed
                .lock()
                .map(|p| p[before..].to_string())
                .unwrap_or_default();
            if let Some(link) = find_sign_in(&text) {
                return link;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no new sign-in link:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The one-time key of a sign-in link.
    pub fn key_of(link: &str) -> String {
        link.split("#signin=")
            .nth(1)
            .unwrap_or("")
            .trim()
            .to_string()
    }
}

/// The last complete `http://…/#signin=<hex>` link in `text`.
fn find_sign_in(text: &str) -> Option<String> {
    let at = text.rfind("http://")?;
    let rest = &text[at..];
    let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    let link = &rest[..end];
    let key = link.split("#signin=").nth(1)?;
    // Only once the whole key (64 hex digits) has been printed.
    (key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit())).then(|| link.to_string())
}

fn shell_word(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', "'\\''"))
}

/// One HTTP reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code (0 when the server closed without one).
    pub status: u16,
    /// The status line and headers.
    pub head: String,
    /// The body (de-chunked).
    pub body: String,
}

impl Reply {
    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|_| panic!("not JSON ({}): {}", self.status, self.body))
    }

    /// A header's value (the first of that name).
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers(name).into_iter().next()
    }

    /// Every value of a header.
    pub fn headers(&self, name: &str) -> Vec<String> {
        self.head
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .collect()
    }
}

/// `POST /api/login` with `body` (`{"key":…}` or `{"token":…}`) from
/// `origin`: how the dashboard's page signs in.
pub fn sign_in(addr: &str, origin: &str, body: &str) -> Reply {
    request(
        addr,
        "POST",
        "/api/login",
        &[("Origin", origin)],
        Some(body),
    )
}

/// Opens `GET path` on a new connection that stays open (an event
/// stream) and reads the start of the reply: at most `max` bytes, waiting
/// 20 s at most. Returns the connection and what was read.
pub fn open_stream(addr: &str, path: &str, max: usize) -> (TcpStream, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .expect("send");
    let mut buf = vec![0u8; max];
    let n = stream.read(&mut buf).unwrap_or(0);
    buf.truncate(n);
    (stream, buf)
}

/// One request on a new connection with `headers` (a `Host` naming `addr`
/// is added unless one is given; a JSON content type and length for a body).
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    if method != "GET" {
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            req.push_str("Content-Type: application/json\r\n");
        }
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
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
