//! Sealing: the run's final form is written into state.json before its
//! commit while the live state of the last steps goes to `.state.live.json`;
//! a completed run leaves state.json as sealed, an abandoned one writes it.

use baton_state::schema::PhaseStatus;
use baton_state::store::{LIVE_STATE_FILE, StateStore};
use baton_state::{Finish, WorkspaceState};

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

fn setup() -> (tempfile::TempDir, StateStore, baton_state::WorkspaceRef) {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join(".specs");
    let store = StateStore::new(dir.path(), &specs).with_durability(false);
    let ws = store.resolve("20260101-seal").unwrap();
    let state = WorkspaceState::fresh("forge", "final-commit", "seal", &ws.display, "t", now());
    store.create(&ws, &state).unwrap();
    (dir, store, ws)
}

fn sealed_final(state: &WorkspaceState) -> WorkspaceState {
    let mut f = state.clone();
    f.current_phase = "completed".into();
    f.current_phase_status = PhaseStatus::Completed;
    f
}

#[test]
fn a_sealed_run_keeps_its_final_form_and_ends_cleanly() {
    let (_dir, store, ws) = setup();
    // The workspace ignores baton's runtime files from the start.
    let ignore = std::fs::read_to_string(ws.dir.join(".gitignore")).unwrap();
    assert!(ignore.contains(".state.lock") && ignore.contains(LIVE_STATE_FILE));
    store
        .update_sealing(&ws, now(), |s, sealed| {
            assert!(!sealed);
            s.current_phase_status = PhaseStatus::InProgress;
            let final_form = sealed_final(s);
            Ok::<_, ()>(((), Finish::Seal(Box::new(final_form))))
        })
        .unwrap();
    assert!(store.is_sealed(&ws));
    let on_disk = std::fs::read_to_string(ws.state_file()).unwrap();
    assert!(on_disk.contains("\"currentPhaseStatus\": \"completed\""));
    // Loads and updates see the live state.
    assert_eq!(
        store.load(&ws).unwrap().current_phase_status,
        PhaseStatus::InProgress
    );
    store
        .update(&ws, now(), |s| {
            s.command_step = 1;
            Ok::<_, ()>(())
        })
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.state_file()).unwrap(),
        on_disk,
        "state.json untouched"
    );
    // The run completes: the live file goes, state.json stays as sealed.
    store
        .update(&ws, now(), |s| {
            s.current_phase = "completed".into();
            s.current_phase_status = PhaseStatus::Completed;
            Ok::<_, ()>(())
        })
        .unwrap();
    assert!(!store.is_sealed(&ws));
    assert_eq!(std::fs::read_to_string(ws.state_file()).unwrap(), on_disk);
}

#[test]
fn an_abandoned_sealed_run_says_so_in_state_json() {
    let (_dir, store, ws) = setup();
    store
        .update_sealing(&ws, now(), |s, _| {
            let final_form = sealed_final(s);
            Ok::<_, ()>(((), Finish::Seal(Box::new(final_form))))
        })
        .unwrap();
    store
        .update(&ws, now(), |s| {
            s.current_phase_status = PhaseStatus::Abandoned;
            Ok::<_, ()>(())
        })
        .unwrap();
    assert!(!store.is_sealed(&ws));
    assert_eq!(
        store.load(&ws).unwrap().current_phase_status,
        PhaseStatus::Abandoned
    );
    assert!(
        std::fs::read_to_string(ws.state_file())
            .unwrap()
            .contains("abandoned")
    );
}
