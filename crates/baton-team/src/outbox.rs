//! The outbox: every write meant for the team database is first a file in
//! `<repo>/.baton/team/outbox/`, made whole or not at all
//! (`baton_fs::create_new_whole`), and removed only after the database
//! committed it. So a write is never lost (the database is down, refuses
//! the password, or the process is killed before sending: the file stays
//! and the next push sends it) and never doubled (the database ignores a
//! write it already holds: each event is keyed by run, write revision and
//! position). Any baton process of the working copy sends what it finds
//! there, its own writes and those a process that ended left behind.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::TeamError;
use crate::records::RunWrite;

/// Format of the outbox files.
pub const OUTBOX_VERSION: u32 = 1;

/// The sub-folder of files the database refused for their content (never
/// deleted: kept for a person to look at; docs/team.md).
pub const REJECTED: &str = "rejected";

/// One queued write, as stored in its file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Queued {
    /// [`OUTBOX_VERSION`].
    pub v: u32,
    /// The machine that wrote it.
    pub machine: String,
    /// The repository key.
    pub repo: String,
    /// The write.
    pub write: RunWrite,
}

/// The outbox folder of one working copy.
#[derive(Debug)]
pub struct Outbox {
    dir: PathBuf,
    counter: AtomicU64,
}

impl Outbox {
    /// The outbox in `dir` (made when first written).
    pub fn new(dir: PathBuf) -> Outbox {
        Outbox {
            dir,
            counter: AtomicU64::new(0),
        }
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Queues `item`; returns its file. Names sort by the write's revision,
    /// so the oldest write is sent first.
    pub fn push(&self, item: &Queued) -> Result<PathBuf, TeamError> {
        if !self.dir.is_dir() {
            std::fs::create_dir_all(&self.dir)
                .map_err(|e| TeamError::io("create", &self.dir, e))?;
        }
        let text = serde_json::to_vec(item).map_err(|e| TeamError::io("encode", &self.dir, e))?;
        loop {
            let n = self.counter.fetch_add(1, Ordering::Relaxed);
            let name = format!(
                "{:020}-{}-{n}.json",
                item.write.revision.max(0),
                std::process::id()
            );
            let path = self.dir.join(name);
            match baton_fs::create_new_whole(&path, &text) {
                Ok(true) => return Ok(path),
                // Another process of the same pid namespace used the name: next.
                Ok(false) => continue,
                Err(e) => return Err(TeamError::io("write", &path, e)),
            }
        }
    }

    /// The queued files, oldest first (at most `limit`).
    pub fn list(&self, limit: usize) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        files.truncate(limit);
        files
    }

    /// How many writes wait.
    pub fn len(&self) -> usize {
        self.list(usize::MAX).len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.list(1).is_empty()
    }

    /// Reads a queued file; `Ok(None)` when another process sent and
    /// removed it meanwhile; an error when it does not parse.
    pub fn read(&self, path: &Path) -> Result<Option<Queued>, String> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<Queued>(&bytes)
                .map(Some)
                .map_err(|e| e.to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Removes a file the database has committed (gone already is fine).
    pub fn done(&self, path: &Path) {
        let _ = std::fs::remove_file(path);
    }

    /// Moves a file the database refused for its content aside, with why.
    pub fn reject(&self, path: &Path, why: &str) {
        let dir = self.dir.join(REJECTED);
        let _ = std::fs::create_dir_all(&dir);
        if let Some(name) = path.file_name() {
            let to = dir.join(name);
            if std::fs::rename(path, &to).is_ok() {
                let _ = std::fs::write(to.with_extension("why.txt"), why);
            }
        }
        tracing::warn!(
            "team: a queued write was refused and set aside in {}: {why}",
            dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::tests::sample_write;

    #[test]
    fn queued_writes_come_back_oldest_first_and_go_when_done() {
        let tmp = tempfile::tempdir().unwrap();
        let outbox = Outbox::new(tmp.path().join("outbox"));
        assert!(outbox.is_empty());
        let mut later = sample_write("20260101-a", 2_000);
        later.events.clear();
        let earlier = sample_write("20260101-a", 1_000);
        for w in [later, earlier] {
            outbox
                .push(&Queued {
                    v: OUTBOX_VERSION,
                    machine: "m".into(),
                    repo: "r".into(),
                    write: w,
                })
                .unwrap();
        }
        let files = outbox.list(10);
        assert_eq!(files.len(), 2);
        let first = outbox.read(&files[0]).unwrap().unwrap();
        assert_eq!(first.write.revision, 1_000);
        outbox.done(&files[0]);
        outbox.done(&files[0]);
        assert_eq!(outbox.len(), 1);
        outbox.reject(&files[1], "bad");
        assert!(outbox.is_empty());
        assert!(tmp.path().join("outbox").join(REJECTED).is_dir());
    }
}
