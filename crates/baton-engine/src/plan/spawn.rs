//! Which agent runs a phase, with which model, reading which of its inputs
//! exist: the spawn of a phase that is not worked through tasks.

use baton_state::WorkspaceState;
use baton_workflow::{PhaseDefinition, WorkflowDefinition};

use super::types::{PlanInput, Spawn};
use crate::WorkspaceFiles;

/// The model label when neither the phase nor the workflow names one.
pub const DEFAULT_MODEL: &str = "sonnet";

/// The model label of `phase`: its own, else the workflow's, else [`DEFAULT_MODEL`].
pub(crate) fn model(def: &WorkflowDefinition, phase: &PhaseDefinition) -> String {
    phase
        .model
        .clone()
        .or_else(|| def.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_string())
}

/// The agent of `phase`: its variant when the phase it names was skipped, else its own (default: the phase id).
pub(crate) fn agent(state: &WorkspaceState, phase: &PhaseDefinition) -> String {
    if let Some(variant) = &phase.agent_when_skipped
        && state.skipped_phases.contains(&variant.phase)
    {
        return variant.agent.clone();
    }
    phase.agent.clone().unwrap_or_else(|| phase.id.clone())
}

/// The files of `names` that exist in the workspace, without `except`.
pub(crate) fn existing(
    files: &dyn WorkspaceFiles,
    names: &[String],
    except: Option<&str>,
) -> Vec<String> {
    names
        .iter()
        .filter(|f| Some(f.as_str()) != except && files.file(f).is_some())
        .cloned()
        .collect()
}

/// The agent of a phase that is not worked through tasks (a revision when the phase ran before).
pub(crate) fn single(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Spawn {
    let output = phase.artifacts.first().cloned();
    let revising =
        crate::route::visits(state, &phase.id) > 1 || state.completed_phases.contains(&phase.id);
    let summary = if revising {
        format!(
            "Revise: {} (see the review and feedback inputs).",
            phase.label
        )
    } else {
        format!("Run {}.", phase.label)
    };
    Spawn {
        phase: phase.id.clone(),
        agent: agent(state, phase),
        model: model(input.definition, phase),
        inputs: existing(input.files, &phase.inputs, output.as_deref()),
        output,
        task: None,
        parallel: Vec::new(),
        summary,
    }
}
