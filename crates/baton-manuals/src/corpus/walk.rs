//! Finding a manual's files: `.md` and `.json` regular files below its
//! folder (hidden entries skipped, symbolic links never followed, depth
//! bounded). Files over the size limit and entries that are neither files
//! nor folders are reported, not indexed.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::corpus::root::ManualsRoot;
use crate::wire::ids::FileType;

/// Directory depth below a manual that is walked.
const MAX_DEPTH: usize = 32;

/// A file found by walking a manual.
#[derive(Debug, Clone)]
pub(crate) struct FoundFile {
    /// Path relative to the manual, `/`-separated.
    pub rel: String,
    /// Absolute path.
    pub abs: PathBuf,
    /// Markdown or JSON.
    pub file_type: FileType,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in ns since the epoch (0 if unknown).
    pub mtime_ns: i64,
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
        .filter(|name| !name.starts_with('.') && name != crate::wire::ids::ROOT_ID)
        .collect();
    ids.sort();
    ids
}

/// Every indexable file of a manual, sorted by path; `warn` hears about
/// files skipped for their size or kind (`path: reason`).
pub(crate) fn walk_manual(
    dir: &Path,
    max_bytes: u64,
    warn: &mut dyn FnMut(String),
) -> Vec<FoundFile> {
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
            // `DirEntry::file_type` does not follow symbolic links.
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
                continue;
            }
            let Some(kind) = FileType::of(&name) else {
                continue;
            };
            if file_type.is_symlink() {
                continue;
            }
            if !file_type.is_file() {
                warn(format!("{rel}: skipped, not a regular file"));
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.len() > max_bytes {
                warn(format!(
                    "{rel}: skipped, {} bytes is over the limit of {max_bytes} (MANUALS_MAX_FILE_BYTES)",
                    meta.len()
                ));
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
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// Modification time in nanoseconds since the epoch (0 if unknown).
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
