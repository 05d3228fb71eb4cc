//! Events: what happened to a workflow, for dashboards, streams and audits.
//!
//! * [`EventRecord`] is the record shape (seed 003 taxonomy, forge-pipeline-spec §7.1 fields).
//! * [`EventBus`] is the in-process broadcast plus the append-only JSONL [`EventLog`].
//! * [`follow`] reads what other processes append to the log, live and in order.
//!
//! Handlers publish events only after the state change they describe was
//! written (seed 003, invariant 3). The state store does not depend on this crate.

#![warn(missing_docs)]

pub mod follow;
mod log;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
pub const SUBSCRIBER_BUFFER: usize = 1024;

/// How many recent events a following bus keeps in memory for replay.
pub const RECENT_CAPACITY: usize = 1000;

/// Events in the order subscribers see them, with the most recent ones
/// kept for replay. Pushing and subscribing take one lock, so a new
/// subscriber's replay and its live events neither overlap nor leave a gap.
#[derive(Debug)]
struct Feed {
    recent: Mutex<VecDeque<EventRecord>>,
    sender: broadcast::Sender<EventRecord>,
}

impl Feed {
    fn push(&self, records: Vec<EventRecord>) {
        let mut recent = match self.recent.lock() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        for record in records {
            if recent.len() == RECENT_CAPACITY {
                recent.pop_front();
            }
            recent.push_back(record.clone());
            // No subscribers is not an error.
            let _ = self.sender.send(record);
        }
    }
}

/// In-process broadcast of events plus the persistent log.
///
/// Two streams: [`EventBus::subscribe_local`] yields the events this
/// process published (what its notifications report, so every event is
/// notified once, by the process that caused it); [`EventBus::subscribe`]
/// yields every event subscribers should see — this process's own, or,
/// once [`EventBus::follow_log`] was called, every event any baton process
/// appended to the repository's log, in log order.
///
/// `publish` appends to the log first, then broadcasts; a failing log append is
/// reported but never blocks the broadcast (events are observability, not state).
pub struct EventBus {
    local: broadcast::Sender<EventRecord>,
    feed: Arc<Feed>,
    log: Option<Mutex<EventLog>>,
    follower: Mutex<Option<follow::FollowHandle>>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.feed.sender.receiver_count())
            .field("logged", &self.log.is_some())
            .field("following", &self.is_following())
            .finish()
    }
}

impl EventBus {
    fn build(log: Option<EventLog>) -> EventBus {
        let (local, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        let (sender, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        EventBus {
            local,
            feed: Arc::new(Feed {
                recent: Mutex::new(VecDeque::new()),
                sender,
            }),
            log: log.map(Mutex::new),
            follower: Mutex::new(None),
        }
    }

    /// A bus that only broadcasts (tests, or logging disabled).
    pub fn in_memory() -> EventBus {
        EventBus::build(None)
    }

    /// A bus that also appends every event to `log`.
    pub fn with_log(log: EventLog) -> EventBus {
        EventBus::build(Some(log))
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
        let _ = self.local.send(record.clone());
        // A following bus sees its own events come back from the log; one
        // that could not be logged is delivered directly all the same.
        if !self.is_following() || logged.is_err() {
            self.feed.push(vec![record]);
        }
        logged
    }

    /// Publishes `records` in order ([`EventBus::publish`]), appended to
    /// the log in one write: the events of one state change.
    pub fn publish_all(&self, records: Vec<EventRecord>) -> Result<(), EventLogError> {
        if records.is_empty() {
            return Ok(());
        }
        let logged = match &self.log {
            Some(log) => match log.lock() {
                Ok(mut log) => log.append_all(&records),
                Err(poisoned) => poisoned.into_inner().append_all(&records),
            },
            None => Ok(()),
        };
        for record in &records {
            let _ = self.local.send(record.clone());
        }
        // As in `publish`: a following bus hears its own events from the log.
        if !self.is_following() || logged.is_err() {
            self.feed.push(records);
        }
        logged
    }

    /// Hands events of runs on other machines (team mode) to this
    /// process's subscribers, without logging them: the repository's log
    /// holds this working copy's events only.
    pub fn deliver_remote(&self, records: Vec<EventRecord>) {
        if !records.is_empty() {
            self.feed.push(records);
        }
    }

    /// A new subscription receiving every event from now on: this process's
    /// own, or every process's when following the log.
    pub fn subscribe(&self) -> broadcast::Receiver<EventRecord> {
        self.feed.sender.subscribe()
    }

    /// A new subscription receiving the events this process publishes from now on.
    pub fn subscribe_local(&self) -> broadcast::Receiver<EventRecord> {
        self.local.subscribe()
    }

    /// Up to `limit` most recent events (oldest first) and a subscription
    /// to every later one, taken together: nothing is missed or repeated
    /// between the two when the bus follows the log.
    pub fn subscribe_with_recent(
        &self,
        limit: usize,
    ) -> (Vec<EventRecord>, broadcast::Receiver<EventRecord>) {
        if !self.is_following() {
            let rx = self.subscribe();
            return (self.recent(limit), rx);
        }
        let recent = match self.feed.recent.lock() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        let rx = self.feed.sender.subscribe();
        let skip = recent.len().saturating_sub(limit);
        (recent.iter().skip(skip).cloned().collect(), rx)
    }

    /// Up to `limit` most recent events (oldest first), for replay: from
    /// memory when following, else from the log's tail.
    pub fn recent(&self, limit: usize) -> Vec<EventRecord> {
        if self.is_following() {
            return self.subscribe_with_recent(limit).0;
        }
        match &self.log {
            Some(log) => match log.lock() {
                Ok(log) => log.tail(limit).unwrap_or_default(),
                Err(poisoned) => poisoned.into_inner().tail(limit).unwrap_or_default(),
            },
            None => Vec::new(),
        }
    }

    /// Follows the repository's event log from now on: subscribers get the
    /// events every baton process appends, live and in log order (see
    /// [`follow`]). The most recent [`RECENT_CAPACITY`] events are read
    /// from the log's tail for replay; the rest of the history is never
    /// loaded. Calling it again does nothing; without a log it is an error.
    pub fn follow_log(&self) -> Result<(), EventLogError> {
        let Some(path) = self.log_path() else {
            return Err(EventLogError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other("the event log is off; nothing to follow"),
            });
        };
        let mut follower = match self.follower.lock() {
            Ok(f) => f,
            Err(p) => p.into_inner(),
        };
        if follower.is_some() {
            return Ok(());
        }
        // Hold the feed while the tail is read, so the replay buffer and
        // the first live batch meet exactly at the tail's offset.
        let mut recent = match self.feed.recent.lock() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        let (tail, records) = follow::Tail::start(&path, RECENT_CAPACITY);
        recent.clear();
        recent.extend(records);
        let feed = Arc::clone(&self.feed);
        let handle = follow::spawn(tail, move |batch| {
            feed.push(batch);
            true
        })
        .map_err(|source| EventLogError::Io {
            path: path.clone(),
            source,
        })?;
        drop(recent);
        *follower = Some(handle);
        Ok(())
    }

    /// Whether the bus follows the log ([`EventBus::follow_log`]).
    pub fn is_following(&self) -> bool {
        match self.follower.lock() {
            Ok(f) => f.is_some(),
            Err(p) => p.into_inner().is_some(),
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

    #[tokio::test]
    async fn local_subscribers_see_only_this_process_and_the_feed_sees_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let bus = EventBus::with_log(EventLog::open(&path, 1 << 20, 2).unwrap());
        bus.follow_log().unwrap();
        let mut local = bus.subscribe_local();
        let (_, mut feed) = bus.subscribe_with_recent(10);
        // Another process's writer.
        let mut other = EventLog::open(&path, 1 << 20, 2).unwrap();
        other
            .append(&EventRecord::new(EventKind::PhaseStart, "theirs", "s", "w"))
            .unwrap();
        bus.publish(EventRecord::new(EventKind::PhaseStart, "ours", "s", "w"))
            .unwrap();
        let wait = std::time::Duration::from_secs(10);
        let first = tokio::time::timeout(wait, feed.recv())
            .await
            .unwrap()
            .unwrap();
        let second = tokio::time::timeout(wait, feed.recv())
            .await
            .unwrap()
            .unwrap();
        // Log order, each once.
        assert_eq!(
            (first.phase.as_str(), second.phase.as_str()),
            ("theirs", "ours")
        );
        assert_eq!(local.recv().await.unwrap().phase, "ours");
        assert!(
            local.try_recv().is_err(),
            "the other process's event is not local"
        );
        // A late subscriber replays both from memory.
        let (recent, _) = bus.subscribe_with_recent(10);
        let names: Vec<_> = recent.iter().map(|r| r.phase.as_str()).collect();
        assert_eq!(names, ["theirs", "ours"]);
    }

    #[test]
    fn following_replays_the_log_tail_written_before_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut earlier = EventLog::open(&path, 1 << 20, 2).unwrap();
        for i in 0..3 {
            earlier
                .append(&EventRecord::new(
                    EventKind::PhaseStart,
                    &format!("p{i}"),
                    "s",
                    "w",
                ))
                .unwrap();
        }
        let bus = EventBus::with_log(EventLog::open(&path, 1 << 20, 2).unwrap());
        bus.follow_log().unwrap();
        let (recent, _) = bus.subscribe_with_recent(2);
        let names: Vec<_> = recent.iter().map(|r| r.phase.as_str()).collect();
        assert_eq!(names, ["p1", "p2"]);
        assert!(EventBus::in_memory().follow_log().is_err());
    }
}
