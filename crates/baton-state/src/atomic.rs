//! Writing a workspace file atomically: a new file in the same folder,
//! renamed over the old one, so a reader (locked or not) sees the old file
//! or the new one, never a mixture — and a file that was ever in place is
//! never written again. The new file is made here, or taken from the
//! syncer's spares (crate::spare) when one is ready. The temporary files
//! killed writes left behind are swept by the next server.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::store_error::StoreError;

/// Writes `bytes` to `path` atomically: temp file in `dir`, fsync, rename,
/// fsync `dir` (the fsyncs only when `durable`). The file keeps the
/// permissions of the one it replaces. Once the rename happened the write
/// has happened: a failing folder fsync after it is logged, not returned.
pub fn write_atomic(
    dir: &Path,
    path: &Path,
    bytes: &[u8],
    durable: bool,
) -> Result<(), StoreError> {
    write_atomic_as(dir, path, bytes, durable, None).map(drop)
}

/// [`write_atomic`], with the permissions the file must keep when the
/// caller knows them (it looked at the file it replaces under the same
/// lock): the temporary file is created with them, and no look and no
/// `chmod` is needed when the process's mask takes nothing from them.
/// `None`: looked up as [`write_atomic`] does. Returns the file written,
/// open (now at `path`).
pub(crate) fn write_atomic_as(
    dir: &Path,
    path: &Path,
    bytes: &[u8],
    durable: bool,
    permissions: Option<std::fs::Permissions>,
) -> Result<File, StoreError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |op: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| StoreError::Io {
            op,
            path: p,
            source,
        }
    };
    let permissions = permissions.or_else(|| crate::fs::permissions_for(path));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".state.json.").suffix(".tmp");
    // Created with its final permissions when the mask keeps them whole;
    // else created private and changed below (never wider than asked).
    let exact = permissions
        .as_ref()
        .is_some_and(|p| crate::fs::created_exactly(p.mode() & 0o7777));
    if let (true, Some(p)) = (exact, &permissions) {
        builder.permissions(p.clone());
    }
    let mut tmp = builder
        .tempfile_in(dir)
        .map_err(io("create temp file in", dir))?;
    crate::fs::reserve(tmp.as_file(), bytes.len());
    tmp.write_all(bytes).map_err(io("write", tmp.path()))?;
    if let (false, Some(permissions)) = (exact, permissions) {
        tmp.as_file()
            .set_permissions(permissions)
            .map_err(io("set permissions of", tmp.path()))?;
    }
    if durable {
        tmp.as_file().sync_data().map_err(io("fsync", tmp.path()))?;
    }
    let file = tmp.persist(path).map_err(|e| StoreError::Io {
        op: "rename onto",
        path: path.to_path_buf(),
        source: e.error,
    })?;
    if durable && let Err(e) = crate::durable::fsync_folder(dir) {
        tracing::warn!(
            "{} was written, but fsync of {} failed ({e}): the write may not survive a power loss",
            path.display(),
            dir.display()
        );
    }
    crate::fs::crash_point();
    Ok(file)
}

/// A state file written by [`write_atomic_with`]: the file, open, and its
/// device and inode when known without asking.
pub(crate) struct Written {
    /// The file, open (now at its path).
    pub file: File,
    /// Its device and inode, when known without asking.
    pub id: Option<(u64, u64)>,
}

/// [`write_atomic_as`] (not durable) into `spare`, the empty file the
/// syncer made for this write (crate::spare), when its name still holds
/// it: no file is made on the reply's path. Anything else — no spare, its
/// name removed or holding another file, a failed write — and a file is
/// made as [`write_atomic_as`] does.
pub(crate) fn write_atomic_with(
    dir: &Path,
    path: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
    spare: Option<crate::spare::Spare>,
) -> Result<Written, StoreError> {
    use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
    let Some(spare) = spare else {
        return write_atomic_as(dir, path, bytes, false, permissions)
            .map(|file| Written { file, id: None });
    };
    // One look: the name holds the very file made (`ours`), still empty.
    let look = std::fs::symlink_metadata(&spare.path).ok();
    let ours = look
        .as_ref()
        .is_some_and(|m| m.file_type().is_file() && (m.dev(), m.ino()) == spare.id);
    let intact = ours && look.as_ref().is_some_and(|m| m.len() == 0);
    let permissions = permissions.or_else(|| crate::fs::permissions_for(path));
    let wanted = permissions.as_ref().map(|p| p.mode() & 0o7777);
    // Its mode as looked at now (changed since it was made, it is set).
    let mode_now = look.as_ref().map_or(spare.mode, |m| m.mode() & 0o7777);
    let written = intact
        && {
            crate::fs::reserve(&spare.file, bytes.len());
            spare.file.write_all_at(bytes, 0).is_ok()
        }
        && wanted.is_none_or(|mode| {
            mode == mode_now
                || spare
                    .file
                    .set_permissions(std::fs::Permissions::from_mode(mode))
                    .is_ok()
        });
    if !written {
        // Baton's own file, written to by someone else: not used, removed.
        // Another file at its name is left alone.
        if ours {
            let _ = std::fs::remove_file(&spare.path);
        }
        return write_atomic_as(dir, path, bytes, false, permissions)
            .map(|file| Written { file, id: None });
    }
    if let Err(source) = std::fs::rename(&spare.path, path) {
        let _ = std::fs::remove_file(&spare.path);
        // Gone between the look and the rename (another server's sweep of
        // old spares): the change is made with a file of its own, as if
        // there had been no spare.
        if source.kind() == std::io::ErrorKind::NotFound {
            return write_atomic_as(dir, path, bytes, false, permissions)
                .map(|file| Written { file, id: None });
        }
        return Err(StoreError::Io {
            op: "rename onto",
            path: path.to_path_buf(),
            source,
        });
    }
    crate::fs::crash_point();
    Ok(Written {
        file: spare.file,
        id: Some(spare.id),
    })
}

impl crate::StateStore {
    /// Removes temporary files that killed writes left in workspace folders
    /// (`.state.json.*.tmp`), those older than `age` (a younger one may be a
    /// write in progress in another process). Returns how many went.
    pub fn sweep_temp_files(&self, age: std::time::Duration) -> usize {
        let Ok(folders) = std::fs::read_dir(self.specs_root()) else {
            return 0;
        };
        let mut removed = 0;
        for folder in folders.flatten() {
            // Real folders only: a link is never followed.
            if !folder.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            // A new run's folder made ahead by a process that is gone
            // (crate::kit): removed whole once it is as old.
            let name = folder.file_name();
            if crate::kit::is_kit_name(&name.to_string_lossy()) {
                let old = folder
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|e| e >= age);
                if old
                    && !crate::kit::is_kept(&folder.path())
                    && crate::kit::remove_dir(&folder.path())
                {
                    removed += 1;
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(folder.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let stale = name.starts_with(".state.json.")
                    && name.ends_with(".tmp")
                    && name != crate::journal::JOURNAL_FILE
                    && !crate::spare::is_kept(&entry.path())
                    && entry.metadata().is_ok_and(|m| {
                        m.is_file()
                            && m.modified()
                                .ok()
                                .and_then(|t| t.elapsed().ok())
                                .is_some_and(|e| e >= age)
                    });
                if stale && std::fs::remove_file(entry.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }
}
