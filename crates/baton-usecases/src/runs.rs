//! Shared by the `issue` and `workflow` groups: starting a run, finding the
//! run a call means, and the views returned about it.

use chrono::Utc;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use baton_engine::instruction::{PhaseInstruction, instruction};
use baton_engine::route::visits;
use baton_engine::summary::next_step;
use baton_state::{Lifecycle, WorkspaceRef, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use crate::events::Happened;
use crate::{Error, ErrorCode, Result, Services};

/// The view of a run returned by start and current-phase calls.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    /// The workspace.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// The issue, for issue workflows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue_number: Option<String>,
    /// The current phase (`completed` at the end).
    pub current_phase: String,
    /// Its status.
    pub current_phase_status: String,
    /// Which entry into the current phase this is (1 = first).
    pub visit: u32,
    /// What to do now (absent once the workflow has ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<PhaseInstruction>,
    /// Files worked on so far.
    pub working_files: Vec<String>,
    /// Events published by this call.
    pub events: Vec<String>,
    /// What to call next.
    pub next_step: String,
}

/// Builds the view of `state`.
pub fn view(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    definition: &WorkflowDefinition,
    events: Vec<String>,
) -> RunView {
    // Detecting the repository's commands reads files: only for phases that run them.
    let needs_commands = definition
        .phase(&state.current_phase)
        .is_some_and(|p| matches!(p.commands, Some(baton_workflow::CommandSource::Quality)));
    let profile = if needs_commands {
        svc.repo_profile.get(&svc.config.repo_root)
    } else {
        Default::default()
    };
    let ended = state.current_phase_status.is_terminal();
    let visit = visits(state, &state.current_phase);
    RunView {
        workspace: ws.display.clone(),
        workflow: state.workflow.clone(),
        issue_number: state.issue_number.clone(),
        current_phase: state.current_phase.clone(),
        current_phase_status: state.current_phase_status.as_str().to_string(),
        visit,
        instruction: if ended {
            None
        } else {
            instruction(definition, &state.current_phase, visit.max(1), &profile)
        },
        working_files: state.working_files.clone(),
        events,
        next_step: seed_next_step(state, definition),
    }
}

/// The next call, phrased for the seed-004 tools.
pub fn seed_next_step(state: &WorkspaceState, definition: &WorkflowDefinition) -> String {
    next_step(state, definition)
}

/// Creates a workspace for `definition` and starts its first phase (unless it
/// waits for a person). Returns the workspace, the state and the events.
pub fn start_run(
    svc: &Services,
    definition: &WorkflowDefinition,
    folder: &str,
    slug: &str,
    issue_number: Option<String>,
) -> Result<(WorkspaceRef, WorkspaceState, Vec<String>), Error> {
    let ws = svc.store.resolve(folder)?;
    let Some(first) = definition.first_phase() else {
        return Err(Error::new(
            ErrorCode::Internal,
            format!("workflow {:?} has no phases", definition.id),
        ));
    };
    let now = Utc::now();
    let mut state = WorkspaceState::fresh(
        &definition.id,
        &first.id,
        slug,
        &ws.display,
        svc.version,
        now,
    );
    state.issue_number = issue_number;
    // The run keeps the definition it starts with (crate::pinning).
    state.definition = Some(crate::pinning::pin(svc, &definition.id)?);
    state.repo_baseline = crate::git::baseline(&svc.config.repo_root);
    // The first phase starts in the same write that creates the run: a kill
    // can never leave a run that exists but never started.
    let mut started = Vec::new();
    if !first.kind.waits_for_human() {
        started = Lifecycle::new(definition, now).start(&mut state, &first.id)?;
    }
    svc.store.create(&ws, &state)?;
    let mut happened = vec![Happened::Event(
        baton_events::EventKind::PipelineInit,
        baton_workflow::SETUP.to_string(),
        Some(format!("workflow={}", definition.id)),
        None,
    )];
    happened.extend(started.into_iter().map(Happened::Transition));
    let names = svc.after_write(&ws, &state, happened);
    Ok((ws, state, names))
}

/// A folder name for a new run: `YYYYMMDD-<slug>`, with `-2`, `-3`, … when
/// that folder already holds an ended run (a restart).
pub fn fresh_folder(svc: &Services, slug: &str) -> Result<String, Error> {
    let base = format!("{}-{slug}", Utc::now().format("%Y%m%d"));
    for n in 1..1000 {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let ws = svc.store.resolve(&name)?;
        if !ws.state_file().exists() {
            return Ok(name);
        }
    }
    Err(Error::new(
        ErrorCode::Conflict,
        format!("too many runs named {base}"),
    ))
}

/// The runs of the repository that match, most recent first.
pub fn runs(
    svc: &Services,
    filter: impl Fn(&WorkspaceState) -> bool,
) -> Result<Vec<(WorkspaceRef, WorkspaceState)>, Error> {
    runs_named(svc, |_| true, filter)
}

/// The workspaces whose folder name passes `name` and whose state cannot be
/// read, as the error each gives.
pub fn unreadable_named(svc: &Services, name: impl Fn(&str) -> bool) -> Result<Vec<Error>> {
    Ok(svc
        .store
        .list_refs_where(name)?
        .into_iter()
        .filter_map(|ws| svc.store.load(&ws).err().map(Error::from))
        .collect())
}

/// Like [`runs`], reading only the workspaces whose folder name passes `name`.
pub fn runs_named(
    svc: &Services,
    name: impl Fn(&str) -> bool,
    filter: impl Fn(&WorkspaceState) -> bool,
) -> Result<Vec<(WorkspaceRef, WorkspaceState)>, Error> {
    let mut out: Vec<(WorkspaceRef, WorkspaceState)> = svc
        .store
        .list_refs_where(name)?
        .into_iter()
        .filter_map(|ws| svc.store.load(&ws).ok().map(|s| (ws, s)))
        .filter(|(_, s)| filter(s))
        .collect();
    out.sort_by_key(|b| std::cmp::Reverse(b.1.timestamps.created));
    Ok(out)
}

/// Finds the run a call means: by `workspace`, by `issue_number`, or the only
/// active issue run. Ambiguity is an error listing the candidates.
pub fn select(
    svc: &Services,
    workspace: Option<&str>,
    issue_number: Option<&str>,
) -> Result<(WorkspaceRef, WorkspaceState), Error> {
    if let Some(w) = workspace {
        crate::validate::check_text("workspace", w, 1024)?;
        let ws = svc.store.resolve(w)?;
        let state = svc.store.load(&ws)?;
        if let Some(n) = issue_number
            && state.issue_number.as_deref() != Some(n)
        {
            return Err(Error::invalid(
                "issueNumber",
                format!("workspace {} is not the run of issue {n}", ws.display),
            ));
        }
        return Ok((ws, state));
    }
    if let Some(n) = issue_number {
        let number = crate::validate::normalize_issue(n)?;
        // A run of this issue whose state cannot be read is still its run:
        // say so instead of pretending there is none.
        if let Some(e) = unreadable_named(svc, |name| issue_folder(name, &number))?
            .into_iter()
            .next()
        {
            return Err(e);
        }
        let mut matching = runs_named(
            svc,
            |name| issue_folder(name, &number),
            |s| s.issue_number.as_deref() == Some(number.as_str()),
        )?;
        // Prefer the active run; else the most recent one.
        let active = matching
            .iter()
            .position(|(_, s)| !s.current_phase_status.is_terminal());
        return match active {
            Some(i) => Ok(matching.swap_remove(i)),
            None if !matching.is_empty() => Ok(matching.swap_remove(0)),
            None => Err(Error::new(
                ErrorCode::NotFound,
                format!("no workflow for issue {number}; call startIssueWorkflow"),
            )),
        };
    }
    let mut active = runs_named(
        svc,
        |name| name.contains("-issue-"),
        |s| s.workflow == "issue" && !s.current_phase_status.is_terminal(),
    )?;
    match active.len() {
        0 => Err(Error::new(
            ErrorCode::NotFound,
            "no active issue workflow; call startIssueWorkflow (or pass workspace for another workflow)",
        )),
        1 => Ok(active.remove(0)),
        _ => {
            let candidates: Vec<Value> = active
                .iter()
                .map(|(ws, s)| serde_json::json!({"issueNumber": s.issue_number, "workspace": ws.display}))
                .collect();
            Err(Error::new(
                ErrorCode::InvalidParameter,
                format!(
                    "{} issue workflows are active; pass issueNumber or workspace to choose one",
                    active.len()
                ),
            )
            .with_details(serde_json::json!({"field": "issueNumber", "candidates": candidates})))
        }
    }
}

/// Whether a folder name is one `startIssueWorkflow` gives issue `number`:
/// `YYYYMMDD-issue-<n>` or a restart `YYYYMMDD-issue-<n>-<k>`.
pub fn issue_folder(name: &str, number: &str) -> bool {
    let slug = format!("-issue-{}", number.to_ascii_lowercase());
    match name.find(&slug) {
        Some(i) => {
            let rest = &name[i + slug.len()..];
            rest.is_empty()
                || rest
                    .strip_prefix('-')
                    .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_folders_match_their_issue_and_restarts_only() {
        assert!(issue_folder("20261122-issue-42", "42"));
        assert!(issue_folder("20261122-issue-42-3", "42"));
        assert!(issue_folder("20261122-issue-proj-7", "PROJ-7"));
        assert!(!issue_folder("20261122-issue-420", "42"));
        assert!(!issue_folder("20261122-issue-4", "42"));
        assert!(!issue_folder("20261122-fix-auth", "42"));
        assert!(!issue_folder("20261122-issue-42-x", "42"));
    }
}
