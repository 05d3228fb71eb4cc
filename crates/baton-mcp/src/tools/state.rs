//! The `state` group: read-only views of workspaces.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use baton_engine::summary::{ResumeInfo, WorkspaceRow, resume_info, row};

use super::{ToolSpec, input_schema, output_schema};
use crate::args::{check_text, parse};
use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

/// Arguments of `state_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateGetArgs {
    /// The workspace: its folder name, ".specs/<name>", or its absolute path.
    pub workspace: String,
    /// A field of state.json, dotted for nested ones (e.g. "currentPhaseStatus",
    /// "timestamps.created", "tasks"). Omit for the whole document.
    #[serde(default)]
    pub field: Option<String>,
}

/// Arguments naming a workspace.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceArgs {
    /// The workspace: its folder name, ".specs/<name>", or its absolute path.
    pub workspace: String,
}

/// Arguments of `workspace_list`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only workspaces running this workflow id.
    #[serde(default)]
    pub workflow: Option<String>,
    /// Only workspaces whose current phase has this status
    /// (pending, in_progress, completed, failed, awaiting_human, abandoned).
    #[serde(default)]
    pub status: Option<String>,
}

/// Reply of `state_get`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StateGetReply {
    /// The workspace.
    pub workspace: String,
    /// The field read, when one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The value (the whole state.json when no field was named).
    pub value: Value,
}

/// Reply of `workspace_list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListReply {
    /// Workspaces, by folder name.
    pub workspaces: Vec<WorkspaceRow>,
    /// Workspaces whose state.json could not be read.
    pub unreadable: Vec<Unreadable>,
}

/// A workspace whose state could not be read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Unreadable {
    /// The workspace.
    pub workspace: String,
    /// Error code.
    pub code: String,
    /// What is wrong.
    pub message: String,
}

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "state_get",
            group: "state",
            description: "Read a workspace's state.json, whole or one (dotted) field such as \"currentPhase\" or \"timestamps.created\".",
            input_schema: input_schema::<StateGetArgs>,
            output_schema: output_schema::<StateGetReply>,
            read_only: true,
            destructive: false,
            handler: state_get,
        },
        ToolSpec {
            name: "state_resume_info",
            group: "state",
            description: "Where a workspace stands and what to call next: current phase and status, phases done and remaining, tasks, totals, and next_step.",
            input_schema: input_schema::<WorkspaceArgs>,
            output_schema: output_schema::<ResumeInfo>,
            read_only: true,
            destructive: false,
            handler: state_resume_info,
        },
        ToolSpec {
            name: "workspace_list",
            group: "state",
            description: "List every workspace of the repository with its workflow, current phase, status and progress. Optional filters: workflow, status.",
            input_schema: input_schema::<ListArgs>,
            output_schema: output_schema::<ListReply>,
            read_only: true,
            destructive: false,
            handler: workspace_list,
        },
    ]
}

fn state_get(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: StateGetArgs = parse(arguments)?;
    check_text("workspace", &args.workspace, 1024)?;
    let ws = ctx.store.resolve(&args.workspace)?;
    let state = ctx.store.load(&ws)?;
    let doc = serde_json::to_value(&state)
        .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))?;
    let value = match &args.field {
        None => doc,
        Some(field) => {
            check_text("field", field, 128)?;
            lookup(&doc, field).cloned().ok_or_else(|| {
                let keys: Vec<&String> = doc
                    .as_object()
                    .map(|o| o.keys().collect())
                    .unwrap_or_default();
                ToolError::invalid("field", format!("state.json has no field {field:?}"))
                    .with_details(serde_json::json!({ "field": "field", "valid": keys }))
            })?
        }
    };
    serde_json::to_value(StateGetReply {
        workspace: ws.display,
        field: args.field,
        value,
    })
    .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

fn lookup<'a>(doc: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted
        .split('.')
        .try_fold(doc, |value, key| value.as_object()?.get(key))
}

fn state_resume_info(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: WorkspaceArgs = parse(arguments)?;
    check_text("workspace", &args.workspace, 1024)?;
    let ws = ctx.store.resolve(&args.workspace)?;
    let state = ctx.store.load(&ws)?;
    let definition = ctx.workflow(&state.workflow)?;
    serde_json::to_value(resume_info(&state, &definition))
        .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

const STATUSES: [&str; 6] = [
    "pending",
    "in_progress",
    "completed",
    "failed",
    "awaiting_human",
    "abandoned",
];

fn workspace_list(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: ListArgs = parse(arguments)?;
    if let Some(status) = &args.status
        && !STATUSES.contains(&status.as_str())
    {
        return Err(
            ToolError::invalid("status", format!("unknown status {status:?}"))
                .with_details(serde_json::json!({ "field": "status", "valid": STATUSES })),
        );
    }
    let mut workspaces = Vec::new();
    let mut unreadable = Vec::new();
    for (ws, state) in ctx.store.list()? {
        match state {
            Ok(state) => {
                if args.workflow.as_ref().is_some_and(|w| *w != state.workflow)
                    || args
                        .status
                        .as_ref()
                        .is_some_and(|s| s != state.current_phase_status.as_str())
                {
                    continue;
                }
                let definition = ctx.workflows.get(&state.workflow);
                workspaces.push(row(&state, definition.as_deref()));
            }
            Err(e) => {
                let err = ToolError::from(e);
                unreadable.push(Unreadable {
                    workspace: ws.display,
                    code: err.code.as_str().to_string(),
                    message: err.message,
                });
            }
        }
    }
    serde_json::to_value(ListReply {
        workspaces,
        unreadable,
    })
    .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}
