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
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{ClientNotification, ClientRequest, ProtocolVersion, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, Service, ServiceRole};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::value::RawValue;
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
    written: Option<Arc<WrittenReplies>>,
}

impl<S> Transcribed<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, recorder: Recorder) -> Transcribed<S> {
        Transcribed {
            inner,
            recorder,
            written: None,
        }
    }

    /// Hands each recorded response's text to the transport through
    /// `written`, so a reply is serialised once for the transcript and the
    /// client.
    pub fn with_written(mut self, written: Arc<WrittenReplies>) -> Transcribed<S> {
        self.written = Some(written);
        self
    }
}

/// Responses already serialised (for the transcript), by request id, until
/// the transport sends them: the text written to the transcript is the
/// very text the client receives, made once. A response the transport
/// never sends (its request was cancelled) is dropped with the cancel or
/// when too many wait; the transport serialises any response it does not
/// find here.
#[derive(Debug, Default)]
pub struct WrittenReplies {
    by_id: Mutex<HashMap<String, Box<RawValue>>>,
}

/// More responses waiting than this means some will never be sent.
const MAX_WAITING_REPLIES: usize = 64;

impl WrittenReplies {
    /// Keeps `json`, the response to request `id`.
    pub fn put(&self, id: &Value, json: Box<RawValue>) {
        if let Ok(mut by_id) = self.by_id.lock() {
            if by_id.len() >= MAX_WAITING_REPLIES {
                by_id.clear();
            }
            by_id.insert(id.to_string(), json);
        }
    }

    /// The response to request `id`, if it was serialised already.
    pub fn take(&self, id: &Value) -> Option<Box<RawValue>> {
        self.by_id.lock().ok()?.remove(&id.to_string())
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
        let reply = Reply {
            jsonrpc: "2.0",
            id: &id,
            response,
        };
        // Serialised once: this text is recorded and (over stdio) sent.
        if let Ok(json) = serde_json::value::to_raw_value(&reply) {
            self.recorder.record_json(
                Direction::Out,
                kind,
                Some(id.clone()).filter(|v| !v.is_null()),
                method,
                tool,
                Some(duration_ms),
                &json,
            );
            if let Some(written) = &self.written {
                written.put(&id, json);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        CallToolResult, ContentBlock, ErrorCode, NumberOrString, ServerJsonRpcMessage,
    };

    /// The text the transcript makes of a response is, byte for byte, the
    /// message rmcp would have sent: the transport sends it in its place.
    #[test]
    fn a_recorded_response_is_the_very_message_the_client_gets() {
        let structured = CallToolResult::structured(json!({
            "type": "spawn_agent",
            "prompt": "## Task\n\n\"quoted\" \\ back — ünïcödé \u{1}\t✓",
            "nested": {"b": [1, 2.5, null, true], "a": {}},
            "action_id": "a-1",
        }));
        let refused = CallToolResult::error(vec![ContentBlock::text(
            "{\"code\":\"busy\",\"message\":\"wait\"}",
        )]);
        for (id, rmcp_id) in [
            (json!(7), NumberOrString::Number(7)),
            (json!("req-7"), NumberOrString::String("req-7".into())),
        ] {
            for result in [&structured, &refused] {
                let result = ServerResult::CallToolResult(result.clone());
                let recorded = serde_json::value::to_raw_value(&Reply {
                    jsonrpc: "2.0",
                    id: &id,
                    response: Response::Result(&result),
                })
                .unwrap();
                let sent = serde_json::to_string(&ServerJsonRpcMessage::response(
                    result.clone(),
                    rmcp_id.clone(),
                ))
                .unwrap();
                assert_eq!(recorded.get(), sent);
            }
            let error = McpError::new(ErrorCode::METHOD_NOT_FOUND, "no such method", None);
            let recorded = serde_json::value::to_raw_value(&Reply {
                jsonrpc: "2.0",
                id: &id,
                response: Response::Error(&error),
            })
            .unwrap();
            let sent = serde_json::to_string(&ServerJsonRpcMessage::error(
                error.clone(),
                Some(rmcp_id.clone()),
            ))
            .unwrap();
            assert_eq!(recorded.get(), sent);
        }
    }

    #[test]
    fn a_written_reply_is_taken_once_and_never_piles_up() {
        let written = WrittenReplies::default();
        let json = serde_json::value::to_raw_value(&json!({"ok": true})).unwrap();
        written.put(&json!(1), json.clone());
        assert!(
            written.take(&json!("1")).is_none(),
            "a string id is another id"
        );
        assert_eq!(written.take(&json!(1)).unwrap().get(), json.get());
        assert!(written.take(&json!(1)).is_none());
        for i in 0..(MAX_WAITING_REPLIES as i64 * 3) {
            written.put(&json!(i), json.clone());
        }
        assert!(written.by_id.lock().unwrap().len() <= MAX_WAITING_REPLIES);
    }
}
