//! What baton reads from git (never writes: commits and pushes are actions
//! the agent executes): the repository's status, for the run's commit and
//! for the baseline recorded when a run starts.
//!
//! The baseline (HEAD and every modified, staged or untracked path) is read
//! by one `git status --porcelain=v2 --branch` run, and for a confirmed run
//! it is read off the reply's path: the confirmation call records the run
//! with its baseline pending, then hands the read to the process's
//! baseline reader, one long-lived thread at nice 10
//! ([`PendingBaseline::attach`], once the call holds no lock: a child
//! process holds copies of its parent's files until it has started git,
//! and a copy of a held lock file would keep the lock), and answers
//! without waiting. The read starts before the reply is sent, so before
//! any action of the run exists; the run's own workspace is left out.
//! Any change of the run's state after the read finished takes it under
//! the workspace lock ([`settle_baseline`], the store's `before_change`
//! hook, which never waits and never reads), and the step loop settles it
//! before a call of the run returns any action ([`settle_baseline_before_actions`]:
//! waiting a little for the read under way, or reading the repository
//! itself; it can fail the call where waiting is refused, which the hook
//! could not); the run's commit, its only reader, waits for it if it has
//! not ([`settle_baseline_now`]). So the baseline is what the repository
//! held before the run existed — the read starts before the run exists
//! and ends before any action of it is handed out — and it is in
//! `state.json` before anything consults it.
//! When that read is not in this process (the process was killed, another
//! process serves the run) the settling reads the repository then: a
//! later read can only count more paths as "dirty before the run", so the
//! run's commit never takes a file that was not the run's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use baton_engine::plan::commit::{RepoStatus, parse_porcelain};
use baton_state::store::WorkspaceRef;
use baton_state::{RepoBaseline, WorkspaceState};

/// Most paths a baseline keeps (a repository with a huge untracked tree
/// keeps the first ones; the rest are treated as the run's).
pub const MAX_BASELINE_PATHS: usize = 10_000;

/// The `git` executable, found on `PATH` once per process: started by its
/// full path, a child becomes git at once instead of trying each folder.
fn git_program() -> Option<&'static Path> {
    static GIT: OnceLock<Option<PathBuf>> = OnceLock::new();
    GIT.get_or_init(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("git"))
            .find(|candidate| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
    .as_deref()
}

/// Runs a read-only git command. `GIT_OPTIONAL_LOCKS=0`: a read never
/// takes the index lock (`git status` otherwise refreshes the index under
/// it), so the person's or the agent's own git command running at the same
/// moment (a checkout, a commit) never fails on `index.lock` because baton
/// was reading — baton reads off the reply path, concurrently with them.
fn git(repo: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new(git_program()?)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(args)
        .current_dir(repo)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The paths changed or untracked now (`None` outside a git repository or
/// without git).
pub fn status(repo: &Path) -> Option<RepoStatus> {
    let out = git(
        repo,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    Some(RepoStatus {
        changed: parse_porcelain(&out),
    })
}

/// What the repository holds now: HEAD and the dirty paths (one `git
/// status` run; `None` outside a git repository or without git).
pub fn baseline(repo: &Path) -> Option<RepoBaseline> {
    let out = git(
        repo,
        &[
            "status",
            "--porcelain=v2",
            "-z",
            "--branch",
            "--untracked-files=all",
        ],
    )?;
    let (head, mut dirty) = parse_porcelain_v2(&out);
    dirty.sort();
    dirty.dedup();
    dirty.truncate(MAX_BASELINE_PATHS);
    Some(RepoBaseline {
        head,
        dirty,
        taken_late: false,
        pending: false,
    })
}

/// HEAD (none before the first commit) and every path of
/// `git status --porcelain=v2 -z --branch` output: changed, renamed or
/// copied (both paths), unmerged and untracked entries.
pub fn parse_porcelain_v2(output: &[u8]) -> (Option<String>, Vec<String>) {
    let mut head = None;
    let mut paths = Vec::new();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    // The path is what follows the first `n` space-separated fields.
    let after_fields = |entry: &[u8], n: usize| -> Option<Vec<u8>> {
        let mut rest = entry;
        for _ in 0..n {
            let space = rest.iter().position(|b| *b == b' ')?;
            rest = &rest[space + 1..];
        }
        Some(rest.to_vec())
    };
    let mut fields = output.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        match entry.first() {
            Some(b'#') => {
                if let Some(oid) = entry.strip_prefix(b"# branch.oid ")
                    && oid != b"(initial)"
                {
                    head = Some(text(oid));
                }
            }
            // Ordinary: XY sub mH mI mW hH hI path.
            Some(b'1') => paths.extend(after_fields(entry, 8).map(|p| text(&p))),
            // Renamed or copied: XY sub mH mI mW hH hI Xscore path, then the original.
            Some(b'2') => {
                paths.extend(after_fields(entry, 9).map(|p| text(&p)));
                if let Some(from) = fields.next() {
                    paths.push(text(from));
                }
            }
            // Unmerged: XY sub m1 m2 m3 mW h1 h2 h3 path.
            Some(b'u') => paths.extend(after_fields(entry, 10).map(|p| text(&p))),
            // Untracked (ignored files are not asked for).
            Some(b'?') => paths.extend(after_fields(entry, 1).map(|p| text(&p))),
            _ => {}
        }
    }
    (head, paths)
}

/// A baseline read handed to the reader thread: queued, taken (by the
/// reader or by the run's first change, whichever comes first: the read is
/// run once), then finished.
#[derive(Debug, Default)]
struct Scan {
    /// Set by whoever runs the read.
    taken: std::sync::atomic::AtomicBool,
    result: Mutex<Option<Option<RepoBaseline>>>,
    done: Condvar,
}

/// How long the run's first change waits for a read the reader thread is
/// running before it reads the repository itself: the reader runs at
/// nice 10, and a busy machine must not hold a reply behind it.
const WAIT_FOR_RUNNING_READ: std::time::Duration = std::time::Duration::from_millis(50);

impl Scan {
    /// Takes the read for the caller to run; false when another has it.
    fn take(&self) -> bool {
        !self.taken.swap(true, Ordering::AcqRel)
    }

    /// Stores the read's result for everyone waiting.
    fn finish(&self, read: Option<RepoBaseline>) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(read);
        self.done.notify_all();
    }

    /// The read, once it has finished or `limit` has passed (`None`).
    fn wait_at_most(&self, limit: std::time::Duration) -> Option<Option<RepoBaseline>> {
        let r = self.result.lock().unwrap_or_else(|p| p.into_inner());
        let (r, _) = self
            .done
            .wait_timeout_while(r, limit, |r| r.is_none())
            .unwrap_or_else(|p| p.into_inner());
        r.clone()
    }

    /// The read, if it has finished.
    fn finished(&self) -> Option<Option<RepoBaseline>> {
        self.result
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The read, once it has finished.
    fn wait(&self) -> Option<RepoBaseline> {
        let mut r = self.result.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(done) = r.as_ref() {
                return done.clone();
            }
            r = self.done.wait(r).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Baseline reads of runs this process confirmed, by workspace folder,
/// until the run's state has its baseline.
fn scans() -> &'static Mutex<HashMap<PathBuf, Arc<Scan>>> {
    static SCANS: OnceLock<Mutex<HashMap<PathBuf, Arc<Scan>>>> = OnceLock::new();
    SCANS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The baseline of a run about to be created.
#[derive(Debug)]
pub struct PendingBaseline {
    repo: PathBuf,
    scan: Arc<Scan>,
}

/// The baseline of a run about to be created: read by
/// [`PendingBaseline::attach`] once the run exists.
pub fn start_baseline(repo: &Path) -> PendingBaseline {
    PendingBaseline {
        repo: repo.to_path_buf(),
        scan: Arc::new(Scan::default()),
    }
}

impl PendingBaseline {
    /// The baseline a new run's state starts with: pending, filled in by
    /// the run's next change.
    pub fn placeholder() -> RepoBaseline {
        RepoBaseline {
            head: None,
            dirty: Vec::new(),
            pending: true,
            taken_late: false,
        }
    }

    /// Starts reading the repository for the run in `ws` (created with
    /// [`Self::placeholder`]), on the process's baseline reader
    /// ([`start_reader`]). Call it once the call holds no lock and before
    /// its reply.
    pub fn attach(self, ws: &WorkspaceRef) {
        scans()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ws.dir.clone(), Arc::clone(&self.scan));
        let read = Read {
            repo: self.repo,
            scan: self.scan,
        };
        let r = reader();
        if r.state.load(Ordering::Acquire) == READER_FAILED {
            // No reader thread: read it now.
            read.run();
            return;
        }
        let unsent = r
            .sender
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Box::new(move || read.run()))
            .err()
            .map(|e| e.0);
        if let Some(task) = unsent {
            task();
            return;
        }
        // Nobody started the thread (no server warm-up): this call does.
        // One being started (by the warm-up) is not waited for.
        start_reader();
        // A start that failed meanwhile left the queue to its callers.
        if r.state.load(Ordering::Acquire) == READER_FAILED {
            r.run_queued();
        }
    }
}

/// Hands `task` to the process's baseline reader thread (low priority,
/// off every reply's path), when a server started it ([`start_reader`]);
/// otherwise `task` is dropped undone — use it only for work that merely
/// saves a later call some time. Returns whether it was handed over.
pub fn in_background(task: impl FnOnce() + Send + 'static) -> bool {
    let r = reader();
    if r.state.load(Ordering::Acquire) != READER_RUNNING {
        return false;
    }
    r.sender
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(Box::new(task))
        .is_ok()
}

/// Work for the reader thread: a baseline read, or a task
/// [`in_background`] handed over.
type Task = Box<dyn FnOnce() + Send>;

/// One baseline read for the reader thread.
struct Read {
    repo: PathBuf,
    scan: Arc<Scan>,
}

impl Read {
    fn run(self) {
        // The run's first change may have taken it already.
        if self.scan.take() {
            self.scan.finish(baseline(&self.repo));
        }
    }
}

/// The process's baseline reader: one long-lived thread (at nice 10,
/// [`yield_to_replies`]) that reads the baselines of the runs this process
/// confirms, one after the other — a confirmation hands it the read
/// instead of starting a thread. `None` when the system gives no thread
/// (the confirmation then reads before its reply).
/// The reader thread is not started yet.
const READER_IDLE: u8 = 0;
/// Someone is starting it.
const READER_STARTING: u8 = 1;
/// It runs.
const READER_RUNNING: u8 = 2;
/// The system gave no thread: each read is done by its caller.
const READER_FAILED: u8 = 3;

/// The baseline reader: the queue a confirmation hands its read to, and
/// the one thread that takes them in turn. The queue exists before the
/// thread, so a confirmation that arrives while the server's warm-up is
/// still starting the thread queues its read and answers without waiting
/// for the thread's start.
struct Reader {
    sender: Mutex<std::sync::mpsc::Sender<Task>>,
    /// Held by the thread for its whole life.
    receiver: Mutex<std::sync::mpsc::Receiver<Task>>,
    state: AtomicU8,
}

impl Reader {
    /// Does the reads still queued (the thread could not be started).
    fn run_queued(&self) {
        let reads = self.receiver.lock().unwrap_or_else(|p| p.into_inner());
        while let Ok(task) = reads.try_recv() {
            task();
        }
    }
}

fn reader() -> &'static Reader {
    static READER: OnceLock<Reader> = OnceLock::new();
    READER.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<Task>();
        Reader {
            sender: Mutex::new(sender),
            receiver: Mutex::new(receiver),
            state: AtomicU8::new(READER_IDLE),
        }
    })
}

/// Starts the baseline reader now (a server calls it once it is up, off
/// any reply's path), so the first confirmation hands its read to a
/// running thread. Without it, the first confirmation starts it. Returns
/// at once when it runs or another thread is starting it.
pub fn start_reader() {
    let r = reader();
    if r.state
        .compare_exchange(
            READER_IDLE,
            READER_STARTING,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("baton-baseline".into())
        .stack_size(256 * 1024)
        .spawn(|| {
            yield_to_replies();
            let reads = reader().receiver.lock().unwrap_or_else(|p| p.into_inner());
            while let Ok(task) = reads.recv() {
                task();
            }
        });
    match spawned {
        Ok(_) => r.state.store(READER_RUNNING, Ordering::Release),
        Err(e) => {
            tracing::debug!("no thread for baseline reads ({e}); each is read at once");
            r.state.store(READER_FAILED, Ordering::Release);
            r.run_queued();
        }
    }
}

/// Lowers the calling thread's CPU priority (nice 10), and so that of the
/// processes it starts: the baseline's git runs while the reply is being
/// written, and on a busy machine it would take the CPU of other work. The
/// run's first change after the confirmation waits for it if need be.
fn yield_to_replies() {
    // SAFETY: setpriority takes plain integers; with PRIO_PROCESS and 0 it
    // changes only the calling thread on Linux (nice is per thread there),
    // and it cannot fail in a way that matters (the read just runs at the
    // usual priority).
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

/// The store's `before_change` hook: a run whose baseline is pending gets
/// the read its confirmation started if that has finished. It never waits
/// and never reads the repository (a hook cannot fail its call where
/// waiting is refused): [`settle_baseline_before_actions`] settles it
/// before a call of the run returns an action. The run's own workspace is
/// never part of it.
pub fn settle_baseline(repo_root: &Path, ws: &WorkspaceRef, state: &mut WorkspaceState) {
    // Takes a finished read only: never refused.
    let _ = settle(repo_root, ws, state, Wait::IfFinished);
}

/// What the step loop calls before a call of the run returns an action: a
/// run whose baseline is pending gets it now, under the workspace lock —
/// the read its confirmation started if that has finished, else (not
/// started yet, still under way, or this process has none: it was killed,
/// another process confirmed the run) a read of the repository as it is
/// now. It is never left for later: a read that ran after an action was
/// handed out could find the agent's own files already written and count
/// them as "before the run", and the run's commit would leave them out (a
/// fast agent on a loaded machine did); or miss a person's change the
/// agent had put away meanwhile (`git stash`), and commit it later as the
/// run's. On a thread that must not wait (a server's protocol thread,
/// `baton_state::fs::without_waiting`) a read or a wait still needed fails
/// the call instead ([`Refused`], nothing changed: it is run again where
/// waiting is fine).
pub fn settle_baseline_before_actions(
    repo_root: &Path,
    ws: &WorkspaceRef,
    state: &mut WorkspaceState,
) -> Result<(), Refused> {
    settle(repo_root, ws, state, Wait::AtMost(WAIT_FOR_RUNNING_READ))
}

/// Like [`settle_baseline_before_actions`], waiting for a read still under
/// way however long it takes: what the run's commit calls before it
/// chooses the files to stage (a state written by an older baton may still
/// be pending there).
pub fn settle_baseline_now(
    repo_root: &Path,
    ws: &WorkspaceRef,
    state: &mut WorkspaceState,
) -> Result<(), Refused> {
    settle(repo_root, ws, state, Wait::Unbounded)
}

/// A read of the repository, or a wait for one, that the calling thread
/// must not do (`baton_state::fs::refuse_to_wait`): the call fails having
/// changed nothing, and is run again where waiting is fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

impl From<Refused> for crate::Error {
    fn from(_: Refused) -> crate::Error {
        crate::Error::new(
            crate::ErrorCode::Busy,
            "reading the repository is left to a thread that may wait; the call is run again there",
        )
    }
}

/// How a settling treats a read this process has not finished.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// Takes a finished read only; a pending baseline stays pending.
    IfFinished,
    /// Runs a read not started, waits this long for one running, else
    /// reads the repository itself.
    AtMost(std::time::Duration),
    /// Waits for a read under way without a limit.
    Unbounded,
}

fn settle(
    repo_root: &Path,
    ws: &WorkspaceRef,
    state: &mut WorkspaceState,
    wait: Wait,
) -> Result<(), Refused> {
    let pending = state.repo_baseline.as_ref().is_some_and(|b| b.pending);
    if !pending {
        // Settled (by this process or another): forget any read kept for it.
        let mut scans = scans().lock().unwrap_or_else(|p| p.into_inner());
        if !scans.is_empty() {
            scans.remove(&ws.dir);
        }
        return Ok(());
    }
    let scan = scans()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&ws.dir)
        .cloned();
    let finished = scan.as_ref().is_some_and(|s| s.finished().is_some());
    if !finished && !matches!(wait, Wait::IfFinished) && baton_state::fs::refuse_to_wait() {
        return Err(Refused);
    }
    let read = match (scan, wait) {
        (Some(scan), Wait::IfFinished) => match scan.finished() {
            Some(read) => read,
            None => return Ok(()),
        },
        (None, Wait::IfFinished) => return Ok(()),
        (Some(scan), Wait::Unbounded) => scan.wait(),
        (Some(scan), Wait::AtMost(running_limit)) => match scan.finished() {
            Some(read) => read,
            // Not started: this settling runs it (one git, not two).
            None if scan.take() => {
                let read = baseline(repo_root);
                scan.finish(read.clone());
                read
            }
            // Running: it began before the run's first action was handed
            // out, so its result is the repository before the run could
            // change it. Waited for a little, else read now.
            None => scan
                .wait_at_most(running_limit)
                .unwrap_or_else(|| baseline(repo_root)),
        },
        (None, _) => baseline(repo_root),
    };
    let own = format!("{}/", ws.display);
    state.repo_baseline = read.map(|mut b| {
        b.dirty.retain(|p| !p.starts_with(&own));
        b
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// A baseline read never rewrites the index, so it never holds
    /// `index.lock` while the person's or the agent's own git command (a
    /// checkout, a commit) wants it. Files touched after the commit make
    /// a plain `git status` refresh and rewrite the index.
    #[test]
    fn a_baseline_read_never_rewrites_the_index() {
        use std::os::unix::fs::MetadataExt;
        let dir = repo();
        for i in 0..20 {
            std::fs::write(dir.path().join(format!("f{i}")), "same").unwrap();
        }
        run(dir.path(), &["add", "-A"]);
        run(dir.path(), &["commit", "-q", "-m", "files"]);
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        for i in 0..20 {
            let file = std::fs::File::options()
                .write(true)
                .open(dir.path().join(format!("f{i}")))
                .unwrap();
            file.set_modified(later).unwrap();
        }
        let index = dir.path().join(".git/index");
        let before = std::fs::metadata(&index).unwrap();
        let read = baseline(dir.path()).unwrap();
        assert!(read.dirty.is_empty(), "{:?}", read.dirty);
        assert!(status(dir.path()).unwrap().changed.is_empty());
        let after = std::fs::metadata(&index).unwrap();
        assert_eq!(
            (before.ino(), before.mtime(), before.mtime_nsec()),
            (after.ino(), after.mtime(), after.mtime_nsec()),
            "git status rewrote the index (it held index.lock)"
        );
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        run(dir.path(), &["init", "-q", "-b", "main"]);
        run(dir.path(), &["config", "user.name", "t"]);
        run(dir.path(), &["config", "user.email", "t@example.invalid"]);
        dir
    }

    fn commit_all(dir: &Path) {
        run(dir, &["add", "-A"]);
        run(dir, &["commit", "-q", "-m", "c"]);
    }

    fn head(dir: &Path) -> String {
        String::from_utf8(git(dir, &["rev-parse", "HEAD"]).unwrap())
            .unwrap()
            .trim()
            .to_string()
    }

    /// The v1 paths (`status`) as the reference for the v2 reading.
    fn v1(dir: &Path) -> Vec<String> {
        let mut p = status(dir).unwrap().changed;
        p.sort();
        p.dedup();
        p
    }

    #[test]
    fn a_repository_without_commits_has_no_head_and_lists_untracked_files() {
        let r = repo();
        std::fs::create_dir(r.path().join("src")).unwrap();
        std::fs::write(r.path().join("src/a.rs"), "a").unwrap();
        std::fs::write(r.path().join("with space é.txt"), "b").unwrap();
        let b = baseline(r.path()).unwrap();
        assert_eq!(b.head, None);
        assert_eq!(b.dirty, ["src/a.rs", "with space é.txt"]);
        assert_eq!(b.dirty, v1(r.path()));
    }

    #[test]
    fn modified_staged_deleted_renamed_untracked_but_never_ignored() {
        let r = repo();
        let p = r.path();
        for f in ["keep.rs", "edit.rs", "stage.rs", "gone.rs", "old name.rs"] {
            std::fs::write(p.join(f), format!("{f}\n")).unwrap();
        }
        std::fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
        commit_all(p);
        std::fs::write(p.join("edit.rs"), "edited\n").unwrap();
        std::fs::write(p.join("stage.rs"), "staged\n").unwrap();
        run(p, &["add", "stage.rs"]);
        std::fs::remove_file(p.join("gone.rs")).unwrap();
        run(p, &["mv", "old name.rs", "new\tname.rs"]);
        std::fs::create_dir_all(p.join("target/debug")).unwrap();
        std::fs::write(p.join("target/debug/out"), "x").unwrap();
        std::fs::write(p.join("build.log"), "x").unwrap();
        std::fs::create_dir_all(p.join("docs/deep")).unwrap();
        std::fs::write(p.join("docs/deep/new.md"), "x").unwrap();
        let b = baseline(p).unwrap();
        assert_eq!(b.head.as_deref(), Some(head(p).as_str()));
        assert_eq!(
            b.dirty,
            [
                "docs/deep/new.md",
                "edit.rs",
                "gone.rs",
                "new\tname.rs",
                "old name.rs",
                "stage.rs"
            ]
        );
        assert_eq!(b.dirty, v1(p));
    }

    #[test]
    fn detached_head_and_packed_refs_give_the_commit() {
        let r = repo();
        let p = r.path();
        std::fs::write(p.join("a"), "1").unwrap();
        commit_all(p);
        let first = head(p);
        std::fs::write(p.join("a"), "2").unwrap();
        commit_all(p);
        run(p, &["pack-refs", "--all"]);
        assert!(
            !p.join(".git/refs/heads/main").exists(),
            "the ref is packed"
        );
        assert_eq!(baseline(p).unwrap().head, Some(head(p)));
        run(p, &["checkout", "-q", "--detach", &first]);
        let b = baseline(p).unwrap();
        assert_eq!(b.head.as_deref(), Some(first.as_str()));
        assert!(b.dirty.is_empty());
    }

    #[test]
    fn a_linked_worktree_reads_its_own_head_and_changes() {
        let r = repo();
        let p = r.path();
        std::fs::write(p.join("a"), "1").unwrap();
        commit_all(p);
        let wt = r.path().join("wt");
        run(
            p,
            &["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()],
        );
        std::fs::write(wt.join("a"), "changed in the worktree").unwrap();
        std::fs::write(wt.join("b"), "new").unwrap();
        std::fs::write(wt.join("c"), "c").unwrap();
        run(&wt, &["add", "c"]);
        run(&wt, &["commit", "-q", "-m", "side"]);
        let b = baseline(&wt).unwrap();
        assert_eq!(b.head, Some(head(&wt)));
        assert_ne!(b.head, Some(head(p)));
        assert_eq!(b.dirty, ["a", "b"]);
        // The main checkout sees the worktree folder as one untracked
        // entry (git does not descend into another checkout), as v1 does.
        assert_eq!(baseline(p).unwrap().dirty, ["wt/"]);
        assert_eq!(v1(p), ["wt/"]);
    }

    #[test]
    fn outside_a_repository_there_is_none() {
        let dir = tempfile::tempdir().unwrap();
        // A folder of its own that no parent repository covers.
        let ceiling = dir.path().to_str().unwrap().to_string();
        let out = Command::new("git")
            .args(["status", "--porcelain=v2"])
            .current_dir(dir.path())
            .env("GIT_CEILING_DIRECTORIES", &ceiling)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert_eq!(parse_porcelain_v2(b""), (None, Vec::new()));
    }

    #[test]
    fn unmerged_paths_are_dirty() {
        let out = b"# branch.oid 0123456789abcdef0123456789abcdef01234567\0# branch.head main\0u UU N... 100644 100644 100644 100644 aaaa bbbb cccc conflict file.txt\0? new.txt\0";
        let (head, paths) = parse_porcelain_v2(out);
        assert_eq!(
            head.as_deref(),
            Some("0123456789abcdef0123456789abcdef01234567")
        );
        assert_eq!(paths, ["conflict file.txt", "new.txt"]);
    }

    /// A repository with one commit and `dirty` written after it.
    fn repo_with(dirty: &str) -> tempfile::TempDir {
        let r = repo();
        std::fs::write(r.path().join("a"), "1").unwrap();
        commit_all(r.path());
        std::fs::write(r.path().join(dirty), "x").unwrap();
        r
    }

    fn run_in(p: &Path, name: &str) -> WorkspaceRef {
        WorkspaceRef {
            name: name.into(),
            dir: p.join(".specs").join(name),
            display: format!(".specs/{name}"),
        }
    }

    /// A new run's state, its baseline pending.
    fn pending_state(ws: &WorkspaceRef) -> WorkspaceState {
        let mut state = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "r",
            &ws.display,
            "t",
            chrono::Utc::now(),
        );
        state.repo_baseline = Some(PendingBaseline::placeholder());
        state
    }

    /// `scan` as the read this process's confirmation of `ws` handed over.
    fn queue(ws: &WorkspaceRef, scan: &Arc<Scan>) {
        scans()
            .lock()
            .unwrap()
            .insert(ws.dir.clone(), Arc::clone(scan));
    }

    /// A read the reader has taken and finishes with `read` after `ms`.
    fn running(ws: &WorkspaceRef, read: &RepoBaseline, ms: u64) -> std::thread::JoinHandle<()> {
        let scan = Arc::new(Scan::default());
        assert!(scan.take());
        queue(ws, &scan);
        let read = read.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(ms));
            scan.finish(Some(read));
        })
    }

    /// What a reader read, told apart by its head.
    fn read_with_head(head: &str) -> RepoBaseline {
        RepoBaseline {
            head: Some(head.into()),
            dirty: vec!["before".into()],
            pending: false,
            taken_late: false,
        }
    }

    #[test]
    fn a_pending_baseline_is_settled_from_the_read_started_before_the_run() {
        let r = repo_with("dirty-before");
        let p = r.path();
        let pending = start_baseline(p);
        let ws = run_in(p, "20260101-run");
        pending.attach(&ws);
        let mut state = pending_state(&ws);
        // The run's own files, and a file the run writes after it started.
        std::fs::create_dir_all(&ws.dir).unwrap();
        std::fs::write(ws.dir.join("request.md"), "x").unwrap();
        settle_baseline_now(p, &ws, &mut state).unwrap();
        let b = state.repo_baseline.clone().unwrap();
        assert!(!b.pending);
        assert_eq!(b.head, Some(head(p)));
        assert!(b.dirty.contains(&"dirty-before".to_string()));
        assert!(
            b.dirty
                .iter()
                .all(|d| !d.starts_with(".specs/20260101-run/"))
        );
        // Settled: a later change keeps it.
        std::fs::write(p.join("written-by-the-run"), "x").unwrap();
        settle_baseline(p, &ws, &mut state);
        assert_eq!(state.repo_baseline.as_ref(), Some(&b));
    }

    /// Before an action of the run the read is never
    /// left for later (it could run after the agent wrote its files): a
    /// read the reader has not started is run by the settling itself, and
    /// the reader then skips it (one git, not two); a read the reader is
    /// running is waited for a little (it began before the run's first
    /// action went out), else the settling reads the repository itself.
    #[test]
    fn before_actions_a_read_not_started_is_run_and_one_running_is_waited_for_a_little() {
        let r = repo_with("before");
        let p = r.path();
        let ws = run_in(p, "20260101-wait");
        // Not started: the settling runs it, and the reader finds it taken.
        let scan = Arc::new(Scan::default());
        queue(&ws, &scan);
        let mut state = pending_state(&ws);
        settle_baseline_before_actions(p, &ws, &mut state).unwrap();
        let own = state.repo_baseline.clone().unwrap();
        assert!(!own.pending, "read before the first change: {own:?}");
        assert_eq!(own.dirty, ["before"]);
        assert!(!scan.take(), "the reader must not run it again");
        assert_eq!(scan.finished(), Some(Some(own)));

        // Running (taken by the reader): its result is the baseline. A long
        // limit: the reader's result must be the one taken, however busy
        // the machine (the limit itself is the next case).
        let theirs = read_with_head("from-the-reader");
        let reader = running(&ws, &theirs, 5);
        let mut state = pending_state(&ws);
        settle(
            p,
            &ws,
            &mut state,
            Wait::AtMost(std::time::Duration::from_secs(60)),
        )
        .unwrap();
        reader.join().unwrap();
        assert_eq!(state.repo_baseline, Some(theirs));

        // Running and not finishing within the limit: the settling reads it
        // itself.
        let reader = running(&ws, &read_with_head("too-late"), 500);
        let mut state = pending_state(&ws);
        settle(
            p,
            &ws,
            &mut state,
            Wait::AtMost(std::time::Duration::from_millis(1)),
        )
        .unwrap();
        let b = state.repo_baseline.clone().unwrap();
        assert!(!b.pending);
        assert_eq!(b.head, Some(head(p)));
        assert_eq!(b.dirty, ["before"]);
        reader.join().unwrap();
    }

    /// The store's hook on every change takes a finished read and nothing
    /// else: a read not started stays the reader's, one running is not
    /// waited for, and a run this process has no read for is not read —
    /// the baseline stays pending for the settling before changes.
    #[test]
    fn every_change_takes_a_finished_read_and_never_waits_or_reads() {
        let r = repo_with("before");
        let p = r.path();
        let ws = run_in(p, "20260101-hook");
        let scan = Arc::new(Scan::default());
        queue(&ws, &scan);
        let mut state = pending_state(&ws);
        settle_baseline(p, &ws, &mut state);
        assert_eq!(state.repo_baseline, Some(PendingBaseline::placeholder()));
        assert!(scan.take(), "a read not started stays the reader's");

        // Running (taken, unfinished): a wait would hang here, a read of
        // its own would settle it.
        let scan = Arc::new(Scan::default());
        assert!(scan.take());
        queue(&ws, &scan);
        settle_baseline(p, &ws, &mut state);
        assert_eq!(state.repo_baseline, Some(PendingBaseline::placeholder()));
        // Finished: the next change takes it.
        scan.finish(Some(read_with_head("slow")));
        settle_baseline(p, &ws, &mut state);
        assert_eq!(state.repo_baseline, Some(read_with_head("slow")));

        let other = run_in(p, "20260101-not-ours");
        let mut state = pending_state(&other);
        settle_baseline(p, &other, &mut state);
        assert_eq!(state.repo_baseline, Some(PendingBaseline::placeholder()));
    }

    /// On a thread that must not wait, a read still needed fails the
    /// settling (the call is run again elsewhere) and leaves the state as
    /// it was; a finished read is taken there as anywhere.
    #[test]
    fn where_waiting_is_refused_only_a_finished_read_is_taken() {
        let r = repo_with("before");
        let p = r.path();
        let ws = run_in(p, "20260101-no-wait");
        let mut state = pending_state(&ws);
        let refused =
            baton_state::fs::without_waiting(|| settle_baseline_before_actions(p, &ws, &mut state));
        assert_eq!(refused, None);
        assert_eq!(state.repo_baseline, Some(PendingBaseline::placeholder()));
        let refused = baton_state::fs::without_waiting(|| settle_baseline_now(p, &ws, &mut state));
        assert_eq!(refused, None);
        assert_eq!(state.repo_baseline, Some(PendingBaseline::placeholder()));

        let scan = Arc::new(Scan::default());
        assert!(scan.take());
        scan.finish(Some(read_with_head("finished")));
        queue(&ws, &scan);
        let taken =
            baton_state::fs::without_waiting(|| settle_baseline_before_actions(p, &ws, &mut state));
        assert_eq!(taken, Some(Ok(())));
        assert_eq!(state.repo_baseline, Some(read_with_head("finished")));
    }

    /// Only the commit waits for a read under way without a limit (a state
    /// an older baton left pending).
    #[test]
    fn the_commit_waits_for_a_read_under_way() {
        let r = repo_with("before");
        let p = r.path();
        let ws = run_in(p, "20260101-slow");
        let read = read_with_head("abc");
        let reader = running(&ws, &read, 20);
        let mut state = pending_state(&ws);
        settle_baseline_now(p, &ws, &mut state).unwrap();
        assert_eq!(state.repo_baseline, Some(read));
        reader.join().unwrap();
    }

    #[test]
    fn a_pending_baseline_this_process_did_not_start_is_read_now() {
        let r = repo_with("b");
        let p = r.path();
        let ws = run_in(p, "20260101-other");
        let mut state = pending_state(&ws);
        settle_baseline_before_actions(p, &ws, &mut state).unwrap();
        let b = state.repo_baseline.unwrap();
        assert!(!b.pending);
        assert_eq!(b.dirty, ["b"]);
    }
}
