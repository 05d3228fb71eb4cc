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
//! * [`hooks`] — the agent clients' hooks: the bound run's scope on every
//!   tool call, the stop guard, the person's answer typed in the chat.
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
pub mod elsewhere;
pub mod error;
pub mod events;
pub mod files;
pub mod git;
pub mod guidance;
pub mod headless;
pub mod history;
pub mod hooks;
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
pub mod show;
pub mod tamper;
pub mod team;
pub mod trust;
pub mod validate;
pub mod workflows;

use std::sync::Arc;

use baton_config::Config;
use baton_events::{EventBus, EventKind, EventRecord};
use baton_state::{StateStore, WorkspaceRef, WorkspaceState};
use baton_workflow::WorkflowDefinition;

pub use error::{Error, ErrorCode};

/// A use case's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What every use case needs: configuration, the state store, the workflow
/// registry, the event bus and the run history. Built once per process;
/// cheap to share.
#[derive(Debug)]
pub struct Services {
    /// The resolved configuration.
    pub config: Config,
    /// The state store over the specs root.
    pub store: StateStore,
    /// Known workflow definitions: built-ins plus the project's folder,
    /// parsed on first use (a [`Registry`] through `Deref`).
    pub workflows: lazy_workflows::Workflows,
    /// Problems found in project definition files (those files are skipped),
    /// found when the definitions are loaded (a `Vec` through `Deref`).
    pub workflow_errors: lazy_workflows::WorkflowErrors,
    /// Where events go (subscribers and the repository's event log).
    pub bus: Arc<EventBus>,
    /// This build's version.
    pub version: &'static str,
    /// The run history of the specs root (docs/history.md): opened without
    /// reading anything; loaded on first use, or by
    /// [`baton_history::HistoryIndex::warm`] on a background thread.
    pub history: baton_history::HistoryIndex,
    /// Team mode (docs/team.md): the team database, opened on first use;
    /// off (nothing opened, nothing started) without `BATON_DATABASE_URL`.
    pub team: team::TeamLink,
    /// The person's own settings (`~/.config/baton/config.toml`, outside
    /// every repository), read on first use ([`Services::person`]).
    person: std::sync::OnceLock<baton_config::PersonSettings>,
    /// Pinned project definitions parsed so far, by digest.
    pinned: std::sync::Mutex<std::collections::HashMap<String, Arc<WorkflowDefinition>>>,
    /// The project's manual search (seed 002), opened on first use.
    pub manuals: manuals::Manuals,
}

impl Services {
    /// Builds the services for `config`. The built-in and project workflow
    /// definitions are parsed on first use (invalid project files are
    /// skipped and kept in [`Services::workflow_errors`]).
    pub fn new(config: Config, bus: Arc<EventBus>, version: &'static str) -> Services {
        let store = StateStore::new(&config.repo_root, &config.specs_root)
            .with_durability_mode(match (config.fsync, config.fsync_before_reply) {
                (false, _) => baton_state::Durability::Off,
                (true, false) => baton_state::Durability::Background,
                (true, true) => baton_state::Durability::BeforeReply,
            })
            .with_lock_timeout(std::time::Duration::from_millis(config.lock_timeout_ms))
            .with_before_change({
                // A run's baseline read off its confirmation's reply path
                // reaches its state with its next change (`git`).
                let repo_root = config.repo_root.clone();
                std::sync::Arc::new(move |ws, state| git::settle_baseline(&repo_root, ws, state))
            });
        let loaded = lazy_workflows::LoadedWorkflows::new(config.workflows_dir.clone());
        let workflows = lazy_workflows::Workflows(Arc::clone(&loaded));
        let history = history::open(&config, &workflows);
        let team = team::TeamLink::new(&config, version);
        Services {
            config,
            store,
            workflows,
            workflow_errors: lazy_workflows::WorkflowErrors(loaded),
            bus,
            version,
            history,
            team,
            person: std::sync::OnceLock::new(),
            pinned: std::sync::Mutex::default(),
            manuals: manuals::Manuals::default(),
        }
    }

    /// The workflow definition `state`'s run follows: the one it was
    /// pinned to when it started ([`pinning`]), never a project file
    /// changed since.
    pub fn run_definition(&self, state: &WorkspaceState) -> Result<Arc<WorkflowDefinition>> {
        pinning::run_definition(self, state)
    }

    /// The pinned definition with `digest`, parsed by `parse` the first time.
    pub(crate) fn pinned_definition(
        &self,
        digest: &str,
        parse: impl FnOnce() -> Result<WorkflowDefinition>,
    ) -> Result<Arc<WorkflowDefinition>> {
        let mut cache = self.pinned.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(def) = cache.get(digest) {
            return Ok(Arc::clone(def));
        }
        let def = Arc::new(parse()?);
        cache.insert(digest.to_string(), Arc::clone(&def));
        Ok(def)
    }

    /// The person's own settings (trusted channels, where `--auto` is
    /// allowed), read once per process from their configuration folder
    /// (`baton_config::person`). A file that cannot be used grants nothing
    /// and is reported once in the log.
    pub fn person(&self) -> &baton_config::PersonSettings {
        self.person.get_or_init(|| {
            let settings = baton_config::PersonSettings::load();
            if let Some(problem) = &settings.problem {
                tracing::warn!("the person's configuration grants nothing: {problem}");
            }
            settings
        })
    }

    /// Uses `settings` as the person's (tests, and processes that read them
    /// otherwise); ignored once [`Services::person`] has been read.
    pub fn set_person(&self, settings: baton_config::PersonSettings) {
        let _ = self.person.set(settings);
    }

    /// Opens the repository's event log (rotated JSONL, shared by every
    /// baton process of the repository) and builds the services on it.
    pub fn open(config: Config, version: &'static str) -> Result<Services> {
        let log = baton_events::EventLog::open(
            &config.events.log_path,
            config.events.max_bytes,
            config.events.keep,
        )
        .map_err(|e| {
            Error::new(
                ErrorCode::IoError,
                format!(
                    "cannot open the event log {}: {e}; check BATON_EVENTS_LOG or [events] in baton.toml",
                    config.events.log_path.display()
                ),
            )
        })?;
        let services = Services::new(config, Arc::new(EventBus::with_log(log)), version);
        Ok(services)
    }

    /// Removes the temporary files of state writes killed more than a
    /// minute ago (`.state.json.*.tmp` in every workspace); returns how many.
    /// It reads every workspace folder, so servers call it on a background
    /// thread after their handshake, never on the start path.
    pub fn sweep_temp_files(&self) -> usize {
        let removed = self
            .store
            .sweep_temp_files(std::time::Duration::from_secs(60));
        if removed > 0 {
            tracing::info!("removed {removed} temporary files left by interrupted writes");
        }
        removed
    }

    /// The definition with `id`, or `not_found` listing the known ones.
    pub fn workflow(&self, id: &str) -> Result<Arc<WorkflowDefinition>> {
        self.workflows.get(id).ok_or_else(|| {
            let known: Vec<String> = self.workflows.iter().map(|(d, _)| d.id.clone()).collect();
            Error::new(
                ErrorCode::NotFound,
                format!(
                    "unknown workflow {id:?}; known workflows: {} (project definitions live in {})",
                    known.join(", "),
                    self.config.workflows_dir.display()
                ),
            )
            .with_details(serde_json::json!({ "known": known }))
        })
    }

    /// An event record about `ws`.
    pub fn event(
        &self,
        kind: EventKind,
        phase: &str,
        ws: &WorkspaceRef,
        state: &WorkspaceState,
    ) -> EventRecord {
        EventRecord::new(kind, phase, &state.spec_name, &ws.display)
    }
}
