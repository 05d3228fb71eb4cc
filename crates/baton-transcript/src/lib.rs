//! The JSON-RPC transcript (seed 004 §3.1): every message in and out, one JSON
//! object per line, in `mcp-{sessionId}-{timestamp}.jsonl`.
//!
//! The request path only pushes an [`Entry`] onto an unbounded channel; a
//! background task owns the file, so a slow disk never delays a reply. The
//! task flushes whenever the channel runs dry and when the [`Transcript`] is
//! closed (stdin EOF, SIGINT, SIGTERM all end in [`Transcript::close`]).

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
}

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
    pub payload: Value,
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
}

impl Recorder {
    /// A recorder that drops everything (transcript disabled).
    pub fn disabled() -> Recorder {
        Recorder {
            session_id: String::new(),
            sender: None,
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
    #[allow(clippy::too_many_arguments)]
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
            // An ignore file only in a folder baton made for its logs.
            let created = !dir.exists();
            std::fs::create_dir_all(dir)?;
            let ignore = dir.join(".gitignore");
            if created && !ignore.exists() {
                let _ = std::fs::write(&ignore, "*\n");
            }
            let p = dir.join(file_name(session_id, chrono::Utc::now()));
            file = Some(std::io::BufWriter::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&p)?,
            ));
            path = Some(p);
        }
        let task = tokio::spawn(write_loop(receiver, file, options.echo_stderr));
        Ok(Transcript {
            recorder: Recorder {
                session_id: session_id.to_string(),
                sender: Some(sender),
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

async fn write_loop(
    mut receiver: mpsc::UnboundedReceiver<Entry>,
    mut file: Option<std::io::BufWriter<std::fs::File>>,
    echo: bool,
) {
    while let Some(entry) = receiver.recv().await {
        write_entry(&mut file, echo, &entry);
        // Drain whatever else is queued, then flush once.
        while let Ok(entry) = receiver.try_recv() {
            write_entry(&mut file, echo, &entry);
        }
        if let Some(f) = file.as_mut() {
            let _ = f.flush();
        }
    }
    if let Some(f) = file.as_mut() {
        let _ = f.flush();
        let _ = f.get_ref().sync_data();
    }
}

fn write_entry(file: &mut Option<std::io::BufWriter<std::fs::File>>, echo: bool, entry: &Entry) {
    if let Some(f) = file.as_mut()
        && serde_json::to_writer(&mut *f, entry).is_ok()
    {
        let _ = f.write_all(b"\n");
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
            &TranscriptOptions {
                dir: Some(dir.path().to_path_buf()),
                echo_stderr: false,
            },
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

    #[tokio::test]
    async fn disabled_transcript_records_nothing() {
        let t = Transcript::start(
            "x",
            &TranscriptOptions {
                dir: None,
                echo_stderr: false,
            },
        )
        .unwrap();
        assert!(!t.recorder().is_enabled());
        assert!(t.path().is_none());
        t.close().await;
    }
}
