//! The `pipeline` group's initialisation tools (seeds 001/000):
//! `pipeline_init` and `pipeline_init_with_context`, adapters over
//! [`baton_usecases::pipeline::init`].

use serde_json::Value;

use baton_usecases::pipeline::init::{
    InitArgs, InitReply, InitWithContextArgs, InitWithContextReply, pipeline_init,
    pipeline_init_with_context,
};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::parse;
use crate::context::AppContext;
use crate::error::ToolError;

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "pipeline_init",
            group: "pipeline",
            description: "Start of every pipeline: parse the user's raw arguments (task text or issue URL, flags --effort=S|M|L --auto --nopr --debug --discuss), detect the source and whether it resumes an existing workspace. Writes nothing. Invalid input comes back as {errors:[…]}.",
            input_schema: input_schema::<InitArgs>,
            output_schema: output_schema::<InitReply>,
            read_only: true,
            destructive: false,
            handler: init_handler,
        },
        ToolSpec {
            name: "pipeline_init_with_context",
            group: "pipeline",
            description: "Confirmation after pipeline_init: (1) workspace, flags, task_text or external_context → the effort and options to confirm with the person (with --discuss: questions); (2) optional: discussion_answers → the enriched request; (3) user_confirmation → creates the workspace and request.md.",
            input_schema: input_schema::<InitWithContextArgs>,
            output_schema: output_schema::<InitWithContextReply>,
            read_only: false,
            destructive: false,
            handler: init_with_context_handler,
        },
    ]
}

fn init_handler(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(pipeline_init(ctx, parse(arguments)?)?)
}

fn init_with_context_handler(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(pipeline_init_with_context(ctx, parse(arguments)?)?)
}
