//! Events: what happened to a workflow, for dashboards, streams and audits.
//!
//! * [`EventRecord`] is the record shape (seed 003 taxonomy, forge-pipeline-spec §7.1 fields).
//! * [`EventBus`] is the in-process broadcast plus the append-only JSONL [`EventLog`].
//!
//! Handlers publish events only after the state change they describe was
//! written (seed 003, invariant 3). The state store does not depend on this crate.

#![warn(missing_docs)]

mod log;

use std::path::PathBuf;
use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

pub use log::{EventLog, EventLogError};

/// The closed taxonomy of seed 003.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A workspace was created.
    PipelineInit,
    /// A phase went from pending to in_progress.
    PhaseStart,
    /// An agent was dispatched for the current phase.
    AgentDispatch,
    /// An agent, exec or write_file action reported completion.
    ActionComplete,
    /// A phase completed.
    PhaseComplete,
    /// A phase failed.
    PhaseFail,
    /// The workflow waits for a human.
    Checkpoint,
    /// A review asked for a revision.
    RevisionRequired,
    /// The whole workflow completed.
    PipelineComplete,
    /// The workflow was abandoned.
    Abandon,
}

impl EventKind {
    /// The wire name, e.g. `phase-start`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::PipelineInit => "pipeline-init",
            EventKind::PhaseStart => "phase-start",
            EventKind::AgentDispatch => "agent-dispatch",
            EventKind::ActionComplete => "action-complete",
            EventKind::PhaseComplete => "phase-complete",
            EventKind::PhaseFail => "phase-fail",
            EventKind::Checkpoint => "checkpoint",
            EventKind::RevisionRequired => "revision-required",
            EventKind::PipelineComplete => "pipeline-complete",
            EventKind::Abandon => "abandon",
        }
    }

    /// The outcome seed 003 assigns to this event.
    pub fn outcome(self) -> Outcome {
        match self {
            EventKind::PipelineInit | EventKind::PhaseStart => Outcome::InProgress,
            EventKind::AgentDispatch => Outcome::Dispatched,
            EventKind::ActionComplete | EventKind::PhaseComplete | EventKind::PipelineComplete => {
                Outcome::Completed
            }
            EventKind::PhaseFail | EventKind::RevisionRequired => Outcome::Failed,
            EventKind::Checkpoint => Outcome::AwaitingHuman,
            EventKind::Abandon => Outcome::Abandoned,
        }
    }
}

/// The outcome column of seed 003's event table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Work is under way.
    InProgress,
    /// An agent was handed the work.
    Dispatched,
    /// Finished.
    Completed,
    /// Failed, or a review asked for a revision.
    Failed,
    /// Waiting for a person.
    AwaitingHuman,
    /// Given up.
    Abandoned,
}

/// One event, as stored in the log and streamed to subscribers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventRecord {
    /// What happened.
    pub event: EventKind,
    /// The phase it happened to (for a question to a person: the phase it
    /// stops; the question's name is the detail).
    pub phase: String,
    /// The workspace's spec name (folder name without the date prefix).
    #[serde(rename = "specName")]
    pub spec_name: String,
    /// The workspace, relative to the repository root (e.g. `.specs/20260401-fix-auth`).
    pub workspace: String,
    /// RFC 3339 UTC, whole seconds.
    pub timestamp: String,
    /// The outcome.
    pub outcome: Outcome,
    /// Extra detail (agent name, effort, message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl EventRecord {
    /// Builds a record with the outcome seed 003 assigns to `event`, stamped now.
    pub fn new(event: EventKind, phase: &str, spec_name: &str, workspace: &str) -> EventRecord {
        EventRecord {
            event,
            phase: phase.to_string(),
            spec_name: spec_name.to_string(),
            workspace: workspace.to_string(),
            timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            outcome: event.outcome(),
            detail: None,
        }
    }

    /// Adds a detail text.
    pub fn with_detail(mut self, detail: impl Into<String>) -> EventRecord {
        self.detail = Some(detail.into());
        self
    }
}

/// Capacity of each subscriber's queue; a subscriber that falls further behind misses events.
pub const SUBSCRIBER_BUFFER: usize = 256;

/// In-process broadcast of events plus the persistent log.
///
/// `publish` appends to the log first, then broadcasts; a failing log append is
/// reported but never blocks the broadcast (events are observability, not state).
pub struct EventBus {
    sender: broadcast::Sender<EventRecord>,
    log: Option<Mutex<EventLog>>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.sender.receiver_count())
            .field("logged", &self.log.is_some())
            .finish()
    }
}

impl EventBus {
    /// A bus that only broadcasts (tests, or logging disabled).
    pub fn in_memory() -> EventBus {
        let (sender, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        EventBus { sender, log: None }
    }

    /// A bus that also appends every event to `log`.
    pub fn with_log(log: EventLog) -> EventBus {
        let (sender, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        EventBus {
            sender,
            log: Some(Mutex::new(log)),
        }
    }

    /// Appends `record` to the log and sends it to every subscriber.
    pub fn publish(&self, record: EventRecord) -> Result<(), EventLogError> {
        let logged = match &self.log {
            Some(log) => match log.lock() {
                Ok(mut log) => log.append(&record),
                Err(poisoned) => poisoned.into_inner().append(&record),
            },
            None => Ok(()),
        };
        // No subscribers is not an error.
        let _ = self.sender.send(record);
        logged
    }

    /// A new subscription receiving every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<EventRecord> {
        self.sender.subscribe()
    }

    /// Up to `limit` most recent events from the log (oldest first), for replay.
    pub fn recent(&self, limit: usize) -> Vec<EventRecord> {
        match &self.log {
            Some(log) => match log.lock() {
                Ok(log) => log.tail(limit).unwrap_or_default(),
                Err(poisoned) => poisoned.into_inner().tail(limit).unwrap_or_default(),
            },
            None => Vec::new(),
        }
    }

    /// The log file path, when logging.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.log.as_ref().map(|l| match l.lock() {
            Ok(l) => l.path().to_path_buf(),
            Err(p) => p.into_inner().path().to_path_buf(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_and_outcomes_follow_seed_003() {
        let table = [
            (EventKind::PipelineInit, "pipeline-init", "in_progress"),
            (EventKind::PhaseStart, "phase-start", "in_progress"),
            (EventKind::AgentDispatch, "agent-dispatch", "dispatched"),
            (EventKind::ActionComplete, "action-complete", "completed"),
            (EventKind::PhaseComplete, "phase-complete", "completed"),
            (EventKind::PhaseFail, "phase-fail", "failed"),
            (EventKind::Checkpoint, "checkpoint", "awaiting_human"),
            (EventKind::RevisionRequired, "revision-required", "failed"),
            (
                EventKind::PipelineComplete,
                "pipeline-complete",
                "completed",
            ),
            (EventKind::Abandon, "abandon", "abandoned"),
        ];
        for (kind, name, outcome) in table {
            assert_eq!(kind.as_str(), name);
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
            assert_eq!(serde_json::to_value(kind.outcome()).unwrap(), outcome);
        }
    }

    #[test]
    fn record_serialises_with_spec_field_names() {
        let rec = EventRecord::new(
            EventKind::PhaseStart,
            "phase-1",
            "fix",
            ".specs/20260101-fix",
        );
        let v = serde_json::to_value(&rec).unwrap();
        assert_eq!(v["specName"], "fix");
        assert_eq!(v["outcome"], "in_progress");
        assert!(v.get("detail").is_none());
        assert!(v["timestamp"].as_str().unwrap().ends_with('Z'));
    }

    #[tokio::test]
    async fn subscribers_receive_published_events() {
        let bus = EventBus::in_memory();
        let mut rx = bus.subscribe();
        bus.publish(EventRecord::new(EventKind::Abandon, "phase-2", "s", "w"))
            .unwrap();
        let got = rx.recv().await.unwrap();
        assert_eq!(got.event, EventKind::Abandon);
    }
}
