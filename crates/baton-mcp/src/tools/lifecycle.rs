//! The `lifecycle` group: create a workspace and move its phases by hand
//! (seed 003 path 2), adapters over [`baton_usecases::recovery`].

use serde_json::Value;

use baton_usecases::recovery as uc;
use uc::{AbandonArgs, FailArgs, InitArgs, InitReply, LifecycleReply, PhaseArgs};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::parse;
use crate::context::AppContext;
use crate::error::ToolError;

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "init",
            group: "lifecycle",
            description: "Create a workspace folder (.specs/YYYYMMDD-<slug>/) with a fresh state.json. Returns the workspace to pass to every other call and the first phase.",
            input_schema: input_schema::<InitArgs>,
            output_schema: output_schema::<InitReply>,
            read_only: false,
            destructive: false,
            handler: init_tool,
        },
        ToolSpec {
            name: "phase_start",
            group: "lifecycle",
            description: "Start the current phase (pending or failed -> in_progress). Checkpoint phases are not started: call checkpoint instead.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: phase_start_tool,
        },
        ToolSpec {
            name: "phase_complete",
            group: "lifecycle",
            description: "Complete the current phase and move to the next one. Refused unless the phase was started (or presented as a checkpoint), its artifacts exist in the workspace, and no revision is pending.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: phase_complete_tool,
        },
        ToolSpec {
            name: "phase_fail",
            group: "lifecycle",
            description: "Mark the current, in-progress phase as failed with a message. The phase can be started again after the cause is fixed.",
            input_schema: input_schema::<FailArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: phase_fail_tool,
        },
        ToolSpec {
            name: "checkpoint",
            group: "lifecycle",
            description: "Put the current phase in front of a person (status awaiting_human). Complete it with phase_complete once the person approves, or abandon.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: checkpoint_tool,
        },
        ToolSpec {
            name: "skip_phase",
            group: "lifecycle",
            description: "Skip the current phase without running it (only when pending or failed) and move to the next one.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: skip_phase_tool,
        },
        ToolSpec {
            name: "abandon",
            group: "lifecycle",
            description: "Abandon the workflow. Final: every later change to this workspace is refused.",
            input_schema: input_schema::<AbandonArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: true,
            handler: abandon_tool,
        },
    ]
}

fn init_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::init(ctx, parse(arguments)?)?)
}

fn phase_start_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::phase_start(ctx, parse(arguments)?)?)
}

fn phase_complete_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::phase_complete(ctx, parse(arguments)?)?)
}

fn phase_fail_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::phase_fail(ctx, parse(arguments)?)?)
}

fn checkpoint_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::checkpoint(ctx, parse(arguments)?)?)
}

fn skip_phase_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::skip_phase(ctx, parse(arguments)?)?)
}

fn abandon_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::abandon(ctx, parse(arguments)?)?)
}
