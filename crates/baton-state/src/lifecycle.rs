//! The phase lifecycle of seed 003 as one state machine.
//!
//! ```text
//! pending ──start──> in_progress ──complete──> (next phase: pending)
//!    │                   ├──fail──> failed ──start──> in_progress
//!    │                   └──checkpoint──> awaiting_human ──complete──> (next)
//!    ├──checkpoint──> awaiting_human          (checkpoint phases need no start)
//!    └──skip──> (next phase: pending)
//! any non-terminal ──abandon──> abandoned      (terminal: every later call is refused)
//! ```
//!
//! Every operation names the phase it acts on and is refused unless that is
//! the current phase (forge defect A9). Every operation is refused once the
//! workflow has ended (A3). Completing advances past phases the template
//! skips, recording each as a skip. Operations mutate the state in memory and
//! return the [`Transition`]s that happened; the store persists, and the
//! handler publishes events only after the write succeeded.

use chrono::{DateTime, Utc};
use serde::Serialize;

use baton_workflow::{COMPLETED, WorkflowDefinition};

use crate::schema::{HistoryAction, HistoryEntry, PhaseError, PhaseStatus, WorkspaceState};

/// Something that happened to a workspace, for the caller to publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "transition", rename_all = "snake_case")]
pub enum Transition {
    /// A phase started.
    PhaseStarted {
        /// The phase.
        phase: String,
    },
    /// A phase completed.
    PhaseCompleted {
        /// The phase.
        phase: String,
    },
    /// A phase was skipped (no start, no complete).
    PhaseSkipped {
        /// The phase.
        phase: String,
    },
    /// A phase failed.
    PhaseFailed {
        /// The phase.
        phase: String,
        /// Why.
        message: String,
    },
    /// The workflow waits for a person at this phase.
    CheckpointReached {
        /// The phase.
        phase: String,
    },
    /// The workflow was abandoned while at this phase.
    Abandoned {
        /// The phase.
        phase: String,
    },
    /// The last phase completed.
    WorkflowCompleted {
        /// The last phase that completed or was skipped.
        last_phase: String,
    },
}

/// Why a lifecycle operation was refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    /// The phase is not part of the workspace's workflow.
    #[error("unknown phase {phase:?} for workflow {workflow:?}; valid phases: {valid}")]
    UnknownPhase {
        /// The phase given.
        phase: String,
        /// The workflow id.
        workflow: String,
        /// Comma-separated valid ids.
        valid: String,
    },
    /// The phase is not the current one.
    #[error("{action} of {phase:?} refused: the run is at {current:?}, not {phase:?}")]
    NotCurrent {
        /// The operation.
        action: &'static str,
        /// The phase given.
        phase: String,
        /// The current phase.
        current: String,
    },
    /// The current status does not allow the operation.
    #[error("{action} of {phase:?} refused: the phase is {status}, and this needs it {expected}")]
    WrongStatus {
        /// The operation.
        action: &'static str,
        /// The phase.
        phase: String,
        /// Its status.
        status: &'static str,
        /// The statuses that would allow it.
        expected: &'static str,
    },
    /// The workflow has ended.
    #[error(
        "{action} refused: the workflow is {status}; nothing in it changes any more (start a new run)"
    )]
    Ended {
        /// The operation.
        action: &'static str,
        /// `completed` or `abandoned`.
        status: &'static str,
    },
}

/// The lifecycle operations for one workflow definition, at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Lifecycle<'a> {
    definition: &'a WorkflowDefinition,
    now: DateTime<Utc>,
    by: Option<&'a str>,
}

impl<'a> Lifecycle<'a> {
    /// Operations on workspaces running `definition`, stamped with `now`.
    pub fn new(definition: &'a WorkflowDefinition, now: DateTime<Utc>) -> Lifecycle<'a> {
        Lifecycle {
            definition,
            now,
            by: None,
        }
    }

    /// The instant these operations are stamped with.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// The same operations, recording `by` (e.g. `person:terminal`) in each
    /// history entry they write.
    pub fn by(self, by: &'a str) -> Lifecycle<'a> {
        Lifecycle {
            by: Some(by),
            ..self
        }
    }

    /// pending/failed → in_progress. Sets `phaseStarted`, clears `error`.
    pub fn start(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        self.check(state, "start", phase)?;
        expect_status(
            state,
            "start",
            &[PhaseStatus::Pending, PhaseStatus::Failed],
            "pending or failed",
        )?;
        state.current_phase_status = PhaseStatus::InProgress;
        state.timestamps.phase_started = Some(self.now);
        state.error = None;
        self.record(state, phase, HistoryAction::Start, None);
        Ok(vec![Transition::PhaseStarted {
            phase: phase.to_string(),
        }])
    }

    /// in_progress/awaiting_human → next phase (pending), or the end.
    pub fn complete(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        let mut transitions = self.close(state, phase)?;
        self.advance(state, phase, &mut transitions);
        Ok(transitions)
    }

    /// The common part of completing: checks, `completedPhases`, history.
    fn close(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        self.check(state, "complete", phase)?;
        expect_status(
            state,
            "complete",
            &[PhaseStatus::InProgress, PhaseStatus::AwaitingHuman],
            "in_progress or awaiting_human",
        )?;
        if !state.completed_phases.iter().any(|p| p == phase) {
            state.completed_phases.push(phase.to_string());
        }
        self.record(state, phase, HistoryAction::Complete, None);
        Ok(vec![Transition::PhaseCompleted {
            phase: phase.to_string(),
        }])
    }

    /// Like [`Lifecycle::complete`], but moves to `target` (a phase of the
    /// workflow, or `completed`) instead of the default successor: the engine
    /// decides the target from the definition's transitions.
    pub fn complete_to(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
        target: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        if target != COMPLETED && self.definition.phase(target).is_none() {
            return Err(self.unknown(target));
        }
        let mut transitions = self.close(state, phase)?;
        state.timestamps.phase_started = None;
        if target == COMPLETED {
            state.current_phase = COMPLETED.to_string();
            state.current_phase_status = PhaseStatus::Completed;
            transitions.push(Transition::WorkflowCompleted {
                last_phase: phase.to_string(),
            });
        } else if state.skipped_phases.iter().any(|p| p == target) {
            self.record(
                state,
                target,
                HistoryAction::Skip,
                Some("skipped by template"),
            );
            transitions.push(Transition::PhaseSkipped {
                phase: target.to_string(),
            });
            self.advance(state, target, &mut transitions);
        } else {
            state.current_phase = target.to_string();
            state.current_phase_status = PhaseStatus::Pending;
        }
        Ok(transitions)
    }

    /// in_progress → failed, with a message. The phase may be started again.
    pub fn fail(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
        message: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        self.check(state, "fail", phase)?;
        expect_status(state, "fail", &[PhaseStatus::InProgress], "in_progress")?;
        state.current_phase_status = PhaseStatus::Failed;
        state.error = Some(PhaseError {
            phase: phase.to_string(),
            message: message.to_string(),
            timestamp: self.now,
        });
        self.record(state, phase, HistoryAction::Fail, Some(message));
        Ok(vec![Transition::PhaseFailed {
            phase: phase.to_string(),
            message: message.to_string(),
        }])
    }

    /// pending/in_progress → awaiting_human.
    pub fn checkpoint(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        self.check(state, "checkpoint", phase)?;
        expect_status(
            state,
            "checkpoint",
            &[PhaseStatus::Pending, PhaseStatus::InProgress],
            "pending or in_progress",
        )?;
        state.current_phase_status = PhaseStatus::AwaitingHuman;
        self.record(state, phase, HistoryAction::Checkpoint, None);
        Ok(vec![Transition::CheckpointReached {
            phase: phase.to_string(),
        }])
    }

    /// awaiting_human → in_progress: a person answered a question that does
    /// not end the phase (a task's human gate). The phase's one start stands.
    pub fn resume(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
        detail: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        self.check(state, "resume", phase)?;
        expect_status(
            state,
            "resume",
            &[PhaseStatus::AwaitingHuman],
            "awaiting_human",
        )?;
        if state.timestamps.phase_started.is_none() {
            // Only a running phase can be resumed; a checkpoint phase that
            // was never started is completed by its answer instead.
            return Err(LifecycleError::WrongStatus {
                action: "resume",
                phase: phase.to_string(),
                status: "awaiting_human (never started)",
                expected: "awaiting_human after a start",
            });
        }
        state.current_phase_status = PhaseStatus::InProgress;
        self.record(state, phase, HistoryAction::Resume, Some(detail));
        Ok(Vec::new())
    }

    /// pending/failed → skipped; the workflow moves on without running the phase.
    pub fn skip(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
    ) -> Result<Vec<Transition>, LifecycleError> {
        self.check(state, "skip", phase)?;
        expect_status(
            state,
            "skip",
            &[PhaseStatus::Pending, PhaseStatus::Failed],
            "pending or failed",
        )?;
        // A phase that already ran in an earlier trip through a loop stays
        // "completed"; this skip is recorded in the history only, so
        // completedPhases and skippedPhases never overlap.
        if !state.skipped_phases.iter().any(|p| p == phase)
            && !state.completed_phases.iter().any(|p| p == phase)
        {
            state.skipped_phases.push(phase.to_string());
        }
        state.error = None;
        self.record(state, phase, HistoryAction::Skip, None);
        let mut transitions = vec![Transition::PhaseSkipped {
            phase: phase.to_string(),
        }];
        self.advance(state, phase, &mut transitions);
        Ok(transitions)
    }

    /// Any non-terminal status → abandoned. Closes an in-progress phase.
    pub fn abandon(
        &self,
        state: &mut WorkspaceState,
        reason: Option<&str>,
    ) -> Result<Vec<Transition>, LifecycleError> {
        ensure_not_ended(state, "abandon")?;
        let phase = state.current_phase.clone();
        state.current_phase_status = PhaseStatus::Abandoned;
        state.timestamps.phase_started = None;
        self.record(state, &phase, HistoryAction::Abandon, reason);
        Ok(vec![Transition::Abandoned { phase }])
    }

    /// Marks `skips` as skipped for a workspace that has not started yet and
    /// moves the current phase past any of them at the front.
    pub fn apply_skips(
        &self,
        state: &mut WorkspaceState,
        skips: &[String],
    ) -> Result<Vec<Transition>, LifecycleError> {
        ensure_not_ended(state, "configure")?;
        expect_status(state, "configure", &[PhaseStatus::Pending], "pending")?;
        for id in skips {
            if self.definition.phase(id).is_none() {
                return Err(self.unknown(id));
            }
            if !state.skipped_phases.contains(id) {
                state.skipped_phases.push(id.clone());
            }
        }
        let mut transitions = Vec::new();
        let current = state.current_phase.clone();
        if state.skipped_phases.contains(&current) {
            self.record(
                state,
                &current,
                HistoryAction::Skip,
                Some("skipped by template"),
            );
            transitions.push(Transition::PhaseSkipped {
                phase: current.clone(),
            });
            self.advance(state, &current, &mut transitions);
        }
        Ok(transitions)
    }

    fn unknown(&self, phase: &str) -> LifecycleError {
        LifecycleError::UnknownPhase {
            phase: phase.to_string(),
            workflow: self.definition.id.clone(),
            valid: self
                .definition
                .phases
                .iter()
                .map(|p| p.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Common checks: not ended, phase known, phase current.
    /// Checks, without changing anything, that `phase` is the current phase
    /// and in progress — what a report of its work requires. Errors name
    /// `action` (e.g. `report`).
    pub fn ensure_running(
        &self,
        state: &WorkspaceState,
        action: &'static str,
        phase: &str,
    ) -> Result<(), LifecycleError> {
        self.check(state, action, phase)?;
        expect_status(state, action, &[PhaseStatus::InProgress], "in_progress")
    }

    fn check(
        &self,
        state: &WorkspaceState,
        action: &'static str,
        phase: &str,
    ) -> Result<(), LifecycleError> {
        ensure_not_ended(state, action)?;
        if self.definition.phase(phase).is_none() {
            return Err(self.unknown(phase));
        }
        if state.current_phase != phase {
            return Err(LifecycleError::NotCurrent {
                action,
                phase: phase.to_string(),
                current: state.current_phase.clone(),
            });
        }
        Ok(())
    }

    /// Moves to the first phase after `from` that is not skipped, recording
    /// each skipped one; past the last phase the workflow is completed.
    fn advance(&self, state: &mut WorkspaceState, from: &str, transitions: &mut Vec<Transition>) {
        state.timestamps.phase_started = None;
        let mut last = from.to_string();
        for next in self.definition.phases_after(from) {
            if state.skipped_phases.iter().any(|p| p == &next.id) {
                self.record(
                    state,
                    &next.id,
                    HistoryAction::Skip,
                    Some("skipped by template"),
                );
                transitions.push(Transition::PhaseSkipped {
                    phase: next.id.clone(),
                });
                last = next.id.clone();
                continue;
            }
            state.current_phase = next.id.clone();
            state.current_phase_status = PhaseStatus::Pending;
            return;
        }
        state.current_phase = COMPLETED.to_string();
        state.current_phase_status = PhaseStatus::Completed;
        transitions.push(Transition::WorkflowCompleted { last_phase: last });
    }

    fn record(
        &self,
        state: &mut WorkspaceState,
        phase: &str,
        action: HistoryAction,
        detail: Option<&str>,
    ) {
        state.history.push(HistoryEntry {
            at: self.now,
            phase: phase.to_string(),
            action,
            detail: detail.map(str::to_string),
            by: self.by.map(str::to_string),
        });
    }
}

fn ensure_not_ended(state: &WorkspaceState, action: &'static str) -> Result<(), LifecycleError> {
    if state.current_phase_status.is_terminal() {
        return Err(LifecycleError::Ended {
            action,
            status: state.current_phase_status.as_str(),
        });
    }
    Ok(())
}

fn expect_status(
    state: &WorkspaceState,
    action: &'static str,
    allowed: &[PhaseStatus],
    expected: &'static str,
) -> Result<(), LifecycleError> {
    if allowed.contains(&state.current_phase_status) {
        Ok(())
    } else {
        Err(LifecycleError::WrongStatus {
            action,
            phase: state.current_phase.clone(),
            status: state.current_phase_status.as_str(),
            expected,
        })
    }
}
