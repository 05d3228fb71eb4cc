//! The states a store parsed lately, kept with the exact bytes they were
//! parsed from: a call reads a run's state more than once (to find the run,
//! then under the lock), and the file has not changed in between. A read
//! whose bytes are the same as the kept ones takes the kept state instead
//! of parsing the JSON again; any other byte, and it parses. The bytes are
//! compared whole, so a kept state is never one the file no longer holds.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::schema::WorkspaceState;

/// How many files are kept (a process works on few runs at a time).
const KEPT_FILES: usize = 8;

/// Files larger than this are always parsed (bounds the memory kept).
const MAX_KEPT_BYTES: usize = 1024 * 1024;

/// The last states parsed, by file (clones share them).
#[derive(Debug, Default, Clone)]
pub struct ParsedStates {
    kept: Arc<Mutex<Vec<Kept>>>,
}

#[derive(Debug)]
struct Kept {
    path: PathBuf,
    bytes: Arc<[u8]>,
    state: WorkspaceState,
}

impl ParsedStates {
    /// The state parsed from exactly `bytes` read from `path`, if kept.
    pub fn get(&self, path: &Path, bytes: &[u8]) -> Option<WorkspaceState> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter()
            .find(|k| k.path == path && *k.bytes == *bytes)
            .map(|k| k.state.clone())
    }

    /// Keeps `state`, parsed from `bytes` read from `path` (the newest first;
    /// the oldest goes past [`KEPT_FILES`]).
    pub fn keep(&self, path: &Path, bytes: &[u8], state: &WorkspaceState) {
        if bytes.len() > MAX_KEPT_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|k| k.path != path);
        kept.insert(
            0,
            Kept {
                path: path.to_path_buf(),
                bytes: Arc::from(bytes),
                state: state.clone(),
            },
        );
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
