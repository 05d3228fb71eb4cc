//! An answer through the client itself: when `pipeline_next_action` stops
//! at a question only a person may answer, the client declared the MCP
//! elicitation capability **and the person trusts that channel in their own
//! configuration** (`[answers] trust = ["elicitation"]`,
//! `baton_config::person`), the server asks the client to ask its user (a
//! form with the question's options and a text field for a revision).
//!
//! The answer is the client's, not a person's channel: a client the agent
//! starts can declare the capability and fill the form itself (and Claude
//! Code's own Elicitation hook can answer without the person). It is
//! recorded as `client:elicitation` and goes through the same use case as
//! `baton answer`, where `baton_usecases::trust` counts it as the person's
//! only because the person said so. Without that trust no form is sent:
//! the question waits for the terminal or the dashboard.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde_json::{Value, json};

use baton_state::{Actor, Channel};
use baton_usecases::pipeline::answer::{AnswerArgs, answer_question};
use baton_usecases::pipeline::next::{NextArgs, next_action};

use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

/// How many questions in a row one call asks before it returns.
const MAX_QUESTIONS: usize = 8;

/// Whether the client can show an elicitation form.
pub fn supported(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&rmcp::service::ElicitationMode::Form)
}

/// The question in a `pipeline_next_action` reply that a person must answer.
fn person_question(reply: &Value) -> Option<(String, Vec<String>, String)> {
    let kind = reply["type"].as_str()?;
    if !matches!(kind, "checkpoint" | "human_gate") || reply["answered_by"] != "person" {
        return None;
    }
    let options = reply["options"]
        .as_array()?
        .iter()
        .filter_map(|o| o.as_str().map(str::to_string))
        .collect();
    Some((
        reply["name"].as_str().unwrap_or("").to_string(),
        options,
        reply["present_to_user"].as_str().unwrap_or("").to_string(),
    ))
}

fn schema(options: &[String]) -> Option<ElicitationSchema> {
    let mut properties = serde_json::Map::new();
    properties.insert(
        "answer".into(),
        json!({"type": "string", "title": "Your answer", "enum": options}),
    );
    if options.iter().any(|o| o == "revise") {
        properties.insert(
            "feedback".into(),
            json!({"type": "string", "title": "What to change (for revise)"}),
        );
    }
    let object = json!({"type": "object", "properties": properties, "required": ["answer"]});
    match object {
        Value::Object(map) => ElicitationSchema::from_json_schema(map).ok(),
        _ => None,
    }
}

/// Asks the person for every person-only question `reply` stops at, applies
/// each answer, and returns the reply after the last one (or `reply` itself
/// when the client cannot ask, or the person declines).
pub async fn answer_through_client(
    ctx: &Arc<AppContext>,
    peer: &Peer<RoleServer>,
    workspace: &str,
    mut reply: Value,
) -> Result<Value, ToolError> {
    // Asked only where the person trusts the channel: otherwise the answer
    // could not count, and the question waits for a person's channel.
    if !supported(peer) || !ctx.person().trusts(Channel::Elicitation.as_str()) {
        return Ok(reply);
    }
    for _ in 0..MAX_QUESTIONS {
        let Some((name, options, text)) = person_question(&reply) else {
            return Ok(reply);
        };
        let Some(requested_schema) = schema(&options) else {
            return Ok(reply);
        };
        let request = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!("{text}\n\n(baton: {workspace}, question {name})"),
            requested_schema,
        };
        let result = match peer.create_elicitation(request).await {
            Ok(r) => r,
            // The client could not ask (or the protocol forbids it): the
            // person answers through the terminal or the dashboard.
            Err(_) => return Ok(reply),
        };
        let content = match result.action {
            ElicitationAction::Accept => result.content.unwrap_or(Value::Null),
            _ => {
                if let Some(w) = reply.get_mut("warning") {
                    let note = "the person did not answer in the client; they can answer later with `baton answer` or on the dashboard";
                    let text = w.as_str().unwrap_or("");
                    *w = Value::from(if text.is_empty() {
                        note.to_string()
                    } else {
                        format!("{text}; {note}")
                    });
                }
                return Ok(reply);
            }
        };
        let word = content["answer"].as_str().unwrap_or("").to_string();
        let answer = match content["feedback"].as_str().map(str::trim) {
            Some(f) if !f.is_empty() => format!("{word}: {f}"),
            _ => word,
        };
        let svc = Arc::clone(ctx);
        let ws = workspace.to_string();
        reply = tokio::task::spawn_blocking(move || {
            answer_question(
                &svc,
                AnswerArgs {
                    workspace: ws.clone(),
                    answer,
                },
                Actor::client(Channel::Elicitation),
            )?;
            let next = next_action(&svc, NextArgs::for_workspace(&ws))?;
            serde_json::to_value(next)
                .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
        })
        .await
        .map_err(|e| ToolError::new(ErrorCode::Internal, format!("answer task failed: {e}")))??;
    }
    Ok(reply)
}
