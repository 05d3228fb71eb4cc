//! HTTP routes: streamable HTTP MCP at `/mcp`, the event stream at `/events`,
//! and `/healthz`. Bound to loopback by default; rmcp validates `Host`.
//!
//! Every `/mcp` POST passes `guard` first: the body is read within
//! [`BODY_TIMEOUT`] and [`MAX_BODY_BYTES`], recorded in the transcript, and
//! answered here when it cannot be handed to rmcp (not JSON, a batch, two
//! messages, `tools/call` with non-object `arguments`) — always with a
//! JSON-RPC body. Connections are served by [`serve`]: request headers must
//! arrive within [`HEADER_TIMEOUT`], and a connection with no request in
//! progress and no byte either way for [`IDLE_TIMEOUT`] is closed (an open
//! `/events` stream sends a keep-alive every 15 s, so it is never idle).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use futures::stream::{self, StreamExt};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use axum::response::IntoResponse;
use baton_events::EventRecord;
use baton_transcript::{Direction, Recorder};
use serde_json::Value;
use std::time::Instant;

use crate::context::AppContext;
use crate::protocol::{
    INVALID_REQUEST, PARSE_ERROR, describe_parse_error, error_response, non_object_arguments,
    sniff_id, tool_error_response,
};
use crate::{ServeError, build_server};

/// Default time for a client to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time for a client to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time after which a connection with no request in progress and no
/// traffic is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The HTTP timeouts: [`HEADER_TIMEOUT`], [`BODY_TIMEOUT`], [`IDLE_TIMEOUT`]
/// unless `BATON_HTTP_HEADER_TIMEOUT`, `BATON_HTTP_BODY_TIMEOUT` or
/// `BATON_HTTP_IDLE_TIMEOUT` (seconds, fractions allowed) say otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HttpLimits {
    /// Time for a request's headers.
    pub header: Duration,
    /// Time for a request's body.
    pub body: Duration,
    /// Time a connection may sit idle.
    pub idle: Duration,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            header: HEADER_TIMEOUT,
            body: BODY_TIMEOUT,
            idle: IDLE_TIMEOUT,
        }
    }
}

impl HttpLimits {
    /// The limits from the environment; a value that is not a positive
    /// number of seconds is an error naming the variable.
    pub fn from_env() -> Result<HttpLimits, ServeError> {
        let read = |name: &str, default: Duration| -> Result<Duration, ServeError> {
            match std::env::var(name) {
                Err(_) => Ok(default),
                Ok(text) => text
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0 && *s < 86_400.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        ServeError::Io(format!(
                            "{name}={text:?} is not a number of seconds between 0 and 86400"
                        ))
                    }),
            }
        };
        Ok(HttpLimits {
            header: read("BATON_HTTP_HEADER_TIMEOUT", HEADER_TIMEOUT)?,
            body: read("BATON_HTTP_BODY_TIMEOUT", BODY_TIMEOUT)?,
            idle: read("BATON_HTTP_IDLE_TIMEOUT", IDLE_TIMEOUT)?,
        })
    }
}
/// Largest accepted `/mcp` request body.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Events replayed to a new `/events` subscriber before live ones.
pub const REPLAY_LIMIT: usize = 500;

/// The router for `serve --http`.
pub fn router(
    ctx: Arc<AppContext>,
    recorder: Recorder,
    cancel: CancellationToken,
    limits: HttpLimits,
) -> Result<Router, ServeError> {
    let server = build_server(Arc::clone(&ctx))?;
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = cancel.clone();
    let shutdown = cancel;
    // Stateless with plain JSON responses: every exchange is one JSON body each
    // way, which the transcript middleware records as is.
    config.legacy_session_mode = false;
    config.json_response = true;
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp = Router::new()
        .fallback_service(mcp)
        .layer(axum::middleware::from_fn_with_state(
            GuardState { recorder, limits },
            guard,
        ));
    Ok(Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/events", get(events))
        .with_state(EventsState::new(ctx, shutdown))
        .nest("/mcp", mcp))
}

/// What `/events` needs: the bus, and the token that ends every stream when
/// the server shuts down.
#[derive(Clone)]
pub(crate) struct EventsState {
    /// Whose bus the stream reads.
    pub(crate) ctx: Arc<AppContext>,
    /// Cancelled when the server shuts down.
    pub(crate) shutdown: CancellationToken,
    /// Event streams open at once ([`MAX_EVENT_STREAMS`]): held streams
    /// never take the connections the page and the API need.
    pub(crate) streams: Arc<tokio::sync::Semaphore>,
}

/// `/events` streams served at once; more are answered `503` (JSON). Far
/// below [`MAX_CONNECTIONS`], so held streams leave room for the page and
/// the API.
pub const MAX_EVENT_STREAMS: usize = 64;

impl EventsState {
    /// The state of a server's `/events`.
    pub(crate) fn new(ctx: Arc<AppContext>, shutdown: CancellationToken) -> EventsState {
        EventsState {
            ctx,
            shutdown,
            streams: Arc::new(tokio::sync::Semaphore::new(MAX_EVENT_STREAMS)),
        }
    }
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then lets open
/// connections finish (the caller bounds how long). Each connection gets the
/// header and idle timeouts described in the module doc.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: CancellationToken,
    limits: HttpLimits,
) -> Result<(), ServeError> {
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            // Too many open connections: refuse this one by closing it.
            drop(stream);
            continue;
        };
        tokio::spawn(serve_connection(
            stream,
            peer,
            app.clone(),
            shutdown.clone(),
            limits,
            permit,
        ));
    }
    // Wait until every connection has finished (the caller bounds the wait).
    let _ = connections.acquire_many(MAX_CONNECTIONS as u32).await;
    Ok(())
}

/// Connections served at once; more are closed on arrival.
pub const MAX_CONNECTIONS: usize = 512;

/// The address a request came from, put in its extensions by [`serve`].
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// One connection: HTTP/1.1 with the header timeout, closed when idle or,
/// once `shutdown` is cancelled, after its current request.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    app: Router,
    shutdown: CancellationToken,
    limits: HttpLimits,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let activity = Activity::new();
    let io = hyper_util::rt::TokioIo::new(Tracked {
        inner: stream,
        activity: activity.clone(),
    });
    let requests = activity.clone();
    let service =
        hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            let mut app = app.clone();
            let guard = requests.request_started();
            // Who is on the other end (sign-in limits are per source).
            request.extensions_mut().insert(Peer(peer));
            async move {
                let response =
                    tower_service::Service::call(&mut app, request.map(axum::body::Body::new))
                        .await;
                drop(guard);
                response
            }
        });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header)
        .keep_alive(true);
    let connection = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = &mut connection => return,
            _ = shutdown.cancelled(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = tokio::time::sleep(limits.idle / 4) => {
                if activity.idle_for() >= limits.idle {
                    return;
                }
            }
        }
    }
}

/// When a connection last moved a byte, and how many requests it has open.
#[derive(Clone)]
struct Activity {
    started: std::time::Instant,
    last_ms: Arc<std::sync::atomic::AtomicU64>,
    open_requests: Arc<std::sync::atomic::AtomicUsize>,
}

/// Decrements the open-request count when the request's response is ready.
struct RequestGuard(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Activity {
    fn new() -> Activity {
        Activity {
            started: std::time::Instant::now(),
            last_ms: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            open_requests: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }

    fn touch(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        self.last_ms
            .store(now, std::sync::atomic::Ordering::Relaxed);
    }

    fn request_started(&self) -> RequestGuard {
        self.touch();
        self.open_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        RequestGuard(Arc::clone(&self.open_requests))
    }

    /// How long nothing happened (zero while a request is being handled).
    fn idle_for(&self) -> Duration {
        if self
            .open_requests
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
        {
            return Duration::ZERO;
        }
        let last = self.last_ms.load(std::sync::atomic::Ordering::Relaxed);
        let now = self.started.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(last))
    }
}

/// A stream that notes every byte read or written in its [`Activity`].
struct Tracked<S> {
    inner: S,
    activity: Activity,
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A JSON-RPC answer given by the guard, with its HTTP status.
fn json_rpc_answer(status: axum::http::StatusCode, body: &Value) -> axum::response::Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The `/mcp` guard: reads the body (bounded in size and time), records the
/// exchange, answers frames rmcp cannot take, and passes the rest on.
/// What the guard needs.
#[derive(Clone)]
struct GuardState {
    recorder: Recorder,
    limits: HttpLimits,
}

async fn guard(
    State(GuardState { recorder, limits }): State<GuardState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::StatusCode;
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes =
        match tokio::time::timeout(limits.body, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
            Err(_) => {
                let answer = error_response(
                    None,
                    INVALID_REQUEST,
                    &format!(
                        "the request body did not arrive within {} s",
                        limits.body.as_secs_f64()
                    ),
                    None,
                );
                recorder.record_message(Direction::Out, answer.clone(), None, Some(0.0));
                return json_rpc_answer(StatusCode::REQUEST_TIMEOUT, &answer);
            }
            Ok(Err(_)) => {
                let answer = error_response(
                    None,
                    INVALID_REQUEST,
                    &format!("the request body is larger than {MAX_BODY_BYTES} bytes (the limit)"),
                    None,
                );
                recorder.record_message(Direction::Out, answer.clone(), None, Some(0.0));
                return json_rpc_answer(StatusCode::PAYLOAD_TOO_LARGE, &answer);
            }
            Ok(Ok(bytes)) => bytes,
        };
    let started = Instant::now();
    // One JSON value, and nothing after it.
    let mut values = serde_json::Deserializer::from_slice(&bytes).into_iter::<Value>();
    let message = match values.next() {
        Some(Ok(value)) => value,
        Some(Err(e)) => {
            record_unparsed(&recorder, &bytes);
            let id = sniff_id(&bytes, 64 * 1024);
            let answer = error_response(id.as_ref(), PARSE_ERROR, &describe_parse_error(&e), None);
            recorder.record_message(Direction::Out, answer.clone(), None, Some(0.0));
            return json_rpc_answer(StatusCode::BAD_REQUEST, &answer);
        }
        None => {
            let answer = error_response(
                None,
                PARSE_ERROR,
                "Parse error: the request body is empty; send one JSON-RPC message",
                None,
            );
            recorder.record_message(Direction::Out, answer.clone(), None, Some(0.0));
            return json_rpc_answer(StatusCode::BAD_REQUEST, &answer);
        }
    };
    recorder.record_message(Direction::In, message.clone(), None, None);
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    let refusal = if bytes[values.byte_offset()..]
        .iter()
        .any(|b| !b.is_ascii_whitespace())
    {
        Some(
            "Invalid request: the body holds more than one JSON value; send one JSON-RPC message per request",
        )
    } else if message.is_array() {
        Some(
            "Invalid request: batches (JSON arrays) are not part of MCP; send one message per request",
        )
    } else if !message.is_object() {
        Some("Invalid request: a JSON-RPC message is a JSON object")
    } else {
        None
    };
    if let Some(reason) = refusal {
        let answer = error_response(id.as_ref(), INVALID_REQUEST, reason, None);
        recorder.record_message(Direction::Out, answer.clone(), None, Some(0.0));
        return json_rpc_answer(StatusCode::BAD_REQUEST, &answer);
    }
    let info = baton_transcript::classify(&message);
    if info.method.as_deref() == Some("tools/call")
        && let Some(id) = &id
        && let Some(error) = non_object_arguments(message.pointer("/params/arguments"))
    {
        let answer = tool_error_response(id, &error);
        recorder.record_message(
            Direction::Out,
            answer.clone(),
            Some((&info.method, &info.tool)),
            Some(0.0),
        );
        return json_rpc_answer(StatusCode::OK, &answer);
    }
    let response = next
        .run(axum::extract::Request::from_parts(
            parts,
            axum::body::Body::from(bytes),
        ))
        .await;
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let Ok(mut answer) = serde_json::from_slice::<Value>(&bytes) else {
        return axum::response::Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    // rmcp names an unsupported method by its bare name: say what baton answers.
    let bare_method_not_found = info.method.as_deref().is_some_and(|method| {
        answer.pointer("/error/code") == Some(&Value::from(crate::protocol::METHOD_NOT_FOUND))
            && answer.pointer("/error/message").and_then(Value::as_str) == Some(method)
    });
    let body = if let (true, Some(method)) = (bare_method_not_found, info.method.as_deref()) {
        let explained = crate::protocol::method_not_found(method);
        answer["error"] = serde_json::to_value(&explained).unwrap_or(Value::Null);
        axum::body::Body::from(answer.to_string())
    } else {
        axum::body::Body::from(bytes)
    };
    recorder.record_message(
        Direction::Out,
        answer,
        Some((&info.method, &info.tool)),
        Some(duration_ms),
    );
    let mut parts = parts;
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    axum::response::Response::from_parts(parts, body)
}

/// Records a body that did not parse: its size, hash and start.
fn record_unparsed(recorder: &Recorder, bytes: &[u8]) {
    recorder.record_raw(Direction::In, bytes);
}

/// Query of `/events`.
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    /// Only events of this workspace (as shown in replies, e.g. `.specs/20260401-x`).
    workspace: Option<String>,
}

/// `GET /events[?workspace=…]`: replays recent events, then streams live ones
/// as Server-Sent Events (`event: <kind>`, `data: <record json>`).
pub(crate) async fn events(
    State(EventsState {
        ctx,
        shutdown,
        streams,
    }): State<EventsState>,
    Query(query): Query<EventsQuery>,
) -> axum::response::Response {
    let Ok(permit) = streams.try_acquire_owned() else {
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({
                "code": "busy",
                "message": format!("{MAX_EVENT_STREAMS} event streams are open already; close one (another tab?) and reconnect")
            })),
        )
            .into_response();
    };
    // History and subscription together: nothing falls in between.
    let (history, live) = ctx.bus.subscribe_with_recent(REPLAY_LIMIT);
    let filter = query.workspace;
    let keep = move |r: &EventRecord| filter.as_ref().is_none_or(|w| *w == r.workspace);
    let keep_live = keep.clone();
    let replay = stream::iter(history.into_iter().filter(keep));
    let live = stream::unfold(live, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(record) => return Some((record, rx)),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
    .filter(move |r| std::future::ready(keep_live(r)));
    // The stream ends when the server shuts down (Ctrl-C), so a connected
    // subscriber never holds the process open.
    let frames = replay
        .chain(live)
        .take_until(shutdown.cancelled_owned())
        .map(move |record| {
            // The stream holds its permit until it ends.
            let _held = &permit;
            Ok::<_, Infallible>(
                Event::default()
                    .event(record.event.as_str())
                    .json_data(&record)
                    .unwrap_or_else(|_| Event::default().comment("unserialisable event")),
            )
        });
    Sse::new(frames)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}
