//! The append-only JSONL event log, rotated by size.
//!
//! Several baton processes may append to one log: each append takes an
//! exclusive OS lock on the live file, so rotation and appends never interleave.
//! Replay reads only the tail of the live file, so start-up cost is bounded by
//! the rotation size, never by the age of the repository.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::EventRecord;

/// Errors of the event log.
#[derive(Debug, thiserror::Error)]
pub enum EventLogError {
    /// Reading or writing the log failed.
    #[error("event log {path}: {source}")]
    Io {
        /// The log file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The most bytes read from the end of the log for a replay.
const TAIL_READ_LIMIT: u64 = 1024 * 1024;

/// An append-only JSONL file with size-based rotation.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
}

impl EventLog {
    /// Opens (creating folders as needed) the log at `path`.
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> Result<EventLog, EventLogError> {
        if let Some(parent) = path.parent() {
            // Keep the log out of version control without touching the
            // user's .gitignore: only in a folder baton makes for it (a
            // configured folder that already exists — the repository root,
            // a source folder — is never told to ignore everything). The
            // folder appears with its ignore file or not at all.
            let io = |source| EventLogError::Io {
                path: parent.to_path_buf(),
                source,
            };
            if !parent.as_os_str().is_empty() && !parent.exists() {
                baton_fs::create_ignored_dir(parent).map_err(io)?;
            }
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        Ok(EventLog {
            path: path.to_path_buf(),
            max_bytes: max_bytes.max(1024),
            keep: keep.max(1),
        })
    }

    /// The live log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> EventLogError {
        EventLogError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Appends one record as one line, rotating first when the file is full.
    pub fn append(&mut self, record: &EventRecord) -> Result<(), EventLogError> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends `records` in order, one line each, in one write under one
    /// lock (the events of one state change: one open of the log instead of
    /// one per event), rotating first when they do not fit.
    pub fn append_all(&mut self, records: &[EventRecord]) -> Result<(), EventLogError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut lines = Vec::new();
        for record in records {
            serde_json::to_writer(&mut lines, record).map_err(|e| self.io(e.into()))?;
            lines.push(b'\n');
        }
        let (mut file, mut size) = self.open_locked()?;
        if size > 0 && size + lines.len() as u64 > self.max_bytes {
            self.rotate()?;
            // The old handle points at the rotated file; append to a fresh one.
            drop(file);
            (file, size) = self.open_locked()?;
        }
        // A writer killed mid-line leaves a torn last line; start on a fresh
        // line so this record stays readable. Read on the file appended to.
        if size > 0 && !ends_with_newline(&file, size) {
            lines.insert(0, b'\n');
        }
        file.write_all(&lines).map_err(|e| self.io(e))?;
        Ok(())
    }

    /// Opens the log for appending and takes its lock: never through a
    /// symbolic link, never blocking on a FIFO, only a regular file (looked
    /// at once, under the lock, on what was opened). Returns the file and
    /// its size under the lock.
    fn open_locked(&self) -> Result<(File, u64), EventLogError> {
        let mut options = OpenOptions::new();
        // Read too: the last byte is read on this file.
        options.create(true).append(true).read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
        }
        let file = options.open(&self.path).map_err(|e| self.io(e))?;
        self.lock(&file)?;
        let meta = file.metadata().map_err(|e| self.io(e))?;
        if !meta.file_type().is_file() {
            return Err(self.io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the event log is not a regular file; baton does not write to it",
            )));
        }
        Ok((file, meta.len()))
    }

    /// Takes the log's append lock, waiting at most two seconds: a lock
    /// held forever elsewhere costs one unlogged event, never a hung call.
    fn lock(&self, file: &File) -> Result<(), EventLogError> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(()),
                Err(std::fs::TryLockError::Error(e)) => return Err(self.io(e)),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(self.io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the event log stayed locked by another process for 2 s",
                    )));
                }
            }
        }
    }

    /// `events.jsonl` → `events.1.jsonl` → … → `events.{keep}.jsonl` (the oldest is dropped).
    fn rotate(&self) -> Result<(), EventLogError> {
        for n in (1..self.keep).rev() {
            let from = self.rotated(n);
            if from.exists() {
                std::fs::rename(&from, self.rotated(n + 1)).map_err(|e| self.io(e))?;
            }
        }
        std::fs::rename(&self.path, self.rotated(1)).map_err(|e| self.io(e))
    }

    /// The path of rotated file number `n` (1 = newest).
    pub fn rotated(&self, n: usize) -> PathBuf {
        let stem = self
            .path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("events");
        self.path.with_file_name(format!("{stem}.{n}.jsonl"))
    }

    /// The last `limit` well-formed records of the live file, oldest first.
    /// Reads at most 1 MiB from the end; torn or foreign lines are skipped.
    pub fn tail(&self, limit: usize) -> Result<Vec<EventRecord>, EventLogError> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(e)),
        };
        let size = file.metadata().map_err(|e| self.io(e))?.len();
        let start = size.saturating_sub(TAIL_READ_LIMIT);
        file.seek(SeekFrom::Start(start)).map_err(|e| self.io(e))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).map_err(|e| self.io(e))?;
        let text = String::from_utf8_lossy(&buf);
        let mut lines: Vec<&str> = text.lines().collect();
        if start > 0 && !lines.is_empty() {
            lines.remove(0); // probably cut in the middle
        }
        let mut records: Vec<EventRecord> = lines
            .iter()
            .rev()
            .filter_map(|l| serde_json::from_str(l).ok())
            .take(limit)
            .collect();
        records.reverse();
        Ok(records)
    }
}

/// Whether the last byte of `file`, `size` bytes long, is a newline (a
/// file that cannot be read counts as one: nothing is added).
fn ends_with_newline(file: &File, size: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8; 1];
    match file.read_at(&mut last, size - 1) {
        Ok(1) => last[0] == b'\n',
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventKind, EventRecord};

    fn rec(i: usize) -> EventRecord {
        EventRecord::new(EventKind::PhaseStart, &format!("p{i}"), "s", "w")
    }

    #[test]
    fn appends_lines_and_replays_the_tail_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::open(&dir.path().join("ev/events.jsonl"), 1 << 20, 2).unwrap();
        for i in 0..10 {
            log.append(&rec(i)).unwrap();
        }
        let tail = log.tail(3).unwrap();
        let phases: Vec<_> = tail.iter().map(|r| r.phase.as_str()).collect();
        assert_eq!(phases, ["p7", "p8", "p9"]);
        assert!(dir.path().join("ev/.gitignore").exists());
    }

    #[test]
    fn the_events_of_one_change_are_appended_in_order_in_one_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1 << 20, 2).unwrap();
        log.append(&rec(0)).unwrap();
        log.append_all(&[rec(1), rec(2), rec(3)]).unwrap();
        log.append_all(&[]).unwrap();
        let phases: Vec<_> = log.tail(10).unwrap().into_iter().map(|r| r.phase).collect();
        assert_eq!(phases, ["p0", "p1", "p2", "p3"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 4);
    }

    #[test]
    fn rotates_by_size_and_keeps_a_bounded_number_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1024, 2).unwrap();
        for i in 0..200 {
            log.append(&rec(i)).unwrap();
        }
        assert!(std::fs::metadata(&path).unwrap().len() <= 1024);
        assert!(log.rotated(1).exists());
        assert!(log.rotated(2).exists());
        assert!(!log.rotated(3).exists());
        // The newest record is in the live file.
        assert_eq!(log.tail(1).unwrap()[0].phase, "p199");
    }

    #[test]
    fn torn_lines_are_skipped_on_replay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1 << 20, 2).unwrap();
        log.append(&rec(1)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"event\":\"phase-st")
            .unwrap();
        let tail = log.tail(10).unwrap();
        assert_eq!(tail.len(), 1);
        // The next record starts on its own line and is readable.
        log.append(&rec(2)).unwrap();
        let tail = log.tail(10).unwrap();
        assert_eq!(tail.len(), 2);
        assert_eq!(tail[1].phase, "p2");
    }

    #[test]
    fn a_link_or_a_fifo_in_place_of_the_log_is_refused_and_never_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep\n").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let mut log = EventLog::open(&path, 1 << 20, 2).unwrap();
        assert!(log.append(&rec(1)).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
        std::fs::remove_file(&path).unwrap();
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // Nobody reads the FIFO: a blocking open would hang the test.
        let e = log.append(&rec(2)).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
