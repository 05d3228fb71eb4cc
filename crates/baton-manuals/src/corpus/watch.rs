//! Cheap change detection: a `notify` watcher on the manuals root marks
//! manuals dirty; the service refreshes only those before the next call.
//!
//! Events are mapped to the manual of their first path component. Events on
//! the root itself, events with no path, watcher errors and rescan
//! notifications mark everything dirty. If the watcher cannot be started
//! the service falls back to `stat`-based polling (see `docs/manuals.md`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use notify::{RecursiveMode, Watcher};

/// What changed since the last refresh.
#[derive(Debug, Default)]
pub(crate) struct DirtySet {
    /// Everything must be re-checked.
    pub all: bool,
    /// Manuals with file events.
    pub manuals: BTreeSet<String>,
}

/// A running watcher and the dirty set it fills.
pub(crate) struct ChangeWatcher {
    _watcher: notify::RecommendedWatcher,
    dirty: Arc<Mutex<DirtySet>>,
}

impl ChangeWatcher {
    /// Starts watching `root` (canonical) recursively.
    pub(crate) fn start(root: &Path) -> notify::Result<Self> {
        let dirty = Arc::new(Mutex::new(DirtySet::default()));
        let sink = Arc::clone(&dirty);
        let root_buf: PathBuf = root.to_path_buf();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Reads (opening, accessing, closing unwritten) change
                // nothing; the service itself reads files to show text.
                if let Ok(e) = &event
                    && is_read_only(&e.kind)
                {
                    return;
                }
                let Ok(mut set) = sink.lock() else { return };
                match event {
                    Ok(event) if !event.need_rescan() && !event.paths.is_empty() => {
                        for path in &event.paths {
                            mark(&mut set, &root_buf, path);
                        }
                    }
                    _ => set.all = true,
                }
            })?;
        watcher.watch(root, RecursiveMode::Recursive)?;
        Ok(ChangeWatcher {
            _watcher: watcher,
            dirty,
        })
    }

    /// Takes the accumulated dirty set (leaving it empty).
    pub(crate) fn take(&self) -> DirtySet {
        match self.dirty.lock() {
            Ok(mut set) => std::mem::take(&mut *set),
            Err(_) => DirtySet {
                all: true,
                manuals: BTreeSet::new(),
            },
        }
    }

    /// Whether something is pending (without taking it).
    #[cfg(test)]
    pub(crate) fn is_dirty(&self) -> bool {
        self.dirty
            .lock()
            .map(|s| s.all || !s.manuals.is_empty())
            .unwrap_or(true)
    }
}

/// Whether an event only reports a read.
fn is_read_only(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        notify::EventKind::Access(_) => true,
        _ => false,
    }
}

fn mark(set: &mut DirtySet, root: &Path, path: &Path) {
    let Ok(rel) = path.strip_prefix(root) else {
        set.all = true;
        return;
    };
    let mut components = rel.components();
    match (components.next(), components.next()) {
        (Some(first), Some(_)) => {
            let name = first.as_os_str().to_string_lossy();
            if !name.starts_with('.') {
                set.manuals.insert(name.into_owned());
            }
        }
        // The root itself or a direct child (a manual directory appeared/vanished).
        _ => set.all = true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_not_changes() {
        use notify::EventKind;
        use notify::event::{AccessKind, AccessMode, ModifyKind};
        assert!(is_read_only(&EventKind::Access(AccessKind::Open(
            AccessMode::Read
        ))));
        assert!(is_read_only(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(!is_read_only(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(!is_read_only(&EventKind::Modify(ModifyKind::Any)));
    }

    #[test]
    fn events_map_to_their_manual() {
        let root = Path::new("/r");
        let mut set = DirtySet::default();
        mark(&mut set, root, Path::new("/r/m1/a/b.md"));
        mark(&mut set, root, Path::new("/r/.hidden/x.md"));
        assert!(!set.all);
        assert_eq!(set.manuals.iter().collect::<Vec<_>>(), ["m1"]);
        mark(&mut set, root, Path::new("/r/m2"));
        assert!(set.all);
    }
}
