//! Is every task of a phase worked through tasks done? A task counts as
//! implemented only with its non-empty `impl-N.md` on disk, and as reviewed
//! only with a passing `review-N.md` (or a person's acceptance or skip).

use std::collections::BTreeMap;

use baton_state::{Task, WorkspaceState};
use baton_workflow::PhaseDefinition;

use super::guards::GuardViolation;
use super::verdict::{Verdict, parse_review};
use crate::WorkspaceFiles;
use crate::pipeline::tasks::ordered_keys;

/// Review statuses that close a task's review.
pub const REVIEW_CLOSED: [&str; 4] = [
    "completed_pass",
    "completed_pass_with_notes",
    "accepted_by_human",
    "skipped_by_human",
];

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
        if task.impl_status != "completed" {
            open.push(format!("task {key} is not implemented"));
        } else if task.execution_mode != "human_gate"
            && task.review_status != "skipped_by_human"
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
    let mut open = Vec::new();
    for key in ordered_keys(&state.tasks) {
        let task = &state.tasks[&key];
        if task.execution_mode == "human_gate" {
            continue;
        }
        if !REVIEW_CLOSED.contains(&task.review_status.as_str()) {
            open.push(format!("task {key} has no passing review"));
            continue;
        }
        if matches!(
            task.review_status.as_str(),
            "completed_pass" | "completed_pass_with_notes"
        ) {
            let file = format!("review-{key}.md");
            let passing = files
                .read(&file)
                .map(|text| parse_review(&text, &Verdict::IMPL_REVIEW).verdict)
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
            t.impl_status == "completed"
                && t.execution_mode != "human_gate"
                && !matches!(
                    t.review_status.as_str(),
                    "completed_pass" | "completed_pass_with_notes" | "accepted_by_human"
                )
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
        if task.execution_mode != "human_gate"
            && task.impl_status == "completed"
            && task.review_status != "skipped_by_human"
            && !files.is_nonempty_file(&format!("impl-{key}.md"))
        {
            task.impl_status = "pending".into();
        }
    }
    tasks
}

/// The task registry with every review recorded as passed whose
/// `review-N.md` is missing or does not pass reset to not reviewed.
pub fn reviewed_on_disk(
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> BTreeMap<String, Task> {
    let mut tasks = state.tasks.clone();
    for (key, task) in tasks.iter_mut() {
        if matches!(
            task.review_status.as_str(),
            "completed_pass" | "completed_pass_with_notes"
        ) {
            let passing = files
                .read(&format!("review-{key}.md"))
                .and_then(|t| parse_review(&t, &Verdict::IMPL_REVIEW).verdict)
                .is_some_and(Verdict::is_positive);
            if !passing {
                task.review_status = String::new();
            }
        }
    }
    tasks
}
