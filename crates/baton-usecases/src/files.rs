//! The engine's read-only view of a workspace folder, over the real disk.
//!
//! One view serves one call: what the call already looked at or read is
//! remembered for the rest of that call (the planner, the completion checks
//! and the reply look at the same artifacts several times), so each file is
//! looked at and read once per call. Nothing is kept across calls — files
//! are the API between agents, and an artifact edited between two calls is
//! seen by the next one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

use baton_engine::{FileInfo, WorkspaceFiles};
use chrono::Utc;

/// Artifacts larger than this are not read (a runaway file is not a review).
pub const MAX_ARTIFACT_BYTES: u64 = 4 * 1024 * 1024;

/// The real workspace folder, read-only, for the engine's guards and
/// planner; make one per call ([`DiskFiles::new`]).
#[derive(Debug)]
pub struct DiskFiles {
    /// The workspace folder.
    pub dir: PathBuf,
    /// What this call already looked at and read.
    seen: RefCell<Seen>,
}

/// The answers one call already got from the disk, by relative path.
#[derive(Debug, Default)]
struct Seen {
    files: HashMap<String, Option<FileInfo>>,
    texts: HashMap<String, Option<String>>,
}

impl DiskFiles {
    /// A view of `dir` for one call.
    pub fn new(dir: impl Into<PathBuf>) -> DiskFiles {
        DiskFiles {
            dir: dir.into(),
            seen: RefCell::new(Seen::default()),
        }
    }

    /// Looks at `relative` on the disk (no memo).
    fn look(&self, relative: &str) -> Option<FileInfo> {
        let path = self.dir.join(relative);
        // Artifacts are relative paths without `..` (checked when the
        // definition is loaded); a symlink leading out is not an artifact,
        // nor is a file in a linked folder.
        if let Some(parent) = std::path::Path::new(relative)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            && !baton_fs::is_folder_beneath(&self.dir, parent)
        {
            return None;
        }
        let meta = std::fs::symlink_metadata(&path).ok()?;
        meta.is_file().then(|| FileInfo {
            len: meta.len(),
            modified: meta.modified().ok().map(chrono::DateTime::<Utc>::from),
        })
    }

    /// Reads `relative` from the disk (no memo).
    fn read_now(&self, relative: &str) -> Option<String> {
        // Agent-written: never through a link, never a FIFO or device (a
        // FIFO swapped in would hang the call), never a runaway file.
        baton_fs::read_string_beneath(
            &self.dir,
            std::path::Path::new(relative),
            MAX_ARTIFACT_BYTES,
        )
        .ok()
    }
}

impl WorkspaceFiles for DiskFiles {
    fn file(&self, relative: &str) -> Option<FileInfo> {
        if let Some(known) = self.seen.borrow().files.get(relative) {
            return *known;
        }
        let info = self.look(relative);
        self.seen
            .borrow_mut()
            .files
            .insert(relative.to_string(), info);
        info
    }

    fn read(&self, relative: &str) -> Option<String> {
        if let Some(known) = self.seen.borrow().texts.get(relative) {
            return known.clone();
        }
        let text = self.read_now(relative);
        self.seen
            .borrow_mut()
            .texts
            .insert(relative.to_string(), text.clone());
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_reads_a_file_once_and_the_next_call_sees_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("design.md"), "# One\n").unwrap();
        let call = DiskFiles::new(dir.path());
        assert_eq!(call.read("design.md").as_deref(), Some("# One\n"));
        assert_eq!(call.file("design.md").map(|f| f.len), Some(6));
        assert!(call.file("tasks.md").is_none());
        // Changed during the call: the call keeps what it saw.
        std::fs::write(dir.path().join("design.md"), "# Two, longer\n").unwrap();
        std::fs::write(dir.path().join("tasks.md"), "# Tasks\n").unwrap();
        assert_eq!(call.read("design.md").as_deref(), Some("# One\n"));
        assert_eq!(call.file("design.md").map(|f| f.len), Some(6));
        assert!(call.file("tasks.md").is_none());
        // The next call sees the files as they are now.
        let next = DiskFiles::new(dir.path());
        assert_eq!(next.read("design.md").as_deref(), Some("# Two, longer\n"));
        assert_eq!(next.file("design.md").map(|f| f.len), Some(14));
        assert!(next.file("tasks.md").is_some());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_neither_looked_through_nor_read_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "secret\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.md"),
            dir.path().join("review.md"),
        )
        .unwrap();
        let call = DiskFiles::new(dir.path());
        assert!(call.file("review.md").is_none());
        assert!(call.read("review.md").is_none());
        assert!(call.read("review.md").is_none());
    }
}
