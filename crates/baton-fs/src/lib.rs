//! # baton-fs
//!
//! What every crate of baton that writes into a repository needs so that a
//! process killed at any moment leaves nothing half-made that `git status`
//! would show, and so that the repository's own contents cannot lead a
//! write elsewhere:
//!
//! * [`create_new`] — a new file, never through a link, never replacing
//!   anything;
//! * [`create_new_whole`] — the same, appearing with its whole content or
//!   not at all;
//! * [`create_ignored_dir`] — one of baton's own folders together with its
//!   `.gitignore` of `*`, both or neither;
//! * [`open_beneath`], [`read_beneath`], [`read_string_beneath`] (and the
//!   `_nofollow` readers) — reading a file whose content baton does not own
//!   (a past run's files, hand-editable records): no link followed below a
//!   root, nothing but a regular file opened and never a blocking open, a
//!   size limit; a typed [`UntrustedReadError`] says which refusal it was.
//!
//! A leaf crate: it knows no other baton crate.

#![warn(missing_docs)]

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

mod untrusted;

pub use untrusted::{
    EntryKind, UntrustedReadError, is_folder_beneath, open_beneath, read_beneath,
    read_file_nofollow, read_string_beneath, read_string_nofollow,
};

/// Open options that never follow a symbolic link at the last component
/// and never block on a FIFO.
fn safe(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
}

/// Creates `path` with `content` only if nothing (not even a dangling link)
/// is there yet. Returns whether it was created.
pub fn create_new(path: &Path, content: &[u8]) -> std::io::Result<bool> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    match safe(&mut options).open(path) {
        Ok(mut f) => {
            f.write_all(content)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Like [`create_new`], but the file appears with its whole content or not
/// at all, so a process killed half-way never leaves an empty file behind
/// (an empty `.gitignore` would let `git status` show its folder). On Linux
/// the content is written to an unnamed file in `path`'s folder
/// (`O_TMPFILE`) that is then linked under its name; where the filesystem
/// cannot do that, this is [`create_new`]. Never follows or replaces a link
/// at `path`: an existing entry of any kind answers `Ok(false)`.
pub fn create_new_whole(path: &Path, content: &[u8]) -> std::io::Result<bool> {
    // Most calls find the file there (a run's `.gitignore` is ensured on
    // every change): one look answers them without making and dropping an
    // unnamed file, whose inode is the dearest part of the call on a
    // filesystem that scans for a free inode. A file made after this look
    // is still never replaced: the link below then fails as taken.
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    #[cfg(target_os = "linux")]
    if let Some(done) = link_whole(path, content) {
        return done;
    }
    create_new(path, content)
}

/// [`create_new_whole`]'s unnamed-file way; `None` when the system cannot
/// (no `O_TMPFILE`, no `/proc`): the caller falls back.
#[cfg(target_os = "linux")]
fn link_whole(path: &Path, content: &[u8]) -> Option<std::io::Result<bool>> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE | libc::O_NOFOLLOW)
        .mode(0o644)
        .open(dir)
        .ok()?;
    if let Err(e) = file.write_all(content) {
        return Some(Err(e));
    }
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    let to = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: both arguments are valid NUL-terminated paths that outlive the
    // call; linkat neither keeps nor frees them.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        return Some(Ok(true));
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::AlreadyExists {
        Some(Ok(false))
    } else {
        None
    }
}

/// Makes folder `dir` holding a `.gitignore` of `*` — both or neither, so
/// a process killed half-way never leaves a folder `git status` shows: the
/// folder is staged under a hidden name beside it with its ignore file
/// ([`create_new_whole`]) and renamed into place. `Ok(false)` when `dir`
/// already exists as a folder (it keeps what it holds and gets no ignore
/// file); an error when it is anything else (a link is never followed). A
/// staging folder left by a kill is empty or ignores itself, so git does
/// not list it either.
pub fn create_ignored_dir(dir: &Path) -> std::io::Result<bool> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_dir() => return Ok(false),
        Ok(meta) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} is {}, not a folder; baton does not follow or use it (remove it)",
                    dir.display(),
                    kind_of(&meta)
                ),
            ));
        }
        Err(_) => {}
    }
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} has no parent folder", dir.display()),
        ));
    };
    std::fs::create_dir_all(parent)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let staging = parent.join(format!(
        ".{}.new-{}-{nanos}",
        name.to_string_lossy().trim_start_matches('.'),
        std::process::id()
    ));
    std::fs::create_dir(&staging)?;
    if let Err(e) = create_new_whole(&staging.join(".gitignore"), b"*\n") {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    match std::fs::rename(&staging, dir) {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            // Another process made it first: use theirs.
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_dir()) {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

/// What a path is, for messages.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file (FIFO, socket or device)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ignored_folder_is_made_whole_or_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("specs/.locks");
        assert!(create_ignored_dir(&made).unwrap());
        assert_eq!(
            std::fs::read_to_string(made.join(".gitignore")).unwrap(),
            "*\n"
        );
        // No staging folder is left beside it.
        assert_eq!(
            std::fs::read_dir(dir.path().join("specs")).unwrap().count(),
            1
        );
        // A folder that exists keeps what it holds and gets no ignore file.
        let existing = dir.path().join("mine");
        std::fs::create_dir(&existing).unwrap();
        assert!(!create_ignored_dir(&existing).unwrap());
        assert!(!existing.join(".gitignore").exists());
        // A file or a link in its place is refused, never followed.
        let file = dir.path().join("file");
        std::fs::write(&file, "keep\n").unwrap();
        assert!(create_ignored_dir(&file).is_err());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&existing, &link).unwrap();
        assert!(create_ignored_dir(&link).is_err());
        assert!(!existing.join(".gitignore").exists());
    }

    #[test]
    fn a_whole_new_file_appears_with_its_content_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".gitignore");
        assert!(create_new_whole(&path, b"*\n").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "*\n");
        // An existing file is kept as it is.
        assert!(!create_new_whole(&path, b"other\n").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "*\n");
        // A dangling link is neither followed nor replaced.
        let link = dir.path().join("link");
        let nowhere = dir.path().join("nowhere");
        std::os::unix::fs::symlink(&nowhere, &link).unwrap();
        assert!(!create_new_whole(&link, b"*\n").unwrap());
        assert!(!nowhere.exists());
        // Nothing but the two entries: no temporary name was left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
