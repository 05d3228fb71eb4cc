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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use baton_engine::completion::verdict::Severity;
use baton_engine::pipeline::prompt::LearningBlock;
use baton_state::{Effort, WorkspaceState};
use baton_workflow::{Registry, WorkflowDefinition};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analytics::{
    Basis, Dashboard, Estimate, MIN_SIMILAR, PriceTable, RunSummary, dashboard, estimate,
    run_summary,
};
use crate::bm25::Bm25;
use crate::collect::{Folder, build_record, outcome};
use crate::entry::Entry;
use crate::error::HistoryError;
use crate::file::HistoryFile;
use crate::friction::{FrictionObservation, FrictionPoint};
use crate::layer4::ReviewerPatterns;
use crate::merge::{Observation, Pattern, merge_findings};
use crate::record::{Outcome, RunRecord};
use crate::similar::{Corpus, LAYER4_MIN_MATCHED, SimilarRun, rank, strong};

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

#[derive(Debug, Default)]
struct Loaded {
    generation: String,
    offset: u64,
    identity: Option<(u64, Option<std::time::SystemTime>)>,
    entries: Vec<Entry>,
    alive: Vec<bool>,
    by_workspace: HashMap<String, usize>,
    bm25: Bm25,
    derived: Option<Arc<Derived>>,
    /// The last Layer-4 similar-run query (hash of request and design) and
    /// its answer: the prompts of one run share them.
    similar_cache: Option<(u64, Vec<SimilarRun>)>,
    caught_up: bool,
}

#[derive(Debug)]
struct Derived {
    patterns: Vec<Pattern>,
    friction: Vec<FrictionPoint>,
    runs_with_reviews: u32,
    reports: u32,
}

impl Loaded {
    /// Adds a record's entry with its search terms (the file's form);
    /// a newer record of the same workspace replaces the older one (whose
    /// terms are read back from `file`: they are not kept in memory).
    fn add(&mut self, entry: Entry, terms: &str, file: &HistoryFile) {
        if let Some(old) = self.by_workspace.get(&entry.workspace).copied() {
            let same = {
                let o = &self.entries[old];
                o.ended == entry.ended
                    && o.terms_hash == entry.terms_hash
                    && o.tokens == entry.tokens
                    && o.outcome == entry.outcome
                    && o.line_len == entry.line_len
            };
            if same {
                // The same record again: point at the newer line.
                self.entries[old].offset = entry.offset;
                return;
            }
            self.alive[old] = false;
            let (o_offset, o_len) = (self.entries[old].offset, self.entries[old].line_len);
            let old_terms = file
                .read_details(o_offset, o_len)
                .map(|(t, _)| t)
                .unwrap_or_default();
            self.bm25.remove(old, crate::entry::terms(&old_terms));
        }
        let doc = self.bm25.add(crate::entry::terms(terms), entry.len);
        debug_assert_eq!(doc, self.entries.len());
        self.by_workspace.insert(entry.workspace.clone(), doc);
        self.entries.push(entry);
        self.alive.push(true);
        self.derived = None;
        self.similar_cache = None;
    }

    /// Gives back the room a whole load grew the index into.
    fn shrink(&mut self) {
        self.entries.shrink_to_fit();
        self.alive.shrink_to_fit();
        self.by_workspace.shrink_to_fit();
        self.bm25.shrink();
    }

    /// Live documents, newest first (by end time, then workspace name).
    fn newest_first(&self) -> Vec<usize> {
        let mut docs: Vec<usize> = (0..self.entries.len()).filter(|d| self.alive[*d]).collect();
        docs.sort_by(|a, b| {
            let (ea, eb) = (&self.entries[*a], &self.entries[*b]);
            eb.ended
                .cmp(&ea.ended)
                .then_with(|| eb.workspace.cmp(&ea.workspace))
        });
        docs
    }

    /// A document's terms (the file's form) and request, read from the file.
    fn details(&self, file: &HistoryFile, doc: usize) -> Option<(String, String)> {
        let e = self.entries.get(doc)?;
        file.read_details(e.offset, e.line_len)
    }

    /// Full records of documents, read from the file (unreadable ones left out).
    fn records(&self, file: &HistoryFile, docs: &[usize]) -> Vec<RunRecord> {
        let lines: Vec<(u64, u32)> = docs
            .iter()
            .map(|d| (self.entries[*d].offset, self.entries[*d].line_len))
            .collect();
        file.read_records(&lines)
            .into_iter()
            .zip(docs)
            .filter_map(|(r, d)| r.filter(|r| r.workspace == self.entries[*d].workspace))
            .collect()
    }

    fn derived(&mut self, file: &HistoryFile) -> Arc<Derived> {
        if let Some(d) = &self.derived {
            return Arc::clone(d);
        }
        let newest = self.newest_first();
        let window: Vec<usize> = newest.into_iter().take(WINDOW_RUNS).collect();
        // Only runs with findings or friction need reading.
        let wanted: Vec<(usize, usize)> = window
            .iter()
            .enumerate()
            .filter(|(_, d)| self.entries[**d].reviewed || self.entries[**d].reported)
            .map(|(age, d)| (age, *d))
            .collect();
        let docs: Vec<usize> = wanted.iter().map(|(_, d)| *d).collect();
        let records = self.records(file, &docs);
        let ages: HashMap<&str, usize> = wanted
            .iter()
            .map(|(age, d)| (self.entries[*d].workspace.as_str(), *age))
            .collect();
        let mut findings = Vec::new();
        let mut friction = Vec::new();
        let (mut runs_with_reviews, mut reports) = (0u32, 0u32);
        for r in &records {
            let Some(age) = ages.get(r.workspace.as_str()).copied() else {
                continue;
            };
            let weight = recency_weight(age);
            let seen = (WINDOW_RUNS - age) as u64;
            if !r.findings.is_empty() || !r.verdicts.is_empty() {
                runs_with_reviews += 1;
            }
            if !r.friction.is_empty() {
                reports += 1;
            }
            for f in &r.findings {
                findings.push(Observation {
                    text: f.text.clone(),
                    phase: f.phase.clone(),
                    agent: f.agent.clone(),
                    severity: f.severity,
                    count: 1,
                    weight,
                    seen,
                    run: r.workspace.clone(),
                });
            }
            for item in &r.friction {
                friction.push(FrictionObservation {
                    item: item.clone(),
                    weight,
                    seen,
                    run: r.workspace.clone(),
                });
            }
        }
        let d = Arc::new(Derived {
            patterns: merge_findings(&findings),
            friction: crate::friction::merge(&friction),
            runs_with_reviews,
            reports,
        });
        self.derived = Some(Arc::clone(&d));
        d
    }
}

/// The weight of a run `age` runs older than the newest, in millionths.
pub fn recency_weight(age: usize) -> u64 {
    (crate::WEIGHT_UNIT as f64 * 0.5f64.powf(age as f64 / HALF_LIFE_RUNS)).round() as u64
}

fn builtin_registry() -> &'static Registry {
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

    fn warn(&self, message: String) {
        let mut w = lock(&self.warnings);
        if w.len() < MAX_WARNINGS {
            w.push(message);
        }
    }

    fn definition(&self, workflow: &str) -> Option<Arc<WorkflowDefinition>> {
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

    /// Records every ended run under the specs root that has no record yet:
    /// one listing of the folder; only unknown folders' `state.json` are
    /// read. Returns how many were recorded. Runs once by itself on first use.
    pub fn catch_up(&self) -> Result<usize, HistoryError> {
        let mut slot = lock(&self.loaded);
        self.refresh(&mut slot);
        let Some(l) = slot.as_mut() else {
            return Ok(0);
        };
        self.catch_up_loaded(l)
    }

    fn catch_up_loaded(&self, l: &mut Loaded) -> Result<usize, HistoryError> {
        l.caught_up = true;
        // Built and appended a batch at a time: 10,000 unrecorded runs are
        // never all in memory, and other processes' appends wait for one
        // batch at most.
        const BATCH: usize = 64;
        let mut batch = Vec::with_capacity(BATCH);
        let mut recorded = 0;
        let flush = |batch: &mut Vec<RunRecord>| -> Result<(), HistoryError> {
            if batch.is_empty() {
                return Ok(());
            }
            let guard = self.file.exclusive()?;
            for r in batch.drain(..) {
                self.file.append(&guard, &r)?;
            }
            Ok(())
        };
        for (name, dir) in workspace_dirs(&self.file.root) {
            if l.by_workspace.contains_key(&name) {
                continue;
            }
            if let Ok(state) = read_state(&dir)
                && outcome(&state) != Outcome::Running
            {
                batch.push(self.build(&dir, &state));
                recorded += 1;
                if batch.len() == BATCH {
                    flush(&mut batch)?;
                }
            }
        }
        flush(&mut batch)?;
        if recorded == 0 {
            return Ok(0);
        }
        let mut slot = Some(std::mem::take(l));
        self.refresh(&mut slot);
        *l = slot.unwrap_or_default();
        l.caught_up = true;
        Ok(recorded)
    }

    /// Rebuilds the file from every workspace under the specs root (a new
    /// generation; other processes reload it).
    pub fn reindex(&self) -> Result<Reindexed, HistoryError> {
        let mut slot = lock(&self.loaded);
        self.rebuild(&mut slot)
    }

    fn rebuild(&self, slot: &mut Option<Loaded>) -> Result<Reindexed, HistoryError> {
        let mut report = Reindexed::default();
        {
            let guard = self.file.exclusive()?;
            // Each record is written as it is built: never all in memory.
            let mut built = workspace_dirs(&self.file.root)
                .into_iter()
                .filter(|(_, dir)| crate::file::is_workspace(dir))
                .filter_map(|(name, dir)| match read_state(&dir) {
                    Ok(state) if outcome(&state) == Outcome::Running => {
                        report.running += 1;
                        None
                    }
                    Ok(state) => Some(self.build(&dir, &state)),
                    Err(_) => {
                        report.unreadable.push(name);
                        None
                    }
                });
            let (_, runs) = self.file.rewrite_each(&guard, &mut built)?;
            report.runs = runs as u32;
        }
        *slot = Some(self.full_load(true, false));
        Ok(report)
    }

    /// Runs `f` on the up-to-date index.
    fn with<T>(&self, f: impl FnOnce(&mut Loaded, &HistoryFile) -> T) -> T {
        let mut slot = lock(&self.loaded);
        self.refresh(&mut slot);
        let l = slot.get_or_insert_with(Loaded::default);
        if !l.caught_up
            && let Err(e) = self.catch_up_loaded(l)
        {
            self.warn(format!("history: recording ended runs failed: {e}"));
        }
        f(l, &self.file)
    }

    /// Reads the whole file on first use; later only what was appended, or
    /// the whole file again when another process rewrote it.
    fn refresh(&self, slot: &mut Option<Loaded>) {
        // An earlier version's file under the specs root moves into the
        // history folder on first use (under the lock, by `exclusive`).
        if slot.is_none()
            && self.file.has_legacy()
            && let Err(e) = self.file.exclusive()
        {
            self.warn(format!(
                "history: moving the earlier history file into {} failed: {e}",
                self.file.dir().display()
            ));
        }
        let identity = self.file.identity();
        if let Some(l) = slot.as_mut() {
            if l.identity == identity && identity.is_some() {
                return;
            }
            if identity.is_some_and(|(len, _)| len >= l.offset) && !l.generation.is_empty() {
                let same = {
                    let _shared = self.file.shared();
                    matches!(self.file.header(), Ok(Some(Ok((h, _)))) if h.generation == l.generation)
                };
                if same && self.tail(l) {
                    return;
                }
            }
        }
        let caught_up = slot.as_ref().is_some_and(|l| l.caught_up);
        *slot = Some(self.full_load(caught_up, true));
    }

    /// Reads what was appended after `l.offset`; `false` when the new part
    /// is damaged (the caller then loads and repairs the whole file).
    fn tail(&self, l: &mut Loaded) -> bool {
        let chunk = {
            let _shared = self.file.shared();
            let identity = self.file.identity();
            let from = l.offset;
            // Entries go in as read; a damaged part makes the caller load
            // (and repair) the whole file instead, dropping these.
            match self
                .file
                .read_from(from, |e, terms| l.add(e, terms, &self.file))
            {
                Ok(c) => {
                    l.identity = identity;
                    c
                }
                Err(e) => {
                    self.warn(format!("history: {e}"));
                    return true;
                }
            }
        };
        if chunk.bad_lines > 0 || chunk.torn_tail {
            return false;
        }
        l.offset = chunk.end;
        true
    }

    /// Reads the whole file; a problem gives a warning and a rebuild.
    /// `caught_up`: whether this process already recorded the runs on disk;
    /// `repair`: whether a damaged file may be repaired (once).
    fn full_load(&self, caught_up: bool, repair: bool) -> Loaded {
        let shared = self.file.shared();
        let identity = self.file.identity();
        let header = match self.file.header() {
            Ok(h) => h,
            Err(e) => {
                self.warn(format!("history: {e}"));
                return Loaded::default();
            }
        };
        match header {
            None => Loaded {
                caught_up,
                ..Loaded::default()
            },
            Some(Err(problem)) => {
                drop(shared);
                if !repair {
                    return Loaded::default();
                }
                self.warn(format!(
                    "history: {} cannot be used ({problem}); rebuilding it from the workspaces",
                    self.file.path().display()
                ));
                let mut fresh = None;
                match self.rebuild(&mut fresh) {
                    Ok(_) => fresh.unwrap_or_default(),
                    Err(e) => {
                        self.warn(format!("history: rebuilding failed: {e}"));
                        Loaded {
                            caught_up: true,
                            ..Loaded::default()
                        }
                    }
                }
            }
            Some(Ok((header, offset))) => {
                let mut l = Loaded {
                    generation: header.generation,
                    identity,
                    caught_up,
                    ..Loaded::default()
                };
                // Line by line, each record into the index as it is read.
                let chunk = match self
                    .file
                    .read_from(offset, |e, terms| l.add(e, terms, &self.file))
                {
                    Ok(c) => c,
                    Err(e) => {
                        self.warn(format!("history: {e}"));
                        return Loaded::default();
                    }
                };
                drop(shared);
                if (chunk.bad_lines > 0 || chunk.torn_tail) && repair {
                    drop(l);
                    return self.repair(chunk.bad_lines, chunk.torn_tail);
                }
                l.offset = chunk.end;
                l.shrink();
                l
            }
        }
    }

    /// Rewrites the file without its unreadable lines (read again under the
    /// exclusive lock: another process may have repaired or appended). The
    /// runs those lines held are recorded again from their workspaces by the
    /// catch-up that follows.
    fn repair(&self, bad_lines: usize, torn: bool) -> Loaded {
        let what = match (bad_lines, torn) {
            (0, _) => "a partly written last line".to_string(),
            (n, false) => format!("{n} unreadable line(s)"),
            (n, true) => format!("{n} unreadable line(s) and a partly written last line"),
        };
        self.warn(format!(
            "history: {} has {what}; rewriting it without them and re-recording the runs they held from their workspaces",
            self.file.path().display()
        ));
        let result = (|| {
            let guard = self.file.exclusive()?;
            self.file.rewrite_good_lines(&guard)
        })();
        if let Err(e) = result {
            self.warn(format!("history: repairing failed: {e}"));
        }
        self.full_load(false, false)
    }

    /// Loads the index and merges the patterns now, so the first prompt
    /// does not pay for it: call it on a background thread at server start.
    pub fn warm(&self) {
        self.with(|l, file| {
            l.derived(file);
        });
    }

    /// Records in the index (one per workspace).
    pub fn len(&self) -> usize {
        self.with(|l, _| l.bm25.len())
    }

    /// Whether no run is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every recorded run, newest first: workspace, outcome and when it
    /// ended (the full record, with its request and branch: [`Self::get`]).
    pub fn ended_runs(&self) -> Vec<(String, crate::record::Outcome, baton_state::Timestamp)> {
        self.with(|l, _| {
            let mut runs: Vec<_> = l
                .entries
                .iter()
                .enumerate()
                .filter(|(i, _)| l.alive.get(*i).copied().unwrap_or(false))
                .map(|(_, e)| (e.workspace.clone(), e.outcome, e.ended))
                .collect();
            runs.sort_by_key(|r| std::cmp::Reverse(r.2));
            runs
        })
    }

    /// The record of one workspace, if any.
    pub fn get(&self, workspace: &str) -> Option<RunRecord> {
        self.with(|l, file| {
            let doc = *l.by_workspace.get(workspace)?;
            l.records(file, &[doc]).pop()
        })
    }

    /// The `k` past runs most like `text` (a request, a design, a few
    /// words), with the words each shares with it.
    pub fn similar(&self, text: &str, k: usize) -> Vec<SimilarRun> {
        self.with(|l, file| {
            rank(
                Corpus {
                    bm25: &l.bm25,
                    entries: &l.entries,
                    details: &|d| l.details(file, d),
                },
                text,
                "",
                k,
                1,
                &|d| l.alive[d],
            )
        })
    }

    /// Review patterns, heaviest first.
    pub fn patterns(&self, filter: &PatternFilter) -> Patterns {
        self.with(|l, file| {
            let d = l.derived(file);
            let limit = if filter.limit == 0 { 10 } else { filter.limit };
            let mut patterns = crate::layer4::filter_patterns(
                &d.patterns,
                filter.agent.as_deref(),
                filter.phase.as_deref(),
                filter.severity,
            );
            patterns.truncate(limit);
            Patterns {
                patterns,
                runs_analyzed: d.runs_with_reviews,
            }
        })
    }

    /// The friction map, heaviest first (at most `limit`, 0: 10).
    pub fn friction(&self, limit: usize) -> Friction {
        self.with(|l, file| {
            let d = l.derived(file);
            let limit = if limit == 0 { 10 } else { limit };
            Friction {
                points: d.friction.iter().take(limit).cloned().collect(),
                reports_analyzed: d.reports,
            }
        })
    }

    /// Layer 4 of the prompt of `agent` in a new run with this request (and
    /// design, once it exists), within `budget_tokens`
    /// ([`crate::layer4::compose`]). Empty when there is nothing to say.
    pub fn layer4(
        &self,
        agent: &str,
        request: &str,
        design: Option<&str>,
        budget_tokens: usize,
    ) -> Vec<LearningBlock> {
        self.layer4_for(None, agent, request, design, budget_tokens)
    }

    /// Layer 4 of a prompt in the run in folder `workspace`: like
    /// [`HistoryIndex::layer4`], and that run is never one of its own
    /// similar past runs (a record of it, from an earlier end or a copy,
    /// is left out).
    pub fn layer4_for(
        &self,
        workspace: Option<&str>,
        agent: &str,
        request: &str,
        design: Option<&str>,
        budget_tokens: usize,
    ) -> Vec<LearningBlock> {
        let plan = crate::layer4::plan(agent);
        if plan.is_empty() {
            return Vec::new();
        }
        let wants_similar = plan
            .iter()
            .any(|w| matches!(w, crate::layer4::Want::Similar(_)));
        self.with(|l, file| {
            if l.bm25.is_empty() {
                return Vec::new();
            }
            let similar = if wants_similar {
                let design = design.unwrap_or("");
                let own = workspace.unwrap_or("");
                let key = text_hash(&[request, design, own]);
                match &l.similar_cache {
                    Some((k, hits)) if *k == key => hits.clone(),
                    _ => {
                        let hits = strong(rank(
                            Corpus {
                                bm25: &l.bm25,
                                entries: &l.entries,
                                details: &|d| l.details(file, d),
                            },
                            request,
                            design,
                            3,
                            LAYER4_MIN_MATCHED,
                            &|d| l.alive[d] && l.entries[d].workspace != own,
                        ));
                        l.similar_cache = Some((key, hits.clone()));
                        hits
                    }
                }
            } else {
                Vec::new()
            };
            let d = l.derived(file);
            crate::layer4::compose(agent, &similar, &d.patterns, &d.friction, budget_tokens)
        })
    }

    /// Tokens, work minutes and cost to expect for a request: from the
    /// completed runs most like it (at least [`MIN_SIMILAR`], of the same
    /// effort when one is given), else from the newest completed runs of
    /// the effort, else of all.
    pub fn estimate(&self, request: &str, effort: Option<Effort>, prices: &PriceTable) -> Estimate {
        self.estimate_for(None, request, effort, prices)
    }

    /// The estimate for the request of the run in folder `workspace`: like
    /// [`HistoryIndex::estimate`], and that run is never part of its own
    /// sample (a record of it, once it ended, is left out).
    pub fn estimate_for(
        &self,
        workspace: Option<&str>,
        request: &str,
        effort: Option<Effort>,
        prices: &PriceTable,
    ) -> Estimate {
        let own = workspace.unwrap_or("");
        self.with(|l, file| {
            let fits = |e: &Entry| {
                e.outcome == Outcome::Completed
                    && effort.is_none_or(|x| e.effort == Some(x))
                    && e.workspace != own
            };
            let similar = strong(rank(
                Corpus {
                    bm25: &l.bm25,
                    entries: &l.entries,
                    details: &|d| l.details(file, d),
                },
                request,
                "",
                10,
                LAYER4_MIN_MATCHED,
                &|d| l.alive[d] && fits(&l.entries[d]),
            ));
            let (basis, docs): (Basis, Vec<usize>) = if similar.len() >= MIN_SIMILAR {
                (
                    Basis::Similar,
                    similar
                        .iter()
                        .filter_map(|s| l.by_workspace.get(&s.workspace).copied())
                        .collect(),
                )
            } else {
                let newest = l.newest_first();
                let pick = |filter: &dyn Fn(&Entry) -> bool| -> Vec<usize> {
                    newest
                        .iter()
                        .copied()
                        .filter(|d| filter(&l.entries[*d]))
                        .take(ESTIMATE_FALLBACK_RUNS)
                        .collect()
                };
                let by_effort = if effort.is_some() {
                    pick(&fits)
                } else {
                    Vec::new()
                };
                if by_effort.is_empty() {
                    (
                        Basis::All,
                        pick(&|e| e.outcome == Outcome::Completed && e.workspace != own),
                    )
                } else {
                    (Basis::Effort, by_effort)
                }
            };
            let records = l.records(file, &docs);
            let sample: Vec<&RunRecord> = records.iter().collect();
            estimate(basis, &sample, prices)
        })
    }

    /// The review patterns reviewing `agent`'s Layer 4 gives it, at most
    /// `limit` ([`crate::layer4::reviewer_patterns`]); `None` for an agent
    /// that reviews nothing.
    pub fn reviewer_patterns(&self, agent: &str, limit: usize) -> Option<ReviewerPatterns> {
        if crate::layer4::plan(agent).is_empty() {
            return None;
        }
        self.with(|l, file| {
            let d = l.derived(file);
            crate::layer4::reviewer_patterns(agent, &d.patterns, limit)
        })
    }

    /// The repository dashboard over every recorded run, or the runs of one
    /// workflow (reads every record).
    pub fn dashboard(&self, workflow: Option<&str>, prices: &PriceTable) -> Dashboard {
        self.with(|l, file| {
            let docs: Vec<usize> = (0..l.entries.len()).filter(|d| l.alive[*d]).collect();
            let records = l.records(file, &docs);
            dashboard(
                records
                    .iter()
                    .filter(|r| workflow.is_none_or(|w| r.workflow == w)),
                prices,
            )
        })
    }

    /// The summary of a recorded run.
    pub fn summary(&self, workspace: &str, prices: &PriceTable) -> Option<RunSummary> {
        self.get(workspace).map(|r| run_summary(&r, prices))
    }
}

fn text_hash(parts: &[&str]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.hash(&mut h);
    }
    h.finish()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Workspace folders directly under `root` (not hidden, not symlinks), by name.
/// The folder `workflow_archive` moves ended runs into, under the specs root.
pub const ARCHIVE_DIR: &str = "archive";

/// The workspace folders under `root` (not hidden ones), then those of its
/// archive folder (`archive/<name>`): an archived run stays in the history
/// when it is rebuilt.
fn workspace_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = child_dirs(root);
    out.retain(|(name, _)| name != ARCHIVE_DIR);
    out.extend(child_dirs(&root.join(ARCHIVE_DIR)));
    out
}

/// The sub-folders of `dir` (not hidden ones, not links), sorted by name.
fn child_dirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            (!name.starts_with('.')).then(|| (name, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Reads and migrates a workspace's state: `state.json`, or while the run's
/// final form is sealed into it before its commit, the live state beside it
/// (the run is still going then, whatever `state.json` says).
fn read_state(dir: &Path) -> Result<WorkspaceState, String> {
    let live = dir.join(baton_state::store::LIVE_STATE_FILE);
    let path = if std::fs::symlink_metadata(&live).is_ok_and(|m| m.file_type().is_file()) {
        live
    } else {
        dir.join(baton_state::store::STATE_FILE)
    };
    // Never through a link, never a FIFO or device, never too large.
    let text = baton_fs::read_string_nofollow(&path, baton_state::store::MAX_STATE_BYTES)
        .map_err(|e| e.to_string())?;
    WorkspaceState::from_json(&text).map_err(|e| e.to_string())
}
