//! `pipeline_report_result` (seed 001 §4), an adapter over
//! [`baton_usecases::pipeline::report`].

use serde_json::Value;

use baton_usecases::pipeline::report::{ReportArgs, ReportReply, report_result};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::parse;
use crate::context::AppContext;
use crate::error::ToolError;

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "pipeline_report_result",
        group: "pipeline",
        description: "Report the current pipeline phase as done: records tokens/duration/model, checks the phase's artifact (sections, tasks, a review verdict) and moves on. Hints: proceed, revision_required (the authoring phase is next; see findings), setup_continue (the phase continues, or a person decides).",
        input_schema: input_schema::<ReportArgs>,
        output_schema: output_schema::<ReportReply>,
        read_only: false,
        destructive: false,
        handler: report_handler,
    }]
}

fn report_handler(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(report_result(ctx, parse(arguments)?)?)
}
