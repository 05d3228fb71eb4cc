//! Following the event log: every baton process of a repository appends to
//! one JSONL file, and a process that serves events reads what the others
//! wrote, live and in the order it was written.
//!
//! A [`Tail`] keeps an open handle on the live file and the byte offset it
//! has read up to. It reads only what was appended since (never the whole
//! history), keeps a torn last line until its newline arrives, and notices
//! rotation (the live file renamed to `events.1.jsonl`, a new one created):
//! it finishes the old file through its handle, then starts the new one at
//! byte 0. A file that shrank (truncated by hand) is read again from 0.
//!
//! [`spawn`] runs a tail on a thread woken by file notifications (`notify`,
//! inotify on Linux) on the log's folder, with a slow poll as a safety net
//! for notifications that never come (network file systems).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::EventRecord;

/// How often the log is read when no file notification arrived (a safety
/// net; notifications normally wake the follower within milliseconds).
pub const FALLBACK_POLL: Duration = Duration::from_millis(1000);

/// The most bytes read from the end of the log when a follower starts.
pub const START_TAIL_BYTES: u64 = 1024 * 1024;

/// A reader positioned in the live log file.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    file: Option<File>,
    identity: Option<FileIdentity>,
    offset: u64,
    partial: Vec<u8>,
}

/// What identifies one file across renames (device and inode on Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity(u64, u64);

fn identity(meta: &std::fs::Metadata) -> FileIdentity {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        FileIdentity(meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        // Without inodes, rotation shows as a shrink (the new file is shorter).
        let _ = meta;
        FileIdentity(0, 0)
    }
}

impl Tail {
    /// Opens the log and reads its last records (at most `limit`, from at
    /// most the last 1 MiB), leaving the tail positioned at the end of what
    /// it read, so [`Tail::read_new`] continues exactly there. A missing
    /// file is not an error: the tail starts when it appears.
    pub fn start(path: &Path, limit: usize) -> (Tail, Vec<EventRecord>) {
        let mut tail = Tail {
            path: path.to_path_buf(),
            file: None,
            identity: None,
            offset: 0,
            partial: Vec::new(),
        };
        let Ok(mut file) = File::open(path) else {
            return (tail, Vec::new());
        };
        let Ok(meta) = file.metadata() else {
            return (tail, Vec::new());
        };
        let size = meta.len();
        let start = size.saturating_sub(START_TAIL_BYTES);
        let mut buf = Vec::new();
        if file.seek(SeekFrom::Start(start)).is_err()
            || (&mut file)
                .take(size - start)
                .read_to_end(&mut buf)
                .is_err()
        {
            return (tail, Vec::new());
        }
        let mut lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').collect();
        // The piece after the last newline is a torn line still being written.
        let torn = lines.pop().unwrap_or_default().to_vec();
        if start > 0 && !lines.is_empty() {
            lines.remove(0); // probably cut in the middle
        }
        let mut records: Vec<EventRecord> = lines
            .iter()
            .rev()
            .filter_map(|l| parse(l))
            .take(limit)
            .collect();
        records.reverse();
        tail.identity = Some(identity(&meta));
        tail.offset = start + buf.len() as u64;
        tail.partial = torn;
        tail.file = Some(file);
        (tail, records)
    }

    /// The byte offset read up to in the current live file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads every complete record appended since the last call, following
    /// a rotation or a truncation, oldest first.
    pub fn read_new(&mut self) -> Vec<EventRecord> {
        let mut out = Vec::new();
        // Two rounds at most: the old file's rest, then the new file.
        for _ in 0..4 {
            if self.file.is_none() && !self.open_live() {
                return out;
            }
            self.drain(&mut out);
            match std::fs::metadata(&self.path) {
                Ok(meta) if Some(identity(&meta)) != self.identity => {
                    // Rotated: the old handle is complete (rotation and
                    // appends happen under one lock); a torn line at its end
                    // stays torn for good.
                    self.reset();
                }
                Ok(meta) if meta.len() < self.offset => {
                    // Truncated or replaced by a shorter file.
                    self.reset();
                }
                Ok(_) => return out,
                Err(_) => {
                    // Between the rename and the new file's creation.
                    self.reset();
                    return out;
                }
            }
        }
        out
    }

    fn reset(&mut self) {
        self.file = None;
        self.identity = None;
        self.offset = 0;
        self.partial.clear();
    }

    fn open_live(&mut self) -> bool {
        let Ok(file) = File::open(&self.path) else {
            return false;
        };
        let Ok(meta) = file.metadata() else {
            return false;
        };
        self.identity = Some(identity(&meta));
        self.offset = 0;
        self.partial.clear();
        self.file = Some(file);
        true
    }

    fn drain(&mut self, out: &mut Vec<EventRecord>) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut buf = Vec::new();
        if file.read_to_end(&mut buf).is_err() || buf.is_empty() {
            return;
        }
        self.offset += buf.len() as u64;
        self.partial.extend_from_slice(&buf);
        let Some(last_newline) = self.partial.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        let rest = self.partial.split_off(last_newline + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        out.extend(complete.split(|b| *b == b'\n').filter_map(parse));
    }
}

fn parse(line: &[u8]) -> Option<EventRecord> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    serde_json::from_slice(line).ok()
}

/// A running follower; dropping it stops the thread (within the fallback
/// poll interval).
#[derive(Debug)]
pub struct FollowHandle {
    stop: mpsc::Sender<Wake>,
}

impl Drop for FollowHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(Wake::Stop);
    }
}

enum Wake {
    Changed,
    Stop,
}

/// Follows `tail` on a thread: each batch of new records goes to `sink`, in
/// log order. `sink` returns `false` to stop following. The thread is woken
/// by file notifications on the log's folder and polls every
/// [`FALLBACK_POLL`] besides.
pub fn spawn(
    mut tail: Tail,
    mut sink: impl FnMut(Vec<EventRecord>) -> bool + Send + 'static,
) -> std::io::Result<FollowHandle> {
    use notify::{RecursiveMode, Watcher};
    let (tx, rx) = mpsc::channel::<Wake>();
    let folder = tail
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let file_name = tail.path.file_name().map(|n| n.to_os_string());
    let wake = tx.clone();
    // A watcher that cannot start leaves the poll: slower, still correct.
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let relevant = match &event {
            Ok(e) => {
                e.need_rescan()
                    || e.paths.is_empty()
                    || e.paths.iter().any(|p| {
                        p.file_name().map(|n| n.to_os_string()) == file_name
                            || p.extension().is_some_and(|x| x == "jsonl")
                    })
            }
            Err(_) => true,
        };
        if relevant {
            let _ = wake.send(Wake::Changed);
        }
    })
    .and_then(|mut w| w.watch(&folder, RecursiveMode::NonRecursive).map(|_| w));
    if let Err(e) = &watcher {
        tracing::warn!(
            "event log {}: file notifications unavailable ({e}); polling every {} ms",
            tail.path.display(),
            FALLBACK_POLL.as_millis()
        );
    }
    std::thread::Builder::new()
        .name("baton-event-follow".into())
        .spawn(move || {
            let _watcher = watcher.ok();
            loop {
                let batch = tail.read_new();
                if !batch.is_empty() && !sink(batch) {
                    return;
                }
                match rx.recv_timeout(FALLBACK_POLL) {
                    Ok(Wake::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Ok(Wake::Changed) => {
                        // Coalesce a burst of notifications into one read.
                        while let Ok(w) = rx.try_recv() {
                            if matches!(w, Wake::Stop) {
                                return;
                            }
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
            }
        })?;
    Ok(FollowHandle { stop: tx })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventKind, EventLog};
    use std::io::Write;

    fn rec(i: usize) -> EventRecord {
        EventRecord::new(EventKind::PhaseStart, &format!("p{i}"), "s", "w")
    }

    fn phases(records: &[EventRecord]) -> Vec<String> {
        records.iter().map(|r| r.phase.clone()).collect()
    }

    #[test]
    fn starts_at_the_end_and_reads_only_what_is_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1 << 20, 2).unwrap();
        for i in 0..5 {
            log.append(&rec(i)).unwrap();
        }
        let (mut tail, recent) = Tail::start(&path, 2);
        assert_eq!(phases(&recent), ["p3", "p4"]);
        assert!(tail.read_new().is_empty());
        log.append(&rec(5)).unwrap();
        log.append(&rec(6)).unwrap();
        assert_eq!(phases(&tail.read_new()), ["p5", "p6"]);
        assert!(tail.read_new().is_empty());
        assert_eq!(tail.offset(), std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn a_torn_line_waits_for_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let (mut tail, _) = Tail::start(&path, 10);
        let line = serde_json::to_string(&rec(1)).unwrap();
        let (a, b) = line.split_at(20);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(a.as_bytes()).unwrap();
        assert!(tail.read_new().is_empty());
        f.write_all(b.as_bytes()).unwrap();
        assert!(tail.read_new().is_empty(), "no newline yet");
        f.write_all(b"\n").unwrap();
        assert_eq!(phases(&tail.read_new()), ["p1"]);
    }

    #[test]
    fn follows_rotation_without_losing_or_repeating_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        // Small files: a rotation every few records.
        let mut log = EventLog::open(&path, 1024, 3).unwrap();
        let (mut tail, _) = Tail::start(&path, 10);
        let mut seen = Vec::new();
        for i in 0..40 {
            log.append(&rec(i)).unwrap();
            if i % 3 == 0 {
                seen.extend(tail.read_new());
            }
        }
        seen.extend(tail.read_new());
        assert!(log.rotated(1).exists(), "the log rotated");
        let want: Vec<String> = (0..40).map(|i| format!("p{i}")).collect();
        assert_eq!(phases(&seen), want);
    }

    #[test]
    fn a_truncated_log_is_read_again_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1 << 20, 2).unwrap();
        for i in 0..3 {
            log.append(&rec(i)).unwrap();
        }
        let (mut tail, _) = Tail::start(&path, 10);
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        log.append(&rec(9)).unwrap();
        assert_eq!(phases(&tail.read_new()), ["p9"]);
    }

    #[test]
    fn a_log_that_does_not_exist_yet_is_followed_once_it_appears() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let (mut tail, recent) = Tail::start(&path, 10);
        assert!(recent.is_empty());
        assert!(tail.read_new().is_empty());
        let mut log = EventLog::open(&path, 1 << 20, 2).unwrap();
        log.append(&rec(1)).unwrap();
        assert_eq!(phases(&tail.read_new()), ["p1"]);
    }

    #[test]
    fn start_reads_a_bounded_tail_of_a_big_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 64 << 20, 2).unwrap();
        let mut i = 0;
        while std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) < START_TAIL_BYTES + 4096 {
            log.append(&rec(i)).unwrap();
            i += 1;
        }
        let (mut tail, recent) = Tail::start(&path, usize::MAX);
        // Fewer records than written: only the last MiB was read.
        assert!(recent.len() < i && !recent.is_empty());
        assert_eq!(recent.last().unwrap().phase, format!("p{}", i - 1));
        log.append(&rec(i)).unwrap();
        assert_eq!(phases(&tail.read_new()), [format!("p{i}")]);
    }

    #[test]
    fn the_thread_delivers_appends_from_another_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let (tail, _) = Tail::start(&path, 10);
        let (tx, rx) = mpsc::channel();
        let handle = spawn(tail, move |batch| tx.send(batch).is_ok()).unwrap();
        // A second, independent writer (as another process would be).
        let mut log = EventLog::open(&path, 1 << 20, 2).unwrap();
        for i in 0..3 {
            log.append(&rec(i)).unwrap();
        }
        let mut got = Vec::new();
        while got.len() < 3 {
            got.extend(rx.recv_timeout(Duration::from_secs(10)).expect("delivered"));
        }
        assert_eq!(phases(&got), ["p0", "p1", "p2"]);
        drop(handle);
    }
}
