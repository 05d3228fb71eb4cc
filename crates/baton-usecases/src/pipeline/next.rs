//! `pipeline_next_action` (seed 001 §3, seed 003 path 1): reports the
//! previous action when asked to, applies a person's answer where the
//! workflow lets the agent pass it on, and returns the next typed action —
//! starting its phase. One locked write per call (the step loop inside it);
//! events after it, in the order things happened. A report sent again after
//! a lost reply gets the reply it got, and changes nothing.

use chrono::Utc;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use baton_engine::plan::Plan;
use baton_state::{Actor, WorkspaceRef, WorkspaceState};

pub use super::reply::NextReply;
use super::reply::shape;
use super::step::answers::Given;
use super::step::answers::parse_answer;
use super::step::context::StepContext;
use super::step::ids::{action_key, assign_action_id};
use super::step::run::{PreviousAction, step};
use super::step::seal::seal_if_committing;
use crate::error::{Error, Result};
use crate::files::DiskFiles;
use crate::services::Services;
use crate::validate::check_text;

/// Arguments of `pipeline_next_action` (seed 001, plus `previous_exit_code`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextArgs {
    /// Workspace path (e.g. `.specs/20260401-fix-auth`).
    pub workspace: String,
    /// True after an agent/exec/write_file action completed: reports it first.
    #[serde(default)]
    pub previous_action_complete: Option<bool>,
    /// Token count of the previous action.
    #[serde(default)]
    pub previous_tokens: Option<u64>,
    /// Duration in ms of the previous action.
    #[serde(default)]
    pub previous_duration_ms: Option<u64>,
    /// Model used for the previous action.
    #[serde(default)]
    pub previous_model: Option<String>,
    /// True if the previous exec was setup-only.
    #[serde(default)]
    pub previous_setup_only: Option<bool>,
    /// Extension: the exit code of the previous `exec` (non-zero fails the step).
    #[serde(default)]
    pub previous_exit_code: Option<i64>,
    /// The person's answer to the pending checkpoint or gate: one of its
    /// `options`; `revise: <feedback>` carries free text to the revising agent.
    #[serde(default)]
    pub user_response: Option<String>,
    /// Extension: the reported action's `action_id` (a resend applies once).
    #[serde(default)]
    pub previous_action_id: Option<String>,
    /// Extension: per agent.
    #[serde(default)]
    pub previous_usage: Option<Vec<super::usage::AgentUsage>>,
}

impl NextArgs {
    /// A call that only asks for the next action of `workspace`.
    pub fn for_workspace(workspace: &str) -> NextArgs {
        NextArgs {
            workspace: workspace.to_string(),
            ..NextArgs::default()
        }
    }

    /// The previous action's report this call carries.
    fn previous(&self) -> PreviousAction {
        PreviousAction {
            complete: self.previous_action_complete,
            tokens: self.previous_tokens,
            duration_ms: self.previous_duration_ms,
            model: self.previous_model.clone(),
            setup_only: self.previous_setup_only,
            exit_code: self.previous_exit_code,
            usage: self.previous_usage.clone(),
        }
    }
}

/// `pipeline_next_action` (seed 001 §3): reports the previous action when
/// asked to, applies the agent's answer where the workflow lets the agent
/// answer, and returns the next typed action — starting its phase. One
/// locked write; events after it.
pub fn next_action(svc: &Services, args: NextArgs) -> Result<NextReply> {
    check_text("workspace", &args.workspace, 1024)?;
    if let Some(m) = &args.previous_model {
        check_text("previous_model", m, 128)?;
    }
    if let Some(r) = &args.user_response {
        check_text("user_response", r, 16 * 1024)?;
    }
    if let Some(u) = &args.previous_usage {
        super::usage::check(u, args.previous_tokens)?;
    }
    let ws = svc.store.resolve(&args.workspace)?;
    let files = DiskFiles::new(&ws.dir);
    let now = Utc::now();
    let given = args.user_response.as_deref().map(|text| Given {
        answer: parse_answer(text),
        by: Actor::agent(),
    });
    let reported_id = args
        .previous_action_id
        .as_deref()
        .filter(|_| args.previous().reported())
        .map(str::to_string);
    // The same report again (its reply was lost): the same answer, and
    // nothing changes.
    let (current, check) = svc.store.load_checked(&ws)?;
    // A run whose state changed outside baton during an agent's command
    // is held until a person releases it (crate::hooks::outside).
    if let Some(hold) = &current.hold {
        return Err(crate::hooks::outside::held_error(&ws.display, hold));
    }
    if let Some(id) = &reported_id
        && let Some(mut reply) = repeated_reply(&current, id)
    {
        svc.store.repair(&ws)?;
        // Never dropped silently: an answer sent with a repeat is not applied.
        if args.user_response.is_some() {
            let note = format!(
                "user_response was not applied: the report of action {id} was applied already and this is its reply again; to answer, call pipeline_next_action with user_response and without previous_action_id"
            );
            reply.warning = if reply.warning.is_empty() {
                note
            } else {
                format!("{}; {note}", reply.warning)
            };
        }
        return Ok(reply);
    }
    // A run that has ended changes no more: its `done` action, read-only
    // (a sealed run's state.json is as committed and must stay so).
    if current.current_phase_status.is_terminal() {
        return ended_reply(svc, &ws, &files, current, &args, now);
    }
    // A state written outside baton (crate::integrity) grants nothing.
    let untrusted = crate::integrity::changed_outside(check, &current);
    let updated = svc.store.update_sealing(&ws, now, |state, sealed| {
        let def = svc.run_definition(state)?;
        let ctx = StepContext::new(svc, &def, &files, &ws, now);
        if let Some(id) = &reported_id {
            super::stale::check_reported_action(state, id, "previous_action_id")?;
        }
        // A person's question the state skipped (changed outside baton) is
        // asked again (crate::tamper).
        let reopened = crate::tamper::reopen_skipped(&def, state, now);
        let withdrawn = untrusted.then(|| crate::tamper::record_changed_outside(state, now));
        // A migrated run gets a safe baseline before anything is committed.
        crate::baseline::ensure(state, &ws, &svc.config.repo_root)?;
        let mut stepped = step(&ctx, state, &args.previous(), given)?;
        for note in [reopened, withdrawn].into_iter().flatten() {
            stepped.warnings.insert(0, note.message);
        }
        stepped.action_id = assign_action_id(state, &stepped.plan, stepped.report.is_some());
        let finish = seal_if_committing(&ctx, state, &stepped.plan, sealed);
        let reply = shape(svc, &ws, state, &files, &stepped)?;
        if let Some(id) = &reported_id {
            state.last_report = Some(baton_state::ReportMemo {
                action: id.clone(),
                next: Some(reply.action_id.clone()),
                reply: serde_json::to_value(&reply).unwrap_or(Value::Null),
            });
        }
        Ok::<_, Error>(((reply, stepped.happened), finish))
    })?;
    let (reply, happened) = updated.value;
    svc.after_write(&ws, &updated.state, happened);
    Ok(reply)
}

/// The reply for a run that has ended: its `done` action, computed on a
/// copy and never written. A report sent now (the last report again, after
/// a lost reply) applies nothing.
fn ended_reply(
    svc: &Services,
    ws: &WorkspaceRef,
    files: &DiskFiles,
    mut state: WorkspaceState,
    args: &NextArgs,
    now: chrono::DateTime<Utc>,
) -> Result<NextReply> {
    let def = svc.run_definition(&state)?;
    let ctx = StepContext::new(svc, &def, files, ws, now);
    let mut stepped = step(&ctx, &mut state, &PreviousAction::default(), None)?;
    stepped.action_id = match stepped.plan {
        Plan::Done { .. } => String::new(),
        _ => state
            .outstanding_action
            .as_ref()
            .filter(|o| o.key == action_key(&stepped.plan))
            .map(|o| o.id.clone())
            .unwrap_or_default(),
    };
    if args.previous().reported() || args.user_response.is_some() {
        stepped.warnings.push(format!(
            "the run has ended ({}); nothing was applied",
            state.current_phase_status.as_str()
        ));
    }
    shape(svc, ws, &state, files, &stepped)
}

/// The reply a report naming `id` got the first time, if it is a repeat of
/// the last report applied and nothing moved since.
fn repeated_reply(state: &WorkspaceState, id: &str) -> Option<NextReply> {
    let memo = state.last_report.as_ref().filter(|m| m.action == id)?;
    let outstanding = state.outstanding_action.as_ref().map(|o| o.id.as_str());
    if memo.next.as_deref() != outstanding || memo.next.is_none() {
        return None;
    }
    serde_json::from_value(memo.reply.clone()).ok()
}
