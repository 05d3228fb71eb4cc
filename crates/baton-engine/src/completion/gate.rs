//! The one gatekeeper: what a phase must show before it completes, checked
//! the same way on every path that completes a phase — the pipeline loop,
//! `pipeline_report_result`, the recovery tools, `completePhase`.
//!
//! * Its artifacts exist, are non-empty, are fresh (written during this
//!   visit: not before the phase started, and not left unchanged from the
//!   previous visit) and pass the phase's structure rule (a design has a
//!   section, a task list parses, a review states a verdict).
//! * A phase that works through tasks has every task done: each implemented
//!   task has its non-empty `impl-N.md`, each reviewed task a passing
//!   `review-N.md` (or a person accepted or skipped it).
//! * No revision is pending.
//! * Questions (checkpoints, human gates) never complete here: a person
//!   answers them.

use baton_state::WorkspaceState;
use baton_workflow::{PerTask, PhaseDefinition, WorkflowDefinition};

use super::artifacts::check_phase;
use super::freshness::is_fresh;
use super::guards::{GuardViolation, check_no_revision_pending};
use super::tasks::{check_implemented, check_reviewed};
use crate::WorkspaceFiles;

/// Checks that `phase` may complete now.
pub fn check_completion(
    definition: &WorkflowDefinition,
    state: &WorkspaceState,
    phase: &str,
    files: &dyn WorkspaceFiles,
) -> Result<(), GuardViolation> {
    let Some(p) = definition.phase(phase) else {
        return Ok(()); // the lifecycle reports unknown phases
    };
    if p.kind.waits_for_human() && definition.answerer(phase) == baton_workflow::Answerer::Person {
        return Err(GuardViolation {
            rule: "person_only",
            message: format!(
                "{phase} is a question for a person: it completes when a person answers it (`baton answer <workspace> <option>` in a terminal, the dashboard, or the client's own prompt), never by a phase tool"
            ),
        });
    }
    check_no_revision_pending(state, phase)?;
    check_artifacts(p, state, files)?;
    match p.per_task {
        Some(PerTask::Implement) => check_implemented(p, state, files),
        Some(PerTask::Review) => check_reviewed(p, state, files),
        None => Ok(()),
    }
}

/// The phase's artifacts: present, non-empty, fresh, and passing their
/// rule (the definition's `artifact_rules`, or the one the phase implies).
pub fn check_artifacts(
    phase: &PhaseDefinition,
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> Result<(), GuardViolation> {
    for artifact in &phase.artifacts {
        if !files.is_nonempty_file(artifact) {
            return Err(GuardViolation {
                rule: "artifact_missing",
                message: format!(
                    "{} must produce {artifact} in the workspace before it completes (missing or empty); write it, then report again",
                    phase.id
                ),
            });
        }
        if !is_fresh(artifact, state, files) {
            return Err(GuardViolation {
                rule: "artifact_stale",
                message: format!(
                    "{artifact} was not written during this visit of {} (it is older than the phase's start, or unchanged since the previous visit); write it for this visit, then report again",
                    phase.id
                ),
            });
        }
    }
    if phase.per_task.is_none()
        && let Some(bad) = check_phase(phase, state, files)
            .into_iter()
            .find(|c| !c.valid)
    {
        return Err(GuardViolation {
            rule: "artifact_invalid",
            message: format!(
                "{} cannot complete: {}",
                phase.id,
                bad.error
                    .unwrap_or_else(|| format!("{} is not valid", bad.file))
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_state::Task;
    use baton_workflow::Registry;
    use std::collections::BTreeMap;

    fn forge() -> std::sync::Arc<WorkflowDefinition> {
        Registry::builtin().get("forge").unwrap()
    }

    fn state(phase: &str) -> WorkspaceState {
        let mut s = WorkspaceState::fresh(
            "forge",
            phase,
            "x",
            "x",
            "t",
            "2026-01-01T00:00:00Z".parse().unwrap(),
        );
        s.current_phase_status = baton_state::PhaseStatus::InProgress;
        s
    }

    fn task(impl_status: &str, review: &str, mode: &str) -> Task {
        Task {
            title: "t".into(),
            execution_mode: mode.into(),
            impl_status: impl_status.into(),
            review_status: review.into(),
            ..Task::default()
        }
    }

    fn files(names: &[(&str, &str)]) -> BTreeMap<String, String> {
        names
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn implementation_completes_only_with_every_task_and_its_file() {
        let def = forge();
        let mut s = state("phase-5");
        assert_eq!(
            check_completion(&def, &s, "phase-5", &files(&[]))
                .unwrap_err()
                .rule,
            "tasks_required"
        );
        s.tasks
            .insert("1".into(), task("completed", "", "sequential"));
        s.tasks
            .insert("2".into(), task("pending", "", "sequential"));
        s.tasks
            .insert("3".into(), task("completed", "done_by_human", "human_gate"));
        let f = files(&[("impl-1.md", "done")]);
        let err = check_completion(&def, &s, "phase-5", &f).unwrap_err();
        assert_eq!(err.rule, "tasks_incomplete");
        assert!(
            err.message.contains("task 2 is not implemented"),
            "{}",
            err.message
        );
        s.tasks.get_mut("2").unwrap().impl_status = "completed".into();
        // Recorded as implemented, but its file is gone: not done.
        let err = check_completion(&def, &s, "phase-5", &f).unwrap_err();
        assert!(
            err.message.contains("task 2 has no impl-2.md"),
            "{}",
            err.message
        );
        let f = files(&[("impl-1.md", "done"), ("impl-2.md", "done")]);
        assert!(check_completion(&def, &s, "phase-5", &f).is_ok());
    }

    #[test]
    fn code_review_completes_only_with_passing_reviews_on_disk() {
        let def = forge();
        let mut s = state("phase-6");
        s.tasks.insert(
            "1".into(),
            task("completed", "completed_pass", "sequential"),
        );
        s.tasks.insert(
            "2".into(),
            task("completed", "accepted_by_human", "sequential"),
        );
        let none = files(&[]);
        let err = check_completion(&def, &s, "phase-6", &none).unwrap_err();
        assert!(
            err.message.contains("review-1.md is missing"),
            "{}",
            err.message
        );
        let failing = files(&[("review-1.md", "## Verdict: FAIL\n")]);
        assert!(check_completion(&def, &s, "phase-6", &failing).is_err());
        let passing = files(&[("review-1.md", "## Verdict: PASS\n")]);
        assert!(check_completion(&def, &s, "phase-6", &passing).is_ok());
        s.tasks.get_mut("2").unwrap().review_status = "completed_fail".into();
        assert!(check_completion(&def, &s, "phase-6", &passing).is_err());
    }

    #[test]
    fn artifacts_must_exist_pass_their_rule_and_questions_never_complete_here() {
        let def = forge();
        let s = state("phase-3");
        assert_eq!(
            check_completion(&def, &s, "phase-3", &files(&[]))
                .unwrap_err()
                .rule,
            "artifact_missing"
        );
        let bad = files(&[("design.md", "# Design\nno sections\n")]);
        assert_eq!(
            check_completion(&def, &s, "phase-3", &bad)
                .unwrap_err()
                .rule,
            "artifact_invalid"
        );
        let good = files(&[("design.md", "# Design\n\n## Approach\n")]);
        assert!(check_completion(&def, &s, "phase-3", &good).is_ok());
        let cp = state("checkpoint-a");
        assert_eq!(
            check_completion(&def, &cp, "checkpoint-a", &good)
                .unwrap_err()
                .rule,
            "person_only"
        );
    }
}
