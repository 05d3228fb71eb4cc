//! Reading files whose content baton does not own — a past run's
//! `request.md`, a hand-editable history file, anything a repository (and so
//! an agent with a shell) can put in place — without being led anywhere by
//! it:
//!
//! * no symbolic link is followed, neither at the last component
//!   (`O_NOFOLLOW`) nor in any folder of the path below a trusted root (each
//!   folder is opened from the one above it with `O_NOFOLLOW`), so a
//!   `request.md` linked to `~/.git-credentials` or `/proc/self/environ` is
//!   refused, not read;
//! * nothing but a regular file is opened: the entry is examined before the
//!   open (a device is never opened, so opening it has no side effect) and
//!   the open is non-blocking (a FIFO put in place between the two can never
//!   hang the call), then the opened file is examined again;
//! * at most a given number of bytes is read: a larger file is refused, not
//!   cut (a truncated record would be read as a different one).
//!
//! Every refusal is a typed [`UntrustedReadError`] that says which of these
//! it was, so a caller can skip the entry and say why.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// What kind of entry a refused path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A symbolic link.
    Link,
    /// A folder (where a file was asked for).
    Folder,
    /// A named pipe.
    Fifo,
    /// A character or block device.
    Device,
    /// A Unix socket.
    Socket,
    /// Anything else the system reports.
    Other,
}

impl EntryKind {
    fn of_mode(mode: libc::mode_t) -> Option<Self> {
        match mode & libc::S_IFMT {
            libc::S_IFREG => None,
            libc::S_IFLNK => Some(Self::Link),
            libc::S_IFDIR => Some(Self::Folder),
            libc::S_IFIFO => Some(Self::Fifo),
            libc::S_IFCHR | libc::S_IFBLK => Some(Self::Device),
            libc::S_IFSOCK => Some(Self::Socket),
            _ => Some(Self::Other),
        }
    }

    /// The entry kind in words, for messages ("a FIFO").
    pub fn describe(self) -> &'static str {
        match self {
            Self::Link => "a symbolic link",
            Self::Folder => "a folder",
            Self::Fifo => "a FIFO (named pipe)",
            Self::Device => "a device",
            Self::Socket => "a socket",
            Self::Other => "a special file",
        }
    }
}

/// Why a file baton does not own was not read.
#[derive(Debug)]
pub enum UntrustedReadError {
    /// Nothing is there (a missing folder on the way counts too).
    NotFound {
        /// The path asked for.
        path: PathBuf,
    },
    /// The path, or a folder on its way below the root, is a symbolic link.
    Link {
        /// The path asked for.
        path: PathBuf,
    },
    /// The entry is not a regular file (a FIFO, device, socket or folder).
    NotRegular {
        /// The path asked for.
        path: PathBuf,
        /// What it is instead.
        kind: EntryKind,
    },
    /// The file is larger than the caller's limit.
    TooLarge {
        /// The path asked for.
        path: PathBuf,
        /// Its size in bytes (at least `limit + 1` when it grew while read).
        size: u64,
        /// The caller's limit in bytes.
        limit: u64,
    },
    /// The path leaves the root (`..`, or an absolute path elsewhere).
    Outside {
        /// The path asked for.
        path: PathBuf,
        /// The root it must stay below.
        root: PathBuf,
    },
    /// The content is not UTF-8 text (only from the `_string` readers).
    NotText {
        /// The path asked for.
        path: PathBuf,
    },
    /// Any other failure of the system (permissions, I/O).
    Io {
        /// The path asked for.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
}

impl UntrustedReadError {
    /// A stable short name of the refusal, for logs and records
    /// (`not_found`, `link`, `not_regular`, `too_large`, `outside`,
    /// `not_text`, `io`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::Link { .. } => "link",
            Self::NotRegular { .. } => "not_regular",
            Self::TooLarge { .. } => "too_large",
            Self::Outside { .. } => "outside",
            Self::NotText { .. } => "not_text",
            Self::Io { .. } => "io",
        }
    }

    /// Whether nothing was there (as opposed to something refused).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// The path the refusal is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::NotFound { path }
            | Self::Link { path }
            | Self::NotRegular { path, .. }
            | Self::TooLarge { path, .. }
            | Self::Outside { path, .. }
            | Self::NotText { path }
            | Self::Io { path, .. } => path,
        }
    }
}

impl std::fmt::Display for UntrustedReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound { path } => write!(f, "{} does not exist", path.display()),
            Self::Link { path } => write!(
                f,
                "{} is, or lies in a folder that is, a symbolic link; baton does not follow links it did not make (replace it with the file itself)",
                path.display()
            ),
            Self::NotRegular { path, kind } => write!(
                f,
                "{} is {}, not a regular file; baton does not open it (remove it)",
                path.display(),
                kind.describe()
            ),
            Self::TooLarge { path, size, limit } => write!(
                f,
                "{} is {size} bytes, more than the {limit} bytes baton reads from it; it was not read",
                path.display()
            ),
            Self::Outside { path, root } => write!(
                f,
                "{} is not inside {}; baton reads nothing outside it",
                path.display(),
                root.display()
            ),
            Self::NotText { path } => write!(f, "{} is not UTF-8 text", path.display()),
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for UntrustedReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<UntrustedReadError> for std::io::Error {
    fn from(e: UntrustedReadError) -> Self {
        let kind = match &e {
            UntrustedReadError::NotFound { .. } => std::io::ErrorKind::NotFound,
            UntrustedReadError::Io { source, .. } => source.kind(),
            UntrustedReadError::NotText { .. } | UntrustedReadError::TooLarge { .. } => {
                std::io::ErrorKind::InvalidData
            }
            _ => std::io::ErrorKind::InvalidInput,
        };
        std::io::Error::new(kind, e.to_string())
    }
}

/// Flags of every open below: never through a link, never blocking, never
/// inherited by a child, never becoming a controlling terminal.
const OPEN_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;

/// The parts of `path` below `root`, refusing `..` and a path elsewhere.
fn parts_below<'a>(
    root: &Path,
    path: &'a Path,
) -> Result<Vec<&'a std::ffi::OsStr>, UntrustedReadError> {
    let outside = || UntrustedReadError::Outside {
        path: path.to_path_buf(),
        root: root.to_path_buf(),
    };
    let relative = if path.is_absolute() {
        path.strip_prefix(root).map_err(|_| outside())?
    } else {
        path
    };
    let mut parts = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(outside());
            }
        }
    }
    if parts.is_empty() {
        return Err(outside());
    }
    Ok(parts)
}

fn c_name(path: &Path, name: &std::ffi::OsStr) -> Result<CString, UntrustedReadError> {
    CString::new(name.as_bytes()).map_err(|_| UntrustedReadError::NotFound {
        path: path.to_path_buf(),
    })
}

/// Maps an `openat`/`fstatat` failure to its refusal.
fn refusal(path: &Path, error: std::io::Error) -> UntrustedReadError {
    let path = path.to_path_buf();
    match error.raw_os_error() {
        Some(libc::ENOENT) => UntrustedReadError::NotFound { path },
        Some(libc::ELOOP) => UntrustedReadError::Link { path },
        // A file where a folder was expected: nothing is at the path asked for.
        Some(libc::ENOTDIR) => UntrustedReadError::NotFound { path },
        _ => UntrustedReadError::Io {
            path,
            source: error,
        },
    }
}

fn open_at(
    dir: libc::c_int,
    name: &CString,
    extra: libc::c_int,
) -> Result<OwnedFd, std::io::Error> {
    // SAFETY: `name` is a valid NUL-terminated string that outlives the
    // call; the returned descriptor (when not negative) is owned by nobody
    // else and is handed to `OwnedFd` at once.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), OPEN_FLAGS | extra) };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        // SAFETY: `fd` was just returned by `openat` and is open.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

fn stat_at(dir: libc::c_int, name: &CString) -> Result<libc::stat, std::io::Error> {
    // SAFETY: all-zero is a valid `stat` (plain integers); it is filled in
    // by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is NUL-terminated and `st` a valid place to write.
    let rc = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc == 0 {
        Ok(st)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Opens the file at `path` below `root` for reading, following no link
/// below `root` and opening nothing but a regular file of at most
/// `max_bytes` bytes. `path` is relative to `root`, or absolute and inside
/// it; `root` itself is trusted (it may be reached through links).
pub fn open_beneath(root: &Path, path: &Path, max_bytes: u64) -> Result<File, UntrustedReadError> {
    open_beneath_sized(root, path, max_bytes).map(|(file, _)| file)
}

/// [`open_beneath`], with the opened file's size as its one look after
/// the open found it.
fn open_beneath_sized(
    root: &Path,
    path: &Path,
    max_bytes: u64,
) -> Result<(File, u64), UntrustedReadError> {
    let parts = parts_below(root, path)?;
    let shown = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let (last, folders) = parts.split_last().ok_or(UntrustedReadError::Outside {
        path: shown.clone(),
        root: root.to_path_buf(),
    })?;
    // A file directly in the root is looked at and opened by its whole
    // path: the root may be reached through links, and the last component
    // is never followed (O_NOFOLLOW) — the same as opening it in the root
    // opened first, without opening and closing the root.
    let (dir, name) = if folders.is_empty() {
        (None, c_name(&shown, root.join(last).as_os_str())?)
    } else {
        let root_name = CString::new(root.as_os_str().as_bytes()).map_err(|_| {
            UntrustedReadError::NotFound {
                path: shown.clone(),
            }
        })?;
        // The root may be a link (a temporary folder often is); below it, none.
        // SAFETY: `root_name` is NUL-terminated; the descriptor is owned at once.
        let root_fd = unsafe {
            libc::open(
                root_name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if root_fd < 0 {
            return Err(refusal(&shown, std::io::Error::last_os_error()));
        }
        // SAFETY: `root_fd` was just returned by `open` and is open.
        let mut dir = unsafe { OwnedFd::from_raw_fd(root_fd) };
        for folder in folders {
            let name = c_name(&shown, folder)?;
            dir = match open_at(dir.as_raw_fd(), &name, libc::O_DIRECTORY) {
                Ok(fd) => fd,
                // With O_DIRECTORY a link answers "not a folder": say it was a link.
                Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                    let is_link = stat_at(dir.as_raw_fd(), &name)
                        .is_ok_and(|st| EntryKind::of_mode(st.st_mode) == Some(EntryKind::Link));
                    return Err(if is_link {
                        UntrustedReadError::Link { path: shown }
                    } else {
                        refusal(&shown, e)
                    });
                }
                Err(e) => return Err(refusal(&shown, e)),
            };
        }
        (Some(dir), c_name(&shown, last)?)
    };
    let at = dir.as_ref().map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // Look before opening: a device is never opened at all.
    let before = stat_at(at, &name).map_err(|e| refusal(&shown, e))?;
    if let Some(kind) = EntryKind::of_mode(before.st_mode) {
        return Err(match kind {
            EntryKind::Link => UntrustedReadError::Link { path: shown },
            kind => UntrustedReadError::NotRegular { path: shown, kind },
        });
    }
    let fd = open_at(at, &name, 0).map_err(|e| refusal(&shown, e))?;
    drop(dir);
    let file = File::from(fd);
    // Look again at what was opened: the entry may have been swapped.
    let meta = file.metadata().map_err(|e| UntrustedReadError::Io {
        path: shown.clone(),
        source: e,
    })?;
    if !meta.file_type().is_file() {
        use std::os::unix::fs::MetadataExt;
        let kind = EntryKind::of_mode(meta.mode()).unwrap_or(EntryKind::Other);
        return Err(UntrustedReadError::NotRegular { path: shown, kind });
    }
    if meta.len() > max_bytes {
        return Err(UntrustedReadError::TooLarge {
            path: shown,
            size: meta.len(),
            limit: max_bytes,
        });
    }
    Ok((file, meta.len()))
}

/// Reads the whole file at `path` below `root` under [`open_beneath`]'s
/// rules; a file that grows past `max_bytes` while read is refused too.
pub fn read_beneath(
    root: &Path,
    path: &Path,
    max_bytes: u64,
) -> Result<Vec<u8>, UntrustedReadError> {
    let (mut file, size) = open_beneath_sized(root, path, max_bytes)?;
    let shown = || {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        }
    };
    // Sized from the look after the open: one read when the file is still
    // that long (a regular file's read comes back short only at its end).
    let limit = usize::try_from(max_bytes.saturating_add(1)).unwrap_or(usize::MAX);
    let first = usize::try_from(size.saturating_add(1))
        .unwrap_or(usize::MAX)
        .min(limit);
    let mut bytes = vec![0u8; first];
    let mut at = 0usize;
    loop {
        let n = match file.read(&mut bytes[at..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(UntrustedReadError::Io {
                    path: shown(),
                    source: e,
                });
            }
        };
        if n == 0 {
            break;
        }
        at += n;
        if at < bytes.len() {
            if at as u64 == size {
                break;
            }
            continue;
        }
        // Full: the file grew while it was read.
        if at as u64 > max_bytes {
            return Err(UntrustedReadError::TooLarge {
                path: shown(),
                size: at as u64,
                limit: max_bytes,
            });
        }
        let grown = bytes.len().saturating_mul(2).min(limit);
        bytes.resize(grown, 0);
    }
    bytes.truncate(at);
    Ok(bytes)
}

/// [`read_beneath`] for UTF-8 text.
pub fn read_string_beneath(
    root: &Path,
    path: &Path,
    max_bytes: u64,
) -> Result<String, UntrustedReadError> {
    let bytes = read_beneath(root, path, max_bytes)?;
    String::from_utf8(bytes).map_err(|_| UntrustedReadError::NotText {
        path: if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        },
    })
}

/// Reads the file at `path` under [`open_beneath`]'s rules with `path`'s own
/// folder as the root: its last component is never followed and never a
/// FIFO, device or socket, but the folders above it are trusted. For a file
/// whose folders baton has already checked, or that the caller named itself.
pub fn read_file_nofollow(path: &Path, max_bytes: u64) -> Result<Vec<u8>, UntrustedReadError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(UntrustedReadError::NotFound {
            path: path.to_path_buf(),
        });
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    read_beneath(dir, Path::new(name), max_bytes).map_err(|e| match e {
        // Name the path as the caller gave it.
        UntrustedReadError::NotFound { .. } => UntrustedReadError::NotFound {
            path: path.to_path_buf(),
        },
        other => other,
    })
}

/// [`read_file_nofollow`] for UTF-8 text.
pub fn read_string_nofollow(path: &Path, max_bytes: u64) -> Result<String, UntrustedReadError> {
    let bytes = read_file_nofollow(path, max_bytes)?;
    String::from_utf8(bytes).map_err(|_| UntrustedReadError::NotText {
        path: path.to_path_buf(),
    })
}

/// Whether `path` below `root` is a folder reached through no link below
/// `root` (for listing a folder of untrusted content before reading its
/// files with [`read_beneath`]).
pub fn is_folder_beneath(root: &Path, path: &Path) -> bool {
    let Ok(parts) = parts_below(root, path) else {
        return false;
    };
    let mut at = root.to_path_buf();
    for part in parts {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_dir() => {}
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn mkfifo(path: &Path) {
        let name = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn a_plain_file_below_the_root_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/request.md"), "fix the bug\n").unwrap();
        assert_eq!(
            read_string_beneath(dir.path(), Path::new("a/b/request.md"), 100).unwrap(),
            "fix the bug\n"
        );
        // An absolute path inside the root works the same.
        assert_eq!(
            read_beneath(dir.path(), &dir.path().join("a/b/request.md"), 100).unwrap(),
            b"fix the bug\n"
        );
        // A root reached through a link is trusted, for a file directly in
        // it as for one below it.
        let linked_root = dir.path().join("linked");
        std::os::unix::fs::symlink(dir.path().join("a/b"), &linked_root).unwrap();
        assert_eq!(
            read_beneath(&linked_root, Path::new("request.md"), 100).unwrap(),
            b"fix the bug\n"
        );
        // A larger file is read whole.
        std::fs::write(dir.path().join("a/big.md"), vec![b'y'; 5000]).unwrap();
        assert_eq!(
            read_beneath(dir.path(), Path::new("a/big.md"), 10_000)
                .unwrap()
                .len(),
            5000
        );
        // Missing is NotFound, also for a missing folder on the way.
        let missing = read_beneath(dir.path(), Path::new("a/x/request.md"), 100).unwrap_err();
        assert!(missing.is_not_found(), "{missing}");
        // A file standing where a folder is expected is "not found" too.
        let through_file =
            read_beneath(dir.path(), Path::new("a/b/request.md/x"), 100).unwrap_err();
        assert!(through_file.is_not_found(), "{through_file}");
    }

    #[test]
    fn a_link_at_the_end_or_on_the_way_is_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "password\n").unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("runs/one")).unwrap();
        std::os::unix::fs::symlink(&secret, root.join("runs/one/request.md")).unwrap();
        let e = read_beneath(&root, Path::new("runs/one/request.md"), 100).unwrap_err();
        assert!(matches!(e, UntrustedReadError::Link { .. }), "{e}");
        assert_eq!(e.code(), "link");
        // A linked folder on the way: refused although the file is plain.
        std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
        std::fs::write(dir.path().join("elsewhere/request.md"), "outside\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), root.join("runs/two")).unwrap();
        let e = read_beneath(&root, Path::new("runs/two/request.md"), 100).unwrap_err();
        assert!(matches!(e, UntrustedReadError::Link { .. }), "{e}");
        assert!(!is_folder_beneath(&root, Path::new("runs/two")));
        assert!(is_folder_beneath(&root, Path::new("runs/one")));
        // A link to a file inside the root is refused as well: links are
        // not followed at all.
        std::fs::write(root.join("runs/plain.md"), "inside\n").unwrap();
        std::os::unix::fs::symlink("../plain.md", root.join("runs/one/inner.md")).unwrap();
        let e = read_beneath(&root, Path::new("runs/one/inner.md"), 100).unwrap_err();
        assert!(matches!(e, UntrustedReadError::Link { .. }), "{e}");
        // The nofollow reader refuses the last component's link too.
        let e = read_file_nofollow(&root.join("runs/one/request.md"), 100).unwrap_err();
        assert!(matches!(e, UntrustedReadError::Link { .. }), "{e}");
        // `..` and paths elsewhere never leave the root.
        let e = read_beneath(&root, Path::new("../secret"), 100).unwrap_err();
        assert!(matches!(e, UntrustedReadError::Outside { .. }), "{e}");
        let e = read_beneath(&root, &secret, 100).unwrap_err();
        assert!(matches!(e, UntrustedReadError::Outside { .. }), "{e}");
    }

    #[test]
    fn a_fifo_is_refused_at_once_and_never_hangs() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("request.md");
        mkfifo(&fifo);
        // Nobody ever opens the other end: a blocking open would hang
        // forever. The call runs on a thread so a regression fails the test
        // instead of hanging the suite.
        let (tx, rx) = std::sync::mpsc::channel();
        let root = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let beneath = read_beneath(&root, Path::new("request.md"), 100);
            let nofollow = read_file_nofollow(&root.join("request.md"), 100);
            let _ = tx.send((beneath, nofollow));
        });
        let (beneath, nofollow) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("reading a FIFO must never block");
        for result in [beneath, nofollow] {
            match result {
                Err(UntrustedReadError::NotRegular {
                    kind: EntryKind::Fifo,
                    ..
                }) => {}
                other => panic!("a FIFO must be refused as one, got {other:?}"),
            }
        }
        // The refusal names what it is.
        let e = open_beneath(dir.path(), Path::new("request.md"), 100).unwrap_err();
        assert_eq!(e.code(), "not_regular");
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn a_device_a_socket_and_a_folder_are_refused() {
        // /dev/null is a character device; its folder is the root.
        let e = read_beneath(Path::new("/dev"), Path::new("null"), 100).unwrap_err();
        assert!(
            matches!(
                e,
                UntrustedReadError::NotRegular {
                    kind: EntryKind::Device,
                    ..
                }
            ),
            "{e}"
        );
        let e = read_file_nofollow(Path::new("/dev/zero"), 100).unwrap_err();
        assert_eq!(e.code(), "not_regular");
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let e = read_beneath(dir.path(), Path::new("sock"), 100).unwrap_err();
        assert!(
            matches!(
                e,
                UntrustedReadError::NotRegular {
                    kind: EntryKind::Socket,
                    ..
                }
            ),
            "{e}"
        );
        std::fs::create_dir(dir.path().join("folder")).unwrap();
        let e = read_beneath(dir.path(), Path::new("folder"), 100).unwrap_err();
        assert!(
            matches!(
                e,
                UntrustedReadError::NotRegular {
                    kind: EntryKind::Folder,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn an_oversized_file_is_refused_not_cut() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big"), vec![b'x'; 101]).unwrap();
        std::fs::write(dir.path().join("exact"), vec![b'x'; 100]).unwrap();
        let e = read_beneath(dir.path(), Path::new("big"), 100).unwrap_err();
        match e {
            UntrustedReadError::TooLarge { size, limit, .. } => {
                assert_eq!((size, limit), (101, 100));
            }
            other => panic!("expected too_large, got {other:?}"),
        }
        assert_eq!(
            read_beneath(dir.path(), Path::new("exact"), 100)
                .unwrap()
                .len(),
            100
        );
        // Not text is said as such by the string reader.
        std::fs::write(dir.path().join("binary"), [0xff, 0xfe]).unwrap();
        let e = read_string_beneath(dir.path(), Path::new("binary"), 100).unwrap_err();
        assert_eq!(e.code(), "not_text");
        // Into io::Error, the kind survives.
        let io: std::io::Error = read_beneath(dir.path(), Path::new("missing"), 1)
            .unwrap_err()
            .into();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }
}
