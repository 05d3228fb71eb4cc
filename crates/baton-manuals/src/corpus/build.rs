//! Building segments from changed files: several threads read, hash and
//! analyse files; each adds them to its own segment builder and flushes it
//! into a segment whenever its memory estimate reaches the budget, so
//! memory stays bounded whatever the manuals' size. Files larger than
//! [`BuildLimits::large_file`] are analysed one at a time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::walk::FoundFile;
use crate::analyze::terms::{Fingerprint, analyze_bytes, fnv1a};
use crate::index::segment::Segment;
use crate::index::segment::builder::SegmentBuilder;
use crate::index::store::SegmentStore;

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
    /// Distinct terms (summed over segments).
    pub terms: usize,
    /// Segments holding the index.
    pub segments: usize,
    /// Bytes of the index (all segments).
    pub index_bytes: u64,
    /// Manuals whose index was opened from disk during this call.
    pub loaded_manuals: usize,
    /// Files (re-)tokenised during this call.
    pub parsed_files: usize,
    /// Files whose index data was reused (unchanged, or loaded from disk).
    pub reused_files: usize,
    /// Files removed from the index during this call.
    pub removed_files: usize,
    /// Files skipped (unreadable, too large, or not regular files).
    pub skipped_files: usize,
}

/// Limits of a build.
#[derive(Debug, Clone)]
pub(crate) struct BuildLimits {
    /// Largest file indexed.
    pub max_file_bytes: u64,
    /// Threads.
    pub threads: usize,
    /// Memory estimate at which a thread flushes its segment.
    pub budget_bytes: usize,
    /// Files above this size are analysed one at a time.
    pub large_file: u64,
}

impl Default for BuildLimits {
    fn default() -> Self {
        BuildLimits {
            max_file_bytes: baton_config::manuals::DEFAULT_MAX_FILE_BYTES,
            threads: 1,
            budget_bytes: 24 * 1024 * 1024,
            large_file: 1024 * 1024,
        }
    }
}

/// A file to (re)index.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    /// The file.
    pub found: FoundFile,
    /// Content hash in the index, when the file is known.
    pub known_hash: Option<u64>,
}

/// What a build produced.
#[derive(Default)]
pub(crate) struct BuildOutput {
    /// New segments (id, segment).
    pub segments: Vec<(u64, Arc<Segment>)>,
    /// Files whose content did not change: (path, size, mtime).
    pub touched: Vec<(String, u64, i64)>,
    /// Files skipped: (path, reason).
    pub skipped: Vec<(String, String)>,
    /// Files now in a new segment.
    pub parsed: Vec<String>,
    /// Segment writes that failed (their files stay as they were).
    pub errors: Vec<String>,
}

enum Processed {
    Touched(u64),
    Skipped(String),
    Indexed(crate::analyze::terms::FileRecord),
}

/// Reads a manual file through `baton-fs`'s untrusted reader: its last
/// component is never followed, nothing but a regular file is opened (a
/// FIFO never blocks, a device is never opened), and a file over
/// `max_bytes` — or one that grows past it while read — is refused.
pub(crate) fn read_bounded(path: &std::path::Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    baton_fs::read_file_nofollow(path, max_bytes).map_err(std::io::Error::other)
}

fn process(task: &Task, limits: &BuildLimits) -> Processed {
    let found = &task.found;
    let bytes = match read_bounded(&found.abs, limits.max_file_bytes) {
        Ok(b) => b,
        Err(e) => return Processed::Skipped(format!("skipped, {e}")),
    };
    let hash = fnv1a(&bytes);
    if task.known_hash == Some(hash) {
        return Processed::Touched(bytes.len() as u64);
    }
    let fingerprint = Fingerprint {
        size: bytes.len() as u64,
        mtime_ns: found.mtime_ns,
        hash,
    };
    Processed::Indexed(analyze_bytes(
        &found.rel,
        found.file_type,
        &bytes,
        fingerprint,
    ))
}

/// What every thread of a build shares.
struct Shared<'a> {
    tasks: &'a [Task],
    next: AtomicUsize,
    ids: AtomicU64,
    store: &'a SegmentStore,
    limits: &'a BuildLimits,
    large_lane: Mutex<()>,
}

/// One thread's share of a build.
#[derive(Default)]
struct Worker {
    builder: SegmentBuilder,
    pending: Vec<String>,
    out: BuildOutput,
}

impl Worker {
    fn flush(&mut self, store: &SegmentStore, ids: &AtomicU64) {
        if self.builder.file_count() == 0 {
            return;
        }
        let builder = std::mem::take(&mut self.builder);
        let paths = std::mem::take(&mut self.pending);
        let id = ids.fetch_add(1, Ordering::Relaxed);
        match store.write_segment(id, |w| builder.write(w)) {
            Ok(segment) => {
                self.out.segments.push((id, segment));
                self.out.parsed.extend(paths);
            }
            Err(e) => self.out.errors.push(e.to_string()),
        }
    }

    fn run(&mut self, shared: &Shared<'_>, done: &mut dyn FnMut(usize)) {
        loop {
            let i = shared.next.fetch_add(1, Ordering::Relaxed);
            let Some(task) = shared.tasks.get(i) else {
                break;
            };
            let lane = (task.found.size > shared.limits.large_file)
                .then(|| shared.large_lane.lock().unwrap_or_else(|p| p.into_inner()));
            let processed = process(task, shared.limits);
            drop(lane);
            let path = task.found.rel.clone();
            match processed {
                Processed::Touched(size) => {
                    self.out.touched.push((path, size, task.found.mtime_ns));
                }
                Processed::Skipped(reason) => self.out.skipped.push((path, reason)),
                Processed::Indexed(record) => {
                    self.builder.add(record);
                    self.pending.push(path);
                }
            }
            done(i);
            if self.builder.memory_estimate() >= shared.limits.budget_bytes {
                self.flush(shared.store, &shared.ids);
            }
        }
        self.flush(shared.store, &shared.ids);
    }
}

/// Builds segments for `tasks`; `next_id` numbers them; `tick` hears each
/// file as it is done.
pub(crate) fn build(
    tasks: &[Task],
    store: &SegmentStore,
    next_id: &mut u64,
    limits: &BuildLimits,
    tick: &mut dyn FnMut(&str),
) -> BuildOutput {
    let shared = Shared {
        tasks,
        next: AtomicUsize::new(0),
        ids: AtomicU64::new(*next_id),
        store,
        limits,
        large_lane: Mutex::new(()),
    };
    // Few files: no threads.
    let threads = limits.threads.min(tasks.len() / 8).max(1);
    let mut out = BuildOutput::default();
    if threads == 1 {
        let mut worker = Worker::default();
        worker.run(&shared, &mut |i| tick(&tasks[i].found.rel));
        out = worker.out;
    } else {
        let (send, receive) = std::sync::mpsc::channel::<usize>();
        let workers: Vec<Worker> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let send = send.clone();
                    let shared = &shared;
                    scope.spawn(move || {
                        let mut worker = Worker::default();
                        worker.run(shared, &mut |i| {
                            let _ = send.send(i);
                        });
                        worker
                    })
                })
                .collect();
            drop(send);
            for i in receive {
                tick(&tasks[i].found.rel);
            }
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        for w in workers {
            out.segments.extend(w.out.segments);
            out.touched.extend(w.out.touched);
            out.skipped.extend(w.out.skipped);
            out.parsed.extend(w.out.parsed);
            out.errors.extend(w.out.errors);
        }
    }
    out.segments.sort_by_key(|(id, _)| *id);
    *next_id = shared.ids.load(Ordering::Relaxed);
    out
}
