//! Phases worked through tasks: registering the task list, the fan-out of the
//! next ready batch of implementations, the per-task reviews, a task a
//! person does, and tasks that can never start.

use std::collections::BTreeMap;

use baton_state::{ExecutionMode, ImplStatus, ReviewStatus, Task, WorkspaceState};
use baton_workflow::{Answerer, PhaseDefinition};

use super::questions::options;
use super::spawn::{agent, existing, model};
use super::types::{ParallelTask, Plan, PlanError, PlanInput, Question, QuestionKind, Spawn};
use crate::completion::tasks::{implemented_on_disk, reviewed_on_disk, tasks_to_review};
use crate::completion::verdict::Verdict;
use crate::pipeline::tasks::{next_batch, ordered_keys};

/// The stub tasks.md written when the decomposition phase was skipped: the
/// whole design as one sequential task.
pub const SINGLE_TASK_STUB: &str = "# Tasks\n\n## Task 1: Implement\n\nApply all changes described in design.md as a single implementation unit.\n\nmode: sequential\n";

/// The next step of a `per_task: implement` phase.
pub(crate) fn implement(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Result<Plan, PlanError> {
    if state.tasks.is_empty() {
        let task_list = input.definition.task_list();
        if input.files.file(task_list).is_some() {
            return Ok(Plan::RegisterTasks {
                phase: phase.id.clone(),
            });
        }
        let decomposer_skipped = input
            .definition
            .task_list_authors()
            .all(|p| state.skipped_phases.contains(&p.id));
        if decomposer_skipped {
            return Ok(Plan::WriteFile {
                phase: phase.id.clone(),
                file: task_list.to_string(),
                content: SINGLE_TASK_STUB.into(),
            });
        }
        return Err(PlanError(format!(
            "{} needs {task_list}, which does not exist; the task decomposition must run first",
            phase.id
        )));
    }
    // A task counts as implemented only with its impl-N.md on disk: a task
    // recorded as done whose file is gone is implemented again.
    let tasks = implemented_on_disk(state, input.files);
    let batch = next_batch(&tasks);
    let Some(first) = batch.first() else {
        let stuck: Vec<String> = ordered_keys(&tasks)
            .into_iter()
            .filter(|k| tasks[k].impl_status != ImplStatus::Completed)
            .collect();
        if !stuck.is_empty() {
            return Ok(Plan::Ask(stuck_tasks(input, state, phase, &tasks, stuck)));
        }
        return Ok(Plan::CompletePhase {
            phase: phase.id.clone(),
        });
    };
    let state = &WorkspaceState {
        tasks,
        ..state.clone()
    };
    if state.tasks[first].execution_mode == ExecutionMode::HumanGate {
        return Ok(Plan::Ask(task_gate(phase, state, first)));
    }
    let retry_inputs = |key: &str| -> Vec<String> {
        let review = format!("review-{key}.md");
        let failed = state.tasks[key].review_status == ReviewStatus::Fail;
        if failed && input.files.file(&review).is_some() {
            vec![review]
        } else {
            Vec::new()
        }
    };
    let base = existing(input.files, &phase.inputs, None);
    let model = model(input.definition, phase);
    if batch.len() == 1 {
        let mut inputs = base;
        inputs.extend(retry_inputs(first));
        let retry = state.tasks[first].review_status == ReviewStatus::Fail;
        return Ok(Plan::Spawn(Spawn {
            phase: phase.id.clone(),
            agent: agent(state, phase),
            model,
            inputs,
            output: Some(format!("impl-{first}.md")),
            task: Some(first.clone()),
            parallel: Vec::new(),
            summary: if retry {
                format!("Retry implementation for task {first} after review failure.")
            } else {
                format!("Implement task {first}.")
            },
        }));
    }
    Ok(Plan::Spawn(Spawn {
        phase: phase.id.clone(),
        agent: agent(state, phase),
        model,
        inputs: base,
        output: None,
        task: None,
        parallel: batch
            .iter()
            .map(|k| ParallelTask {
                id: k.clone(),
                input_files: retry_inputs(k),
                output_file: format!("impl-{k}.md"),
            })
            .collect(),
        summary: format!("Implement tasks {} in parallel.", batch.join(", ")),
    }))
}

/// Why a task can never become ready, if it cannot: a dependency that does
/// not exist, or one that cannot finish itself.
pub fn blocked_reason(tasks: &BTreeMap<String, Task>, key: &str) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![key.to_string()];
    while let Some(k) = stack.pop() {
        if !seen.insert(k.clone()) {
            continue;
        }
        let task = tasks.get(&k)?;
        for d in task.depends_on.iter().flatten() {
            let d = d.to_string();
            match tasks.get(&d) {
                None => {
                    return Some(if k == key {
                        format!("it depends on task {d}, which does not exist")
                    } else {
                        format!(
                            "it waits for task {k}, which depends on task {d}, which does not exist"
                        )
                    });
                }
                Some(dep) if dep.impl_status != ImplStatus::Completed => stack.push(d),
                Some(_) => {}
            }
        }
    }
    None
}

fn stuck_tasks(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
    tasks: &BTreeMap<String, Task>,
    stuck: Vec<String>,
) -> Question {
    let mut message = format!(
        "## {} — tasks that can never start\n\nThese tasks are not implemented and can never become ready:\n",
        phase.label
    );
    for k in &stuck {
        let why = blocked_reason(tasks, k)
            .unwrap_or_else(|| "its dependencies cannot finish".to_string());
        let title = tasks.get(k).map(|t| t.title.as_str()).unwrap_or("");
        message.push_str(&format!("- Task {k} ({title}): {why}\n"));
    }
    // Revising means sending the task list back to its author.
    let author = input
        .definition
        .task_list_authors()
        .find(|p| !state.skipped_phases.contains(&p.id))
        .map(|p| p.id.clone());
    let mut opts = vec!["skip"];
    if author.is_some() {
        opts.push("revise");
    }
    opts.push("abandon");
    message.push_str(&format!(
        "\nAnswer `skip` to go on without them{}, or `abandon`.",
        if author.is_some() {
            ", `revise: <what to change>` to send the task list back"
        } else {
            ""
        }
    ));
    Question {
        phase: phase.id.clone(),
        name: format!("{}-stuck-tasks", phase.id),
        message,
        options: options(&opts),
        kind: QuestionKind::StuckTasks { tasks: stuck },
        answered_by: Answerer::Person,
    }
}

/// The next step of a `per_task: review` phase.
pub(crate) fn review_tasks(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Plan {
    let state = &WorkspaceState {
        tasks: reviewed_on_disk(state, input.files, &Verdict::vocabulary(&phase.verdicts)),
        ..state.clone()
    };
    let keys = tasks_to_review(state);
    let base = existing(input.files, &phase.inputs, None);
    let model = model(input.definition, phase);
    match keys.as_slice() {
        [] => Plan::CompletePhase {
            phase: phase.id.clone(),
        },
        [key] => {
            let mut inputs = vec![format!("impl-{key}.md")];
            inputs.extend(base);
            Plan::Spawn(Spawn {
                phase: phase.id.clone(),
                agent: agent(state, phase),
                model,
                inputs,
                output: Some(format!("review-{key}.md")),
                task: Some(key.clone()),
                parallel: Vec::new(),
                summary: format!("Review implementation for task {key}."),
            })
        }
        _ => Plan::Spawn(Spawn {
            phase: phase.id.clone(),
            agent: agent(state, phase),
            model,
            inputs: base,
            output: None,
            task: None,
            parallel: keys
                .iter()
                .map(|k| ParallelTask {
                    id: k.clone(),
                    input_files: vec![format!("impl-{k}.md")],
                    output_file: format!("review-{k}.md"),
                })
                .collect(),
            summary: format!("Review tasks {} in parallel.", keys.join(", ")),
        }),
    }
}

/// The question of a task a person does: done, skip, abandon.
pub(crate) fn task_gate(phase: &PhaseDefinition, state: &WorkspaceState, task: &str) -> Question {
    let title = state
        .tasks
        .get(task)
        .map(|t| t.title.clone())
        .unwrap_or_default();
    Question {
        phase: phase.id.clone(),
        name: format!("task-{task}"),
        message: format!(
            "Task {task} requires human action: {title}\n\nDo it outside the pipeline, then choose `done`; `skip` marks it without action; `abandon` stops the run."
        ),
        options: options(&["done", "skip", "abandon"]),
        kind: QuestionKind::TaskGate {
            task: task.to_string(),
        },
        answered_by: Answerer::Person,
    }
}
