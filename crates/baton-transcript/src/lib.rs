//! The JSON-RPC transcript: every message in and out, one JSON object per
//! line, in `mcp-{sessionId}-{timestamp}.jsonl`.
//!
//! The request path only pushes an [`Entry`] onto an unbounded channel; a
//! background task owns the file, so a slow disk never delays a reply. The
//! task flushes whenever the channel runs dry and when the [`Transcript`] is
//! closed (stdin EOF, SIGINT, SIGTERM all end in [`Transcript::close`]).
//!
//! Bounded on disk: a file that reaches [`TranscriptOptions::max_bytes`] is
//! closed and a new one (same session, new timestamp) begun, and all
//! transcript files in the folder together stay under
//! [`TranscriptOptions::max_total_bytes`] — the oldest are deleted first, at
//! start and at each rotation. A message larger than
//! [`TranscriptOptions::max_payload_bytes`] is recorded as its size, its
//! SHA-256 and its first bytes ([`Truncated`]), so a 15 MB request costs a few
//! hundred bytes and can still be matched against the client's copy.

#![warn(missing_docs)]

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Direction of a message, seen from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client → server.
    In,
    /// Server → client.
    Out,
}

/// The kind of JSON-RPC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageKind {
    /// A request (has an id, expects a response).
    Request,
    /// A successful response.
    Response,
    /// An error response.
    Error,
    /// A notification (no id).
    Notification,
    /// A frame that is not a JSON-RPC message (not JSON, a batch, …).
    Invalid,
}

/// The payload recorded instead of a message over the size limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Truncated {
    /// Always true: the payload was too large to record in full.
    pub truncated: bool,
    /// The size of the message's JSON, in bytes.
    pub bytes: u64,
    /// SHA-256 of the message's JSON, hex.
    pub sha256: String,
    /// The start of the message's JSON (at most [`TRUNCATED_HEAD`] bytes, cut
    /// at a character boundary).
    pub head: String,
}

/// How much of a truncated message's JSON is kept.
pub const TRUNCATED_HEAD: usize = 512;

/// One line of the transcript.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// RFC 3339 UTC timestamp with microseconds.
    pub timestamp: String,
    /// The transcript's session id.
    pub session_id: String,
    /// In or out.
    pub direction: Direction,
    /// Request, response, error or notification.
    pub kind: MessageKind,
    /// The JSON-RPC id, when the message has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Value>,
    /// The JSON-RPC method (responses repeat their request's method).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The tool name for `tools/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Time from request to response, in milliseconds (responses only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// The full JSON-RPC message.
    pub payload: Payload,
}

/// A recorded message: a JSON value, or the JSON text of a message that
/// was serialised once on the request path ([`Recorder::record_serialized`])
/// and is written into the line as it is.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A JSON value.
    Value(Value),
    /// JSON text, written verbatim.
    Text(Box<serde_json::value::RawValue>),
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Value(v) => v.serialize(serializer),
            Payload::Text(t) => t.serialize(serializer),
        }
    }
}

/// The JSON-RPC id, method, tool name and kind of a raw message.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageInfo {
    /// Request, response, error or notification.
    pub kind: MessageKind,
    /// The id, when present.
    pub request_id: Option<Value>,
    /// The method, for requests and notifications.
    pub method: Option<String>,
    /// `params.name` of a `tools/call` request.
    pub tool: Option<String>,
}

/// Classifies a raw JSON-RPC message.
pub fn classify(message: &Value) -> MessageInfo {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let request_id = message.get("id").filter(|v| !v.is_null()).cloned();
    let kind = if method.is_some() {
        if request_id.is_some() {
            MessageKind::Request
        } else {
            MessageKind::Notification
        }
    } else if message.get("error").is_some() {
        MessageKind::Error
    } else {
        MessageKind::Response
    };
    let tool = if method.as_deref() == Some("tools/call") {
        message
            .pointer("/params/name")
            .and_then(Value::as_str)
            .map(str::to_string)
    } else {
        None
    };
    MessageInfo {
        kind,
        request_id,
        method,
        tool,
    }
}

/// Where and how a transcript is written.
#[derive(Debug, Clone)]
pub struct TranscriptOptions {
    /// Folder for the transcript file; `None` writes no file.
    pub dir: Option<PathBuf>,
    /// Echo each entry pretty-printed to stderr.
    pub echo_stderr: bool,
    /// A file that reaches this size is closed and a new one begun.
    pub max_bytes: u64,
    /// All transcript files in `dir` together stay under this size.
    pub max_total_bytes: u64,
    /// Messages larger than this are recorded as [`Truncated`].
    pub max_payload_bytes: u64,
}

impl TranscriptOptions {
    /// Options writing into `dir` (or nowhere) with the default limits:
    /// 8 MiB per file, 64 MiB in all, messages over 64 KiB truncated.
    pub fn new(dir: Option<PathBuf>) -> TranscriptOptions {
        TranscriptOptions {
            dir,
            echo_stderr: false,
            max_bytes: 8 * 1024 * 1024,
            max_total_bytes: 64 * 1024 * 1024,
            max_payload_bytes: 64 * 1024,
        }
    }
}

/// A running transcript. Cheap to clone the [`Recorder`] it hands out.
#[derive(Debug)]
pub struct Transcript {
    recorder: Recorder,
    task: Option<JoinHandle<()>>,
    path: Option<PathBuf>,
}

/// The handle the request path uses to record messages.
#[derive(Debug, Clone)]
pub struct Recorder {
    session_id: String,
    sender: Option<mpsc::UnboundedSender<Entry>>,
    max_payload_bytes: u64,
}

/// A writer that only counts bytes.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A writer that counts, hashes, and keeps the first bytes.
struct Digest {
    bytes: u64,
    hasher: sha2::Sha256,
    head: Vec<u8>,
}

impl Write for Digest {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest as _;
        self.bytes += buf.len() as u64;
        self.hasher.update(buf);
        let room = TRUNCATED_HEAD.saturating_sub(self.head.len());
        self.head.extend_from_slice(&buf[..buf.len().min(room)]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Digest {
    fn new() -> Digest {
        use sha2::Digest as _;
        Digest {
            bytes: 0,
            hasher: sha2::Sha256::new(),
            head: Vec::new(),
        }
    }

    fn finish(self) -> Truncated {
        use sha2::Digest as _;
        let sha256 = self
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        // Cut at a character boundary.
        let mut head = self.head;
        while std::str::from_utf8(&head).is_err() && !head.is_empty() {
            head.pop();
        }
        Truncated {
            truncated: true,
            bytes: self.bytes,
            sha256,
            head: String::from_utf8(head).unwrap_or_default(),
        }
    }
}

/// `payload`, or its [`Truncated`] summary when its JSON is over `max` bytes.
pub fn bounded_payload(payload: Value, max: u64) -> Value {
    let mut counter = Counter(0);
    if serde_json::to_writer(&mut counter, &payload).is_err() || counter.0 <= max {
        return payload;
    }
    let mut digest = Digest::new();
    let _ = serde_json::to_writer(&mut digest, &payload);
    serde_json::to_value(digest.finish()).unwrap_or(Value::Null)
}

/// `message` serialised, or its [`Truncated`] summary when its JSON is
/// over `max` bytes: [`bounded_payload`] for a typed message. The JSON
/// serde_json writes is kept as it is (never parsed again to check it).
fn bounded_message<M: Serialize + ?Sized>(message: &M, max: u64) -> Payload {
    match serde_json::value::to_raw_value(message) {
        Ok(raw) if raw.get().len() as u64 <= max => Payload::Text(raw),
        Ok(raw) => bounded_json(&raw, max),
        Err(_) => Payload::Value(Value::Null),
    }
}

/// `json` (a message already serialised), or its [`Truncated`] summary
/// when it is over `max` bytes.
fn bounded_json(json: &serde_json::value::RawValue, max: u64) -> Payload {
    if json.get().len() as u64 <= max {
        return Payload::Text(json.to_owned());
    }
    let mut digest = Digest::new();
    let _ = digest.write_all(json.get().as_bytes());
    Payload::Value(serde_json::to_value(digest.finish()).unwrap_or(Value::Null))
}

/// The summary of raw bytes that are not a JSON-RPC message: their size,
/// SHA-256 and start (always, whatever their size).
pub fn raw_summary(bytes: &[u8]) -> Value {
    let mut digest = Digest::new();
    let _ = digest.write_all(bytes);
    let summary = digest.finish();
    serde_json::json!({
        "unparsed": summary.head,
        "bytes": summary.bytes,
        "sha256": summary.sha256,
    })
}

impl Recorder {
    /// A recorder that drops everything (transcript disabled).
    pub fn disabled() -> Recorder {
        Recorder {
            session_id: String::new(),
            sender: None,
            max_payload_bytes: u64::MAX,
        }
    }

    /// Records a frame that is not a JSON-RPC message (kind `invalid`):
    /// its size, SHA-256 and start.
    pub fn record_raw(&self, direction: Direction, bytes: &[u8]) {
        if self.is_enabled() {
            self.record(
                direction,
                MessageKind::Invalid,
                None,
                None,
                None,
                None,
                raw_summary(bytes),
            );
        }
    }

    /// Whether entries are kept.
    pub fn is_enabled(&self) -> bool {
        self.sender.is_some()
    }

    /// The session id written in every entry.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Records a raw JSON-RPC message, classifying it. For responses, pass the
    /// request's method and tool (`context`) and the time it took.
    pub fn record_message(
        &self,
        direction: Direction,
        message: Value,
        context: Option<(&Option<String>, &Option<String>)>,
        duration_ms: Option<f64>,
    ) {
        if !self.is_enabled() {
            return;
        }
        let info = classify(&message);
        let (method, tool) = match context {
            Some((m, t)) if info.method.is_none() => (m.clone(), t.clone()),
            _ => (info.method, info.tool),
        };
        self.record(
            direction,
            info.kind,
            info.request_id,
            method,
            tool,
            duration_ms,
            message,
        );
    }

    /// Records one message. Never blocks, never fails: a closed transcript drops it.
    #[allow(clippy::too_many_arguments, reason = "each part named at the call")]
    pub fn record(
        &self,
        direction: Direction,
        kind: MessageKind,
        request_id: Option<Value>,
        method: Option<String>,
        tool: Option<String>,
        duration_ms: Option<f64>,
        payload: Value,
    ) {
        if self.is_enabled() {
            let payload = Payload::Value(bounded_payload(payload, self.max_payload_bytes));
            self.send(
                direction,
                kind,
                request_id,
                method,
                tool,
                duration_ms,
                payload,
            );
        }
    }

    /// Records one message already serialised by serde_json (a response
    /// whose text also goes to the client): its text as it is, or its
    /// summary when too large. Never blocks, never fails.
    #[allow(clippy::too_many_arguments, reason = "each part named at the call")]
    pub fn record_json(
        &self,
        direction: Direction,
        kind: MessageKind,
        request_id: Option<Value>,
        method: Option<String>,
        tool: Option<String>,
        duration_ms: Option<f64>,
        json: &serde_json::value::RawValue,
    ) {
        if self.is_enabled() {
            let payload = bounded_json(json, self.max_payload_bytes);
            self.send(
                direction,
                kind,
                request_id,
                method,
                tool,
                duration_ms,
                payload,
            );
        }
    }

    /// Records one message given as anything serialisable (a response as
    /// the handler returned it): serialised once, here, and written as that
    /// text — no JSON tree is built for it. Never blocks, never fails.
    #[allow(clippy::too_many_arguments, reason = "each part named at the call")]
    pub fn record_serialized<M: Serialize + ?Sized>(
        &self,
        direction: Direction,
        kind: MessageKind,
        request_id: Option<Value>,
        method: Option<String>,
        tool: Option<String>,
        duration_ms: Option<f64>,
        message: &M,
    ) {
        if self.is_enabled() {
            let payload = bounded_message(message, self.max_payload_bytes);
            self.send(
                direction,
                kind,
                request_id,
                method,
                tool,
                duration_ms,
                payload,
            );
        }
    }

    #[allow(clippy::too_many_arguments, reason = "each part named at the call")]
    fn send(
        &self,
        direction: Direction,
        kind: MessageKind,
        request_id: Option<Value>,
        method: Option<String>,
        tool: Option<String>,
        duration_ms: Option<f64>,
        payload: Payload,
    ) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(Entry {
                timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                session_id: self.session_id.clone(),
                direction,
                kind,
                request_id,
                method,
                tool,
                duration_ms,
                payload,
            });
        }
    }
}

/// The file name pattern of seed 004: `mcp-{sessionId}-{timestamp}.jsonl`.
pub fn file_name(session_id: &str, started: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "mcp-{session_id}-{}.jsonl",
        started.format("%Y%m%dT%H%M%S%.3fZ")
    )
}

impl Transcript {
    /// Starts the writer task. Must be called inside a tokio runtime.
    ///
    /// With neither a folder nor stderr echo, returns a disabled transcript.
    /// Old transcript files beyond the folder's budget are deleted first.
    pub fn start(session_id: &str, options: &TranscriptOptions) -> std::io::Result<Transcript> {
        if options.dir.is_none() && !options.echo_stderr {
            return Ok(Transcript {
                recorder: Recorder::disabled(),
                task: None,
                path: None,
            });
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut path = None;
        let mut file = None;
        if let Some(dir) = &options.dir {
            // An ignore file only in a folder baton makes for its logs, and
            // the folder appears with it or not at all.
            if !dir.exists() {
                baton_fs::create_ignored_dir(dir)?;
            }
            std::fs::create_dir_all(dir)?;
            prune(dir, options.max_total_bytes, None);
            let (p, f, named_at) = open_new(dir, session_id, None)?;
            file = Some(Output {
                dir: dir.clone(),
                session_id: session_id.to_string(),
                path: p.clone(),
                named_at,
                writer: std::io::BufWriter::new(f),
                written: 0,
                max_bytes: options.max_bytes,
                max_total_bytes: options.max_total_bytes,
            });
            path = Some(p);
        }
        let task = tokio::spawn(write_loop(receiver, file, options.echo_stderr));
        Ok(Transcript {
            recorder: Recorder {
                session_id: session_id.to_string(),
                sender: Some(sender),
                max_payload_bytes: options.max_payload_bytes,
            },
            task: Some(task),
            path,
        })
    }

    /// A recorder for the request path.
    pub fn recorder(&self) -> Recorder {
        self.recorder.clone()
    }

    /// The transcript file, if one is written.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Stops accepting entries and waits until everything recorded so far is on disk.
    ///
    /// Recorders cloned earlier keep their sender; entries they send after the
    /// last one is dropped are lost, so close after the server has stopped.
    pub async fn close(mut self) {
        self.recorder.sender = None;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// The file the writer task appends to, and when to begin the next one.
struct Output {
    dir: PathBuf,
    session_id: String,
    path: PathBuf,
    /// The time in the current file's name.
    named_at: chrono::DateTime<chrono::Utc>,
    writer: std::io::BufWriter<std::fs::File>,
    written: u64,
    max_bytes: u64,
    max_total_bytes: u64,
}

impl Output {
    /// Appends one line; begins a new file (and prunes the folder) when
    /// this one reached its size.
    fn append(&mut self, line: &[u8]) {
        if self.writer.write_all(line).is_ok() {
            self.written += line.len() as u64;
        }
        if self.written < self.max_bytes {
            return;
        }
        let _ = self.writer.flush();
        match open_new(&self.dir, &self.session_id, Some(self.named_at)) {
            Ok((path, file, at)) => {
                self.named_at = at;
                self.path = path;
                self.writer = std::io::BufWriter::new(file);
                self.written = 0;
                prune(&self.dir, self.max_total_bytes, Some(&self.path));
            }
            // Keep writing where we are rather than losing entries.
            Err(_) => self.written = 0,
        }
    }
}

/// A transcript file just created, and the time in its name.
type NewFile = (PathBuf, std::fs::File, chrono::DateTime<chrono::Utc>);

/// Creates a new transcript file for `session_id` in `dir`, named for now —
/// or for a millisecond after `after` (the previous file's time), so the
/// session's files sort in the order they were written.
fn open_new(
    dir: &Path,
    session_id: &str,
    after: Option<chrono::DateTime<chrono::Utc>>,
) -> std::io::Result<NewFile> {
    let mut at = chrono::Utc::now();
    if let Some(after) = after
        && at <= after
    {
        at = after + chrono::Duration::milliseconds(1);
    }
    loop {
        let path = dir.join(file_name(session_id, at));
        match std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
        {
            Ok(file) => return Ok((path, file, at)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                at += chrono::Duration::milliseconds(1);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Deletes the oldest transcript files in `dir` (`mcp-*.jsonl`, never
/// `keep`) until all of them together take at most `max_total` bytes.
pub fn prune(dir: &Path, max_total: u64, keep: Option<&Path>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, String, PathBuf, u64)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("mcp-") && name.ends_with(".jsonl")) {
                return None;
            }
            let meta = std::fs::symlink_metadata(e.path()).ok()?;
            if !meta.is_file() {
                return None;
            }
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            Some((modified, name, e.path(), meta.len()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.3).sum();
    files.sort();
    for (_, _, path, len) in files {
        if total <= max_total {
            break;
        }
        if keep == Some(path.as_path()) {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

async fn write_loop(
    mut receiver: mpsc::UnboundedReceiver<Entry>,
    mut file: Option<Output>,
    echo: bool,
) {
    while let Some(entry) = receiver.recv().await {
        write_entry(&mut file, echo, &entry);
        // Drain whatever else is queued, then flush once.
        while let Ok(entry) = receiver.try_recv() {
            write_entry(&mut file, echo, &entry);
        }
        if let Some(f) = file.as_mut() {
            let _ = f.writer.flush();
        }
    }
    if let Some(f) = file.as_mut() {
        let _ = f.writer.flush();
        let _ = f.writer.get_ref().sync_data();
    }
}

fn write_entry(file: &mut Option<Output>, echo: bool, entry: &Entry) {
    if let Some(f) = file.as_mut()
        && let Ok(mut line) = serde_json::to_vec(entry)
    {
        line.push(b'\n');
        f.append(&line);
    }
    if echo && let Ok(pretty) = serde_json::to_string_pretty(entry) {
        let arrow = match entry.direction {
            Direction::In => "-->",
            Direction::Out => "<--",
        };
        // Never panic on a closed stderr.
        let _ = writeln!(std::io::stderr(), "{arrow} {pretty}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn entries_are_written_as_json_lines_and_flushed_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcript::start(
            "sess1",
            &TranscriptOptions::new(Some(dir.path().to_path_buf())),
        )
        .unwrap();
        let path = t.path().unwrap().to_path_buf();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with("mcp-sess1-") && name.ends_with(".jsonl"),
            "{name}"
        );
        let rec = t.recorder();
        rec.record(
            Direction::In,
            MessageKind::Request,
            Some(json!(1)),
            Some("tools/call".into()),
            Some("state_get".into()),
            None,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call"}),
        );
        rec.record(
            Direction::Out,
            MessageKind::Response,
            Some(json!(1)),
            Some("tools/call".into()),
            None,
            Some(0.25),
            json!({"jsonrpc":"2.0","id":1,"result":{}}),
        );
        drop(rec);
        t.close().await;
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["direction"], "in");
        assert_eq!(lines[0]["tool"], "state_get");
        assert_eq!(lines[1]["duration_ms"], 0.25);
        assert_eq!(lines[1]["session_id"], "sess1");
    }

    #[test]
    fn classify_tells_the_four_kinds_apart() {
        let req = classify(
            &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"init"}}),
        );
        assert_eq!(req.kind, MessageKind::Request);
        assert_eq!(req.tool.as_deref(), Some("init"));
        let note = classify(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        assert_eq!(note.kind, MessageKind::Notification);
        let ok = classify(&json!({"jsonrpc":"2.0","id":3,"result":{}}));
        assert_eq!(ok.kind, MessageKind::Response);
        let err = classify(&json!({"jsonrpc":"2.0","id":3,"error":{"code":-32601}}));
        assert_eq!(err.kind, MessageKind::Error);
        assert_eq!(err.request_id, Some(json!(3)));
    }

    fn lines_of(dir: &Path) -> Vec<(PathBuf, Vec<Value>)> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
            .into_iter()
            .map(|p| {
                let lines = std::fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                (p, lines)
            })
            .collect()
    }

    #[tokio::test]
    async fn a_huge_message_is_recorded_as_its_size_hash_and_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = TranscriptOptions::new(Some(dir.path().to_path_buf()));
        options.max_payload_bytes = 1024;
        let t = Transcript::start("big", &options).unwrap();
        let huge = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"init","arguments":{"spec_name":"x".repeat(2_000_000)}}});
        let exact = serde_json::to_vec(&huge).unwrap();
        let rec = t.recorder();
        rec.record_message(Direction::In, huge, None, None);
        rec.record_message(
            Direction::In,
            json!({"jsonrpc":"2.0","id":10,"method":"ping"}),
            None,
            None,
        );
        rec.record_raw(Direction::In, b"not json at all");
        drop(rec);
        t.close().await;
        let files = lines_of(dir.path());
        assert_eq!(files.len(), 1);
        let lines = &files[0].1;
        let size = std::fs::metadata(&files[0].0).unwrap().len();
        assert!(size < 4096, "a 2 MB message takes {size} bytes");
        // The entry keeps what identifies the message…
        assert_eq!(lines[0]["request_id"], 9);
        assert_eq!(lines[0]["method"], "tools/call");
        assert_eq!(lines[0]["tool"], "init");
        // …and its size, hash and start instead of its body.
        let p = &lines[0]["payload"];
        assert_eq!(p["truncated"], true);
        assert_eq!(p["bytes"], exact.len() as u64);
        use sha2::Digest as _;
        let hash: String = sha2::Sha256::digest(&exact)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(p["sha256"], hash);
        assert!(exact.starts_with(p["head"].as_str().unwrap().as_bytes()));
        assert_eq!(p["head"].as_str().unwrap().len(), TRUNCATED_HEAD);
        // Small messages are kept whole.
        assert_eq!(lines[1]["payload"]["method"], "ping");
        assert_eq!(lines[2]["kind"], "invalid");
        assert_eq!(lines[2]["payload"]["unparsed"], "not json at all");
        assert_eq!(lines[2]["payload"]["bytes"], 15);
    }

    #[tokio::test]
    async fn a_message_recorded_serialized_is_its_exact_json_and_is_bounded_alike() {
        #[derive(Serialize)]
        struct Reply<'a> {
            jsonrpc: &'static str,
            id: u64,
            result: &'a Value,
        }
        let dir = tempfile::tempdir().unwrap();
        let mut options = TranscriptOptions::new(Some(dir.path().to_path_buf()));
        options.max_payload_bytes = 1024;
        let t = Transcript::start("ser", &options).unwrap();
        let small = json!({"content": [{"type": "text", "text": "a \"quoted\" line\n"}], "n": 1.5});
        let big = json!({"text": "y".repeat(5_000)});
        let big_reply = Reply {
            jsonrpc: "2.0",
            id: 8,
            result: &big,
        };
        let exact = serde_json::to_vec(&big_reply).unwrap();
        let rec = t.recorder();
        let ctx = |id: u64| {
            (
                Some(json!(id)),
                Some("tools/call".to_string()),
                Some("state_get".to_string()),
            )
        };
        let (id, method, tool) = ctx(7);
        rec.record_serialized(
            Direction::Out,
            MessageKind::Response,
            id,
            method,
            tool,
            Some(0.5),
            &Reply {
                jsonrpc: "2.0",
                id: 7,
                result: &small,
            },
        );
        let (id, method, tool) = ctx(8);
        rec.record_serialized(
            Direction::Out,
            MessageKind::Response,
            id,
            method,
            tool,
            None,
            &big_reply,
        );
        drop(rec);
        t.close().await;
        let files = lines_of(dir.path());
        let lines = &files[0].1;
        assert_eq!(lines[0]["kind"], "response");
        assert_eq!(lines[0]["request_id"], 7);
        assert_eq!(lines[0]["tool"], "state_get");
        assert_eq!(lines[0]["duration_ms"], 0.5);
        assert_eq!(
            lines[0]["payload"],
            json!({"jsonrpc": "2.0", "id": 7, "result": small}),
            "the whole message, as JSON"
        );
        // Over the limit: size, hash and start of the very text serialised.
        let p = &lines[1]["payload"];
        assert_eq!(p["truncated"], true);
        assert_eq!(p["bytes"], exact.len() as u64);
        use sha2::Digest as _;
        let hash: String = sha2::Sha256::digest(&exact)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(p["sha256"], hash);
        assert!(exact.starts_with(p["head"].as_str().unwrap().as_bytes()));
    }

    #[tokio::test]
    async fn files_rotate_at_their_size_and_the_folder_stays_in_budget() {
        let dir = tempfile::tempdir().unwrap();
        // Transcripts of earlier sessions, older than anything written now.
        for i in 0..3 {
            let old = dir
                .path()
                .join(format!("mcp-old{i}-20260101T000000.000Z.jsonl"));
            std::fs::write(&old, vec![b'\n'; 10_000]).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "not a transcript").unwrap();
        let mut options = TranscriptOptions::new(Some(dir.path().to_path_buf()));
        options.max_bytes = 4096;
        options.max_total_bytes = 16_384;
        let t = Transcript::start("rot", &options).unwrap();
        let rec = t.recorder();
        for i in 0..300 {
            rec.record_message(
                Direction::In,
                json!({"jsonrpc":"2.0","id":i,"method":"ping","params":{"pad":"p".repeat(100)}}),
                None,
                None,
            );
            if i % 50 == 0 {
                tokio::task::yield_now().await;
            }
        }
        drop(rec);
        t.close().await;
        let files = lines_of(dir.path());
        let total: u64 = files
            .iter()
            .map(|(p, _)| std::fs::metadata(p).unwrap().len())
            .sum();
        let longest_line = 600;
        assert!(
            total <= options.max_total_bytes + options.max_bytes + longest_line,
            "{total} bytes in {} files",
            files.len()
        );
        assert!(files.len() >= 3, "{} files", files.len());
        // The earlier sessions' files went first; other files are untouched.
        assert!(
            files
                .iter()
                .all(|(p, _)| !p.to_string_lossy().contains("mcp-old"))
        );
        assert!(dir.path().join("notes.txt").exists());
        for (path, lines) in &files {
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(name.starts_with("mcp-rot-"), "{name}");
            assert!(std::fs::metadata(path).unwrap().len() <= options.max_bytes + longest_line);
            assert!(!lines.is_empty());
        }
        // The newest entries survive.
        let last = files.last().unwrap().1.last().unwrap();
        assert_eq!(last["request_id"], 299);
    }

    #[tokio::test]
    async fn disabled_transcript_records_nothing() {
        let t = Transcript::start("x", &TranscriptOptions::new(None)).unwrap();
        assert!(!t.recorder().is_enabled());
        assert!(t.path().is_none());
        t.close().await;
    }
}
