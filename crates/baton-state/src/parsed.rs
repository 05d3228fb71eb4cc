//! The states a store read or wrote lately, kept with the exact bytes of
//! the file: a call reads a run's state more than once (to find the run,
//! then under the lock), and the file has not changed in between. A read
//! whose bytes are the same as the kept ones takes the kept state instead
//! of parsing the JSON again, and the kept result of checking their
//! integrity tag instead of computing the HMAC again (crate::integrity);
//! any other byte, and it parses and checks. The bytes are compared whole,
//! so a kept state or check is never one of bytes the file no longer holds.
//! A state file the store writes is kept with its check (it tagged the
//! bytes itself), so the next call's read checks nothing again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::integrity::TagCheck;
use crate::schema::WorkspaceState;

/// How many files are kept (a process works on few runs at a time).
const KEPT_FILES: usize = 8;

/// Files larger than this are always parsed (bounds the memory kept).
const MAX_KEPT_BYTES: usize = 1024 * 1024;

/// The last states parsed, by file (clones share them).
#[derive(Debug, Default, Clone)]
pub struct ParsedStates {
    kept: Arc<Mutex<Vec<Kept>>>,
    held: Arc<Mutex<Vec<Held>>>,
}

/// A state file the store read, kept open: while the file's path names
/// the same file (device and inode; the number cannot go to another file
/// while this one is open), the next read of it reads the open file again
/// (one `pread`) instead of opening it. What is read is always the file's
/// content at that moment: only the open is saved, never the read.
#[derive(Debug, Clone)]
pub struct Held {
    /// The path it was opened at.
    pub path: PathBuf,
    /// The open file.
    pub file: Arc<std::fs::File>,
    /// Its device.
    pub dev: u64,
    /// Its inode.
    pub ino: u64,
}

#[derive(Debug)]
struct Kept {
    path: PathBuf,
    bytes: Arc<[u8]>,
    state: Option<WorkspaceState>,
    tag: Option<TagCheck>,
    /// The witness as it was when `tag` was found (crate::witness::Stamp).
    witnessed: Option<crate::witness::Stamp>,
}

impl ParsedStates {
    /// The state parsed from exactly `bytes` read from `path`, if kept.
    pub fn get(&self, path: &Path, bytes: &[u8]) -> Option<WorkspaceState> {
        self.with_kept(path, bytes, |k| k.state.clone())
    }

    /// The integrity check of exactly `bytes` read from `path`, if kept,
    /// and the witness as it was when it was found.
    pub fn tag(
        &self,
        path: &Path,
        bytes: &[u8],
    ) -> Option<(TagCheck, Option<crate::witness::Stamp>)> {
        self.with_kept(path, bytes, |k| k.tag.map(|t| (t, k.witnessed)))
    }

    /// Keeps `state`, parsed from `bytes` read from `path` (the newest first;
    /// the oldest goes past [`KEPT_FILES`]).
    pub fn keep(&self, path: &Path, bytes: &[u8], state: &WorkspaceState) {
        self.upsert(path, bytes, |k| k.state = Some(state.clone()));
    }

    /// Keeps `tag`, the integrity check of `bytes` of `path` (read, or just
    /// written by the store), found with the witness at `witnessed`.
    pub fn keep_tag(
        &self,
        path: &Path,
        bytes: &[u8],
        tag: TagCheck,
        witnessed: Option<crate::witness::Stamp>,
    ) {
        self.upsert(path, bytes, |k| {
            k.tag = Some(tag);
            k.witnessed = witnessed;
        });
    }

    /// The open file last read at `path`, if kept.
    pub fn held(&self, path: &Path) -> Option<Held> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.iter().find(|h| h.path == path).cloned()
    }

    /// Keeps `held` open for the next read of its path (the newest first;
    /// past [`KEPT_FILES`] the oldest goes). Returns the files no longer
    /// kept, for the caller to close (or have closed).
    pub fn hold(&self, held: Held) -> Vec<Held> {
        let mut all = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let mut gone: Vec<Held> = Vec::new();
        if let Some(at) = all.iter().position(|h| h.path == held.path) {
            gone.push(all.remove(at));
        }
        all.insert(0, held);
        if all.len() > KEPT_FILES {
            gone.extend(all.drain(KEPT_FILES..));
        }
        gone
    }

    fn with_kept<T>(
        &self,
        path: &Path,
        bytes: &[u8],
        f: impl FnOnce(&Kept) -> Option<T>,
    ) -> Option<T> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter()
            .find(|k| k.path == path && *k.bytes == *bytes)
            .and_then(f)
    }

    /// Updates the entry of exactly `bytes` of `path`, or starts one (and
    /// drops what was kept of other bytes of that file).
    fn upsert(&self, path: &Path, bytes: &[u8], set: impl FnOnce(&mut Kept)) {
        if bytes.len() > MAX_KEPT_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.iter().position(|k| k.path == path);
        let mut entry = match at.map(|i| kept.remove(i)) {
            Some(k) if *k.bytes == *bytes => k,
            _ => Kept {
                path: path.to_path_buf(),
                bytes: Arc::from(bytes),
                state: None,
                tag: None,
                witnessed: None,
            },
        };
        set(&mut entry);
        kept.insert(0, entry);
        kept.truncate(KEPT_FILES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(phase: &str) -> WorkspaceState {
        WorkspaceState::fresh(
            "forge",
            phase,
            "spec",
            ".specs/spec",
            "0.1.0",
            chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        )
    }

    #[test]
    fn a_state_is_taken_only_for_the_same_bytes_of_the_same_file() {
        let parsed = ParsedStates::default();
        let a = Path::new("/w/a/state.json");
        parsed.keep(a, b"{1}", &state("phase-1"));
        assert_eq!(parsed.get(a, b"{1}"), Some(state("phase-1")));
        assert_eq!(parsed.get(a, b"{2}"), None, "other bytes: parsed again");
        assert_eq!(parsed.get(Path::new("/w/b/state.json"), b"{1}"), None);
        parsed.keep(a, b"{2}", &state("phase-2"));
        assert_eq!(parsed.get(a, b"{1}"), None, "one state per file");
        assert_eq!(parsed.get(a, b"{2}"), Some(state("phase-2")));
    }

    #[test]
    fn a_check_is_taken_only_for_the_same_bytes_and_stays_beside_the_state() {
        let parsed = ParsedStates::default();
        let a = Path::new("/w/a/state.json");
        parsed.keep_tag(a, b"{1}", TagCheck::Intact, None);
        assert_eq!(parsed.tag(a, b"{1}"), Some((TagCheck::Intact, None)));
        assert_eq!(parsed.get(a, b"{1}"), None, "written, not parsed yet");
        parsed.keep(a, b"{1}", &state("phase-1"));
        assert_eq!(
            parsed.tag(a, b"{1}"),
            Some((TagCheck::Intact, None)),
            "kept beside"
        );
        assert_eq!(parsed.get(a, b"{1}"), Some(state("phase-1")));
        assert_eq!(parsed.tag(a, b"{1} "), None, "other bytes: checked again");
        parsed.keep(a, b"{2}", &state("phase-2"));
        assert_eq!(parsed.tag(a, b"{1}"), None, "other bytes replace the entry");
        assert_eq!(parsed.tag(a, b"{2}"), None);
    }

    #[test]
    fn few_and_small_files_are_kept() {
        let parsed = ParsedStates::default();
        for i in 0..=KEPT_FILES {
            parsed.keep(&PathBuf::from(format!("/w/{i}")), b"{}", &state("p"));
        }
        assert_eq!(
            parsed.get(Path::new("/w/0"), b"{}"),
            None,
            "the oldest went"
        );
        assert!(
            parsed
                .get(&PathBuf::from(format!("/w/{KEPT_FILES}")), b"{}")
                .is_some()
        );
        let big = vec![b' '; MAX_KEPT_BYTES + 1];
        parsed.keep(Path::new("/w/big"), &big, &state("p"));
        assert_eq!(parsed.get(Path::new("/w/big"), &big), None);
    }
}
