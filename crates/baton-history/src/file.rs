//! The history file: `<specs root>/.history/history.jsonl`, one JSON object
//! per line.
//!
//! The first line is a header `{"baton_history":1,"generation":"…","created":"…"}`;
//! every further line is one [`RunRecord`]. Appends take an exclusive OS
//! lock on `<specs root>/.history/history.lock` and write one whole line;
//! readers take a shared lock, so a line without its newline is a crash,
//! not a writer at work. Rewrites (repair, reindex) go to a temp file
//! renamed over the old one, with a new generation, so other processes
//! notice and reload.
//!
//! The `.history` folder is baton's own: when baton creates it, it writes a
//! `.gitignore` of `*` into it, so a record appended after a run's commit
//! never shows in `git status`. Nothing in it is opened through a symbolic
//! link. A file left by an earlier version directly under the specs root
//! (`<specs root>/history.jsonl`) is moved into the folder once.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::entry::Entry;
use crate::error::HistoryError;
use crate::record::RunRecord;

/// The folder under the specs root that holds the history.
pub const DIR_NAME: &str = ".history";
/// The file name in [`DIR_NAME`].
pub const FILE_NAME: &str = "history.jsonl";
/// The lock file name in [`DIR_NAME`].
pub const LOCK_NAME: &str = "history.lock";
/// Where an earlier version kept the file: directly under the specs root.
pub const LEGACY_FILE_NAME: &str = "history.jsonl";
/// Where an earlier version kept the lock: directly under the specs root.
pub const LEGACY_LOCK_NAME: &str = ".history.lock";
/// What the folder's `.gitignore` says: ignore everything in it.
pub const IGNORE_CONTENT: &str = "*\n";
/// The format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// A history file larger than this is not read (it is rebuilt from the
/// runs' folders instead): 10,000 runs take about 20 MB.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The first line of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The format version ([`FORMAT_VERSION`]).
    pub baton_history: u32,
    /// Changes whenever the file is rewritten.
    pub generation: String,
    /// When this generation was written.
    pub created: baton_state::Timestamp,
}

impl Header {
    /// A header for a new generation.
    pub fn fresh() -> Header {
        let now = chrono::Utc::now();
        Header {
            baton_history: FORMAT_VERSION,
            generation: format!(
                "{}-{}",
                now.timestamp_nanos_opt().unwrap_or_default(),
                std::process::id()
            ),
            created: now,
        }
    }

    fn line(&self) -> String {
        // Plain data: serialising cannot fail.
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// What reading the file from some offset found (the records themselves
/// went to the caller, one at a time).
#[derive(Debug, Default)]
pub struct Chunk {
    /// Records read.
    pub records: usize,
    /// Lines that are not records.
    pub bad_lines: usize,
    /// Whether the last line had no newline (a crashed writer).
    pub torn_tail: bool,
    /// The offset after the last complete line read.
    pub end: u64,
}

/// Why the file's header cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderProblem {
    /// The file is empty.
    Empty,
    /// The first line is not a header.
    Unreadable(String),
    /// Another format version.
    Version(u64),
}

impl std::fmt::Display for HeaderProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderProblem::Empty => write!(f, "the file is empty"),
            HeaderProblem::Unreadable(why) => write!(f, "its first line is not a header ({why})"),
            HeaderProblem::Version(v) => write!(
                f,
                "it has format version {v}, this baton reads version {FORMAT_VERSION}"
            ),
        }
    }
}

/// A header and the offset of the first record, or why there is none.
pub type HeaderRead = Result<(Header, u64), HeaderProblem>;

/// Paths of the file and its lock.
#[derive(Debug, Clone)]
pub struct HistoryFile {
    /// The specs root.
    pub root: PathBuf,
    /// fsync appends and rewrites.
    pub durable: bool,
}

/// A held OS lock (released on drop).
pub struct Lock(#[allow(dead_code, reason = "held for its lock; never read")] Option<File>);

impl HistoryFile {
    /// The folder that holds the history: `<specs root>/.history`.
    pub fn dir(&self) -> PathBuf {
        self.root.join(DIR_NAME)
    }

    /// The history file's path.
    pub fn path(&self) -> PathBuf {
        self.dir().join(FILE_NAME)
    }

    /// Whether the folder exists as a real folder (not a link).
    fn dir_exists(&self) -> bool {
        std::fs::symlink_metadata(self.dir()).is_ok_and(|m| m.file_type().is_dir())
    }

    /// Creates the folder when it is missing, with its `.gitignore` (only
    /// then: a folder that exists keeps whatever it holds). Refuses a
    /// folder that is a symbolic link or not a folder.
    ///
    /// The folder appears with its ignore file or not at all
    /// ([`baton_state::fs::create_ignored_dir`]), so a process killed
    /// half-way never leaves a folder `git status` shows.
    pub fn ensure_dir(&self) -> Result<(), HistoryError> {
        let dir = self.dir();
        baton_state::fs::create_ignored_dir(&dir)
            .map(|_| ())
            .map_err(|e| HistoryError::io("create", &dir, e))
    }

    fn lock_file(&self) -> Option<File> {
        if !self.dir_exists() {
            return None;
        }
        baton_state::fs::open_regular(&self.dir().join(LOCK_NAME), false).ok()
    }

    /// A shared lock for reading; none when there is no folder yet (nothing
    /// to read) or the lock file cannot be made (a read-only specs root:
    /// reading goes ahead unlocked). Creates nothing but the lock file in
    /// an existing folder.
    pub fn shared(&self) -> Lock {
        let file = self.lock_file();
        if let Some(f) = &file {
            let _ = f.lock_shared();
        }
        Lock(file)
    }

    /// An exclusive lock for writing (the folder is created when missing).
    /// A file an earlier version left directly under the specs root is
    /// moved into the folder first, when the folder has none.
    pub fn exclusive(&self) -> Result<Lock, HistoryError> {
        self.ensure_dir()?;
        let path = self.dir().join(LOCK_NAME);
        let file = baton_state::fs::open_regular(&path, false)
            .map_err(|e| HistoryError::io("open lock", &path, e))?;
        file.lock()
            .map_err(|e| HistoryError::io("lock", &path, e))?;
        let lock = Lock(Some(file));
        self.move_legacy(&lock)?;
        Ok(lock)
    }

    /// Whether an earlier version's file waits to be moved into the folder.
    pub fn has_legacy(&self) -> bool {
        std::fs::symlink_metadata(self.root.join(LEGACY_FILE_NAME))
            .is_ok_and(|m| m.file_type().is_file())
            && std::fs::symlink_metadata(self.path()).is_err()
    }

    /// Moves `<specs root>/history.jsonl` (an earlier version's place) to
    /// the folder when the folder has no file yet; removes the old lock
    /// file. The caller holds the exclusive lock.
    fn move_legacy(&self, _lock: &Lock) -> Result<(), HistoryError> {
        if !self.has_legacy() {
            return Ok(());
        }
        let legacy = self.root.join(LEGACY_FILE_NAME);
        std::fs::rename(&legacy, self.path()).map_err(|e| HistoryError::io("move", &legacy, e))?;
        let old_lock = self.root.join(LEGACY_LOCK_NAME);
        if std::fs::symlink_metadata(&old_lock).is_ok_and(|m| m.file_type().is_file()) {
            let _ = std::fs::remove_file(&old_lock);
        }
        Ok(())
    }

    /// Size and modification time, or `None` when there is no file.
    pub fn identity(&self) -> Option<(u64, Option<std::time::SystemTime>)> {
        let meta = std::fs::symlink_metadata(self.path()).ok()?;
        Some((meta.len(), meta.modified().ok()))
    }

    /// Opens the file for reading; a path that is not a regular file (a
    /// link, a FIFO) is unreadable, never followed.
    fn open_read(&self) -> std::io::Result<File> {
        if !self.dir_exists() {
            // No folder, or a link in its place: nothing baton wrote.
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
        }
        // Opened below the specs root without following a link and without
        // blocking: a FIFO put in its place never hangs a reader.
        let relative = Path::new(DIR_NAME).join(FILE_NAME);
        baton_fs::open_beneath(&self.root, &relative, MAX_FILE_BYTES).map_err(|e| match e {
            baton_fs::UntrustedReadError::NotFound { .. } => {
                std::io::Error::from(std::io::ErrorKind::NotFound)
            }
            refused @ baton_fs::UntrustedReadError::Io { .. } => refused.into(),
            refused => std::io::Error::new(std::io::ErrorKind::InvalidInput, refused.to_string()),
        })
    }

    /// Reads the header (the first line). `Ok(None)`: no file.
    pub fn header(&self) -> Result<Option<HeaderRead>, HistoryError> {
        let path = self.path();
        let mut file = match self.open_read() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Ok(Some(Err(HeaderProblem::Unreadable(e.to_string()))));
            }
            Err(e) => return Err(HistoryError::io("open", &path, e)),
        };
        let mut buf = Vec::with_capacity(256);
        let mut chunk = [0u8; 256];
        loop {
            let n = file
                .read(&mut chunk)
                .map_err(|e| HistoryError::io("read", &path, e))?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.contains(&b'\n') || buf.len() > 64 * 1024 {
                break;
            }
        }
        if buf.is_empty() {
            return Ok(Some(Err(HeaderProblem::Empty)));
        }
        let Some(end) = buf.iter().position(|b| *b == b'\n') else {
            return Ok(Some(Err(HeaderProblem::Unreadable("no line end".into()))));
        };
        let value: serde_json::Value = match serde_json::from_slice(&buf[..end]) {
            Ok(v) => v,
            Err(e) => return Ok(Some(Err(HeaderProblem::Unreadable(e.to_string())))),
        };
        let Some(version) = value
            .get("baton_history")
            .and_then(serde_json::Value::as_u64)
        else {
            return Ok(Some(Err(HeaderProblem::Unreadable(
                "no baton_history version".into(),
            ))));
        };
        if version != u64::from(FORMAT_VERSION) {
            return Ok(Some(Err(HeaderProblem::Version(version))));
        }
        match serde_json::from_value::<Header>(value) {
            Ok(h) => Ok(Some(Ok((h, end as u64 + 1)))),
            Err(e) => Ok(Some(Err(HeaderProblem::Unreadable(e.to_string())))),
        }
    }

    /// Reads the records from byte `offset` to the end, line by line (never
    /// the whole file at once), handing each record's in-memory part and
    /// its search terms (the file's form) to `each`, in file order.
    pub fn read_from(
        &self,
        offset: u64,
        mut each: impl FnMut(Entry, &str),
    ) -> Result<Chunk, HistoryError> {
        let path = self.path();
        let mut file = self
            .open_read()
            .map_err(|e| HistoryError::io("open", &path, e))?;
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| HistoryError::io("seek", &path, e))?;
        let mut chunk = Chunk {
            end: offset,
            ..Chunk::default()
        };
        for_each_line_of(file, offset, |start, line| match line {
            Some(line) => {
                chunk.end = start + line.len() as u64 + 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    return;
                }
                match crate::entry::parse_line(line, start) {
                    Some((e, terms)) => {
                        chunk.records += 1;
                        each(e, &terms);
                    }
                    None => chunk.bad_lines += 1,
                }
            }
            None => chunk.torn_tail = true,
        })
        .map_err(|e| HistoryError::io("read", &path, e))?;
        Ok(chunk)
    }

    /// The terms (the file's form) and request of the record line at
    /// `(offset, length)`; `None` when it no longer reads as one.
    pub fn read_details(&self, offset: u64, len: u32) -> Option<(String, String)> {
        let mut file = self.open_read().ok()?;
        let mut buf = vec![0u8; len as usize];
        file.seek(SeekFrom::Start(offset)).ok()?;
        file.read_exact(&mut buf).ok()?;
        crate::entry::terms_and_request(&buf)
    }

    /// The full records of lines at `(offset, length)`, in order; `None`
    /// for one that no longer parses (the file changed under us).
    pub fn read_records(&self, lines: &[(u64, u32)]) -> Vec<Option<RunRecord>> {
        let Ok(mut file) = self.open_read() else {
            return vec![None; lines.len()];
        };
        let mut buf = Vec::new();
        lines
            .iter()
            .map(|(offset, len)| {
                buf.resize(*len as usize, 0);
                file.seek(SeekFrom::Start(*offset)).ok()?;
                file.read_exact(&mut buf).ok()?;
                // A line anyone could have written: checked, texts cleaned.
                serde_json::from_slice::<RunRecord>(&buf)
                    .ok()?
                    .checked()
                    .ok()
            })
            .collect()
    }

    /// Copies the lines of the file after the header that are records,
    /// verbatim, to `out` (each with its newline), line by line.
    fn copy_good_lines(&self, out: &mut dyn Write) -> Result<(), HistoryError> {
        let path = self.path();
        let file = self
            .open_read()
            .map_err(|e| HistoryError::io("read", &path, e))?;
        let mut first = true;
        let mut failed = None;
        for_each_line_of(file, 0, |at, line| {
            let Some(line) = line else { return };
            if std::mem::take(&mut first) || failed.is_some() {
                return;
            }
            if crate::entry::parse_line(line, at).is_some()
                && let Err(e) = out.write_all(line).and_then(|()| out.write_all(b"\n"))
            {
                failed = Some(e);
            }
        })
        .map_err(|e| HistoryError::io("read", &path, e))?;
        match failed {
            Some(e) => Err(HistoryError::io("write", &path, e)),
            None => Ok(()),
        }
    }

    /// Appends one record line (writing a header first when the file is new
    /// or empty). The caller holds the exclusive lock.
    pub fn append(&self, _lock: &Lock, record: &RunRecord) -> Result<(), HistoryError> {
        let path = self.path();
        let mut line =
            serde_json::to_string(record).map_err(|e| HistoryError::Encode(e.to_string()))?;
        line.push('\n');
        let mut file = baton_state::fs::open_regular(&path, true)
            .map_err(|e| HistoryError::io("open", &path, e))?;
        let len = file
            .metadata()
            .map_err(|e| HistoryError::io("stat", &path, e))?
            .len();
        let mut out = String::new();
        if len == 0 {
            out.push_str(&Header::fresh().line());
        } else if !ends_with_newline(&path, len) {
            // A torn last line stays one bad line instead of swallowing this one.
            out.push('\n');
        }
        out.push_str(&line);
        file.write_all(out.as_bytes())
            .map_err(|e| HistoryError::io("append", &path, e))?;
        if self.durable {
            file.sync_data()
                .map_err(|e| HistoryError::io("sync", &path, e))?;
        }
        Ok(())
    }

    /// Replaces the file with `records` under a new generation (atomic
    /// rename). The caller holds the exclusive lock. Returns the header.
    pub fn rewrite(&self, lock: &Lock, records: &[RunRecord]) -> Result<Header, HistoryError> {
        self.rewrite_each(lock, &mut records.iter().cloned())
            .map(|(h, _)| h)
    }

    /// Like [`HistoryFile::rewrite`], writing each record as it comes (a
    /// rebuild never holds them all). Returns the header and how many
    /// records were written.
    pub fn rewrite_each(
        &self,
        lock: &Lock,
        records: &mut dyn Iterator<Item = RunRecord>,
    ) -> Result<(Header, usize), HistoryError> {
        let mut written = 0;
        let header = self.rewrite_with(lock, &mut |out| {
            for r in &mut *records {
                let mut line =
                    serde_json::to_vec(&r).map_err(|e| HistoryError::Encode(e.to_string()))?;
                line.push(b'\n');
                out.write_all(&line)
                    .map_err(|e| HistoryError::io("write", Path::new(FILE_NAME), e))?;
                written += 1;
            }
            Ok(())
        })?;
        Ok((header, written))
    }

    /// Rewrites the file keeping only the lines that are records (a
    /// repair), copied line by line.
    pub fn rewrite_good_lines(&self, lock: &Lock) -> Result<Header, HistoryError> {
        self.rewrite_with(lock, &mut |out| self.copy_good_lines(out))
    }

    /// Replaces the file with a new generation whose records `body` writes
    /// after the header, through a temp file renamed over the old one.
    fn rewrite_with(
        &self,
        _lock: &Lock,
        body: &mut dyn FnMut(&mut dyn Write) -> Result<(), HistoryError>,
    ) -> Result<Header, HistoryError> {
        let header = Header::fresh();
        let path = self.path();
        let tmp = self
            .dir()
            .join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
        let result = (|| {
            // A temp file a crashed rewrite of this pid left (never a link's target).
            let _ = std::fs::remove_file(&tmp);
            let created = baton_state::fs::create_new(&tmp, header.line().as_bytes())
                .map_err(|e| HistoryError::io("create", &tmp, e))?;
            if !created {
                return Err(HistoryError::io(
                    "create",
                    &tmp,
                    std::io::Error::from(std::io::ErrorKind::AlreadyExists),
                ));
            }
            let file = baton_state::fs::open_regular(&tmp, true)
                .map_err(|e| HistoryError::io("open", &tmp, e))?;
            let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
            body(&mut out)?;
            let file = out
                .into_inner()
                .map_err(|e| HistoryError::io("write", &tmp, e.into_error()))?;
            if self.durable {
                file.sync_all()
                    .map_err(|e| HistoryError::io("sync", &tmp, e))?;
            }
            std::fs::rename(&tmp, &path).map_err(|e| HistoryError::io("rename", &path, e))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        if self.durable
            && let Ok(dir) = File::open(self.dir())
        {
            let _ = dir.sync_all();
        }
        Ok(header)
    }
}

/// Calls `f(offset, Some(line))` for every newline-terminated line of
/// `file` (without the newline; offsets count from `start`, where `file`
/// is positioned) and `f(offset, None)` for a last line without one.
/// Reads through a 64 KiB buffer, one line at a time.
fn for_each_line_of(
    file: File,
    start: u64,
    mut f: impl FnMut(u64, Option<&[u8]>),
) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    let mut at = start;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            f(at, Some(&line[..n - 1]));
        } else {
            f(at, None);
            return Ok(());
        }
        at += n as u64;
        // A huge line is not kept around for the next ones.
        if line.capacity() > 1024 * 1024 {
            line = Vec::new();
        }
    }
}

fn ends_with_newline(path: &Path, len: u64) -> bool {
    let mut byte = [0u8; 1];
    File::open(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(len - 1))?;
            f.read_exact(&mut byte)
        })
        .map(|()| byte[0] == b'\n')
        .unwrap_or(true)
}

/// Whether `dir` looks like a workspace folder (holds a `state.json`).
pub fn is_workspace(dir: &Path) -> bool {
    dir.join(baton_state::store::STATE_FILE).is_file()
}
