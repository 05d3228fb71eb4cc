//! Runs are pinned to the workflow definition they started with.
//!
//! A project definition (`.baton/workflows/*.yaml`) is a file of the
//! repository, so the agent can write it — and `.baton/` is not part of a
//! run's commit, so nobody reviews it. A definition written while a run is
//! under way must not change that run's rules (an `answered_by: agent`
//! written while a run waits at a checkpoint would let the agent answer
//! it). So a run keeps the definition it started with in its state
//! ([`baton_state::DefinitionPin`]): for a built-in its name and digest (the
//! binary is its copy), for a project file its text and digest. Every use
//! case of a run reads the run's definition through
//! [`Services::run_definition`], never the project's current file; a
//! changed project definition applies to new runs only.
//!
//! Runs started before pinning have no pin: they use the current
//! definition, as before, and are shown as unpinned (docs/lifecycle.md).
//! A definition that lets the agent answer a question a person answers in
//! the built-in of the same id — or any question at all, for a project
//! workflow — is flagged on the dashboard and in `baton show`
//! ([`definition_view`]).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use sha2::{Digest, Sha256};

use baton_state::{DefinitionPin, PinSource, WorkspaceState};
use baton_workflow::{Answerer, Registry, Source, WorkflowDefinition};

use crate::{Error, ErrorCode, Result, Services};

/// SHA-256 of `text`, hex.
pub fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The pin for a new run of `definition_id`, from the definitions the
/// process knows now.
pub fn pin(svc: &Services, definition_id: &str) -> Result<DefinitionPin> {
    let registry: &Registry = &svc.workflows;
    let source = registry.source(definition_id).cloned().ok_or_else(|| {
        Error::new(
            ErrorCode::NotFound,
            format!("unknown workflow {definition_id:?}"),
        )
    })?;
    let text = registry
        .text(definition_id)
        .unwrap_or_else(|| Arc::from(""));
    Ok(match source {
        Source::Builtin { file } => DefinitionPin {
            source: PinSource::Builtin,
            file,
            digest: digest(&text),
            text: None,
        },
        Source::File { path } => DefinitionPin {
            source: PinSource::Project,
            file: shown_path(svc, &path),
            digest: digest(&text),
            text: Some(text.to_string()),
        },
    })
}

fn shown_path(svc: &Services, path: &str) -> String {
    std::path::Path::new(path)
        .strip_prefix(&svc.config.repo_root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_string())
}

impl Services {
    /// The workflow definition `state`'s run follows: the one it was
    /// pinned to when it started (this module), never a project file
    /// changed since.
    pub fn run_definition(&self, state: &WorkspaceState) -> Result<Arc<WorkflowDefinition>> {
        run_definition(self, state)
    }
}

/// The definition `state`'s run follows: the pinned one; for a run without
/// a pin, the process's current definition of its workflow id.
pub fn run_definition(svc: &Services, state: &WorkspaceState) -> Result<Arc<WorkflowDefinition>> {
    let Some(pin) = &state.definition else {
        return svc.workflow(&state.workflow);
    };
    match pin.source {
        // The binary is the built-in's copy: a project file of the same id
        // never replaces it for this run.
        PinSource::Builtin => Registry::builtin_shared()
            .get(&state.workflow)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::NotFound,
                    format!(
                        "{} runs the built-in workflow {:?}, which this baton does not have; use the baton version that started it",
                        state.workspace, state.workflow
                    ),
                )
            }),
        PinSource::Project => {
            let text = pin.text.as_deref().unwrap_or("");
            if digest(text) != pin.digest {
                return Err(Error::new(
                    ErrorCode::CorruptState,
                    format!(
                        "{}: the workflow definition pinned in its state.json does not match its digest: state.json was changed outside baton (see `baton show {}`); restore it from git or abandon the run",
                        state.workspace, state.workspace
                    ),
                ));
            }
            svc.pinned_definition(&pin.digest, || {
                baton_workflow::parse(&pin.file, text).map_err(|e| {
                    Error::new(
                        ErrorCode::CorruptState,
                        format!(
                            "{}: its pinned workflow definition no longer parses: {e}",
                            state.workspace
                        ),
                    )
                })
            })
        }
    }
}

/// How a run's definition stands, for people (dashboard, `baton show`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionView {
    /// `builtin`, `project`, or `unpinned` (a run started before pinning).
    pub source: String,
    /// The embedded file or project file.
    pub file: String,
    /// The project file now differs from the run's pinned copy (the change
    /// applies to new runs only).
    pub changed_since_start: bool,
    /// Question phases the definition lets the agent answer.
    pub agent_answers: Vec<String>,
    /// Of those, the ones a person answers in the built-in of the same id:
    /// the definition loosens who answers.
    pub loosened: Vec<String>,
}

/// The view of `state`'s definition, with what it lets the agent answer.
pub fn definition_view(svc: &Services, state: &WorkspaceState) -> Option<DefinitionView> {
    let def = run_definition(svc, state).ok()?;
    let builtin = Registry::builtin_shared().get(&state.workflow);
    let agent_answers: Vec<String> = def
        .phases
        .iter()
        .filter(|p| def.answerer(&p.id) == Answerer::Agent)
        .map(|p| p.id.clone())
        .collect();
    let loosened = agent_answers
        .iter()
        .filter(|id| {
            builtin
                .as_ref()
                .is_some_and(|b| b.phase(id).is_some() && b.answerer(id) == Answerer::Person)
        })
        .cloned()
        .collect();
    let (source, file, changed) = match &state.definition {
        Some(pin) => {
            let changed = pin.source == PinSource::Project
                && svc
                    .workflows
                    .text(&state.workflow)
                    .is_none_or(|now| digest(&now) != pin.digest);
            let source = match pin.source {
                PinSource::Builtin => "builtin",
                PinSource::Project => "project",
            };
            (source.to_string(), pin.file.clone(), changed)
        }
        None => {
            let file = match svc.workflows.source(&state.workflow) {
                Some(Source::Builtin { file }) => file.clone(),
                Some(Source::File { path }) => shown_path(svc, path),
                None => String::new(),
            };
            ("unpinned".to_string(), file, false)
        }
    };
    Some(DefinitionView {
        source,
        file,
        changed_since_start: changed,
        agent_answers,
        loosened,
    })
}

/// Lines for a person about `view`, empty when there is nothing to say.
pub fn definition_notes(view: &DefinitionView) -> Vec<String> {
    let mut notes = Vec::new();
    if !view.loosened.is_empty() {
        notes.push(format!(
            "this run's workflow ({}) lets the agent answer {}, which a person answers in the built-in workflow",
            view.file,
            view.loosened.join(", ")
        ));
    } else if !view.agent_answers.is_empty() {
        notes.push(format!(
            "this run's workflow ({}) lets the agent answer {}",
            view.file,
            view.agent_answers.join(", ")
        ));
    }
    if view.changed_since_start {
        notes.push(format!(
            "{} changed since this run started; the run keeps the definition it started with (the change applies to new runs)",
            view.file
        ));
    }
    if view.source == "unpinned" {
        notes.push(
            "this run started before runs were pinned to their definition: it follows the current one".into(),
        );
    }
    notes
}
