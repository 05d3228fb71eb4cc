//! Other machines' runs, as this machine's views show them: found by
//! their ids, summarised for the lists, and listed a page at a time.

use baton_state::WorkspaceState;
use baton_team::TeamRun;

use super::link::team_error;
use super::machine::{MachineView, find_local, is_remote_id, remote_id, split_remote_id};
use crate::error::{Error, ErrorCode, Result};
use crate::overview::{RunFilter, RunSummary};
use crate::pipeline::action::Question;
use crate::services::Services;

/// A run of another machine, as this one sees it.
#[derive(Debug, Clone)]
pub struct RemoteRun {
    /// Its id here (`folder@machine`).
    pub id: String,
    /// Its row.
    pub run: TeamRun,
    /// Its state as last written, when it parses.
    pub state: Option<WorkspaceState>,
}

impl RemoteRun {
    /// The question the run waits at, as its machine last saw it.
    pub fn question(&self) -> Option<Question> {
        if !self.run.active {
            return None;
        }
        self.run
            .waiting
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
    }
}

/// The run of another machine that `id` names: `folder@machine`, or a
/// bare folder name no local run has that exactly one other machine has.
/// `Ok(None)` when team mode is off or nothing matches.
pub fn find_remote(svc: &Services, id: &str) -> Result<Option<RemoteRun>> {
    let Some(team) = svc.team.usable()? else {
        return Ok(None);
    };
    let (folder, prefix) = match split_remote_id(id) {
        Some((f, p)) => (f, Some(p)),
        None => (id.rsplit('/').next().unwrap_or(id), None),
    };
    if folder.is_empty() || folder.len() > 256 {
        return Ok(None);
    }
    let me = team.machine().id.clone();
    let mut found: Vec<(TeamRun, serde_json::Value)> = team
        .find(folder)
        .map_err(team_error)?
        .into_iter()
        .filter(|(r, _)| r.machine.id != me)
        .filter(|(r, _)| prefix.is_none_or(|p| r.machine.id.starts_with(p)))
        .collect();
    match found.len() {
        0 => Ok(None),
        1 => {
            let (run, state) = found.remove(0);
            Ok(Some(remote(run, state)))
        }
        _ => {
            let candidates: Vec<String> = found
                .iter()
                .map(|(r, _)| {
                    format!(
                        "{} ({})",
                        remote_id(&r.workspace, &r.machine.id),
                        r.machine.name
                    )
                })
                .collect();
            Err(Error::invalid(
                "workspace",
                format!(
                    "{folder} runs on {} machines of the team; name one: {}",
                    found.len(),
                    candidates.join(", ")
                ),
            ))
        }
    }
}

fn remote(run: TeamRun, state: serde_json::Value) -> RemoteRun {
    RemoteRun {
        id: remote_id(&run.workspace, &run.machine.id),
        state: serde_json::from_value::<WorkspaceState>(state).ok(),
        run,
    }
}

/// The run of another machine a view is asked about: `folder@machine`,
/// or a bare folder this machine has no run in. `Ok(None)`: team mode is
/// off, or the run is this machine's (or nobody's: the local view says so).
pub fn remote_for(svc: &Services, workspace: &str) -> Result<Option<RemoteRun>> {
    if !svc.team.enabled() {
        return Ok(None);
    }
    if is_remote_id(workspace) {
        return match find_remote(svc, workspace)? {
            Some(r) => Ok(Some(r)),
            None => Err(Error::new(
                ErrorCode::NotFound,
                format!("no run {workspace} on any machine of the team (baton ls lists them)"),
            )),
        };
    }
    match find_local(svc, workspace) {
        Ok(Some(_)) | Err(_) => Ok(None),
        Ok(None) => find_remote(svc, workspace),
    }
}

/// The list row of another machine's run.
pub fn remote_summary(svc: &Services, remote: &RemoteRun) -> RunSummary {
    let r = &remote.run;
    let me = svc
        .team
        .get()
        .map(|t| t.machine().id.clone())
        .unwrap_or_default();
    RunSummary {
        id: remote.id.clone(),
        workspace: remote.id.clone(),
        workflow: r.workflow.clone(),
        spec_name: r.spec_name.clone(),
        issue_number: r.issue.clone(),
        current_phase: r.phase.clone(),
        current_phase_label: svc
            .workflows
            .get(&r.workflow)
            .map(|d| baton_engine::summary::phase_label(&d, &r.phase))
            .unwrap_or_else(|| r.phase.clone()),
        status: r.status.clone(),
        waiting: r.active && r.waiting.is_some(),
        done: r.done as usize,
        skipped: r.skipped as usize,
        total: r.total as usize,
        created: r.created,
        last_updated: r.updated,
        machine: Some(MachineView::of(&r.machine, &me)),
    }
}

/// What a person does next with another machine's run.
pub fn remote_next_step(remote: &RemoteRun, options: Option<&[String]>) -> String {
    let machine = &remote.run.machine.name;
    match options {
        Some(options) => format!(
            "it waits for a person: answer here (`baton answer {} <{}>` at a terminal, or on the dashboard) and {machine} applies it",
            remote.id,
            options.join("|")
        ),
        None if remote.run.active => format!(
            "it works on {machine}; follow it with `baton events --follow --run {}`",
            remote.id
        ),
        None => format!("it ended on {machine} ({})", remote.run.status),
    }
}

/// A page's worth of other machines' runs for the run list: the first
/// `limit` that pass `filter` and `search`, how many pass, and the counts
/// per filter (all, active, waiting, failed, completed, abandoned).
pub struct OtherRuns {
    /// Rows, newest created first.
    pub runs: Vec<RunSummary>,
    /// How many pass.
    pub matching: usize,
    /// Counts per filter.
    pub counts: [usize; 6],
}

/// Other machines' runs for a page of the run list (`Ok(None)`: team
/// mode is off). An error when the database cannot answer.
pub fn other_runs_page(
    svc: &Services,
    filter: RunFilter,
    search: Option<&str>,
    limit: usize,
) -> Result<Option<OtherRuns>> {
    let Some(team) = svc.team.usable()? else {
        return Ok(None);
    };
    use RunFilter as F;
    let filter = match filter {
        F::All => baton_team::RunFilter::All,
        F::Active => baton_team::RunFilter::Active,
        F::Waiting => baton_team::RunFilter::Waiting,
        F::Failed => baton_team::RunFilter::Failed,
        F::Completed => baton_team::RunFilter::Completed,
        F::Abandoned => baton_team::RunFilter::Abandoned,
    };
    let page = team
        .other_runs_page(filter, search, limit)
        .map_err(team_error)?;
    Ok(Some(OtherRuns {
        runs: page
            .runs
            .into_iter()
            .map(|run| {
                let remote = RemoteRun {
                    id: remote_id(&run.workspace, &run.machine.id),
                    state: None,
                    run,
                };
                remote_summary(svc, &remote)
            })
            .collect(),
        matching: page.matching,
        counts: page.counts,
    }))
}
