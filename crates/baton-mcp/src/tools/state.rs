//! The `state` group: read-only views of workspaces, adapters over
//! [`baton_usecases::show`] and [`baton_usecases::overview`].

use serde_json::Value;

use baton_engine::summary::ResumeInfo;
use baton_usecases::show as uc;
use uc::{ListArgs, ListReply, StateGetArgs, StateGetReply, WorkspaceArgs};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::parse;
use crate::context::AppContext;
use crate::error::ToolError;

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "state_get",
            group: "state",
            description: "Read a workspace's state.json, whole or one field.",
            input_schema: input_schema::<StateGetArgs>,
            output_schema: output_schema::<StateGetReply>,
            read_only: true,
            destructive: false,
            handler: state_get_tool,
        },
        ToolSpec {
            name: "state_resume_info",
            group: "state",
            description: "Where a workspace stands and what to call next: current phase and status, phases done and remaining, tasks, totals, and next_step.",
            input_schema: input_schema::<WorkspaceArgs>,
            output_schema: output_schema::<ResumeInfo>,
            read_only: true,
            destructive: false,
            handler: state_resume_info_tool,
        },
        ToolSpec {
            name: "run_overview",
            group: "state",
            description: "One run at a glance (as the dashboard shows it): phases with time and tokens, loops, task DAG, the pending question, artifacts, timeline, totals.",
            input_schema: input_schema::<WorkspaceArgs>,
            output_schema: output_schema::<baton_usecases::overview::RunOverview>,
            read_only: true,
            destructive: false,
            handler: run_overview_tool,
        },
        ToolSpec {
            name: "workspace_list",
            group: "state",
            description: "List every workspace of the repository with its workflow, current phase, status and progress.",
            input_schema: input_schema::<ListArgs>,
            output_schema: output_schema::<ListReply>,
            read_only: true,
            destructive: false,
            handler: workspace_list_tool,
        },
    ]
}

fn state_get_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::state_get(ctx, parse(arguments)?)?)
}

fn state_resume_info_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::state_resume_info(ctx, parse(arguments)?)?)
}

fn run_overview_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: WorkspaceArgs = parse(arguments)?;
    reply(baton_usecases::overview::run_overview(
        ctx,
        &args.workspace,
    )?)
}

fn workspace_list_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::workspace_list(ctx, parse(arguments)?)?)
}
