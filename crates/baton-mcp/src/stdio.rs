//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, with
//! every frame answered.
//!
//! rmcp's own transport drops what it cannot parse (so a client waiting on
//! that request waits forever) and executes requests whose id is still in
//! use. This one reads the lines itself and hands rmcp only well-formed
//! messages; everything else gets an answer here (or, for a notification,
//! which has nobody to answer, a logged skip):
//!
//! * not JSON, invalid UTF-8, a lone surrogate escape, nesting deeper than
//!   128 levels → `-32700` Parse error, with the request's id when it can be
//!   found before the fault ([`crate::protocol::sniff_id`]), else `null`;
//! * two messages on one line → each is handled as if on its own line;
//! * a line over [`MAX_LINE_BYTES`] → `-32600`, the rest of the line skipped;
//! * a request whose id is still in flight → `-32600`, the first one runs;
//! * `tools/call` with non-object `arguments` → an `invalid_parameter` tool
//!   error (a result with `isError`, like every other argument error);
//! * well-formed JSON that is no JSON-RPC message → `-32600`.
//!
//! Frames answered here are recorded in the transcript like the others.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use baton_transcript::{Direction, Recorder};

use crate::protocol::{
    INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, describe_parse_error, error_response,
    is_valid_id, non_object_arguments, sniff_id, tool_error_response,
};

/// Longest accepted line (one message); longer ones are refused and skipped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How far into a broken frame the id is looked for.
const SNIFF_LIMIT: usize = 64 * 1024;

/// The writing half, shared by rmcp's sends and the answers given here.
type SharedWriter = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// Newline-delimited JSON-RPC over a reader and a writer (stdin/stdout in
/// production, pipes in tests) that answers every frame.
pub struct StdioTransport {
    reader: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    writer: SharedWriter,
    line: Vec<u8>,
    discarding: bool,
    /// Messages parsed from a line, waiting to be handed to rmcp.
    ready: VecDeque<RxJsonRpcMessage<RoleServer>>,
    /// Ids of requests handed to rmcp and not answered yet.
    in_flight: Arc<Mutex<HashSet<String>>>,
    recorder: Recorder,
    /// stdin is a terminal: explain refusals on stderr too.
    interactive: bool,
    max_line: usize,
    /// Responses the transcript serialised already.
    written: Option<Arc<crate::transcript::WrittenReplies>>,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("interactive", &self.interactive)
            .finish()
    }
}

/// The key of a JSON-RPC id in the in-flight set.
fn id_key(id: &Value) -> String {
    id.to_string()
}

impl StdioTransport {
    /// The transport over the process's stdin and stdout (non-blocking pipes
    /// when both are pipes, as MCP clients start servers).
    pub fn stdio(recorder: Recorder) -> StdioTransport {
        let (read, write) = rmcp::transport::stdio_pipes();
        let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
        StdioTransport::new(Box::new(read), Box::new(write), recorder, interactive)
    }

    /// The transport over any reader and writer.
    pub fn new(
        read: Box<dyn AsyncRead + Send + Unpin>,
        write: Box<dyn AsyncWrite + Send + Unpin>,
        recorder: Recorder,
        interactive: bool,
    ) -> StdioTransport {
        StdioTransport {
            reader: BufReader::new(read),
            writer: Arc::new(tokio::sync::Mutex::new(write)),
            line: Vec::new(),
            discarding: false,
            ready: VecDeque::new(),
            in_flight: Arc::new(Mutex::new(HashSet::new())),
            recorder,
            interactive,
            max_line: MAX_LINE_BYTES,
            written: None,
        }
    }

    /// Sends a response the transcript already serialised as that text
    /// (see [`crate::transcript::WrittenReplies`]).
    pub fn with_written(
        mut self,
        written: Arc<crate::transcript::WrittenReplies>,
    ) -> StdioTransport {
        self.written = Some(written);
        self
    }

    /// Overrides [`MAX_LINE_BYTES`] (tests).
    pub fn with_max_line(mut self, max_line: usize) -> StdioTransport {
        self.max_line = max_line;
        self
    }

    /// Writes one message and a newline.
    async fn write_message(writer: &SharedWriter, message: &Value) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        let mut writer = writer.lock().await;
        writer.write_all(&bytes).await?;
        writer.flush().await
    }

    /// What answering a frame here needs (owned, so no borrow of the
    /// transport is held across the write).
    fn answerer(&self) -> Answerer {
        Answerer {
            writer: Arc::clone(&self.writer),
            recorder: self.recorder.clone(),
            interactive: self.interactive,
        }
    }

    /// Records a frame that did not parse: its size, hash and start.
    fn record_unparsed(&self, bytes: &[u8]) {
        self.recorder.record_raw(Direction::In, bytes);
    }

    /// Reads one line into `self.line` (without growing past the limit).
    /// Ok(true): a line; Ok(false): end of input; Err: an oversized line was
    /// dropped (its first bytes are returned to find its id).
    async fn read_line(&mut self) -> std::io::Result<Result<bool, Vec<u8>>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                // A last line without a newline is still a message.
                return Ok(Ok(!self.line.is_empty() && !self.discarding));
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if self.discarding {
                self.reader.consume(take);
                if newline.is_some() {
                    self.discarding = false;
                }
                continue;
            }
            if self.line.len() + take > self.max_line {
                let mut head = std::mem::take(&mut self.line);
                let room = SNIFF_LIMIT.saturating_sub(head.len());
                head.extend_from_slice(&available[..take.min(room)]);
                self.reader.consume(take);
                self.discarding = newline.is_none();
                return Ok(Err(head));
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if newline.is_some() {
                return Ok(Ok(true));
            }
        }
    }

    /// Handles one line: zero or more messages, each handed on or answered.
    async fn handle_line(&mut self, line: Vec<u8>) -> std::io::Result<()> {
        let mut rest: &[u8] = &line;
        while let Some(first) = rest.iter().position(|b| !b.is_ascii_whitespace()) {
            rest = &rest[first..];
            rest = rest
                .strip_prefix(b"\xEF\xBB\xBF".as_slice())
                .unwrap_or(rest);
            let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<Value>();
            match values.next() {
                Some(Ok(value)) => {
                    let used = values.byte_offset();
                    self.accept(value).await?;
                    rest = &rest[used..];
                }
                Some(Err(e)) => {
                    self.record_unparsed(rest);
                    let id = sniff_id(rest, SNIFF_LIMIT);
                    let is_notification = id.is_none()
                        && rest.windows(8).any(|w| w == b"\"method\"")
                        && !rest.windows(4).any(|w| w == b"\"id\"");
                    if is_notification {
                        tracing::warn!("skipped a notification that is not valid JSON: {e}");
                    } else {
                        self.answerer()
                            .answer(error_response(
                                id.as_ref(),
                                PARSE_ERROR,
                                &describe_parse_error(&e),
                                None,
                            ))
                            .await?;
                    }
                    return Ok(());
                }
                None => return Ok(()),
            }
        }
        Ok(())
    }

    /// Hands a parsed message on to rmcp, or answers it here.
    async fn accept(&mut self, value: Value) -> std::io::Result<()> {
        let Value::Object(object) = &value else {
            self.record_unparsed(value.to_string().as_bytes());
            let message = if value.is_array() {
                "Invalid request: batches (JSON arrays) are not part of MCP; send one message per line"
            } else {
                "Invalid request: a JSON-RPC message is a JSON object"
            };
            return self
                .answerer()
                .answer(error_response(None, INVALID_REQUEST, message, None))
                .await;
        };
        let id = object.get("id").filter(|id| !id.is_null()).cloned();
        let method = object
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let (Some(id), Some(method)) = (&id, &method) {
            if !is_valid_id(id) {
                self.recorder
                    .record_message(Direction::In, value.clone(), None, None);
                return self
                    .answerer()
                    .answer(error_response(
                        None,
                        INVALID_REQUEST,
                        "Invalid request: the id must be a string or a number",
                        None,
                    ))
                    .await;
            }
            if method == "tools/call" {
                let params = object.get("params");
                if !params.is_some_and(Value::is_object) {
                    self.recorder
                        .record_message(Direction::In, value.clone(), None, None);
                    return self
                        .answerer()
                        .answer(error_response(
                            Some(id),
                            INVALID_PARAMS,
                            "Invalid params: tools/call needs params {\"name\": TOOL, \"arguments\": {…}}",
                            None,
                        ))
                        .await;
                }
                if let Some(error) = non_object_arguments(params.and_then(|p| p.get("arguments"))) {
                    self.recorder
                        .record_message(Direction::In, value.clone(), None, None);
                    return self
                        .answerer()
                        .answer(tool_error_response(id, &error))
                        .await;
                }
            }
            let key = id_key(id);
            let fresh = self
                .in_flight
                .lock()
                .map(|mut set| set.insert(key.clone()))
                .unwrap_or(true);
            if !fresh {
                self.recorder
                    .record_message(Direction::In, value.clone(), None, None);
                return self
                    .answerer()
                    .answer(error_response(
                        Some(id),
                        INVALID_REQUEST,
                        &format!(
                            "Invalid request: the id {key} belongs to a request still in progress; give every request its own id"
                        ),
                        None,
                    ))
                    .await;
            }
        }
        if method.as_deref() == Some("notifications/cancelled")
            && let Some(request) = value.pointer("/params/requestId")
            && let Ok(mut set) = self.in_flight.lock()
        {
            // A cancelled request gets no response: its id is free again.
            set.remove(&id_key(request));
            if let Some(written) = &self.written {
                written.take(request);
            }
        }
        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
            Ok(message) => {
                self.ready.push_back(message);
                Ok(())
            }
            Err(e) => {
                if let Some(id) = &id
                    && let Ok(mut set) = self.in_flight.lock()
                {
                    set.remove(&id_key(id));
                }
                self.recorder
                    .record_message(Direction::In, value.clone(), None, None);
                match (&id, &method) {
                    // A notification: nobody waits for an answer.
                    (None, Some(m)) => {
                        tracing::warn!("skipped the notification {m:?}: {e}");
                        Ok(())
                    }
                    _ => {
                        self.answerer().answer(error_response(
                            id.as_ref(),
                            INVALID_REQUEST,
                            &format!("Invalid request: not a JSON-RPC request, response or notification MCP knows ({e})"),
                            None,
                        ))
                        .await
                    }
                }
            }
        }
    }
}

/// Writes answers given by the transport itself.
struct Answerer {
    writer: SharedWriter,
    recorder: Recorder,
    interactive: bool,
}

impl Answerer {
    /// Records the answer and writes it (on a terminal, says it on stderr too).
    async fn answer(self, response: Value) -> std::io::Result<()> {
        if self.interactive
            && let Some(message) = response.pointer("/error/message").and_then(Value::as_str)
        {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "baton: {message}");
        }
        self.recorder
            .record_message(Direction::Out, response.clone(), None, Some(0.0));
        StdioTransport::write_message(&self.writer, &response).await
    }
}

impl rmcp::transport::Transport<RoleServer> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        let in_flight = Arc::clone(&self.in_flight);
        let written = self.written.clone();
        async move {
            // The request is answered: its id may be used again — freed before
            // the answer is written, since a client may reuse it as soon as
            // it has read the answer.
            let answered = match &item {
                rmcp::model::JsonRpcMessage::Response(r) => Some(r.id.clone()),
                rmcp::model::JsonRpcMessage::Error(e) => e.id.clone(),
                _ => None,
            };
            let answered = answered.and_then(|id| serde_json::to_value(id).ok());
            if let Some(id) = &answered
                && let Ok(mut set) = in_flight.lock()
            {
                set.remove(&id_key(id));
            }
            // The text the transcript recorded, when it made it; else
            // straight to bytes: no JSON tree of a large reply (tools/list).
            let mut bytes = match answered
                .as_ref()
                .zip(written.as_deref())
                .and_then(|(id, written)| written.take(id))
            {
                Some(json) => String::from(Box::<str>::from(json)).into_bytes(),
                None => serde_json::to_vec(&item).map_err(std::io::Error::other)?,
            };
            bytes.push(b'\n');
            let mut writer = writer.lock().await;
            writer.write_all(&bytes).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Some(message);
            }
            let read = match self.read_line().await {
                Ok(read) => read,
                Err(e) => {
                    tracing::error!("reading stdin: {e}");
                    return None;
                }
            };
            let handled = match read {
                Ok(false) => return None,
                Ok(true) => {
                    let mut line = std::mem::take(&mut self.line);
                    while line.last().is_some_and(|b| matches!(b, b'\n' | b'\r')) {
                        line.pop();
                    }
                    self.handle_line(line).await
                }
                Err(head) => {
                    self.record_unparsed(&head);
                    let id = sniff_id(&head, SNIFF_LIMIT);
                    self.answerer().answer(error_response(
                        id.as_ref(),
                        INVALID_REQUEST,
                        &format!(
                            "Invalid request: the message is longer than {} bytes (the limit); it was skipped",
                            self.max_line
                        ),
                        None,
                    ))
                    .await
                }
            };
            if let Err(e) = handled {
                tracing::error!("writing stdout: {e}");
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.shutdown().await
    }
}
