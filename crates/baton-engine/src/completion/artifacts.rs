//! Report-time artifact validation of the seed pipeline's phases, with the
//! one verdict parser. A review without a clear verdict is *valid* as a file
//! but carries no verdict: the caller asks a person instead of approving.

use schemars::JsonSchema;
use serde::Serialize;

use super::tasks::tasks_to_review;
use super::verdict::{Finding, Verdict, parse_review};
use crate::WorkspaceFiles;
use crate::pipeline::tasks::parse_tasks;
use baton_state::WorkspaceState;

/// The result of checking one artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ArtifactCheck {
    /// The file, relative to the workspace.
    pub file: String,
    /// The file exists and satisfies the phase's rule.
    pub valid: bool,
    /// The parsed verdict (review artifacts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Findings (review artifacts).
    pub findings: Vec<Finding>,
    /// What is wrong, or why a review has no verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ArtifactCheck {
    pub(crate) fn new(file: &str) -> ArtifactCheck {
        ArtifactCheck {
            file: file.to_string(),
            valid: false,
            verdict: None,
            findings: Vec::new(),
            error: None,
        }
    }
}

fn non_empty(file: &str, files: &dyn WorkspaceFiles) -> (ArtifactCheck, Option<String>) {
    let mut check = ArtifactCheck::new(file);
    match files.read(file) {
        None if files.file(file).is_none() => check.error = Some(format!("file not found: {file}")),
        None => check.error = Some(format!("could not read {file}")),
        Some(text) if text.trim().is_empty() => check.error = Some(format!("file {file} is empty")),
        Some(text) => {
            check.valid = true;
            return (check, Some(text));
        }
    }
    (check, None)
}

fn review(file: &str, files: &dyn WorkspaceFiles, vocabulary: &[Verdict]) -> ArtifactCheck {
    let (mut check, text) = non_empty(file, files);
    if let Some(text) = text {
        let parsed = parse_review(&text, vocabulary);
        check.verdict = parsed.verdict;
        check.findings = parsed.findings;
        check.error = parsed.problem.map(|p| format!("{file}: {p}"));
    }
    check
}

/// Checks the artifacts a phase of the `forge` pipeline reported.
///
/// | phase | rule |
/// |---|---|
/// | phase-1, phase-2, phase-7, final-verification, final-summary | the file is non-empty |
/// | phase-3 | design.md has a `## ` section |
/// | phase-3b, phase-4b | the review has an APPROVE / APPROVE_WITH_NOTES / REVISE verdict |
/// | phase-4 | tasks.md parses into tasks whose dependencies form a DAG |
/// | phase-6 | a review-N.md with PASS / PASS_WITH_NOTES / FAIL for every implemented task |
///
/// Other phases have no artifact to check (an empty list).
pub fn check_phase(
    phase: &str,
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> Vec<ArtifactCheck> {
    match phase {
        "phase-1" => vec![non_empty("analysis.md", files).0],
        "phase-2" => vec![non_empty("investigation.md", files).0],
        "phase-7" => vec![non_empty("comprehensive-review.md", files).0],
        "final-verification" => vec![non_empty("final-verification.md", files).0],
        "final-summary" => vec![non_empty("summary.md", files).0],
        "phase-3" => {
            let (mut check, text) = non_empty("design.md", files);
            if let Some(text) = text
                && !text.lines().any(|l| l.starts_with("## "))
            {
                check.valid = false;
                check.error = Some("missing a '## ' section heading in design.md".into());
            }
            vec![check]
        }
        "phase-3b" => vec![review("review-design.md", files, &Verdict::REVIEW)],
        "phase-4b" => vec![review("review-tasks.md", files, &Verdict::REVIEW)],
        "phase-4" => {
            let (mut check, text) = non_empty("tasks.md", files);
            if let Some(text) = text
                && let Err(errors) = parse_tasks(&text)
            {
                check.valid = false;
                check.error = Some(format!("tasks.md: {}", errors.join("; ")));
            }
            vec![check]
        }
        "phase-6" => tasks_to_review(state)
            .into_iter()
            .map(|k| review(&format!("review-{k}.md"), files, &Verdict::IMPL_REVIEW))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn state() -> WorkspaceState {
        WorkspaceState::fresh(
            "forge",
            "phase-1",
            "x",
            "x",
            "t",
            "2026-01-01T00:00:00Z".parse().unwrap(),
        )
    }

    fn files(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn each_phase_checks_its_own_rule() {
        let s = state();
        let f = files(&[
            ("analysis.md", "# Analysis\n\nfacts\n"),
            ("design.md", "# Design\nno sections\n"),
            (
                "review-design.md",
                "## Verdict: REVISE\n**1. [CRITICAL] No error handling**\n",
            ),
            ("tasks.md", "## Task 1: A\ndepends_on: [2]\n"),
            ("summary.md", "   \n"),
        ]);
        assert!(check_phase("phase-1", &s, &f)[0].valid);
        assert_eq!(
            check_phase("phase-2", &s, &f)[0].error.as_deref(),
            Some("file not found: investigation.md")
        );
        assert!(!check_phase("phase-3", &s, &f)[0].valid);
        let r = &check_phase("phase-3b", &s, &f)[0];
        assert!(r.valid);
        assert_eq!(r.verdict, Some(Verdict::Revise));
        assert_eq!(r.findings.len(), 1);
        let t = &check_phase("phase-4", &s, &f)[0];
        assert!(!t.valid);
        assert!(t.error.as_ref().unwrap().contains("depends on task 2"));
        assert_eq!(
            check_phase("final-summary", &s, &f)[0].error.as_deref(),
            Some("file summary.md is empty")
        );
        assert!(check_phase("pr-creation", &s, &f).is_empty());
    }

    #[test]
    fn a_review_without_a_verdict_is_a_file_but_no_approval() {
        let s = state();
        let f = files(&[("review-tasks.md", "## Findings\nLooks APPROVE-ish to me.\n")]);
        let r = &check_phase("phase-4b", &s, &f)[0];
        assert!(r.valid);
        assert_eq!(r.verdict, None);
        assert!(r.error.as_ref().unwrap().contains("no verdict line"));
    }

    #[test]
    fn phase_6_checks_one_review_per_implemented_task() {
        let mut s = state();
        for (k, status, mode) in [
            ("1", "completed", "sequential"),
            ("2", "completed", "human_gate"),
            ("3", "pending", "sequential"),
            ("10", "completed", "parallel"),
        ] {
            s.tasks.insert(
                k.into(),
                baton_state::Task {
                    impl_status: status.into(),
                    execution_mode: mode.into(),
                    ..Default::default()
                },
            );
        }
        let f = files(&[
            ("review-1.md", "## Verdict: PASS\n"),
            (
                "review-10.md",
                "## Verdict: FAIL\n**[CRITICAL] AC-2 unmet**\n",
            ),
        ]);
        let checks = check_phase("phase-6", &s, &f);
        let names: Vec<&str> = checks.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(names, ["review-1.md", "review-10.md"]);
        assert_eq!(checks[1].verdict, Some(Verdict::Fail));
    }
}
