//! The store: workspace resolution, atomic writes, corruption handling, locking.

mod common;

use std::path::Path;
use std::sync::Arc;

use baton_state::{StateStore, StoreError, UpdateError, WorkspaceState};
use chrono::Utc;

fn setup() -> (tempfile::TempDir, StateStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path(), &dir.path().join(".specs"));
    (dir, store)
}

fn fresh(ws: &str) -> WorkspaceState {
    WorkspaceState::fresh("forge", "phase-1", "x", ws, "test", Utc::now())
}

#[test]
fn three_spellings_resolve_to_one_workspace() {
    let (dir, store) = setup();
    let a = store.resolve("20260401-fix").unwrap();
    let b = store.resolve(".specs/20260401-fix").unwrap();
    let c = store
        .resolve(dir.path().join(".specs/20260401-fix/").to_str().unwrap())
        .unwrap();
    let d = store.resolve("./.specs/./20260401-fix").unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a, d);
    assert_eq!(a.display, ".specs/20260401-fix");
    assert_eq!(a.spec_name(), "fix");
}

#[test]
fn escapes_and_malformed_names_are_refused() {
    let (dir, store) = setup();
    for input in [
        "../etc",
        ".specs/../x",
        "/etc/passwd",
        ".specs/a/b",
        "..",
        ".specs/..",
    ] {
        assert!(
            matches!(store.resolve(input), Err(StoreError::OutOfScope { .. })),
            "{input}"
        );
    }
    let long = "a".repeat(200);
    for input in ["", "  ", "-x", "a b", "a\0b", "名前", long.as_str()] {
        assert!(
            matches!(
                store.resolve(input),
                Err(StoreError::InvalidWorkspace { .. })
            ),
            "{input:?}"
        );
    }
    // A symlink under the specs root that leads elsewhere is refused.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(dir.path().join(".specs")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join(".specs/link")).unwrap();
    assert!(matches!(
        store.resolve("link"),
        Err(StoreError::OutOfScope { .. })
    ));
}

#[test]
fn create_refuses_an_existing_workspace() {
    let (_dir, store) = setup();
    let ws = store.resolve("w1").unwrap();
    store.create(&ws, &fresh(&ws.display)).unwrap();
    assert!(matches!(
        store.create(&ws, &fresh(&ws.display)),
        Err(StoreError::AlreadyExists { .. })
    ));
    assert_eq!(store.load(&ws).unwrap().workspace, ".specs/w1");
}

#[test]
fn a_corrupt_state_file_is_reported_and_never_overwritten() {
    let (_dir, store) = setup();
    let ws = store.resolve("w1").unwrap();
    store.create(&ws, &fresh(&ws.display)).unwrap();
    std::fs::write(ws.state_file(), "{\"version\": 3, \"trunc").unwrap();
    let err = store.load(&ws).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }));
    assert!(err.to_string().contains("state.json"), "{err}");
    let result = store.update(&ws, Utc::now(), |s| {
        s.debug = true;
        Ok::<_, ()>(())
    });
    assert!(matches!(
        result,
        Err(UpdateError::Store(StoreError::Corrupt { .. }))
    ));
    assert_eq!(
        std::fs::read_to_string(ws.state_file()).unwrap(),
        "{\"version\": 3, \"trunc"
    );
}

#[test]
fn a_rejected_change_writes_nothing() {
    let (_dir, store) = setup();
    let ws = store.resolve("w1").unwrap();
    store.create(&ws, &fresh(&ws.display)).unwrap();
    let before = std::fs::read(ws.state_file()).unwrap();
    let result = store.update(&ws, Utc::now(), |s| {
        s.debug = true;
        Err::<(), _>("no")
    });
    assert!(matches!(result, Err(UpdateError::Rejected("no"))));
    assert_eq!(std::fs::read(ws.state_file()).unwrap(), before);
    // No temp files are left behind (the journal, named to match the
    // ignore pattern older workspaces have, is no temp file).
    let leftovers: Vec<_> = std::fs::read_dir(&ws.dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .filter(|e| e.file_name() != baton_state::journal::JOURNAL_FILE)
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn missing_workspaces_are_not_found_and_not_created() {
    let (_dir, store) = setup();
    let ws = store.resolve("nope").unwrap();
    assert!(matches!(store.load(&ws), Err(StoreError::NotFound { .. })));
    let r = store.update(&ws, Utc::now(), |_| Ok::<_, ()>(()));
    assert!(matches!(
        r,
        Err(UpdateError::Store(StoreError::NotFound { .. }))
    ));
    assert!(!ws.dir.exists());
}

#[test]
fn concurrent_updates_from_many_threads_lose_nothing() {
    let (_dir, store) = setup();
    let ws = store.resolve("w1").unwrap();
    store.create(&ws, &fresh(&ws.display)).unwrap();
    let store = Arc::new(store);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let store = Arc::clone(&store);
            let ws = ws.clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    store
                        .update(&ws, Utc::now(), |s| {
                            s.revisions.design_revisions += 1;
                            Ok::<_, ()>(())
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(store.load(&ws).unwrap().revisions.design_revisions, 200);
}

#[test]
fn list_returns_workspaces_with_their_state_or_error() {
    let (_dir, store) = setup();
    for name in ["20260102-b", "20260101-a"] {
        let ws = store.resolve(name).unwrap();
        store.create(&ws, &fresh(&ws.display)).unwrap();
    }
    std::fs::create_dir_all(store.specs_root().join("not-a-workspace")).unwrap();
    let bad = store.resolve("20260103-c").unwrap();
    std::fs::create_dir_all(&bad.dir).unwrap();
    std::fs::write(bad.state_file(), "nope").unwrap();
    let list = store.list().unwrap();
    let names: Vec<_> = list.iter().map(|(w, _)| w.name.as_str()).collect();
    assert_eq!(names, ["20260101-a", "20260102-b", "20260103-c"]);
    assert!(list[2].1.is_err());
    assert!(Path::new(&list[0].0.dir).is_absolute());
}

#[test]
fn the_tag_is_checked_on_the_bytes_read_and_an_edit_behind_the_store_is_seen() {
    use baton_state::integrity::TagCheck;
    let (_dir, store) = setup();
    let store = store.with_signer(Arc::new(common::TestSigner));
    let ws = store.resolve("20260401-tag").unwrap();
    store.create(&ws, &fresh(&ws.display)).unwrap();
    let (state, check) = store.load_checked(&ws).unwrap();
    assert_eq!(check, TagCheck::Intact);
    assert_eq!(state.spec_name, "x");
    store
        .update(&ws, Utc::now(), |s| {
            s.spec_name = "y".into();
            Ok::<_, ()>(())
        })
        .unwrap();
    assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Intact);
    // Edited in place, same length (a copy of the bytes the store keeps
    // would not see it): read again and checked again.
    let text = std::fs::read_to_string(ws.state_file()).unwrap();
    let edited = text.replacen("\"specName\": \"y\"", "\"specName\": \"z\"", 1);
    assert_ne!(edited, text);
    assert_eq!(edited.len(), text.len());
    std::fs::write(ws.state_file(), &edited).unwrap();
    let (state, check) = store.load_checked(&ws).unwrap();
    assert_eq!(state.spec_name, "z");
    assert_eq!(check, TagCheck::Changed);
    // Put back as baton wrote it: intact again.
    std::fs::write(ws.state_file(), &text).unwrap();
    assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Intact);
    // The tag taken off: untagged; another key's tag: another key.
    let (original, tag) = baton_state::integrity::split(&text);
    assert!(tag.is_some());
    std::fs::write(ws.state_file(), &original).unwrap();
    assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::Untagged);
    let other = baton_state::integrity::append(&original, "test:key2:0-0");
    std::fs::write(ws.state_file(), &other).unwrap();
    assert_eq!(store.load_checked(&ws).unwrap().1, TagCheck::OtherKey);
    // Without a signer there is nothing to check with.
    let plain = StateStore::new(_dir.path(), &_dir.path().join(".specs"));
    assert_eq!(plain.load_checked(&ws).unwrap().1, TagCheck::Unknown);
}
