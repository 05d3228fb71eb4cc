//! The `issue` group: seed 004's tools with their exact names, adapters
//! over [`baton_usecases::issue`].

use serde_json::Value;

use baton_usecases::issue as uc;
use baton_usecases::runs::RunView;
use uc::{CompletePhaseArgs, CompletePhaseReply, SelectArgs, StartIssueArgs, StatusReply};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::parse;
use crate::context::AppContext;
use crate::error::ToolError;

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "startIssueWorkflow",
            group: "issue",
            description: "Start the six-phase workflow for a GitHub issue (issue_start → implementation → quality_check → pr_creation → fix → completion); returns the first phase's instruction.",
            input_schema: input_schema::<StartIssueArgs>,
            output_schema: output_schema::<RunView>,
            read_only: false,
            destructive: false,
            handler: start_issue_tool,
        },
        ToolSpec {
            name: "completePhase",
            group: "issue",
            description: "Report the current phase as completed or failed, with evidence: every task and acceptance criterion, the files you touched, the phase's artifact in the workspace. Returns the next phase's instruction.",
            input_schema: input_schema::<CompletePhaseArgs>,
            output_schema: output_schema::<CompletePhaseReply>,
            read_only: false,
            destructive: false,
            handler: complete_phase_tool,
        },
        ToolSpec {
            name: "getCurrentPhase",
            group: "issue",
            description: "The current phase of an issue workflow and its instruction (preconditions, acceptance criteria, tasks, artifacts, commands). Pass issueNumber when several issues are active.",
            input_schema: input_schema::<SelectArgs>,
            output_schema: output_schema::<RunView>,
            read_only: true,
            destructive: false,
            handler: get_current_phase_tool,
        },
        ToolSpec {
            name: "getWorkflowStatus",
            group: "issue",
            description: "Overall progress of an issue workflow: phases done and ahead, every phase report, working files, durations and fix trips.",
            input_schema: input_schema::<SelectArgs>,
            output_schema: output_schema::<StatusReply>,
            read_only: true,
            destructive: false,
            handler: get_workflow_status_tool,
        },
    ]
}

fn start_issue_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::start_issue(ctx, parse(arguments)?)?)
}

fn complete_phase_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::complete_phase(ctx, parse(arguments)?)?)
}

fn get_current_phase_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::get_current_phase(ctx, parse(arguments)?)?)
}

fn get_workflow_status_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::get_workflow_status(ctx, parse(arguments)?)?)
}
