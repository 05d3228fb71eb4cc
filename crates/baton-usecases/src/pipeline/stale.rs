//! The check a report's action id passes before it is applied: it must
//! name the action handed out. A report for a run that has ended meanwhile
//! (completed, or abandoned by the person) says so and what to do next,
//! not only that the action is stale.

use baton_state::WorkspaceState;
use serde_json::json;

use crate::error::{Error, ErrorCode, Result};

/// Refuses a report naming `id` (the argument `field`) when it is not the
/// action handed out, or when the run has ended.
pub(crate) fn check_reported_action(state: &WorkspaceState, id: &str, field: &str) -> Result<()> {
    let outstanding = state.outstanding_action.as_ref().map(|o| o.id.as_str());
    let status = state.current_phase_status;
    if status.is_terminal() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "this report is for action {id:?}, but the run has ended ({}); it was not applied and nothing in the run changes any more. Stop working on this run: tell the person, and if the work should go on, start a new run (pipeline_init, startIssueWorkflow, workflow_start)",
                status.as_str()
            ),
        )
        .with_details(json!({"field": field, "currentPhaseStatus": status.as_str(), "outstanding": outstanding})));
    }
    if outstanding == Some(id) {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::StaleAction,
        format!(
            "this report is for action {id:?}, but the action handed out is {}: it came late or belongs to another action, and it was not applied. Call pipeline_next_action without a report to get the current action",
            outstanding
                .map(|o| format!("{o:?}"))
                .unwrap_or_else(|| "none".into())
        ),
    )
    .with_details(json!({"field": field, "outstanding": outstanding})))
}
