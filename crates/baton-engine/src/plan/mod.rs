//! The next action of a pipeline run (seed 001 `pipeline_next_action`),
//! decided from the state, the workflow definition and the workspace files
//! alone. Read-only: the handler applies what the plan implies (start the
//! phase, register tasks, record a question) in one locked write.
//!
//! Every question a run can stop at is answerable: checkpoints, reviews
//! without a verdict, used-up loop limits, failed commands and human gates
//! each list their options, and [`Plan::Ask`] carries what each answer does.
//!
//! Each module answers one question; this one dispatches on the phase:
//!
//! * [`types`] — what the planner reads and decides.
//! * [`request`] — where the run came from, what it skips, placeholders.
//! * [`spawn`] — which agent, model and inputs a phase runs with.
//! * [`tasks`] — phases worked through tasks: registration, fan-out, reviews.
//! * [`questions`] — the questions a run stops at and their options.
//! * [`commands`] — command phases and the run's commit ([`commit`]: its files).

pub mod commands;
pub mod commit;
pub mod questions;
pub mod request;
pub mod spawn;
pub mod tasks;
pub mod types;

use baton_state::{PhaseStatus, WorkspaceState};
use baton_workflow::{COMPLETED, PerTask, PhaseKind, WorkflowDefinition};

pub use commands::RUN_FILES;
pub use questions::{post_method, revise_verdict};
pub use request::{Placeholders, RequestMeta, effective_skips, request_meta};
pub use spawn::DEFAULT_MODEL;
pub use tasks::{SINGLE_TASK_STUB, blocked_reason};
pub use types::{ParallelTask, Plan, PlanError, PlanInput, Question, QuestionKind, Spawn};

use commands::command;
use questions::{checkpoint, command_failed, decision_question, phase_gate, post_to_source};
use request::placeholders;
use spawn::single;
use tasks::{implement, review_tasks, task_gate};

/// Decides the next step of the run.
pub fn plan(input: &PlanInput<'_>, state: &WorkspaceState) -> Result<Plan, PlanError> {
    let mut plan = decide_plan(input, state)?;
    if let Plan::Ask(q) = &mut plan {
        q.answered_by = input.definition.answerer(&q.phase);
    }
    Ok(plan)
}

fn decide_plan(input: &PlanInput<'_>, state: &WorkspaceState) -> Result<Plan, PlanError> {
    let def = input.definition;
    match state.current_phase_status {
        PhaseStatus::Abandoned => {
            return Ok(Plan::Done {
                summary: format!("Pipeline abandoned at {}", state.current_phase),
                abandoned: true,
            });
        }
        PhaseStatus::Completed => return Ok(done(def, state)),
        _ if state.current_phase == COMPLETED => return Ok(done(def, state)),
        _ => {}
    }
    let Some(phase) = def.phase(&state.current_phase) else {
        return Err(PlanError(format!(
            "workflow {:?} has no phase {:?}",
            def.id, state.current_phase
        )));
    };
    let request = input
        .files
        .read("request.md")
        .map(|t| request_meta(&t))
        .unwrap_or_else(|| RequestMeta {
            source_type: "text".into(),
            ..RequestMeta::default()
        });
    if state.current_phase_status != PhaseStatus::AwaitingHuman
        && effective_skips(def, state, &request).contains(&phase.id)
    {
        return Ok(Plan::Skip {
            phase: phase.id.clone(),
        });
    }
    if state.current_phase_status == PhaseStatus::AwaitingHuman {
        if let Some(task) = &state.pending_human_gate {
            return Ok(Plan::Ask(task_gate(phase, state, task)));
        }
        if let Some(decision) = state
            .pending_decision
            .as_ref()
            .filter(|d| d.phase == phase.id)
        {
            return Ok(Plan::Ask(decision_question(
                input,
                state,
                phase,
                decision.reason,
                &decision.detail,
            )));
        }
    }
    if state.current_phase_status == PhaseStatus::Failed && phase.kind == PhaseKind::Command {
        return Ok(Plan::Ask(command_failed(phase, state)));
    }
    match phase.kind {
        PhaseKind::Checkpoint if phase.posts_to_source => {
            Ok(Plan::Ask(post_to_source(input, phase)))
        }
        PhaseKind::Checkpoint => Ok(Plan::Ask(checkpoint(input, state, phase))),
        PhaseKind::HumanGate => Ok(Plan::Ask(phase_gate(phase))),
        PhaseKind::Command => command(input, state, phase),
        PhaseKind::WriteFile => {
            let file = phase.artifacts.first().cloned().unwrap_or_default();
            let vars = placeholders(input, state);
            Ok(Plan::WriteFile {
                phase: phase.id.clone(),
                file,
                content: vars.render(phase.content.as_deref().unwrap_or("")),
            })
        }
        PhaseKind::Agent | PhaseKind::Review => match phase.per_task {
            Some(PerTask::Implement) => implement(input, state, phase),
            Some(PerTask::Review) => Ok(review_tasks(input, state, phase)),
            None => Ok(Plan::Spawn(single(input, state, phase))),
        },
    }
}

fn done(def: &WorkflowDefinition, state: &WorkspaceState) -> Plan {
    let ran = state
        .completed_phases
        .iter()
        .filter(|p| def.phase(p).is_some())
        .count();
    let skipped = state.skipped_phases.len();
    Plan::Done {
        summary: format!("Pipeline completed: {ran} phases, {skipped} skipped"),
        abandoned: false,
    }
}

#[cfg(test)]
mod tests;
