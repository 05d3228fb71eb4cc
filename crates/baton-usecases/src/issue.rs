//! The `issue` group: seed 004's tools with their exact names, on the engine.
//! `completePhase` is a real gate: current phase only, evidence checked against
//! the phase's tasks, acceptance criteria and fresh artifacts, and failures
//! routed by the definition (a red quality check or CI can only go to fix).

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use baton_engine::completion::evidence::{ReportEvidence, check_report};
use baton_engine::route::{Decision, decide, visits};
use baton_engine::stats::{RunStats, run_stats};
use baton_state::{Lifecycle, PhaseReport, Transition};
use baton_workflow::{COMPLETED, ResultKind};

use crate::events::Happened;
use crate::files::DiskFiles;
use crate::runs::{RunView, fresh_folder, select, start_run, view};
use crate::validate::{check_list, check_path, check_text, normalize_issue};
use crate::{Error, ErrorCode, Result, Services};

/// Longest notes.
const MAX_NOTES: usize = 16 * 1024;

/// Arguments of `startIssueWorkflow`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartIssueArgs {
    /// The issue number, as a string ("42", "#42", "PROJ-123").
    pub issue_number: String,
}

/// Selects a run; both optional when exactly one issue workflow is active.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SelectArgs {
    /// The issue whose workflow is meant.
    #[serde(default)]
    pub issue_number: Option<String>,
    /// Folder name, .specs/<name> or absolute path.
    #[serde(default)]
    pub workspace: Option<String>,
}

/// The outcome an agent reports for a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// Work done, checks passed.
    Completed,
    /// Work failed (lint errors, red CI); say why in notes.
    Failed,
}

/// Seed 004's PhaseResult, with the evidence baton checks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PhaseResultArgs {
    /// The phase being completed; must be the current phase.
    pub phase_name: String,
    /// A failure goes to the fix phase.
    pub status: ReportStatus,
    /// Files created or changed in this phase (relative to the repository root).
    pub working_files: Vec<String>,
    /// Done tasks, by text or number ("1"…); all, for "completed".
    pub completed_tasks: Vec<String>,
    /// Met acceptance criteria, by text or number; all, for "completed".
    #[serde(default)]
    pub acceptance_criteria_met: Vec<String>,
    /// The review verdict, for review phases.
    #[serde(default)]
    pub verdict: Option<String>,
    /// Notes; required for "failed" (what failed).
    #[serde(default)]
    pub notes: Option<String>,
    /// Optional: the phase you expect next. If given it must match baton's decision.
    #[serde(default)]
    pub next_phase: Option<String>,
    /// Optional: when you finished (RFC 3339, any offset). baton stamps its own time too.
    #[serde(default)]
    pub completed_at: Option<String>,
}

/// Arguments of `completePhase`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CompletePhaseArgs {
    /// The report.
    pub phase_result: PhaseResultArgs,
    /// The issue whose workflow is meant (needed when several are active).
    #[serde(default)]
    pub issue_number: Option<String>,
    /// The workspace (any workflow), instead of issueNumber.
    #[serde(default)]
    pub workspace: Option<String>,
}

/// Reply of `completePhase`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletePhaseReply {
    /// The phase reported.
    pub completed_phase: String,
    /// What baton did: "advanced", "completed" (workflow done) or "retry" (the phase failed and starts again).
    pub outcome: String,
    /// The run as it is now, with the instruction of the phase to do next.
    #[serde(flatten)]
    pub run: RunView,
}

/// Reply of `getWorkflowStatus`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusReply {
    /// The workspace.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// The issue, for issue workflows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue_number: Option<String>,
    /// The workflow has not ended.
    pub active: bool,
    /// Current phase.
    pub current_phase: String,
    /// Its status.
    pub current_phase_status: String,
    /// Distinct phases completed so far.
    pub completed_phases: Vec<String>,
    /// Phases still ahead on the default path.
    pub remaining_phases: Vec<String>,
    /// Every report, in order.
    pub phase_history: Vec<PhaseReport>,
    /// Files worked on so far.
    pub working_files: Vec<String>,
    /// The last failure message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// Durations and visits per phase.
    pub stats: RunStats,
}

/// `startIssueWorkflow`.
pub fn start_issue(svc: &Services, args: StartIssueArgs) -> Result<RunView> {
    let number = normalize_issue(&args.issue_number)?;
    // Team mode: connected before the lock, so the claim below is quick.
    crate::team::prepare_claim(svc);
    // One active run per issue: checked and created under the issue's lock,
    // so two racing calls cannot both find none and both create one.
    let _issue = svc
        .store
        .lock_named(&format!("issue-{}", number.to_ascii_lowercase()))?;
    // An unreadable run of this issue may be its active one: never start a
    // second run beside it.
    if let Some(e) =
        crate::runs::unreadable_named(svc, |name| crate::runs::issue_folder(name, &number))?
            .into_iter()
            .next()
    {
        return Err(e);
    }
    let active = crate::runs::runs_named(
        svc,
        |name| crate::runs::issue_folder(name, &number),
        |s| {
            s.issue_number.as_deref() == Some(number.as_str())
                && !s.current_phase_status.is_terminal()
        },
    )?;
    if let Some((ws, _)) = active.first() {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "issue {number} already has an active workflow in {}",
                ws.display
            ),
        )
        .with_details(serde_json::json!({"workspace": ws.display})));
    }
    let definition = svc.workflow("issue")?;
    let slug = format!("issue-{}", number.to_ascii_lowercase());
    let folder = fresh_folder(svc, &slug)?;
    // Team mode: one active run per issue across every machine too
    // (another machine's run is a conflict naming it; off: nothing).
    let claim = crate::team::claim_issue(svc, &number, &svc.store.resolve(&folder)?)?;
    let started = start_run(svc, &definition, &folder, &slug, Some(number));
    if let (Err(_), Some(claim)) = (&started, &claim) {
        crate::team::release_claim(svc, claim);
    }
    let (ws, state, events) = started?;
    Ok(view(svc, &ws, &state, &definition, events))
}

/// `getCurrentPhase`.
pub fn get_current_phase(svc: &Services, args: SelectArgs) -> Result<RunView> {
    let (ws, state) = select(svc, args.workspace.as_deref(), args.issue_number.as_deref())?;
    let definition = svc.run_definition(&state)?;
    Ok(view(svc, &ws, &state, &definition, Vec::new()))
}

/// `getWorkflowStatus`.
pub fn get_workflow_status(svc: &Services, args: SelectArgs) -> Result<StatusReply> {
    let (ws, state) = select(svc, args.workspace.as_deref(), args.issue_number.as_deref())?;
    let definition = svc.run_definition(&state)?;
    let mut remaining = Vec::new();
    if !state.current_phase_status.is_terminal() {
        let mut cursor = state.current_phase.clone();
        while cursor != COMPLETED && remaining.len() < definition.phases.len() {
            cursor = definition.default_successor(&cursor, &state.skipped_phases);
            if cursor != COMPLETED {
                remaining.push(cursor.clone());
            }
        }
    }
    Ok(StatusReply {
        workspace: ws.display.clone(),
        workflow: state.workflow.clone(),
        issue_number: state.issue_number.clone(),
        active: !state.current_phase_status.is_terminal(),
        current_phase: state.current_phase.clone(),
        current_phase_status: state.current_phase_status.as_str().to_string(),
        completed_phases: state
            .completed_phases
            .iter()
            .filter(|p| *p != baton_workflow::SETUP)
            .cloned()
            .collect(),
        remaining_phases: remaining,
        phase_history: state.phase_results.clone(),
        working_files: state.working_files.clone(),
        last_error: state.error.as_ref().map(|e| e.message.clone()),
        started_at: state.timestamps.created.to_rfc3339(),
        updated_at: state.timestamps.last_updated.to_rfc3339(),
        stats: run_stats(&state, Some(&definition)),
    })
}

/// `completePhase`.
pub fn complete_phase(svc: &Services, args: CompletePhaseArgs) -> Result<CompletePhaseReply> {
    let report = args.phase_result;
    check_text("phaseResult.phaseName", &report.phase_name, 64)?;
    check_list("phaseResult.workingFiles", &report.working_files)?;
    check_list("phaseResult.completedTasks", &report.completed_tasks)?;
    check_list(
        "phaseResult.acceptanceCriteriaMet",
        &report.acceptance_criteria_met,
    )?;
    if let Some(v) = &report.verdict {
        check_text("phaseResult.verdict", v, 64)?;
    }
    if let Some(n) = &report.notes {
        check_text("phaseResult.notes", n, MAX_NOTES)?;
    }
    let completed_at = match &report.completed_at {
        Some(t) => Some(
            chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|e| {
                    Error::invalid(
                        "phaseResult.completedAt",
                        format!("not an RFC 3339 time: {e}"),
                    )
                })?
                .with_timezone(&Utc),
        ),
        None => None,
    };
    let files: Vec<String> = report
        .working_files
        .iter()
        .map(|f| check_path(f))
        .collect::<Result<_, _>>()?;

    let (ws, _) = select(svc, args.workspace.as_deref(), args.issue_number.as_deref())?;
    let disk = DiskFiles::new(&ws.dir);
    let now = Utc::now();
    let succeeded = report.status == ReportStatus::Completed;
    let mut definition = None;
    let updated = svc.store.update(&ws, now, |state| -> Result<_, Error> {
        let def = svc.run_definition(state)?;
        let lc = Lifecycle::new(&def, now);
        // Lifecycle checks first: right phase, in progress, workflow not ended.
        lc.ensure_running(state, "completePhase", &report.phase_name)
            .map_err(|e| {
                let mut err = Error::from(e);
                err.message.push_str(&format!(
                    "; call getCurrentPhase to see the phase to work on now ({} is {})",
                    state.current_phase,
                    state.current_phase_status.as_str()
                ));
                err
            })?;
        let evidence = ReportEvidence {
            phase: &report.phase_name,
            succeeded,
            completed_tasks: &report.completed_tasks,
            criteria_met: &report.acceptance_criteria_met,
            verdict: report.verdict.as_deref(),
            notes: report.notes.as_deref(),
        };
        check_report(&def, state, &evidence, &disk)?;
        let result = if succeeded { ResultKind::Success } else { ResultKind::Failure };
        let decision = decide(&def, state, &report.phase_name, result, report.verdict.as_deref())?;
        if let Some(expected) = &report.next_phase {
            let actual = match &decision {
                Decision::Advance { target } => target.as_str(),
                Decision::FailInPlace => report.phase_name.as_str(),
            };
            if expected != actual {
                return Err(Error::invalid(
                    "phaseResult.nextPhase",
                    format!("nextPhase {expected:?} does not match the workflow: this report leads to {actual:?}"),
                )
                .with_details(serde_json::json!({"field": "phaseResult.nextPhase", "decided": actual})));
            }
        }
        for f in &files {
            if !state.working_files.contains(f) {
                state.working_files.push(f.clone());
            }
        }
        state.phase_results.push(PhaseReport {
            phase_name: report.phase_name.clone(),
            status: if succeeded { "completed" } else { "failed" }.to_string(),
            completed_tasks: report.completed_tasks.clone(),
            acceptance_criteria_met: report.acceptance_criteria_met.clone(),
            working_files: files.clone(),
            verdict: report.verdict.clone(),
            notes: report.notes.clone(),
            recorded_at: now,
            completed_at,
        });
        let mut transitions: Vec<Transition>;
        let outcome;
        match decision {
            Decision::Advance { target } => {
                transitions = lc.complete_to(state, &report.phase_name, &target)?;
                outcome = if state.current_phase == COMPLETED { "completed" } else { "advanced" };
            }
            Decision::FailInPlace => {
                let message = report.notes.clone().unwrap_or_else(|| "failed".into());
                transitions = lc.fail(state, &report.phase_name, &message)?;
                outcome = "retry";
            }
        }
        // The visit is over: its artifacts must be written anew on the next.
        if let Some(p) = def.phase(&report.phase_name) {
            baton_engine::completion::freshness::mark(state, &disk, &p.artifacts);
        }
        // Start the next piece of work right away, unless it waits for a person
        // or its loop limit is used up.
        let next = state.current_phase.clone();
        if !state.current_phase_status.is_terminal()
            && let Some(p) = def.phase(&next)
            && !p.kind.waits_for_human()
            && p.max_visits.is_none_or(|limit| visits(state, &next) < limit)
        {
            transitions.extend(lc.start(state, &next)?);
        }
        definition = Some(def);
        Ok((transitions, outcome))
    })?;
    let (transitions, outcome) = updated.value;
    let names = svc.after_write(
        &ws,
        &updated.state,
        transitions.into_iter().map(Happened::Transition).collect(),
    );
    let Some(definition) = definition else {
        return Err(Error::new(
            ErrorCode::Internal,
            "no definition after update",
        ));
    };
    Ok(CompletePhaseReply {
        completed_phase: report.phase_name,
        outcome: outcome.to_string(),
        run: view(svc, &ws, &updated.state, &definition, names),
    })
}
