//! All manuals under the root, kept in sync with the files on disk.
//!
//! A refresh walks a manual's directory (`stat` only) and compares every
//! file with the index: unchanged files (same size and modification time)
//! cost nothing; changed files are read, and re-tokenised only when their
//! content hash changed; their old version and vanished files are deleted
//! from the segments that hold them; new and changed files go into new
//! segments, built by several threads, each flushing its segment when its
//! memory budget is reached ([`build`]). Small or numerous segments are
//! then merged ([`merge_plan`]) and the manifest is saved. Every change
//! bumps [`Corpus::generation`], which keys the result cache.
//!
//! Files larger than the limit (`MANUALS_MAX_FILE_BYTES`) and entries that
//! are not regular files (FIFOs, sockets, devices) are skipped with a
//! warning ([`Corpus::take_warnings`]); symbolic links are never followed.

mod build;
pub(crate) mod doc_text;
pub(crate) mod root;
mod walk;
pub(crate) mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) use build::read_bounded;
pub use build::{IndexProgress, IndexStats};
pub(crate) use walk::list_manual_dirs;

use crate::corpus::root::ManualsRoot;
use crate::index::manual::{DocId, ManualIndex, SegmentSlot};
use crate::index::segment::merge::{MergeInput, merge};
use crate::index::store::{Manifest, SegmentStore};
use build::{BuildLimits, Task};
use doc_text::TextCache;

/// A manual whose segments are smaller than this together is kept in one
/// segment (merged after every change: exact statistics, cheap).
const SMALL_MANUAL_BYTES: usize = 16 * 1024 * 1024;
/// More segments than this are merged (all but a dominant largest one).
const MAX_SEGMENTS: usize = 6;
/// A segment with more deleted documents than this share is rewritten.
const MAX_DELETED_SHARE: f64 = 0.3;
/// Resident bytes of memory-mapped segments above which their pages are
/// handed back to the kernel (they stay in the page cache): the process
/// keeps what recent queries touched, not the whole index.
pub(crate) const MAPPED_RESIDENT_BUDGET: usize = 32 * 1024 * 1024;
/// Warnings kept until someone takes them.
const MAX_PENDING_WARNINGS: usize = 200;

/// One indexed manual.
struct ManualState {
    index: ManualIndex,
    store: SegmentStore,
    next_id: u64,
    /// Files whose size/mtime changed without their content: path → (size, mtime).
    touched: HashMap<String, (u64, i64)>,
}

impl ManualState {
    fn empty(store: SegmentStore) -> Self {
        ManualState {
            index: ManualIndex::default(),
            store,
            next_id: 1,
            touched: HashMap::new(),
        }
    }

    fn manifest(&self) -> Manifest {
        let mut touched: Vec<(String, u64, i64)> = self
            .touched
            .iter()
            .map(|(p, (s, m))| (p.clone(), *s, *m))
            .collect();
        touched.sort();
        Manifest {
            next_id: self.next_id,
            slots: self
                .index
                .slots()
                .iter()
                .map(|s| (s.id, s.deleted.clone()))
                .collect(),
            touched,
        }
    }
}

/// Warnings met while indexing, each reported once.
#[derive(Debug, Default)]
struct Warnings {
    seen: BTreeSet<String>,
    pending: Vec<String>,
}

impl Warnings {
    fn add(&mut self, warning: String) {
        if self.seen.insert(warning.clone()) && self.pending.len() < MAX_PENDING_WARNINGS {
            self.pending.push(warning);
        }
    }
}

/// The indexed manuals.
pub(crate) struct Corpus {
    pub root: ManualsRoot,
    index_dir: Option<PathBuf>,
    manuals: BTreeMap<String, ManualState>,
    generation: u64,
    texts: TextCache,
    limits: BuildLimits,
    warnings: Warnings,
}

impl Corpus {
    pub(crate) fn new(
        root: ManualsRoot,
        index_dir: Option<PathBuf>,
        max_file_bytes: u64,
        threads: usize,
    ) -> Self {
        let mut warnings = Warnings::default();
        let index_dir = match index_dir {
            Some(dir) if crate::index::store::is_linked(&dir) => {
                warnings.add(format!(
                    "the index folder {} (or its parent) is a symbolic link, which is never \
                     followed: the index is kept in memory (point MANUALS_INDEX_DIR at a real folder)",
                    dir.display()
                ));
                None
            }
            other => other,
        };
        Corpus {
            root,
            index_dir,
            manuals: BTreeMap::new(),
            generation: 0,
            texts: TextCache::default(),
            limits: BuildLimits {
                max_file_bytes,
                threads: threads.max(1),
                ..BuildLimits::default()
            },
            warnings,
        }
    }

    /// Drops every manual's index, in memory and on disk (after a mapped
    /// segment was found damaged: whatever was read or merged from it since
    /// cannot be trusted); the next refresh indexes the manuals anew.
    pub(crate) fn discard_all(&mut self) {
        for (_, state) in std::mem::take(&mut self.manuals) {
            state.store.delete();
        }
        self.texts = TextCache::default();
        self.generation += 1;
    }

    /// Incremented on every change to any manual.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The index of a manual.
    pub(crate) fn manual(&self, id: &str) -> Option<&ManualIndex> {
        self.manuals.get(id).map(|m| &m.index)
    }

    /// All manual ids, sorted.
    pub(crate) fn manual_ids(&self) -> impl Iterator<Item = &str> {
        self.manuals.keys().map(String::as_str)
    }

    /// Warnings met since the last call (each warning once per process).
    pub(crate) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings.pending)
    }

    /// Bytes of mapped segments resident in the process.
    pub(crate) fn resident_mapped_bytes(&self) -> usize {
        self.manuals
            .values()
            .flat_map(|m| m.index.slots())
            .map(|s| s.segment.resident_bytes())
            .sum()
    }

    /// Hands mapped pages back to the kernel when more than `budget` bytes
    /// are resident; returns whether it did.
    pub(crate) fn trim_mapped(&self, budget: usize) -> bool {
        if self.resident_mapped_bytes() <= budget {
            return false;
        }
        for slot in self.manuals.values().flat_map(|m| m.index.slots()) {
            slot.segment.release();
        }
        true
    }

    /// Estimated heap bytes of the cached section texts.
    pub(crate) fn text_cache_bytes(&self) -> usize {
        self.texts.heap_bytes()
    }

    /// A document's matched text (file name, heading, body; normalised),
    /// read from its file and cached.
    pub(crate) fn doc_text(&self, manual_id: &str, doc: DocId) -> Arc<str> {
        let Some(state) = self.manuals.get(manual_id) else {
            return Arc::from("");
        };
        let Some(d) = state.index.doc(doc) else {
            return Arc::from("");
        };
        let Some(slot) = state.index.slots().get(d.file.slot) else {
            return Arc::from("");
        };
        let key = (Arc::from(manual_id), slot.id, d.local);
        self.texts.get_or_load(key, || {
            let (Some(head), Some(section)) =
                (state.index.file_head(d.file), state.index.section_of(&d))
            else {
                return String::new();
            };
            let dir = self.root.configured.join(manual_id);
            doc_text::load(&dir, &head, &section.title, section.level, &d.row)
        })
    }

    /// Refreshes every manual (and the list of manuals).
    pub(crate) fn refresh_all(&mut self, progress: &mut dyn FnMut(IndexProgress)) -> IndexStats {
        let ids = list_manual_dirs(&self.root);
        let stale: Vec<String> = self
            .manuals
            .keys()
            .filter(|k| !ids.contains(k))
            .cloned()
            .collect();
        let mut stats = IndexStats::default();
        for id in stale {
            if let Some(state) = self.manuals.remove(&id) {
                stats.removed_files += state.index.file_count();
                state.store.delete();
            }
            self.generation += 1;
        }
        let walks: Vec<(String, Vec<walk::FoundFile>)> = ids
            .into_iter()
            .filter_map(|id| {
                let dir = self.root.manual_dir(&id).ok()?;
                let files = walk::walk_manual(&dir, self.limits.max_file_bytes, &mut |w| {
                    self.warnings.add(format!("{id}/{w}"))
                });
                Some((id, files))
            })
            .collect();
        let total = walks.iter().map(|(_, f)| f.len()).sum();
        let mut done = 0;
        for (id, files) in walks {
            self.sync_manual(&id, files, &mut stats, &mut |path| {
                done += 1;
                progress(IndexProgress {
                    files_done: done,
                    files_total: total,
                    manual_id: id.clone(),
                    path: path.to_string(),
                });
            });
        }
        self.fill_totals(&mut stats);
        stats
    }

    /// Refreshes one manual (dropping it if its directory is gone).
    pub(crate) fn refresh_manual(&mut self, id: &str) -> IndexStats {
        let mut stats = IndexStats::default();
        match self.root.manual_dir(id) {
            Ok(dir) => {
                let mut warnings = Vec::new();
                let files = walk::walk_manual(&dir, self.limits.max_file_bytes, &mut |w| {
                    warnings.push(format!("{id}/{w}"))
                });
                for w in warnings {
                    self.warnings.add(w);
                }
                self.sync_manual(id, files, &mut stats, &mut |_| {});
            }
            Err(_) => {
                if let Some(state) = self.manuals.remove(id) {
                    stats.removed_files += state.index.file_count();
                    state.store.delete();
                    self.generation += 1;
                }
            }
        }
        self.fill_totals(&mut stats);
        stats
    }

    fn fill_totals(&self, stats: &mut IndexStats) {
        stats.manuals = self.manuals.len();
        for state in self.manuals.values() {
            stats.files += state.index.file_count();
            stats.sections += state.index.doc_count() as usize;
            stats.terms += state.index.term_count();
            stats.segments += state.index.slots().len();
            stats.index_bytes += state.index.byte_len() as u64;
        }
    }

    /// Loads a manual's index from disk, or starts an empty one.
    fn load_state(&self, id: &str) -> (ManualState, bool) {
        let store = SegmentStore::for_manual(self.index_dir.as_deref(), id);
        let root_key = self.root_key();
        match store.load(&root_key, id) {
            Some((manifest, segments)) => {
                let slots = manifest
                    .slots
                    .iter()
                    .zip(segments)
                    .map(|((sid, deleted), seg)| SegmentSlot::new(*sid, seg, deleted.clone()))
                    .collect();
                let state = ManualState {
                    index: ManualIndex::from_slots(slots),
                    store,
                    next_id: manifest.next_id,
                    touched: manifest
                        .touched
                        .into_iter()
                        .map(|(p, s, m)| (p, (s, m)))
                        .collect(),
                };
                (state, true)
            }
            None => {
                // Whatever is there is unusable: start clean.
                store.delete();
                (ManualState::empty(store), false)
            }
        }
    }

    fn root_key(&self) -> PathBuf {
        self.root
            .canonical()
            .unwrap_or_else(|| self.root.configured.clone())
    }

    fn sync_manual(
        &mut self,
        id: &str,
        files: Vec<walk::FoundFile>,
        stats: &mut IndexStats,
        tick: &mut dyn FnMut(&str),
    ) {
        let mut changed = false;
        let mut state = match self.manuals.remove(id) {
            Some(state) => state,
            None => {
                changed = true;
                let (state, loaded) = self.load_state(id);
                stats.loaded_manuals += usize::from(loaded);
                state
            }
        };
        // Merge-join the index's files and the files found (both sorted by path).
        let indexed = state.index.files();
        let mut deletes: Vec<String> = Vec::new();
        let mut tasks = Vec::new();
        let mut known = indexed.iter().peekable();
        for found in files {
            while let Some((_, path)) = known.next_if(|(_, p)| *p < found.rel.as_str()) {
                deletes.push(path.to_string());
            }
            let fingerprint =
                known
                    .next_if(|(_, p)| *p == found.rel.as_str())
                    .and_then(|(file, path)| {
                        let mut fp = state.index.file_head(*file)?.fingerprint;
                        if let Some((size, mtime)) = state.touched.get(*path) {
                            fp.size = *size;
                            fp.mtime_ns = *mtime;
                        }
                        Some(fp)
                    });
            if let Some(fp) = fingerprint
                && fp.size == found.size
                && fp.mtime_ns == found.mtime_ns
            {
                stats.reused_files += 1;
                tick(&found.rel);
                continue;
            }
            tasks.push(Task {
                found,
                known_hash: fingerprint.map(|fp| fp.hash),
            });
        }
        deletes.extend(known.map(|(_, p)| p.to_string()));
        drop(indexed);
        stats.removed_files += deletes.len();
        let mut touched_any = false;
        if !tasks.is_empty() {
            let built = build::build(&tasks, &state.store, &mut state.next_id, &self.limits, tick);
            for (path, size, mtime) in built.touched {
                state.touched.insert(path, (size, mtime));
                stats.reused_files += 1;
                touched_any = true;
            }
            for (path, reason) in built.skipped {
                self.warnings.add(format!("{id}/{path}: {reason}"));
                stats.skipped_files += 1;
                deletes.push(path);
            }
            stats.parsed_files += built.parsed.len();
            for path in &built.parsed {
                state.touched.remove(path);
                deletes.push(path.clone());
            }
            for e in built.errors {
                self.warnings.add(format!("{id}: index not written: {e}"));
            }
            let mut slots = std::mem::take(&mut state.index).into_slots();
            delete_files(&mut slots, &deletes);
            slots.extend(
                built
                    .segments
                    .into_iter()
                    .map(|(sid, seg)| SegmentSlot::new(sid, seg, Vec::new())),
            );
            state.index = ManualIndex::from_slots(slots);
            changed |= !built.parsed.is_empty() || !deletes.is_empty();
        } else if !deletes.is_empty() {
            let mut slots = std::mem::take(&mut state.index).into_slots();
            delete_files(&mut slots, &deletes);
            state.index = ManualIndex::from_slots(slots);
            changed = true;
        }
        for path in &deletes {
            state.touched.remove(path);
        }
        if changed {
            self.merge_if_needed(id, &mut state);
            self.generation += 1;
        }
        if changed || touched_any {
            let root_key = self.root_key();
            if let Err(e) = state.store.save(&root_key, id, &state.manifest()) {
                // A failed write only costs a re-index at the next start.
                self.warnings.add(format!("{id}: index not saved: {e}"));
            }
        }
        self.manuals.insert(id.to_string(), state);
    }

    /// Merges segments as [`merge_plan`] says (a failure keeps them as they are).
    fn merge_if_needed(&mut self, id: &str, state: &mut ManualState) {
        let Some(picked) = merge_plan(state.index.slots()) else {
            return;
        };
        let slots = state.index.slots();
        let inputs: Vec<MergeInput<'_>> = picked
            .iter()
            .map(|&i| MergeInput {
                segment: &slots[i].segment,
                deleted: &slots[i].deleted,
            })
            .collect();
        let new_id = state.next_id;
        let spill = state.store.spill();
        let merged = state
            .store
            .write_segment(new_id, |out| merge(&inputs, spill, out));
        match merged {
            Ok(segment) => {
                state.next_id += 1;
                let mut slots: Vec<SegmentSlot> = std::mem::take(&mut state.index)
                    .into_slots()
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| !picked.contains(i))
                    .map(|(_, s)| s)
                    .collect();
                slots.push(SegmentSlot::new(new_id, segment, Vec::new()));
                state.index = ManualIndex::from_slots(slots);
            }
            Err(e) => self.warnings.add(format!("{id}: segments not merged: {e}")),
        }
    }
}

/// Marks files deleted in whichever segment holds their live version.
fn delete_files(slots: &mut [SegmentSlot], paths: &[String]) {
    for path in paths {
        for slot in slots.iter_mut() {
            if let Some(file) = slot.segment.find_file(path)
                && slot.deleted.binary_search(&file).is_err()
            {
                let at = slot.deleted.partition_point(|d| *d < file);
                slot.deleted.insert(at, file);
            }
        }
    }
}

/// Which segments to merge, if any: all of a small manual's (so it stays
/// one segment with exact statistics); all but a dominant largest one when
/// there are too many; and any segment that is mostly deleted.
pub(crate) fn merge_plan(slots: &[SegmentSlot]) -> Option<Vec<usize>> {
    let total: usize = slots.iter().map(|s| s.segment.byte_len()).sum();
    let deleted_share = |s: &SegmentSlot| {
        let docs = f64::from(s.segment.n_docs().max(1));
        let dead: u32 = s
            .deleted
            .iter()
            .filter_map(|f| s.segment.file_head(*f))
            .map(|h| h.n_docs)
            .sum();
        f64::from(dead) / docs
    };
    let any_deleted = slots.iter().any(|s| !s.deleted.is_empty());
    if total <= SMALL_MANUAL_BYTES && (slots.len() > 1 || any_deleted) {
        return Some((0..slots.len()).collect());
    }
    if slots.len() > MAX_SEGMENTS {
        let largest = (0..slots.len()).max_by_key(|&i| slots[i].segment.byte_len())?;
        let dominant = slots[largest].segment.byte_len() * 2 >= total;
        return Some(
            (0..slots.len())
                .filter(|&i| !(dominant && i == largest))
                .collect(),
        );
    }
    let mostly_deleted: Vec<usize> = (0..slots.len())
        .filter(|&i| deleted_share(&slots[i]) > MAX_DELETED_SHARE)
        .collect();
    (!mostly_deleted.is_empty()).then_some(mostly_deleted)
}
