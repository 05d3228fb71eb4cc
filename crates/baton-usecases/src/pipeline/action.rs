//! The typed actions `pipeline_next_action` hands out (seed 001 §3), and the
//! report embedded in its reply. On the wire an action is one flat object
//! whose `type` says which fields it carries, exactly as the seed shows.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use baton_engine::completion::verdict::Finding;
use baton_engine::plan::ParallelTask;

/// One action for the orchestrator to execute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Run an agent (or one per task of `parallel_task_ids`, concurrently).
    SpawnAgent(SpawnAgent),
    /// Run a command (argv; never a shell string).
    Exec(Exec),
    /// Write a file.
    WriteFile(WriteFile),
    /// A checkpoint: a question for a person.
    Checkpoint(Question),
    /// A human gate: something a person does outside the pipeline.
    HumanGate(Question),
    /// The run is over.
    Done(Done),
}

impl Action {
    /// The wire name of the action's type.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::SpawnAgent(_) => "spawn_agent",
            Action::Exec(_) => "exec",
            Action::WriteFile(_) => "write_file",
            Action::Checkpoint(_) => "checkpoint",
            Action::HumanGate(_) => "human_gate",
            Action::Done(_) => "done",
        }
    }

    /// The question, when the action waits for an answer.
    pub fn question(&self) -> Option<&Question> {
        match self {
            Action::Checkpoint(q) | Action::HumanGate(q) => Some(q),
            _ => None,
        }
    }
}

/// `spawn_agent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnAgent {
    /// The agent's name (its instructions are Layer 1 of the prompt).
    pub agent: String,
    /// The assembled 4-layer prompt.
    pub prompt: String,
    /// Model label.
    pub model: String,
    /// The phase.
    pub phase: String,
    /// Files to read, relative to the workspace.
    pub input_files: Vec<String>,
    /// The file to write, relative to the workspace ("" for a fan-out).
    pub output_file: String,
    /// Task ids to run one agent each for, concurrently (null: one agent).
    pub parallel_task_ids: Option<Vec<String>>,
    /// Per task: extra inputs and its own output file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tasks: Option<Vec<ParallelTask>>,
}

/// `exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exec {
    /// The phase.
    pub phase: String,
    /// The argv.
    pub commands: Vec<String>,
    /// A setup step only (seed 001).
    pub setup_only: bool,
    /// A guarded step's "already done?" check: exit 0 skips the step.
    pub check_only: bool,
}

/// `write_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteFile {
    /// The phase.
    pub phase: String,
    /// The path, relative to the repository root.
    pub path: String,
    /// The content.
    pub content: String,
    /// Always true: writing the file is setup for the phase.
    pub setup_only: bool,
}

/// `checkpoint` and `human_gate`: a question for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The phase that waits.
    pub phase: String,
    /// The question's name (the checkpoint or gate id).
    pub name: String,
    /// Markdown to show the person.
    pub present_to_user: String,
    /// The accepted answers.
    pub options: Vec<String>,
    /// Who may answer: `person` (through a channel the agent does not
    /// control) or `agent`.
    pub answered_by: String,
    /// How a person answers when the agent may not (commands and URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how_to_answer: Option<String>,
    /// How to post the summary (post-to-source only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_method: Option<Value>,
}

/// `done`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// One line.
    pub summary: String,
    /// The summary file ("" when none was written).
    pub summary_path: String,
}

/// The report embedded in a `pipeline_next_action` reply when the previous
/// action was reported (seed 001's `report_result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmbeddedReport {
    /// `proceed`, `revision_required` or `setup_continue`.
    pub next_action_hint: String,
    /// The parsed verdict ("" when none).
    pub verdict_parsed: String,
    /// Review findings.
    pub findings: Vec<Finding>,
    /// Non-blocking remarks.
    pub warning: String,
    /// A line to show the person.
    pub display_message: String,
}

impl JsonSchema for Action {
    fn schema_name() -> Cow<'static, str> {
        "Action".into()
    }

    // One flat object: `type` says which of the optional fields are present
    // (a oneOf per variant would triple the schema an agent pays for).
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "type": {"enum": ["spawn_agent", "exec", "write_file", "checkpoint", "human_gate", "done"]},
                "phase": {"type": "string"},
                "agent": {"type": "string"},
                "prompt": {"type": "string"},
                "model": {"type": "string"},
                "input_files": {"type": "array", "items": {"type": "string"}},
                "output_file": {"type": "string"},
                "parallel_task_ids": {"type": ["array", "null"], "items": {"type": "string"}},
                "parallel_tasks": {"type": "array", "items": {"type": "object"}},
                "commands": {"type": "array", "items": {"type": "string"}},
                "setup_only": {"type": "boolean"},
                "check_only": {"type": "boolean"},
                "path": {"type": "string"},
                "content": {"type": "string"},
                "name": {"type": "string"},
                "present_to_user": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}},
                "answered_by": {"enum": ["person", "agent"]},
                "how_to_answer": {"type": "string"},
                "post_method": {"type": "object"},
                "summary": {"type": "string"},
                "summary_path": {"type": "string"}
            },
            "required": ["type"]
        })
    }
}
