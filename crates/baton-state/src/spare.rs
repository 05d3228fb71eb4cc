//! Fresh files for the next atomic write of a workspace's state, made off
//! the reply's path.
//!
//! Every state change writes a new file and renames it over `state.json`
//! (crate::store::write_atomic): a reader without the lock — a hook, the
//! dashboard, `baton show`, the first read of a call — holds the old file
//! or the new one, never one being written, because a file that was ever
//! `state.json` is never written again. Making that new file (an inode) is
//! the dearest system call of a change on a filesystem that scans for a
//! free inode (ext4 without a journal scans past recently deleted ones),
//! and dropping the replaced file is the next dearest (its inode is freed
//! at its last close). Both move to the syncer thread here
//! ([`crate::durable`], background durability only):
//!
//! * after a change, the syncer makes the workspace's next file — empty,
//!   under a name the workspace's `.gitignore` covers
//!   (`.state.json.<random>.tmp`) — and keeps it open ([`prepare`]); the next
//!   change takes it ([`take`]), checks with one look that the name still
//!   holds that very file, empty (else it makes its own, as before), writes
//!   it and renames it into place. It is a file no reader ever had as the
//!   state: the reasoning above is unchanged.
//! * the replaced file, which the store keeps open to read the state
//!   without opening it (crate::parsed), is closed by the syncer
//!   ([`retire`]), so its inode is freed off the reply's path too.
//!
//! A process killed with a spare made leaves an empty ignored file, removed
//! by the next server's sweep (crate::store::StateStore::sweep_temp_files),
//! which never removes a spare of its own process.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// An empty file made for a workspace's next state write.
#[derive(Debug)]
pub struct Spare {
    /// Its name in the workspace folder.
    pub path: PathBuf,
    /// The file, open for writing.
    pub file: File,
    /// Its device and inode, to tell that the name still holds it.
    pub id: (u64, u64),
    /// Its permission bits.
    pub mode: u32,
}

fn spares() -> &'static Mutex<HashMap<PathBuf, Vec<Spare>>> {
    static SPARES: OnceLock<Mutex<HashMap<PathBuf, Vec<Spare>>>> = OnceLock::new();
    SPARES.get_or_init(|| Mutex::new(HashMap::new()))
}

fn retired() -> &'static Mutex<Vec<Arc<File>>> {
    static RETIRED: OnceLock<Mutex<Vec<Arc<File>>>> = OnceLock::new();
    RETIRED.get_or_init(|| Mutex::new(Vec::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How many workspaces keep spares (a long-lived server works on few at a
/// time; past this, one's are dropped and their files removed).
const KEPT: usize = 16;

/// How many spares a workspace keeps: two, so that a change that comes
/// before the syncer has made the file for it (calls sent back to back)
/// still finds one.
const PER_WORKSPACE: usize = 2;

/// Takes a spare made for workspace folder `dir`, if there is one.
pub fn take(dir: &Path) -> Option<Spare> {
    lock(spares()).get_mut(dir).and_then(Vec::pop)
}

/// Records that workspace folder `dir` wants spares (a change of a run
/// that goes on, before it hands the syncer [`prepare`]): only such a
/// folder gets them, so a [`prepare`] that runs after the run ended
/// ([`discard`]) makes none. Past [`KEPT`] folders, another one's spares
/// are dropped and their files removed.
pub fn want(dir: &Path) {
    let mut all = lock(spares());
    if all.contains_key(dir) {
        return;
    }
    if all.len() >= KEPT
        && let Some(other) = all.keys().next().cloned()
        && let Some(gone) = all.remove(&other)
    {
        for spare in gone {
            let _ = std::fs::remove_file(&spare.path);
        }
    }
    all.insert(dir.to_path_buf(), Vec::new());
}

/// Makes the spares of workspace folder `dir` it lacks (the syncer, after
/// a change), when it still wants them ([`want`]). Failing to make one
/// changes nothing: the next write makes its own file.
pub fn prepare(dir: &Path) {
    let Some(have) = lock(spares()).get(dir).map(Vec::len) else {
        return;
    };
    for _ in have..PER_WORKSPACE {
        if !prepare_one(dir) {
            return;
        }
    }
}

/// Makes one spare of `dir`; whether it was made.
fn prepare_one(dir: &Path) -> bool {
    let Some(spare) = make_in(dir) else {
        return false;
    };
    let mut all = lock(spares());
    // Its run ended meanwhile (or it went past KEPT): not wanted.
    let Some(kept) = all.get_mut(dir) else {
        let _ = std::fs::remove_file(&spare.path);
        return false;
    };
    if kept.len() >= PER_WORKSPACE {
        // Made meanwhile by another pass: not needed.
        let _ = std::fs::remove_file(&spare.path);
        return false;
    }
    kept.push(spare);
    true
}

/// Keeps `made`, spares made in another folder that has just been renamed
/// to workspace folder `dir` (a new run's folder made ahead, crate::kit),
/// as `dir`'s spares.
pub(crate) fn adopt(dir: &Path, made: Vec<Spare>) {
    // Counted among the workspaces that keep spares (past KEPT, another's go).
    want(dir);
    let mut all = lock(spares());
    let kept = all.entry(dir.to_path_buf()).or_default();
    for mut spare in made {
        if let Some(name) = spare.path.file_name() {
            spare.path = dir.join(name);
            kept.push(spare);
        }
    }
}

/// Makes an empty spare file in folder `dir`, with the permissions the
/// folder's state file has (or would have); `None` when it cannot.
pub(crate) fn make_in(dir: &Path) -> Option<Spare> {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::PermissionsExt;
    // With the permissions the state file has now, so that the write that
    // takes it needs no chmod (it still checks).
    let wanted =
        crate::fs::permissions_for(&dir.join(crate::store::STATE_FILE)).map(|p| p.mode() & 0o7777);
    let mut builder = tempfile::Builder::new();
    builder.prefix(".state.json.").suffix(".tmp");
    if let Some(mode) = wanted.filter(|m| crate::fs::created_exactly(*m)) {
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    let made = builder
        .tempfile_in(dir)
        .and_then(|tmp| tmp.keep().map_err(|e| e.error));
    let (file, path) = made.ok()?;
    if let Some(mode) = wanted {
        let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
    }
    let Ok(meta) = file.metadata() else {
        let _ = std::fs::remove_file(&path);
        return None;
    };
    Some(Spare {
        path,
        file,
        id: (meta.dev(), meta.ino()),
        mode: meta.mode() & 0o7777,
    })
}

/// Removes the spare of workspace folder `dir` (its run has ended: no
/// file is left in its folder).
pub fn discard(dir: &Path) {
    let gone = lock(spares()).remove(dir).unwrap_or_default();
    for spare in gone {
        let _ = std::fs::remove_file(&spare.path);
    }
}

/// Whether `path` is a spare this process keeps (the sweep leaves it).
pub fn is_kept(path: &Path) -> bool {
    lock(spares()).values().flatten().any(|s| s.path == path)
}

/// Hands a replaced file kept open to the syncer to close (its inode is
/// freed at that close, off the reply's path).
pub fn retire(file: Arc<File>) {
    lock(retired()).push(file);
}

/// Closes the files handed over with [`retire`] (the syncer).
pub fn close_retired() {
    let files = std::mem::take(&mut *lock(retired()));
    drop(files);
}

/// Removes this process's spares and new runs' folders made ahead
/// (crate::kit) at its exit: no empty file stays.
pub fn remove_all() {
    remove_under(Path::new("/"));
}

/// [`remove_all`] for the spares and kits under folder `root` only (a
/// test removes its own, not those of the tests running beside it).
pub(crate) fn remove_under(root: &Path) {
    crate::kit::remove_under(root);
    let gone: Vec<Vec<Spare>> = {
        let mut all = lock(spares());
        let dirs: Vec<PathBuf> = all
            .keys()
            .filter(|d| d.starts_with(root))
            .cloned()
            .collect();
        dirs.iter().filter_map(|d| all.remove(d)).collect()
    };
    for spare in gone.into_iter().flatten() {
        let _ = std::fs::remove_file(&spare.path);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use crate::store::StateStore;
    use crate::{PhaseStatus, WorkspaceState};

    fn temp_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                name.starts_with(".state.json.")
                    && name.ends_with(".tmp")
                    && name != crate::journal::JOURNAL_FILE
            })
            .collect();
        out.sort();
        out
    }

    fn change(store: &StateStore, ws: &crate::WorkspaceRef, k: u32) {
        store
            .update(ws, chrono::Utc::now(), |s| {
                s.current_phase_status = if k.is_multiple_of(2) {
                    PhaseStatus::InProgress
                } else {
                    PhaseStatus::Failed
                };
                Ok::<_, ()>(())
            })
            .unwrap();
    }

    #[test]
    fn the_next_state_file_is_made_off_the_path_and_only_used_while_it_is_the_one_made() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path(), &dir.path().join(".specs"));
        store.start_syncer();
        let ws = store.resolve("20260101-spare").unwrap();
        let first = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "spare",
            &ws.display,
            "t",
            chrono::Utc::now(),
        );
        store.create(&ws, &first).unwrap();
        crate::durable::flush();
        // The creation makes none (the confirmation stays as fast as it was).
        assert!(temp_files(&ws.dir).is_empty());
        change(&store, &ws, 1);
        crate::durable::flush();
        let ino = |p: &std::path::Path| std::fs::metadata(p).unwrap().ino();
        // Two empty spares, under the workspace's .gitignore pattern.
        let made = temp_files(&ws.dir);
        assert_eq!(made.len(), 2, "{made:?}");
        assert!(
            made.iter()
                .all(|p| std::fs::metadata(p).unwrap().len() == 0)
        );
        let inos: Vec<u64> = made.iter().map(|p| ino(p)).collect();
        // The next change writes one and renames it into place.
        change(&store, &ws, 0);
        let state = std::fs::metadata(ws.state_file()).unwrap();
        assert!(inos.contains(&state.ino()), "a spare became state.json");
        assert_eq!(state.mode() & 0o777, 0o644);
        // (The syncer may have made its successor already.)
        assert!(temp_files(&ws.dir).iter().all(|p| ino(p) != state.ino()));
        assert_eq!(
            store.load(&ws).unwrap().current_phase_status,
            PhaseStatus::InProgress
        );
        crate::durable::flush();
        // Made again; the sweep of this process keeps them.
        let made = temp_files(&ws.dir);
        assert_eq!(made.len(), 2, "{made:?}");
        assert_eq!(store.sweep_temp_files(std::time::Duration::ZERO), 0);
        assert!(made.iter().all(|p| p.exists()));
        // Other files put at their names are never moved into place: the
        // change makes its own file, and the strangers stay where they are.
        let mut strangers = Vec::new();
        for (k, spare) in made.iter().enumerate() {
            let stranger = dir.path().join(format!("stranger{k}"));
            std::fs::write(&stranger, b"").unwrap();
            strangers.push(ino(&stranger));
            std::fs::rename(&stranger, spare).unwrap();
        }
        change(&store, &ws, 1);
        assert_eq!(
            store.load(&ws).unwrap().current_phase_status,
            PhaseStatus::Failed
        );
        assert!(!strangers.contains(&ino(&ws.state_file())));
        for (spare, stranger) in made.iter().zip(&strangers) {
            assert_eq!(ino(spare), *stranger, "the stranger is left alone");
        }
        crate::durable::flush();
        super::discard(&ws.dir);
        for spare in &made {
            let _ = std::fs::remove_file(spare);
        }
        change(&store, &ws, 2);
        crate::durable::flush();
        // Spares written to behind baton's back are not used either.
        let made = temp_files(&ws.dir);
        assert_eq!(made.len(), 2, "{made:?}");
        for spare in &made {
            std::fs::write(spare, b"{\"not\": \"baton's\"}").unwrap();
        }
        change(&store, &ws, 3);
        assert_eq!(
            store.load(&ws).unwrap().current_phase_status,
            PhaseStatus::Failed
        );
        crate::durable::flush();
        super::discard(&ws.dir);
        for spare in &made {
            let _ = std::fs::remove_file(spare);
        }
        change(&store, &ws, 4);
        crate::durable::flush();
        // A rewritten state keeps the permissions of the one it replaces.
        std::fs::set_permissions(
            ws.state_file(),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        change(&store, &ws, 5);
        assert_eq!(
            std::fs::metadata(ws.state_file()).unwrap().mode() & 0o777,
            0o600
        );
        // A run that ends keeps no spare in its folder.
        crate::durable::flush();
        assert_eq!(temp_files(&ws.dir).len(), 2);
        abandon(&store, &ws);
        crate::durable::flush();
        assert!(temp_files(&ws.dir).is_empty());
        // At exit no spare stays.
        let other = store.resolve("20260101-other").unwrap();
        store.create(&other, &first).unwrap();
        change(&store, &other, 1);
        crate::durable::flush();
        assert_eq!(temp_files(&other.dir).len(), 2);
        // (What `remove_all` does at exit, for this test's folder only.)
        super::remove_under(dir.path());
        assert!(temp_files(&other.dir).is_empty());
    }

    fn run(name: &str) -> (tempfile::TempDir, StateStore, crate::WorkspaceRef) {
        let dir = tempfile::tempdir().unwrap();
        let (store, ws) = crate::testing::created_run(dir.path(), name, true);
        (dir, store, ws)
    }

    fn abandon(store: &StateStore, ws: &crate::WorkspaceRef) {
        store
            .update(ws, chrono::Utc::now(), |s| {
                s.current_phase_status = PhaseStatus::Abandoned;
                Ok::<_, ()>(())
            })
            .unwrap();
    }

    /// A spare whose permissions were changed after it was made is set
    /// back to the state's before it is moved into place.
    #[test]
    fn a_spare_whose_mode_changed_gets_the_state_s_mode_again() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, store, ws) = run("20260101-spare-mode");
        change(&store, &ws, 1);
        crate::durable::flush();
        let made = temp_files(&ws.dir);
        assert_eq!(made.len(), 2, "{made:?}");
        for spare in &made {
            std::fs::set_permissions(spare, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
        change(&store, &ws, 2);
        let state = std::fs::metadata(ws.state_file()).unwrap();
        assert!(
            made.iter().any(|p| !p.exists()),
            "a spare became state.json"
        );
        assert_eq!(state.mode() & 0o777, 0o644);
        super::discard(&ws.dir);
    }

    /// The syncer's pass for a change that comes after the run ended (its
    /// last change came right behind) makes no spare in its folder.
    #[test]
    fn no_spare_is_made_for_a_run_that_ended_before_the_syncer_came() {
        let (_dir, store, ws) = run("20260101-spare-ended");
        change(&store, &ws, 1);
        crate::durable::flush();
        assert_eq!(temp_files(&ws.dir).len(), 2);
        abandon(&store, &ws);
        crate::durable::flush();
        assert!(temp_files(&ws.dir).is_empty());
        // The pass the change before asked for, run late.
        super::prepare(&ws.dir);
        assert!(temp_files(&ws.dir).is_empty());
        assert!(super::take(&ws.dir).is_none());
    }
}
