//! Where a workflow goes when a phase reports its result: the definition's
//! conditional transitions, else its default successor; loop limits enforced.

use baton_state::WorkspaceState;
use baton_workflow::{COMPLETED, ResultKind, WorkflowDefinition};

use crate::completion::guards::GuardViolation;

/// What the engine decided for a reported phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Complete the phase and move to `target` (a phase id or `completed`).
    Advance {
        /// The next phase.
        target: String,
    },
    /// The phase failed and no transition handles the failure: it stays, as
    /// failed, to be started again.
    FailInPlace,
}

/// How many times `phase` was started in this run.
pub fn visits(state: &WorkspaceState, phase: &str) -> u32 {
    baton_state::compact::visits(state, phase)
}

/// Decides the next step for `phase` reporting `result` (and maybe a verdict).
/// Refuses (`visit_limit`) to enter a phase whose `max_visits` is used up.
pub fn decide(
    definition: &WorkflowDefinition,
    state: &WorkspaceState,
    phase: &str,
    result: ResultKind,
    verdict: Option<&str>,
) -> Result<Decision, GuardViolation> {
    let Some(def) = definition.phase(phase) else {
        return Err(GuardViolation {
            rule: "unknown_phase",
            message: format!("workflow {:?} has no phase {phase:?}", definition.id),
        });
    };
    let matched = def.transitions.iter().find(|rule| {
        rule.when.result.is_none_or(|r| r == result)
            && (rule.when.verdict.is_empty()
                || verdict
                    .is_some_and(|v| rule.when.verdict.iter().any(|w| w.eq_ignore_ascii_case(v))))
    });
    let target = match (matched, result) {
        (Some(rule), _) => rule.goto.clone(),
        (None, ResultKind::Failure) => return Ok(Decision::FailInPlace),
        (None, ResultKind::Success) => definition.default_successor(phase, &state.skipped_phases),
    };
    if target != COMPLETED
        && let Some(limit) = definition.phase(&target).and_then(|p| p.max_visits)
        && visits(state, &target) >= limit
    {
        return Err(GuardViolation {
            rule: "visit_limit",
            message: format!(
                "{target} has been entered {limit} times, its limit; a person must decide: abandon the workflow, or raise max_visits in the definition"
            ),
        });
    }
    Ok(Decision::Advance { target })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_state::{HistoryAction, HistoryEntry, WorkspaceState};
    use baton_workflow::Registry;

    fn state_with_visits(phase: &str, n: usize) -> WorkspaceState {
        let mut s = WorkspaceState::fresh("issue", "issue_start", "x", "x", "t", chrono_now());
        for _ in 0..n {
            s.history.push(HistoryEntry {
                at: chrono_now(),
                phase: phase.into(),
                action: HistoryAction::Start,
                detail: None,
                by: None,
            });
        }
        s
    }

    fn chrono_now() -> baton_state::Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    /// (phase, result, verdict) → decision, for the built-in issue workflow.
    #[test]
    fn issue_workflow_decision_table() {
        let registry = Registry::builtin();
        let issue = registry.get("issue").unwrap();
        let s = state_with_visits("fix", 0);
        let advance = |t: &str| Ok(Decision::Advance { target: t.into() });
        let table: &[(&str, ResultKind, Result<Decision, GuardViolation>)] = &[
            (
                "issue_start",
                ResultKind::Success,
                advance("implementation"),
            ),
            (
                "issue_start",
                ResultKind::Failure,
                Ok(Decision::FailInPlace),
            ),
            (
                "implementation",
                ResultKind::Success,
                advance("quality_check"),
            ),
            ("quality_check", ResultKind::Success, advance("pr_creation")),
            ("quality_check", ResultKind::Failure, advance("fix")),
            ("pr_creation", ResultKind::Success, advance("completion")),
            ("pr_creation", ResultKind::Failure, advance("fix")),
            ("fix", ResultKind::Success, advance("quality_check")),
            ("fix", ResultKind::Failure, Ok(Decision::FailInPlace)),
            ("completion", ResultKind::Success, advance("completed")),
            ("completion", ResultKind::Failure, Ok(Decision::FailInPlace)),
        ];
        for (phase, result, expected) in table {
            assert_eq!(
                &decide(&issue, &s, phase, *result, None),
                expected,
                "{phase} {result:?}"
            );
        }
    }

    #[test]
    fn loop_limits_stop_the_fifth_trip() {
        let registry = Registry::builtin();
        let issue = registry.get("issue").unwrap();
        let four = state_with_visits("fix", 4);
        assert!(decide(&issue, &four, "pr_creation", ResultKind::Failure, None).is_ok());
        let five = state_with_visits("fix", 5);
        let err = decide(&issue, &five, "pr_creation", ResultKind::Failure, None).unwrap_err();
        assert_eq!(err.rule, "visit_limit");
    }

    #[test]
    fn verdict_conditions_match_case_insensitively_and_fall_back_to_the_default() {
        let def: WorkflowDefinition = baton_workflow::parse(
            "r.yaml",
            "id: r\nlabel: R\nphases:\n  - id: write\n    label: W\n    kind: agent\n  - id: review\n    label: R\n    kind: review\n    verdicts: [APPROVE, REVISE]\n    transitions:\n      - when: {verdict: [REVISE]}\n        goto: write\n    max_visits: 3\n",
        )
        .unwrap();
        let s = state_with_visits("write", 1);
        assert_eq!(
            decide(&def, &s, "review", ResultKind::Success, Some("revise")),
            Ok(Decision::Advance {
                target: "write".into()
            })
        );
        assert_eq!(
            decide(&def, &s, "review", ResultKind::Success, Some("APPROVE")),
            Ok(Decision::Advance {
                target: "completed".into()
            })
        );
    }
}

#[cfg(test)]
mod forge_tests {
    use super::*;
    use baton_state::{HistoryAction, HistoryEntry, WorkspaceState};
    use baton_workflow::Registry;

    fn state(starts_of_phase_3: usize) -> WorkspaceState {
        let t: baton_state::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut s = WorkspaceState::fresh("forge", "phase-1", "x", "x", "t", t);
        for _ in 0..starts_of_phase_3 {
            s.history.push(HistoryEntry {
                at: t,
                phase: "phase-3".into(),
                action: HistoryAction::Start,
                detail: None,
                by: None,
            });
        }
        s
    }

    /// The seed pipeline's review loops, decided from the definition alone.
    #[test]
    fn forge_review_loops_are_data() {
        let registry = Registry::builtin();
        let forge = registry.get("forge").unwrap();
        let s = state(1);
        let advance = |t: &str| Ok(Decision::Advance { target: t.into() });
        type Row<'a> = (
            &'a str,
            ResultKind,
            Option<&'a str>,
            Result<Decision, GuardViolation>,
        );
        let table: &[Row] = &[
            (
                "phase-3b",
                ResultKind::Success,
                Some("REVISE"),
                advance("phase-3"),
            ),
            (
                "phase-3b",
                ResultKind::Success,
                Some("APPROVE"),
                advance("checkpoint-a"),
            ),
            (
                "phase-3b",
                ResultKind::Success,
                Some("APPROVE_WITH_NOTES"),
                advance("checkpoint-a"),
            ),
            (
                "checkpoint-a",
                ResultKind::Success,
                None,
                advance("phase-4"),
            ),
            (
                "checkpoint-a",
                ResultKind::Failure,
                None,
                advance("phase-3"),
            ),
            (
                "phase-4b",
                ResultKind::Success,
                Some("REVISE"),
                advance("phase-4"),
            ),
            (
                "checkpoint-b",
                ResultKind::Failure,
                None,
                advance("phase-4"),
            ),
            (
                "phase-6",
                ResultKind::Success,
                Some("FAIL"),
                advance("phase-5"),
            ),
            (
                "phase-6",
                ResultKind::Success,
                Some("PASS_WITH_NOTES"),
                advance("phase-7"),
            ),
        ];
        for (phase, result, verdict, expected) in table {
            assert_eq!(
                &decide(&forge, &s, phase, *result, *verdict),
                expected,
                "{phase} {verdict:?}"
            );
        }
        // Five revisions are the limit: the sixth REVISE needs a person.
        let limit = decide(
            &forge,
            &state(6),
            "phase-3b",
            ResultKind::Success,
            Some("REVISE"),
        );
        assert_eq!(limit.unwrap_err().rule, "visit_limit");
    }
}
