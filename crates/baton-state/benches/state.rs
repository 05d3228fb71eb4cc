//! In-process benchmarks of the state layer: the pure lifecycle transition and
//! the persisted, locked load → modify → atomic write that every mutating tool
//! call performs.
//!
//! Run: `cargo bench -p baton-state --bench state`

use baton_state::{Durability, Lifecycle, StateStore, WorkspaceState};
use baton_workflow::Registry;
use chrono::Utc;

fn main() {
    divan::main();
}

/// start + fail of phase-1 on an in-memory state: the pure state machine.
#[divan::bench]
fn lifecycle_start_fail_in_memory(bencher: divan::Bencher) {
    let registry = Registry::builtin();
    let forge = registry.get("forge").unwrap();
    let mut state = WorkspaceState::fresh("forge", "phase-1", "b", ".specs/b", "bench", Utc::now());
    bencher.bench_local(|| {
        let lc = Lifecycle::new(&forge, Utc::now());
        lc.start(&mut state, "phase-1").unwrap();
        lc.fail(&mut state, "phase-1", "x").unwrap();
        // Keep the history from growing without bound across iterations.
        state.history.truncate(1);
    });
}

/// One mutating call's persistence: lock, read + parse + migrate, transition,
/// serialise, journal record, temp file + rename — in each durability mode:
/// the journal synced by the sync thread after the call (`Background`, the
/// default), before it returns (`BeforeReply`), or neither (`Off`).
#[divan::bench(args = [Durability::Background, Durability::BeforeReply, Durability::Off])]
fn store_update(bencher: divan::Bencher, mode: Durability) {
    // On the repository's disk, not a tmpfs, so fsync costs what it costs.
    let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let store = StateStore::new(dir.path(), &dir.path().join(".specs")).with_durability_mode(mode);
    let ws = fresh_workspace(&store);
    let registry = Registry::builtin();
    let forge = registry.get("forge").unwrap();
    let mut started = false;
    bencher.bench_local(|| {
        let now = Utc::now();
        store
            .update(&ws, now, |s| {
                let lc = Lifecycle::new(&forge, now);
                if started {
                    lc.fail(s, "phase-1", "x")
                } else {
                    lc.start(s, "phase-1")
                }
            })
            .unwrap();
        started = !started;
    });
}

/// A read-only call's persistence: read + parse + migrate state.json.
#[divan::bench]
fn store_load(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path(), &dir.path().join(".specs"));
    let ws = fresh_workspace(&store);
    bencher.bench_local(|| store.load(&ws).unwrap());
}

/// A new forge workspace at its first phase.
fn fresh_workspace(store: &StateStore) -> baton_state::WorkspaceRef {
    let ws = store.resolve("20260101-bench").unwrap();
    let state = WorkspaceState::fresh(
        "forge",
        "phase-1",
        "bench",
        &ws.display,
        "bench",
        Utc::now(),
    );
    store.create(&ws, &state).unwrap();
    ws
}
