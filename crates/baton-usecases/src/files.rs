//! The engine's read-only view of a workspace folder, over the real disk.

use std::path::PathBuf;

use baton_engine::{FileInfo, WorkspaceFiles};
use chrono::Utc;

/// Artifacts larger than this are not read (a runaway file is not a review).
pub const MAX_ARTIFACT_BYTES: u64 = 4 * 1024 * 1024;

/// The real workspace folder, read-only, for the engine's guards and planner.
#[derive(Debug, Clone)]
pub struct DiskFiles {
    /// The workspace folder.
    pub dir: PathBuf,
}

impl DiskFiles {
    /// A view of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> DiskFiles {
        DiskFiles { dir: dir.into() }
    }
}

impl WorkspaceFiles for DiskFiles {
    fn file(&self, relative: &str) -> Option<FileInfo> {
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

    fn read(&self, relative: &str) -> Option<String> {
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
