//! The history file: `<specs root>/history.jsonl`, one JSON object per line.
//!
//! The first line is a header `{"baton_history":1,"generation":"…","created":"…"}`;
//! every further line is one [`RunRecord`]. Appends take an exclusive OS
//! lock on `<specs root>/.history.lock` and write one whole line; readers
//! take a shared lock, so a line without its newline is a crash, not a
//! writer at work. Rewrites (repair, reindex) go to a temp file renamed
//! over the old one, with a new generation, so other processes notice and
//! reload.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::entry::Entry;
use crate::error::HistoryError;
use crate::record::RunRecord;

/// The file name under the specs root.
pub const FILE_NAME: &str = "history.jsonl";
/// The lock file name under the specs root.
pub const LOCK_NAME: &str = ".history.lock";
/// The format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

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

/// What reading the file from some offset found.
#[derive(Debug, Default)]
pub struct Chunk {
    /// The records' in-memory parts, in file order.
    pub entries: Vec<Entry>,
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
pub struct Lock(#[allow(dead_code)] Option<File>);

impl HistoryFile {
    /// The history file's path.
    pub fn path(&self) -> PathBuf {
        self.root.join(FILE_NAME)
    }

    fn lock_file(&self) -> Option<File> {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.root.join(LOCK_NAME))
            .ok()
    }

    /// A shared lock for reading; none when the lock file cannot be made
    /// (a read-only or missing specs root: reading goes ahead unlocked).
    pub fn shared(&self) -> Lock {
        let file = self.lock_file();
        if let Some(f) = &file {
            let _ = f.lock_shared();
        }
        Lock(file)
    }

    /// An exclusive lock for writing.
    pub fn exclusive(&self) -> Result<Lock, HistoryError> {
        std::fs::create_dir_all(&self.root)
            .map_err(|e| HistoryError::io("create", &self.root, e))?;
        let path = self.root.join(LOCK_NAME);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| HistoryError::io("open lock", &path, e))?;
        file.lock()
            .map_err(|e| HistoryError::io("lock", &path, e))?;
        Ok(Lock(Some(file)))
    }

    /// Size and modification time, or `None` when there is no file.
    pub fn identity(&self) -> Option<(u64, Option<std::time::SystemTime>)> {
        let meta = std::fs::metadata(self.path()).ok()?;
        Some((meta.len(), meta.modified().ok()))
    }

    /// Reads the header (the first line). `Ok(None)`: no file.
    pub fn header(&self) -> Result<Option<HeaderRead>, HistoryError> {
        let path = self.path();
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
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

    /// Reads the records from byte `offset` to the end.
    pub fn read_from(&self, offset: u64) -> Result<Chunk, HistoryError> {
        let path = self.path();
        let mut file = File::open(&path).map_err(|e| HistoryError::io("open", &path, e))?;
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| HistoryError::io("seek", &path, e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| HistoryError::io("read", &path, e))?;
        let mut chunk = Chunk {
            end: offset,
            ..Chunk::default()
        };
        for_each_line(&bytes, |at, line| match line {
            Some(line) => {
                let start = offset + at as u64;
                chunk.end = start + line.len() as u64 + 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    return;
                }
                match crate::entry::parse_line(line, start) {
                    Some(e) => chunk.entries.push(e),
                    None => chunk.bad_lines += 1,
                }
            }
            None => chunk.torn_tail = true,
        });
        Ok(chunk)
    }

    /// The full records of lines at `(offset, length)`, in order; `None`
    /// for one that no longer parses (the file changed under us).
    pub fn read_records(&self, lines: &[(u64, u32)]) -> Vec<Option<RunRecord>> {
        let Ok(mut file) = File::open(self.path()) else {
            return vec![None; lines.len()];
        };
        let mut buf = Vec::new();
        lines
            .iter()
            .map(|(offset, len)| {
                buf.resize(*len as usize, 0);
                file.seek(SeekFrom::Start(*offset)).ok()?;
                file.read_exact(&mut buf).ok()?;
                serde_json::from_slice(&buf).ok()
            })
            .collect()
    }

    /// The lines of the file after the header that are records, verbatim.
    pub fn good_lines(&self) -> Result<Vec<Vec<u8>>, HistoryError> {
        let path = self.path();
        let bytes = std::fs::read(&path).map_err(|e| HistoryError::io("read", &path, e))?;
        let mut out = Vec::new();
        let mut first = true;
        for_each_line(&bytes, |at, line| {
            let Some(line) = line else { return };
            if std::mem::take(&mut first) {
                return;
            }
            if crate::entry::parse_line(line, at as u64).is_some() {
                out.push(line.to_vec());
            }
        });
        Ok(out)
    }

    /// Appends one record line (writing a header first when the file is new
    /// or empty). The caller holds the exclusive lock.
    pub fn append(&self, _lock: &Lock, record: &RunRecord) -> Result<(), HistoryError> {
        let path = self.path();
        let mut line =
            serde_json::to_string(record).map_err(|e| HistoryError::Encode(e.to_string()))?;
        line.push('\n');
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
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
        let mut lines = Vec::with_capacity(records.len());
        for r in records {
            lines.push(serde_json::to_vec(r).map_err(|e| HistoryError::Encode(e.to_string()))?);
        }
        self.rewrite_lines(lock, &lines)
    }

    /// Replaces the file with these record lines (each without its newline).
    pub fn rewrite_lines(&self, _lock: &Lock, lines: &[Vec<u8>]) -> Result<Header, HistoryError> {
        let header = Header::fresh();
        let mut text = header.line().into_bytes();
        for line in lines {
            text.extend_from_slice(line);
            text.push(b'\n');
        }
        let path = self.path();
        let tmp = self
            .root
            .join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
        let result = (|| {
            let mut f = File::create(&tmp).map_err(|e| HistoryError::io("create", &tmp, e))?;
            f.write_all(&text)
                .map_err(|e| HistoryError::io("write", &tmp, e))?;
            if self.durable {
                f.sync_all()
                    .map_err(|e| HistoryError::io("sync", &tmp, e))?;
            }
            std::fs::rename(&tmp, &path).map_err(|e| HistoryError::io("rename", &path, e))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        if self.durable
            && let Ok(dir) = File::open(&self.root)
        {
            let _ = dir.sync_all();
        }
        Ok(header)
    }
}

/// Calls `f(offset, Some(line))` for every newline-terminated line (without
/// the newline) and `f(offset, None)` for a last line without one.
fn for_each_line(bytes: &[u8], mut f: impl FnMut(usize, Option<&[u8]>)) {
    let mut pos = 0usize;
    while pos < bytes.len() {
        match bytes[pos..].iter().position(|b| *b == b'\n') {
            Some(nl) => {
                f(pos, Some(&bytes[pos..pos + nl]));
                pos += nl + 1;
            }
            None => {
                f(pos, None);
                break;
            }
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
