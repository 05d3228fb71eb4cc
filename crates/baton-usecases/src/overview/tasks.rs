//! A run's tasks as people see them: each task's state in the DAG
//! (ready, running, waiting, implemented, done, failed, blocked, skipped),
//! with its time, tokens and runs.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use baton_state::{ImplStatus, PhaseStatus, ReviewStatus, WorkspaceState};
use baton_workflow::WorkflowDefinition;

/// One task of the task DAG.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    /// Task key.
    pub id: String,
    /// Title.
    pub title: String,
    /// `sequential`, `parallel`, `human_gate`.
    pub mode: String,
    /// Keys of the tasks it depends on.
    pub depends_on: Vec<String>,
    /// Files it writes.
    pub files: Vec<String>,
    /// Implementation status.
    pub impl_status: String,
    /// Review status.
    pub review_status: String,
    /// `done`, `implemented` (review ahead), `running`, `failed` (review
    /// failed), `waiting` (its human gate is open), `ready`, `blocked`,
    /// `skipped`.
    pub state: String,
    /// Implementation plus review retries.
    pub retries: u32,
    /// Time reported for the agent runs that worked on it (a batch of
    /// parallel tasks counts whole for each of them).
    pub duration_ms: u64,
    /// Tokens reported for those runs (shared by a batch).
    pub tokens: u64,
    /// How many agent runs worked on it.
    pub runs: u32,
}

pub(crate) fn task_views(state: &WorkspaceState, definition: &WorkflowDefinition) -> Vec<TaskView> {
    // The tasks handed out to agents in the running per-task phase.
    let running: Vec<String> = match &state.last_dispatch {
        Some(d)
            if state.current_phase_status == PhaseStatus::InProgress
                && d.phase == state.current_phase
                && definition
                    .phase(&d.phase)
                    .is_some_and(|p| p.per_task.is_some()) =>
        {
            crate::pipeline::step::ids::dispatched_tasks(&d.action)
        }
        _ => Vec::new(),
    };
    let mut per_task: BTreeMap<&str, (u64, u64, u32)> = BTreeMap::new();
    for e in &state.phase_log {
        for t in &e.tasks {
            let entry = per_task.entry(t.as_str()).or_default();
            entry.0 += e.duration_ms;
            entry.1 += e.tokens;
            entry.2 += 1;
        }
    }
    let done = |status: &ReviewStatus| status.passed() || *status == ReviewStatus::AcceptedByHuman;
    let mut tasks: Vec<TaskView> = state
        .tasks
        .iter()
        .map(|(key, t)| {
            let depends_on: Vec<String> = t
                .depends_on
                .clone()
                .unwrap_or_default()
                .iter()
                .map(|d| d.to_string())
                .collect();
            let deps_done = depends_on.iter().all(|d| {
                state
                    .tasks
                    .get(d)
                    .is_some_and(|dep| dep.impl_status == ImplStatus::Completed)
            });
            let gate = state.pending_human_gate.as_deref() == Some(key.as_str());
            let task_state = if t.impl_status.as_str().starts_with("skipped")
                || t.review_status.as_str().starts_with("skipped")
            {
                "skipped"
            } else if gate {
                "waiting"
            } else if running.contains(key) {
                "running"
            } else if done(&t.review_status)
                || (t.impl_status == ImplStatus::Completed
                    && state.current_phase_status == PhaseStatus::Completed)
            {
                "done"
            } else if t.review_status == ReviewStatus::Fail {
                "failed"
            } else if t.impl_status == ImplStatus::Completed {
                "implemented"
            } else if deps_done {
                "ready"
            } else {
                "blocked"
            };
            let (duration_ms, tokens, runs) =
                per_task.get(key.as_str()).copied().unwrap_or_default();
            TaskView {
                id: key.clone(),
                title: t.title.clone(),
                mode: t.execution_mode.to_string(),
                depends_on,
                files: t.files.clone().unwrap_or_default(),
                impl_status: t.impl_status.to_string(),
                review_status: t.review_status.to_string(),
                state: task_state.to_string(),
                retries: t.impl_retries + t.review_retries,
                duration_ms,
                tokens,
                runs,
            }
        })
        .collect();
    // Numeric keys in numeric order.
    tasks.sort_by(|a, b| match (a.id.parse::<u64>(), b.id.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.id.cmp(&b.id),
    });
    tasks
}
