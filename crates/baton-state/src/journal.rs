//! The write-ahead journal of a workspace's state files: what makes a state
//! change survive a power cut with one sync, taken off the reply's path.
//!
//! Every change of `state.json` (and of the sealed run's live state, and the
//! run's `request.md`) is first appended to `<workspace>/.state.json.journal.tmp`
//! as one record — the whole new content of each file it writes, or the
//! removal of a file — and only then written to the files themselves by
//! write-to-temp + rename. Neither write is synced on the reply's path; the
//! syncer ([`crate::durable`]) makes the journal durable with one
//! `fdatasync` soon after (one per batch of changes: group commit).
//!
//! * A process killed at any moment loses nothing: the files themselves
//!   are renamed whole, and the page cache keeps every write (a record cut
//!   short by the kill is cut off by the next append).
//! * After a power cut the files may be stale (a rename that never reached
//!   the disk) or torn (renamed before their data reached it: empty, or
//!   zeros). The first access after the machine restarted — told by the
//!   kernel's boot id, which each record carries — reads the journal up to
//!   its first damaged record and puts back every file that is missing,
//!   torn, or equal to an older record's content; a file the journal does
//!   not know (edited by hand, written by another tool) is left alone.
//! * The journal only grows while a run goes on: when it passes
//!   [`CHECKPOINT_BYTES`], and when the run ends, the files themselves are
//!   synced and the journal emptied (or removed).
//!
//! The name matches the `.state.json.*.tmp` pattern every workspace's
//! `.gitignore` has listed since the first version, so workspaces made
//! before the journal existed never show it in `git status`, and the run's
//! commit never stages it.
//!
//! Record layout (little-endian):
//!
//! ```text
//! header   "BTJ1" | seq u64 | payload_len u32 | crc32 u32
//! payload  n_ops u32 | { kind u8 (1 write, 2 remove) | name_len u16 | name | [data_len u32 | data] }*
//! trailer  seq u64 | record_len u32 | boot_id [16] | "BTJE"
//! ```
//!
//! The CRC covers the payload, the boot id and the sequence number.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The journal's file name inside a workspace.
pub const JOURNAL_FILE: &str = ".state.json.journal.tmp";
/// Past this size, and past [`CHECKPOINT_RECORDS`] times its last record,
/// the journal is emptied after syncing the files it covers.
pub const CHECKPOINT_BYTES: u64 = 1024 * 1024;
/// A checkpoint (two syncs) comes at most once per this many changes, so
/// a large state costs no more than one sync and an eighth per change.
pub const CHECKPOINT_RECORDS: u64 = 16;

const HEAD_MAGIC: &[u8; 4] = b"BTJ1";
const TAIL_MAGIC: &[u8; 4] = b"BTJE";
const HEADER_LEN: usize = 4 + 8 + 4 + 4;
const TRAILER_LEN: usize = 8 + 4 + 16 + 4;
/// Largest record read back (a guard against a damaged length field).
const MAX_RECORD: u64 = 512 * 1024 * 1024;
const WRITE: u8 = 1;
const REMOVE: u8 = 2;

/// One file operation of a state change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// The file (a name inside the workspace folder) now has these bytes.
    Write(String, Vec<u8>),
    /// The file is removed.
    Remove(String),
}

impl Op {
    fn name(&self) -> &str {
        match self {
            Op::Write(n, _) | Op::Remove(n) => n,
        }
    }
}

/// The kernel's id of this boot (all zeros where there is none).
pub fn boot_id() -> [u8; 16] {
    static BOOT: OnceLock<[u8; 16]> = OnceLock::new();
    *BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .and_then(|t| parse_uuid(t.trim()))
            .unwrap_or([0; 16])
    })
}

fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let hex: Vec<u8> = text.bytes().filter(|b| *b != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

fn crc(payload: &[u8], boot: &[u8; 16], seq: u64) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(payload);
    h.update(boot);
    h.update(&seq.to_le_bytes());
    h.finalize()
}

fn encode(ops: &[Op], seq: u64, boot: &[u8; 16]) -> Vec<u8> {
    let data: usize = ops
        .iter()
        .map(|o| match o {
            Op::Write(n, b) => 1 + 2 + n.len() + 4 + b.len(),
            Op::Remove(n) => 1 + 2 + n.len(),
        })
        .sum();
    let mut payload = Vec::with_capacity(4 + data);
    payload.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for op in ops {
        match op {
            Op::Write(name, bytes) => {
                payload.push(WRITE);
                payload.extend_from_slice(&(name.len() as u16).to_le_bytes());
                payload.extend_from_slice(name.as_bytes());
                payload.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                payload.extend_from_slice(bytes);
            }
            Op::Remove(name) => {
                payload.push(REMOVE);
                payload.extend_from_slice(&(name.len() as u16).to_le_bytes());
                payload.extend_from_slice(name.as_bytes());
            }
        }
    }
    let record_len = HEADER_LEN + payload.len() + TRAILER_LEN;
    let mut out = Vec::with_capacity(record_len);
    out.extend_from_slice(HEAD_MAGIC);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc(&payload, boot, seq).to_le_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(record_len as u32).to_le_bytes());
    out.extend_from_slice(boot);
    out.extend_from_slice(TAIL_MAGIC);
    out
}

fn decode_payload(payload: &[u8]) -> Option<Vec<Op>> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = payload.get(at..at.checked_add(n)?)?;
        at += n;
        Some(s)
    };
    let count = u32::from_le_bytes(take(4)?.try_into().ok()?);
    let mut ops = Vec::new();
    for _ in 0..count {
        let kind = take(1)?[0];
        let name_len = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
        let name = std::str::from_utf8(take(name_len)?).ok()?.to_string();
        if !is_plain_name(&name) {
            return None;
        }
        match kind {
            WRITE => {
                let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
                ops.push(Op::Write(name, take(len)?.to_vec()));
            }
            REMOVE => ops.push(Op::Remove(name)),
            _ => return None,
        }
    }
    Some(ops)
}

/// A name inside the workspace folder: no separator, not `.` or `..`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its sequence number (one more than the record before it).
    pub seq: u64,
    /// The boot it was written in.
    pub boot: [u8; 16],
    /// What it did.
    pub ops: Vec<Op>,
}

/// Reads the record at `at` in `bytes`: the record and where the next one
/// starts, or `None` when it is damaged or cut short.
fn read_record(bytes: &[u8], at: usize) -> Option<(Record, usize)> {
    let head = bytes.get(at..at + HEADER_LEN)?;
    if &head[..4] != HEAD_MAGIC {
        return None;
    }
    let seq = u64::from_le_bytes(head[4..12].try_into().ok()?);
    let payload_len = u32::from_le_bytes(head[12..16].try_into().ok()?) as usize;
    let sum = u32::from_le_bytes(head[16..20].try_into().ok()?);
    let payload_at = at + HEADER_LEN;
    let payload = bytes.get(payload_at..payload_at.checked_add(payload_len)?)?;
    let tail_at = payload_at + payload_len;
    let tail = bytes.get(tail_at..tail_at + TRAILER_LEN)?;
    let tail_seq = u64::from_le_bytes(tail[..8].try_into().ok()?);
    let record_len = u32::from_le_bytes(tail[8..12].try_into().ok()?) as usize;
    let boot: [u8; 16] = tail[12..28].try_into().ok()?;
    if &tail[28..32] != TAIL_MAGIC
        || tail_seq != seq
        || record_len != HEADER_LEN + payload_len + TRAILER_LEN
        || crc(payload, &boot, seq) != sum
    {
        return None;
    }
    let ops = decode_payload(payload)?;
    Some((Record { seq, boot, ops }, tail_at + TRAILER_LEN))
}

/// Every whole record from the start of `bytes`, up to the first damaged
/// one, and the length they cover.
pub fn read_all(bytes: &[u8]) -> (Vec<Record>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some((record, next)) = read_record(bytes, at) {
        if out
            .last()
            .is_some_and(|prev: &Record| record.seq != prev.seq + 1)
        {
            break;
        }
        out.push(record);
        at = next;
    }
    (out, at)
}

/// What this process knows of a journal's end: the file, its length, the
/// last record's sequence number. While the file is as this process left
/// it, the next append needs no reading, and no opening: the file is kept
/// open, so its inode number cannot be given to another file while the
/// process knows it (a path naming that number names that file).
#[derive(Debug, Clone)]
struct Tail {
    file: std::sync::Arc<File>,
    dev: u64,
    ino: u64,
    len: u64,
    seq: u64,
}

/// How many journals this process keeps open (a long-lived server touches
/// few runs at a time; one it no longer knows is opened again).
const KEPT_TAILS: usize = 16;

fn tails() -> &'static Mutex<HashMap<PathBuf, Tail>> {
    static TAILS: OnceLock<Mutex<HashMap<PathBuf, Tail>>> = OnceLock::new();
    TAILS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The journal did not exist before (its folder entry is new).
    pub created: bool,
    /// The journal's length after the record.
    pub len: u64,
    /// The record's length.
    pub record: u64,
}

/// Whether the journal has grown enough to be emptied
/// ([`CHECKPOINT_BYTES`], [`CHECKPOINT_RECORDS`]).
pub fn wants_checkpoint(appended: Appended) -> bool {
    appended.len > CHECKPOINT_BYTES.max(CHECKPOINT_RECORDS * appended.record)
}

/// Appends one record of `ops` to the journal in `dir`. The caller holds
/// the workspace lock. Nothing is synced here.
pub fn append(dir: &Path, ops: &[Op]) -> std::io::Result<Appended> {
    append_as(dir, ops, &boot_id())
}

fn append_as(dir: &Path, ops: &[Op], boot: &[u8; 16]) -> std::io::Result<Appended> {
    use std::os::unix::fs::MetadataExt;
    let path = dir.join(JOURNAL_FILE);
    let known = lock(tails()).get(&path).cloned();
    // The journal as this process left it: the path still names the file
    // it holds open, at the length it left. One look, no open.
    if let Some(t) = known
        && std::fs::symlink_metadata(&path).is_ok_and(|m| {
            m.file_type().is_file() && m.dev() == t.dev && m.ino() == t.ino && m.len() == t.len
        })
    {
        return write_record(
            path,
            t.file,
            (t.dev, t.ino),
            (t.len, t.seq),
            ops,
            boot,
            false,
        );
    }
    let existed = std::fs::symlink_metadata(&path).is_ok();
    let (file, meta) = crate::fs::open_regular_meta(&path, false)?;
    let (dev, ino, len) = (meta.dev(), meta.ino(), meta.len());
    // The end of the journal and its last sequence number: read (the last
    // record, or the whole file when that one is damaged: a kill cut it
    // short).
    let (end, seq) = if len == 0 {
        (0, 0)
    } else {
        let (end, seq) = last_good(&file, len)?;
        if end < len {
            file.set_len(end)?;
        }
        (end, seq)
    };
    write_record(
        path,
        std::sync::Arc::new(file),
        (dev, ino),
        (end, seq),
        ops,
        boot,
        !existed,
    )
}

/// Writes the record of `ops` at `end` of the journal `file` (at `path`),
/// after record `seq`, and remembers the new end.
fn write_record(
    path: PathBuf,
    file: std::sync::Arc<File>,
    (dev, ino): (u64, u64),
    (end, seq): (u64, u64),
    ops: &[Op],
    boot: &[u8; 16],
    created: bool,
) -> std::io::Result<Appended> {
    let record = encode(ops, seq + 1, boot);
    file.write_all_at(&record, end)?;
    let new_len = end + record.len() as u64;
    let mut tails = lock(tails());
    if tails.len() >= KEPT_TAILS && !tails.contains_key(&path) {
        // Another journal goes (closed); it is opened again when needed.
        if let Some(other) = tails.keys().next().cloned() {
            tails.remove(&other);
        }
    }
    tails.insert(
        path,
        Tail {
            file,
            dev,
            ino,
            len: new_len,
            seq: seq + 1,
        },
    );
    Ok(Appended {
        created,
        len: new_len,
        record: record.len() as u64,
    })
}

/// The end of the last whole record and its sequence number.
fn last_good(file: &File, len: u64) -> std::io::Result<(u64, u64)> {
    if len >= TRAILER_LEN as u64 {
        let mut tail = [0u8; TRAILER_LEN];
        file.read_exact_at(&mut tail, len - TRAILER_LEN as u64)?;
        let record_len = u64::from(u32::from_le_bytes(
            tail[8..12].try_into().unwrap_or_default(),
        ));
        if &tail[28..32] == TAIL_MAGIC && record_len <= len && record_len <= MAX_RECORD {
            let start = len - record_len;
            let mut bytes = vec![0u8; record_len as usize];
            file.read_exact_at(&mut bytes, start)?;
            if let Some((record, _)) = read_record(&bytes, 0) {
                return Ok((len, record.seq));
            }
        }
    }
    let bytes = read_bounded(file, len)?;
    let (records, end) = read_all(&bytes);
    Ok((end as u64, records.last().map_or(0, |r| r.seq)))
}

fn read_bounded(file: &File, len: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(len.min(MAX_RECORD) as usize);
    file.take(MAX_RECORD).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether the journal in `dir` was last written in another boot (or its
/// end is damaged): the files it covers must then be checked against it.
/// A missing or empty journal needs nothing.
pub fn written_in_another_boot(dir: &Path) -> bool {
    written_in_another_boot_than(dir, &boot_id())
}

fn written_in_another_boot_than(dir: &Path, boot: &[u8; 16]) -> bool {
    let Ok(file) = File::open(dir.join(JOURNAL_FILE)) else {
        return false;
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return false;
    };
    if len == 0 {
        return false;
    }
    if len < TRAILER_LEN as u64 {
        return true;
    }
    let mut tail = [0u8; TRAILER_LEN];
    if file
        .read_exact_at(&mut tail, len - TRAILER_LEN as u64)
        .is_err()
    {
        return true;
    }
    &tail[28..32] != TAIL_MAGIC || tail[12..28] != boot[..]
}

/// What a recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Files written back from the journal.
    pub restored: Vec<String>,
    /// Files removed (their removal had not reached the disk).
    pub removed: Vec<String>,
}

/// After a power cut: puts back each file the journal in `dir` covers that
/// is missing, torn (empty, zeros, not JSON where JSON is expected) or
/// equal to an older record's content, syncs what it wrote, and empties
/// the journal. The caller holds the workspace lock.
pub fn recover(dir: &Path) -> std::io::Result<Recovered> {
    recover_accepted(dir, &|_, _| true)
}

/// [`recover`], putting back only what `accept` vouches for: a file's
/// name and the content the journal's newest record gives it (`None`: its
/// removal). The journal lies in the workspace, where a program the agent
/// runs may write it (under Codex): the store accepts only what its
/// witness recorded (crate::witness), so a made-up journal — a record with
/// another boot's id, to be "recovered" — puts nothing back.
pub fn recover_accepted(
    dir: &Path,
    accept: &dyn Fn(&str, Option<&[u8]>) -> bool,
) -> std::io::Result<Recovered> {
    let path = dir.join(JOURNAL_FILE);
    let file = match crate::fs::open_regular(&path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Recovered::default()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let bytes = read_bounded(&file, len)?;
    let (records, _) = read_all(&bytes);
    let mut out = Recovered::default();
    // Per file: every content the journal gave it, oldest first, and what
    // the newest record says.
    let mut history: HashMap<&str, Vec<&Op>> = HashMap::new();
    for r in &records {
        for op in &r.ops {
            history.entry(op.name()).or_default().push(op);
        }
    }
    let mut touched = false;
    let mut names: Vec<&&str> = history.keys().collect();
    names.sort();
    for name in names {
        let ops = &history[*name];
        let Some((newest, older)) = ops.split_last() else {
            continue;
        };
        let target = dir.join(name);
        let current = match std::fs::symlink_metadata(&target) {
            Ok(m) if m.file_type().is_file() => std::fs::read(&target).ok(),
            Ok(_) => continue, // not a regular file: never replaced
            Err(_) => None,
        };
        let known_older = |bytes: &[u8]| {
            older
                .iter()
                .any(|op| matches!(op, Op::Write(_, b) if b == bytes))
        };
        let vouched = match newest {
            Op::Write(_, want) => accept(name, Some(want)),
            Op::Remove(_) => accept(name, None),
        };
        if !vouched {
            tracing::warn!(
                "{}: the journal's last record of {name} is not what baton wrote (its witness does not have it): not put back",
                dir.display()
            );
            continue;
        }
        match newest {
            Op::Write(_, want) => {
                let restore = match &current {
                    None => true,
                    Some(have) if have == want => false,
                    Some(have) => torn(name, have) || known_older(have),
                };
                if restore {
                    crate::store::write_atomic(dir, &target, want, false)
                        .map_err(std::io::Error::other)?;
                    File::open(&target)?.sync_data()?;
                    out.restored.push(name.to_string());
                    touched = true;
                }
            }
            Op::Remove(_) => {
                if let Some(have) = &current
                    && (torn(name, have) || known_older(have))
                {
                    std::fs::remove_file(&target)?;
                    out.removed.push(name.to_string());
                    touched = true;
                }
            }
        }
    }
    if touched {
        File::open(dir)?.sync_all()?;
    }
    // The files are on disk as the journal says: it is not needed any more.
    file.set_len(0)?;
    lock(tails()).remove(&path);
    Ok(out)
}

/// Whether `bytes` cannot be what baton wrote to `name`: empty, holding a
/// NUL byte (blocks a power cut left unwritten read as zeros), or, for a
/// JSON file, not JSON.
fn torn(name: &str, bytes: &[u8]) -> bool {
    bytes.is_empty()
        || bytes.contains(&0)
        || (name.ends_with(".json")
            && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err())
}

/// Forgets what this process knew of the journal in `dir` (it was emptied
/// or removed).
pub fn forget(dir: &Path) {
    lock(tails()).remove(&dir.join(JOURNAL_FILE));
}

/// Workspaces this process has checked since it started (their journals
/// are current, or were recovered).
pub fn checked() -> &'static Mutex<HashSet<PathBuf>> {
    static CHECKED: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    CHECKED.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Rewrites the journal in `dir` as if it had been written before the
/// machine restarted, and forgets that this process checked it (tests).
#[cfg(test)]
pub(crate) fn as_if_restarted(dir: &Path) {
    let path = dir.join(JOURNAL_FILE);
    let (records, _) = read_all(&std::fs::read(&path).unwrap());
    let mut bytes = Vec::new();
    for r in records {
        bytes.extend(encode(&r.ops, r.seq, &[9; 16]));
    }
    std::fs::write(&path, bytes).unwrap();
    forget(dir);
    lock(checked()).remove(dir);
}

/// Writes `bytes` to a new file (for tests that fake a torn file).
#[cfg(test)]
fn put(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = File::create(path).unwrap();
    f.write_all(bytes).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    const OTHER_BOOT: [u8; 16] = [7; 16];

    fn write(name: &str, text: &str) -> Op {
        Op::Write(name.into(), text.as_bytes().to_vec())
    }

    #[test]
    fn records_round_trip_and_a_cut_record_ends_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), &[write("state.json", "{\"v\":1}")]).unwrap();
        append(
            dir.path(),
            &[
                write("state.json", "{\"v\":2}"),
                Op::Remove(".state.live.json".into()),
            ],
        )
        .unwrap();
        let bytes = std::fs::read(dir.path().join(JOURNAL_FILE)).unwrap();
        let (records, end) = read_all(&bytes);
        assert_eq!(end, bytes.len());
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].seq, 2);
        assert_eq!(records[1].ops[1], Op::Remove(".state.live.json".into()));
        assert_eq!(records[0].boot, boot_id());
        // Any cut inside the second record leaves exactly the first.
        let first_end = {
            let (_, next) = read_record(&bytes, 0).unwrap();
            next
        };
        for cut in [first_end + 1, first_end + HEADER_LEN + 3, bytes.len() - 1] {
            let (records, end) = read_all(&bytes[..cut]);
            assert_eq!(records.len(), 1, "cut at {cut}");
            assert_eq!(end, first_end);
        }
        // A flipped byte in the payload is caught by the CRC.
        let mut flipped = bytes.clone();
        flipped[first_end + HEADER_LEN + 10] ^= 0x40;
        assert_eq!(read_all(&flipped).0.len(), 1);
    }

    #[test]
    fn an_append_after_a_kill_cuts_the_broken_end_off_first() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), &[write("state.json", "{\"v\":1}")]).unwrap();
        append(dir.path(), &[write("state.json", "{\"v\":2}")]).unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let whole = std::fs::read(&path).unwrap();
        // Another process was killed while appending its record: half of it.
        std::fs::write(&path, &whole[..whole.len() - 20]).unwrap();
        forget(dir.path());
        append(dir.path(), &[write("state.json", "{\"v\":3}")]).unwrap();
        let (records, end) = read_all(&std::fs::read(&path).unwrap());
        assert_eq!(end as u64, std::fs::metadata(&path).unwrap().len());
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [1, 2]);
        assert_eq!(records[1].ops, [write("state.json", "{\"v\":3}")]);
    }

    #[test]
    fn another_process_appending_is_seen_by_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), &[write("state.json", "{\"v\":1}")]).unwrap();
        // Another process appends (this one's knowledge of the end is stale).
        let path = dir.path().join(JOURNAL_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(encode(&[write("state.json", "{\"v\":2}")], 2, &boot_id()));
        std::fs::write(&path, &bytes).unwrap();
        append(dir.path(), &[write("state.json", "{\"v\":3}")]).unwrap();
        let (records, _) = read_all(&std::fs::read(&path).unwrap());
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn the_boot_id_tells_when_a_check_is_needed() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!written_in_another_boot(dir.path()), "no journal");
        append(dir.path(), &[write("state.json", "{}")]).unwrap();
        assert!(!written_in_another_boot(dir.path()));
        assert!(written_in_another_boot_than(dir.path(), &OTHER_BOOT));
        assert_eq!(
            parse_uuid("0f3ac0de-21c4-4b53-9a0e-51c3c2a7f0b1").unwrap()[0],
            0x0f
        );
        assert!(parse_uuid("nonsense").is_none());
    }

    /// A power cut after three changes of which only some reached the disk.
    fn journal_of_three(dir: &Path) {
        for v in 1..=3 {
            append_as(
                dir,
                &[write("state.json", &format!("{{\"v\":{v}}}\n"))],
                &OTHER_BOOT,
            )
            .unwrap();
        }
    }

    #[test]
    fn a_torn_or_missing_state_is_put_back_from_the_newest_record() {
        for on_disk in [
            Some(&b""[..]),
            Some(&b"\0\0\0\0\0\0"[..]),
            Some(&b"{\"v\":3"[..]),
            None,
        ] {
            let dir = tempfile::tempdir().unwrap();
            journal_of_three(dir.path());
            let state = dir.path().join("state.json");
            if let Some(bytes) = on_disk {
                put(&state, bytes);
            }
            assert!(written_in_another_boot(dir.path()));
            let r = recover(dir.path()).unwrap();
            assert_eq!(r.restored, ["state.json"], "{on_disk:?}");
            assert_eq!(std::fs::read_to_string(&state).unwrap(), "{\"v\":3}\n");
            assert_eq!(
                std::fs::metadata(dir.path().join(JOURNAL_FILE))
                    .unwrap()
                    .len(),
                0,
                "emptied"
            );
            assert!(!written_in_another_boot(dir.path()));
        }
    }

    #[test]
    fn a_stale_state_is_rolled_forward_and_an_unknown_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        journal_of_three(dir.path());
        let state = dir.path().join("state.json");
        // The last rename never reached the disk: the file is record 2's.
        put(&state, b"{\"v\":2}\n");
        assert_eq!(recover(dir.path()).unwrap().restored, ["state.json"]);
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "{\"v\":3}\n");

        // A file the journal never wrote (a person's edit) stays.
        let dir = tempfile::tempdir().unwrap();
        journal_of_three(dir.path());
        let state = dir.path().join("state.json");
        put(&state, b"{\"edited\":true}\n");
        assert_eq!(recover(dir.path()).unwrap(), Recovered::default());
        assert_eq!(
            std::fs::read_to_string(&state).unwrap(),
            "{\"edited\":true}\n"
        );
    }

    #[test]
    fn a_removal_that_did_not_reach_the_disk_is_done_again() {
        let dir = tempfile::tempdir().unwrap();
        let live = ".state.live.json";
        append_as(
            dir.path(),
            &[
                write(live, "{\"live\":1}"),
                write("state.json", "{\"final\":1}"),
            ],
            &OTHER_BOOT,
        )
        .unwrap();
        append_as(dir.path(), &[Op::Remove(live.into())], &OTHER_BOOT).unwrap();
        put(&dir.path().join(live), b"{\"live\":1}");
        put(&dir.path().join("state.json"), b"{\"final\":1}");
        let r = recover(dir.path()).unwrap();
        assert_eq!(r.removed, [live]);
        assert!(r.restored.is_empty());
        assert!(!dir.path().join(live).exists());
    }

    #[test]
    fn a_damaged_record_ends_what_recovery_believes() {
        let dir = tempfile::tempdir().unwrap();
        journal_of_three(dir.path());
        let path = dir.path().join(JOURNAL_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 40] ^= 0xff; // inside record 3's payload
        std::fs::write(&path, &bytes).unwrap();
        put(&dir.path().join("state.json"), b"");
        recover(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("state.json")).unwrap(),
            "{\"v\":2}\n"
        );
    }

    #[test]
    fn names_that_leave_the_folder_are_refused() {
        let bytes = encode(&[write("../x", "{}")], 1, &boot_id());
        assert!(read_all(&bytes).0.is_empty());
        assert!(is_plain_name("state.json"));
        assert!(!is_plain_name("a/b") && !is_plain_name("..") && !is_plain_name(""));
    }
}
