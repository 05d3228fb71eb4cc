//! Does each artifact pass its rule? The rules are workflow data
//! (`artifact_rules` in the definition, docs/workflows.md "Artifact rules"):
//! present, non-empty text, `## ` sections, a task list, a review with one of
//! the phase's verdicts (read with the one verdict parser). A review without
//! a clear verdict is *valid* as a file but carries no verdict: the caller
//! asks a person instead of approving.

use schemars::JsonSchema;
use serde::Serialize;

use super::tasks::tasks_to_review;
use super::verdict::{Finding, Verdict, parse_review};
use crate::WorkspaceFiles;
use crate::pipeline::tasks::parse_tasks;
use baton_state::WorkspaceState;
use baton_workflow::{ArtifactRule, PerTask, PhaseDefinition};

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
    /// The file was read with the review rule (its verdict decides).
    #[serde(skip)]
    pub review: bool,
}

impl ArtifactCheck {
    pub(crate) fn new(file: &str) -> ArtifactCheck {
        ArtifactCheck {
            file: file.to_string(),
            valid: false,
            verdict: None,
            findings: Vec::new(),
            error: None,
            review: false,
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
    check.review = true;
    if let Some(text) = text {
        let parsed = parse_review(&text, vocabulary);
        check.verdict = parsed.verdict;
        check.findings = parsed.findings;
        check.error = parsed.problem.map(|p| format!("{file}: {p}"));
    }
    check
}

/// Checks what `phase` wrote, each artifact by its rule
/// ([`PhaseDefinition::artifact_rule`]: declared in the definition's
/// `artifact_rules`, else `review` in a phase with `verdicts`, else
/// `present`). A `per_task: review` phase checks one review (`review-N.md`)
/// per implemented task not yet passed; a `per_task: implement` phase has
/// nothing to check here (its tasks are checked by [`super::tasks`]).
pub fn check_phase(
    phase: &PhaseDefinition,
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> Vec<ArtifactCheck> {
    let vocabulary = Verdict::vocabulary(&phase.verdicts);
    match phase.per_task {
        Some(PerTask::Review) => tasks_to_review(state)
            .into_iter()
            .map(|k| review(&format!("review-{k}.md"), files, &vocabulary))
            .collect(),
        Some(PerTask::Implement) => Vec::new(),
        None => phase
            .artifacts
            .iter()
            .map(|a| check(a, &phase.artifact_rule(a), &vocabulary, files))
            .collect(),
    }
}

/// Checks `file` against `rule`.
pub fn check(
    file: &str,
    rule: &ArtifactRule,
    vocabulary: &[Verdict],
    files: &dyn WorkspaceFiles,
) -> ArtifactCheck {
    match rule {
        ArtifactRule::Present => present(file, files),
        ArtifactRule::NonEmpty => non_empty(file, files).0,
        ArtifactRule::Sections(headings) => sections(file, headings, files),
        ArtifactRule::TaskList => task_list(file, files),
        ArtifactRule::Review => review(file, files, vocabulary),
    }
}

fn present(file: &str, files: &dyn WorkspaceFiles) -> ArtifactCheck {
    let mut check = ArtifactCheck::new(file);
    match files.file(file) {
        None => check.error = Some(format!("file not found: {file}")),
        Some(info) if info.len == 0 => check.error = Some(format!("file {file} is empty")),
        Some(_) => check.valid = true,
    }
    check
}

fn sections(file: &str, headings: &[String], files: &dyn WorkspaceFiles) -> ArtifactCheck {
    let (mut check, text) = non_empty(file, files);
    let Some(text) = text else {
        return check;
    };
    let found: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(str::trim)
        .collect();
    if headings.is_empty() {
        if found.is_empty() {
            check.valid = false;
            check.error = Some(format!("missing a '## ' section heading in {file}"));
        }
    } else {
        let missing: Vec<&str> = headings
            .iter()
            .map(String::as_str)
            .filter(|h| !found.iter().any(|f| f.eq_ignore_ascii_case(h.trim())))
            .collect();
        if !missing.is_empty() {
            check.valid = false;
            check.error = Some(format!(
                "{file} has no '## {}' section",
                missing.join("', '## ")
            ));
        }
    }
    check
}

fn task_list(file: &str, files: &dyn WorkspaceFiles) -> ArtifactCheck {
    let (mut check, text) = non_empty(file, files);
    if let Some(text) = text
        && let Err(errors) = parse_tasks(&text)
    {
        check.valid = false;
        check.error = Some(format!("{file}: {}", errors.join("; ")));
    }
    check
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

    fn forge(id: &str) -> PhaseDefinition {
        baton_workflow::Registry::builtin()
            .get("forge")
            .unwrap()
            .phase(id)
            .unwrap()
            .clone()
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
        assert!(check_phase(&forge("phase-1"), &s, &f)[0].valid);
        assert_eq!(
            check_phase(&forge("phase-2"), &s, &f)[0].error.as_deref(),
            Some("file not found: investigation.md")
        );
        assert!(!check_phase(&forge("phase-3"), &s, &f)[0].valid);
        let r = &check_phase(&forge("phase-3b"), &s, &f)[0];
        assert!(r.valid);
        assert_eq!(r.verdict, Some(Verdict::Revise));
        assert_eq!(r.findings.len(), 1);
        let t = &check_phase(&forge("phase-4"), &s, &f)[0];
        assert!(!t.valid);
        assert!(t.error.as_ref().unwrap().contains("depends on task 2"));
        assert_eq!(
            check_phase(&forge("final-summary"), &s, &f)[0]
                .error
                .as_deref(),
            Some("file summary.md is empty")
        );
        assert!(check_phase(&forge("pr-creation"), &s, &f).is_empty());
    }

    #[test]
    fn a_review_without_a_verdict_is_a_file_but_no_approval() {
        let s = state();
        let f = files(&[("review-tasks.md", "## Findings\nLooks APPROVE-ish to me.\n")]);
        let r = &check_phase(&forge("phase-4b"), &s, &f)[0];
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
        let checks = check_phase(&forge("phase-6"), &s, &f);
        let names: Vec<&str> = checks.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(names, ["review-1.md", "review-10.md"]);
        assert_eq!(checks[1].verdict, Some(Verdict::Fail));
    }

    #[test]
    fn a_user_phase_gets_the_rules_it_declares_or_implies() {
        let s = state();
        let f = files(&[
            ("plan.md", "# Plan\n\n## Scope\n\n## Risks\n"),
            ("notes.md", "  \n"),
            ("check.md", "## Verdict: REVISE\n"),
        ]);
        let review: PhaseDefinition = serde_json::from_value(serde_json::json!({
            "id": "check", "label": "Check", "kind": "review",
            "artifacts": ["check.md"], "verdicts": ["APPROVE", "REVISE"]
        }))
        .unwrap();
        let r = &check_phase(&review, &s, &f)[0];
        assert!(r.valid && r.review);
        assert_eq!(r.verdict, Some(Verdict::Revise));
        let write: PhaseDefinition = serde_json::from_value(serde_json::json!({
            "id": "write", "label": "Write", "kind": "agent",
            "artifacts": ["plan.md", "notes.md", "other.md"],
            "artifact_rules": {"plan.md": {"sections": ["scope", "Rollback"]}}
        }))
        .unwrap();
        let checks = check_phase(&write, &s, &f);
        assert_eq!(
            checks[0].error.as_deref(),
            Some("plan.md has no '## Rollback' section")
        );
        // Undeclared: present (exists and is not empty), white space or not.
        assert!(checks[1].valid && !checks[1].review);
        assert_eq!(checks[2].error.as_deref(), Some("file not found: other.md"));
    }
}
