//! Durability costs at most one sync per state change, off the reply's path
//! (`Durability::Background`), or exactly one before it
//! (`Durability::BeforeReply`); a run that ends leaves no journal behind.
//!
//! One test in this binary: the sync counters are per process.

use baton_state::durable::{self, Durability, sync_counts};
use baton_state::journal::JOURNAL_FILE;
use baton_state::schema::PhaseStatus;
use baton_state::{StateStore, WorkspaceState};
use chrono::Utc;

const CHANGES: u64 = 40;

fn run(store: &StateStore, name: &str) -> baton_state::WorkspaceRef {
    let ws = store.resolve(name).unwrap();
    let state = WorkspaceState::fresh("forge", "phase-1", name, &ws.display, "t", Utc::now());
    store.create(&ws, &state).unwrap();
    for k in 0..CHANGES {
        store
            .update(&ws, Utc::now(), |s| {
                s.debug = k % 2 == 0;
                if k + 1 == CHANGES {
                    s.current_phase_status = PhaseStatus::Completed;
                }
                Ok::<_, ()>(())
            })
            .unwrap();
    }
    ws
}

#[test]
fn one_sync_per_state_change_at_most_and_the_journal_goes_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join(".specs");

    // Before the reply: each change is synced by the call itself, once.
    let strict = StateStore::new(dir.path(), &specs).with_durability_mode(Durability::BeforeReply);
    let before = sync_counts();
    let ws = run(&strict, "20260101-strict");
    let spent = sync_counts();
    let data = spent.data - before.data;
    let folders = spent.folders - before.folders;
    // The creation: the journal (request and state), the workspace folder
    // and the specs folder; then one journal sync per change; the run's end:
    // the state file, the folder, and the journal removed.
    assert_eq!(data, 1 + CHANGES + 1, "{spent:?}");
    assert!(folders <= 3, "{spent:?}");
    assert_eq!(spent.checkpoints - before.checkpoints, 1);
    assert!(
        !ws.dir.join(JOURNAL_FILE).exists(),
        "the ended run's journal is gone"
    );
    let state = strict.load(&ws).unwrap();
    assert_eq!(state.current_phase_status, PhaseStatus::Completed);

    // In the background: the same or fewer (changes that meet in one pass
    // of the syncer share its sync), and none of them before a reply.
    let background =
        StateStore::new(dir.path(), &specs).with_durability_mode(Durability::Background);
    let before = sync_counts();
    let ws = run(&background, "20260101-background");
    durable::flush();
    let spent = sync_counts();
    let syncs = (spent.data - before.data) + (spent.folders - before.folders);
    // Per change at most one; the creation and the end add a few per run.
    assert!(syncs <= CHANGES + 6, "{spent:?}");
    assert!(!ws.dir.join(JOURNAL_FILE).exists());

    // Off: no journal, no sync.
    let off = StateStore::new(dir.path(), &specs).with_durability(false);
    let before = sync_counts();
    let ws = off.resolve("20260101-off").unwrap();
    off.create(
        &ws,
        &WorkspaceState::fresh("forge", "phase-1", "o", &ws.display, "t", Utc::now()),
    )
    .unwrap();
    off.update(&ws, Utc::now(), |s| {
        s.debug = true;
        Ok::<_, ()>(())
    })
    .unwrap();
    durable::flush();
    assert_eq!(sync_counts(), before);
    assert!(!ws.dir.join(JOURNAL_FILE).exists());
}
