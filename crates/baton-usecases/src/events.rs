//! Seed 003's events for what a use case did, published after the write.

use baton_events::{EventKind, Outcome};
/// The event log as adapters read it: a record, and the follower that
/// tails the log across processes (`baton events`, the dashboard).
pub use baton_events::{EventRecord, follow};
use baton_state::{Transition, WorkspaceRef, WorkspaceState};

use crate::Services;

/// Something that happened during one use case, in order: a lifecycle
/// transition, or an event that is not a transition (an agent dispatched, an
/// action completed, a revision requested, a question asked).
#[derive(Debug, Clone)]
pub enum Happened {
    /// A lifecycle transition.
    Transition(Transition),
    /// A lifecycle transition whose event carries a detail (who answered
    /// the question that caused it).
    Annotated(Transition, String),
    /// An event: kind, phase, detail, and an outcome other than the kind's.
    Event(EventKind, String, Option<String>, Option<Outcome>),
}

/// Seed 003's event for each transition. Skips publish nothing.
pub fn events_for(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    transitions: &[Transition],
) -> Vec<EventRecord> {
    transitions
        .iter()
        .filter_map(|t| match t {
            Transition::PhaseStarted { phase } => {
                Some(svc.event(EventKind::PhaseStart, phase, ws, state))
            }
            Transition::PhaseCompleted { phase } => {
                Some(svc.event(EventKind::PhaseComplete, phase, ws, state))
            }
            Transition::PhaseSkipped { .. } => None,
            Transition::PhaseFailed { phase, message } => Some(
                svc.event(EventKind::PhaseFail, phase, ws, state)
                    .with_detail(message),
            ),
            Transition::CheckpointReached { phase } => {
                Some(svc.event(EventKind::Checkpoint, phase, ws, state))
            }
            Transition::Abandoned { phase } => {
                Some(svc.event(EventKind::Abandon, phase, ws, state))
            }
            Transition::WorkflowCompleted { last_phase } => {
                Some(svc.event(EventKind::PipelineComplete, last_phase, ws, state))
            }
        })
        .collect()
}

/// The event records of `happened`, in order.
pub fn records(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    happened: &[Happened],
) -> Vec<EventRecord> {
    let mut events = Vec::new();
    for h in happened {
        match h {
            Happened::Transition(t) => {
                events.extend(events_for(svc, ws, state, std::slice::from_ref(t)))
            }
            Happened::Annotated(t, note) => events.extend(
                events_for(svc, ws, state, std::slice::from_ref(t))
                    .into_iter()
                    .map(|e| {
                        if e.detail.is_none() {
                            e.with_detail(note.clone())
                        } else {
                            e
                        }
                    }),
            ),
            Happened::Event(kind, phase, detail, outcome) => {
                let mut e = svc.event(*kind, phase, ws, state);
                if let Some(d) = detail {
                    e = e.with_detail(d);
                }
                if let Some(o) = outcome {
                    e.outcome = *o;
                }
                events.push(e);
            }
        }
    }
    events
}

/// The wire names of `events`, for replies that list what was published.
pub fn names(events: &[EventRecord]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.event.as_str().to_string())
        .collect()
}

/// The run id the events of `run` (folder name, `.specs/<name>` or absolute
/// path) carry, for reading one run's events.
pub fn run_id_of(svc: &Services, run: &str) -> crate::Result<String> {
    crate::validate::check_text("run", run, 1024)?;
    Ok(svc.store.resolve(run)?.name)
}

/// Whether `run` (folder name, `.specs/<name>` or absolute path) names a run
/// of this repository: its folder is there. A run whose folder is gone (on
/// another branch) is known by its events instead; the caller checks those.
pub fn run_folder_exists(svc: &Services, run: &str) -> crate::Result<bool> {
    crate::validate::check_text("run", run, 1024)?;
    Ok(svc.store.resolve(run)?.dir.is_dir())
}
