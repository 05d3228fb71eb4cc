//! Recording JSON-RPC traffic for the transcript.
//!
//! * stdio: [`Transcribed`] wraps the MCP `Service` between the transport and
//!   the handler: each request (including `initialize`) and notification on
//!   the way in, each response or error on the way out with its duration.
//!   It also turns rmcp's bare "method not found" into a message that says
//!   which methods baton answers.
//! * HTTP: `crate::http`'s guard middleware records the JSON-RPC bodies of
//!   each `/mcp` exchange (the HTTP transport runs stateless with JSON
//!   responses, so every message is a plain JSON body).
//!
//! Recording is a channel send; the file is written by a background task.

use std::borrow::Cow;
use std::time::Instant;

use rmcp::model::{ClientNotification, ClientRequest, ProtocolVersion, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, Service, ServiceRole};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use baton_transcript::{Direction, MessageKind, Recorder};

/// A response as recorded: the JSON-RPC message the client receives.
#[derive(serde::Serialize)]
struct Reply<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    #[serde(flatten)]
    response: Response<'a>,
}

/// A response's result or error.
#[derive(serde::Serialize)]
enum Response<'a> {
    #[serde(rename = "result")]
    Result(&'a ServerResult),
    #[serde(rename = "error")]
    Error(&'a McpError),
}

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
        let method_name = request.method().to_string();
        if !self.recorder.is_enabled() {
            return self
                .inner
                .handle_request(request, context)
                .await
                .map_err(|e| crate::protocol::explain_method_not_found(e, &method_name));
        }
        let id = context.id.clone().into_json_value();
        let method = Some(method_name.clone());
        let tool = tool_name(&request);
        let mut payload = serde_json::to_value(&request).unwrap_or(Value::Null);
        if let Some(obj) = payload.as_object_mut() {
            obj.insert("jsonrpc".into(), json!("2.0"));
            obj.insert("id".into(), id.clone());
        }
        self.recorder
            .record_message(Direction::In, payload, None, None);
        let started = Instant::now();
        let result = self
            .inner
            .handle_request(request, context)
            .await
            .map_err(|e| crate::protocol::explain_method_not_found(e, &method_name));
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        // Serialised once, straight to the line's text: a reply (a prompt,
        // twice: as text and as structured content) is never copied into a
        // JSON tree for the record.
        let (kind, response) = match &result {
            Ok(r) => (MessageKind::Response, Response::Result(r)),
            Err(e) => (MessageKind::Error, Response::Error(e)),
        };
        self.recorder.record_serialized(
            Direction::Out,
            kind,
            Some(id.clone()).filter(|v| !v.is_null()),
            method,
            tool,
            Some(duration_ms),
            &Reply {
                jsonrpc: "2.0",
                id: &id,
                response,
            },
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
