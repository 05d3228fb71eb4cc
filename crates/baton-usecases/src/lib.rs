//! # baton-usecases
//!
//! What baton does, without any transport: start a run, take the next step,
//! report a phase, answer a question, abandon, recover by hand, list and show
//! runs. Every adapter — the MCP tools, the HTTP routes, the CLI and the
//! headless driver — parses its own input, calls one use case with typed
//! values and shapes the typed result for its medium.
//!
//! Layering (ARCHITECTURE.md): adapters → **use cases** → engine (pure
//! decisions) → state store (locked load-modify-write). A use case loads the
//! state under the workspace lock, asks the engine what is allowed and what
//! comes next, applies the lifecycle transitions, lets the store write, and
//! only then publishes the events that happened.
//!
//! * [`Services`] — what every use case needs (configuration, store,
//!   workflow registry, event bus, run history); built once per process.
//!   [`Services::after_write`] is the one way a use case finishes a state
//!   write: record the run if the write ended it, then publish the events.
//! * [`pipeline`] — seed 001's pipeline: `init/` (detection and the
//!   confirmation), `next` (`pipeline_next_action`), `answer`, `report`,
//!   all over the internal step loop (`pipeline/step/`), which imports
//!   nothing above it; the reply and its prompts are shaped apart.
//! * [`recovery`] — the lifecycle tools by hand (start, complete, fail,
//!   skip, checkpoint, abandon), each forced with a reason.
//! * [`issue`], [`runs`], [`workflows`] — seed 004's issue workflow,
//!   starting and selecting runs, definitions and their analytics.
//! * [`show`] — read-only views of runs for tools (`state_get`, resume
//!   info, the list of workspaces).
//! * [`git`], [`repo_profile`] — what the repository holds (status,
//!   baseline, quality commands), read, never written.
//! * [`manuals`] — the project's manual search service (seed 002).
//! * [`lazy_workflows`] — definitions parsed on first use.
//! * [`history`] — the run history: recording ended runs, Layer 4 of
//!   prompts, estimates, and the history and analytics queries.
//! * [`error`] — the closed set of error codes every adapter shows.
//! * [`validate`] — input limits shared by all adapters.
//! * [`files`] — the engine's view of a workspace on disk.
//! * [`events`] — seed-003 events for lifecycle transitions.
//! * [`overview`] — runs at a glance for people (list pages, one run's
//!   phases, tasks, timeline, artifacts and pending question).
//! * [`notifications`] — which events a person is told about, and what.
//! * [`team`] — team mode: the team database beside the files (writes,
//!   one run per issue, other machines' runs, events, history, answers).
//! * [`baseline`] — a migrated run without a baseline of the repository
//!   gets a safe one (nothing dirty when baton met it is the run's).
//! * [`hooks`] — the agent clients' hooks: the bound run's scope on every
//!   tool call, the stop guard, the person's answer typed in the chat.
//! * [`integrity`] — the tag on every `state.json` baton writes (a key in
//!   the person's configuration folder) and its check.
//! * [`pinning`] — a run keeps the workflow definition it started with.
//! * [`tamper`] — a `state.json` changed outside baton, found and shown;
//!   a person's question it skipped is asked again.
//! * [`trust`] — who may answer a question: a person's channels, the
//!   client's channels the person trusts, `--auto` the person granted.
//! * [`headless`] — what the headless driver (`baton run`) records: its own
//!   record (what drives a run, how to resume it), a failed agent, and the
//!   scope of the phase an agent is started for.
//! * [`elsewhere`] — ended runs whose files are on another branch (from the
//!   run history), so `baton ls` keeps listing them.
//! * [`guidance`] — what a person does next with a run, in words for a
//!   person (resume and answer commands).

#![warn(missing_docs)]

mod after_write;
pub mod baseline;
pub mod elsewhere;
pub mod error;
pub mod events;
pub mod files;
pub mod git;
pub mod guidance;
pub mod headless;
pub mod history;
pub mod hooks;
pub mod integrity;
pub mod issue;
pub mod lazy_workflows;
pub mod manuals;
pub mod notifications;
pub mod overview;
pub mod pinning;
pub mod pipeline;
pub mod recovery;
pub mod repo_profile;
pub mod runs;
pub mod services;
pub mod show;
pub mod tamper;
pub mod team;
pub mod trust;
pub mod validate;
pub mod witness;
pub mod workflows;

/// Who answers or acts, and through which channel: what the use cases take
/// and record.
pub use baton_state::{Actor, Channel, Who};
pub use error::{Error, ErrorCode, Result};
pub use services::Services;

/// Runs a use case on a thread that must not wait (a server's protocol
/// thread): `None` when it met a lock another process holds before taking
/// any, or slow work (git, the history's first load, a manual search)
/// before it wrote anything — it changed nothing, and is to be run again
/// where waiting is fine (`baton_state::fs`).
pub use baton_state::fs::without_waiting;
