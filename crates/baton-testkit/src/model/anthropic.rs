//! A scripted Anthropic Messages API server for Claude Code.
//!
//! `POST /v1/messages` (with or without `?beta=true`) plays the next step of
//! the script: streamed as the real API streams (`message_start`,
//! `content_block_start` / `content_block_delta` (`text_delta`,
//! `input_json_delta`) / `content_block_stop` per block, `message_delta`
//! with `stop_reason` and `usage`, `message_stop`), or as one JSON message
//! when the request does not ask for a stream. `POST
//! /v1/messages/count_tokens` answers an estimate; `HEAD /api/hello` (the
//! CLI's reachability check at start, recorded with 2.1.328) answers 200.
//! Anything else is a 404 in the API's error shape.
//!
//! Point the CLI at it with `ANTHROPIC_BASE_URL` = [`AnthropicServer::base_url`]
//! and any `ANTHROPIC_API_KEY`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Recorded, Reply, Responder, ScriptErrors, Server, lock};

/// Tokens one turn reports in `usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// `input_tokens`.
    pub input_tokens: u64,
    /// `output_tokens`.
    pub output_tokens: u64,
}

/// One content block of an assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A text block.
    Text(String),
    /// A `tool_use` block; `id` is assigned (`toolu_s0001`, …) when `None`.
    ToolUse {
        /// The block's id, or `None` for the next generated one.
        id: Option<String>,
        /// The tool's name (`Bash`, `mcp__baton__pipeline_init`, …).
        name: String,
        /// The tool's input object.
        input: Value,
    },
}

/// One assistant turn: its blocks and the usage it reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The content blocks, in order.
    pub blocks: Vec<Block>,
    /// What `usage` reports for the turn.
    pub usage: Usage,
}

impl Turn {
    /// A turn that only says `text` and ends (`stop_reason: end_turn`).
    pub fn text(text: impl Into<String>) -> Turn {
        Turn {
            blocks: vec![Block::Text(text.into())],
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
            },
        }
    }

    /// A turn that calls one tool (`stop_reason: tool_use`).
    pub fn tool(name: impl Into<String>, input: Value) -> Turn {
        Turn {
            blocks: Vec::new(),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
            },
        }
        .with_tool(name, input)
    }

    /// Adds a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Turn {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// Adds a `tool_use` block (several make parallel tool calls).
    pub fn with_tool(mut self, name: impl Into<String>, input: Value) -> Turn {
        self.blocks.push(Block::ToolUse {
            id: None,
            name: name.into(),
            input,
        });
        self
    }

    /// Sets the usage the turn reports.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Turn {
        self.usage = Usage {
            input_tokens,
            output_tokens,
        };
        self
    }

    fn stop_reason(&self) -> &'static str {
        if self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
        {
            "tool_use"
        } else {
            "end_turn"
        }
    }
}

/// A step computed from the request it answers.
pub type StepFn = Box<dyn FnMut(&MessagesRequest) -> Turn + Send>;

/// One step of a script: a fixed turn, or one computed from the request.
pub enum Step {
    /// Always this turn.
    Turn(Turn),
    /// The turn this function returns for the request.
    Reply(StepFn),
}

impl From<Turn> for Step {
    fn from(turn: Turn) -> Step {
        Step::Turn(turn)
    }
}

/// A step computed from the request it answers (e.g. a tool call whose
/// input uses the workspace named in the last tool result).
pub fn step(f: impl FnMut(&MessagesRequest) -> Turn + Send + 'static) -> Step {
    Step::Reply(Box::new(f))
}

/// One `tool_result` block the client sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The `tool_use` block it answers.
    pub tool_use_id: String,
    /// Its text (text blocks joined by newlines; a string content as is).
    pub text: String,
    /// `is_error`.
    pub is_error: bool,
}

/// A `POST /v1/messages` request, with readers for what tests assert on.
#[derive(Debug, Clone)]
pub struct MessagesRequest {
    /// The request body.
    pub body: Value,
}

impl MessagesRequest {
    /// The `messages` array.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The names of the tools the request offers the model.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The system prompt's text.
    pub fn system_text(&self) -> String {
        content_text(&self.body["system"])
    }

    /// Every `tool_result` block of the last user message.
    pub fn last_tool_results(&self) -> Vec<ToolResult> {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| tool_results(&m["content"]))
            .unwrap_or_default()
    }

    /// Every `tool_result` block of the conversation, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| tool_results(&m["content"]))
            .collect()
    }

    /// The `tool_use` blocks the conversation's assistant turns made:
    /// `(id, name, input)`.
    pub fn tool_uses(&self) -> Vec<(String, String, Value)> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                (
                    b["id"].as_str().unwrap_or_default().to_string(),
                    b["name"].as_str().unwrap_or_default().to_string(),
                    b["input"].clone(),
                )
            })
            .collect()
    }

    /// The result of the last call of tool `name` in the conversation.
    pub fn result_of(&self, name: &str) -> Option<ToolResult> {
        let ids: Vec<String> = self
            .tool_uses()
            .into_iter()
            .filter(|(_, n, _)| n == name)
            .map(|(id, _, _)| id)
            .collect();
        self.tool_results()
            .into_iter()
            .rev()
            .find(|r| ids.contains(&r.tool_use_id))
    }

    /// Every text the client sent in the conversation (user text, system
    /// reminders, tool results), joined by newlines.
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        for m in self.messages() {
            out.push_str(&content_text(&m["content"]));
            out.push('\n');
        }
        out
    }

    /// The text of the last message (the newest user turn: its prompt or
    /// its tool results, with the reminders the client attached).
    pub fn last_message_text(&self) -> String {
        self.messages()
            .last()
            .map(|m| content_text(&m["content"]))
            .unwrap_or_default()
    }
}

fn tool_results(content: &Value) -> Vec<ToolResult> {
    content
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| ToolResult {
                    tool_use_id: b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                    text: content_text(&b["content"]),
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The text of a content value: a string, or the text of its blocks
/// (nested tool results included), joined by newlines.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or_default().to_string(),
                Some("tool_result") => content_text(&b["content"]),
                Some("tool_use") => b["input"].to_string(),
                Some("tool_reference") => b["tool_name"].as_str().unwrap_or_default().to_string(),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

struct Script {
    steps: VecDeque<Step>,
    played: usize,
    next_id: u64,
    usage: Usage,
}

struct Messages {
    script: Arc<Mutex<Script>>,
}

impl Responder for Messages {
    fn respond(&mut self, request: &Recorded) -> Result<Reply, String> {
        match (request.method.as_str(), request.route()) {
            ("HEAD" | "GET", "/api/hello") => Ok(Reply::json(200, &json!({}))),
            ("POST", "/v1/messages/count_tokens") => {
                let estimate = request.body.to_string().len() / 4;
                Ok(Reply::json(200, &json!({"input_tokens": estimate})))
            }
            ("POST", "/v1/messages") => {
                let req = MessagesRequest {
                    body: request.body.clone(),
                };
                let mut script = lock(&self.script);
                let number = script.played + 1;
                let Some(step) = script.steps.pop_front() else {
                    return Err(format!(
                        "the script has no step left for model request #{number}; its last message: {}",
                        truncate(&req.last_message_text(), 2000)
                    ));
                };
                script.played = number;
                let mut turn = match step {
                    Step::Turn(turn) => turn,
                    Step::Reply(mut f) => f(&req),
                };
                for block in &mut turn.blocks {
                    if let Block::ToolUse { id: id @ None, .. } = block {
                        script.next_id += 1;
                        *id = Some(format!("toolu_s{:04}", script.next_id));
                    }
                }
                script.usage.input_tokens += turn.usage.input_tokens;
                script.usage.output_tokens += turn.usage.output_tokens;
                let model = req.body["model"].as_str().unwrap_or("claude-scripted");
                let id = format!("msg_s{number:04}");
                if req.body["stream"].as_bool().unwrap_or(false) {
                    Ok(Reply {
                        status: 200,
                        content_type: "text/event-stream",
                        body: stream(&turn, &id, model),
                    })
                } else {
                    Ok(Reply::json(200, &message(&turn, &id, model)))
                }
            }
            _ => Ok(Reply::json(
                404,
                &json!({"type": "error", "error": {"type": "not_found_error",
                    "message": format!("the scripted model server has no {} {}", request.method, request.path)}}),
            )),
        }
    }

    fn error_reply(&self, message: &str) -> Reply {
        Reply::json(
            400,
            &json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": format!("scripted model server: {message}")}}),
        )
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn block_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({"type": "text", "text": text}),
        Block::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
    }
}

fn message(turn: &Turn, id: &str, model: &str) -> Value {
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": turn.blocks.iter().map(block_json).collect::<Vec<_>>(),
        "stop_reason": turn.stop_reason(),
        "stop_sequence": null,
        "usage": {
            "input_tokens": turn.usage.input_tokens,
            "output_tokens": turn.usage.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0
        }
    })
}

fn event(out: &mut String, data: Value) {
    let name = data["type"].as_str().unwrap_or("message").to_string();
    out.push_str("event: ");
    out.push_str(&name);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

/// The turn as the API streams it.
fn stream(turn: &Turn, id: &str, model: &str) -> String {
    let mut out = String::new();
    event(
        &mut out,
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": turn.usage.input_tokens, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        }}),
    );
    event(&mut out, json!({"type": "ping"}));
    for (index, block) in turn.blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                event(
                    &mut out,
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}),
                );
                for piece in split_in_two(text) {
                    event(
                        &mut out,
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": piece}}),
                    );
                }
            }
            Block::ToolUse { id, name, input } => {
                event(
                    &mut out,
                    json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                );
                for piece in split_in_two(&input.to_string()) {
                    event(
                        &mut out,
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                }
            }
        }
        event(
            &mut out,
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        &mut out,
        json!({"type": "message_delta",
               "delta": {"stop_reason": turn.stop_reason(), "stop_sequence": null},
               "usage": {"output_tokens": turn.usage.output_tokens}}),
    );
    event(&mut out, json!({"type": "message_stop"}));
    out
}

/// A text in two deltas (as a stream delivers it in pieces), split on a
/// character boundary.
fn split_in_two(text: &str) -> Vec<&str> {
    if text.len() < 2 {
        return vec![text];
    }
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    vec![&text[..mid], &text[mid..]]
}

/// A running scripted Messages API server.
pub struct AnthropicServer {
    server: Server,
    script: Arc<Mutex<Script>>,
}

impl AnthropicServer {
    /// Starts a server that plays `steps` in order.
    pub fn start(steps: impl IntoIterator<Item = Step>) -> AnthropicServer {
        let script = Arc::new(Mutex::new(Script {
            steps: steps.into_iter().collect(),
            played: 0,
            next_id: 0,
            usage: Usage::default(),
        }));
        let server = Server::start(Box::new(Messages {
            script: script.clone(),
        }));
        AnthropicServer { server, script }
    }

    /// `ANTHROPIC_BASE_URL` for the client: `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// Appends steps to the script (for a second prompt in the same test).
    pub fn push(&self, steps: impl IntoIterator<Item = Step>) {
        lock(&self.script).steps.extend(steps);
    }

    /// How many steps are still to be played.
    pub fn remaining(&self) -> usize {
        lock(&self.script).steps.len()
    }

    /// The usage the played turns reported, summed.
    pub fn reported_usage(&self) -> Usage {
        lock(&self.script).usage
    }

    /// Every `POST /v1/messages` request, in order of arrival.
    pub fn requests(&self) -> Vec<MessagesRequest> {
        self.server
            .recorded()
            .into_iter()
            .filter(|r| r.method == "POST" && r.route() == "/v1/messages")
            .map(|r| MessagesRequest { body: r.body })
            .collect()
    }

    /// Every HTTP request, whatever its route.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.server.recorded()
    }

    /// When each `POST /v1/messages` request arrived, in order (the time
    /// between two is what the client spent between two model turns: its
    /// tool calls and their hooks).
    pub fn arrivals(&self) -> Vec<std::time::Instant> {
        self.server
            .recorded()
            .into_iter()
            .filter(|r| r.method == "POST" && r.route() == "/v1/messages")
            .map(|r| r.at)
            .collect()
    }

    /// Script errors so far (steps that panicked, requests past the end).
    pub fn errors(&self) -> ScriptErrors {
        self.server.errors()
    }
}
