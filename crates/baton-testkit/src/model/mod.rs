//! Scripted model servers for the real agent CLIs: loopback HTTP servers
//! that speak a model provider's API, play a script of assistant turns, and
//! record every request the client sends.
//!
//! * [`anthropic`] — the Anthropic Messages API (`POST /v1/messages`,
//!   streamed as server-sent events), for Claude Code.
//! * [`openai`] — the OpenAI Responses API (`POST /v1/responses`, streamed),
//!   for `codex exec`.
//!
//! Each server runs on its own thread with its own runtime, bound to
//! `127.0.0.1` on a port the system picks; it stops when dropped. A script
//! step may be a function of the request it answers (the workspace a run
//! was given is only known once a tool result names it). A step that
//! panics, or a request that arrives after the script ended, is answered
//! with an error the client does not retry and recorded as a script error
//! ([`ScriptErrors`]), so a test fails with the reason instead of hanging.

pub mod anthropic;
pub mod openai;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// One HTTP request the client sent, as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, `HEAD`, …
    pub method: String,
    /// The path with its query (`/v1/messages?beta=true`).
    pub path: String,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when empty or not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: std::time::Instant,
}

impl Recorded {
    /// The value of header `name` (case-insensitive), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path without its query.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }
}

/// What the server answers one request with.
pub(crate) struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    pub(crate) fn json(status: u16, body: &Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: body.to_string(),
        }
    }
}

/// Answers requests: one per API.
pub(crate) trait Responder: Send + 'static {
    /// The reply to `request`; `Err` is a script error (the client gets
    /// `error_reply(message)`).
    fn respond(&mut self, request: &Recorded) -> Result<Reply, String>;
    /// The API's error body for a script error (a 400 the client does not
    /// retry).
    fn error_reply(&self, message: &str) -> Reply;
}

/// Script errors: steps that panicked or requests past the script's end.
#[derive(Debug, Clone, Default)]
pub struct ScriptErrors(pub Vec<String>);

struct Shared {
    recorded: Mutex<Vec<Recorded>>,
    errors: Mutex<Vec<String>>,
    responder: Mutex<Box<dyn Responder>>,
}

/// The HTTP server under both APIs.
pub(crate) struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub(crate) fn start(responder: Box<dyn Responder>) -> Server {
        let shared = Arc::new(Shared {
            recorded: Mutex::new(Vec::new()),
            errors: Mutex::new(Vec::new()),
            responder: Mutex::new(responder),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = axum::Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(256 * 1024 * 1024))
            .with_state(shared.clone());
        let thread = std::thread::Builder::new()
            .name(format!("model-server-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("model server runtime");
                runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = rx.await;
                        })
                        .await;
                });
            })
            .expect("model server thread");
        Server {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn recorded(&self) -> Vec<Recorded> {
        lock(&self.shared.recorded).clone()
    }

    pub(crate) fn errors(&self) -> ScriptErrors {
        ScriptErrors(lock(&self.shared.errors).clone())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            // Graceful shutdown waits for open connections; a client that
            // keeps one alive must not hold the test: detach after the
            // signal instead of joining when the client is still running.
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = Recorded {
        method: method.as_str().to_string(),
        path: uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| uri.path().to_string()),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: std::time::Instant::now(),
    };
    lock(&shared.recorded).push(recorded.clone());
    let reply = {
        let mut responder = lock(&shared.responder);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            responder.respond(&recorded)
        }));
        let failure = match outcome {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(message)) => Err(message),
            Err(panic) => Err(format!(
                "a script step panicked on {} {}: {}",
                recorded.method,
                recorded.path,
                panic_text(panic.as_ref())
            )),
        };
        match failure {
            Ok(reply) => reply,
            Err(message) => {
                lock(&shared.errors).push(message.clone());
                responder.error_reply(&message)
            }
        }
    };
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, reply.content_type)],
        reply.body,
    )
        .into_response()
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}
