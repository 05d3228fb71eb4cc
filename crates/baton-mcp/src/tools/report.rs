//! `pipeline_report_result` (seed 001 §4): records a phase's metrics, checks
//! its artifacts, parses review verdicts with the one parser, and moves the
//! pipeline by the `forge` definition — one locked write, events after it.

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use baton_engine::pipeline::artifacts::check_phase;
use baton_engine::pipeline::tasks::parse_tasks;
use baton_engine::pipeline::verdict::{Finding, Verdict};
use baton_engine::route::{Decision, decide};
use baton_engine::{WorkspaceFiles, guards::GuardViolation};
use baton_events::EventKind;
use baton_state::{Lifecycle, PhaseLogEntry, Transition};
use baton_workflow::ResultKind;

use super::lifecycle::{DiskFiles, events_for};
use super::{ToolSpec, input_schema, output_schema};
use crate::args::{check_text, parse};
use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

/// Arguments of `pipeline_report_result` (seed 001).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportArgs {
    /// Workspace path.
    pub workspace: String,
    /// Phase id (e.g. "phase-3"); must be the current, in-progress phase.
    pub phase: String,
    /// Tokens consumed by the phase.
    #[serde(default)]
    pub tokens_used: Option<u64>,
    /// Wall-clock duration in ms.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Model used (e.g. "sonnet", "opus").
    #[serde(default)]
    pub model: Option<String>,
    /// True if the exec was setup-only (no agent ran).
    #[serde(default)]
    pub setup_only: Option<bool>,
}

/// Reply of `pipeline_report_result` (seed 001 field names).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReportReply {
    /// The state changed.
    pub state_updated: bool,
    /// The first artifact checked.
    pub artifact_written: String,
    /// The parsed verdict (review phases), or "" when none.
    pub verdict_parsed: String,
    /// Review findings.
    pub findings: Vec<Finding>,
    /// `proceed`, `revision_required` or `setup_continue`.
    pub next_action_hint: String,
    /// Non-blocking remarks.
    pub warning: String,
    /// A line to show the person.
    pub display_message: String,
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "pipeline_report_result",
        group: "pipeline",
        description: "Report the current pipeline phase as done: records tokens/duration/model, checks the phase's artifact (design.md has sections, tasks.md parses, reviews carry a verdict), and moves on. Hints: proceed (next phase), revision_required (a review asked for changes: the authoring phase is next, see findings), setup_continue (the same phase continues, or a person must decide).",
        input_schema: input_schema::<ReportArgs>,
        output_schema: output_schema::<ReportReply>,
        read_only: false,
        destructive: false,
        handler: report_result,
    }]
}

struct Outcome {
    transitions: Vec<Transition>,
    hint: &'static str,
    verdict: Option<Verdict>,
    findings: Vec<Finding>,
    artifact: String,
    warnings: Vec<String>,
}

fn report_result(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: ReportArgs = parse(arguments)?;
    check_text("workspace", &args.workspace, 1024)?;
    check_text("phase", &args.phase, 64)?;
    if let Some(m) = &args.model {
        check_text("model", m, 128)?;
    }
    let ws = ctx.store.resolve(&args.workspace)?;
    let files = DiskFiles {
        dir: ws.dir.clone(),
    };
    let now = Utc::now();
    let phase = args.phase.clone();
    let updated = ctx
        .store
        .update(&ws, now, |state| -> Result<Outcome, ToolError> {
            let def = ctx.workflow(&state.workflow)?;
            let lc = Lifecycle::new(&def, now);
            // The phase must be the current one and in progress.
            lc.fail(&mut state.clone(), &phase, "probe")?;
            let log = PhaseLogEntry {
                phase: phase.clone(),
                tokens: args.tokens_used.unwrap_or(0),
                duration_ms: args.duration_ms.unwrap_or(0),
                model: args
                    .model
                    .clone()
                    .or_else(|| state.last_dispatch.as_ref().map(|d| d.model.clone()))
                    .unwrap_or_default(),
                timestamp: now,
            };
            if args.setup_only.unwrap_or(false) {
                state.phase_log.push(log);
                return Ok(Outcome {
                    transitions: Vec::new(),
                    hint: "setup_continue",
                    verdict: None,
                    findings: Vec::new(),
                    artifact: String::new(),
                    warnings: Vec::new(),
                });
            }
            let checks = check_phase(&phase, state, &files as &dyn WorkspaceFiles);
            let artifact = checks.first().map(|c| c.file.clone()).unwrap_or_default();
            if let Some(bad) = checks.iter().find(|c| !c.valid) {
                return Err(ToolError::from(GuardViolation {
                    rule: "artifact_invalid",
                    message: format!(
                        "artifact invalid for {phase}: {}",
                        bad.error
                            .clone()
                            .unwrap_or_else(|| format!("{} is not valid", bad.file))
                    ),
                }));
            }
            state.phase_log.push(log);
            let mut warnings = Vec::new();
            let reviews: Vec<_> = checks
                .iter()
                .filter(|c| !c.findings.is_empty() || c.verdict.is_some() || c.error.is_some())
                .collect();
            let is_review = def.phase(&phase).is_some_and(|p| !p.verdicts.is_empty());
            let findings: Vec<Finding> = reviews.iter().flat_map(|c| c.findings.clone()).collect();
            // A review whose verdict is missing or unclear goes to a person.
            if is_review && checks.iter().any(|c| c.verdict.is_none()) {
                let why: Vec<String> = checks.iter().filter_map(|c| c.error.clone()).collect();
                warnings.push(format!(
                    "no clear verdict ({}); a person must decide",
                    why.join("; ")
                ));
                let transitions = lc.checkpoint(state, &phase)?;
                return Ok(Outcome {
                    transitions,
                    hint: "setup_continue",
                    verdict: None,
                    findings,
                    artifact,
                    warnings,
                });
            }
            // The worst verdict across the phase's reviews decides.
            let verdict = checks
                .iter()
                .filter_map(|c| c.verdict)
                .min_by_key(|v| v.is_positive());
            if phase == "phase-4" {
                let text = files.read("tasks.md").unwrap_or_default();
                let (tasks, task_warnings) = parse_tasks(&text).map_err(|errors| {
                    ToolError::new(
                        ErrorCode::Blocked,
                        format!("tasks.md: {}", errors.join("; ")),
                    )
                })?;
                state.tasks = tasks;
                warnings.extend(task_warnings);
            }
            if phase == "phase-5" {
                let mut pending = Vec::new();
                for (key, task) in state.tasks.iter_mut() {
                    if task.execution_mode == "human_gate" {
                        continue;
                    }
                    if files.is_nonempty_file(&format!("impl-{key}.md")) {
                        task.impl_status = "completed".into();
                    } else {
                        pending.push(key.clone());
                    }
                }
                if !pending.is_empty() {
                    warnings.push(format!("tasks still to implement: {}", pending.join(", ")));
                    return Ok(Outcome {
                        transitions: Vec::new(),
                        hint: "setup_continue",
                        verdict: None,
                        findings,
                        artifact,
                        warnings,
                    });
                }
            }
            if phase == "phase-6" {
                for check in &checks {
                    let key = check
                        .file
                        .trim_start_matches("review-")
                        .trim_end_matches(".md")
                        .to_string();
                    if let Some(task) = state.tasks.get_mut(&key) {
                        match check.verdict {
                            Some(Verdict::Fail) => {
                                task.review_status = "completed_fail".into();
                                task.impl_status = "pending".into();
                                task.impl_retries += 1;
                            }
                            Some(Verdict::PassWithNotes) => {
                                task.review_status = "completed_pass_with_notes".into()
                            }
                            Some(_) => task.review_status = "completed_pass".into(),
                            None => {}
                        }
                    }
                }
            }
            let decision = decide(
                &def,
                state,
                &phase,
                ResultKind::Success,
                verdict.map(Verdict::as_str),
            );
            let decision = match decision {
                Ok(d) => d,
                Err(limit) => {
                    warnings.push(limit.message);
                    let transitions = lc.checkpoint(state, &phase)?;
                    return Ok(Outcome {
                        transitions,
                        hint: "setup_continue",
                        verdict,
                        findings,
                        artifact,
                        warnings,
                    });
                }
            };
            let Decision::Advance { target } = decision else {
                return Err(ToolError::new(
                    ErrorCode::Internal,
                    "a success cannot fail in place",
                ));
            };
            let backwards = def
                .position(&target)
                .zip(def.position(&phase))
                .is_some_and(|(t, p)| t < p);
            if backwards {
                match phase.as_str() {
                    "phase-3b" => state.revisions.design_revisions += 1,
                    "phase-4b" => state.revisions.task_revisions += 1,
                    _ => {}
                }
            }
            let transitions = lc.complete_to(state, &phase, &target)?;
            Ok(Outcome {
                transitions,
                hint: if backwards {
                    "revision_required"
                } else {
                    "proceed"
                },
                verdict,
                findings,
                artifact,
                warnings,
            })
        })?;
    let outcome = updated.value;
    let mut events = events_for(ctx, &ws, &updated.state, &outcome.transitions);
    if outcome.hint == "revision_required" {
        events.insert(
            0,
            ctx.event(EventKind::RevisionRequired, &phase, &ws, &updated.state),
        );
    }
    ctx.publish(events);
    let display = if outcome.hint == "proceed" {
        let secs = args.duration_ms.unwrap_or(0) / 1000;
        format!(
            "  ✓ Complete  ·  {} tokens · {}:{:02}",
            args.tokens_used.unwrap_or(0),
            secs / 60,
            secs % 60
        )
    } else {
        String::new()
    };
    serde_json::to_value(ReportReply {
        state_updated: true,
        artifact_written: outcome.artifact,
        verdict_parsed: outcome
            .verdict
            .map(|v| v.as_str().to_string())
            .unwrap_or_default(),
        findings: outcome.findings,
        next_action_hint: outcome.hint.to_string(),
        warning: outcome.warnings.join("; "),
        display_message: display,
    })
    .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}
