//! Recording JSON-RPC traffic for the transcript.
//!
//! * stdio: [`Transcribed`] wraps the MCP `Service` between the transport and
//!   the handler: each request (including `initialize`) and notification on
//!   the way in, each response or error on the way out with its duration.
//! * HTTP: [`record_http`] is an axum middleware that records the JSON-RPC
//!   bodies of each `/mcp` exchange (the HTTP transport runs stateless with
//!   JSON responses, so every message is a plain JSON body).
//!
//! Recording is a channel send; the file is written by a background task.

use std::borrow::Cow;
use std::time::Instant;

use rmcp::model::{ClientNotification, ClientRequest, ProtocolVersion, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, Service, ServiceRole};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use baton_transcript::{Direction, Recorder};

/// Records traffic to `recorder`, then delegates to `inner`.
#[derive(Debug, Clone)]
pub struct Transcribed<S> {
    inner: S,
    recorder: Recorder,
}

impl<S> Transcribed<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, recorder: Recorder) -> Transcribed<S> {
        Transcribed { inner, recorder }
    }
}

fn tool_name(request: &ClientRequest) -> Option<String> {
    match request {
        ClientRequest::CallToolRequest(r) => Some(r.params.name.to_string()),
        _ => None,
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for Transcribed<S> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        if !self.recorder.is_enabled() {
            return self.inner.handle_request(request, context).await;
        }
        let id = context.id.clone().into_json_value();
        let method = Some(request.method().to_string());
        let tool = tool_name(&request);
        let mut payload = serde_json::to_value(&request).unwrap_or(Value::Null);
        if let Some(obj) = payload.as_object_mut() {
            obj.insert("jsonrpc".into(), json!("2.0"));
            obj.insert("id".into(), id.clone());
        }
        self.recorder
            .record_message(Direction::In, payload, None, None);
        let started = Instant::now();
        let result = self.inner.handle_request(request, context).await;
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        let payload = match &result {
            Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
        };
        self.recorder.record_message(
            Direction::Out,
            payload,
            Some((&method, &tool)),
            Some(duration_ms),
        );
        result
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        if self.recorder.is_enabled() {
            let mut payload = serde_json::to_value(&notification).unwrap_or(Value::Null);
            if let Some(obj) = payload.as_object_mut() {
                obj.insert("jsonrpc".into(), json!("2.0"));
            }
            self.recorder
                .record_message(Direction::In, payload, None, None);
        }
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

/// Largest HTTP body recorded; larger ones pass through unrecorded.
const MAX_RECORDED_BODY: usize = 4 * 1024 * 1024;

/// axum middleware: records JSON-RPC request and response bodies.
pub async fn record_http(
    axum::extract::State(recorder): axum::extract::State<Recorder>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if !recorder.is_enabled() {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_RECORDED_BODY).await else {
        return (
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "request body too large",
        )
            .into_response();
    };
    let mut context = (None, None);
    for message in messages(&bytes) {
        let info = baton_transcript::classify(&message);
        if context.0.is_none() {
            context = (info.method.clone(), info.tool.clone());
        }
        recorder.record_message(Direction::In, message, None, None);
    }
    let started = Instant::now();
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
    let Ok(bytes) = axum::body::to_bytes(body, MAX_RECORDED_BODY).await else {
        return axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    for message in messages(&bytes) {
        recorder.record_message(
            Direction::Out,
            message,
            Some((&context.0, &context.1)),
            Some(duration_ms),
        );
    }
    axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// The JSON-RPC messages in a body: one object, or a batch array.
fn messages(bytes: &[u8]) -> Vec<Value> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(batch)) => batch,
        Ok(v @ Value::Object(_)) => vec![v],
        _ => Vec::new(),
    }
}

use axum::response::IntoResponse;
