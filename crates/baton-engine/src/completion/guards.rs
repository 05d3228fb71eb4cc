//! Guards of the standalone lifecycle tools (forge-pipeline-spec §8.1 rules
//! that apply to a generic workflow). Each returns the first violation.

use baton_state::{PhaseStatus, WorkspaceState};
use baton_workflow::{PhaseKind, WorkflowDefinition};
use serde::Serialize;

use crate::WorkspaceFiles;

/// A refused call: which rule, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuardViolation {
    /// Stable rule id.
    pub rule: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// `phase_start`: a phase that works through tasks needs registered tasks.
pub fn check_start(
    state: &WorkspaceState,
    definition: &WorkflowDefinition,
    phase: &str,
) -> Result<(), GuardViolation> {
    if let Some(p) = definition.phase(phase)
        && p.requires_tasks
        && state.tasks.is_empty()
    {
        return Err(GuardViolation {
            rule: "tasks_required",
            message: format!(
                "{phase} works through tasks and none are registered; register the tasks first"
            ),
        });
    }
    if definition
        .phase(phase)
        .is_some_and(|p| p.kind.waits_for_human())
    {
        return Err(GuardViolation {
            rule: "human_phase_not_startable",
            message: format!(
                "{phase} waits for a person and is not started: call checkpoint to present it"
            ),
        });
    }
    Ok(())
}

/// `phase_complete`: artifacts present, checkpoints actually presented, no
/// revision pending.
pub fn check_complete(
    state: &WorkspaceState,
    definition: &WorkflowDefinition,
    phase: &str,
    files: &dyn WorkspaceFiles,
) -> Result<(), GuardViolation> {
    let Some(p) = definition.phase(phase) else {
        return Ok(()); // the lifecycle reports unknown phases
    };
    if p.kind.waits_for_human() && state.current_phase_status != PhaseStatus::AwaitingHuman {
        return Err(GuardViolation {
            rule: "checkpoint_not_presented",
            message: format!(
                "{phase} is a human checkpoint: call checkpoint for it and let a person answer before completing it"
            ),
        });
    }
    check_no_revision_pending(state, phase)?;
    let missing: Vec<&str> = p
        .artifacts
        .iter()
        .map(String::as_str)
        .filter(|a| !files.is_nonempty_file(a))
        .collect();
    if !missing.is_empty() {
        return Err(GuardViolation {
            rule: "artifact_missing",
            message: format!(
                "{phase} must produce {} in the workspace before it completes (missing or empty)",
                missing.join(", ")
            ),
        });
    }
    Ok(())
}

/// A phase with a revision pending (a person asked for one at its
/// checkpoint) completes only once the revision is done.
pub fn check_no_revision_pending(
    state: &WorkspaceState,
    phase: &str,
) -> Result<(), GuardViolation> {
    if state
        .checkpoint_revision_pending
        .get(phase)
        .copied()
        .unwrap_or(false)
    {
        return Err(GuardViolation {
            rule: "revision_pending",
            message: format!("{phase} has a revision pending; finish the revision first"),
        });
    }
    Ok(())
}

/// Whether a phase is of a kind that waits for a person.
pub fn is_human_phase(definition: &WorkflowDefinition, phase: &str) -> bool {
    definition
        .phase(phase)
        .is_some_and(|p| matches!(p.kind, PhaseKind::Checkpoint | PhaseKind::HumanGate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn def() -> WorkflowDefinition {
        serde_json::from_value(serde_json::json!({
            "id": "t", "label": "T",
            "phases": [
                {"id": "a", "label": "A", "kind": "agent", "artifacts": ["a.md", "notes/b.md"]},
                {"id": "cp", "label": "CP", "kind": "checkpoint"},
                {"id": "impl", "label": "I", "kind": "agent", "requires_tasks": true}
            ]
        }))
        .unwrap()
    }

    fn state(phase: &str, status: PhaseStatus) -> WorkspaceState {
        let mut s = WorkspaceState::fresh("t", "a", "x", "x", "t", chrono::Utc::now());
        s.current_phase = phase.into();
        s.current_phase_status = status;
        s
    }

    #[test]
    fn completion_needs_every_artifact() {
        let d = def();
        let s = state("a", PhaseStatus::InProgress);
        let mut files = BTreeSet::new();
        files.insert("a.md".to_string());
        let v = check_complete(&s, &d, "a", &files).unwrap_err();
        assert_eq!(v.rule, "artifact_missing");
        assert!(v.message.contains("notes/b.md") && !v.message.contains("a.md,"));
        files.insert("notes/b.md".to_string());
        assert!(check_complete(&s, &d, "a", &files).is_ok());
    }

    #[test]
    fn checkpoints_complete_only_after_being_presented_and_without_pending_revision() {
        let d = def();
        let none = BTreeSet::new();
        let pending = state("cp", PhaseStatus::Pending);
        assert_eq!(
            check_complete(&pending, &d, "cp", &none).unwrap_err().rule,
            "checkpoint_not_presented"
        );
        let mut waiting = state("cp", PhaseStatus::AwaitingHuman);
        assert!(check_complete(&waiting, &d, "cp", &none).is_ok());
        waiting
            .checkpoint_revision_pending
            .insert("cp".into(), true);
        assert_eq!(
            check_complete(&waiting, &d, "cp", &none).unwrap_err().rule,
            "revision_pending"
        );
    }

    #[test]
    fn task_phases_need_tasks_and_human_phases_are_not_started() {
        let d = def();
        let mut s = state("impl", PhaseStatus::Pending);
        assert_eq!(
            check_start(&s, &d, "impl").unwrap_err().rule,
            "tasks_required"
        );
        s.tasks.insert("1".into(), Default::default());
        assert!(check_start(&s, &d, "impl").is_ok());
        let cp = state("cp", PhaseStatus::Pending);
        assert_eq!(
            check_start(&cp, &d, "cp").unwrap_err().rule,
            "human_phase_not_startable"
        );
    }
}
