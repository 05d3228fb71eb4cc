//! How state changes reach the disk: the durability modes and the syncer,
//! the one thread per process that syncs what the store wrote, off the
//! reply's path.
//!
//! * [`Durability::Background`] (the default): a change is journaled and
//!   written (renames, no sync) and the reply goes out; the syncer starts
//!   [`GATHER`] after the first write on everything written since its last
//!   pass and syncs it — each
//!   journal once (`fdatasync`: one sync for every change of that workspace
//!   in the batch), the folders whose entries changed once. When a change
//!   is written while an earlier one has waited [`SYNC_WINDOW`] for its
//!   sync, the writer waits for the syncer first, so no reply is sent while
//!   a change older than that window is not on disk. A process that exits
//!   (returns from `main` or calls `exit`) syncs what is left before it goes.
//! * [`Durability::BeforeReply`]: the same syncs, done by the writer before
//!   it returns.
//! * [`Durability::Off`]: no journal and no sync; writes stay atomic.
//!
//! docs/lifecycle.md ("Durability") states what a power cut can lose.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How far a state change may run ahead of the disk in
/// [`Durability::Background`]: a write waits for the syncer when an earlier
/// change has waited this long.
pub const SYNC_WINDOW: Duration = Duration::from_millis(100);

/// How long the syncer lets writes gather after the first one woke it,
/// before it syncs them all in one pass (well inside [`SYNC_WINDOW`]): a
/// client that calls back to back meets a few passes a second instead of
/// one per change (docs/performance.md). A [`flush`] (a process exiting,
/// a CLI command that wrote) cuts the wait short.
pub const GATHER: Duration = Duration::from_millis(10);

/// How state changes are made durable (`BATON_FSYNC`, docs/configuration.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Atomic renames only: a killed process loses nothing, a power cut may
    /// lose recent changes (whatever the operating system had not written).
    Off,
    /// Journaled; synced by the syncer right after the reply, within
    /// [`SYNC_WINDOW`] plus one sync.
    #[default]
    Background,
    /// Journaled and synced before the call returns.
    BeforeReply,
}

impl Durability {
    /// Whether changes are journaled and synced at all.
    pub fn journaled(self) -> bool {
        self != Durability::Off
    }
}

/// One thing to make durable.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Job {
    /// Make the workspace folder's next state files (crate::spare): first
    /// in a pass, so the next change finds them even while the syncs take
    /// long.
    Spare(PathBuf),
    /// `fdatasync` a file's contents (a journal, a file written once).
    Data(PathBuf),
    /// `fsync` a folder: the entries created, renamed or removed in it.
    Folder(PathBuf),
    /// Sync the state files of a workspace folder and its folder, then
    /// empty its journal (`remove`: delete it, the run has ended), under
    /// the workspace's lock.
    Checkpoint {
        /// The workspace folder.
        dir: PathBuf,
        /// Delete the journal instead of emptying it.
        remove: bool,
    },
}

/// Counts of the syncs this process made, by kind (for tests and benches).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncCounts {
    /// `fdatasync` of files.
    pub data: u64,
    /// `fsync` of folders.
    pub folders: u64,
    /// Checkpoints done.
    pub checkpoints: u64,
}

static DATA: AtomicU64 = AtomicU64::new(0);
static FOLDERS: AtomicU64 = AtomicU64::new(0);
static CHECKPOINTS: AtomicU64 = AtomicU64::new(0);

/// The syncs this process has made so far.
pub fn sync_counts() -> SyncCounts {
    SyncCounts {
        data: DATA.load(Ordering::Relaxed),
        folders: FOLDERS.load(Ordering::Relaxed),
        checkpoints: CHECKPOINTS.load(Ordering::Relaxed),
    }
}

#[derive(Default)]
struct Queue {
    jobs: BTreeSet<Job>,
    /// When the oldest job still queued was queued.
    since: Option<Instant>,
    /// Jobs taken by the thread and not done yet.
    busy: bool,
    started: bool,
    /// The thread is being started ([`start_syncer`], without this lock):
    /// jobs queued meanwhile wait for it.
    starting: bool,
    /// Someone waits for the queued jobs ([`flush`]): the gather ends now.
    hurry: bool,
}

struct Syncer {
    queue: Mutex<Queue>,
    work: Condvar,
    idle: Condvar,
    /// Ends a gather early ([`Queue::hurry`]).
    hurry: Condvar,
}

fn syncer() -> &'static Syncer {
    static SYNCER: OnceLock<Syncer> = OnceLock::new();
    SYNCER.get_or_init(|| Syncer {
        queue: Mutex::new(Queue::default()),
        work: Condvar::new(),
        idle: Condvar::new(),
        hurry: Condvar::new(),
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes `jobs` durable as `mode` says: queued for the syncer
/// (background), done now (before reply), or nothing (off).
pub fn submit(mode: Durability, jobs: Vec<Job>, lock_timeout: Duration) {
    match mode {
        Durability::Off => {}
        Durability::BeforeReply => run(jobs, lock_timeout),
        Durability::Background => {
            if jobs.is_empty() {
                return;
            }
            let s = syncer();
            let mut q = lock(&s.queue);
            // Being started by the server's warm-up thread: queued for it,
            // this reply does not wait for the thread to exist.
            if !q.starting && !started(&mut q, lock_timeout) {
                // No thread for it: sync before the reply instead.
                drop(q);
                run(jobs, lock_timeout);
                return;
            }
            let overdue = q.since.is_some_and(|t| t.elapsed() >= SYNC_WINDOW);
            q.since.get_or_insert_with(Instant::now);
            q.jobs.extend(jobs);
            s.work.notify_one();
            if overdue {
                // The syncer is behind: wait for it so the window holds.
                while q.busy || !q.jobs.is_empty() {
                    q = s.idle.wait(q).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
    }
}

/// Starts the sync thread now, if it is not running: a server does it once
/// it is up, so its first change does not start a thread before its reply.
/// Without it, the first change starts it.
pub fn start_syncer(lock_timeout: Duration) {
    let s = syncer();
    {
        let mut q = lock(&s.queue);
        if q.started || q.starting {
            return;
        }
        q.starting = true;
    }
    // Started without the queue's lock: a thread's start can take
    // milliseconds on a busy machine, and a call that writes meanwhile
    // queues its jobs for it instead of waiting before its reply.
    let ok = start(lock_timeout);
    let mut q = lock(&s.queue);
    q.starting = false;
    q.started = ok;
    if !ok && !q.jobs.is_empty() {
        // No thread after all: what was queued for it is synced now.
        let jobs = std::mem::take(&mut q.jobs);
        q.since = None;
        q.busy = true;
        drop(q);
        run(jobs.into_iter().collect(), lock_timeout);
        lock(&s.queue).busy = false;
        s.idle.notify_all();
    }
}

/// Whether the sync thread runs, starting it if need be; `false` when the
/// system gives no thread.
fn started(q: &mut Queue, lock_timeout: Duration) -> bool {
    if !q.started {
        q.started = start(lock_timeout);
    }
    q.started
}

/// Waits until everything queued so far is on disk (tests, and the exit
/// of the process).
pub fn flush() {
    let s = syncer();
    let mut q = lock(&s.queue);
    if !q.started && !q.starting {
        return;
    }
    // The syncer may be letting writes gather: nothing more is coming.
    q.hurry = !q.jobs.is_empty();
    s.hurry.notify_all();
    while q.busy || !q.jobs.is_empty() {
        q = s.idle.wait(q).unwrap_or_else(|p| p.into_inner());
    }
    q.hurry = false;
}

/// Starts the sync thread; `false` when the system gives no thread.
fn start(lock_timeout: Duration) -> bool {
    let spawned = std::thread::Builder::new()
        .name("baton-sync".into())
        .stack_size(64 * 1024)
        .spawn(move || work(lock_timeout));
    match spawned {
        Ok(_) => {
            // A process that returns from main or calls exit() syncs what is
            // left first.
            extern "C" fn at_exit() {
                flush();
                // No empty spare file stays behind.
                crate::spare::remove_all();
            }
            // SAFETY: registering a plain function with no arguments.
            unsafe {
                libc::atexit(at_exit);
            }
            true
        }
        Err(e) => {
            tracing::warn!("could not start the sync thread ({e}); syncing before each reply");
            false
        }
    }
}

fn work(lock_timeout: Duration) {
    let s = syncer();
    loop {
        let jobs = {
            let mut q = lock(&s.queue);
            while q.jobs.is_empty() {
                q = s.work.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            // Gather: the call that wrote is usually still writing (a new
            // run writes four files); its writes join this pass instead of
            // meeting a sync in the middle; and the reply goes out before
            // the spares (crate::spare) are made.
            let until = Instant::now() + GATHER;
            while !q.hurry {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                q = s
                    .hurry
                    .wait_timeout(q, left)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            q.hurry = false;
            q.busy = true;
            q.since = None;
            std::mem::take(&mut q.jobs)
        };
        run(jobs.into_iter().collect(), lock_timeout);
        let mut q = lock(&s.queue);
        q.busy = false;
        if q.jobs.is_empty() {
            s.idle.notify_all();
        }
    }
}

/// Does `jobs`: file contents first, then folders, then checkpoints (a
/// folder's new entries must point at contents already on disk).
fn run(jobs: Vec<Job>, lock_timeout: Duration) {
    let mut jobs = jobs;
    jobs.sort();
    jobs.dedup();
    for job in &jobs {
        match job {
            Job::Data(path) => sync_data(path),
            Job::Folder(dir) => sync_folder(dir),
            Job::Checkpoint { dir, remove } => checkpoint(dir, *remove, lock_timeout),
            Job::Spare(dir) => crate::spare::prepare(dir),
        }
    }
    // Replaced state files the store kept open: their inodes are freed here.
    crate::spare::close_retired();
}

fn sync_data(path: &Path) {
    match std::fs::File::open(path) {
        Ok(f) => {
            DATA.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = f.sync_data() {
                tracing::warn!(
                    "fdatasync {} failed ({e}): recent state changes may not survive a power loss",
                    path.display()
                );
            }
        }
        // Gone since (a checkpoint removed it, the folder moved): nothing to sync.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("cannot open {} to sync it: {e}", path.display()),
    }
}

/// `fsync` of a folder (fault injection for the tests: `BATON_FAULT_DIR_FSYNC`).
pub fn fsync_folder(dir: &Path) -> std::io::Result<()> {
    FOLDERS.fetch_add(1, Ordering::Relaxed);
    if std::env::var_os("BATON_FAULT_DIR_FSYNC").is_some() {
        return Err(std::io::Error::other(
            "injected fault (BATON_FAULT_DIR_FSYNC)",
        ));
    }
    std::fs::File::open(dir).and_then(|d| d.sync_all())
}

fn sync_folder(dir: &Path) {
    if let Err(e) = fsync_folder(dir)
        && dir.exists()
    {
        tracing::warn!(
            "fsync of {} failed ({e}): its recent changes may not survive a power loss",
            dir.display()
        );
    }
}

/// The files of a workspace a journal covers.
const STATE_FILES: [&str; 3] = [
    crate::store::STATE_FILE,
    crate::store::LIVE_STATE_FILE,
    "request.md",
];

fn checkpoint(dir: &Path, remove: bool, lock_timeout: Duration) {
    let journal = dir.join(crate::journal::JOURNAL_FILE);
    if !journal.exists() {
        return;
    }
    let lock_path = dir.join(crate::store::LOCK_FILE);
    let Ok(file) = crate::fs::open_regular(&lock_path, false) else {
        return;
    };
    let Ok(_held) = crate::fs::lock_within(file, lock_timeout, "checkpoint") else {
        // Busy for that long: the journal stays (it stays correct) and the
        // next change that passes the size or ends the run tries again.
        return;
    };
    for name in STATE_FILES {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            sync_data(&path);
        }
    }
    if let Err(e) = fsync_folder(dir) {
        tracing::warn!(
            "fsync of {} failed ({e}); its journal is kept",
            dir.display()
        );
        return;
    }
    let done = if remove {
        std::fs::remove_file(&journal)
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&journal)
            .and_then(|f| f.set_len(0))
    };
    match done {
        Ok(()) => {
            CHECKPOINTS.fetch_add(1, Ordering::Relaxed);
            crate::journal::forget(dir);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => crate::journal::forget(dir),
        Err(e) => tracing::warn!("emptying {} failed: {e}", journal.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_syncs_are_done_and_flush_waits_for_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let before = sync_counts();
        submit(
            Durability::Background,
            vec![
                Job::Data(file.clone()),
                Job::Data(file.clone()),
                Job::Folder(dir.path().to_path_buf()),
            ],
            Duration::from_secs(1),
        );
        flush();
        let after = sync_counts();
        // Other tests of this process may sync too: at least ours happened.
        assert!(after.data > before.data);
        assert!(after.folders > before.folders);
    }

    #[test]
    fn off_does_nothing_and_before_reply_syncs_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(crate::journal::JOURNAL_FILE);
        std::fs::write(&file, "x").unwrap();
        submit(
            Durability::Off,
            vec![Job::Checkpoint {
                dir: dir.path().to_path_buf(),
                remove: true,
            }],
            Duration::from_secs(1),
        );
        assert!(file.exists(), "off: nothing happens");
        submit(
            Durability::BeforeReply,
            vec![Job::Checkpoint {
                dir: dir.path().to_path_buf(),
                remove: true,
            }],
            Duration::from_secs(1),
        );
        assert!(
            !file.exists(),
            "the checkpoint removed the journal before returning"
        );
    }

    #[test]
    fn a_checkpoint_waits_for_the_workspace_lock_and_gives_up_when_it_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join(crate::journal::JOURNAL_FILE);
        std::fs::write(&journal, "x").unwrap();
        let held = crate::fs::lock_within(
            crate::fs::open_regular(&dir.path().join(crate::store::LOCK_FILE), false).unwrap(),
            Duration::from_secs(1),
            "writer",
        )
        .unwrap();
        checkpoint(dir.path(), false, Duration::from_millis(20));
        assert_eq!(std::fs::read(&journal).unwrap(), b"x", "kept while held");
        drop(held);
        checkpoint(dir.path(), false, Duration::from_millis(20));
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0, "emptied");
    }
}
