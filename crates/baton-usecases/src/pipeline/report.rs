//! `pipeline_report_result` (seed 001 §4): reports the current phase as
//! done — the step loop's report procedure in one locked write, the seed-003
//! events after it. A report naming its action is applied once.

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use baton_engine::completion::verdict::Finding;

use super::step::report::{Outcome, ReportInput, report_core, report_events};
use crate::error::{Error, Result};
use crate::events::Happened;
use crate::files::DiskFiles;
use crate::services::Services;
use crate::validate::check_text;

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
    /// Extension: an `exec` command's exit code (non-zero fails the phase).
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// Extension: the reported action's `action_id` (a resend applies once).
    #[serde(default)]
    pub action_id: Option<String>,
}

/// Reply of `pipeline_report_result` (seed 001 field names).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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

/// `pipeline_report_result` (seed 001 §4): reports the current phase as
/// done — one locked write, the seed-003 events after it.
pub fn report_result(svc: &Services, args: ReportArgs) -> Result<ReportReply> {
    check_text("workspace", &args.workspace, 1024)?;
    check_text("phase", &args.phase, 64)?;
    if let Some(m) = &args.model {
        check_text("model", m, 128)?;
    }
    let ws = svc.store.resolve(&args.workspace)?;
    let files = DiskFiles::new(&ws.dir);
    let now = Utc::now();
    let phase = args.phase.clone();
    let input = ReportInput {
        phase: args.phase.clone(),
        tokens: args.tokens_used.unwrap_or(0),
        duration_ms: args.duration_ms.unwrap_or(0),
        model: args.model.clone(),
        setup_only: args.setup_only.unwrap_or(false),
        exit_code: args.exit_code,
        usage: Vec::new(),
    };
    // A report sent again (a lost reply) gets the answer it got, and
    // changes nothing.
    if let Some(id) = args.action_id.as_deref() {
        check_text("action_id", id, 64)?;
        let state = svc.store.load(&ws)?;
        if let Some(memo) = state
            .last_report
            .as_ref()
            .filter(|m| m.action == id && m.next.is_none())
            && let Ok(reply) = serde_json::from_value::<ReportReply>(memo.reply.clone())
        {
            svc.store.repair(&ws)?;
            return Ok(reply);
        }
    }
    let updated = svc
        .store
        .update(&ws, now, |state| -> Result<Outcome, Error> {
            if let Some(hold) = &state.hold {
                return Err(crate::hooks::outside::held_error(&ws.display, hold));
            }
            if let Some(id) = args.action_id.as_deref() {
                super::stale::check_reported_action(state, id, "action_id")?;
            }
            let def = svc.run_definition(state)?;
            let outcome = report_core(&def, state, &files, now, &input)?;
            if let Some(id) = args.action_id.as_deref() {
                state.outstanding_action = None;
                state.last_report = Some(baton_state::ReportMemo {
                    action: id.to_string(),
                    next: None,
                    reply: serde_json::to_value(reply_of(&outcome, &args)).unwrap_or_default(),
                });
            }
            Ok(outcome)
        })?;
    let outcome = updated.value;
    // The same per-phase sequence as the embedded report (seed 003).
    let mut happened: Vec<Happened> = report_events(&input, &updated.state, &outcome)
        .into_iter()
        .map(|e| Happened::Event(e.kind, phase.clone(), e.detail, e.outcome))
        .collect();
    happened.extend(
        outcome
            .transitions
            .iter()
            .cloned()
            .map(Happened::Transition),
    );
    svc.after_write(&ws, &updated.state, happened);
    Ok(reply_of(&outcome, &args))
}

/// The reply to a report.
fn reply_of(outcome: &Outcome, args: &ReportArgs) -> ReportReply {
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
    ReportReply {
        state_updated: true,
        artifact_written: outcome.artifact.clone(),
        verdict_parsed: outcome
            .verdict
            .map(|v| v.as_str().to_string())
            .unwrap_or_default(),
        findings: outcome.findings.clone(),
        next_action_hint: outcome.hint.to_string(),
        warning: outcome.warnings.join("; "),
        display_message: display,
    }
}
