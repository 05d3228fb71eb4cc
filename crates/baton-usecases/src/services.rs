//! What every use case needs ([`Services`]): configuration, the state store,
//! the workflow registry, the event bus and the run history, built once per
//! process. How a use case finishes a state write is
//! [`Services::after_write`]; the definition a run follows is
//! [`Services::run_definition`] (each in its own module).

use std::sync::Arc;

use baton_config::Config;
use baton_events::{EventBus, EventKind, EventRecord};
use baton_state::{StateStore, WorkspaceRef, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use crate::error::{Error, ErrorCode, Result};
use crate::lazy_workflows;

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
    pub team: crate::team::TeamLink,
    /// The person's own settings (`~/.config/baton/config.toml`, outside
    /// every repository), read on first use ([`Services::person`]).
    person: std::sync::OnceLock<baton_config::PersonSettings>,
    /// Tags the states this process writes ([`crate::integrity`]).
    signer: Arc<crate::integrity::KeySigner>,
    /// Pinned project definitions parsed so far, by digest.
    pinned: std::sync::Mutex<std::collections::HashMap<String, Arc<WorkflowDefinition>>>,
    /// The project's manual search (seed 002), opened on first use.
    pub manuals: crate::manuals::Manuals,
    /// The repository's quality commands, detected again only when a file
    /// they are read from changed ([`crate::repo_profile::ProfileCache`]).
    pub(crate) repo_profile: crate::repo_profile::ProfileCache,
}

impl Services {
    /// Builds the services for `config`. The built-in and project workflow
    /// definitions are parsed on first use (invalid project files are
    /// skipped and kept in [`Services::workflow_errors`]).
    pub fn new(config: Config, bus: Arc<EventBus>, version: &'static str) -> Services {
        // Every state written carries a tag only the person's key makes
        // (`integrity`); the key is read on the first write.
        let signer = Arc::new(crate::integrity::KeySigner::new());
        let store = StateStore::new(&config.repo_root, &config.specs_root)
            .with_signer(Arc::clone(&signer) as Arc<dyn baton_state::integrity::StateSigner>)
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
                std::sync::Arc::new(move |ws, state| {
                    crate::git::settle_baseline(&repo_root, ws, state)
                })
            })
            // A state written behind baton's back is never built upon: the
            // change starts from what baton last wrote, and the run is held
            // (hooks::outside).
            .with_on_outside(Arc::new(crate::hooks::hold::hold_found));
        // What baton writes is witnessed outside every agent's sandbox.
        let store = match baton_config::person::witness_dir() {
            Some(folder) => store.with_witness(&folder),
            None => store,
        };
        let loaded = lazy_workflows::LoadedWorkflows::new(config.workflows_dir.clone());
        let workflows = lazy_workflows::Workflows(Arc::clone(&loaded));
        // The run history reads nothing yet. Appends are not fsynced
        // whatever `BATON_FSYNC` says: a record lost to a power cut is
        // written again by the next catch-up (docs/history.md §3).
        let history = baton_history::HistoryIndex::open(&config.specs_root)
            .with_definitions(Arc::new(workflows.clone()));
        let team = crate::team::TeamLink::new(&config, version);
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
            signer,
            manuals: crate::manuals::Manuals::default(),
            repo_profile: crate::repo_profile::ProfileCache::default(),
        }
    }

    /// The signer of the states this process writes, and their check
    /// ([`crate::integrity::check`]).
    pub fn signer(&self) -> &crate::integrity::KeySigner {
        &self.signer
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

    /// Services that publish to no event log (subscribers of this process
    /// only): for commands that read and publish nothing.
    pub fn read_only(config: Config, version: &'static str) -> Services {
        Services::new(config, Arc::new(EventBus::in_memory()), version)
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

    /// Starts the process's long-lived background workers now — the
    /// syncer that makes state changes durable after the reply, and the
    /// reader of new runs' repository baselines — so that a call hands them
    /// its work instead of starting a thread on its reply's path. Servers
    /// call it on a background thread after their handshake; without it,
    /// the first write (the first confirmation) starts them.
    pub fn start_workers(&self) {
        self.store.start_syncer();
        crate::git::start_reader();
    }

    /// Has the baseline reader ask, off every reply's path, what a process
    /// asks once before its first state change: the person's key (read if
    /// there, never made), the home folder (where the witness and the
    /// configuration are), the kernel's boot id (each journal record
    /// carries it) and the file-creation mask. The run's first steps
    /// (`pipeline_init`, the confirmation's question) call it; it only
    /// reads. Not at the server's start: a session that never starts a run
    /// would keep what they touched in memory for nothing. Once per
    /// process; nothing without a started reader (one-shot commands).
    pub fn warm_for_runs(&self) {
        static ASKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if ASKED.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let signer = Arc::clone(&self.signer);
        let handed = crate::git::in_background(move || {
            signer.warm();
            let _ = baton_config::person::witness_dir();
            let _ = baton_state::journal::boot_id();
            let _ = baton_state::fs::umask();
        });
        if !handed {
            // No reader yet: a later call may find one.
            ASKED.store(false, std::sync::atomic::Ordering::Release);
        }
    }

    /// Has the baseline reader make, off every reply's path, the folder
    /// the next run created here takes (`StateStore::prepare_kit`: hidden,
    /// with its lock, `.gitignore`, journal and spare files), so the
    /// confirmation that creates it makes no inode before its reply. The
    /// confirmation's question calls it: the person answers next.
    pub fn prepare_run_folder(&self) {
        let store = self.store.clone();
        crate::git::in_background(move || store.prepare_kit());
    }

    /// Waits until the background syncer has done everything this process
    /// handed it (journals and folders synced, spare files made). A command
    /// that removes the repository next (`baton demo`) calls it first, so
    /// the syncer never meets a folder that is gone.
    pub fn finish_background(&self) {
        baton_state::durable::flush();
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
