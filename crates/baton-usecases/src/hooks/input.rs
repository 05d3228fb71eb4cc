//! What a hook call carries, whatever the client: the tool call and the
//! session's details ([`HookInput`]), decoded from each client's JSON by the
//! adapter.

use std::path::PathBuf;

use serde_json::Value;

/// One tool call as the client describes it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// A file tool writing these paths (absolute, or relative to `cwd`).
    Write {
        /// The tool's name.
        name: String,
        /// The paths it writes.
        paths: Vec<String>,
    },
    /// A shell command line.
    Shell {
        /// The tool's name.
        name: String,
        /// The command line.
        command: String,
    },
    /// Any other tool.
    Other {
        /// The tool's name (`mcp__baton__pipeline_next_action`, `Read`, …).
        name: String,
    },
}

impl ToolCall {
    /// The tool's name.
    pub fn name(&self) -> &str {
        match self {
            ToolCall::Write { name, .. }
            | ToolCall::Shell { name, .. }
            | ToolCall::Other { name } => name,
        }
    }
}

/// What a hook call carries, whatever the client.
#[derive(Debug, Clone, Default)]
pub struct HookInput {
    /// The client (`claude`, `codex`, `cursor`).
    pub client: String,
    /// The client's session id.
    pub session: String,
    /// The folder the client works in.
    pub cwd: PathBuf,
    /// A sub-agent's id: it acts for the same session's run.
    pub agent_id: Option<String>,
    /// The tool call (tool events).
    pub tool: Option<ToolCall>,
    /// The tool's input as sent (for baton's own tools).
    pub tool_input: Value,
    /// The tool's result (after a call).
    pub tool_response: Value,
    /// The tool call's id.
    pub tool_use_id: Option<String>,
    /// The person's prompt (prompt events).
    pub prompt: Option<String>,
    /// The client's id of that prompt.
    pub prompt_id: Option<String>,
    /// The client's transcript of the session.
    pub transcript_path: Option<PathBuf>,
    /// The client already continues because of a stop hook.
    pub stop_hook_active: bool,
}
