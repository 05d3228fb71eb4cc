//! The paginated list of every run of the repository, newest first, with
//! counts per filter and the runs whose state cannot be read.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use baton_engine::completion::guards::is_human_phase;
use baton_engine::summary::phase_label;
use baton_state::{PhaseStatus, WorkspaceRef, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use crate::error::{Error, Result};
use crate::services::Services;
use crate::validate::check_text;

use super::row::{RunFilter, RunSummary};

/// The most runs one page holds.
pub const MAX_PAGE: usize = 200;

/// What page of runs to list.
#[derive(Debug, Clone, Default)]
pub struct PageArgs {
    /// Runs to skip (newest first).
    pub offset: usize,
    /// Runs to return (1 to [`MAX_PAGE`]; 0 means 50).
    pub limit: usize,
    /// Which runs.
    pub filter: RunFilter,
    /// Only runs whose folder, spec name, workflow or issue contains this
    /// text (case-insensitive).
    pub search: Option<String>,
}

/// Counts per filter, over every run (not only the page).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunCounts {
    /// Every run.
    pub all: usize,
    /// Not ended.
    pub active: usize,
    /// Waiting for a person.
    pub waiting: usize,
    /// Failed.
    pub failed: usize,
    /// Completed.
    pub completed: usize,
    /// Abandoned.
    pub abandoned: usize,
}

/// A run whose state cannot be read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UnreadableRun {
    /// The folder name.
    pub id: String,
    /// Error code.
    pub code: String,
    /// What is wrong.
    pub message: String,
}

/// One page of runs, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunPage {
    /// Runs that pass the filter and search.
    pub total: usize,
    /// Where this page starts.
    pub offset: usize,
    /// The page size asked for.
    pub limit: usize,
    /// The page.
    pub runs: Vec<RunSummary>,
    /// Counts per filter over every run.
    pub counts: RunCounts,
    /// Runs whose state cannot be read.
    pub unreadable: Vec<UnreadableRun>,
    /// Team mode: the team database could not answer, so the page holds
    /// this machine's runs only; why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_problem: Option<String>,
    /// Ended runs whose files are on another branch (from the run history).
    pub elsewhere: Vec<crate::elsewhere::ElsewhereRun>,
}

/// Lists the runs of the repository, newest first, a page at a time (in
/// team mode, every machine's runs: this machine's from its files, the
/// others' from the team database).
pub fn run_page(svc: &Services, args: PageArgs) -> Result<RunPage> {
    run_page_with(svc, &RunIndex::default(), args)
}

/// What identifies the contents of a run's state files without reading
/// them: size, modification time and inode of `state.json` and of the live
/// state beside it. Every write is an atomic rename, so any change gives
/// the file a new inode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp([Option<(u64, Option<std::time::SystemTime>, u64)>; 2]);

fn stamp(ws: &WorkspaceRef) -> Stamp {
    let one = |path: std::path::PathBuf| {
        std::fs::metadata(path).ok().map(|m| {
            #[cfg(unix)]
            let ino = std::os::unix::fs::MetadataExt::ino(&m);
            #[cfg(not(unix))]
            let ino = 0;
            (m.len(), m.modified().ok(), ino)
        })
    };
    Stamp([
        one(ws.state_file()),
        one(ws.dir.join(baton_state::store::LIVE_STATE_FILE)),
    ])
}

/// List rows remembered between requests of a long-lived reader (the
/// dashboard), each with the [`Stamp`] of the files it was read from:
/// every request still looks at every run's files, and reads again only
/// the runs whose files changed. For display only: no decision is ever
/// taken on a remembered row.
#[derive(Debug, Default)]
pub struct RunIndex {
    rows: std::sync::Mutex<BTreeMap<String, (Stamp, RunSummary)>>,
}

/// [`run_page`] with rows remembered in `index` across calls.
pub fn run_page_with(svc: &Services, index: &RunIndex, args: PageArgs) -> Result<RunPage> {
    let limit = match args.limit {
        0 => 50,
        n => n.min(MAX_PAGE),
    };
    let search = match &args.search {
        Some(s) => {
            check_text("search", s, 256)?;
            Some(s.trim().to_lowercase()).filter(|s| !s.is_empty())
        }
        None => None,
    };
    let mut runs = Vec::new();
    let mut unreadable = Vec::new();
    let mut known = match index.rows.lock() {
        Ok(k) => k,
        Err(p) => p.into_inner(),
    };
    let mut seen = std::collections::BTreeSet::new();
    for ws in svc.store.list_refs()? {
        let stamp = stamp(&ws);
        seen.insert(ws.name.clone());
        if let Some((s, row)) = known.get(&ws.name)
            && *s == stamp
        {
            runs.push(row.clone());
            continue;
        }
        match svc.store.load(&ws) {
            Ok(state) => {
                let row = summary(svc, &ws, &state);
                known.insert(ws.name.clone(), (stamp, row.clone()));
                runs.push(row);
            }
            Err(e) => {
                known.remove(&ws.name);
                let e = Error::from(e);
                unreadable.push(UnreadableRun {
                    id: ws.name,
                    code: e.code.as_str().to_string(),
                    message: e.message,
                });
            }
        }
    }
    known.retain(|name, _| seen.contains(name));
    drop(known);
    runs.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
    let mut counts = RunCounts::default();
    for r in &runs {
        counts.all += 1;
        for (filter, n) in [
            (RunFilter::Active, &mut counts.active),
            (RunFilter::Waiting, &mut counts.waiting),
            (RunFilter::Failed, &mut counts.failed),
            (RunFilter::Completed, &mut counts.completed),
            (RunFilter::Abandoned, &mut counts.abandoned),
        ] {
            if filter.keeps(r) {
                *n += 1;
            }
        }
    }
    let mut matching: Vec<RunSummary> = runs
        .into_iter()
        .filter(|r| args.filter.keeps(r))
        .filter(|r| {
            search.as_ref().is_none_or(|s| {
                [
                    r.id.as_str(),
                    r.spec_name.as_str(),
                    r.workflow.as_str(),
                    r.issue_number.as_deref().unwrap_or(""),
                ]
                .iter()
                .any(|f| f.to_lowercase().contains(s.as_str()))
            })
        })
        .collect();
    let mut total = matching.len();
    // Team mode: the other machines' runs that can reach this page.
    let mut team_problem = None;
    match crate::team::other_runs_page(svc, args.filter, search.as_deref(), args.offset + limit) {
        Ok(Some(page)) => {
            total += page.matching;
            for (n, c) in [
                &mut counts.all,
                &mut counts.active,
                &mut counts.waiting,
                &mut counts.failed,
                &mut counts.completed,
                &mut counts.abandoned,
            ]
            .into_iter()
            .zip(page.counts)
            {
                *n += c;
            }
            matching.extend(page.runs);
            matching.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
        }
        Ok(None) => {}
        Err(e) => team_problem = Some(e.message),
    }
    Ok(RunPage {
        total,
        offset: args.offset,
        limit,
        runs: matching.into_iter().skip(args.offset).take(limit).collect(),
        counts,
        unreadable,
        team_problem,
        elsewhere: crate::elsewhere::runs_elsewhere(svc),
    })
}

/// The list row of one run.
pub fn summary(svc: &Services, ws: &WorkspaceRef, state: &WorkspaceState) -> RunSummary {
    let definition = svc.run_definition(state).ok();
    let total = definition.as_ref().map_or(0, |d| d.phases.len());
    let done = state
        .completed_phases
        .iter()
        .chain(&state.skipped_phases)
        .filter(|p| *p != baton_workflow::SETUP)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let skipped = baton_engine::summary::skipped_not_completed(state);
    RunSummary {
        id: ws.name.clone(),
        workspace: ws.display.clone(),
        workflow: state.workflow.clone(),
        spec_name: state.spec_name.clone(),
        issue_number: state.issue_number.clone(),
        current_phase: state.current_phase.clone(),
        current_phase_label: definition
            .as_ref()
            .map(|d| phase_label(d, &state.current_phase))
            .unwrap_or_else(|| state.current_phase.clone()),
        status: state.current_phase_status.as_str().to_string(),
        waiting: waits_for_person(state, definition.as_deref()),
        done,
        skipped,
        total,
        created: state.timestamps.created,
        last_updated: state.timestamps.last_updated,
        machine: crate::team::this_machine(svc),
    }
}

fn waits_for_person(state: &WorkspaceState, definition: Option<&WorkflowDefinition>) -> bool {
    match state.current_phase_status {
        PhaseStatus::AwaitingHuman => true,
        PhaseStatus::Pending => definition.is_some_and(|d| is_human_phase(d, &state.current_phase)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn filters_parse_and_unknown_ones_are_refused() {
        assert_eq!(RunFilter::parse("waiting").unwrap(), RunFilter::Waiting);
        assert_eq!(RunFilter::parse("").unwrap(), RunFilter::All);
        assert_eq!(
            RunFilter::parse("nope").unwrap_err().code,
            ErrorCode::InvalidParameter
        );
    }

    #[test]
    fn the_index_reads_a_run_again_only_when_its_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let config = baton_config::Config::resolve(
            dir.path(),
            &[("BATON_FSYNC", "off")],
            &baton_config::Overrides {
                repo_root: Some(dir.path().to_path_buf()),
                ..Default::default()
            },
        )
        .unwrap();
        let svc = Services::new(
            config,
            std::sync::Arc::new(baton_events::EventBus::in_memory()),
            "test",
        );
        let init = |name: &str| {
            crate::recovery::init(
                &svc,
                crate::recovery::InitArgs {
                    spec_name: name.into(),
                    workflow: None,
                    workspace: Some(format!("20260101-{name}")),
                    effort: None,
                },
            )
            .unwrap()
        };
        init("one");
        init("two");
        let index = RunIndex::default();
        let page = run_page_with(&svc, &index, PageArgs::default()).unwrap();
        assert_eq!(page.total, 2);
        // A hand edit behind the index's back (a remembered row would be
        // stale): the next page shows it.
        let ws = svc.store.resolve("20260101-one").unwrap();
        let mut state = svc.store.load(&ws).unwrap();
        state.current_phase_status = baton_state::PhaseStatus::Abandoned;
        baton_state::store::write_atomic(
            &ws.dir,
            &ws.state_file(),
            state.to_json().as_bytes(),
            false,
        )
        .unwrap();
        let page = run_page_with(&svc, &index, PageArgs::default()).unwrap();
        let one = page.runs.iter().find(|r| r.id == "20260101-one").unwrap();
        assert_eq!(one.status, "abandoned");
        assert_eq!(page.counts.abandoned, 1);
        // A run removed is gone from the page and from the index.
        std::fs::remove_dir_all(svc.store.resolve("20260101-two").unwrap().dir).unwrap();
        let page = run_page_with(&svc, &index, PageArgs::default()).unwrap();
        assert_eq!(page.total, 1);
        assert_eq!(index.rows.lock().unwrap().len(), 1);
    }
}
