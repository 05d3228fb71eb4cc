//! The witness: what baton wrote to each run's state files, recorded
//! where no agent's sandbox may write.
//!
//! Everything else baton trusts about a run — `state.json`, its journal,
//! even the key that tags it — lies where a program the agent runs can
//! write or read (the workspace; the key under Codex, which reads
//! everywhere). The witness is one small file per specs folder in the
//! person's state folder (`<home>/.local/state/baton/witness/<digest of
//! the specs folder's path>`, outside every workspace and every folder an
//! agent's sandbox may write: docs/clients.md). Every state write of the
//! store appends, under the workspace lock, a *pending* record of each
//! state file it is about to write (its integrity tag, or a SHA-256 of its
//! bytes when it has none; `-` for a removal), renames the files into
//! place, then a *done* record. A state file is baton's when its content
//! is the token of the file's last done record or of a record after it
//! (a write killed between its records) — anything else, an older state
//! of baton's included, was written behind baton's back.
//!
//! The file is appended to without a sync on the reply's path; where the
//! store journals, the witness is synced with the journal by the
//! background syncer, because a recovery after a power cut puts back from
//! the journal (which lies in the workspace, where an agent's program may
//! write it) only what the witness recorded. An advisory lock that only
//! its compaction needs: past [`LIMIT`] bytes the writer that finds it rewrites it with
//! the records that still count, and the [`MAX_KEYS`] most recently
//! written state files.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::journal::Op;
use crate::store::{LIVE_STATE_FILE, STATE_FILE};

/// The commands file grows to this many bytes before it is compacted
/// (to the commands still running).
pub const COMMANDS_LIMIT: u64 = 4 * 1024;
/// The witness file grows to this many bytes before it is compacted.
pub const LIMIT: u64 = 64 * 1024;
/// How many state files (workspace, file) a compacted witness remembers.
pub const MAX_KEYS: usize = 2000;
/// The token of a state file that is absent.
pub const ABSENT: &str = "-";

/// The witness of the workspaces under one specs folder.
#[derive(Debug, Clone)]
pub struct Witness {
    file: PathBuf,
    /// The agents' commands started and ended (`<file>.commands`): small,
    /// read by every change of a run.
    commands: PathBuf,
}

/// What the witness says of one state file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The witness has no record of the file (a run last written before
    /// the witness existed, or where it could not be written).
    Unknown,
    /// Baton wrote the file as it is.
    Baton,
    /// The content is not what baton last wrote. `expected`: the tokens
    /// baton's writes left (the newest last).
    Outside {
        /// The tokens the content could have had.
        expected: Vec<String>,
    },
}

/// The records of one write, between its pending and its done records
/// ([`Witness::begin`]): the witness file stays open and locked.
#[derive(Debug)]
pub struct Pending {
    file: File,
    done: Vec<u8>,
}

/// The witness file as it was at one moment: its device, inode, length
/// and change time (seconds, nanoseconds). Another process's record (any
/// write of baton's elsewhere) or a compaction changes it, so a check
/// kept with a stamp is taken again only while the witness is unchanged
/// (crate::parsed).
pub type Stamp = (u64, u64, u64, i64, i64);

fn stamp_of(meta: &std::fs::Metadata) -> Stamp {
    (
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.ctime(),
        meta.ctime_nsec(),
    )
}

impl Pending {
    /// Appends the write's done records (its files are in place). Returns
    /// the witness's stamp just after them (still locked), `None` when
    /// they could not be written.
    pub fn done(mut self) -> Option<Stamp> {
        if let Err(e) = self.file.write_all(&self.done) {
            tracing::warn!("the witness of a state write could not be recorded ({e})");
            return None;
        }
        self.file.metadata().ok().map(|m| stamp_of(&m))
    }
}

impl Witness {
    /// The witness of the workspaces under `specs_root`, kept in `folder`
    /// (the person's witness folder, [`Witness::folder`]).
    pub fn new(folder: &Path, specs_root: &Path) -> Witness {
        let canonical = std::fs::canonicalize(specs_root).unwrap_or_else(|_| specs_root.into());
        let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
        let name: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        Witness {
            commands: folder.join(format!("{name}.commands")),
            file: folder.join(name),
        }
    }

    /// The witness file.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// The witness file's [`Stamp`] now (`None`: there is none yet).
    pub fn stamp(&self) -> Option<Stamp> {
        std::fs::metadata(&self.file).ok().map(|m| stamp_of(&m))
    }

    /// Whether this process may write the witness folder: creates it (mode
    /// 0700) when missing, then creates and removes a probe file. Inside an
    /// agent's sandbox this fails (`EROFS`, `EACCES`, `EPERM`).
    pub fn check_writable(folder: &Path) -> std::io::Result<()> {
        create_folder(folder)?;
        let probe = folder.join(format!(".probe-{}", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&probe);
        let result = file.map(|_| ());
        let _ = std::fs::remove_file(&probe);
        result
    }

    /// Before a write: appends a pending record of every state file `ops`
    /// writes or removes in workspace `ws`, and returns the write's done
    /// records to append once the files are in place. `None` when the
    /// write touches no state file or the witness cannot be written (then
    /// the write is not witnessed, and a later compare sees it as written
    /// outside baton: what happens inside an agent's sandbox).
    pub fn begin(&self, ws: &str, ops: &[Op]) -> Option<Pending> {
        let mut pending = Vec::new();
        let mut done = Vec::new();
        for op in ops {
            let (name, token) = match op {
                Op::Write(name, bytes) => (name.as_str(), token(Some(bytes))),
                Op::Remove(name) => (name.as_str(), ABSENT.to_string()),
            };
            if name != STATE_FILE && name != LIVE_STATE_FILE {
                continue;
            }
            pending.extend_from_slice(format!("P {ws} {name} {token}\n").as_bytes());
            done.extend_from_slice(format!("D {ws} {name} {token}\n").as_bytes());
        }
        if pending.is_empty() {
            return None;
        }
        match self.open_locked(&self.file, LIMIT) {
            Ok(mut file) => match file.write_all(&pending) {
                Ok(()) => Some(Pending { file, done }),
                Err(e) => {
                    tracing::warn!(
                        "the witness {} could not be written ({e})",
                        self.file.display()
                    );
                    None
                }
            },
            Err(e) => {
                tracing::warn!(
                    "the witness {} could not be opened ({e})",
                    self.file.display()
                );
                None
            }
        }
    }

    /// Records the content now on disk of `names` in `dir` (workspace
    /// `ws`) as baton's: after the journal put them back following a
    /// restart.
    pub fn record_present(&self, ws: &str, dir: &Path, names: &[String]) {
        let ops: Vec<Op> = names
            .iter()
            .map(|name| match std::fs::read(dir.join(name)) {
                Ok(bytes) => Op::Write(name.clone(), bytes),
                Err(_) => Op::Remove(name.clone()),
            })
            .collect();
        if let Some(p) = self.begin(ws, &ops) {
            let _ = p.done();
        }
    }

    /// What the witness says of state file `name` of workspace `ws` whose
    /// content is `bytes` (`None`: absent). `signed`: whether a tag found
    /// at the end of the content is the tag of the text before it (the
    /// store's signer; a copied tag on other text is not baton's).
    pub fn verdict(
        &self,
        ws: &str,
        name: &str,
        bytes: Option<&[u8]>,
        signed: impl Fn(&str, &str) -> bool,
    ) -> Verdict {
        let Some(expected) = self.accepted(ws, name) else {
            return Verdict::Unknown;
        };
        let token = token(bytes);
        let genuine = match (bytes, tag_of(bytes)) {
            (Some(bytes), Some(tag)) => std::str::from_utf8(bytes)
                .ok()
                .is_some_and(|text| signed(&crate::integrity::split(text).0, &tag)),
            _ => true,
        };
        if genuine && expected.contains(&token) {
            Verdict::Baton
        } else {
            Verdict::Outside { expected }
        }
    }

    /// The tokens state file `name` of workspace `ws` may have: its last
    /// done record's and every record's after it (oldest first); `None`
    /// when the witness has none.
    pub fn accepted(&self, ws: &str, name: &str) -> Option<Vec<String>> {
        let bytes = read_bounded(&self.file)?;
        // From the end: a run's last records are near it.
        let mut tokens: Vec<String> = Vec::new();
        for line in bytes.rsplit(|b| *b == b'\n') {
            let Some(record) = std::str::from_utf8(line).ok().and_then(Record::parse) else {
                continue;
            };
            if !record.of_file() || record.ws != ws || record.name != name {
                continue;
            }
            if !tokens.iter().any(|t| t == record.token) {
                tokens.insert(0, record.token.to_string());
            }
            if record.kind == Kind::Done {
                break;
            }
        }
        (!tokens.is_empty()).then_some(tokens)
    }

    /// Records that an agent's command (`call`) started in workspace `ws`:
    /// until its end is recorded ([`Witness::command_ended`], at most
    /// [`COMMAND_WINDOW_SECS`]), a change of baton's never builds on a
    /// state changed outside baton.
    pub fn command_started(&self, ws: &str, call: &str) -> std::io::Result<()> {
        self.append_line(&Record {
            kind: Kind::CommandStarted,
            ws,
            name: &call_id(call),
            token: &now_secs().to_string(),
        })
    }

    /// Records that the agent's command `call` in workspace `ws` ended.
    pub fn command_ended(&self, ws: &str, call: &str) -> std::io::Result<()> {
        self.append_line(&Record {
            kind: Kind::CommandEnded,
            ws,
            name: &call_id(call),
            token: "-",
        })
    }

    /// Whether an agent's command in workspace `ws` is running: one
    /// started, in the last [`COMMAND_WINDOW_SECS`], whose end is not
    /// recorded.
    pub fn command_running(&self, ws: &str) -> bool {
        let Some(bytes) = read_bounded(&self.commands) else {
            return false;
        };
        let oldest = now_secs().saturating_sub(COMMAND_WINDOW_SECS);
        let mut ended: Vec<&str> = Vec::new();
        for line in bytes.rsplit(|b| *b == b'\n') {
            let Some(record) = std::str::from_utf8(line).ok().and_then(Record::parse) else {
                continue;
            };
            if record.ws != ws {
                continue;
            }
            match record.kind {
                Kind::CommandEnded => ended.push(record.name),
                Kind::CommandStarted
                    if !ended.contains(&record.name)
                        && record.token.parse::<u64>().is_ok_and(|t| t >= oldest) =>
                {
                    return true;
                }
                _ => {}
            }
        }
        false
    }

    fn append_line(&self, record: &Record<'_>) -> std::io::Result<()> {
        let mut file = self.open_locked(&self.commands, COMMANDS_LIMIT)?;
        file.write_all(record.line().as_bytes())
    }

    /// Opens the witness file for appending, locked, compacted first when
    /// it has grown past [`LIMIT`].
    fn open_locked(&self, path: &Path, limit: u64) -> std::io::Result<File> {
        loop {
            let file = match open_append(path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if let Some(folder) = path.parent() {
                        create_folder(folder)?;
                    }
                    open_append(path)?
                }
                Err(e) => return Err(e),
            };
            lock_briefly(&file)?;
            let meta = file.metadata()?;
            // Replaced by a compaction while this process waited: the
            // records go to the new file.
            if meta.nlink() == 0 {
                continue;
            }
            if meta.len() > limit {
                compact(path, &file)?;
                continue;
            }
            return Ok(file);
        }
    }
}

/// Rewrites the witness (its lock held through `old`) with the records
/// that still count, renamed over it.
fn compact(path: &Path, old: &File) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    old.take(LIMIT * 4).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    // Per state file, its records since its last done one, and when
    // it was last written; the commands still running.
    let mut keys: HashMap<(String, String), (usize, Vec<String>)> = HashMap::new();
    let mut running: Vec<(String, String, String)> = Vec::new();
    let oldest = now_secs().saturating_sub(COMMAND_WINDOW_SECS);
    for (at, record) in text.lines().filter_map(Record::parse).enumerate() {
        match record.kind {
            Kind::CommandStarted => {
                if record.token.parse::<u64>().is_ok_and(|t| t >= oldest) {
                    running.push((record.ws.into(), record.name.into(), record.line()));
                }
            }
            Kind::CommandEnded => {
                running.retain(|(ws, call, _)| !(ws == record.ws && call == record.name));
            }
            Kind::Pending | Kind::Done => {
                let entry = keys
                    .entry((record.ws.to_string(), record.name.to_string()))
                    .or_default();
                if record.kind == Kind::Done {
                    entry.1.clear();
                }
                entry.0 = at;
                entry.1.push(record.line());
            }
        }
    }
    let mut kept: Vec<(usize, Vec<String>)> = keys.into_values().collect();
    kept.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    kept.truncate(MAX_KEYS);
    kept.reverse();
    kept.push((0, running.into_iter().map(|(_, _, line)| line).collect()));
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".witness.")
        .tempfile_in(folder)?;
    for (_, lines) in &kept {
        for line in lines {
            tmp.write_all(line.as_bytes())?;
        }
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The token of a state file's content: its integrity tag, else
/// `sha256:` and the digest of its bytes; [`ABSENT`] for no file.
pub fn token(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => ABSENT.to_string(),
        Some(bytes) => match tag_of(Some(bytes)) {
            Some(tag) => tag,
            None => {
                let digest = Sha256::digest(bytes);
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                format!("sha256:{hex}")
            }
        },
    }
}

/// The integrity tag at the end of a state file, read from its last bytes
/// only (where the store puts it).
fn tag_of(bytes: Option<&[u8]>) -> Option<String> {
    let bytes = bytes?;
    let tail = &bytes[bytes.len().saturating_sub(256)..];
    let tail = std::str::from_utf8(tail).ok()?;
    let marker = format!("\"{}\": \"", crate::integrity::INTEGRITY_KEY);
    let at = tail.rfind(&marker)?;
    let rest = tail[at + marker.len()..].strip_suffix("\"\n}\n")?;
    (!rest.is_empty() && !rest.contains([' ', '"', '\n'])).then(|| rest.to_string())
}

/// What a witness line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `P`: a state file is about to be written.
    Pending,
    /// `D`: it was written.
    Done,
    /// `C`: an agent's command started (`name`: its call, `token`: when,
    /// in Unix seconds).
    CommandStarted,
    /// `E`: that command ended (its state compared).
    CommandEnded,
}

/// One line of the witness: `P|D <workspace> <file> <token>` or
/// `C|E <workspace> <call> <seconds>`.
struct Record<'a> {
    kind: Kind,
    ws: &'a str,
    name: &'a str,
    token: &'a str,
}

impl<'a> Record<'a> {
    fn parse(line: &'a str) -> Option<Record<'a>> {
        let mut parts = line.split(' ');
        let kind = match parts.next()? {
            "D" => Kind::Done,
            "P" => Kind::Pending,
            "C" => Kind::CommandStarted,
            "E" => Kind::CommandEnded,
            _ => return None,
        };
        let (ws, name, token) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || token.is_empty() || name.is_empty() {
            return None;
        }
        Some(Record {
            kind,
            ws,
            name,
            token,
        })
    }

    /// Whether it is a state file's record.
    fn of_file(&self) -> bool {
        matches!(self.kind, Kind::Pending | Kind::Done)
    }

    fn line(&self) -> String {
        let kind = match self.kind {
            Kind::Pending => 'P',
            Kind::Done => 'D',
            Kind::CommandStarted => 'C',
            Kind::CommandEnded => 'E',
        };
        format!("{kind} {} {} {}\n", self.ws, self.name, self.token)
    }
}

/// How long a started command counts as running when its end is never
/// recorded (a client that reports nothing after a command, a killed one).
pub const COMMAND_WINDOW_SECS: u64 = 6 * 3600;

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// How long a write waits for the witness's lock (held for microseconds
/// by baton; any process that can read the file can take it).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Takes `file`'s exclusive lock, waiting at most [`LOCK_WAIT`]: a
/// program holding it forever leaves baton's writes unwitnessed (then
/// held after the agent's command), never hung.
fn lock_briefly(file: &File) -> std::io::Result<()> {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(100);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "the witness is locked by another process",
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// A call id as one word of a witness line.
fn call_id(call: &str) -> String {
    let id: String = call
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        .take(128)
        .collect();
    if id.is_empty() { "-".into() } else { id }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .read(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn create_folder(folder: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
}

/// The witness file's bytes (at most four times [`LIMIT`]); `None` when
/// it cannot be read.
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    // Sized from the file's length: one read, not a read per doubling of
    // a small buffer (a 5 KB witness took ten).
    let len = file.metadata().map_or(0, |m| m.len()).min(LIMIT * 4);
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(LIMIT * 4).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// What a write does to a state found changed outside baton, under the
/// workspace lock, before the write's own change
/// ([`crate::StateStore::with_on_outside`]): the use cases hold the run.
pub type OnOutside = std::sync::Arc<
    dyn Fn(
            &crate::WorkspaceRef,
            &mut crate::WorkspaceState,
            &OutsideChange,
            chrono::DateTime<chrono::Utc>,
        ) + Send
        + Sync,
>;

/// State files of a workspace found changed outside baton.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideChange {
    /// The files (`state.json`, `.state.live.json`).
    pub files: Vec<String>,
    /// Whether baton put back what it last wrote to every one of them
    /// (from the journal; not possible when the journal does not have it,
    /// as with `BATON_FSYNC=off`).
    pub put_back: bool,
}

/// One state file's name, its content (`None`: absent) and what the
/// witness says of it.
type FileVerdict = (&'static str, Option<Vec<u8>>, Verdict);

/// The state files the witness covers.
const FILES: [&str; 2] = [STATE_FILE, LIVE_STATE_FILE];

impl crate::StateStore {
    /// Witnesses every state this store writes in the person's witness
    /// `folder` (see the module doc), and checks against it the state every
    /// change starts from.
    pub fn with_witness(mut self, folder: &Path) -> crate::StateStore {
        self.witness = Some(Witness::new(folder, self.specs_root()));
        self
    }

    /// What a change does first when it finds the state changed outside
    /// baton (after putting back what baton last wrote).
    pub fn with_on_outside(mut self, handler: OnOutside) -> crate::StateStore {
        self.on_outside = Some(handler);
        self
    }

    /// The witness of this store's writes, if any.
    pub fn witness(&self) -> Option<&Witness> {
        self.witness.as_ref()
    }

    /// Under the workspace lock (so a write of baton's in progress is
    /// never half seen): the state files of `ws` whose content is not what
    /// baton last wrote. `None` when the witness has no record of the
    /// workspace (or there is no witness): the caller decides otherwise.
    pub fn outside_changes(
        &self,
        ws: &crate::WorkspaceRef,
    ) -> Result<Option<Vec<String>>, crate::StoreError> {
        if self.witness.is_none() {
            return Ok(None);
        }
        let _lock = self.lock(ws)?;
        Ok(self.outside_verdicts(ws).map(|v| {
            v.into_iter()
                .filter(|(_, _, verdict)| matches!(verdict, Verdict::Outside { .. }))
                .map(|(name, _, _)| name.to_string())
                .collect()
        }))
    }

    /// Each state file's content and what the witness says of it; `None`
    /// when the witness knows neither file.
    fn outside_verdicts(&self, ws: &crate::WorkspaceRef) -> Option<Vec<FileVerdict>> {
        let witness = self.witness.as_ref()?;
        let signed = |text: &str, tag: &str| {
            self.signer
                .as_ref()
                .and_then(|s| s.sign(text))
                .is_some_and(|t| t == tag)
        };
        let verdicts: Vec<_> = FILES
            .iter()
            .map(|name| {
                let path = ws.dir.join(name);
                let bytes = baton_fs::read_file_nofollow(&path, crate::store::MAX_STATE_BYTES).ok();
                // Bytes this store wrote or checked as intact (crate::parsed)
                // carry their own tag: not computed again.
                let intact = bytes.as_deref().is_some_and(|b| {
                    self.parsed.tag(&path, b).map(|(tag, _)| tag)
                        == Some(crate::integrity::TagCheck::Intact)
                });
                let verdict = witness.verdict(&ws.name, name, bytes.as_deref(), |text, tag| {
                    intact || signed(text, tag)
                });
                (*name, bytes, verdict)
            })
            .collect();
        if verdicts.iter().all(|(_, _, v)| *v == Verdict::Unknown) {
            return None;
        }
        // Of a run the witness knows, a state file it never recorded was
        // never baton's (a live state made up to be read first).
        Some(
            verdicts
                .into_iter()
                .map(|(name, bytes, verdict)| match verdict {
                    Verdict::Unknown if bytes.is_some() => (
                        name,
                        bytes,
                        Verdict::Outside {
                            expected: vec![ABSENT.to_string()],
                        },
                    ),
                    other => (name, bytes, other),
                })
                .collect(),
        )
    }

    /// Under the caller's workspace lock, while an agent's command runs:
    /// puts back, from the journal, what
    /// baton last wrote to each state file changed outside baton (the
    /// journal's last record of it whose token the witness has), recorded
    /// as baton's again. Returns what was found, `None` when nothing was.
    /// Only while an agent's command runs in the workspace
    /// ([`Witness::command_running`]): otherwise a state edited outside
    /// baton (a person's hand edit) is built upon as before, and the
    /// integrity tag's check tells of it.
    pub(crate) fn put_back_outside(&self, ws: &crate::WorkspaceRef) -> Option<OutsideChange> {
        if !self.witness.as_ref()?.command_running(&ws.name) {
            return None;
        }
        let verdicts = self.outside_verdicts(ws)?;
        let outside: Vec<(&str, Vec<String>)> = verdicts
            .into_iter()
            .filter_map(|(name, _, verdict)| match verdict {
                Verdict::Outside { expected } => Some((name, expected)),
                _ => None,
            })
            .collect();
        if outside.is_empty() {
            return None;
        }
        let journal = baton_fs::read_file_nofollow(
            &ws.dir.join(crate::journal::JOURNAL_FILE),
            64 * 1024 * 1024,
        )
        .map(|bytes| crate::journal::read_all(&bytes).0)
        .unwrap_or_default();
        let mut put_back = true;
        let mut ops = Vec::new();
        for (name, expected) in &outside {
            // The journal's newest content of the file that baton wrote.
            let mut found: Option<Op> = None;
            for record in &journal {
                for op in &record.ops {
                    let (n, t) = match op {
                        Op::Write(n, data) => (n, token(Some(data))),
                        Op::Remove(n) => (n, ABSENT.to_string()),
                    };
                    if n == name && expected.contains(&t) {
                        found = Some(op.clone());
                    }
                }
            }
            // A file baton never wrote goes.
            if found.is_none() && expected.iter().all(|t| t == ABSENT) {
                found = Some(Op::Remove((*name).to_string()));
            }
            match found {
                Some(op) => ops.push(op),
                None => put_back = false,
            }
        }
        for op in &ops {
            let done = match op {
                Op::Write(name, bytes) => {
                    crate::store::write_atomic(&ws.dir, &ws.dir.join(name), bytes, false).is_ok()
                }
                Op::Remove(name) => match std::fs::remove_file(ws.dir.join(name)) {
                    Ok(()) => true,
                    Err(e) => e.kind() == std::io::ErrorKind::NotFound,
                },
            };
            put_back &= done;
        }
        if let (Some(witness), false) = (&self.witness, ops.is_empty()) {
            let names: Vec<String> = ops
                .iter()
                .map(|op| match op {
                    Op::Write(n, _) | Op::Remove(n) => n.clone(),
                })
                .collect();
            witness.record_present(&ws.name, &ws.dir, &names);
        }
        tracing::warn!(
            "{}: {:?} changed outside baton; {}",
            ws.display,
            outside.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            if put_back {
                "put back what baton last wrote"
            } else {
                "what baton last wrote is not in the journal"
            }
        );
        Some(OutsideChange {
            files: outside.iter().map(|(n, _)| (*n).to_string()).collect(),
            put_back,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StateStore, WorkspaceRef, WorkspaceState};

    /// A signer whose key a forger also holds (as under Codex).
    struct Known;
    impl crate::integrity::StateSigner for Known {
        fn sign(&self, text: &str) -> Option<String> {
            Some(format!(
                "test:{}",
                token(Some(text.as_bytes())).trim_start_matches("sha256:")
            ))
        }
    }

    fn setup() -> (tempfile::TempDir, StateStore, WorkspaceRef) {
        setup_journaled(true)
    }

    /// A witnessed store and one run in it, with or without the journal.
    fn setup_journaled(journaled: bool) -> (tempfile::TempDir, StateStore, WorkspaceRef) {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path(), &dir.path().join(".specs"))
            .with_signer(std::sync::Arc::new(Known))
            .with_durability(journaled)
            .with_witness(&dir.path().join("home/witness"));
        let ws = store.resolve("20260101-w").unwrap();
        let first = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "w",
            &ws.display,
            "t",
            chrono::Utc::now(),
        );
        store.create(&ws, &first).unwrap();
        (dir, store, ws)
    }

    fn change(store: &StateStore, ws: &WorkspaceRef, phase: &str) {
        store
            .update(ws, chrono::Utc::now(), |s| {
                s.current_phase = phase.into();
                Ok::<_, ()>(())
            })
            .unwrap();
    }

    /// What a forger holding the key writes: a tagged state and a
    /// matching journal record.
    fn forge(store: &StateStore, ws: &WorkspaceRef, phase: &str) {
        let mut state = store.load(ws).unwrap();
        state.current_phase = phase.into();
        let bytes = store.render(&state);
        crate::journal::append(&ws.dir, &[Op::Write(STATE_FILE.into(), bytes.clone())]).unwrap();
        std::fs::write(ws.state_file(), bytes).unwrap();
    }

    /// Any process's read of a validly tagged state baton never wrote
    /// finds it changed (the key alone no longer makes a state baton's);
    /// another baton process's read of baton's own write finds it intact.
    #[test]
    fn a_tag_that_matches_is_not_enough_where_the_witness_knows_the_run() {
        use crate::integrity::TagCheck;
        let (dir, store, ws) = setup();
        change(&store, &ws, "phase-2");
        let witness = dir.path().join("home/witness");
        let another = |witnessed: bool| {
            let store = StateStore::new(dir.path(), &dir.path().join(".specs"))
                .with_signer(std::sync::Arc::new(Known));
            if witnessed {
                store.with_witness(&witness)
            } else {
                store
            }
        };
        assert_eq!(another(true).load_checked(&ws).unwrap().1, TagCheck::Intact);
        forge(&store, &ws, "phase-9");
        assert_eq!(
            another(true).load_checked(&ws).unwrap().1,
            TagCheck::Changed
        );
        assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Changed);
        // What the witness adds: without it the same bytes pass.
        assert_eq!(
            another(false).load_checked(&ws).unwrap().1,
            TagCheck::Intact
        );
        // baton's next write is its own again.
        change(&store, &ws, "phase-3");
        assert_eq!(another(true).load_checked(&ws).unwrap().1, TagCheck::Intact);
    }

    /// A rollback to the state this very process wrote (or read) last,
    /// after another baton process changed the run: the tag kept with
    /// those bytes is not taken as it was, since the witness has recorded
    /// a newer write of baton's since.
    #[test]
    fn a_rollback_to_this_process_s_last_state_after_another_s_write_is_changed() {
        use crate::integrity::TagCheck;
        let (dir, store, ws) = setup();
        let another = StateStore::new(dir.path(), &dir.path().join(".specs"))
            .with_signer(std::sync::Arc::new(Known))
            .with_witness(&dir.path().join("home/witness"));
        // Written by this process, then by another one.
        change(&store, &ws, "phase-2");
        let written = std::fs::read(ws.state_file()).unwrap();
        assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Intact);
        change(&another, &ws, "phase-3");
        std::fs::write(ws.state_file(), &written).unwrap();
        assert_eq!(another.load_checked(&ws).unwrap().1, TagCheck::Changed);
        assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Changed);
        // Read (and found baton's) by this process, then changed by the other.
        change(&another, &ws, "phase-4");
        let read = std::fs::read(ws.state_file()).unwrap();
        assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Intact);
        change(&another, &ws, "phase-5");
        std::fs::write(ws.state_file(), &read).unwrap();
        assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Changed);
        // baton's next write is its own again, and read so.
        change(&store, &ws, "phase-6");
        assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Intact);
        assert_eq!(another.load_checked(&ws).unwrap().1, TagCheck::Intact);
    }

    /// A program that writes the journal (it lies in the workspace) with a
    /// forged, validly tagged state and marks it as another boot's, so
    /// that baton's recovery would put it back: nothing the witness did
    /// not record is put back, and baton's own state stays.
    #[test]
    fn a_made_up_journal_of_another_boot_puts_nothing_back() {
        let (_dir, store, ws) = setup();
        change(&store, &ws, "phase-2");
        let baton_s = std::fs::read(ws.state_file()).unwrap();
        forge(&store, &ws, "phase-9");
        // Put baton's state back on disk: the journal's newest record (the
        // forgery) is now what a recovery would restore over an older one.
        std::fs::write(ws.state_file(), &baton_s).unwrap();
        crate::journal::as_if_restarted(&ws.dir);
        let state = store.load(&ws).unwrap();
        assert_eq!(
            state.current_phase, "phase-2",
            "the forgery was not put back"
        );
        assert_eq!(std::fs::read(ws.state_file()).unwrap(), baton_s);
        // A genuine power cut (the rename's data never reached the disk:
        // an empty file) still recovers baton's own last write.
        change(&store, &ws, "phase-3");
        let newest = std::fs::read(ws.state_file()).unwrap();
        std::fs::write(ws.state_file(), b"").unwrap();
        crate::journal::as_if_restarted(&ws.dir);
        assert_eq!(store.load(&ws).unwrap().current_phase, "phase-3");
        assert_eq!(std::fs::read(ws.state_file()).unwrap(), newest);
    }

    fn outside(store: &StateStore, ws: &WorkspaceRef) -> Vec<String> {
        store
            .outside_changes(ws)
            .unwrap()
            .expect("the witness knows the run")
    }

    #[test]
    fn baton_s_own_writes_pass_and_a_forgery_with_the_key_and_the_journal_does_not() {
        let (_dir, store, ws) = setup();
        assert!(outside(&store, &ws).is_empty());
        // A person answering while the agent's command runs: baton's write.
        change(&store, &ws, "phase-2");
        assert!(outside(&store, &ws).is_empty());
        store
            .witness()
            .unwrap()
            .command_started(&ws.name, "call_1")
            .unwrap();
        forge(&store, &ws, "phase-6");
        assert_eq!(outside(&store, &ws), [STATE_FILE]);
        // While the command runs, the next change never builds on it: it
        // starts from baton's.
        let held = std::sync::Arc::new(std::sync::Mutex::new(None));
        let seen = std::sync::Arc::clone(&held);
        let store = store.with_on_outside(std::sync::Arc::new(move |_, _, found, _| {
            *seen.lock().unwrap() = Some(found.clone());
        }));
        let updated = store
            .update(&ws, chrono::Utc::now(), |s| {
                Ok::<_, ()>(s.current_phase.clone())
            })
            .unwrap();
        assert_eq!(updated.value, "phase-2");
        assert_eq!(
            *held.lock().unwrap(),
            Some(OutsideChange {
                files: vec![STATE_FILE.into()],
                put_back: true
            })
        );
        assert!(outside(&store, &ws).is_empty());
        // Once the command ended, a hand edit is built upon (the integrity
        // tag's check tells of it), never put back.
        store
            .witness()
            .unwrap()
            .command_ended(&ws.name, "call_1")
            .unwrap();
        forge(&store, &ws, "phase-6");
        let updated = store
            .update(&ws, chrono::Utc::now(), |s| {
                Ok::<_, ()>(s.current_phase.clone())
            })
            .unwrap();
        assert_eq!(updated.value, "phase-6");
    }

    #[test]
    fn a_command_runs_until_its_end_is_recorded_and_survives_compaction() {
        let (_dir, store, ws) = setup();
        let witness = store.witness().unwrap();
        assert!(!witness.command_running(&ws.name));
        witness.command_started(&ws.name, "toolu_01").unwrap();
        witness.command_started(&ws.name, "toolu_02").unwrap();
        witness.command_ended(&ws.name, "toolu_01").unwrap();
        assert!(witness.command_running(&ws.name));
        assert!(!witness.command_running("20260101-other"));
        for i in 0..200 {
            change(&store, &ws, &format!("phase-{i}"));
            let call = format!("toolu_x{i}");
            witness.command_started(&ws.name, &call).unwrap();
            witness.command_ended(&ws.name, &call).unwrap();
        }
        let commands = std::fs::metadata(&witness.commands).unwrap().len();
        assert!(commands <= COMMANDS_LIMIT + 256, "{commands}");
        assert!(witness.command_running(&ws.name), "kept by the compaction");
        witness.command_ended(&ws.name, "toolu_02").unwrap();
        assert!(!witness.command_running(&ws.name));
    }

    #[test]
    fn a_rollback_to_an_older_state_baton_wrote_is_outside_too() {
        let (_dir, store, ws) = setup();
        change(&store, &ws, "phase-2");
        let older = std::fs::read(ws.state_file()).unwrap();
        change(&store, &ws, "phase-3");
        std::fs::write(ws.state_file(), &older).unwrap();
        assert_eq!(outside(&store, &ws), [STATE_FILE]);
        // A copied tag on other text is not baton's either.
        let now = std::fs::read_to_string(ws.state_file()).unwrap();
        std::fs::write(ws.state_file(), now.replace("phase-2", "phase-6")).unwrap();
        assert_eq!(outside(&store, &ws), [STATE_FILE]);
    }

    #[test]
    fn a_write_killed_between_its_records_is_never_a_false_hold() {
        let (_dir, store, ws) = setup();
        change(&store, &ws, "phase-2");
        let witness = store.witness().unwrap();
        let mut next = store.load(&ws).unwrap();
        next.current_phase = "phase-3".into();
        let bytes = store.render(&next);
        // Killed after the pending record, before the rename…
        let pending = witness.begin(&ws.name, &[Op::Write(STATE_FILE.into(), bytes.clone())]);
        drop(pending);
        assert!(outside(&store, &ws).is_empty());
        // … or after the rename, before the done record.
        std::fs::write(ws.state_file(), &bytes).unwrap();
        assert!(outside(&store, &ws).is_empty());
        // Twice in a row.
        let mut third = next.clone();
        third.current_phase = "phase-4".into();
        drop(witness.begin(
            &ws.name,
            &[Op::Write(STATE_FILE.into(), store.render(&third))],
        ));
        assert!(outside(&store, &ws).is_empty());
        // A forged live state (a file baton never wrote) goes.
        witness.command_started(&ws.name, "call_9").unwrap();
        std::fs::write(ws.dir.join(LIVE_STATE_FILE), &bytes).unwrap();
        assert_eq!(outside(&store, &ws), [LIVE_STATE_FILE]);
        change(&store, &ws, "phase-5");
        assert!(!ws.dir.join(LIVE_STATE_FILE).exists());
        assert!(outside(&store, &ws).is_empty());
    }

    #[test]
    fn the_witness_stays_small_and_keeps_what_counts() {
        let (_dir, store, ws) = setup();
        for i in 0..400 {
            change(&store, &ws, &format!("phase-{i}"));
        }
        let len = std::fs::metadata(store.witness().unwrap().path())
            .unwrap()
            .len();
        assert!(len <= LIMIT + 4096, "{len}");
        assert!(outside(&store, &ws).is_empty());
        std::fs::write(ws.state_file(), b"{}\n").unwrap();
        assert_eq!(outside(&store, &ws), [STATE_FILE]);
    }

    #[test]
    fn a_run_the_witness_never_saw_is_left_to_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let plain = StateStore::new(dir.path(), &dir.path().join(".specs"));
        let ws = plain.resolve("20260101-old").unwrap();
        let first = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "o",
            &ws.display,
            "t",
            chrono::Utc::now(),
        );
        plain.create(&ws, &first).unwrap();
        let witnessed = plain.clone().with_witness(&dir.path().join("w"));
        assert_eq!(witnessed.outside_changes(&ws).unwrap(), None);
        change(&witnessed, &ws, "phase-2");
        assert_eq!(witnessed.outside_changes(&ws).unwrap(), Some(vec![]));
    }

    /// Without a journal (`BATON_FSYNC=off`) baton's own writes are still
    /// baton's (the compare before the witness held them: every change
    /// counted); a forgery is held, and nothing can be put back.
    #[test]
    fn without_a_journal_baton_s_writes_pass_and_a_forgery_is_still_found() {
        let (_dir, store, ws) = setup_journaled(false);
        change(&store, &ws, "phase-2");
        assert!(!ws.dir.join(crate::journal::JOURNAL_FILE).exists());
        assert_eq!(outside(&store, &ws), Vec::<String>::new());
        store
            .witness()
            .unwrap()
            .command_started(&ws.name, "c")
            .unwrap();
        let mut forged = store.load(&ws).unwrap();
        forged.current_phase = "phase-6".into();
        std::fs::write(ws.state_file(), store.render(&forged)).unwrap();
        assert_eq!(outside(&store, &ws), [STATE_FILE]);
        assert_eq!(
            store.put_back_outside(&ws),
            Some(OutsideChange {
                files: vec![STATE_FILE.into()],
                put_back: false
            })
        );
    }

    #[test]
    fn inside_a_read_only_folder_the_witness_is_not_writable() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Witness::check_writable(&dir.path().join("a/b")).is_ok());
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(Witness::check_writable(&file.join("witness")).is_err());
    }
}
