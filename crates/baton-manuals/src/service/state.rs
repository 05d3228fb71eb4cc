//! [`ManualService`]: the shared state behind the six tools.

use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

use crate::corpus::root::ManualsRoot;
use crate::corpus::watch::ChangeWatcher;
use crate::corpus::{Corpus, IndexProgress, IndexStats};
use crate::search::rerank::LateReranker;
use crate::service::cache::{CacheStats, ResultCache};
use crate::service::read_progress::ReadProgress;
use crate::service::trace::TraceStore;
use crate::wire::error::ManualError;
use baton_config::manuals::ManualConfig;
use baton_text::thesaurus::Thesaurus;

/// The manual tools. `Send + Sync`: hold it in an `Arc` and call it from
/// any thread. Calls are synchronous; the index lock is only taken for
/// writing when files changed.
pub struct ManualService {
    pub(crate) config: ManualConfig,
    pub(crate) root: ManualsRoot,
    pub(crate) corpus: RwLock<Corpus>,
    freshness: Mutex<Option<Instant>>,
    watcher: Option<ChangeWatcher>,
    pub(crate) traces: Mutex<TraceStore>,
    pub(crate) cache: Mutex<ResultCache>,
    pub(crate) read_progress: Mutex<ReadProgress>,
    pub(crate) late_reranker: Option<Arc<dyn LateReranker>>,
    /// Query expansion: the built-in entries plus the user's file.
    pub(crate) thesaurus: Thesaurus,
    /// Problems met while loading the user's thesaurus (bad lines skipped).
    thesaurus_problems: Vec<String>,
    /// Calls since the resident mapped pages were last checked.
    calls_since_trim: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for ManualService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualService")
            .field("root", &self.config.root)
            .field("watching", &self.watcher.is_some())
            .finish_non_exhaustive()
    }
}

/// Locks a mutex, recovering the data if another thread panicked with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ManualService {
    /// Opens the service. The manuals root may not exist yet (tools then
    /// report empty listings / `not_found`). The index is built lazily on
    /// the first call that needs it (or eagerly with [`Self::build_index`]).
    /// With `config.watch`, a file watcher is started; if that fails the
    /// service silently relies on `stat` checks (see `docs/manuals.md`).
    pub fn open(config: ManualConfig) -> Result<Self, ManualError> {
        let root = ManualsRoot::new(&config.root);
        let watcher = if config.watch {
            root.canonical().and_then(|r| ChangeWatcher::start(&r).ok())
        } else {
            None
        };
        let corpus = Corpus::new(
            root.clone(),
            config.index_dir.clone(),
            config.max_file_bytes,
            config.index_threads,
        );
        let (thesaurus, thesaurus_problems) = load_thesaurus(&config);
        Ok(ManualService {
            thesaurus,
            thesaurus_problems,
            traces: Mutex::new(TraceStore::new(config.trace_max_keep, config.trace_ttl)),
            cache: Mutex::new(ResultCache::new(
                config.sem_cache_max_keep,
                config.sem_cache_ttl,
            )),
            read_progress: Mutex::new(ReadProgress::default()),
            corpus: RwLock::new(corpus),
            freshness: Mutex::new(None),
            watcher,
            root,
            config,
            late_reranker: None,
            calls_since_trim: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// Installs a late-interaction rerank hook (enables late rerank).
    pub fn with_late_reranker(mut self, reranker: Arc<dyn LateReranker>) -> Self {
        self.late_reranker = Some(reranker);
        self
    }

    /// Problems met while loading the user's thesaurus (`MANUALS_THESAURUS`):
    /// an unreadable file or malformed lines, which were skipped.
    pub fn thesaurus_problems(&self) -> &[String] {
        &self.thesaurus_problems
    }

    /// Everything a person should hear about the configuration when the
    /// service starts: environment values replaced by their default and
    /// thesaurus problems.
    pub fn startup_warnings(&self) -> Vec<String> {
        let config = self.config.warnings.iter().cloned();
        let thesaurus = self
            .thesaurus_problems
            .iter()
            .map(|p| format!("thesaurus line skipped: {p}"));
        config.chain(thesaurus).collect()
    }

    /// Number of thesaurus entries in use (built-in plus the user's).
    pub fn thesaurus_len(&self) -> usize {
        self.thesaurus.len()
    }

    /// The configuration in use.
    pub fn config(&self) -> &ManualConfig {
        &self.config
    }

    /// Whether a file watcher is active.
    pub fn is_watching(&self) -> bool {
        self.watcher.is_some()
    }

    /// Builds/refreshes the index of every manual, reporting progress once
    /// per file, and persists it when an index directory is configured.
    pub fn build_index(
        &self,
        progress: &mut dyn FnMut(IndexProgress),
    ) -> Result<IndexStats, ManualError> {
        let mut fresh = lock(&self.freshness);
        if let Some(w) = &self.watcher {
            w.take();
        }
        let stats = self.write_corpus().refresh_all(progress);
        *fresh = Some(Instant::now());
        Ok(stats)
    }

    /// Warnings met while indexing since the last call (files skipped for
    /// their size or kind, index writes that failed), each once per process.
    pub fn take_index_warnings(&self) -> Vec<String> {
        self.write_corpus().take_warnings()
    }

    /// Counters of the `manual_find` result cache.
    pub fn cache_stats(&self) -> CacheStats {
        lock(&self.cache).snapshot()
    }

    /// Number of live traces.
    pub fn trace_count(&self) -> usize {
        lock(&self.traces).len(Instant::now())
    }

    /// Brings the index up to date before a call: manuals the watcher marked
    /// dirty are refreshed; everything is `stat`-checked when the last full
    /// check is older than `stat_interval` (always, with interval 0).
    pub(crate) fn ensure_fresh(&self) {
        let mut fresh = lock(&self.freshness);
        let now = Instant::now();
        // A mapped segment whose file was truncated under us read as zeros:
        // index everything anew.
        let damaged = crate::index::segment::guard::take_damaged();
        if damaged {
            self.write_corpus().discard_all();
        }
        let dirty = self
            .watcher
            .as_ref()
            .map(ChangeWatcher::take)
            .unwrap_or_default();
        let full_due = damaged
            || dirty.all
            || fresh.is_none_or(|last| {
                now.saturating_duration_since(last) >= self.config.stat_interval
            });
        if full_due {
            let corpus = &mut *self.write_corpus();
            corpus.refresh_all(&mut |_| {});
            if crate::index::segment::guard::take_damaged() {
                // The sweep itself met a cut segment (and may have merged
                // zeros from it): start over from the files.
                corpus.discard_all();
                corpus.refresh_all(&mut |_| {});
            }
            // A sweep reads every file table: let those pages go.
            corpus.trim_mapped(0);
            *fresh = Some(now);
        } else if !dirty.manuals.is_empty() {
            let mut corpus = self.write_corpus();
            for id in &dirty.manuals {
                corpus.refresh_manual(id);
            }
        }
    }

    /// Every few calls, hands mapped index pages back to the kernel when
    /// more than [`crate::corpus::MAPPED_RESIDENT_BUDGET`] are resident.
    pub(crate) fn trim_memory(&self) {
        use std::sync::atomic::Ordering;
        const EVERY: u32 = 4;
        if self.calls_since_trim.fetch_add(1, Ordering::Relaxed) + 1 >= EVERY {
            self.calls_since_trim.store(0, Ordering::Relaxed);
            self.read_corpus()
                .trim_mapped(crate::corpus::MAPPED_RESIDENT_BUDGET);
        }
    }

    /// Makes sure a manual that exists on disk is indexed (a manual created
    /// since the last full check is picked up immediately).
    pub(crate) fn ensure_manual(&self, manual_id: &str) {
        self.ensure_fresh();
        if self.read_corpus().manual(manual_id).is_none() {
            self.write_corpus().refresh_manual(manual_id);
        }
    }

    pub(crate) fn read_corpus(&self) -> RwLockReadGuard<'_, Corpus> {
        self.corpus.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_corpus(&self) -> RwLockWriteGuard<'_, Corpus> {
        self.corpus.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Test hook: whether the watcher has pending events.
    #[cfg(test)]
    pub(crate) fn watcher_dirty(&self) -> bool {
        self.watcher.as_ref().is_some_and(ChangeWatcher::is_dirty)
    }
}

/// The built-in thesaurus (unless turned off) plus the user's file.
fn load_thesaurus(config: &ManualConfig) -> (Thesaurus, Vec<String>) {
    let mut thesaurus = if config.builtin_thesaurus {
        Thesaurus::builtin()
    } else {
        Thesaurus::default()
    };
    let problems = match &config.thesaurus_file {
        Some(path) if config.thesaurus_required || path.exists() => thesaurus.add_file(path),
        _ => Vec::new(),
    };
    (thesaurus, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ManualService>();
    }

    #[test]
    fn watcher_marks_a_manual_dirty_after_an_edit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("manuals");
        std::fs::create_dir_all(root.join("m1")).ok();
        std::fs::write(root.join("m1/a.md"), "# A\ntext\n").ok();
        let mut config = ManualConfig::new(&root);
        config.watch = true;
        config.stat_interval = std::time::Duration::from_secs(3600);
        let service = ManualService::open(config).expect("open");
        assert!(service.is_watching());
        service.ensure_fresh();
        std::fs::write(root.join("m1/a.md"), "# A\nchanged\n").ok();
        // Wait (bounded) for the event to arrive; no timing is asserted.
        let mut seen = false;
        for _ in 0..200 {
            if service.watcher_dirty() {
                seen = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        assert!(seen, "the watcher never reported the edit");
    }
}
