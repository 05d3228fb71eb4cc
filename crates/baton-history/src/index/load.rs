//! Loading the history: first load, incremental refresh of what other
//! processes appended, catch-up of unrecorded ended runs, rebuild and repair.

use crate::collect::outcome;
use crate::error::HistoryError;
use crate::file::HistoryFile;
use crate::record::{Outcome, RunRecord};

use super::folders::{read_state, workspace_dirs};
use super::{HistoryIndex, Loaded, Reindexed, lock};

impl HistoryIndex {
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

    pub(super) fn catch_up_loaded(&self, l: &mut Loaded) -> Result<usize, HistoryError> {
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

    pub(super) fn rebuild(&self, slot: &mut Option<Loaded>) -> Result<Reindexed, HistoryError> {
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
    pub(super) fn with<T>(&self, f: impl FnOnce(&mut Loaded, &HistoryFile) -> T) -> T {
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
    pub(super) fn refresh(&self, slot: &mut Option<Loaded>) {
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
            // Unchanged, or still no file (nothing to load: the empty index
            // stands until one appears).
            if l.identity == identity && (identity.is_some() || l.generation.is_empty()) {
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
    pub(super) fn tail(&self, l: &mut Loaded) -> bool {
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
    pub(super) fn full_load(&self, caught_up: bool, repair: bool) -> Loaded {
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
    pub(super) fn repair(&self, bad_lines: usize, torn: bool) -> Loaded {
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
}
