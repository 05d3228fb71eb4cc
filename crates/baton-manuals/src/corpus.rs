//! All manuals under the root, kept in sync with the files on disk.
//!
//! A refresh walks a manual's directory (`stat` only), re-reads files whose
//! size or modification time changed, re-tokenises only those whose content
//! hash changed, removes vanished files, and persists the manual's records
//! when anything changed. Every change bumps [`Corpus::generation`], which
//! keys the result cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::analyze::{Fingerprint, analyze_file, fnv1a};
use crate::index::ManualIndex;
use crate::paths::{FileType, ManualsRoot};
use crate::store;

/// Files larger than this are not indexed (and cannot be read).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Directory depth below a manual that is walked.
const MAX_DEPTH: usize = 32;

/// Progress of an index build, reported once per file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexProgress {
    /// Files processed so far (including this one).
    pub files_done: usize,
    /// Files to process in total.
    pub files_total: usize,
    /// The manual of the current file.
    pub manual_id: String,
    /// The current file, relative to its manual.
    pub path: String,
}

/// What a refresh or build did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexStats {
    /// Manuals indexed.
    pub manuals: usize,
    /// Files indexed.
    pub files: usize,
    /// Sections indexed (documents).
    pub sections: usize,
    /// Distinct terms.
    pub terms: usize,
    /// Files (re-)tokenised during this call.
    pub parsed_files: usize,
    /// Files whose index data was reused (unchanged, or loaded from the disk cache).
    pub reused_files: usize,
    /// Files removed from the index during this call.
    pub removed_files: usize,
    /// Files skipped (unreadable or larger than 8 MiB).
    pub skipped_files: usize,
}

/// A file found by walking a manual.
struct FoundFile {
    rel: String,
    abs: PathBuf,
    file_type: FileType,
    size: u64,
    mtime_ns: i64,
}

/// The indexed manuals.
pub(crate) struct Corpus {
    pub root: ManualsRoot,
    index_dir: Option<PathBuf>,
    manuals: BTreeMap<String, ManualIndex>,
    generation: u64,
}

impl Corpus {
    pub(crate) fn new(root: ManualsRoot, index_dir: Option<PathBuf>) -> Self {
        Corpus {
            root,
            index_dir,
            manuals: BTreeMap::new(),
            generation: 0,
        }
    }

    /// Incremented on every change to any manual.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The index of a manual.
    pub(crate) fn manual(&self, id: &str) -> Option<&ManualIndex> {
        self.manuals.get(id)
    }

    /// All manual ids, sorted.
    pub(crate) fn manual_ids(&self) -> impl Iterator<Item = &str> {
        self.manuals.keys().map(String::as_str)
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
            if let Some(index) = self.manuals.remove(&id) {
                stats.removed_files += index.file_count();
            }
            if let Some(dir) = &self.index_dir {
                store::delete(dir, &id);
            }
            self.generation += 1;
        }
        let walks: Vec<(String, Vec<FoundFile>)> = ids
            .into_iter()
            .filter_map(|id| {
                let dir = self.root.manual_dir(&id).ok()?;
                Some((id, walk_manual(&dir)))
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
                let files = walk_manual(&dir);
                self.sync_manual(id, files, &mut stats, &mut |_| {});
            }
            Err(_) => {
                if let Some(index) = self.manuals.remove(id) {
                    stats.removed_files += index.file_count();
                    self.generation += 1;
                }
            }
        }
        self.fill_totals(&mut stats);
        stats
    }

    fn fill_totals(&self, stats: &mut IndexStats) {
        stats.manuals = self.manuals.len();
        for index in self.manuals.values() {
            stats.files += index.file_count();
            stats.sections += index.doc_count() as usize;
            stats.terms += index.term_count();
        }
    }

    fn sync_manual(
        &mut self,
        id: &str,
        files: Vec<FoundFile>,
        stats: &mut IndexStats,
        tick: &mut dyn FnMut(&str),
    ) {
        let root_key = self
            .root
            .canonical()
            .unwrap_or_else(|| self.root.configured.clone());
        let mut changed = false;
        let index = match self.manuals.entry(id.to_string()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                changed = true;
                let mut index = ManualIndex::new();
                if let Some(dir) = self.index_dir.as_deref() {
                    store::load_into(dir, &root_key, id, &mut index);
                }
                e.insert(index)
            }
        };
        let mut dirty_cache = false;
        let present: std::collections::HashSet<&str> =
            files.iter().map(|f| f.rel.as_str()).collect();
        let gone: Vec<String> = index
            .files()
            .map(|f| f.record.path.clone())
            .filter(|p| !present.contains(p.as_str()))
            .collect();
        for path in gone {
            index.remove(&path);
            stats.removed_files += 1;
            changed = true;
            dirty_cache = true;
        }
        for found in &files {
            tick(&found.rel);
            let known = index.file(&found.rel).map(|f| f.record.fingerprint);
            if let Some(fp) = known
                && fp.size == found.size
                && fp.mtime_ns == found.mtime_ns
            {
                stats.reused_files += 1;
                continue;
            }
            let Ok(bytes) = std::fs::read(&found.abs) else {
                if index.remove(&found.rel) {
                    changed = true;
                    dirty_cache = true;
                }
                stats.skipped_files += 1;
                continue;
            };
            let fingerprint = Fingerprint {
                size: bytes.len() as u64,
                mtime_ns: found.mtime_ns,
                hash: fnv1a(&bytes),
            };
            dirty_cache = true;
            if known.is_some_and(|fp| fp.hash == fingerprint.hash) {
                index.touch(&found.rel, fingerprint);
                stats.reused_files += 1;
                continue;
            }
            let text = decode_text(&bytes);
            index.upsert(analyze_file(
                &found.rel,
                found.file_type,
                &text,
                fingerprint,
            ));
            stats.parsed_files += 1;
            changed = true;
        }
        if changed {
            self.generation += 1;
            index.compact();
        }
        if (dirty_cache || changed)
            && let Some(dir) = &self.index_dir
        {
            // A failed cache write only costs a re-tokenisation at the next start.
            let _ = store::save_index(dir, &root_key, id, index);
        }
    }
}

/// Decodes file bytes as UTF-8 (lossy), dropping a byte-order mark.
pub(crate) fn decode_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.strip_prefix('\u{feff}').unwrap_or(&text).to_string()
}

/// Names of the manual directories under the root: non-hidden directories
/// that are not symlinks, sorted.
pub(crate) fn list_manual_dirs(root: &ManualsRoot) -> Vec<String> {
    let Some(dir) = root.canonical() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|name| !name.starts_with('.') && name != crate::paths::ROOT_ID)
        .collect();
    ids.sort();
    ids
}

/// Every `.md`/`.json` file of a manual (hidden entries and symlinks skipped).
fn walk_manual(dir: &Path) -> Vec<FoundFile> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new(), 0usize)];
    while let Some((abs_dir, rel_dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&abs_dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let rel = if rel_dir.is_empty() {
                name.clone()
            } else {
                format!("{rel_dir}/{name}")
            };
            if file_type.is_dir() {
                if depth < MAX_DEPTH {
                    stack.push((entry.path(), rel, depth + 1));
                }
            } else if file_type.is_file() {
                let Some(kind) = FileType::of(&name) else {
                    continue;
                };
                let Ok(meta) = entry.metadata() else { continue };
                if meta.len() > MAX_FILE_BYTES {
                    continue;
                }
                out.push(FoundFile {
                    rel,
                    abs: entry.path(),
                    file_type: kind,
                    size: meta.len(),
                    mtime_ns: mtime_ns(&meta),
                });
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
