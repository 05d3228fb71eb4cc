//! Is every task of a phase worked through tasks done? A task counts as
//! implemented only with its non-empty `impl-N.md` on disk, and as reviewed
//! only with a passing `review-N.md` (or a person's acceptance or skip).

use std::collections::BTreeMap;

use baton_state::{ExecutionMode, ImplStatus, ReviewStatus, Task, WorkspaceState};
use baton_workflow::PhaseDefinition;

use super::guards::GuardViolation;
use super::verdict::{Verdict, parse_review};
use crate::WorkspaceFiles;
use crate::pipeline::tasks::ordered_keys;

/// A `per_task: implement` phase: every task implemented, each with its `impl-N.md`.
pub(crate) fn check_implemented(
    phase: &PhaseDefinition,
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> Result<(), GuardViolation> {
    if phase.requires_tasks && state.tasks.is_empty() {
        return Err(GuardViolation {
            rule: "tasks_required",
            message: format!("{} works through tasks and none are registered", phase.id),
        });
    }
    let mut open = Vec::new();
    for key in ordered_keys(&state.tasks) {
        let task = &state.tasks[&key];
        if task.impl_status != ImplStatus::Completed {
            open.push(format!("task {key} is not implemented"));
        } else if task.execution_mode != ExecutionMode::HumanGate
            && task.review_status != ReviewStatus::SkippedByHuman
            && !files.is_nonempty_file(&format!("impl-{key}.md"))
        {
            open.push(format!("task {key} has no impl-{key}.md"));
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(GuardViolation {
            rule: "tasks_incomplete",
            message: format!("{} cannot complete: {}", phase.id, open.join("; ")),
        })
    }
}

/// A `per_task: review` phase: every implemented task with a passing review on disk.
pub(crate) fn check_reviewed(
    phase: &PhaseDefinition,
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> Result<(), GuardViolation> {
    let vocabulary = Verdict::vocabulary(&phase.verdicts);
    let mut open = Vec::new();
    for key in ordered_keys(&state.tasks) {
        let task = &state.tasks[&key];
        if task.execution_mode == ExecutionMode::HumanGate {
            continue;
        }
        if !task.review_status.closed() {
            open.push(format!("task {key} has no passing review"));
            continue;
        }
        if task.review_status.passed() {
            let file = format!("review-{key}.md");
            let passing = files
                .read(&file)
                .map(|text| parse_review(&text, &vocabulary).verdict)
                .is_some_and(|v| v.is_some_and(Verdict::is_positive));
            if !passing {
                open.push(format!("{file} is missing or does not pass"));
            }
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(GuardViolation {
            rule: "tasks_incomplete",
            message: format!("{} cannot complete: {}", phase.id, open.join("; ")),
        })
    }
}

/// Tasks implemented by an agent whose review has not passed.
pub fn tasks_to_review(state: &WorkspaceState) -> Vec<String> {
    ordered_keys(&state.tasks)
        .into_iter()
        .filter(|k| {
            let t = &state.tasks[k];
            t.impl_status == ImplStatus::Completed
                && t.execution_mode != ExecutionMode::HumanGate
                && !t.review_status.passed()
                && t.review_status != ReviewStatus::AcceptedByHuman
        })
        .collect()
}

/// The task registry with every non-gate task whose `impl-N.md` is missing
/// or empty reset to not implemented.
pub fn implemented_on_disk(
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> BTreeMap<String, Task> {
    let mut tasks = state.tasks.clone();
    for (key, task) in tasks.iter_mut() {
        if task.execution_mode != ExecutionMode::HumanGate
            && task.impl_status == ImplStatus::Completed
            && task.review_status != ReviewStatus::SkippedByHuman
            && !files.is_nonempty_file(&format!("impl-{key}.md"))
        {
            task.impl_status = ImplStatus::Pending;
        }
    }
    tasks
}

/// The task registry with every review recorded as passed whose
/// `review-N.md` is missing or does not pass (read with the review phase's
/// `vocabulary`) reset to not reviewed.
pub fn reviewed_on_disk(
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
    vocabulary: &[Verdict],
) -> BTreeMap<String, Task> {
    let mut tasks = state.tasks.clone();
    for (key, task) in tasks.iter_mut() {
        if task.review_status.passed() {
            let passing = files
                .read(&format!("review-{key}.md"))
                .and_then(|t| parse_review(&t, vocabulary).verdict)
                .is_some_and(Verdict::is_positive);
            if !passing {
                task.review_status = ReviewStatus::NotReviewed;
            }
        }
    }
    tasks
}
