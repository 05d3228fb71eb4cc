//! The state store: persistence only.
//!
//! * [`schema`] — the `state.json` document (versioned, with migration).
//! * [`lifecycle`] — the one state-machine API of seed 003: start, complete,
//!   fail, checkpoint, skip, abandon. Pure functions on a [`WorkspaceState`];
//!   each returns the [`Transition`]s that happened so the caller can publish
//!   events *after* the write succeeded. This crate knows nothing of events.
//! * [`store`] — workspace folders under the specs root; every mutation is
//!   load → modify → journal → atomic write under an OS lock per workspace;
//!   reads (`read.rs`) take a parsed state and its integrity check from
//!   [`parsed`] only for the exact bytes they came from.
//! * [`journal`] — the write-ahead journal that lets a power cut lose only
//!   the last moments, and puts torn files back after a restart.
//! * [`durable`] — the durability modes and the syncer thread that syncs
//!   journals off the reply's path.
//! * `spare` — the file of a workspace's next state write, made (and the
//!   replaced one closed) by the syncer, off the reply's path.
//! * [`actor`] — who acted on a run, and through which channel.
//! * [`integrity`] — the tag on every `state.json` baton writes, so a
//!   change made outside baton shows.

#![warn(missing_docs)]

pub mod actor;
mod atomic;
pub mod compact;
pub mod durable;
pub mod fs;
pub mod integrity;
pub mod journal;
mod kit;
pub mod lifecycle;
mod names;
pub mod parsed;
mod read;
pub mod schema;
mod spare;
pub mod store;
mod store_error;
pub mod task;
#[cfg(test)]
mod testing;
pub mod witness;

pub use lifecycle::{Lifecycle, LifecycleError, Transition};
pub use schema::{
    Actor, AnswerRecord, Channel, CommandGuard, DecisionReason, DefinitionPin, Effort,
    FlowTemplate, HistoryAction, HistoryEntry, Hold, HumanFeedback, OutstandingAction,
    PendingDecision, PhaseLogEntry, PhaseReport, PhaseStatus, PinSource, RepoBaseline, ReportMemo,
    SCHEMA_VERSION, TamperNote, Who, WorkspaceState,
};
pub use task::{ExecutionMode, ImplStatus, ReviewStatus, Task};
/// A UTC timestamp, as stored in state.json.
pub type Timestamp = chrono::DateTime<chrono::Utc>;

pub use durable::Durability;
pub use store::{Finish, StateStore, StoreError, UpdateError, Updated, WorkspaceRef};
