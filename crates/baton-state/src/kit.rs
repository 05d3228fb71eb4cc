//! A new run's folder, made ahead of its creation, off the reply's path.
//!
//! Creating a run makes its folder and five files in it: the lock, the
//! `.gitignore`, the journal, `request.md` and `state.json`. Making an
//! inode is the dearest system call of the confirmation on a filesystem
//! that searches for a free one (ext4; a folder dearer still), and the
//! confirmation is one call a person waits for. So when the confirmation's
//! question is asked (the person answers next), a server makes
//! the folder with the lock, the `.gitignore`, the journal and two spare
//! files in it ([`StateStore::prepare_kit`], on a background thread),
//! hidden in the specs folder as `.new-run-<pid>-<random>`. The
//! confirmation renames it to the run's name — `renameat2` with
//! `RENAME_NOREPLACE`, which claims the name exactly as `mkdir` did (it
//! fails if anything is there) — and writes `request.md` and `state.json`
//! into the spares (crate::spare), so it makes no inode at all.
//!
//! Nothing a reader sees changes: until it is renamed, the folder is
//! hidden and holds no `state.json`, so no listing, history or hook takes
//! it for a run, and `git status` shows nothing of it (its `.gitignore`
//! covers every file in it). It is made only by a process that keeps
//! spares (a server: background durability); without it, or when the
//! rename fails (the name is taken, a system without `renameat2`), the run
//! is created as before and the folder removed. A process removes its own
//! at its exit; one a killed process left is removed by the next server's
//! sweep (only the files a kit holds, then the folder: anything else in
//! it keeps it).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::spare::Spare;
use crate::store::{IGNORE_CONTENT, IGNORE_FILE, LOCK_FILE, StateStore};

/// The name every kit folder starts with (hidden in the specs folder).
pub const KIT_PREFIX: &str = ".new-run-";

/// A run's folder made ahead of time.
#[derive(Debug)]
pub(crate) struct Kit {
    /// The hidden folder.
    pub dir: PathBuf,
    /// Empty files for the new run's first writes.
    pub spares: Vec<Spare>,
    /// Whether the specs folder was made for it (removed at exit if still
    /// empty then).
    made_root: bool,
}

/// The kit of each specs folder this process keeps (one each).
fn kits() -> &'static Mutex<Vec<(PathBuf, Kit)>> {
    static KITS: OnceLock<Mutex<Vec<(PathBuf, Kit)>>> = OnceLock::new();
    KITS.get_or_init(|| Mutex::new(Vec::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `path` is a kit folder this process keeps (the sweep leaves it).
pub(crate) fn is_kept(path: &Path) -> bool {
    lock(kits()).iter().any(|(_, k)| k.dir == path)
}

/// Takes the kit kept for specs folder `root`, if there is one.
pub(crate) fn take(root: &Path) -> Option<Kit> {
    let mut all = lock(kits());
    let i = all.iter().position(|(r, _)| r == root)?;
    Some(all.swap_remove(i).1)
}

/// Whether a kit folder name is one a kit could have.
pub(crate) fn is_kit_name(name: &str) -> bool {
    name.starts_with(KIT_PREFIX)
}

/// Removes kit folder `dir`: the files a kit holds (the lock, the
/// `.gitignore`, the journal, spares), then the folder, which is left
/// when anything else is in it. Never follows a link.
pub(crate) fn remove_dir(dir: &Path) -> bool {
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_dir()) {
        return false;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = name == LOCK_FILE
                || name == IGNORE_FILE
                || (name.starts_with(".state.json.") && name.ends_with(".tmp"));
            if ours && entry.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    std::fs::remove_dir(dir).is_ok()
}

/// Drops kit `kit` unused: its folder and files removed.
pub(crate) fn discard(kit: Kit) {
    drop(kit.spares);
    remove_dir(&kit.dir);
}

/// Removes this process's kits under `folder` (`/` at its exit: all), and
/// a specs folder made for one that is still empty.
pub(crate) fn remove_under(folder: &Path) {
    let mine: Vec<(PathBuf, Kit)> = {
        let mut all = lock(kits());
        let (mine, rest) = all
            .drain(..)
            .partition(|(root, _)| root.starts_with(folder));
        *all = rest;
        mine
    };
    for (root, kit) in mine {
        remove(&root, kit);
    }
}

/// Removes `kit` of specs folder `root`, and `root` when it was made for
/// the kit and is empty.
fn remove(root: &Path, kit: Kit) {
    let made_root = kit.made_root;
    discard(kit);
    if made_root {
        let _ = std::fs::remove_dir(root);
    }
}

/// `from` renamed to `to` only if nothing is at `to`.
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        };
        let (from, to) = (c(from)?, c(to)?);
        // SAFETY: two NUL-terminated paths that live through the call.
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to);
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }
}

impl StateStore {
    /// Makes, now, the folder the next run created under this specs folder
    /// will take (see the module's documentation): call it off the reply's
    /// path when a run is being started. Does nothing in a process that
    /// keeps no spares (one-shot commands, durability other than
    /// background), nor when this process keeps one already. Failing makes
    /// nothing: the run is then created as before.
    pub fn prepare_kit(&self) {
        if !self.spares() || lock(kits()).iter().any(|(r, _)| r == self.specs_root()) {
            return;
        }
        let root = self.specs_root().to_path_buf();
        let made_root = match std::fs::symlink_metadata(&root) {
            Ok(m) if m.file_type().is_dir() => false,
            Ok(_) => return,
            Err(_) => {
                if std::fs::create_dir_all(&root).is_err() {
                    return;
                }
                true
            }
        };
        let dir = root.join(format!(
            "{KIT_PREFIX}{}-{:016x}",
            crate::fs::process_id(),
            rand_u64()
        ));
        if std::fs::create_dir(&dir).is_err() {
            return;
        }
        let made = self.fill_kit(&dir);
        let Some(spares) = made else {
            remove_dir(&dir);
            return;
        };
        let kit = Kit {
            dir,
            spares,
            made_root,
        };
        let mut all = lock(kits());
        if all.iter().any(|(r, _)| *r == root) {
            drop(all);
            discard(kit);
            return;
        }
        all.push((root, kit));
    }

    /// Renames the kit kept for this specs folder to `ws`'s folder, only if
    /// nothing is at that name, and keeps its spares for `ws`: whether it
    /// did (else the kit is removed, and the caller makes the folder).
    pub(crate) fn take_kit_for(&self, ws: &crate::WorkspaceRef) -> bool {
        let Some(kit) = self.spares().then(|| take(self.specs_root())).flatten() else {
            return false;
        };
        match rename_noreplace(&kit.dir, &ws.dir) {
            Ok(()) => {
                crate::spare::adopt(&ws.dir, kit.spares);
                true
            }
            Err(_) => {
                discard(kit);
                false
            }
        }
    }

    /// The files of kit folder `dir`: what a run's creation would make
    /// there before its two writes, and two spares for them.
    fn fill_kit(&self, dir: &Path) -> Option<Vec<Spare>> {
        use std::os::unix::fs::OpenOptionsExt;
        let new_file = |name: &str| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .custom_flags(libc::O_NOFOLLOW)
                .open(dir.join(name))
                .ok()
        };
        // The `.gitignore` first, whole: a kill at any moment leaves a
        // folder that `git status` does not show (empty, or holding only
        // files it ignores) — the chaos campaign found one that showed.
        if !crate::fs::create_new_whole(&dir.join(IGNORE_FILE), IGNORE_CONTENT.as_bytes())
            .unwrap_or(false)
        {
            return None;
        }
        new_file(LOCK_FILE)?;
        if self.durability().journaled() {
            new_file(crate::journal::JOURNAL_FILE)?;
        }
        let spares: Vec<Spare> = (0..2).filter_map(|_| crate::spare::make_in(dir)).collect();
        (spares.len() == 2).then_some(spares)
    }
}

/// A random number for a kit's name (two processes' kits never meet: the
/// name also holds the process id).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;
    use crate::WorkspaceState;

    fn server_store(dir: &Path) -> StateStore {
        let store = StateStore::new(dir, &dir.join(".specs"));
        store.start_syncer();
        store
    }

    fn kit_dirs(specs: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(specs)
            .map(|e| {
                e.flatten()
                    .map(|e| e.path())
                    .filter(|p| is_kit_name(&p.file_name().unwrap().to_string_lossy()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn ino(p: &Path) -> u64 {
        std::fs::symlink_metadata(p).unwrap().ino()
    }

    fn fresh(store: &StateStore, name: &str) -> (crate::WorkspaceRef, WorkspaceState) {
        let ws = store.resolve(name).unwrap();
        let state = crate::testing::fresh_state(&ws);
        (ws, state)
    }

    #[test]
    fn a_new_run_takes_the_folder_made_ahead_and_every_file_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = server_store(dir.path());
        store.prepare_kit();
        let kits = kit_dirs(store.specs_root());
        assert_eq!(kits.len(), 1, "{kits:?}");
        let kit = kits[0].clone();
        let lock_ino = ino(&kit.join(LOCK_FILE));
        let journal_ino = ino(&kit.join(crate::journal::JOURNAL_FILE));
        let spare_inos: Vec<u64> = std::fs::read_dir(&kit)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().ends_with(".tmp"))
            .filter(|p| *p != kit.join(crate::journal::JOURNAL_FILE))
            .map(|p| ino(&p))
            .collect();
        assert_eq!(spare_inos.len(), 2);
        // Hidden, without a state: no run.
        assert!(store.list().unwrap().is_empty());
        let (ws, state) = fresh(&store, "20260101-kit");
        store
            .create_with_files(&ws, &state, &[("request.md", b"the request\n")])
            .unwrap();
        assert!(!kit.exists(), "renamed to the run's folder");
        assert_eq!(ino(&ws.dir.join(LOCK_FILE)), lock_ino);
        assert_eq!(ino(&ws.dir.join(crate::journal::JOURNAL_FILE)), journal_ino);
        assert!(spare_inos.contains(&ino(&ws.state_file())));
        assert!(spare_inos.contains(&ino(&ws.dir.join("request.md"))));
        assert_eq!(
            std::fs::read_to_string(ws.dir.join(IGNORE_FILE)).unwrap(),
            IGNORE_CONTENT
        );
        assert_eq!(
            std::fs::read_to_string(ws.dir.join("request.md")).unwrap(),
            "the request\n"
        );
        assert_eq!(store.load(&ws).unwrap().spec_name, "test");
        assert_eq!(store.list().unwrap().len(), 1);
        // One kit per start: the next run is made as before unless asked.
        assert!(kit_dirs(store.specs_root()).is_empty());
        crate::durable::flush();
    }

    #[test]
    fn a_taken_name_leaves_the_kit_unused_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = server_store(dir.path());
        store.prepare_kit();
        let (ws, state) = fresh(&store, "20260101-taken");
        // A folder of that name is there already (a retried confirmation).
        std::fs::create_dir_all(&ws.dir).unwrap();
        std::fs::write(ws.dir.join("notes.md"), "mine").unwrap();
        store.create_with_files(&ws, &state, &[]).unwrap();
        assert!(
            kit_dirs(store.specs_root()).is_empty(),
            "the kit was removed"
        );
        assert_eq!(
            std::fs::read_to_string(ws.dir.join("notes.md")).unwrap(),
            "mine"
        );
        assert!(store.load(&ws).is_ok());
        crate::durable::flush();
    }

    #[test]
    fn kits_of_gone_processes_are_swept_and_anything_else_keeps_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let store = server_store(dir.path());
        let specs = store.specs_root().to_path_buf();
        let make = |name: &str, extra: bool| {
            let kit = specs.join(name);
            std::fs::create_dir_all(&kit).unwrap();
            std::fs::write(kit.join(LOCK_FILE), "").unwrap();
            std::fs::write(kit.join(IGNORE_FILE), IGNORE_CONTENT).unwrap();
            std::fs::write(kit.join(".state.json.ab12.tmp"), "").unwrap();
            if extra {
                std::fs::write(kit.join("keep.txt"), "not a kit's").unwrap();
            }
            kit
        };
        let gone = make(".new-run-1-00aa", false);
        let odd = make(".new-run-2-00bb", true);
        store.prepare_kit();
        let own = kit_dirs(&specs)
            .into_iter()
            .find(|k| *k != gone && *k != odd)
            .unwrap();
        store.sweep_temp_files(std::time::Duration::ZERO);
        assert!(!gone.exists());
        assert!(odd.join("keep.txt").exists(), "only a kit's files go");
        assert!(!odd.join(LOCK_FILE).exists());
        assert!(own.join(LOCK_FILE).exists(), "this process's kit stays");
        // At exit: the kit goes, and the specs folder if it was made for it.
        let kit = take(&specs).unwrap();
        remove(&specs, kit);
        assert!(!own.exists());
        let other = tempfile::tempdir().unwrap();
        let store = server_store(other.path());
        store.prepare_kit();
        assert!(store.specs_root().exists());
        let kit = take(store.specs_root()).unwrap();
        remove(store.specs_root(), kit);
        assert!(
            !store.specs_root().exists(),
            "made for the kit, empty again"
        );
    }

    #[test]
    fn a_one_shot_process_makes_no_kit() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path(), &dir.path().join(".specs"));
        store.prepare_kit();
        assert!(!store.specs_root().exists());
    }
}
