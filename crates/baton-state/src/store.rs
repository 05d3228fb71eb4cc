//! Workspace folders and their `state.json`.
//!
//! * A workspace is one folder directly under the specs root. Callers may
//!   name it by folder name, by `<specs-dir>/<name>` relative to the
//!   repository, or by absolute path; all three resolve to one identity, and
//!   anything that would leave the specs root (`..`, other absolute paths,
//!   symlinks) is refused.
//! * Every mutation takes an exclusive OS lock on `<workspace>/.state.lock`,
//!   reads `state.json` from disk, applies the change, appends it to the
//!   workspace's journal ([`crate::journal`]) and writes the result
//!   atomically: a temp file in the same folder renamed over the old one.
//!   The journal is synced after the lock is released, by the syncer
//!   ([`crate::durable`]). There is no in-memory copy, so several processes
//!   can share a repository.
//! * A `state.json` that does not parse is reported with its path and is
//!   never overwritten.

use std::fs::File;
use std::path::{Path, PathBuf};

pub use crate::atomic::write_atomic;
use crate::atomic::write_atomic_with;
use crate::durable::{Durability, Job};
use crate::journal::Op;
use crate::names::{normalize, truncate, validate_name};
use crate::schema::WorkspaceState;
pub use crate::store_error::{StoreError, UpdateError};

/// The state file name inside a workspace.
pub const STATE_FILE: &str = "state.json";
/// The lock file name inside a workspace.
pub const LOCK_FILE: &str = ".state.lock";
/// While a run's final state is sealed into `state.json` (so the run's commit
/// holds its final form), the live state of the remaining steps is here.
pub const LIVE_STATE_FILE: &str = ".state.live.json";
/// The key under which a sealed run's live state keeps the final form
/// written into `state.json` (for repair after a kill).
pub const SEALED_FINAL_KEY: &str = "sealedFinal";
/// The workspace's own ignore file: baton's runtime files never show up in
/// `git status` or a commit. baton writes ignore files only inside its own
/// folders.
pub const IGNORE_FILE: &str = ".gitignore";
/// What the workspace's ignore file lists: baton's runtime files, and the
/// ignore file itself — it is never committed, so when the run's committed
/// files leave with a branch switch, the runtime files it ignores stay
/// ignored (no stray `.state.lock` in `git status`).
pub const IGNORE_CONTENT: &str = "# baton runtime files (locks, temporary and live state), and this file\n.gitignore\n.state.lock\n.state.live.json\n.state.json.*.tmp\n";
/// Longest accepted workspace name.
pub const MAX_NAME_LEN: usize = 128;
/// Largest `state.json` read (a guard against a runaway file). baton keeps
/// its own files far below it (history compaction, docs/lifecycle.md); the
/// limit is high so that a big file an older version wrote still opens.
pub const MAX_STATE_BYTES: u64 = 256 * 1024 * 1024;
/// How long a call waits for a workspace lock held by someone else, unless
/// configured otherwise (`BATON_LOCK_TIMEOUT_MS`).
pub const DEFAULT_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How an update ends, besides writing the changed state.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// Write the state where the workspace's live state is.
    Plain,
    /// Seal: keep the changed state as the live state and write this final
    /// form into `state.json` (done before the run's commit).
    Seal(Box<WorkspaceState>),
}

/// A successful update: the change function's value and the state as written.
#[derive(Debug, Clone)]
pub struct Updated<T> {
    /// What the change function returned.
    pub value: T,
    /// The state now on disk.
    pub state: WorkspaceState,
}

/// A workspace found by [`StateStore::list`], with its state or the error reading it.
pub type ListedWorkspace = (WorkspaceRef, Result<WorkspaceState, StoreError>);

/// A named lock of the specs folder, held while this value lives.
#[derive(Debug)]
pub struct NamedLock {
    _held: crate::fs::HeldLock,
}

/// A resolved workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRef {
    /// Folder name (e.g. `20260401-fix-auth`).
    pub name: String,
    /// Absolute folder path.
    pub dir: PathBuf,
    /// The workspace as shown in replies and events: relative to the
    /// repository root when inside it (e.g. `.specs/20260401-fix-auth`).
    pub display: String,
}

impl WorkspaceRef {
    /// The `state.json` path.
    pub fn state_file(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// The spec name: the folder name without a leading `YYYYMMDD-`.
    pub fn spec_name(&self) -> &str {
        strip_date_prefix(&self.name)
    }
}

/// Removes a leading `YYYYMMDD-` from a folder name.
pub fn strip_date_prefix(name: &str) -> &str {
    let b = name.as_bytes();
    if b.len() > 9 && b[..8].iter().all(u8::is_ascii_digit) && b[8] == b'-' {
        &name[9..]
    } else {
        name
    }
}

/// What runs on a workspace's state, under its lock, before every change
/// ([`StateStore::with_before_change`]).
pub type BeforeChange = std::sync::Arc<dyn Fn(&WorkspaceRef, &mut WorkspaceState) + Send + Sync>;

/// The workspaces under one specs root.
#[derive(Clone)]
pub struct StateStore {
    repo_root: PathBuf,
    specs_root: PathBuf,
    durability: Durability,
    lock_timeout: std::time::Duration,
    before_change: Option<BeforeChange>,
    /// Tags every state written (`with_signer`, crate::integrity).
    pub(crate) signer: Option<std::sync::Arc<dyn crate::integrity::StateSigner>>,
    /// The states read lately, with their bytes (crate::parsed).
    pub(crate) parsed: crate::parsed::ParsedStates,
    /// Where every state write is witnessed (`with_witness`, crate::witness).
    pub(crate) witness: Option<crate::witness::Witness>,
    /// What a write does to a state found changed outside baton.
    pub(crate) on_outside: Option<crate::witness::OnOutside>,
    /// Whether the syncer makes each workspace's next state file and
    /// closes replaced ones (crate::spare): set by [`StateStore::start_syncer`],
    /// which long-lived processes call (a one-shot command would make a
    /// file only to remove it at its exit).
    spares: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateStore")
            .field("repo_root", &self.repo_root)
            .field("specs_root", &self.specs_root)
            .field("durability", &self.durability)
            .field("lock_timeout", &self.lock_timeout)
            .field("before_change", &self.before_change.is_some())
            .field("signer", &self.signer.is_some())
            .field("witness", &self.witness)
            .finish()
    }
}

impl StateStore {
    /// A store for `specs_root` (absolute), displaying paths relative to `repo_root`.
    pub fn new(repo_root: &Path, specs_root: &Path) -> StateStore {
        StateStore {
            repo_root: repo_root.to_path_buf(),
            specs_root: specs_root.to_path_buf(),
            durability: Durability::Background,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            before_change: None,
            signer: None,
            parsed: crate::parsed::ParsedStates::default(),
            witness: None,
            on_outside: None,
            spares: Default::default(),
        }
    }

    /// Runs `hook` on the state read under the lock before every change
    /// (before the change function, and whether it then refuses or not):
    /// for what must be settled before a run moves on, such as a baseline
    /// read off the reply's path (`baton-usecases::git`).
    pub fn with_before_change(mut self, hook: BeforeChange) -> StateStore {
        self.before_change = Some(hook);
        self
    }

    /// How long a call waits for a workspace lock another call holds
    /// before it answers `busy` (default [`DEFAULT_LOCK_TIMEOUT`]).
    pub fn with_lock_timeout(mut self, timeout: std::time::Duration) -> StateStore {
        self.lock_timeout = timeout;
        self
    }

    /// With `durable` (the default) every change is journaled and synced
    /// in the background ([`Durability::Background`]), so it survives power
    /// loss once the syncer has passed (docs/lifecycle.md). Without, writes
    /// are still atomic renames: a killed process never leaves a partial
    /// file, but the operating system may lose the last writes if the
    /// machine itself goes down.
    pub fn with_durability(self, durable: bool) -> StateStore {
        self.with_durability_mode(if durable {
            Durability::Background
        } else {
            Durability::Off
        })
    }

    /// Sets how changes reach the disk ([`Durability`]).
    pub fn with_durability_mode(mut self, durability: Durability) -> StateStore {
        self.durability = durability;
        self
    }

    /// How changes reach the disk.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Starts the process's syncer now when changes are synced in the
    /// background, so the first change hands it its syncs instead of
    /// starting its thread on the reply's path ([`crate::durable::start_syncer`]);
    /// from then on the syncer also makes each workspace's next state file
    /// and closes replaced ones (crate::spare).
    pub fn start_syncer(&self) {
        if self.durability == Durability::Background {
            crate::durable::start_syncer(self.lock_timeout);
            self.spares
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether the syncer makes spares and closes replaced files for this store.
    /// Whether this process makes spare files ahead of writes
    /// (crate::spare, crate::kit).
    pub(crate) fn spares(&self) -> bool {
        self.durability == Durability::Background
            && self.spares.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The specs root.
    pub fn specs_root(&self) -> &Path {
        &self.specs_root
    }

    /// Resolves a workspace argument to a folder directly under the specs root.
    pub fn resolve(&self, input: &str) -> Result<WorkspaceRef, StoreError> {
        let invalid = |reason: &str| StoreError::InvalidWorkspace {
            input: truncate(input, 200),
            reason: reason.to_string(),
        };
        if input.trim().is_empty() {
            return Err(invalid("must not be empty"));
        }
        if input.len() > 1024 {
            return Err(invalid("longer than 1024 bytes"));
        }
        if input.contains('\0') {
            return Err(invalid("contains a NUL byte"));
        }
        let name = if input.contains('/') || input.contains('\\') {
            let normalized = normalize(&self.repo_root, Path::new(input.trim_end_matches('/')));
            match normalized.parent() {
                Some(parent) if parent == self.specs_root => normalized
                    .file_name()
                    .and_then(|n| n.to_str())
                    .map(str::to_string)
                    .ok_or_else(|| invalid("has no folder name"))?,
                _ => {
                    return Err(StoreError::OutOfScope {
                        input: truncate(input, 200),
                        root: self.specs_root.clone(),
                    });
                }
            }
        } else {
            input.to_string()
        };
        if name == "." || name == ".." {
            return Err(StoreError::OutOfScope {
                input: truncate(input, 200),
                root: self.specs_root.clone(),
            });
        }
        validate_name(&name).map_err(|reason| invalid(&reason))?;
        let dir = self.specs_root.join(&name);
        if let Ok(meta) = std::fs::symlink_metadata(&dir)
            && meta.file_type().is_symlink()
        {
            return Err(StoreError::OutOfScope {
                input: truncate(input, 200),
                root: self.specs_root.clone(),
            });
        }
        let display = match self.specs_root.strip_prefix(&self.repo_root) {
            Ok(rel) if !rel.as_os_str().is_empty() => format!("{}/{name}", rel.display()),
            _ => dir.display().to_string(),
        };
        Ok(WorkspaceRef { name, dir, display })
    }

    /// Creates the workspace folder (if needed) and its first `state.json`.
    /// Fails with [`StoreError::AlreadyExists`] when a state file is present.
    pub fn create(&self, ws: &WorkspaceRef, state: &WorkspaceState) -> Result<(), StoreError> {
        self.create_with_files(ws, state, &[])
    }

    /// Creates the workspace folder (if needed), the workspace `files`
    /// (name, whole content: a run's `request.md`) and its first
    /// `state.json`, as one change: one lock, one journal record, the files
    /// renamed into place in order and `state.json` last — a workspace exists
    /// only once its state does, so a kill before that leaves no run, and
    /// creating it again completes it. Fails with
    /// [`StoreError::AlreadyExists`] when a state file is present.
    pub fn create_with_files(
        &self,
        ws: &WorkspaceRef,
        state: &WorkspaceState,
        files: &[(&str, &[u8])],
    ) -> Result<(), StoreError> {
        for (name, _) in files {
            check_workspace_file_name(name)?;
        }
        // The folder made ahead for it (crate::kit), else made here.
        if !self.take_kit_for(ws) {
            std::fs::create_dir_all(&self.specs_root).map_err(|source| StoreError::Io {
                op: "create folder",
                path: self.specs_root.clone(),
                source,
            })?;
            match std::fs::create_dir(&ws.dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(StoreError::Io {
                        op: "create folder",
                        path: ws.dir.clone(),
                        source,
                    });
                }
            };
        }
        let jobs = {
            let lock = self.lock(ws)?;
            self.recover_if_needed(ws, Some(&lock))?;
            if std::fs::symlink_metadata(ws.state_file()).is_ok() {
                return Err(StoreError::AlreadyExists {
                    path: ws.dir.clone(),
                });
            }
            self.ensure_ignore_file(ws)?;
            let mut ops: Vec<Op> = files
                .iter()
                .map(|(name, bytes)| Op::Write((*name).into(), bytes.to_vec()))
                .collect();
            ops.push(Op::Write(STATE_FILE.into(), self.render(state)));
            let mut jobs = self.commit(ws, ops, false, None)?;
            // No spare yet: making two inodes beside the confirmation's own
            // would slow the one call that creates a run; the run's first
            // change asks for them.
            jobs.retain(|job| !matches!(job, Job::Spare(_)));
            // The workspace's own entry in the specs folder and the ignore
            // file beside the state.
            jobs.push(Job::Folder(self.specs_root.clone()));
            jobs.push(Job::Folder(ws.dir.clone()));
            jobs
        };
        self.submit(jobs);
        Ok(())
    }

    /// Load → `change` → write, under the workspace's exclusive lock.
    ///
    /// `change` works on a copy; when it returns an error nothing is written.
    /// On success `timestamps.lastUpdated` is set to `now`.
    pub fn update<T, E>(
        &self,
        ws: &WorkspaceRef,
        now: chrono::DateTime<chrono::Utc>,
        change: impl FnOnce(&mut WorkspaceState) -> Result<T, E>,
    ) -> Result<Updated<T>, UpdateError<E>> {
        self.update_sealing(ws, now, |state, _| {
            change(state).map(|v| (v, Finish::Plain))
        })
    }

    /// Like [`StateStore::update`], for the one use case that seals a run
    /// before its commit. `change` also learns whether the workspace is
    /// sealed already, and says how to finish.
    ///
    /// A sealed workspace keeps its live state in [`LIVE_STATE_FILE`]; when
    /// the live state completes, that file is removed and `state.json` (the
    /// sealed final form, as committed) stays; when it is abandoned,
    /// `state.json` gets the abandoned state.
    pub fn update_sealing<T, E>(
        &self,
        ws: &WorkspaceRef,
        now: chrono::DateTime<chrono::Utc>,
        change: impl FnOnce(&mut WorkspaceState, bool) -> Result<(T, Finish), E>,
    ) -> Result<Updated<T>, UpdateError<E>> {
        let (updated, jobs) = {
            let lock = self.lock(ws)?;
            self.recover_if_needed(ws, Some(&lock))?;
            // Never built upon: a state written behind baton's back.
            let outside = self.put_back_outside(ws);
            let sealed = self.is_sealed(ws);
            let read = self.read_state_file(ws, sealed)?;
            let mut state = self.parse(&read.path, &read.bytes)?;
            // The file about to be replaced, as looked at under this lock.
            let known = (read.path, read.mode);
            let mut jobs = Vec::new();
            if sealed {
                jobs = self.repair_seal(ws, &state)?;
            }
            if let Some(hook) = &self.before_change {
                hook(ws, &mut state);
            }
            if let (Some(found), Some(handler)) = (&outside, &self.on_outside) {
                handler(ws, &mut state, found, now);
            }
            let (value, finish) = change(&mut state, sealed).map_err(UpdateError::Rejected)?;
            // Workspaces made by older versions (or the Go server) get it on
            // their first change.
            self.ensure_ignore_file(ws)?;
            // The state stays small for the life of a run (not while sealed:
            // the archive is committed with the run and must not change after).
            crate::compact::trim_details(&mut state);
            if !sealed && crate::compact::needed(&state) {
                let archive = ws.dir.join(crate::compact::ARCHIVE_FILE);
                let io = |source| StoreError::Io {
                    op: "archive history to",
                    path: archive.clone(),
                    source,
                };
                crate::compact::archive(&ws.dir, &mut state).map_err(io)?;
                // The journal holds the state without the archived entries:
                // their lines reach the disk first (rare: every 200 changes).
                if self.durability.journaled() {
                    File::open(&archive)
                        .and_then(|f| f.sync_data())
                        .map_err(io)?;
                }
            }
            state.timestamps.last_updated = now;
            use crate::schema::PhaseStatus;
            let sealing = matches!(finish, Finish::Seal(_));
            let ops = match finish {
                Finish::Seal(mut final_form) => {
                    final_form.timestamps.last_updated = now;
                    // The live state carries the sealed form: a kill between the
                    // two writes is repaired on the next update.
                    state.extra.insert(
                        SEALED_FINAL_KEY.into(),
                        serde_json::to_value(&*final_form).unwrap_or_default(),
                    );
                    vec![
                        Op::Write(LIVE_STATE_FILE.into(), self.render(&state)),
                        Op::Write(STATE_FILE.into(), self.render(&final_form)),
                    ]
                }
                Finish::Plain if sealed => match state.current_phase_status {
                    // The run ended as sealed: state.json already says so.
                    PhaseStatus::Completed => vec![Op::Remove(LIVE_STATE_FILE.into())],
                    // Any other end: state.json must say what happened.
                    PhaseStatus::Abandoned => vec![
                        Op::Write(STATE_FILE.into(), self.render(&state)),
                        Op::Remove(LIVE_STATE_FILE.into()),
                    ],
                    _ => vec![Op::Write(LIVE_STATE_FILE.into(), self.render(&state))],
                },
                Finish::Plain => vec![Op::Write(STATE_FILE.into(), self.render(&state))],
            };
            let live_after = ops
                .iter()
                .any(|op| matches!(op, Op::Write(n, _) if n == LIVE_STATE_FILE))
                || (sealed && !ops.iter().any(|op| matches!(op, Op::Remove(_))));
            let ended = !live_after
                && matches!(
                    state.current_phase_status,
                    PhaseStatus::Completed | PhaseStatus::Abandoned
                );
            let plain = crate::read::written_from_state(ws, &ops, sealing);
            jobs.extend(self.commit(ws, ops, ended, Some(&known))?);
            if let Some((path, bytes)) = plain {
                self.keep_written(&path, &bytes, &state);
            }
            (Updated { value, state }, jobs)
        };
        self.submit(jobs);
        Ok(updated)
    }

    /// Journals `ops` and applies them to the workspace's files (the caller
    /// holds the lock); returns what the syncer must do for them. `ended`:
    /// the run has ended, its journal is removed once its files are synced.
    /// `known`: a file of the workspace and its mode, looked at under this
    /// lock (its rewrite keeps those permissions without looking again).
    fn commit(
        &self,
        ws: &WorkspaceRef,
        ops: Vec<Op>,
        ended: bool,
        known: Option<&(PathBuf, u32)>,
    ) -> Result<Vec<Job>, StoreError> {
        let journal = ws.dir.join(crate::journal::JOURNAL_FILE);
        let mut jobs = Vec::new();
        if self.durability.journaled() {
            let appended =
                crate::journal::append(&ws.dir, &ops).map_err(|source| StoreError::Io {
                    op: "append to the journal",
                    path: journal.clone(),
                    source,
                })?;
            jobs.push(Job::Data(journal.clone()));
            if appended.created {
                jobs.push(Job::Folder(ws.dir.clone()));
            }
            if ended || crate::journal::wants_checkpoint(appended) {
                jobs.push(Job::Checkpoint {
                    dir: ws.dir.clone(),
                    remove: ended,
                });
            }
        } else if std::fs::symlink_metadata(&journal).is_ok() {
            // Changes no longer journaled: an older journal must never be
            // replayed over them.
            let _ = std::fs::remove_file(&journal);
            crate::journal::forget(&ws.dir);
        }
        // Pending records before the files move, done records after: a
        // kill between them leaves both contents baton's (crate::witness).
        let witnessed = self.witness.as_ref().and_then(|w| w.begin(&ws.name, &ops));
        // The state files written, their checks kept once the witness has
        // their done records.
        let mut written_states: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        for op in ops {
            match op {
                Op::Write(name, bytes) => {
                    let path = ws.dir.join(&name);
                    let permissions = known.filter(|(p, _)| *p == path).map(|(_, mode)| {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::Permissions::from_mode(mode & 0o7777)
                    });
                    let state_file = name == STATE_FILE || name == LIVE_STATE_FILE;
                    // The file the syncer made for this write, if any (a
                    // new run's `request.md` takes one of its folder's too).
                    let spare = self.spares().then(|| crate::spare::take(&ws.dir)).flatten();
                    let written = write_atomic_with(&ws.dir, &path, &bytes, permissions, spare)?;
                    // The next call's read of this state checks nothing again,
                    // and reads the file just written without opening it.
                    if state_file {
                        written_states.push((path.clone(), bytes));
                        if let Some(id) = written.id.or_else(|| {
                            use std::os::unix::fs::MetadataExt;
                            written.file.metadata().ok().map(|m| (m.dev(), m.ino()))
                        }) {
                            let replaced = self.parsed.hold(crate::parsed::Held {
                                path,
                                file: std::sync::Arc::new(written.file),
                                dev: id.0,
                                ino: id.1,
                            });
                            // Closing the replaced file frees its inode:
                            // the syncer does it, off the reply's path.
                            if self.spares() {
                                for old in replaced {
                                    crate::spare::retire(old.file);
                                }
                            }
                        }
                        if self.spares() && !ended {
                            crate::spare::want(&ws.dir);
                            jobs.push(Job::Spare(ws.dir.clone()));
                        }
                    }
                }
                Op::Remove(name) => {
                    let path = ws.dir.join(name);
                    match std::fs::remove_file(&path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(source) => {
                            return Err(StoreError::Io {
                                op: "remove",
                                path,
                                source,
                            });
                        }
                    }
                    if !self.durability.journaled() {
                        continue;
                    }
                    jobs.push(Job::Folder(ws.dir.clone()));
                }
            }
        }
        if ended && self.spares() {
            // The run changes no more: its folder keeps no spare.
            crate::spare::discard(&ws.dir);
        }
        // The next call's read of these states checks nothing again while
        // the witness stays as this write left it. A write the witness
        // could not record is not kept as checked (the witness does not
        // say it is baton's).
        let was_witnessed = witnessed.is_some();
        let stamp = match witnessed {
            Some(pending) => pending.done().map(Some),
            None if self.witness.is_some() => None,
            None => Some(None),
        };
        if let Some(stamp) = stamp {
            for (path, bytes) in &written_states {
                self.parsed
                    .keep_tag(path, bytes, self.rendered_check(bytes), stamp);
            }
        }
        // The witness reaches the disk with the journal (one background
        // sync): after a power cut, recovery puts back only what the
        // witness has.
        if let (true, true, Some(witness)) =
            (was_witnessed, self.durability.journaled(), &self.witness)
        {
            jobs.push(Job::Data(witness.path().to_path_buf()));
        }
        Ok(jobs)
    }

    /// Hands `jobs` to the syncer, or does them now ([`Durability`]). Called
    /// once the workspace lock is released (a checkpoint takes it).
    fn submit(&self, jobs: Vec<Job>) {
        crate::durable::submit(self.durability, jobs, self.lock_timeout);
    }

    /// After the machine restarted: puts the workspace's files back as its
    /// journal says ([`crate::journal::recover`]), once per workspace and
    /// process. `held`: the caller's lock, else it is taken for this.
    pub(crate) fn recover_if_needed(
        &self,
        ws: &WorkspaceRef,
        held: Option<&crate::fs::HeldLock>,
    ) -> Result<(), StoreError> {
        let checked = crate::journal::checked();
        if checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&ws.dir)
        {
            return Ok(());
        }
        if crate::journal::written_in_another_boot(&ws.dir) {
            let _own = match held {
                Some(_) => None,
                None => Some(self.lock(ws)?),
            };
            // Only what the witness vouches for, where it knows the run.
            let accept = |name: &str, content: Option<&[u8]>| match &self.witness {
                Some(witness) => match witness.accepted(&ws.name, name) {
                    // The token of tagged content is its tag: the tag must
                    // also be the content's (not one copied from baton's).
                    Some(tokens) => {
                        tokens.contains(&crate::witness::token(content))
                            && content.is_none_or(|bytes| {
                                !crate::integrity::tagged(bytes)
                                    || self.check_bytes(bytes) == crate::integrity::TagCheck::Intact
                            })
                    }
                    None => true,
                },
                None => true,
            };
            let recovered =
                crate::journal::recover_accepted(&ws.dir, &accept).map_err(|source| {
                    StoreError::Io {
                        op: "recover from the journal",
                        path: ws.dir.join(crate::journal::JOURNAL_FILE),
                        source,
                    }
                })?;
            if !recovered.restored.is_empty() || !recovered.removed.is_empty() {
                // What the journal put back is baton's (its witness
                // records may not have reached the disk).
                if let Some(witness) = &self.witness {
                    let names: Vec<String> = recovered
                        .restored
                        .iter()
                        .chain(&recovered.removed)
                        .cloned()
                        .collect();
                    witness.record_present(&ws.name, &ws.dir, &names);
                }
                tracing::warn!(
                    "{}: the machine restarted before its last changes reached the disk; put back from the journal: {:?}, removed: {:?}",
                    ws.display,
                    recovered.restored,
                    recovered.removed
                );
            }
        }
        checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ws.dir.clone());
        Ok(())
    }

    /// Completes an interrupted seal: when the workspace is sealed and a
    /// kill came between the live state's write and `state.json`'s, writes
    /// the sealed form now. Every update does this itself; a call that
    /// answers without an update (a repeated report) calls this first, so
    /// what it hands out next (the commit's `git add`) sees the sealed file.
    pub fn repair(&self, ws: &WorkspaceRef) -> Result<(), StoreError> {
        if !self.is_sealed(ws) {
            return Ok(());
        }
        let jobs = {
            let lock = self.lock(ws)?;
            self.recover_if_needed(ws, Some(&lock))?;
            if !self.is_sealed(ws) {
                return Ok(());
            }
            let live = self.read(ws)?;
            self.repair_seal(ws, &live)?
        };
        self.submit(jobs);
        Ok(())
    }

    /// Writes the sealed final form into `state.json` again if a kill came
    /// between the live state's write and its own.
    fn repair_seal(
        &self,
        ws: &WorkspaceRef,
        live: &WorkspaceState,
    ) -> Result<Vec<Job>, StoreError> {
        let Some(sealed) = live.extra.get(SEALED_FINAL_KEY) else {
            return Ok(Vec::new());
        };
        let Ok(final_form) = serde_json::from_value::<WorkspaceState>(sealed.clone()) else {
            return Ok(Vec::new());
        };
        // state.json is the sealed form exactly as baton renders it, its
        // tag included (compared as bytes: a file with its tag never equals
        // the form without one, which rewrote it on every change).
        let expected = self.render(&final_form);
        if std::fs::read(ws.state_file()).is_ok_and(|on_disk| on_disk == expected) {
            return Ok(Vec::new());
        }
        self.commit(
            ws,
            vec![Op::Write(STATE_FILE.into(), expected)],
            false,
            None,
        )
    }

    /// Whether the workspace's final state is sealed into `state.json` while
    /// its last steps run (see [`StateStore::update_sealing`]).
    pub fn is_sealed(&self, ws: &WorkspaceRef) -> bool {
        std::fs::symlink_metadata(ws.dir.join(LIVE_STATE_FILE)).is_ok_and(|m| m.is_file())
    }

    /// Every workspace folder under the specs root (those with a `state.json`),
    /// by name, without reading any state.
    pub fn list_refs(&self) -> Result<Vec<WorkspaceRef>, StoreError> {
        self.list_refs_where(|_| true)
    }

    /// Like [`StateStore::list_refs`], looking only at folders whose name
    /// passes `name` (no file is touched for the others).
    pub fn list_refs_where(
        &self,
        name: impl Fn(&str) -> bool,
    ) -> Result<Vec<WorkspaceRef>, StoreError> {
        let entries = match std::fs::read_dir(&self.specs_root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Io {
                    op: "list",
                    path: self.specs_root.clone(),
                    source,
                });
            }
        };
        let mut out: Vec<WorkspaceRef> = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
            .filter(|folder| name(folder))
            .filter_map(|folder| self.resolve(&folder).ok())
            .filter(|ws| ws.state_file().exists())
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Every workspace folder under the specs root, by name, with its state or
    /// the error reading it. Folders without `state.json` are not workspaces.
    pub fn list(&self) -> Result<Vec<ListedWorkspace>, StoreError> {
        Ok(self
            .list_refs()?
            .into_iter()
            .map(|ws| {
                let state = self.load(&ws);
                (ws, state)
            })
            .collect())
    }

    /// Takes a named lock of the specs folder (`<specs>/.locks/<name>.lock`),
    /// for steps that must not run twice at once across workspaces (starting
    /// the one run of an issue). Held until the returned guard is dropped.
    pub fn lock_named(&self, name: &str) -> Result<NamedLock, StoreError> {
        validate_name(name).map_err(|reason| StoreError::InvalidWorkspace {
            input: name.to_string(),
            reason,
        })?;
        let dir = self.specs_root.join(".locks");
        crate::fs::create_ignored_dir(&dir).map_err(|source| StoreError::Io {
            op: "create folder",
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(format!("{name}.lock"));
        let file = crate::fs::open_regular(&path, false).map_err(|source| StoreError::Io {
            op: "open lock",
            path: path.clone(),
            source,
        })?;
        let held = crate::fs::lock_within(file, self.lock_timeout, name).map_err(|busy| {
            StoreError::Busy {
                path: path.clone(),
                holder: busy.holder,
                waited_ms: busy.waited.as_millis() as u64,
            }
        })?;
        Ok(NamedLock { _held: held })
    }

    /// Writes the workspace's own `.gitignore` (baton's runtime files) when
    /// it is missing. It is the only ignore file baton writes in a workspace.
    fn ensure_ignore_file(&self, ws: &WorkspaceRef) -> Result<(), StoreError> {
        let path = ws.dir.join(IGNORE_FILE);
        // Never through a link (a dangling one included), never replacing
        // anything: only created where nothing is; and whole or not at all
        // (a kill between creating it and writing it left an empty file
        // that no later change rewrote, and the run's `.state.lock` showed
        // in `git status` after its commit: the chaos campaign found it).
        crate::fs::create_new_whole(&path, IGNORE_CONTENT.as_bytes())
            .map(|_| ())
            .map_err(|source| StoreError::Io {
                op: "create",
                path,
                source,
            })
    }

    pub(crate) fn lock(&self, ws: &WorkspaceRef) -> Result<crate::fs::HeldLock, StoreError> {
        let path = ws.dir.join(LOCK_FILE);
        let file = crate::fs::open_regular(&path, false).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => StoreError::NotFound {
                path: ws.dir.clone(),
            },
            _ => StoreError::Io {
                op: "open lock",
                path: path.clone(),
                source,
            },
        })?;
        crate::fs::lock_within(file, self.lock_timeout, "state update").map_err(|busy| {
            StoreError::Busy {
                path: ws.dir.clone(),
                holder: busy.holder,
                waited_ms: busy.waited.as_millis() as u64,
            }
        })
    }
}

/// Refuses a name that is not a plain file of the workspace baton writes
/// whole beside its state (`request.md`): no path, not the state itself.
fn check_workspace_file_name(name: &str) -> Result<(), StoreError> {
    if name.is_empty()
        || name.contains(['/', '\\', '\0'])
        || name == STATE_FILE
        || name == LIVE_STATE_FILE
    {
        return Err(StoreError::InvalidWorkspace {
            input: name.to_string(),
            reason: "not a workspace file baton writes this way".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::PhaseStatus;

    fn store(dir: &Path) -> StateStore {
        StateStore::new(dir, &dir.join(".specs"))
    }

    /// A power cut: the journal reached the disk, the files did not (the
    /// last renames are lost, or the state file is zeros).
    #[test]
    fn after_a_restart_the_journal_puts_back_what_the_disk_lost() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let ws = store.resolve("20260101-cut").unwrap();
        let first = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "cut",
            &ws.display,
            "t",
            chrono::Utc::now(),
        );
        store
            .create_with_files(&ws, &first, &[("request.md", b"fix the login\n")])
            .unwrap();
        let mut states = Vec::new();
        for k in 0..3 {
            let u = store
                .update(&ws, chrono::Utc::now(), |s| {
                    s.current_phase_status = if k % 2 == 0 {
                        PhaseStatus::InProgress
                    } else {
                        PhaseStatus::Failed
                    };
                    Ok::<_, ()>(())
                })
                .unwrap();
            states.push(std::fs::read(ws.state_file()).unwrap());
            let _ = u;
        }
        crate::durable::flush();
        // The state file holds an older version (its rename was lost) and
        // the request was torn.
        std::fs::write(ws.state_file(), &states[0]).unwrap();
        std::fs::write(ws.dir.join("request.md"), [0u8; 14]).unwrap();
        crate::journal::as_if_restarted(&ws.dir);
        let loaded = store.load(&ws).unwrap();
        assert_eq!(loaded.current_phase_status, PhaseStatus::InProgress);
        assert_eq!(std::fs::read(ws.state_file()).unwrap(), states[2]);
        assert_eq!(
            std::fs::read_to_string(ws.dir.join("request.md")).unwrap(),
            "fix the login\n"
        );
        // Nothing left to do: the journal was emptied once the files were synced.
        assert_eq!(
            std::fs::metadata(ws.dir.join(crate::journal::JOURNAL_FILE))
                .unwrap()
                .len(),
            0
        );

        // A state file of zeros (renamed before its data reached the disk).
        store
            .update(&ws, chrono::Utc::now(), |s| {
                s.debug = true;
                Ok::<_, ()>(())
            })
            .unwrap();
        let last = std::fs::read(ws.state_file()).unwrap();
        std::fs::write(ws.state_file(), vec![0u8; last.len()]).unwrap();
        crate::journal::as_if_restarted(&ws.dir);
        // An update is the first access here: it recovers under its lock.
        store
            .update(&ws, chrono::Utc::now(), |s| {
                assert!(s.debug, "the update saw the state put back");
                Ok::<_, ()>(())
            })
            .unwrap();
    }

    #[test]
    fn without_durability_an_old_journal_is_dropped_and_never_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let journaled = store(dir.path());
        let ws = journaled.resolve("20260101-off").unwrap();
        let first = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "off",
            &ws.display,
            "t",
            chrono::Utc::now(),
        );
        journaled.create(&ws, &first).unwrap();
        assert!(ws.dir.join(crate::journal::JOURNAL_FILE).exists());
        let off = store(dir.path()).with_durability(false);
        off.update(&ws, chrono::Utc::now(), |s| {
            s.debug = true;
            Ok::<_, ()>(())
        })
        .unwrap();
        assert!(!ws.dir.join(crate::journal::JOURNAL_FILE).exists());
    }

    #[test]
    fn the_sweep_keeps_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let ws = store.resolve("20260101-sweep").unwrap();
        let first = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "s",
            &ws.display,
            "t",
            chrono::Utc::now(),
        );
        store.create(&ws, &first).unwrap();
        std::fs::write(ws.dir.join(".state.json.abc123.tmp"), "x").unwrap();
        assert_eq!(store.sweep_temp_files(std::time::Duration::ZERO), 1);
        assert!(ws.dir.join(crate::journal::JOURNAL_FILE).exists());
    }
}
