//! The built-in scripted agent (`--agent builtin:scripted`): deterministic,
//! plausible artifacts for every agent of the seed pipeline, so `baton demo`
//! runs a whole pipeline with no LLM. A pure function of its inputs.

/// What one scripted agent run produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Work {
    /// The artifact's content.
    pub artifact: String,
    /// A repository file the agent changes (implementers only): path, content.
    pub repo_file: Option<(String, String)>,
}

/// The tasks the scripted decomposer writes: one, then two in parallel.
pub const TASKS: &str = "# Tasks\n\n## Task 1: Add the core change\n\nmode: sequential\ndepends_on: []\nfiles:\n- src/core.txt\n\n## Task 2: Add tests [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- tests/core_test.txt\n\n## Task 3: Update docs [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- docs/core.md\n";

fn request_line(request: &str) -> String {
    let body = match request
        .strip_prefix("---\n")
        .and_then(|r| r.split_once("\n---"))
    {
        Some((_, rest)) => rest,
        None => request,
    };
    body.lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty() && *l != "---")
        .unwrap_or("the request")
        .to_string()
}

/// The scripted response of `agent` writing `output` (a file name), for
/// `task` when per-task, given the request text.
pub fn respond(agent: &str, output: &str, task: Option<&str>, request: &str) -> Work {
    let what = request_line(request);
    let task = task
        .map(str::to_string)
        .or_else(|| task_from_name(output))
        .unwrap_or_else(|| "1".to_string());
    let plain = |text: String| Work {
        artifact: text,
        repo_file: None,
    };
    match (agent, output) {
        (_, "tasks.md") => plain(TASKS.to_string()),
        (_, "review-design.md") | (_, "review-tasks.md") => plain(format!(
            "# Review\n\n## Orchestrator Summary\n\nThe plan for \"{what}\" is sound.\n\n## Verdict: APPROVE\n\n## Findings\n\n**1. [MINOR] Consider logging the new path**\n"
        )),
        ("implementer", _) => {
            let (file, content) = match task.as_str() {
                "1" => (
                    "src/core.txt".to_string(),
                    format!("core change for: {what}\n"),
                ),
                "2" => (
                    "tests/core_test.txt".to_string(),
                    "test: the core change holds\n".to_string(),
                ),
                "3" => (
                    "docs/core.md".to_string(),
                    format!("# Core\n\nDocuments: {what}\n"),
                ),
                n => (format!("baton-demo/task-{n}.txt"), format!("task {n}\n")),
            };
            Work {
                artifact: format!(
                    "# Implementation of task {task}\n\n## Changes\n\n- {file}\n\n## Tests\n\nScripted: nothing to run.\n"
                ),
                repo_file: Some((file, content)),
            }
        }
        ("impl-reviewer", _) => plain(format!(
            "# Review of task {task}\n\n## Verdict: PASS\n\nThe change matches the task.\n"
        )),
        ("architect", _) => plain(format!(
            "# Design\n\n## Approach\n\nImplement \"{what}\" in the core module.\n\n## Changes\n\n- src/core.txt\n- tests/core_test.txt\n- docs/core.md\n\n## Risks\n\nNone known.\n"
        )),
        ("situation-analyst" | "situation-analyst-investigator", _) => plain(format!(
            "# Situation Analysis\n\n## Request\n\n{what}\n\n## Current State\n\nA small project with a core module.\n"
        )),
        ("investigator", _) => plain(format!(
            "# Investigation\n\n## Findings\n\nThe core module is where \"{what}\" belongs.\n"
        )),
        (_, "summary.md") => plain(format!(
            "# Summary\n\n{what}: designed, implemented in three tasks, reviewed and verified by the scripted agents.\n"
        )),
        (_, name) => plain(format!(
            "# {}\n\n## Result\n\nScripted {agent} report for \"{what}\": all checks pass.\n",
            name.trim_end_matches(".md")
        )),
    }
}

fn task_from_name(output: &str) -> Option<String> {
    let stem = output.strip_suffix(".md")?;
    stem.strip_prefix("impl-")
        .or_else(|| stem.strip_prefix("review-"))
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_engine::completion::verdict::{Verdict, parse_review};
    use baton_engine::pipeline::tasks::parse_tasks;

    #[test]
    fn the_scripted_artifacts_pass_the_pipeline_checks() {
        let request = "---\nsource_type: text\n---\n\nAdd a greeting\n";
        let (tasks, _) =
            parse_tasks(&respond("task-decomposer", "tasks.md", None, request).artifact)
                .expect("tasks.md parses");
        assert_eq!(tasks.len(), 3);
        let design = respond("architect", "design.md", None, request).artifact;
        assert!(design.lines().any(|l| l.starts_with("## ")));
        assert!(design.contains("Add a greeting"));
        let review = respond("design-reviewer", "review-design.md", None, request).artifact;
        assert_eq!(
            parse_review(&review, &Verdict::REVIEW).verdict,
            Some(Verdict::Approve)
        );
        let impl_review = respond("impl-reviewer", "review-2.md", None, request).artifact;
        assert_eq!(
            parse_review(&impl_review, &Verdict::IMPL_REVIEW).verdict,
            Some(Verdict::Pass)
        );
        let work = respond("implementer", "impl-3.md", None, request);
        assert_eq!(work.repo_file.unwrap().0, "docs/core.md");
        assert!(work.artifact.contains("task 3"));
    }
}
