//! Sealing: the run's final form is written into state.json before its
//! commit while the live state of the last steps goes to `.state.live.json`;
//! a completed run leaves state.json as sealed, an abandoned one writes it.

mod common;

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

/// With the state signed (as in every server), a change of the sealed run's
/// live state leaves state.json alone — not rewritten with the same bytes on
/// every change (the sealed form's check compared a file with its tag to a
/// form without one) — and a state.json that is not the sealed form is
/// still put back, tag and all.
#[test]
fn a_signed_sealed_run_rewrites_state_json_only_when_it_is_not_the_sealed_form() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, store, ws) = setup();
    let store = store.with_signer(std::sync::Arc::new(common::TestSigner));
    store
        .update_sealing(&ws, now(), |s, _| {
            s.current_phase_status = PhaseStatus::InProgress;
            let final_form = sealed_final(s);
            Ok::<_, ()>(((), Finish::Seal(Box::new(final_form))))
        })
        .unwrap();
    let sealed = std::fs::read_to_string(ws.state_file()).unwrap();
    assert!(sealed.contains("\"integrity\": \"test:key1:"), "{sealed}");
    let ino = || std::fs::metadata(ws.state_file()).unwrap().ino();
    let before = ino();
    for step in 1..=3 {
        store
            .update(&ws, now(), |s| {
                s.command_step = step;
                Ok::<_, ()>(())
            })
            .unwrap();
        assert_eq!(ino(), before, "state.json rewritten by change {step}");
    }
    assert_eq!(std::fs::read_to_string(ws.state_file()).unwrap(), sealed);
    // A state.json that lost its tag is put back whole by the next change.
    let untagged = baton_state::integrity::split(&sealed).0;
    std::fs::write(ws.state_file(), &untagged).unwrap();
    store
        .update(&ws, now(), |s| {
            s.command_step = 4;
            Ok::<_, ()>(())
        })
        .unwrap();
    assert_eq!(std::fs::read_to_string(ws.state_file()).unwrap(), sealed);
}
