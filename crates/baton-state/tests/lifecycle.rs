//! Every legal and illegal lifecycle transition, as a table.

use baton_state::schema::PhaseStatus;
use baton_state::{HistoryAction, Lifecycle, LifecycleError, Transition, WorkspaceState};
use baton_workflow::WorkflowDefinition;
use chrono::{DateTime, Utc};

fn def() -> WorkflowDefinition {
    serde_json::from_value(serde_json::json!({
        "id": "t", "label": "T",
        "phases": [
            {"id": "a", "label": "A", "kind": "agent"},
            {"id": "b", "label": "B", "kind": "review"},
            {"id": "cp", "label": "CP", "kind": "checkpoint"},
            {"id": "c", "label": "C", "kind": "agent"}
        ]
    }))
    .unwrap()
}

fn now() -> DateTime<Utc> {
    "2026-05-01T00:00:00Z".parse().unwrap()
}

fn state_at(phase: &str, status: PhaseStatus) -> WorkspaceState {
    let mut s = WorkspaceState::fresh("t", "a", "x", ".specs/x", "test", now());
    s.current_phase = phase.to_string();
    s.current_phase_status = status;
    s
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Start,
    Complete,
    Fail,
    Checkpoint,
    Skip,
    Abandon,
}

fn apply(op: Op, s: &mut WorkspaceState, phase: &str) -> Result<Vec<Transition>, LifecycleError> {
    let d = def();
    let lc = Lifecycle::new(&d, now());
    match op {
        Op::Start => lc.start(s, phase),
        Op::Complete => lc.complete(s, phase),
        Op::Fail => lc.fail(s, phase, "boom"),
        Op::Checkpoint => lc.checkpoint(s, phase),
        Op::Skip => lc.skip(s, phase),
        Op::Abandon => lc.abandon(s, Some("stop")),
    }
}

/// (operation, status before) → Some(status after) when legal, None when refused.
/// All on the current phase `b` (which has a successor `cp`).
#[test]
fn status_transition_table_on_the_current_phase() {
    use PhaseStatus::*;
    type Row = (Op, PhaseStatus, Option<(&'static str, PhaseStatus)>);
    let table: &[Row] = &[
        (Op::Start, Pending, Some(("b", InProgress))),
        (Op::Start, Failed, Some(("b", InProgress))),
        (Op::Start, InProgress, None),
        (Op::Start, AwaitingHuman, None),
        (Op::Start, Completed, None),
        (Op::Start, Abandoned, None),
        (Op::Complete, InProgress, Some(("cp", Pending))),
        (Op::Complete, AwaitingHuman, Some(("cp", Pending))),
        (Op::Complete, Pending, None),
        (Op::Complete, Failed, None),
        (Op::Complete, Completed, None),
        (Op::Complete, Abandoned, None),
        (Op::Fail, InProgress, Some(("b", Failed))),
        (Op::Fail, Pending, None),
        (Op::Fail, Failed, None),
        (Op::Fail, AwaitingHuman, None),
        (Op::Fail, Abandoned, None),
        (Op::Checkpoint, Pending, Some(("b", AwaitingHuman))),
        (Op::Checkpoint, InProgress, Some(("b", AwaitingHuman))),
        (Op::Checkpoint, AwaitingHuman, None),
        (Op::Checkpoint, Failed, None),
        (Op::Checkpoint, Abandoned, None),
        (Op::Skip, Pending, Some(("cp", Pending))),
        (Op::Skip, Failed, Some(("cp", Pending))),
        (Op::Skip, InProgress, None),
        (Op::Skip, AwaitingHuman, None),
        (Op::Skip, Abandoned, None),
        (Op::Abandon, Pending, Some(("b", Abandoned))),
        (Op::Abandon, InProgress, Some(("b", Abandoned))),
        (Op::Abandon, Failed, Some(("b", Abandoned))),
        (Op::Abandon, AwaitingHuman, Some(("b", Abandoned))),
        (Op::Abandon, Abandoned, None),
        (Op::Abandon, Completed, None),
    ];
    for (op, before, after) in table {
        let mut s = state_at("b", *before);
        let original = s.clone();
        let result = apply(*op, &mut s, "b");
        match after {
            Some((phase, status)) => {
                assert!(
                    result.is_ok(),
                    "{op:?} from {before:?} should succeed: {result:?}"
                );
                assert_eq!(s.current_phase, *phase, "{op:?} from {before:?}");
                assert_eq!(s.current_phase_status, *status, "{op:?} from {before:?}");
            }
            None => {
                assert!(result.is_err(), "{op:?} from {before:?} should be refused");
                assert_eq!(s, original, "a refused {op:?} must not change the state");
            }
        }
    }
}

#[test]
fn operations_on_a_phase_that_is_not_current_are_refused() {
    for op in [Op::Start, Op::Complete, Op::Fail, Op::Checkpoint, Op::Skip] {
        let mut s = state_at("b", PhaseStatus::InProgress);
        let err = apply(op, &mut s, "c").unwrap_err();
        assert!(
            matches!(err, LifecycleError::NotCurrent { ref current, .. } if current == "b"),
            "{op:?}: {err}"
        );
    }
}

#[test]
fn unknown_phases_list_the_valid_ones() {
    let mut s = state_at("a", PhaseStatus::Pending);
    let err = apply(Op::Start, &mut s, "phase-9").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown phase \"phase-9\" for workflow \"t\"; valid phases: a, b, cp, c"
    );
}

#[test]
fn start_sets_the_start_time_and_clears_the_error() {
    let mut s = state_at("a", PhaseStatus::Pending);
    apply(Op::Start, &mut s, "a").unwrap();
    apply(Op::Fail, &mut s, "a").unwrap();
    assert_eq!(s.error.as_ref().unwrap().message, "boom");
    let t = apply(Op::Start, &mut s, "a").unwrap();
    assert_eq!(t, [Transition::PhaseStarted { phase: "a".into() }]);
    assert!(s.error.is_none());
    assert_eq!(s.timestamps.phase_started, Some(now()));
}

#[test]
fn complete_advances_past_template_skips_and_records_them() {
    let mut s = state_at("b", PhaseStatus::InProgress);
    s.skipped_phases = vec!["cp".into()];
    let t = apply(Op::Complete, &mut s, "b").unwrap();
    assert_eq!(
        t,
        [
            Transition::PhaseCompleted { phase: "b".into() },
            Transition::PhaseSkipped { phase: "cp".into() }
        ]
    );
    assert_eq!(s.current_phase, "c");
    assert_eq!(s.completed_phases, ["setup", "b"]);
    assert!(s.timestamps.phase_started.is_none());
    let actions: Vec<_> = s
        .history
        .iter()
        .map(|h| (h.phase.as_str(), h.action))
        .collect();
    assert_eq!(
        actions[1..],
        [("b", HistoryAction::Complete), ("cp", HistoryAction::Skip)]
    );
}

#[test]
fn completing_the_last_phase_completes_the_workflow_and_ends_it() {
    let mut s = state_at("c", PhaseStatus::InProgress);
    let t = apply(Op::Complete, &mut s, "c").unwrap();
    assert_eq!(
        t.last(),
        Some(&Transition::WorkflowCompleted {
            last_phase: "c".into()
        })
    );
    assert_eq!(s.current_phase, "completed");
    assert_eq!(s.current_phase_status, PhaseStatus::Completed);
    let err = apply(Op::Abandon, &mut s, "completed").unwrap_err();
    assert!(matches!(
        err,
        LifecycleError::Ended {
            status: "completed",
            ..
        }
    ));
}

#[test]
fn an_abandoned_workflow_refuses_every_operation() {
    let mut s = state_at("a", PhaseStatus::InProgress);
    apply(Op::Abandon, &mut s, "a").unwrap();
    for op in [
        Op::Start,
        Op::Complete,
        Op::Fail,
        Op::Checkpoint,
        Op::Skip,
        Op::Abandon,
    ] {
        let before = s.clone();
        let err = apply(op, &mut s, "a").unwrap_err();
        assert!(
            matches!(
                err,
                LifecycleError::Ended {
                    status: "abandoned",
                    ..
                }
            ),
            "{op:?}: {err}"
        );
        assert_eq!(s, before);
    }
}

#[test]
fn skipping_the_last_phase_completes_the_workflow() {
    let mut s = state_at("c", PhaseStatus::Pending);
    let t = apply(Op::Skip, &mut s, "c").unwrap();
    assert_eq!(
        t,
        [
            Transition::PhaseSkipped { phase: "c".into() },
            Transition::WorkflowCompleted {
                last_phase: "c".into()
            }
        ]
    );
    assert_eq!(s.skipped_phases, ["c"]);
    assert!(!s.completed_phases.contains(&"c".to_string()));
}
