//! The tool catalogue. Each tool belongs to one group; `--tools GROUPS`
//! exposes only the named groups so an agent's context holds just what its
//! workflow needs.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;

use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

pub mod history;
pub mod issue;
pub mod lifecycle;
pub mod manual;
pub mod next;
pub mod pipeline;
pub mod report;

pub mod state;
pub mod workflow;

/// A tool handler: parse the arguments, do the work, shape the reply.
pub type Handler = fn(&AppContext, Value) -> Result<Value, ToolError>;

/// One tool: its MCP description and its handler.
#[derive(Clone)]
pub struct ToolSpec {
    /// Tool name.
    pub name: &'static str,
    /// Group name used by `--tools`.
    pub group: &'static str,
    /// Description written for the agent.
    pub description: &'static str,
    /// Builds the input JSON schema.
    pub input_schema: fn() -> Arc<JsonObject>,
    /// Builds the output JSON schema.
    pub output_schema: fn() -> Arc<JsonObject>,
    /// Does not modify anything.
    pub read_only: bool,
    /// May discard work (abandon).
    pub destructive: bool,
    /// The handler.
    pub handler: Handler,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("group", &self.group)
            .finish()
    }
}

impl ToolSpec {
    /// The MCP `Tool` for `tools/list`.
    pub fn to_tool(&self) -> Tool {
        let mut tool = Tool::default();
        tool.name = self.name.into();
        tool.description = Some(self.description.into());
        tool.input_schema = (self.input_schema)();
        tool.output_schema = Some((self.output_schema)());
        tool.annotations = Some(ToolAnnotations::from_raw(
            None,
            Some(self.read_only),
            Some(self.destructive),
            Some(self.read_only),
            Some(false),
        ));
        tool
    }
}

/// A reply value: the use case's typed output as JSON.
pub fn reply<T: serde::Serialize>(value: T) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

/// The input schema of `T`.
pub fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_type::<T>()
}

/// The output schema of `T`.
pub fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_output::<T>()
}

/// Every tool group with a one-line description.
pub const GROUPS: &[(&str, &str)] = &[
    (
        "lifecycle",
        "create workspaces and move phases: init, phase_start, phase_complete, phase_fail, checkpoint, skip_phase, abandon",
    ),
    (
        "state",
        "read workspaces: state_get, state_resume_info, workspace_list",
    ),
    (
        "issue",
        "seed 004's issue workflow: startIssueWorkflow, completePhase, getCurrentPhase, getWorkflowStatus",
    ),
    (
        "workflow",
        "any workflow definition: workflow_start, workflow_definitions, workflow_stats, workflow_archive",
    ),
    (
        "pipeline",
        "the seed pipeline (forge): pipeline_init, pipeline_init_with_context, pipeline_next_action, pipeline_report_result",
    ),
    (
        "manual",
        "seed 002's manual search: manual_ls, manual_toc, manual_find, manual_hits, manual_read, manual_scan",
    ),
    (
        "history",
        "past runs and analytics (only when selected): history_search, history_patterns, history_friction, history_reindex, analytics_summary, analytics_dashboard, analytics_estimate",
    ),
];

/// Groups exposed only when named in `--tools`: every byte of `tools/list`
/// is paid in every agent session, and a workflow does not need them.
pub const OPT_IN_GROUPS: &[&str] = &[history::GROUP];

/// Every tool baton has.
pub fn all_tools() -> Vec<ToolSpec> {
    let mut tools = lifecycle::tools();
    tools.extend(state::tools());
    tools.extend(issue::tools());
    tools.extend(workflow::tools());
    tools.extend(pipeline::tools());
    tools.extend(next::tools());
    tools.extend(report::tools());
    tools.extend(manual::tools());
    tools.extend(history::tools());
    tools
}

/// The tools of the selected groups (when `groups` is `None`, all but the
/// [`OPT_IN_GROUPS`]). Unknown group names are an error listing the known
/// ones.
pub fn select(groups: Option<&[String]>) -> Result<Vec<ToolSpec>, String> {
    let all = all_tools();
    let Some(groups) = groups else {
        return Ok(all
            .into_iter()
            .filter(|t| !OPT_IN_GROUPS.contains(&t.group))
            .collect());
    };
    if let Some(unknown) = groups
        .iter()
        .find(|g| !GROUPS.iter().any(|(name, _)| name == g))
    {
        let known: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown tool group {unknown:?}; known groups: {}",
            known.join(", ")
        ));
    }
    Ok(all
        .into_iter()
        .filter(|t| groups.iter().any(|g| g == t.group))
        .collect())
}
