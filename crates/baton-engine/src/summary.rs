//! Read-only views of a workspace.

use schemars::JsonSchema;
use serde::Serialize;

use baton_state::{ImplStatus, PhaseStatus, ReviewStatus, WorkspaceState};
use baton_workflow::WorkflowDefinition;

/// What an agent needs to pick up a workspace where it was left.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeInfo {
    /// The workspace.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// Spec name.
    pub spec_name: String,
    /// Current phase (`completed` at the end).
    pub current_phase: String,
    /// Label of the current phase.
    pub current_phase_label: String,
    /// Status of the current phase.
    pub current_phase_status: String,
    /// Phases completed.
    pub completed_phases: Vec<String>,
    /// Phases skipped.
    pub skipped_phases: Vec<String>,
    /// Phases still ahead (current excluded), skipping template skips.
    pub remaining_phases: Vec<String>,
    /// Effort.
    pub effort: Option<String>,
    /// Flow template.
    pub flow_template: Option<String>,
    /// Branch.
    pub branch: Option<String>,
    /// The last failure message, if the phase failed.
    pub error: Option<String>,
    /// Tasks not yet completed (implementation not done or review failed).
    pub pending_tasks: Vec<String>,
    /// Tasks whose review passed.
    pub completed_tasks: Vec<String>,
    /// All tasks.
    pub total_tasks: usize,
    /// Phase-log entries.
    pub phase_log_entries: usize,
    /// Sum of tokens in the phase log.
    pub total_tokens: u64,
    /// Sum of durations in the phase log (ms).
    pub total_duration_ms: u64,
    /// The call that moves the workspace forward from here.
    pub next_step: String,
}

/// Builds the resume view.
pub fn resume_info(state: &WorkspaceState, definition: &WorkflowDefinition) -> ResumeInfo {
    let remaining_phases = definition
        .phases_after(&state.current_phase)
        .iter()
        .filter(|p| !state.skipped_phases.contains(&p.id))
        .map(|p| p.id.clone())
        .collect();
    let mut pending_tasks = Vec::new();
    let mut completed_tasks = Vec::new();
    for (key, task) in &state.tasks {
        if task.impl_status != ImplStatus::Completed || task.review_status == ReviewStatus::Fail {
            pending_tasks.push(key.clone());
        }
        if task.review_status.passed() {
            completed_tasks.push(key.clone());
        }
    }
    ResumeInfo {
        workspace: state.workspace.clone(),
        workflow: state.workflow.clone(),
        spec_name: state.spec_name.clone(),
        current_phase: state.current_phase.clone(),
        current_phase_label: phase_label(definition, &state.current_phase),
        current_phase_status: state.current_phase_status.as_str().to_string(),
        completed_phases: state.completed_phases.clone(),
        skipped_phases: state.skipped_phases.clone(),
        remaining_phases,
        effort: state.effort.map(|e| format!("{e:?}")),
        flow_template: state.flow_template.map(|t| t.as_str().to_string()),
        branch: state.branch.clone(),
        error: state.error.as_ref().map(|e| e.message.clone()),
        pending_tasks,
        completed_tasks,
        total_tasks: state.tasks.len(),
        phase_log_entries: state.phase_log.len(),
        total_tokens: state.phase_log.iter().map(|e| e.tokens).sum(),
        total_duration_ms: state.phase_log.iter().map(|e| e.duration_ms).sum(),
        next_step: next_step(state, definition),
    }
}

/// The label of a phase (`setup` and `completed` have fixed labels).
pub fn phase_label(definition: &WorkflowDefinition, phase: &str) -> String {
    match phase {
        baton_workflow::SETUP => "Setup".to_string(),
        baton_workflow::COMPLETED => "Completed".to_string(),
        _ => definition
            .phase(phase)
            .map(|p| p.label.clone())
            .unwrap_or_else(|| phase.to_string()),
    }
}

/// Whether runs of `definition` are driven by the pipeline loop
/// (`pipeline_next_action`) rather than by phase reports (`completePhase`).
pub fn driven_by_loop(definition: &WorkflowDefinition) -> bool {
    definition.driven_by == baton_workflow::Driver::Loop
}

/// A one-line instruction for the agent: which call moves the run forward.
/// It names the run's own loop (`pipeline_next_action` or `completePhase`),
/// never a recovery tool, and a question for a person is answered by that
/// person, not by the agent.
pub fn next_step(state: &WorkspaceState, definition: &WorkflowDefinition) -> String {
    let phase = &state.current_phase;
    let ws = &state.workspace;
    let person = definition.answerer(phase) == baton_workflow::Answerer::Person;
    let waits = state.current_phase_status == PhaseStatus::AwaitingHuman
        || (state.current_phase_status == PhaseStatus::Pending
            && crate::completion::guards::is_human_phase(definition, phase));
    match state.current_phase_status {
        PhaseStatus::Completed => return "the workflow is complete; nothing to do".into(),
        PhaseStatus::Abandoned => return "the workflow was abandoned; start a new one".into(),
        _ => {}
    }
    if driven_by_loop(definition) {
        if waits && person {
            return format!(
                "{phase} waits for a person: call pipeline_next_action with workspace {ws:?} to get the question, show it to the person, and let them answer with `baton answer {ws} <option>` in a terminal or on the dashboard; do not answer it yourself"
            );
        }
        return format!(
            "call pipeline_next_action with workspace {ws:?} and execute the action it returns"
        );
    }
    match state.current_phase_status {
        _ if waits && person => format!(
            "{phase} waits for a person: they answer with `baton answer {ws} <option>` in a terminal or on the dashboard"
        ),
        PhaseStatus::InProgress => format!(
            "do the tasks of {phase}, write its artifacts in the workspace, then call completePhase with phaseName {phase:?}"
        ),
        PhaseStatus::Failed => format!(
            "fix what failed in {phase}, then call completePhase with phaseName {phase:?} and the new evidence"
        ),
        _ => format!(
            "call getCurrentPhase for {ws:?}: {phase} has not started (its loop limit may be used up; a person decides how to go on)"
        ),
    }
}

/// One row of a workspace listing.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRow {
    /// The workspace.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// Spec name.
    pub spec_name: String,
    /// Current phase.
    pub current_phase: String,
    /// Its status.
    pub status: String,
    /// Phases completed out of all phases, then the skipped ones when
    /// there are any: `3/17`, `3/17 (2 skipped)`. A skipped phase never
    /// counts as done.
    pub progress: String,
    /// Last update (RFC 3339).
    pub last_updated: String,
}

/// A listing row for one workspace.
pub fn row(state: &WorkspaceState, definition: Option<&WorkflowDefinition>) -> WorkspaceRow {
    let total = definition.map_or(0, |d| d.phases.len());
    let counted = |phases: &[String]| {
        phases
            .iter()
            .filter(|p| *p != baton_workflow::SETUP)
            .count()
    };
    WorkspaceRow {
        workspace: state.workspace.clone(),
        workflow: state.workflow.clone(),
        spec_name: state.spec_name.clone(),
        current_phase: state.current_phase.clone(),
        status: state.current_phase_status.as_str().to_string(),
        progress: progress(
            counted(&state.completed_phases),
            skipped_not_completed(state),
            total,
        ),
        last_updated: state.timestamps.last_updated.to_rfc3339(),
    }
}

/// The phases a run skipped and never completed (setup left out): the
/// `(N skipped)` of its progress. The team database computes the same
/// count from the stored state (baton-team's run columns).
pub fn skipped_not_completed(state: &WorkspaceState) -> usize {
    state
        .skipped_phases
        .iter()
        .filter(|p| *p != baton_workflow::SETUP && !state.completed_phases.contains(p))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// `done/total`, and how many were skipped when any were (`3/17 (2
/// skipped)`): what `baton ls` and `workspace_list` show.
pub fn progress(done: usize, skipped: usize, total: usize) -> String {
    if skipped == 0 {
        format!("{done}/{total}")
    } else {
        format!("{done}/{total} ({skipped} skipped)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_shows_skipped_phases_as_skipped_never_as_done() {
        assert_eq!(progress(3, 0, 17), "3/17");
        assert_eq!(progress(0, 2, 17), "0/17 (2 skipped)");
        let definition = baton_workflow::Registry::builtin()
            .get("forge")
            .expect("the built-in forge workflow");
        let mut state = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "alpha",
            ".specs/20260101-alpha",
            "test",
            "2026-01-01T00:00:00Z".parse().unwrap(),
        );
        state.completed_phases = vec![baton_workflow::SETUP.into(), "phase-1".into()];
        state.skipped_phases = vec!["phase-4b".into(), "checkpoint-b".into()];
        let total = definition.phases.len();
        assert_eq!(
            row(&state, Some(&*definition)).progress,
            format!("1/{total} (2 skipped)")
        );
    }
}
