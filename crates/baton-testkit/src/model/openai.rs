//! A scripted OpenAI Responses API server for the Codex CLI.
//!
//! `POST /v1/responses` plays the next step of the script, streamed as the
//! real API streams: `response.created`, `response.in_progress`, per output
//! item `response.output_item.added`, its deltas
//! (`response.output_text.delta` for a message,
//! `response.function_call_arguments.delta` for a function call) and
//! `response.output_item.done`, then `response.completed` with `usage`; or
//! as one response object when the request does not ask for a stream.
//! Anything else is a 404 in the API's error shape.
//!
//! Point Codex at it with a custom model provider in `$CODEX_HOME/config.toml`
//! ([`OpenAiServer::codex_provider`] writes the table).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

pub use super::anthropic::Usage;
use super::{Recorded, Reply, Responder, ScriptErrors, Server, lock};

/// One output item of a scripted response.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An assistant message with this text.
    Message(String),
    /// A `function_call` item; `call_id` is assigned (`call_s0001`, …)
    /// when `None`.
    FunctionCall {
        /// The call's id, or `None` for the next generated one.
        call_id: Option<String>,
        /// The namespace of a namespaced tool (Codex 0.169.0 offers an MCP
        /// server's tools as namespace `mcp__<server>`), if any.
        namespace: Option<String>,
        /// The function's name (`exec_command`, an MCP tool, …).
        name: String,
        /// Its arguments (sent as a JSON string, as the API does).
        arguments: Value,
    },
}

/// One scripted response: its output items and the usage it reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The output items, in order.
    pub items: Vec<Item>,
    /// What `usage` reports.
    pub usage: Usage,
}

impl Turn {
    /// A response that only says `text`.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn {
            items: vec![Item::Message(text.into())],
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
            },
        }
    }

    /// A response that calls one function.
    pub fn call(name: impl Into<String>, arguments: Value) -> Turn {
        Turn {
            items: Vec::new(),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
            },
        }
        .with_call(name, arguments)
    }

    /// A response that runs `command` through Codex's shell tool
    /// (`exec_command` with `cmd`, as 0.169.0 offers it).
    pub fn shell(command: &str) -> Turn {
        Turn::call("exec_command", json!({"cmd": command}))
    }

    /// Adds a message item.
    pub fn with_text(mut self, text: impl Into<String>) -> Turn {
        self.items.push(Item::Message(text.into()));
        self
    }

    /// Adds a function call item.
    pub fn with_call(mut self, name: impl Into<String>, arguments: Value) -> Turn {
        self.items.push(Item::FunctionCall {
            call_id: None,
            namespace: None,
            name: name.into(),
            arguments,
        });
        self
    }

    /// A response that calls MCP server `server`'s tool `tool` the way
    /// Codex 0.169.0 offers it (namespace `mcp__<server>`).
    pub fn mcp(server: &str, tool: &str, arguments: Value) -> Turn {
        let mut turn = Turn::call(tool, arguments);
        if let Some(Item::FunctionCall { namespace, .. }) = turn.items.last_mut() {
            *namespace = Some(format!("mcp__{server}"));
        }
        turn
    }

    /// Sets the usage the response reports.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Turn {
        self.usage = Usage {
            input_tokens,
            output_tokens,
        };
        self
    }
}

/// A step computed from the request it answers.
pub type StepFn = Box<dyn FnMut(&ResponsesRequest) -> Turn + Send>;

/// One step of a script: a fixed response, or one computed from the request.
pub enum Step {
    /// Always this response.
    Turn(Turn),
    /// The response this function returns for the request.
    Reply(StepFn),
}

impl From<Turn> for Step {
    fn from(turn: Turn) -> Step {
        Step::Turn(turn)
    }
}

/// A step computed from the request it answers.
pub fn step(f: impl FnMut(&ResponsesRequest) -> Turn + Send + 'static) -> Step {
    Step::Reply(Box::new(f))
}

/// One `function_call_output` item the client sent.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionOutput {
    /// The call it answers.
    pub call_id: String,
    /// Its output text.
    pub output: String,
}

/// A `POST /v1/responses` request, with readers for what tests assert on.
#[derive(Debug, Clone)]
pub struct ResponsesRequest {
    /// The request body.
    pub body: Value,
}

impl ResponsesRequest {
    /// The `input` items.
    pub fn input(&self) -> &[Value] {
        self.body["input"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The names of the functions the request offers (namespaced tools
    /// included, by their own name).
    pub fn tool_names(&self) -> Vec<String> {
        fn collect(tools: &Value, out: &mut Vec<String>) {
            for t in tools.as_array().into_iter().flatten() {
                if let Some(name) = t["name"].as_str() {
                    out.push(name.to_string());
                }
                collect(&t["tools"], out);
            }
        }
        let mut out = Vec::new();
        collect(&self.body["tools"], &mut out);
        out
    }

    /// Every `function_call_output` of the input, in order.
    pub fn function_outputs(&self) -> Vec<FunctionOutput> {
        self.input()
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| FunctionOutput {
                call_id: i["call_id"].as_str().unwrap_or_default().to_string(),
                output: output_text(&i["output"]),
            })
            .collect()
    }

    /// The output of the last call of function `name` (a namespaced one
    /// also by `<namespace>__<name>`).
    pub fn output_of(&self, name: &str) -> Option<FunctionOutput> {
        let ids: Vec<&str> = self
            .input()
            .iter()
            .filter(|i| {
                i["type"] == "function_call"
                    && (i["name"] == name
                        || i["namespace"].as_str().is_some_and(|ns| {
                            format!("{ns}__{}", i["name"].as_str().unwrap_or_default()) == name
                        }))
            })
            .filter_map(|i| i["call_id"].as_str())
            .collect();
        self.function_outputs()
            .into_iter()
            .rev()
            .find(|o| ids.contains(&o.call_id.as_str()))
    }

    /// Every text of the input (messages, instructions, outputs), joined.
    pub fn all_text(&self) -> String {
        let mut out = output_text(&self.body["instructions"]);
        for item in self.input() {
            out.push('\n');
            match item["type"].as_str() {
                Some("function_call_output") => out.push_str(&output_text(&item["output"])),
                Some("function_call") => out.push_str(item["arguments"].as_str().unwrap_or("")),
                _ => out.push_str(&output_text(&item["content"])),
            }
        }
        out
    }
}

fn output_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| p["text"].as_str().unwrap_or_default())
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

struct Responses {
    script: Arc<Mutex<Script>>,
}

impl Responder for Responses {
    fn respond(&mut self, request: &Recorded) -> Result<Reply, String> {
        match (request.method.as_str(), request.route()) {
            ("POST", "/v1/responses") => {
                let req = ResponsesRequest {
                    body: request.body.clone(),
                };
                let mut script = lock(&self.script);
                let number = script.played + 1;
                let Some(step) = script.steps.pop_front() else {
                    let last = req.input().last().cloned().unwrap_or(Value::Null);
                    return Err(format!(
                        "the script has no step left for model request #{number}; its last input item: {last}"
                    ));
                };
                script.played = number;
                let mut turn = match step {
                    Step::Turn(turn) => turn,
                    Step::Reply(mut f) => f(&req),
                };
                for item in &mut turn.items {
                    if let Item::FunctionCall {
                        call_id: id @ None, ..
                    } = item
                    {
                        script.next_id += 1;
                        *id = Some(format!("call_s{:04}", script.next_id));
                    }
                }
                script.usage.input_tokens += turn.usage.input_tokens;
                script.usage.output_tokens += turn.usage.output_tokens;
                let model = req.body["model"].as_str().unwrap_or("gpt-scripted");
                let id = format!("resp_s{number:04}");
                if req.body["stream"].as_bool().unwrap_or(false) {
                    Ok(Reply {
                        status: 200,
                        content_type: "text/event-stream",
                        body: stream(&turn, &id, model),
                    })
                } else {
                    Ok(Reply::json(200, &response(&turn, &id, model, "completed")))
                }
            }
            _ => Ok(Reply::json(
                404,
                &json!({"error": {"type": "invalid_request_error", "code": "not_found",
                    "message": format!("the scripted model server has no {} {}", request.method, request.path)}}),
            )),
        }
    }

    fn error_reply(&self, message: &str) -> Reply {
        Reply::json(
            400,
            &json!({"error": {"type": "invalid_request_error", "code": "scripted_model_error",
                "message": format!("scripted model server: {message}")}}),
        )
    }
}

fn item_json(item: &Item, id: &str) -> Value {
    match item {
        Item::Message(text) => json!({
            "type": "message", "id": id, "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }),
        Item::FunctionCall {
            call_id,
            namespace,
            name,
            arguments,
        } => {
            let mut item = json!({
                "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": arguments.to_string(), "status": "completed"
            });
            if let Some(ns) = namespace {
                item["namespace"] = json!(ns);
            }
            item
        }
    }
}

fn response(turn: &Turn, id: &str, model: &str, status: &str) -> Value {
    let output: Vec<Value> = if status == "completed" {
        turn.items
            .iter()
            .enumerate()
            .map(|(k, item)| item_json(item, &format!("{id}_item{k}")))
            .collect()
    } else {
        Vec::new()
    };
    let mut value = json!({
        "id": id, "object": "response", "created_at": 1_700_000_000, "status": status,
        "model": model, "output": output,
    });
    if status == "completed" {
        value["usage"] = json!({
            "input_tokens": turn.usage.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": turn.usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.usage.input_tokens + turn.usage.output_tokens
        });
    }
    value
}

/// The response as the API streams it.
fn stream(turn: &Turn, id: &str, model: &str) -> String {
    let mut events = vec![
        json!({"type": "response.created", "response": response(turn, id, model, "in_progress")}),
        json!({"type": "response.in_progress", "response": response(turn, id, model, "in_progress")}),
    ];
    for (k, item) in turn.items.iter().enumerate() {
        let item_id = format!("{id}_item{k}");
        let done = item_json(item, &item_id);
        let mut added = done.clone();
        added["status"] = json!("in_progress");
        match item {
            Item::Message(text) => {
                added["content"] = json!([]);
                events.push(
                    json!({"type": "response.output_item.added", "output_index": k, "item": added}),
                );
                events.push(
                    json!({"type": "response.output_text.delta", "item_id": item_id,
                    "output_index": k, "content_index": 0, "delta": text}),
                );
            }
            Item::FunctionCall { arguments, .. } => {
                added["arguments"] = json!("");
                events.push(
                    json!({"type": "response.output_item.added", "output_index": k, "item": added}),
                );
                events.push(
                    json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                    "output_index": k, "delta": arguments.to_string()}),
                );
            }
        }
        events.push(json!({"type": "response.output_item.done", "output_index": k, "item": done}));
    }
    events.push(
        json!({"type": "response.completed", "response": response(turn, id, model, "completed")}),
    );
    let mut out = String::new();
    for (sequence, mut data) in events.into_iter().enumerate() {
        data["sequence_number"] = json!(sequence);
        out.push_str("event: ");
        out.push_str(data["type"].as_str().unwrap_or("message"));
        out.push_str("\ndata: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    }
    out
}

/// A running scripted Responses API server.
pub struct OpenAiServer {
    server: Server,
    script: Arc<Mutex<Script>>,
}

impl OpenAiServer {
    /// Starts a server that plays `steps` in order.
    pub fn start(steps: impl IntoIterator<Item = Step>) -> OpenAiServer {
        let script = Arc::new(Mutex::new(Script {
            steps: steps.into_iter().collect(),
            played: 0,
            next_id: 0,
            usage: Usage::default(),
        }));
        let server = Server::start(Box::new(Responses {
            script: script.clone(),
        }));
        OpenAiServer { server, script }
    }

    /// The provider's `base_url`: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// The `config.toml` lines that make Codex use this server: model
    /// `model`, provider `scripted` whose key is read from the environment
    /// variable `env_key` (any value works).
    pub fn codex_provider(&self, model: &str, env_key: &str) -> String {
        format!(
            "model = \"{model}\"\nmodel_provider = \"scripted\"\n\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"{env_key}\"\n",
            self.base_url()
        )
    }

    /// Appends steps to the script.
    pub fn push(&self, steps: impl IntoIterator<Item = Step>) {
        lock(&self.script).steps.extend(steps);
    }

    /// How many steps are still to be played.
    pub fn remaining(&self) -> usize {
        lock(&self.script).steps.len()
    }

    /// The usage the played responses reported, summed.
    pub fn reported_usage(&self) -> Usage {
        lock(&self.script).usage
    }

    /// Every `POST /v1/responses` request, in order of arrival.
    pub fn requests(&self) -> Vec<ResponsesRequest> {
        self.server
            .recorded()
            .into_iter()
            .filter(|r| r.method == "POST" && r.route() == "/v1/responses")
            .map(|r| ResponsesRequest { body: r.body })
            .collect()
    }

    /// Every HTTP request, whatever its route.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.server.recorded()
    }

    /// Script errors so far.
    pub fn errors(&self) -> ScriptErrors {
        self.server.errors()
    }
}
