//! [`HistoryIndex`]: the handle the server and the CLI hold.
//!
//! Opening costs nothing. The file is read on first use and kept in memory;
//! every later call looks at the file's size and modification time (one
//! `stat`) and reads only what other processes appended since (a new
//! generation — a rewrite — is read whole). On first use the index also
//! records ended runs it has no record of (forge workspaces, runs that ended
//! while no baton was watching): one listing of the specs root, and only the
//! unknown folders' `state.json` are read. Nothing is ever rescanned at
//! start.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use baton_engine::completion::verdict::Severity;
use baton_state::WorkspaceState;
use baton_workflow::{Registry, WorkflowDefinition};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::collect::{Folder, build_record, outcome};
use crate::error::HistoryError;
use crate::file::HistoryFile;
use crate::friction::FrictionPoint;
use crate::merge::Pattern;
use crate::record::{Outcome, RunRecord};

mod folders;
mod load;
mod loaded;
mod queries;

pub use folders::ARCHIVE_DIR;

use loaded::Loaded;

/// Runs whose findings and friction count, newest first (older ones weigh
/// under 0.1 %).
pub const WINDOW_RUNS: usize = 250;
/// A run's findings weigh half as much as those of the run
/// `HALF_LIFE_RUNS` runs newer.
pub const HALF_LIFE_RUNS: f64 = 25.0;
/// Runs an estimate falls back to (the newest of the effort, or of all).
pub const ESTIMATE_FALLBACK_RUNS: usize = 50;
/// Warnings kept until taken.
const MAX_WARNINGS: usize = 32;

/// Which patterns to return.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PatternFilter {
    /// Only findings of this reviewing agent.
    #[serde(default)]
    pub agent: Option<String>,
    /// Only findings of this review phase.
    #[serde(default)]
    pub phase: Option<String>,
    /// Only CRITICAL or only MINOR findings.
    #[serde(default)]
    pub severity: Option<Severity>,
    /// At most this many (0: 10).
    #[serde(default)]
    pub limit: usize,
}

/// Merged review patterns.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Patterns {
    /// Patterns, heaviest first.
    pub patterns: Vec<Pattern>,
    /// Runs whose reviews were analysed (the newest [`WINDOW_RUNS`]).
    pub runs_analyzed: u32,
}

/// The friction map.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Friction {
    /// Friction points, heaviest first.
    pub points: Vec<FrictionPoint>,
    /// Improvement reports analysed.
    pub reports_analyzed: u32,
}

/// What `reindex` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Reindexed {
    /// Ended runs recorded.
    pub runs: u32,
    /// Workspaces still running (not recorded).
    pub running: u32,
    /// Workspaces whose `state.json` could not be read.
    pub unreadable: Vec<String>,
}

/// Finds a workflow definition by id: a [`Registry`], or one loaded on
/// first use.
pub trait DefinitionSource: Send + Sync + std::fmt::Debug {
    /// The definition with `id`, if known.
    fn definition(&self, id: &str) -> Option<Arc<WorkflowDefinition>>;
}

impl DefinitionSource for Registry {
    fn definition(&self, id: &str) -> Option<Arc<WorkflowDefinition>> {
        self.get(id)
    }
}

/// The run history of one specs root. Cheap to open; share one per process.
#[derive(Debug)]
pub struct HistoryIndex {
    file: HistoryFile,
    registry: Option<Arc<dyn DefinitionSource>>,
    loaded: Mutex<Option<Loaded>>,
    warnings: Mutex<Vec<String>>,
}

/// The weight of a run `age` runs older than the newest, in millionths.
pub fn recency_weight(age: usize) -> u64 {
    (crate::WEIGHT_UNIT as f64 * 0.5f64.powf(age as f64 / HALF_LIFE_RUNS)).round() as u64
}

pub(super) fn builtin_registry() -> &'static Registry {
    static BUILTIN: OnceLock<Registry> = OnceLock::new();
    BUILTIN.get_or_init(Registry::builtin)
}

impl HistoryIndex {
    /// The history of the workspaces under `specs_root`. Reads nothing yet.
    pub fn open(specs_root: &Path) -> HistoryIndex {
        HistoryIndex {
            file: HistoryFile {
                root: specs_root.to_path_buf(),
                durable: false,
            },
            registry: None,
            loaded: Mutex::new(None),
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// Workflow definitions used to find review phases and their artifacts
    /// (default: the built-in ones).
    pub fn with_registry(self, registry: Arc<Registry>) -> HistoryIndex {
        self.with_definitions(registry)
    }

    /// Like [`HistoryIndex::with_registry`], from any source of definitions
    /// (one that loads them on first use, say).
    pub fn with_definitions(mut self, source: Arc<dyn DefinitionSource>) -> HistoryIndex {
        self.registry = Some(source);
        self
    }

    /// fsync every append and rewrite (default off: a record lost to a power
    /// cut is written again by the next catch-up, since the run's own
    /// `state.json` says it ended).
    pub fn with_durability(mut self, durable: bool) -> HistoryIndex {
        self.file.durable = durable;
        self
    }

    /// The history file's path.
    pub fn path(&self) -> PathBuf {
        self.file.path()
    }

    /// Problems met since the last call (a corrupt file and its rebuild, an
    /// unreadable file), for the server log or the terminal.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.warnings))
    }

    pub(super) fn warn(&self, message: String) {
        let mut w = lock(&self.warnings);
        if w.len() < MAX_WARNINGS {
            w.push(message);
        }
    }

    pub(super) fn definition(&self, workflow: &str) -> Option<Arc<WorkflowDefinition>> {
        match &self.registry {
            Some(r) => r.definition(workflow),
            None => builtin_registry().get(workflow),
        }
    }

    /// Appends a record (a newer record of the same workspace replaces the
    /// older one when read). Called after the state write that ended a run.
    pub fn append(&self, record: &RunRecord) -> Result<(), HistoryError> {
        let guard = self.file.exclusive()?;
        self.file.append(&guard, record)
    }

    /// The record of the run in `dir` from its state and files. Works for a
    /// live run too (outcome `running`), for summaries.
    pub fn build(&self, dir: &Path, state: &WorkspaceState) -> RunRecord {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let def = self.definition(&state.workflow);
        build_record(&name, state, &Folder(dir), def.as_deref())
    }

    /// Records the run in `dir` if `state` says it ended; returns the record.
    pub fn record_run(
        &self,
        dir: &Path,
        state: &WorkspaceState,
    ) -> Result<Option<RunRecord>, HistoryError> {
        if outcome(state) == Outcome::Running {
            return Ok(None);
        }
        let record = self.build(dir, state);
        self.append(&record)?;
        Ok(Some(record))
    }

    /// Records the run in `dir` if it ended and has no record yet (for a
    /// finished workspace met on disk); returns whether it was recorded.
    pub fn record_if_missing(
        &self,
        dir: &Path,
        state: &WorkspaceState,
    ) -> Result<bool, HistoryError> {
        if outcome(state) == Outcome::Running {
            return Ok(false);
        }
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let known = self.with(|l, _| l.by_workspace.contains_key(name));
        if known {
            return Ok(false);
        }
        Ok(self.record_run(dir, state)?.is_some())
    }
}

pub(super) fn text_hash(parts: &[&str]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.hash(&mut h);
    }
    h.finish()
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
