//! The team side of [`Services::after_write`]: what a state write queues
//! for the team database (the run's row, its events, its history record).

use baton_events::EventRecord;
use baton_state::{PhaseStatus, WorkspaceRef, WorkspaceState};
use baton_team::RunWrite;

use crate::services::Services;

/// Queues what a state write did for the team database: the run's row as
/// written, its events and, when the write ended the run, its history
/// record. Called after the file write (the run's machine is the
/// authority); never fails the call (a write that cannot even be queued
/// is logged).
pub fn record_write(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    events: &[EventRecord],
    history: Option<&baton_history::RunRecord>,
) {
    let Some(team) = svc.team.get() else {
        return;
    };
    let write = run_write(svc, ws, state, events, history);
    if let Err(e) = team.record(write) {
        tracing::warn!("team: the write of {} was not queued: {e}", ws.display);
    }
}

/// The row, events and record of one write.
pub fn run_write(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    events: &[EventRecord],
    history: Option<&baton_history::RunRecord>,
) -> RunWrite {
    let waiting = waits_for_person(svc, state)
        .then(|| {
            crate::pipeline::answer::pending_question(svc, &ws.display)
                .ok()
                .flatten()
        })
        .flatten()
        .and_then(|q| serde_json::to_value(q).ok());
    RunWrite {
        workspace: ws.name.clone(),
        display: ws.display.clone(),
        revision: state
            .timestamps
            .last_updated
            .timestamp_nanos_opt()
            .unwrap_or(i64::MAX),
        workflow: state.workflow.clone(),
        spec_name: state.spec_name.clone(),
        issue: state.issue_number.clone(),
        branch: state.branch.clone(),
        phase: state.current_phase.clone(),
        status: state.current_phase_status.as_str().to_string(),
        active: !state.current_phase_status.is_terminal(),
        waiting,
        done: progress_done(state),
        total: svc
            .workflows
            .get(&state.workflow)
            .map_or(0, |d| d.phases.len() as u32),
        created: state.timestamps.created,
        updated: state.timestamps.last_updated,
        state: serde_json::to_string(state).unwrap_or_default(),
        events: events
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect(),
        history: history.and_then(|r| serde_json::to_value(r).ok()),
    }
}

fn progress_done(state: &WorkspaceState) -> u32 {
    state
        .completed_phases
        .iter()
        .chain(&state.skipped_phases)
        .filter(|p| *p != baton_workflow::SETUP)
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u32
}

fn waits_for_person(svc: &Services, state: &WorkspaceState) -> bool {
    match state.current_phase_status {
        PhaseStatus::AwaitingHuman => true,
        // The run's pinned definition (its state carries it), never the
        // project's current file.
        PhaseStatus::Pending => svc.run_definition(state).is_ok_and(|d| {
            baton_engine::completion::guards::is_human_phase(&d, &state.current_phase)
        }),
        _ => false,
    }
}
