//! Reading a workspace's state: the file baton reads for it (the live
//! state of a sealed run, else `state.json`), read whole, parsed once per
//! distinct bytes and its integrity tag checked once per distinct bytes
//! ([`crate::parsed`], [`crate::integrity`]). No lock: a reader sees either
//! the old or the new file, never a partial one, because writes are renames.

use std::path::{Path, PathBuf};

use crate::integrity::TagCheck;
use crate::schema::{SchemaError, WorkspaceState};
use crate::store::{LIVE_STATE_FILE, MAX_STATE_BYTES, StateStore, StoreError, WorkspaceRef};

impl StateStore {
    /// Reads and migrates `state.json` (no lock: a reader sees either the old
    /// or the new file, never a partial one, because writes are renames).
    /// The first read of a workspace in a process after the machine
    /// restarted checks its files against the journal first (under the lock).
    pub fn load(&self, ws: &WorkspaceRef) -> Result<WorkspaceState, StoreError> {
        self.recover_if_needed(ws, None)?;
        self.read(ws)
    }

    /// Like [`StateStore::load`], with what the state file's integrity tag
    /// says about the very bytes the state was read from
    /// ([`crate::integrity::check_text`]; unknown without a signer). The
    /// check of bytes this store wrote or checked before is not computed
    /// again: any other byte, and it is.
    pub fn load_checked(
        &self,
        ws: &WorkspaceRef,
    ) -> Result<(WorkspaceState, crate::integrity::TagCheck), StoreError> {
        self.recover_if_needed(ws, None)?;
        let (path, bytes) = self.read_bytes(ws)?;
        let state = self.parse(&path, &bytes)?;
        // A check kept as intact holds while the witness is unchanged: a
        // record another process added since (a newer write of baton's)
        // may make these very bytes an older state, put back by someone
        // else (a rollback to what this process last wrote or read).
        let now = || self.witness.as_ref().and_then(|w| w.stamp());
        let tag = match self.parsed.tag(&path, &bytes) {
            Some((tag, kept))
                if tag != TagCheck::Intact || self.witness.is_none() || kept == now() =>
            {
                tag
            }
            _ => {
                let stamp = now();
                let tag = self.witnessed(ws, &path, &bytes, self.check_bytes(&bytes));
                self.parsed.keep_tag(&path, &bytes, tag, stamp);
                tag
            }
        };
        Ok((state, tag))
    }

    /// A tag that matches is not enough where the witness knows the run:
    /// bytes this process did not write, tagged with the key, that are not
    /// what baton last wrote (crate::witness) were written by a program
    /// that read the key — under Codex, which reads everywhere, one the
    /// agent ran — and count as changed outside baton, like a hand edit.
    /// Checked once per new content (the result is kept with the bytes,
    /// and an intact one taken again only while the witness is unchanged).
    fn witnessed(&self, ws: &WorkspaceRef, path: &Path, bytes: &[u8], tag: TagCheck) -> TagCheck {
        if tag != TagCheck::Intact {
            return tag;
        }
        let (Some(witness), Some(name)) = (
            self.witness.as_ref(),
            path.file_name().and_then(|n| n.to_str()),
        ) else {
            return tag;
        };
        match witness.verdict(&ws.name, name, Some(bytes), |_, _| true) {
            crate::witness::Verdict::Outside { .. } => TagCheck::Changed,
            crate::witness::Verdict::Baton | crate::witness::Verdict::Unknown => tag,
        }
    }

    pub(crate) fn read(&self, ws: &WorkspaceRef) -> Result<WorkspaceState, StoreError> {
        let (path, bytes) = self.read_bytes(ws)?;
        self.parse(&path, &bytes)
    }

    /// The bytes of the state file baton reads for `ws`, and its path.
    fn read_bytes(&self, ws: &WorkspaceRef) -> Result<(PathBuf, Vec<u8>), StoreError> {
        // A sealed run's live state is the authority until the run ends.
        let read = self.read_state_file(ws, self.is_sealed(ws))?;
        Ok((read.path, read.bytes))
    }

    /// Reads the state file of `ws` — the live state when `sealed` (the
    /// caller looked), else `state.json` — whole, never through a link,
    /// never blocking on a FIFO, nothing but a regular file.
    ///
    /// The file read last at that path is kept open ([`crate::parsed::Held`]):
    /// when one look at the path shows it still names that file, its
    /// content is read from it (one `pread`) instead of opening the path
    /// again. Either way the bytes are the file's content now: a file
    /// changed behind baton's back, in place or replaced, is read as it is.
    pub(crate) fn read_state_file(
        &self,
        ws: &WorkspaceRef,
        sealed: bool,
    ) -> Result<StateRead, StoreError> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let path = if sealed {
            ws.dir.join(LIVE_STATE_FILE)
        } else {
            ws.state_file()
        };
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io {
                op: "read",
                path,
                source,
            }
        };
        let too_large = |path: &Path| StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("larger than {MAX_STATE_BYTES} bytes"),
        };
        if let Some(held) = self.parsed.held(&path)
            && let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.file_type().is_file()
            && (meta.dev(), meta.ino()) == (held.dev, held.ino)
        {
            if meta.len() > MAX_STATE_BYTES {
                return Err(too_large(&path));
            }
            let bytes = read_whole_at(&held.file, meta.len(), MAX_STATE_BYTES)
                .map_err(io(&path))?
                .ok_or_else(|| too_large(&path))?;
            return Ok(StateRead {
                path,
                bytes,
                mode: meta.mode(),
            });
        }
        let not_regular = |path: &Path, what: &str| StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("it is {what}, not a regular file"),
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                _ if e.kind() == std::io::ErrorKind::NotFound => StoreError::NotFound {
                    path: ws.dir.clone(),
                },
                Some(libc::ELOOP) => not_regular(&path, "a symbolic link"),
                // A socket: say what it is.
                Some(libc::ENXIO) => match std::fs::symlink_metadata(&path) {
                    Ok(meta) => not_regular(&path, crate::fs::kind_of(&meta)),
                    Err(_) => io(&path)(e),
                },
                _ => io(&path)(e),
            })?;
        let meta = file.metadata().map_err(io(&path))?;
        if !meta.file_type().is_file() {
            return Err(not_regular(&path, crate::fs::kind_of(&meta)));
        }
        if meta.len() > MAX_STATE_BYTES {
            return Err(too_large(&path));
        }
        let bytes = read_whole_at(&file, meta.len(), MAX_STATE_BYTES)
            .map_err(io(&path))?
            .ok_or_else(|| too_large(&path))?;
        // A file no longer kept is closed here (a read after a change made
        // elsewhere: rare).
        drop(self.parsed.hold(crate::parsed::Held {
            path: path.clone(),
            file: std::sync::Arc::new(file),
            dev: meta.dev(),
            ino: meta.ino(),
        }));
        Ok(StateRead {
            path,
            bytes,
            mode: meta.mode(),
        })
    }

    /// The state in `bytes` read from `path`.
    /// Keeps `state`, just rendered into `bytes` and written to `path`, as
    /// the parse of those bytes: the next read of the same bytes (the next
    /// call's) does not parse them again. Rendering and parsing are exact
    /// inverses for a state of this version; debug builds (every test)
    /// check it on each write.
    pub(crate) fn keep_written(&self, path: &Path, bytes: &[u8], state: &WorkspaceState) {
        debug_assert_eq!(
            std::str::from_utf8(bytes)
                .ok()
                .and_then(|t| WorkspaceState::from_json(t).ok())
                .as_ref(),
            Some(state),
            "a state written does not parse back to itself"
        );
        self.parsed.keep(path, bytes, state);
    }

    pub(crate) fn parse(&self, path: &Path, bytes: &[u8]) -> Result<WorkspaceState, StoreError> {
        // Read more than once per call: the same bytes are not parsed again.
        if let Some(state) = self.parsed.get(path, bytes) {
            return Ok(state);
        }
        let text = std::str::from_utf8(bytes).map_err(|e| StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("not UTF-8 text ({e})"),
        })?;
        let state = WorkspaceState::from_json(text).map_err(|e| match e {
            SchemaError::Malformed(reason) => StoreError::Corrupt {
                path: path.to_path_buf(),
                reason,
            },
            too_new @ SchemaError::TooNew(_) => StoreError::UnsupportedVersion {
                path: path.to_path_buf(),
                reason: too_new.to_string(),
            },
        })?;
        self.parsed.keep(path, bytes, &state);
        Ok(state)
    }
}

/// The state file among `ops` written from the changed state itself (when
/// `sealing`, the live state; `state.json` then gets the final form), with
/// its bytes: what [`StateStore::keep_written`] keeps.
pub(crate) fn written_from_state(
    ws: &crate::WorkspaceRef,
    ops: &[crate::journal::Op],
    sealing: bool,
) -> Option<(PathBuf, Vec<u8>)> {
    use crate::store::{LIVE_STATE_FILE, STATE_FILE};
    ops.iter().find_map(|op| match op {
        crate::journal::Op::Write(n, bytes)
            if n == LIVE_STATE_FILE || (n == STATE_FILE && !sealing) =>
        {
            Some((ws.dir.join(n), bytes.clone()))
        }
        _ => None,
    })
}

/// A state file as read: its path, its bytes and its mode.
pub(crate) struct StateRead {
    /// The file read.
    pub path: PathBuf,
    /// Its whole content.
    pub bytes: Vec<u8>,
    /// Its mode (type and permissions), as the read found it.
    pub mode: u32,
}

/// The whole content of `file`, `len` bytes long when looked at: one
/// `pread` when it still is (a regular file's read comes back short only
/// at its end), more when it grew. `None` when it holds more than `max`.
fn read_whole_at(file: &std::fs::File, len: u64, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    let cap = |n: u64| usize::try_from(n.min(max.saturating_add(1))).unwrap_or(usize::MAX);
    let mut buf = vec![0u8; cap(len.saturating_add(1))];
    let mut at = 0usize;
    loop {
        let n = match file.read_at(&mut buf[at..], at as u64) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        at += n;
        if at < buf.len() {
            if at as u64 == len {
                break;
            }
            continue;
        }
        // Full: the file grew since it was looked at.
        if at as u64 > max {
            return Ok(None);
        }
        let grown = cap((buf.len() as u64).saturating_mul(2));
        buf.resize(grown, 0);
    }
    buf.truncate(at);
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use crate::PhaseStatus;
    use crate::store::StateStore;

    fn setup() -> (tempfile::TempDir, StateStore, crate::WorkspaceRef) {
        let dir = tempfile::tempdir().unwrap();
        let (store, ws) = crate::testing::created_run(dir.path(), "20260101-held", false);
        (dir, store, ws)
    }

    #[test]
    fn a_file_kept_open_is_read_as_it_is_now_changed_in_place_or_replaced() {
        let (_dir, store, ws) = setup();
        assert_eq!(store.load(&ws).unwrap().current_phase, "phase-1");
        assert!(store.parsed.held(&ws.state_file()).is_some(), "kept open");
        // Changed in place (the same inode the store holds open).
        let text = std::fs::read_to_string(ws.state_file()).unwrap();
        let edited = text.replace("\"phase-1\"", "\"phase-9\"");
        assert_ne!(text, edited);
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(ws.state_file())
                .unwrap();
            f.write_all(edited.as_bytes()).unwrap();
        }
        assert_eq!(store.load(&ws).unwrap().current_phase, "phase-9");
        // Cut short in place: read as it is, never as the kept bytes.
        std::fs::OpenOptions::new()
            .write(true)
            .open(ws.state_file())
            .unwrap()
            .set_len(10)
            .unwrap();
        assert!(matches!(
            store.load(&ws),
            Err(crate::StoreError::Corrupt { .. })
        ));
        // Grown in place past what was looked at: read whole.
        let padded = format!("{text}{}", " ".repeat(100_000));
        std::fs::write(ws.state_file(), &padded).unwrap();
        assert_eq!(store.load(&ws).unwrap().current_phase, "phase-1");
        // Replaced by another file.
        let tmp = ws.dir.join("other");
        std::fs::write(&tmp, &edited).unwrap();
        std::fs::rename(&tmp, ws.state_file()).unwrap();
        assert_eq!(store.load(&ws).unwrap().current_phase, "phase-9");
        // Replaced by a link or a FIFO: refused, never followed or waited on.
        let elsewhere = ws.dir.join("elsewhere.json");
        std::fs::write(&elsewhere, &text).unwrap();
        std::fs::remove_file(ws.state_file()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, ws.state_file()).unwrap();
        let e = store.load(&ws).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        std::fs::remove_file(ws.state_file()).unwrap();
        let c = std::ffi::CString::new(ws.state_file().to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = store.load(&ws).unwrap_err();
        assert!(e.to_string().contains("special file"), "{e}");
        // Gone: not found.
        std::fs::remove_file(ws.state_file()).unwrap();
        assert!(matches!(
            store.load(&ws),
            Err(crate::StoreError::NotFound { .. })
        ));
    }

    #[test]
    fn a_rewritten_state_keeps_the_permissions_of_the_one_it_replaces() {
        let (_dir, store, ws) = setup();
        let mode = || {
            std::fs::metadata(ws.state_file())
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        for wanted in [0o600, 0o640, 0o664, 0o644] {
            std::fs::set_permissions(ws.state_file(), std::fs::Permissions::from_mode(wanted))
                .unwrap();
            // Read before (the open file is kept) and under the lock.
            store.load(&ws).unwrap();
            store
                .update(&ws, chrono::Utc::now(), |s| {
                    s.current_phase_status = PhaseStatus::InProgress;
                    Ok::<_, ()>(())
                })
                .unwrap();
            assert_eq!(mode(), wanted, "{wanted:o}");
        }
    }
}
