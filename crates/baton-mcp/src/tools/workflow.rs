//! The `workflow` group: any workflow definition, run by the same engine;
//! adapters over [`baton_usecases::workflows`].

use serde_json::Value;

use baton_usecases::runs::RunView;
use baton_usecases::workflows as uc;
use uc::{ArchiveArgs, ArchiveReply, DefinitionsReply, StatsArgs, StatsReply, WorkflowStartArgs};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::parse;
use crate::context::AppContext;
use crate::error::ToolError;

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "workflow_start",
            group: "workflow",
            description: "Start a run of any workflow definition (built-in or from .baton/workflows/) and get the first phase's instruction. Continue with completePhase, passing the returned workspace.",
            input_schema: input_schema::<WorkflowStartArgs>,
            output_schema: output_schema::<RunView>,
            read_only: false,
            destructive: false,
            handler: workflow_start_tool,
        },
        ToolSpec {
            name: "workflow_definitions",
            group: "workflow",
            description: "List the workflow definitions this server knows, with where each came from, and any errors in project definition files.",
            input_schema: input_schema::<StatsArgs>,
            output_schema: output_schema::<DefinitionsReply>,
            read_only: true,
            destructive: false,
            handler: workflow_definitions_tool,
        },
        ToolSpec {
            name: "workflow_stats",
            group: "workflow",
            description: "Run analytics: per-phase durations and visits, trips through recovery phases such as fix, per run and per workflow across the repository.",
            input_schema: input_schema::<StatsArgs>,
            output_schema: output_schema::<StatsReply>,
            read_only: true,
            destructive: false,
            handler: workflow_stats_tool,
        },
        ToolSpec {
            name: "workflow_archive",
            group: "workflow",
            description: "Move an ended (completed or abandoned) run's workspace to .specs/archive/ so it no longer shows among active work. Active runs are refused.",
            input_schema: input_schema::<ArchiveArgs>,
            output_schema: output_schema::<ArchiveReply>,
            read_only: false,
            destructive: false,
            handler: workflow_archive_tool,
        },
    ]
}

fn workflow_start_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::workflow_start(ctx, parse(arguments)?)?)
}

fn workflow_definitions_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::workflow_definitions(ctx, parse(arguments)?)?)
}

fn workflow_stats_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::workflow_stats(ctx, parse(arguments)?)?)
}

fn workflow_archive_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::workflow_archive(ctx, parse(arguments)?)?)
}
