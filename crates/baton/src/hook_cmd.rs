//! `baton hook <event>`: the hook command of the agent clients (installed
//! by `baton init`). It reads the client's JSON on stdin, asks the hooks'
//! use cases (`baton_usecases::hooks`) about the session's bound run, and
//! answers in the client's own contract (docs/clients.md lists the fields
//! read and written per client and version):
//!
//! * Claude Code: `hookSpecificOutput.permissionDecision` for PreToolUse,
//!   `decision: "block"` + `reason` after a tool and at a stop,
//!   `additionalContext` for the model, `systemMessage` for the person.
//! * Codex: the same family, but strict: only the fields its schema
//!   declares (an unknown field discards the whole answer).
//! * Cursor: `permission: allow|deny` with `user_message` and
//!   `agent_message`; `followup_message` at a stop. Never `ask`.
//!
//! Bad input (not JSON, no session, an unknown event, more than
//! [`MAX_INPUT`]) is answered with a message on stderr and the client's
//! refusal where a run of this repository is bound (fail closed), its
//! "go ahead" otherwise; nothing is written.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

use baton_config::{Config, Overrides};
use baton_usecases::Services;
use baton_usecases::hooks::{self, HookInput, Outcome, ToolCall};

/// The most stdin a hook reads (Claude Code sends whole file contents for
/// Write; larger inputs are refused as bad input).
pub const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// The client whose contract the hook speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookClient {
    /// Claude Code (`.claude/settings.json`).
    Claude,
    /// Codex (`.codex/hooks.json`).
    Codex,
    /// Cursor (`.cursor/hooks.json`).
    Cursor,
}

impl HookClient {
    fn name(self) -> &'static str {
        match self {
            HookClient::Claude => "claude",
            HookClient::Codex => "codex",
            HookClient::Cursor => "cursor",
        }
    }
}

/// The events baton handles, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SubagentStop,
    SessionStart,
}

/// Event names on the command line, per client.
const EVENTS: &[(&str, Event)] = &[
    ("pre-tool-use", Event::PreToolUse),
    ("post-tool-use", Event::PostToolUse),
    ("user-prompt-submit", Event::UserPromptSubmit),
    ("stop", Event::Stop),
    ("subagent-stop", Event::SubagentStop),
    ("session-start", Event::SessionStart),
    // Cursor's names.
    ("before-shell-execution", Event::PreToolUse),
    ("before-mcp-execution", Event::PreToolUse),
    ("before-submit-prompt", Event::UserPromptSubmit),
    ("after-file-edit", Event::PostToolUse),
    ("after-mcp-execution", Event::PostToolUse),
];

/// The client's own name of an event (`hook_event_name`).
fn event_of_wire(name: &str) -> Option<Event> {
    Some(match name {
        "PreToolUse" | "preToolUse" | "beforeShellExecution" | "beforeMCPExecution" => {
            Event::PreToolUse
        }
        "PostToolUse" | "postToolUse" | "afterFileEdit" | "afterMCPExecution" => Event::PostToolUse,
        "UserPromptSubmit" | "beforeSubmitPrompt" => Event::UserPromptSubmit,
        "Stop" | "stop" => Event::Stop,
        "SubagentStop" | "subagentStop" => Event::SubagentStop,
        "SessionStart" | "sessionStart" => Event::SessionStart,
        _ => return None,
    })
}

/// Runs the hook for `event_name` of `client`. `run` is the run the
/// session's agent works for when `baton run` started it for one step (the
/// hook entries `baton run`'s presets pass to the CLI): an unbound session
/// is bound to it at its first event.
pub fn run(
    client: HookClient,
    event_name: &str,
    run: Option<&str>,
    overrides: &Overrides,
) -> ExitCode {
    let Some(&(_, event)) = EVENTS.iter().find(|(n, _)| *n == event_name) else {
        let names: Vec<&str> = EVENTS.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "baton hook: unknown event {event_name:?}; the events are: {}. Check the hook entries `baton init` wrote.",
            names.join(", ")
        );
        // A misconfigured hook cannot enforce anything: the client's
        // non-blocking error, shown to the person.
        return ExitCode::from(1);
    };
    let mut raw = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_INPUT + 1)
        .read_to_end(&mut raw);
    let parsed: Result<Value, String> = match read {
        Err(e) => Err(format!("cannot read the hook input ({e})")),
        Ok(_) if raw.len() as u64 > MAX_INPUT => Err(format!(
            "the hook input is larger than {} MiB",
            MAX_INPUT / 1024 / 1024
        )),
        Ok(_) => serde_json::from_slice::<Value>(&raw)
            .map_err(|e| format!("the hook input is not JSON ({e})"))
            .and_then(|v| {
                if v.is_object() {
                    Ok(v)
                } else {
                    Err("the hook input is not a JSON object".into())
                }
            }),
    };
    let value = match parsed {
        Ok(v) => v,
        Err(problem) => return bad_input(client, event, &problem, None, overrides),
    };
    if let Some(wire) = value.get("hook_event_name").and_then(Value::as_str)
        && let Some(actual) = event_of_wire(wire)
        && actual != event
    {
        return bad_input(
            client,
            event,
            &format!("the client sent {wire} to `baton hook {event_name}`"),
            Some(&value),
            overrides,
        );
    }
    let input = match read_input(client, event, &value) {
        Ok(i) => i,
        Err(problem) => return bad_input(client, event, &problem, Some(&value), overrides),
    };
    let config = match Config::resolve(&input.cwd, &baton_config::ProcessEnv, overrides) {
        Ok(c) => c,
        Err(e) => {
            return bad_input(
                client,
                event,
                &format!("cannot read baton's configuration ({e})"),
                Some(&value),
                overrides,
            );
        }
    };
    // baton's key, the person's configuration and the dashboard's token
    // are named by no tool call, whatever is bound (a key read now could
    // sign a forged state later).
    if event == Event::PreToolUse
        && let Some(reason) = hooks::secrets::refusal(&config, &input)
    {
        return answer(client, event, &Outcome::Deny { reason });
    }
    // The fast path: no run bound to this session, and nothing that could
    // bind one.
    let binds = event == Event::PostToolUse
        && input
            .tool
            .as_ref()
            .is_some_and(|t| t.name().starts_with("mcp__baton__"));
    let loaded = hooks::binding::load(&config.repo_root, &input.session);
    let bind_to_run = run.filter(|_| matches!(loaded, Ok(None)));
    match loaded {
        Ok(None) if !binds && bind_to_run.is_none() => {
            return answer(client, event, &Outcome::Allow { context: None });
        }
        // After a shell or other tool call that nothing watches, there is
        // nothing to check: no state is read.
        Ok(Some(session))
            if event == Event::PostToolUse
                && !binds
                && !matches!(input.tool, Some(ToolCall::Write { .. }))
                && !session
                    .watches
                    .iter()
                    .any(|w| Some(&w.call) == input.tool_use_id.as_ref()) =>
        {
            return answer(client, event, &Outcome::Allow { context: None });
        }
        Ok(_) => {}
        Err(e) => {
            return answer(
                client,
                event,
                &fail_closed(
                    event,
                    &format!(
                        "baton: {e}; a person can delete the file under .baton/sessions/ to release this session"
                    ),
                ),
            );
        }
    }
    let svc = match Services::open(config, env!("CARGO_PKG_VERSION")) {
        Ok(s) => s,
        Err(e) => {
            return answer(
                client,
                event,
                &fail_closed(
                    event,
                    &format!("baton cannot open the repository's state ({})", e.message),
                ),
            );
        }
    };
    if let Some(workspace) = bind_to_run
        && let Err(e) = baton_usecases::headless::bind_step_agent(
            &svc,
            client.name(),
            &input.session,
            workspace,
        )
    {
        return answer(
            client,
            event,
            &fail_closed(
                event,
                &format!(
                    "baton: this session could not be bound to run {workspace} ({}), so its scope cannot be enforced and the call is refused",
                    e.message
                ),
            ),
        );
    }
    let outcome = match event {
        Event::PreToolUse => hooks::pre_tool(&svc, &input),
        Event::PostToolUse => hooks::post_tool(&svc, &input),
        Event::UserPromptSubmit => hooks::prompt_submitted(&svc, &input),
        Event::Stop => hooks::stop(&svc, &input, false),
        Event::SubagentStop => hooks::stop(&svc, &input, true),
        Event::SessionStart => hooks::session_started(&svc, &input),
    };
    answer(client, event, &outcome)
}

/// The outcome when a bound session's decision cannot be made: refuse a
/// tool call; never trap a stop or a prompt.
fn fail_closed(event: Event, reason: &str) -> Outcome {
    match event {
        Event::PreToolUse => Outcome::Deny {
            reason: reason.to_string(),
        },
        _ => Outcome::Allow {
            context: Some(reason.to_string()),
        },
    }
}

fn bad_input(
    client: HookClient,
    event: Event,
    problem: &str,
    value: Option<&Value>,
    overrides: &Overrides,
) -> ExitCode {
    let cwd = value
        .and_then(|v| v.get("cwd"))
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
        .or_else(|| std::env::current_dir().ok());
    let bound = cwd
        .and_then(|c| Config::resolve(&c, &baton_config::ProcessEnv, overrides).ok())
        .is_some_and(|config| hooks::binding::any_bound(&config.repo_root));
    let message = format!(
        "baton hook: {problem}. {}",
        if bound {
            "A baton run is bound to a session of this repository, so the call is refused."
        } else {
            "No baton run is bound here, so the call goes ahead."
        }
    );
    if bound && event == Event::PreToolUse {
        return answer(client, event, &Outcome::Deny { reason: message });
    }
    eprintln!("{message}");
    match client {
        // Claude Code and Codex show a non-blocking error (exit 1) to the
        // person and go on.
        HookClient::Claude | HookClient::Codex => ExitCode::from(1),
        HookClient::Cursor => answer(client, event, &Outcome::Allow { context: None }),
    }
}

/// Reads one client's JSON into the neutral input.
fn read_input(client: HookClient, event: Event, v: &Value) -> Result<HookInput, String> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let session = match client {
        HookClient::Cursor => text("conversation_id").or_else(|| text("session_id")),
        _ => text("session_id"),
    }
    .ok_or("the hook input has no session id (session_id)")?;
    hooks::binding::check_session_id(&session).map_err(|e| e.to_string())?;
    let cwd = text("cwd")
        .or_else(|| {
            v.get("workspace_roots")
                .and_then(|r| r.get(0))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::current_dir().ok())
        .ok_or("the hook input has no usable cwd")?;
    let mut input = HookInput {
        client: client.name().to_string(),
        session,
        cwd,
        agent_id: text("agent_id"),
        tool_input: v.get("tool_input").cloned().unwrap_or(Value::Null),
        tool_response: v
            .get("tool_response")
            .or_else(|| v.get("tool_output"))
            .cloned()
            .unwrap_or(Value::Null),
        tool_use_id: text("tool_use_id"),
        prompt: text("prompt"),
        prompt_id: text("prompt_id"),
        transcript_path: text("transcript_path").map(PathBuf::from),
        stop_hook_active: v
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        tool: None,
    };
    if matches!(event, Event::PreToolUse | Event::PostToolUse) {
        input.tool = Some(tool_call(client, v, &mut input)?);
    }
    if event == Event::UserPromptSubmit && input.prompt.is_none() {
        return Err("the prompt event has no prompt".into());
    }
    Ok(input)
}

/// The tool call of a tool event, per client.
fn tool_call(client: HookClient, v: &Value, input: &mut HookInput) -> Result<ToolCall, String> {
    let ti = v.get("tool_input").cloned().unwrap_or(Value::Null);
    let s = |val: &Value, k: &str| val.get(k).and_then(Value::as_str).map(str::to_string);
    if client == HookClient::Cursor {
        match v.get("hook_event_name").and_then(Value::as_str) {
            Some("beforeShellExecution") => {
                let command = s(v, "command").ok_or("beforeShellExecution without command")?;
                return Ok(ToolCall::Shell {
                    name: "Shell".into(),
                    command,
                });
            }
            Some(wire @ ("beforeMCPExecution" | "afterMCPExecution")) => {
                // Cursor names the server's command (stdio) or URL, not
                // always the server: baton's own is the `baton` command.
                let server = s(v, "server").unwrap_or_else(|| {
                    let command = s(v, "command").unwrap_or_default();
                    let program = command.split_whitespace().next().unwrap_or_default();
                    if program.rsplit('/').next() == Some("baton") {
                        "baton".to_string()
                    } else {
                        "unknown".to_string()
                    }
                });
                let tool = s(v, "tool_name").ok_or(format!("{wire} without tool_name"))?;
                if let Some(result) = s(v, "result_json") {
                    input.tool_response =
                        serde_json::from_str(&result).unwrap_or(Value::String(result));
                }
                input.tool_input = v
                    .get("tool_input")
                    .and_then(|t| match t {
                        Value::String(text) => serde_json::from_str(text).ok(),
                        other => Some(other.clone()),
                    })
                    .unwrap_or(Value::Null);
                return Ok(ToolCall::Other {
                    name: format!("mcp__{server}__{tool}"),
                });
            }
            Some("afterFileEdit") => {
                let path = s(v, "file_path").ok_or("afterFileEdit without file_path")?;
                return Ok(ToolCall::Write {
                    name: "Edit".into(),
                    paths: vec![path],
                });
            }
            _ => {}
        }
    }
    let name = s(v, "tool_name").ok_or("the tool event has no tool_name")?;
    Ok(match name.as_str() {
        "Write" | "Edit" | "MultiEdit" | "Delete" => ToolCall::Write {
            paths: vec![
                s(&ti, "file_path")
                    .or_else(|| s(&ti, "path"))
                    .ok_or(format!("{name} without file_path"))?,
            ],
            name,
        },
        "NotebookEdit" => ToolCall::Write {
            paths: vec![s(&ti, "notebook_path").ok_or("NotebookEdit without notebook_path")?],
            name,
        },
        "apply_patch" | "ApplyPatch" => {
            let patch = s(&ti, "command")
                .or_else(|| s(&ti, "input"))
                .or_else(|| s(&ti, "patch"))
                .ok_or("apply_patch without its patch")?;
            let paths = hooks::patch_paths(&patch);
            if paths.is_empty() {
                return Err("apply_patch names no file".into());
            }
            ToolCall::Write { name, paths }
        }
        "Bash" | "Shell" | "shell" | "exec_command" | "local_shell" => ToolCall::Shell {
            command: s(&ti, "command")
                .or_else(|| s(&ti, "cmd"))
                .or_else(|| {
                    ti.get("command").and_then(Value::as_array).map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(shell_quote)
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                })
                .ok_or(format!("{name} without command"))?,
            name,
        },
        _ => ToolCall::Other { name },
    })
}

fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Writes `outcome` in the client's contract and returns the exit code.
fn answer(client: HookClient, event: Event, outcome: &Outcome) -> ExitCode {
    let out = match client {
        HookClient::Claude => claude_answer(event, outcome, false),
        HookClient::Codex => claude_answer(event, outcome, true),
        HookClient::Cursor => cursor_answer(event, outcome),
    };
    if let Some(value) = out {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{value}");
        let _ = stdout.flush();
    }
    ExitCode::SUCCESS
}

/// Claude Code's shapes; `strict` keeps to the fields Codex's schemas
/// declare for each event.
fn claude_answer(event: Event, outcome: &Outcome, strict: bool) -> Option<Value> {
    let name = match event {
        Event::PreToolUse => "PreToolUse",
        Event::PostToolUse => "PostToolUse",
        Event::UserPromptSubmit => "UserPromptSubmit",
        Event::Stop => "Stop",
        Event::SubagentStop => "SubagentStop",
        Event::SessionStart => "SessionStart",
    };
    match (event, outcome) {
        (_, Outcome::Allow { context: None }) => None,
        (Event::PreToolUse, Outcome::Deny { reason }) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": name,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })),
        (Event::PreToolUse, Outcome::Rewrite { input, context }) => {
            if strict {
                // Codex reserves updatedInput: the tool runs as sent and
                // its reply says what baton applied.
                Some(json!({
                    "hookSpecificOutput": {"hookEventName": name, "additionalContext": context}
                }))
            } else {
                Some(json!({
                    "hookSpecificOutput": {
                        "hookEventName": name,
                        "permissionDecision": "allow",
                        "permissionDecisionReason": context,
                        "updatedInput": input,
                        "additionalContext": context,
                    }
                }))
            }
        }
        (Event::Stop | Event::SubagentStop, Outcome::Block { reason })
        | (Event::PostToolUse, Outcome::Block { reason }) => {
            Some(json!({"decision": "block", "reason": reason}))
        }
        (Event::Stop | Event::SubagentStop, Outcome::Allow { context: Some(c) }) => {
            Some(json!({"systemMessage": c}))
        }
        (_, Outcome::Allow { context: Some(c) }) => {
            if strict && event == Event::PreToolUse {
                Some(json!({"systemMessage": c}))
            } else {
                Some(json!({
                    "hookSpecificOutput": {"hookEventName": name, "additionalContext": c}
                }))
            }
        }
        (_, Outcome::Deny { reason }) | (_, Outcome::Block { reason }) => {
            Some(json!({"decision": "block", "reason": reason}))
        }
        (_, Outcome::Rewrite { context, .. }) => Some(json!({
            "hookSpecificOutput": {"hookEventName": name, "additionalContext": context}
        })),
    }
}

/// Cursor's shapes: `permission` for the before-hooks (never `ask`),
/// `followup_message` at a stop, `continue` for a prompt.
fn cursor_answer(event: Event, outcome: &Outcome) -> Option<Value> {
    Some(match (event, outcome) {
        (Event::PreToolUse, Outcome::Deny { reason }) => json!({
            "permission": "deny",
            "user_message": reason,
            "agent_message": reason,
        }),
        (Event::PreToolUse, _) => json!({"permission": "allow"}),
        (Event::Stop | Event::SubagentStop, Outcome::Block { reason }) => {
            json!({"followup_message": reason})
        }
        (Event::Stop | Event::SubagentStop, _) => json!({}),
        (Event::UserPromptSubmit, _) => json!({"continue": true}),
        _ => json!({}),
    })
}
