//! `pipeline_next_action` (seed 001 §3), an adapter over
//! [`baton_usecases::pipeline::next`].

use serde_json::Value;

use baton_usecases::pipeline::next::{NextArgs, NextReply, next_action};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::parse;
use crate::context::AppContext;
use crate::error::ToolError;

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "pipeline_next_action",
        group: "pipeline",
        description: "The pipeline loop: returns the next action to execute (spawn_agent with a ready prompt, exec with an argv array, write_file, checkpoint, human_gate, done). After an agent/exec/write_file action call it again with previous_action_complete=true and its action_id as previous_action_id; a checkpoint or gate: show how_to_answer and wait for the person. Never decide the order yourself.",
        input_schema: input_schema::<NextArgs>,
        output_schema: output_schema::<NextReply>,
        read_only: false,
        destructive: false,
        handler: next_handler,
    }]
}

fn next_handler(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(next_action(ctx, parse(arguments)?)?)
}
