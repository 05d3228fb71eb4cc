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
        let tag = match self.parsed.tag(&path, &bytes) {
            Some(tag) => tag,
            None => {
                let tag = self.witnessed(ws, &path, &bytes, self.check_bytes(&bytes));
                self.parsed.keep_tag(&path, &bytes, tag);
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
    /// Checked once per new content (the result is kept with the bytes).
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
        let path = if self.is_sealed(ws) {
            ws.dir.join(LIVE_STATE_FILE)
        } else {
            ws.state_file()
        };
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    path: ws.dir.clone(),
                });
            }
            Err(source) => {
                return Err(StoreError::Io {
                    op: "read",
                    path,
                    source,
                });
            }
        };
        if !meta.file_type().is_file() {
            return Err(StoreError::Corrupt {
                reason: format!("it is {}, not a regular file", crate::fs::kind_of(&meta)),
                path,
            });
        }
        if meta.len() > MAX_STATE_BYTES {
            return Err(StoreError::Corrupt {
                path,
                reason: format!("larger than {MAX_STATE_BYTES} bytes"),
            });
        }
        let bytes = std::fs::read(&path).map_err(|source| StoreError::Io {
            op: "read",
            path: path.clone(),
            source,
        })?;
        Ok((path, bytes))
    }

    /// The state in `bytes` read from `path`.
    fn parse(&self, path: &Path, bytes: &[u8]) -> Result<WorkspaceState, StoreError> {
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
