//! The gate of a phase report (`completePhase`): the agent's evidence is
//! checked against the phase's own tasks, acceptance criteria and artifacts.

use baton_state::WorkspaceState;
use baton_workflow::WorkflowDefinition;

use super::artifacts::check_phase;
use super::gate::check_artifacts;
use super::guards::GuardViolation;
use crate::WorkspaceFiles;

/// What the agent reports for the current phase.
#[derive(Debug, Clone, Copy)]
pub struct ReportEvidence<'a> {
    /// The phase reported.
    pub phase: &'a str,
    /// `true` for `completed`, `false` for `failed`.
    pub succeeded: bool,
    /// Tasks reported done: their text, or their 1-based number.
    pub completed_tasks: &'a [String],
    /// Acceptance criteria reported met: text or 1-based number.
    pub criteria_met: &'a [String],
    /// Review verdict, if any.
    pub verdict: Option<&'a str>,
    /// Notes (required to explain a failure).
    pub notes: Option<&'a str>,
}

/// Whether `reported` names `item` (number `index`, 0-based): same text after
/// trimming, case and whitespace folding, or the 1-based number ("3", "#3").
fn names(reported: &str, item: &str, index: usize) -> bool {
    let fold = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let r = reported.trim();
    let number = r.strip_prefix('#').unwrap_or(r);
    number.parse::<usize>().is_ok_and(|n| n == index + 1) || fold(r) == fold(item)
}

/// The items of `required` that `reported` does not name, as "n. text".
pub fn missing(required: &[String], reported: &[String]) -> Vec<String> {
    required
        .iter()
        .enumerate()
        .filter(|(i, item)| !reported.iter().any(|r| names(r, item, *i)))
        .map(|(i, item)| format!("{}. {item}", i + 1))
        .collect()
}

/// Checks a report against the phase definition and the workspace files.
///
/// A success needs every task and acceptance criterion accounted for, a
/// verdict from the phase's list when it has one, and every artifact present,
/// non-empty and written since the phase started (so an artifact from an
/// earlier trip through a loop cannot pass for a new one). A failure needs
/// notes saying what failed.
pub fn check_report(
    definition: &WorkflowDefinition,
    state: &WorkspaceState,
    evidence: &ReportEvidence<'_>,
    files: &dyn WorkspaceFiles,
) -> Result<(), GuardViolation> {
    let Some(phase) = definition.phase(evidence.phase) else {
        return Ok(()); // the lifecycle reports unknown phases
    };
    if !evidence.succeeded {
        if evidence.notes.is_none_or(|n| n.trim().is_empty()) {
            return Err(GuardViolation {
                rule: "failure_unexplained",
                message: format!("a failed {} needs notes saying what failed", phase.id),
            });
        }
        return Ok(());
    }
    if let Some(instruction) = &phase.instruction {
        let tasks = missing(&instruction.tasks, evidence.completed_tasks);
        if !tasks.is_empty() {
            return Err(GuardViolation {
                rule: "tasks_incomplete",
                message: format!(
                    "{} is not done: completedTasks does not account for {}",
                    phase.id,
                    tasks.join("; ")
                ),
            });
        }
        let criteria = missing(&instruction.acceptance_criteria, evidence.criteria_met);
        if !criteria.is_empty() {
            return Err(GuardViolation {
                rule: "criteria_unmet",
                message: format!(
                    "{} is not done: acceptanceCriteriaMet does not account for {}",
                    phase.id,
                    criteria.join("; ")
                ),
            });
        }
    }
    if !phase.verdicts.is_empty() {
        let ok = evidence
            .verdict
            .is_some_and(|v| phase.verdicts.iter().any(|w| w.eq_ignore_ascii_case(v)));
        if !ok {
            return Err(GuardViolation {
                rule: "verdict_missing",
                message: format!(
                    "{} needs a verdict, one of {}",
                    phase.id,
                    phase.verdicts.join(", ")
                ),
            });
        }
        // Where the review file states its verdict (an artifact read with
        // the review rule), the reported one must be the file's: a report
        // cannot approve what the review sent back.
        let reviews = check_phase(phase, state, files);
        for review in reviews.iter().filter(|c| c.valid && c.review) {
            let reported = evidence.verdict.unwrap_or("");
            match review.verdict {
                Some(v) if v.as_str().eq_ignore_ascii_case(reported) => {}
                Some(v) => {
                    return Err(GuardViolation {
                        rule: "verdict_mismatch",
                        message: format!(
                            "{} says {}, but the report says {reported}: report the review's own verdict",
                            review.file,
                            v.as_str()
                        ),
                    });
                }
                None => {
                    return Err(GuardViolation {
                        rule: "verdict_missing",
                        message: format!(
                            "{} states no verdict ({}); the review must end with a verdict line such as `## Verdict: {}`",
                            review.file,
                            review.error.clone().unwrap_or_default(),
                            phase
                                .verdicts
                                .first()
                                .map(String::as_str)
                                .unwrap_or("APPROVE")
                        ),
                    });
                }
            }
        }
    }
    check_artifacts(phase, state, files)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_named_by_text_or_number() {
        let required = vec!["Run the tests".to_string(), "Write the report".to_string()];
        assert!(missing(&required, &["  run THE  tests ".into(), "#2".into()]).is_empty());
        assert_eq!(missing(&required, &["1".into()]), ["2. Write the report"]);
        assert_eq!(missing(&required, &["3".into(), "tests".into()]).len(), 2);
    }
}
