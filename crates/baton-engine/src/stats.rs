//! Run analytics from the `history` of workspaces: per-phase durations and
//! visits, trips through recovery phases, per workflow and across the repo.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use baton_state::{HistoryAction, PhaseStatus, WorkspaceState};
use baton_workflow::{ResultKind, WorkflowDefinition};

/// Time spent in one phase of one run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseTiming {
    /// Phase id.
    pub phase: String,
    /// Times the phase was started.
    pub visits: u32,
    /// Milliseconds from each start to its complete/fail/abandon, summed.
    pub total_ms: i64,
}

/// The analytics of one run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStats {
    /// The workspace.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// Current status.
    pub status: String,
    /// Per phase, in the order first started.
    pub phases: Vec<PhaseTiming>,
    /// Trips through recovery phases (targets of `result: failure` transitions, e.g. fix).
    pub recovery_trips: u32,
    /// Milliseconds from creation to the last update.
    pub elapsed_ms: i64,
}

/// Computes the analytics of one run.
pub fn run_stats(state: &WorkspaceState, definition: Option<&WorkflowDefinition>) -> RunStats {
    let mut phases: Vec<PhaseTiming> = Vec::new();
    let mut open: Option<(String, baton_state::Timestamp)> = None;
    for h in &state.history {
        match h.action {
            HistoryAction::Start => {
                open = Some((h.phase.clone(), h.at));
                match phases.iter_mut().find(|p| p.phase == h.phase) {
                    Some(p) => p.visits += 1,
                    None => phases.push(PhaseTiming {
                        phase: h.phase.clone(),
                        visits: 1,
                        total_ms: 0,
                    }),
                }
            }
            HistoryAction::Complete | HistoryAction::Fail | HistoryAction::Abandon => {
                if let Some((phase, at)) = open.take()
                    && let Some(p) = phases.iter_mut().find(|p| p.phase == phase)
                {
                    p.total_ms += (h.at - at).num_milliseconds().max(0);
                }
            }
            _ => {}
        }
    }
    let recovery: Vec<&str> = definition
        .map(|d| {
            d.phases
                .iter()
                .flat_map(|p| &p.transitions)
                .filter(|t| t.when.result == Some(ResultKind::Failure))
                .map(|t| t.goto.as_str())
                .collect()
        })
        .unwrap_or_default();
    let recovery_trips = phases
        .iter()
        .filter(|p| recovery.contains(&p.phase.as_str()))
        .map(|p| p.visits)
        .sum();
    RunStats {
        workspace: state.workspace.clone(),
        workflow: state.workflow.clone(),
        status: state.current_phase_status.as_str().to_string(),
        phases,
        recovery_trips,
        elapsed_ms: (state.timestamps.last_updated - state.timestamps.created)
            .num_milliseconds()
            .max(0),
    }
}

/// Aggregates for one workflow across runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowStats {
    /// Runs.
    pub runs: u32,
    /// Completed runs.
    pub completed: u32,
    /// Abandoned runs.
    pub abandoned: u32,
    /// Runs still going.
    pub active: u32,
    /// Trips through recovery phases, all runs.
    pub recovery_trips: u32,
    /// Mean milliseconds per visit, per phase.
    pub mean_phase_ms: BTreeMap<String, i64>,
    /// Visits per phase, all runs.
    pub phase_visits: BTreeMap<String, u32>,
}

/// Aggregates runs by workflow id.
pub fn aggregate(runs: &[RunStats]) -> BTreeMap<String, WorkflowStats> {
    let mut out: BTreeMap<String, WorkflowStats> = BTreeMap::new();
    let mut totals: BTreeMap<(String, String), i64> = BTreeMap::new();
    for run in runs {
        let w = out.entry(run.workflow.clone()).or_default();
        w.runs += 1;
        match run.status.as_str() {
            s if s == PhaseStatus::Completed.as_str() => w.completed += 1,
            s if s == PhaseStatus::Abandoned.as_str() => w.abandoned += 1,
            _ => w.active += 1,
        }
        w.recovery_trips += run.recovery_trips;
        for p in &run.phases {
            *w.phase_visits.entry(p.phase.clone()).or_default() += p.visits;
            *totals
                .entry((run.workflow.clone(), p.phase.clone()))
                .or_default() += p.total_ms;
        }
    }
    for ((workflow, phase), total) in totals {
        if let Some(w) = out.get_mut(&workflow) {
            let visits = i64::from(w.phase_visits.get(&phase).copied().unwrap_or(1).max(1));
            w.mean_phase_ms.insert(phase, total / visits);
        }
    }
    out
}
