//! What goes into the team database and what comes out of it. Payloads
//! that other crates own (a run's `state.json`, an event, a run-history
//! record) travel as JSON values: this crate stores and returns them and
//! never interprets them, so a newer baton's fields pass through.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One state write of a run: the run's row as it is now, plus what the
/// write did (its events) and, when it ended the run, its history record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunWrite {
    /// The workspace folder name (`20260401-fix-auth`).
    pub workspace: String,
    /// The workspace as shown (`.specs/20260401-fix-auth`).
    pub display: String,
    /// The write's revision: the state's `lastUpdated` in nanoseconds,
    /// set under the workspace lock, so later writes have larger ones. A
    /// row is replaced only by a write with a larger revision; an event is
    /// keyed by (run, revision, position), so a write sent twice is stored
    /// once.
    pub revision: i64,
    /// Workflow id.
    pub workflow: String,
    /// The spec name.
    pub spec_name: String,
    /// The issue, for issue runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// The run's branch, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The current phase.
    pub phase: String,
    /// Its status.
    pub status: String,
    /// Whether the run has not ended.
    pub active: bool,
    /// The question the run waits at, when it waits for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Value>,
    /// Phases done (completed or skipped).
    #[serde(default)]
    pub done: u32,
    /// Phases of the workflow.
    #[serde(default)]
    pub total: u32,
    /// When the run was created.
    pub created: DateTime<Utc>,
    /// When this write happened.
    pub updated: DateTime<Utc>,
    /// The whole state as written, as JSON text (serialised once; stored
    /// as `jsonb`).
    pub state: String,
    /// The events of the write, in order.
    #[serde(default)]
    pub events: Vec<Value>,
    /// The run-history record, when the write ended the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Value>,
}

/// A machine as the team sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineRef {
    /// Its id.
    pub id: String,
    /// Its readable name (`host:folder`).
    pub name: String,
}

/// A run of the team, as listed (no state: a list of 10,000 stays fast).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamRun {
    /// The run's key in the team (`<machine id>/<folder>`).
    pub key: String,
    /// Where it runs.
    pub machine: MachineRef,
    /// The workspace folder name.
    pub workspace: String,
    /// The workspace as shown on its machine.
    pub display: String,
    /// Workflow id.
    pub workflow: String,
    /// The spec name.
    pub spec_name: String,
    /// The issue, for issue runs.
    pub issue: Option<String>,
    /// The branch.
    pub branch: Option<String>,
    /// The current phase.
    pub phase: String,
    /// Its status.
    pub status: String,
    /// Whether it has not ended.
    pub active: bool,
    /// The question it waits at.
    pub waiting: Option<Value>,
    /// Phases done (completed or skipped).
    pub done: u32,
    /// Of those, the phases skipped and never completed (setup left out),
    /// read from the run's state: `baton ls` shows `3/17 (2 skipped)` for
    /// another machine's run as for its own.
    pub skipped: u32,
    /// Phases of the workflow.
    pub total: u32,
    /// Created.
    pub created: DateTime<Utc>,
    /// Last write.
    pub updated: DateTime<Utc>,
    /// When another active run of the same issue held the issue when this
    /// run's start reached the database (a start made offline): that run.
    pub duplicate_of: Option<String>,
}

/// Which runs a page lists (the dashboard's filters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunFilter {
    /// Every run.
    #[default]
    All,
    /// Not ended.
    Active,
    /// Waiting for a person.
    Waiting,
    /// The current phase failed.
    Failed,
    /// Completed.
    Completed,
    /// Abandoned.
    Abandoned,
}

/// A page of the team's runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPage {
    /// The first runs that pass the filter and search (newest first).
    pub runs: Vec<TeamRun>,
    /// How many pass the filter and search.
    pub matching: usize,
    /// Counts per filter over every run of the query's machines:
    /// all, active, waiting, failed, completed, abandoned.
    pub counts: [usize; 6],
}

/// An event of the team's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamEvent {
    /// Its position in the team's log (increasing in commit order).
    pub id: i64,
    /// The run's key.
    pub run_key: String,
    /// Where the run runs.
    pub machine: MachineRef,
    /// The event as its machine logged it.
    pub record: Value,
}

/// A run-history record of the team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamHistory {
    /// Its position (increasing; a newer record of the same run gets a new one).
    pub seq: i64,
    /// The run's key.
    pub run_key: String,
    /// Where the run ran.
    pub machine: MachineRef,
    /// The record as its machine wrote it.
    pub record: Value,
}

/// Who claims an issue: the run about to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueClaim {
    /// The issue, normalised.
    pub issue: String,
    /// The workspace folder the run will have.
    pub workspace: String,
    /// The workspace as shown.
    pub display: String,
}

/// What claiming an issue found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The issue is this run's now.
    Claimed,
    /// Another active run holds it.
    Taken {
        /// That run's workspace as shown on its machine.
        display: String,
        /// Where it runs.
        machine: MachineRef,
    },
}

/// An answer given on another machine, for a run of this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteAnswer {
    /// Its id.
    pub id: i64,
    /// The run's workspace folder (on this machine).
    pub workspace: String,
    /// The question it answers (the name the asking side saw).
    pub question: String,
    /// The answer's words.
    pub answer: String,
    /// `person`, `agent` or `auto`.
    pub who: String,
    /// The channel on the answering machine (`dashboard`, `terminal`).
    pub channel: String,
    /// The answering machine.
    pub from: MachineRef,
}

/// What became of an answer sent to another machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum AnswerStatus {
    /// Not applied yet (the run's machine has no baton running, say).
    Pending,
    /// Applied by the run's machine; what it said.
    Applied(String),
    /// Refused by the run's machine (the question moved on, …); why.
    Refused(String),
}

/// The state of this process's link to the team database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamStatus {
    /// The database, password hidden.
    pub database: String,
    /// This working copy.
    pub machine: MachineRef,
    /// The repository key.
    pub repository: String,
    /// Connected and the schema in place.
    pub connected: bool,
    /// The schema version in the database, when known.
    pub schema_version: Option<i64>,
    /// The newest schema version this baton knows.
    pub known_schema_version: i64,
    /// Writes waiting in the outbox.
    pub queued: usize,
    /// How other machines' events arrive: `listen`, `poll` or `off`.
    pub delivery: String,
    /// The last problem, when there is one.
    pub problem: Option<String>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn sample_write(workspace: &str, revision: i64) -> RunWrite {
        let at = DateTime::<Utc>::from_timestamp_nanos(revision);
        RunWrite {
            workspace: workspace.into(),
            display: format!(".specs/{workspace}"),
            revision,
            workflow: "forge".into(),
            spec_name: workspace.get(9..).unwrap_or(workspace).into(),
            issue: None,
            branch: None,
            phase: "phase-1".into(),
            status: "in_progress".into(),
            active: true,
            waiting: None,
            done: 0,
            total: 5,
            created: at,
            updated: at,
            state: r#"{"workflow":"forge"}"#.into(),
            events: vec![serde_json::json!({"event": "phase-start", "workspace": workspace})],
            history: None,
        }
    }
}
