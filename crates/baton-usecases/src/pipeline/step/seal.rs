//! The run's final form, sealed into state.json before the commit phase's
//! commands are handed out, so the commit holds the state as it will be
//! when the run is done (`git status` is clean afterwards).

use chrono::Utc;

use baton_engine::plan::Plan;
use baton_state::{CommandGuard, Finish, Lifecycle, PhaseStatus, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use super::context::StepContext;

/// Seals the run's final state into state.json before the commit phase's
/// commands are handed out, so the commit holds the state as it will be
/// when the run is done (`git status` is clean afterwards).
pub(crate) fn seal_if_committing(
    ctx: &StepContext<'_>,
    state: &WorkspaceState,
    plan: &Plan,
    sealed: bool,
) -> Finish {
    let Plan::Exec { phase, .. } = plan else {
        return Finish::Plain;
    };
    if sealed || !ctx.def.phase(phase).is_some_and(|p| p.commits) {
        return Finish::Plain;
    }
    match predict_final(ctx.def, state, ctx.now) {
        Some(final_form) => Finish::Seal(Box::new(final_form)),
        None => Finish::Plain,
    }
}

/// The state as it will be once the commit phase and the command phases
/// after it have run: each completed, the run completed. `None` when a
/// phase after the commit needs an agent or a person (then nothing is
/// sealed).
pub fn predict_final(
    def: &WorkflowDefinition,
    state: &WorkspaceState,
    now: chrono::DateTime<Utc>,
) -> Option<WorkspaceState> {
    let lc = Lifecycle::new(def, now);
    let mut s = state.clone();
    for _ in 0..def.phases.len() + 1 {
        if s.current_phase_status.is_terminal() {
            s.command_step = 0;
            s.command_guard = CommandGuard::Check;
            s.last_dispatch = None;
            return Some(s);
        }
        let phase = s.current_phase.clone();
        let p = def.phase(&phase)?;
        if p.kind != baton_workflow::PhaseKind::Command {
            return None;
        }
        if matches!(
            s.current_phase_status,
            PhaseStatus::Pending | PhaseStatus::Failed
        ) {
            lc.start(&mut s, &phase).ok()?;
        }
        let next = def.default_successor(&phase, &s.skipped_phases);
        lc.complete_to(&mut s, &phase, &next).ok()?;
    }
    None
}
