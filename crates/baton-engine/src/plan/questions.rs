//! The questions a run stops at, each with the options a person may answer:
//! checkpoints, posting to the source, human gates, reviews a person must
//! decide (no clear verdict, a used-up loop limit) and failed commands.

use baton_state::{DecisionReason, WorkspaceState};
use baton_workflow::{Answerer, PerTask, PhaseDefinition, ResultKind};

use super::request::{RequestMeta, request_meta};
use super::spawn::existing;
use super::types::{PlanInput, Question, QuestionKind};
use crate::completion::tasks::tasks_to_review;
use crate::route::decide;
use crate::summary::phase_label;

/// The options of a question, as owned strings.
pub(crate) fn options(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The question of a human-gate phase: done, skip, abandon.
pub(crate) fn phase_gate(phase: &PhaseDefinition) -> Question {
    Question {
        phase: phase.id.clone(),
        name: phase.id.clone(),
        message: format!(
            "## {}\n\n{}\n\nChoose `done` when it is done, `skip` to go on without it, or `abandon`.",
            phase.label,
            phase
                .instruction
                .as_ref()
                .map(|i| i.tasks.join("\n"))
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| "This step is done by a person outside the pipeline.".into())
        ),
        options: options(&["done", "skip", "abandon"]),
        kind: QuestionKind::PhaseGate,
        answered_by: Answerer::Person,
    }
}

fn file_list(input: &PlanInput<'_>, names: &[String]) -> String {
    let present = existing(input.files, names, None);
    if present.is_empty() {
        return String::new();
    }
    let mut out = String::from("Files to review:\n");
    for f in present {
        out.push_str(&format!("- {}/{f}\n", input.workspace));
    }
    out
}

fn can_revise(input: &PlanInput<'_>, state: &WorkspaceState, phase: &PhaseDefinition) -> bool {
    phase
        .transitions
        .iter()
        .any(|t| t.when.result == Some(ResultKind::Failure))
        && decide(
            input.definition,
            state,
            &phase.id,
            ResultKind::Failure,
            None,
        )
        .is_ok()
}

/// A checkpoint phase: proceed, revise (while its loop has visits left), abandon.
pub(crate) fn checkpoint(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Question {
    let def = input.definition;
    let next = def.default_successor(&phase.id, &state.skipped_phases);
    let revise = can_revise(input, state, phase);
    let mut message = format!("## {}\n\n", phase.label);
    message.push_str(&file_list(input, &phase.inputs));
    message.push_str(&format!(
        "\nNext: {}.\n\nAnswer `proceed`{}, or `abandon`.",
        phase_label(def, &next),
        if revise {
            ", `revise: <what to change>`"
        } else {
            ""
        }
    ));
    let mut opts = vec!["proceed"];
    if revise {
        opts.push("revise");
    }
    opts.push("abandon");
    Question {
        phase: phase.id.clone(),
        name: phase.id.clone(),
        message,
        options: options(&opts),
        kind: QuestionKind::Checkpoint,
        answered_by: Answerer::Person,
    }
}

/// The post-to-source checkpoint: post or skip.
pub(crate) fn post_to_source(input: &PlanInput<'_>, phase: &PhaseDefinition) -> Question {
    let meta = input
        .files
        .read("request.md")
        .map(|t| request_meta(&t))
        .unwrap_or_default();
    let target = match meta.source_type.as_str() {
        "github_issue" => "GitHub issue",
        "jira_issue" => "Jira issue",
        "linear_issue" => "Linear issue",
        _ => "source",
    };
    Question {
        phase: phase.id.clone(),
        name: phase.id.clone(),
        message: format!(
            "Pipeline complete. Post the final summary as a comment to the {target}?\n\nURL: {}\nSummary file: {}/summary.md",
            meta.source_url, input.workspace
        ),
        options: options(&["post", "skip"]),
        kind: QuestionKind::PostToSource,
        answered_by: Answerer::Person,
    }
}

/// How to post the summary to the run's source (seed 001 `post_method`):
/// an argv for GitHub, an MCP tool for Linear, an instruction for Jira.
pub fn post_method(meta: &RequestMeta, workspace: &str) -> serde_json::Value {
    let summary = format!("{workspace}/summary.md");
    match meta.source_type.as_str() {
        "github_issue" => serde_json::json!({
            "command": ["gh", "issue", "comment", meta.source_url, "--body-file", summary],
            "body_source": summary,
        }),
        "linear_issue" => serde_json::json!({
            "mcp_tool": "mcp__linear__save_comment",
            "mcp_params": {"issueId": meta.source_id},
            "body_source": summary,
        }),
        _ => serde_json::json!({
            "body_source": summary,
            "instruction": format!(
                "Post the contents of {summary} as a comment to {}. Use the Atlassian MCP tools if available, or the Jira REST API.",
                meta.source_url
            ),
        }),
    }
}

/// A review phase stopped for a person: no clear verdict, or its loop limit used up.
pub(crate) fn decision_question(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
    reason: DecisionReason,
    detail: &str,
) -> Question {
    let (name, heading, opts): (String, &str, Vec<&str>) = match reason {
        DecisionReason::NoVerdict => {
            let revise = revise_verdict(phase).is_some_and(|v| {
                decide(
                    input.definition,
                    state,
                    &phase.id,
                    ResultKind::Success,
                    Some(v),
                )
                .is_ok()
            });
            let mut o = vec!["approve"];
            if revise {
                o.push("revise");
            }
            o.push("abandon");
            (
                format!("{}-unknown-verdict", phase.id),
                "The review gave no clear verdict.",
                o,
            )
        }
        DecisionReason::RetryLimit => (
            format!("{}-retry-limit", phase.id),
            "The revision limit is reached.",
            vec!["approve", "abandon"],
        ),
    };
    let mut message = format!("## {} — a person must decide\n\n{heading}", phase.label);
    // The report's detail repeats the heading's first words for the log
    // ("no clear verdict (why)"); the question shows only the why.
    let detail = match reason {
        DecisionReason::NoVerdict => detail
            .strip_prefix("no clear verdict (")
            .and_then(|d| d.strip_suffix(')'))
            .unwrap_or(detail),
        _ => detail,
    };
    if !detail.is_empty() {
        message.push_str(&format!(" Why: {}.", detail.trim_end_matches('.')));
    }
    message.push_str("\n\n");
    let mut shown = phase.artifacts.clone();
    shown.extend(phase.inputs.iter().cloned());
    if phase.per_task == Some(PerTask::Review) {
        shown.extend(
            tasks_to_review(state)
                .iter()
                .map(|k| format!("review-{k}.md")),
        );
    }
    message.push_str(&file_list(input, &shown));
    message.push_str(&format!(
        "\nAnswer {}.",
        opts.iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Question {
        phase: phase.id.clone(),
        name,
        message,
        options: options(&opts),
        kind: QuestionKind::Decision(reason),
        answered_by: Answerer::Person,
    }
}

/// The verdict of a review phase that sends work back (its first transition
/// on a verdict), if any.
pub fn revise_verdict(phase: &PhaseDefinition) -> Option<&str> {
    phase
        .transitions
        .iter()
        .find_map(|t| t.when.verdict.first())
        .map(String::as_str)
}

/// A failed command of a command phase: retry, skip, abandon.
pub(crate) fn command_failed(phase: &PhaseDefinition, state: &WorkspaceState) -> Question {
    let why = state
        .error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default();
    Question {
        phase: phase.id.clone(),
        name: format!("{}-failed", phase.id),
        message: format!(
            "## {} failed\n\n{why}\n\nFix the cause and answer `retry` (the failed command runs again), `skip` to go on without this step, or `abandon`.",
            phase.label
        ),
        options: options(&["retry", "skip", "abandon"]),
        kind: QuestionKind::CommandFailed,
        answered_by: Answerer::Person,
    }
}
