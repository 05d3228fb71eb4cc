//! Property tests: random sequences of lifecycle calls never break an
//! invariant, and every state round-trips through state.json.

use baton_state::schema::PhaseStatus;
use baton_state::{HistoryAction, Lifecycle, WorkspaceState};
use baton_workflow::{COMPLETED, WorkflowDefinition};
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;

fn def() -> WorkflowDefinition {
    serde_json::from_value(serde_json::json!({
        "id": "t", "label": "T",
        "phases": [
            {"id": "a", "label": "A", "kind": "agent"},
            {"id": "b", "label": "B", "kind": "review"},
            {"id": "cp", "label": "CP", "kind": "checkpoint"},
            {"id": "c", "label": "C", "kind": "agent"},
            {"id": "d", "label": "D", "kind": "command"}
        ]
    }))
    .unwrap()
}

const PHASES: [&str; 6] = ["a", "b", "cp", "c", "d", "zz"];

#[derive(Debug, Clone)]
enum Call {
    Start(usize),
    Complete(usize),
    CompleteTo(usize, usize),
    Fail(usize),
    Checkpoint(usize),
    Skip(usize),
    Resume(usize),
    Abandon,
}

fn call() -> impl Strategy<Value = Call> {
    let p = 0..PHASES.len();
    prop_oneof![
        p.clone().prop_map(Call::Start),
        p.clone().prop_map(Call::Complete),
        (p.clone(), 0..PHASES.len() + 1).prop_map(|(a, b)| Call::CompleteTo(a, b)),
        p.clone().prop_map(Call::Fail),
        p.clone().prop_map(Call::Checkpoint),
        p.clone().prop_map(Call::Skip),
        p.prop_map(Call::Resume),
        Just(Call::Abandon).prop_map(|c| c),
    ]
}

/// Checks the seed-003 invariants on the recorded history.
fn check_invariants(d: &WorkflowDefinition, s: &WorkspaceState) {
    // The current phase is a phase of the workflow, or the terminal position.
    assert!(d.phase(&s.current_phase).is_some() || s.current_phase == COMPLETED);
    // `completed` status if and only if at the terminal position.
    assert_eq!(
        s.current_phase == COMPLETED,
        s.current_phase_status == PhaseStatus::Completed
    );
    // phaseStarted is set while a phase is in progress and cleared when the
    // next phase is pending (fail and checkpoint leave it unchanged: seed 003).
    if s.current_phase_status == PhaseStatus::InProgress {
        assert!(s.timestamps.phase_started.is_some());
    }
    if s.current_phase_status == PhaseStatus::Pending {
        assert!(s.timestamps.phase_started.is_none());
    }
    // No duplicates; completed and skipped are disjoint.
    let mut seen = std::collections::HashSet::new();
    assert!(s.completed_phases.iter().all(|p| seen.insert(p)));
    assert!(
        s.skipped_phases
            .iter()
            .all(|p| !s.completed_phases.contains(p))
    );
    // Symmetric start/complete: every start is closed by exactly one complete,
    // fail or abandon before the next start; no complete without an open start
    // unless the phase was brought to a checkpoint.
    let mut open: Option<&str> = None;
    let mut waiting: Option<&str> = None;
    for h in &s.history {
        match h.action {
            HistoryAction::Init => {}
            HistoryAction::Start => {
                assert!(open.is_none(), "start while {open:?} is open");
                open = Some(&h.phase);
            }
            HistoryAction::Checkpoint => waiting = Some(&h.phase),
            HistoryAction::Complete => {
                assert!(
                    open == Some(h.phase.as_str()) || waiting == Some(h.phase.as_str()),
                    "complete of {} without a start",
                    h.phase
                );
                open = None;
                waiting = None;
            }
            HistoryAction::Fail => {
                assert_eq!(open, Some(h.phase.as_str()));
                open = None;
            }
            HistoryAction::Abandon => {
                open = None;
                waiting = None;
            }
            HistoryAction::Skip => assert!(open.is_none()),
            HistoryAction::Resume => {
                assert_eq!(
                    open,
                    Some(h.phase.as_str()),
                    "resume of a phase not started"
                );
                assert_eq!(waiting, Some(h.phase.as_str()), "resume without a wait");
                waiting = None;
            }
        }
    }
    if s.current_phase_status == PhaseStatus::InProgress {
        assert!(open.is_some(), "in progress without a recorded start");
    }
    if open.is_some() {
        assert!(matches!(
            s.current_phase_status,
            PhaseStatus::InProgress | PhaseStatus::AwaitingHuman
        ));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_call_sequences_keep_every_invariant(
        calls in prop::collection::vec(call(), 0..60),
        skipped in prop::collection::vec(prop::bool::ANY, 5),
    ) {
        let d = def();
        let t0: DateTime<Utc> = "2026-05-01T00:00:00Z".parse().unwrap();
        let mut s = WorkspaceState::fresh("t", "a", "x", ".specs/x", "test", t0);
        s.skipped_phases = ["a", "b", "cp", "c", "d"]
            .iter()
            .zip(&skipped)
            .filter(|(id, skip)| **skip && **id != "a")
            .map(|(id, _)| id.to_string())
            .collect();
        for (i, c) in calls.iter().enumerate() {
            let lc = Lifecycle::new(&d, t0 + Duration::seconds(i as i64));
            let before = s.clone();
            let result = match c {
                Call::Start(p) => lc.start(&mut s, PHASES[*p]),
                Call::Complete(p) => lc.complete(&mut s, PHASES[*p]),
                Call::CompleteTo(p, t) => {
                    let target = PHASES.get(*t).copied().unwrap_or(COMPLETED);
                    lc.complete_to(&mut s, PHASES[*p], target)
                }
                Call::Fail(p) => lc.fail(&mut s, PHASES[*p], "x"),
                Call::Checkpoint(p) => lc.checkpoint(&mut s, PHASES[*p]),
                Call::Skip(p) => lc.skip(&mut s, PHASES[*p]),
                Call::Resume(p) => lc.resume(&mut s, PHASES[*p], "answered"),
                Call::Abandon => lc.abandon(&mut s, None),
            };
            if result.is_err() {
                prop_assert_eq!(&s, &before, "a refused call changed the state");
            }
            check_invariants(&d, &s);
            let back = WorkspaceState::from_json(&s.to_json()).unwrap();
            prop_assert_eq!(&back, &s);
        }
    }
}
