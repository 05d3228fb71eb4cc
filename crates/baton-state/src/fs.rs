//! File operations that a hostile repository cannot turn against baton:
//! nothing baton writes, appends to or locks is reached through a symbolic
//! link, a FIFO never blocks an open, a held lock is waited for only so
//! long, and a rewritten file keeps its permissions.
//!
//! Also the fault-injection hook of the crash tests: with
//! `BATON_CRASH_AFTER_WRITES=N` in its environment, the process aborts
//! right after its N-th atomic write (see `crates/baton/tests/it/e2e_faults.rs`).
//! Nothing reads that variable otherwise; it is documented in
//! docs/configuration.md as a testing hook.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;

pub use baton_fs::{create_ignored_dir, create_new, create_new_whole, kind_of};

/// Flags for opening a path baton owns: never through a symbolic link, never
/// blocking on a FIFO, not inherited by child processes.
#[cfg(unix)]
const SAFE_FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;

fn safe(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    options.custom_flags(SAFE_FLAGS);
    options
}

/// Why a path baton must open is not a plain file.
fn not_regular(path: &Path, what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}, not a regular file; baton does not follow or use it (remove or replace it)",
            path.display()
        ),
    )
}

/// Opens `path` for writing without following a symbolic link or blocking
/// on a FIFO, creating it when missing; refuses anything but a regular file.
pub fn open_regular(path: &Path, append: bool) -> std::io::Result<File> {
    open_regular_meta(path, append).map(|(file, _)| file)
}

/// [`open_regular`], with the opened file's metadata. One open and one
/// `fstat`: the open itself never follows a link (`O_NOFOLLOW`) nor
/// blocks (`O_NONBLOCK`), and the type is checked on what was opened, so
/// nothing is looked at twice. (A device node, which only root can put in
/// a folder, would be opened before it is refused; links and FIFOs, which
/// anyone can, never are followed or waited on.)
pub fn open_regular_meta(path: &Path, append: bool) -> std::io::Result<(File, std::fs::Metadata)> {
    let mut options = OpenOptions::new();
    options.create(true).write(true);
    if append {
        options.append(true);
    } else {
        options.truncate(false).read(true);
    }
    let file = safe(&mut options).open(path).map_err(|e| {
        #[cfg(unix)]
        match e.raw_os_error() {
            Some(libc::ELOOP) => return not_regular(path, "a symbolic link"),
            Some(libc::EISDIR) => return not_regular(path, "a folder"),
            // A FIFO without a reader, or a socket: say what it is.
            Some(libc::ENXIO) => {
                if let Ok(meta) = std::fs::symlink_metadata(path) {
                    return not_regular(path, kind_of(&meta));
                }
            }
            _ => {}
        }
        e
    })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular(path, kind_of(&meta)));
    }
    Ok((file, meta))
}

/// This process's id, asked of the system once.
pub fn process_id() -> u32 {
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *PID.get_or_init(std::process::id)
}

/// A lock that could not be taken in time.
#[derive(Debug, Clone)]
pub struct LockBusy {
    /// Who holds it, as the holder wrote it (`pid=…, since=…`), if readable.
    pub holder: Option<String>,
    /// How long the caller waited.
    pub waited: Duration,
}

/// An exclusive lock taken by [`lock_within`]. Dropping it blanks the
/// holder's note, then releases the lock, so a later wait never names a
/// holder that has gone.
#[derive(Debug)]
pub struct HeldLock {
    file: File,
}

/// The length every holder's note is written at (padded with spaces): a
/// note overwrites the one before it in place, whole, so the lock file is
/// never truncated. Truncating frees the file's block and the next note
/// allocates one again — two of the dearest calls of a change on ext4,
/// on the reply's path, for a note only a timed-out wait ever reads.
const NOTE_LEN: usize = 128;

/// `text` as a note of exactly [`NOTE_LEN`] bytes, ending in a line break.
fn padded_note(text: &str) -> [u8; NOTE_LEN] {
    let mut note = [b' '; NOTE_LEN];
    let mut end = text.len().min(NOTE_LEN - 1);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    note[..end].copy_from_slice(&text.as_bytes()[..end]);
    note[NOTE_LEN - 1] = b'\n';
    note
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = std::os::unix::fs::FileExt::write_all_at(&self.file, &padded_note(""), 0);
        // Released here, not by closing: a child process started by another
        // thread holds a copy of this file until it has become its program,
        // and a copy would keep the lock past the close.
        let _ = self.file.unlock();
    }
}

/// Whether the calling thread may wait ([`without_waiting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockWaits {
    /// As usual: a busy lock is waited for, up to the caller's timeout.
    Allowed,
    /// Within [`without_waiting`]: until the work's first lock is
    /// taken a busy lock is not waited for, and until its first write
    /// nothing slow is waited for ([`refuse_to_wait`]).
    Unless {
        /// The work holds or held a lock.
        locked: bool,
        /// The work wrote a file of the store.
        wrote: bool,
    },
    /// A wait was refused: every lock refuses at once.
    Refused,
}

thread_local! {
    static LOCK_WAITS: std::cell::Cell<LockWaits> =
        const { std::cell::Cell::new(LockWaits::Allowed) };
}

/// Runs `work` on a thread that must not wait — the stdio server's
/// protocol thread, which runs a call itself when it is the only one, and
/// must go on reading the client's messages meanwhile. A busy lock met
/// before `work` took any lock is not waited for, nor is slow work a use
/// case asks about with [`refuse_to_wait`] before `work` wrote anything:
/// that lock and every later lock of `work` are refused at once (as if the
/// wait had timed out), and this returns `None` — `work` changed no state
/// (every change is made under a lock, and nothing was written) and is to
/// be run again where waiting is fine. Once `work` holds a lock, later
/// locks are waited for as usual (`Some`).
pub fn without_waiting<T>(work: impl FnOnce() -> T) -> Option<T> {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            LOCK_WAITS.with(|w| w.set(LockWaits::Allowed));
        }
    }
    LOCK_WAITS.with(|w| {
        w.set(LockWaits::Unless {
            locked: false,
            wrote: false,
        })
    });
    let _reset = Reset;
    let out = work();
    (LOCK_WAITS.with(std::cell::Cell::get) != LockWaits::Refused).then_some(out)
}

/// Asked before slow work (starting `git`, waiting for another thread):
/// true when the calling thread runs work within
/// [`without_waiting`] that has written nothing yet — the caller
/// must then fail without changing anything (the work is run again where
/// waiting is fine, and every lock it asks for from now on is refused).
/// False otherwise: do it now.
pub fn refuse_to_wait() -> bool {
    LOCK_WAITS.with(|w| match w.get() {
        LockWaits::Unless { wrote: false, .. } | LockWaits::Refused => {
            w.set(LockWaits::Refused);
            true
        }
        LockWaits::Unless { wrote: true, .. } | LockWaits::Allowed => false,
    })
}

/// Whether [`refuse_to_wait`] would refuse now (it is not asked, and
/// nothing changes): a caller checks this before it works out whether its
/// next step would be slow, which only such a thread needs to know.
pub fn waiting_refused_here() -> bool {
    LOCK_WAITS.with(|w| {
        matches!(
            w.get(),
            LockWaits::Unless { wrote: false, .. } | LockWaits::Refused
        )
    })
}

/// Notes that the calling thread's work wrote a file of the store (from
/// then on, a wait it asks about is done, not refused).
fn note_write() {
    LOCK_WAITS.with(|w| {
        if let LockWaits::Unless { locked, .. } = w.get() {
            w.set(LockWaits::Unless {
                locked,
                wrote: true,
            });
        }
    });
}

/// Takes the exclusive lock of `file`, waiting at most `timeout`; then
/// records the holder in the file (`pid`, start time, operation) so a caller
/// that times out can say who holds it. Within [`without_waiting`],
/// a busy lock met before the first is taken is not waited for.
pub fn lock_within(mut file: File, timeout: Duration, op: &str) -> Result<HeldLock, LockBusy> {
    let started = Instant::now();
    // Short first: a lock is usually held for well under a millisecond.
    let mut pause = Duration::from_micros(100);
    loop {
        let waits = LOCK_WAITS.with(std::cell::Cell::get);
        if waits == LockWaits::Refused {
            return Err(LockBusy {
                holder: None,
                waited: Duration::ZERO,
            });
        }
        match file.try_lock() {
            Ok(()) => {
                if let LockWaits::Unless { wrote, .. } = waits {
                    LOCK_WAITS.with(|w| {
                        w.set(LockWaits::Unless {
                            locked: true,
                            wrote,
                        })
                    });
                }
                break;
            }
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(_)) => {}
        }
        if let LockWaits::Unless { locked: false, .. } = waits {
            LOCK_WAITS.with(|w| w.set(LockWaits::Refused));
            return Err(LockBusy {
                holder: None,
                waited: Duration::ZERO,
            });
        }
        let waited = started.elapsed();
        if waited >= timeout {
            let mut text = String::new();
            let holder = file
                .rewind()
                .ok()
                .and_then(|_| file.take(512).read_to_string(&mut text).ok())
                .map(|_| text.lines().next().unwrap_or_default().trim().to_string())
                .filter(|t| !t.is_empty());
            return Err(LockBusy { holder, waited });
        }
        std::thread::sleep(pause.min(timeout.saturating_sub(waited)));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    let note = format!(
        "pid={} since={} op={op}",
        process_id(),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    );
    // The note is only for messages: failing to write it changes nothing.
    // Written whole over the last one (same length: a killed holder's note
    // leaves no tail), at the start without moving the file's position. A
    // longer file (hand edits) keeps its tail after the note's line
    // break, and a wait reads the first line only.
    let _ = std::os::unix::fs::FileExt::write_all_at(&file, &padded_note(&note), 0);
    Ok(HeldLock { file })
}

static WRITES: AtomicU64 = AtomicU64::new(0);

/// Called right after every atomic write of the store: notes the write
/// (a wait asked about after it is done, not refused: [`refuse_to_wait`]),
/// and is the crash-test hook — aborts the process right after its N-th
/// atomic write when `BATON_CRASH_AFTER_WRITES=N` is set (as a SIGKILL at
/// that moment would).
pub fn crash_point() {
    note_write();
    static LIMIT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let limit = LIMIT.get_or_init(|| {
        std::env::var("BATON_CRASH_AFTER_WRITES")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if let Some(limit) = limit {
        let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= *limit {
            std::process::abort();
        }
    }
}

/// The permissions a rewritten file keeps: those of the file it replaces,
/// else `rw-r--r--` (a temporary file is created `rw-------`).
pub fn permissions_for(target: &Path) -> Option<std::fs::Permissions> {
    match std::fs::metadata(target) {
        Ok(meta) => Some(meta.permissions()),
        Err(_) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                Some(std::fs::Permissions::from_mode(0o644))
            }
            #[cfg(not(unix))]
            {
                None
            }
        }
    }
}

/// The process's file-creation mask, read once (`/proc/self/status`; baton
/// never changes it). `None` where the system does not say.
pub fn umask() -> Option<u32> {
    static UMASK: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
        u32::from_str_radix(line.trim(), 8).ok()
    })
}

/// Whether a file created with `mode` gets exactly `mode` (the mask takes
/// nothing from it), so that no `fchmod` is needed after creating it.
/// Special bits (set-id, sticky) are always set by a `chmod`.
pub fn created_exactly(mode: u32) -> bool {
    mode & 0o7000 == 0 && umask().is_some_and(|mask| mode & mask & 0o777 == 0)
}

/// Gives a new, empty `file` its `len` bytes of disk before they are
/// written, so that the rename that puts it in place does not write them
/// out first. ext4 (mounted as it is by default, `auto_da_alloc`) starts
/// writing back a file's not-yet-allocated data when it is renamed over
/// another file — a block I/O submitted from inside `rename(2)`, on the
/// reply's path — so that an application that skips fsync still finds the
/// new contents after a crash. A file whose blocks are already reserved
/// has nothing to allocate: the rename only renames (measured on this
/// project's machine: 26 µs → 6 µs per rename of a 20 KB file; the data is
/// written back later by the kernel, or by baton's background sync).
/// Best effort: a filesystem without `fallocate` (or another OS) simply
/// writes as before.
pub fn reserve(file: &File, len: usize) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(len) = libc::off_t::try_from(len)
            && len > 0
        {
            // SAFETY: a valid open descriptor; fallocate reads no memory.
            let _ = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_and_folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep\n").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_regular(&link, true).is_err());
        assert!(open_regular(&link, false).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(!create_new(&dangling, b"*\n").unwrap());
        assert!(!dir.path().join("nowhere").exists());
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = open_regular(&fifo, false).unwrap_err();
        assert!(e.to_string().contains("special file"), "{e}");
        assert!(open_regular(dir.path(), false).is_err());
        assert!(open_regular(&dir.path().join("new"), false).is_ok());
    }

    /// `lock_within` on a new open of `path`, waiting at most `ms`.
    fn lock_at(path: &Path, ms: u64, op: &str) -> Result<HeldLock, LockBusy> {
        lock_within(
            open_regular(path, false).unwrap(),
            Duration::from_millis(ms),
            op,
        )
    }

    #[test]
    fn a_held_lock_is_waited_for_only_so_long() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let holder = lock_at(&path, 1000, "hold").unwrap();
        let busy = lock_at(&path, 50, "wait").unwrap_err();
        assert!(busy.waited >= Duration::from_millis(50));
        let holder_note = busy.holder.unwrap();
        assert!(
            holder_note.contains(&format!("pid={}", std::process::id())),
            "{holder_note}"
        );
        assert!(holder_note.contains("op=hold"));
        drop(holder);
        let left = std::fs::read_to_string(&path).unwrap();
        assert_eq!(left.trim(), "", "released: the note is blanked");
        assert_eq!(left.len(), NOTE_LEN, "overwritten in place, not cut");
        lock_at(&path, 500, "wait").unwrap();
    }

    /// A holder killed with its note written, then a hand-edited file with
    /// more after the note: the next holder's note is read whole, alone.
    #[test]
    fn a_note_is_read_whole_over_any_earlier_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let long = format!("pid=1 since=then op={}\nsecond line\n", "x".repeat(300));
        std::fs::write(&path, long).unwrap();
        let holder = lock_at(&path, 1000, "now").unwrap();
        let busy = lock_at(&path, 20, "wait").unwrap_err();
        let note = busy.holder.unwrap();
        assert!(
            note.starts_with(&format!("pid={} ", std::process::id())),
            "{note}"
        );
        assert!(note.ends_with("op=now"), "{note}");
        drop(holder);
        assert_eq!(padded_note(&"é".repeat(200)).len(), NOTE_LEN);
        assert!(std::str::from_utf8(&padded_note(&"é".repeat(200))).is_ok());
    }

    /// The protocol thread's rule: a busy lock before any lock is held is
    /// refused at once, and so is every later one of that work (it is run
    /// again elsewhere); once a lock is held, locks are waited for.
    #[test]
    fn without_waiting_a_busy_first_lock_refuses_every_lock_of_the_work() {
        let dir = tempfile::tempdir().unwrap();
        let busy_path = dir.path().join("busy");
        let free_path = dir.path().join("free");
        let holder = lock_at(&busy_path, 1000, "hold").unwrap();

        let refused = without_waiting(|| {
            let busy = lock_at(&busy_path, 60_000, "first").unwrap_err();
            assert_eq!(busy.waited, Duration::ZERO);
            // A free lock after it is refused too: the work changes nothing.
            lock_at(&free_path, 60_000, "second").unwrap_err();
            "ran"
        });
        assert_eq!(refused, None);

        let waited = without_waiting(|| {
            let first = lock_at(&free_path, 1000, "first").unwrap();
            // Holding a lock: a busy one is waited for as usual.
            let busy = lock_at(&busy_path, 30, "second").unwrap_err();
            drop(first);
            busy.waited
        });
        assert!(
            waited.is_some_and(|w| w >= Duration::from_millis(30)),
            "{waited:?}"
        );

        // Outside, as before: waited for.
        let busy = lock_at(&busy_path, 30, "after").unwrap_err();
        assert!(busy.waited >= Duration::from_millis(30));
        drop(holder);
        assert!(without_waiting(|| lock_at(&busy_path, 1000, "free").is_ok()) == Some(true));
    }

    /// Slow work asked about is refused while the work has written
    /// nothing (every later lock is refused too), done once it has, and
    /// always done outside.
    #[test]
    fn slow_work_is_refused_only_before_the_works_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        assert!(
            !waiting_refused_here() && !refuse_to_wait(),
            "outside, waiting is fine"
        );
        let refused = without_waiting(|| {
            let held = lock_at(&path, 1000, "first").unwrap();
            assert!(waiting_refused_here(), "a look changes nothing");
            assert!(refuse_to_wait());
            drop(held);
            // Refused: the work's next lock is refused at once.
            assert_eq!(
                lock_at(&path, 60_000, "again").unwrap_err().waited,
                Duration::ZERO
            );
        });
        assert_eq!(refused, None);
        let done = without_waiting(|| {
            let _held = lock_at(&path, 1000, "first").unwrap();
            crash_point();
            assert!(!waiting_refused_here());
            refuse_to_wait()
        });
        assert_eq!(done, Some(false), "after a write the wait is done");
        assert!(!refuse_to_wait());
    }

    #[test]
    fn a_copy_of_the_lock_file_does_not_keep_the_lock() {
        // A child process started while the lock is held keeps a copy of
        // the file (the same open file) until it has become its program.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let file = open_regular(&path, false).unwrap();
        let copy = file.try_clone().unwrap();
        let holder = lock_within(file, Duration::from_secs(1), "hold").unwrap();
        drop(holder);
        lock_at(&path, 50, "after").expect("released although a copy of the file is still open");
        drop(copy);
    }
}
