//! Phase reports of the seed pipeline (seed 001 §4): records a phase's metrics, checks
//! its artifacts, parses review verdicts with the one parser, and moves the
//! pipeline by the `forge` definition — one locked write, events after it.

use chrono::Utc;

use baton_engine::WorkspaceFiles;
use baton_engine::completion::artifacts::check_phase;
use baton_engine::completion::freshness::{is_fresh, require_fresh};
use baton_engine::completion::guards::GuardViolation;
use baton_engine::completion::verdict::{Finding, Verdict};
use baton_engine::pipeline::tasks::parse_tasks;
use baton_engine::route::{Decision, decide};
use baton_events::EventKind;
use baton_state::{
    CommandGuard, DecisionReason, ExecutionMode, ImplStatus, Lifecycle, PendingDecision,
    PhaseLogEntry, ReviewStatus, Transition, WorkspaceState,
};
use baton_workflow::{CommandSource, PerTask, ResultKind, RevisionCounter, WorkflowDefinition};

use crate::files::DiskFiles;
use crate::{Error, ErrorCode, Result};

/// What a report changed, for the reply and the events.
pub struct Outcome {
    /// Lifecycle transitions, to publish after the write.
    pub transitions: Vec<Transition>,
    /// `proceed`, `revision_required` or `setup_continue`.
    pub hint: &'static str,
    /// The deciding verdict of a review.
    pub verdict: Option<Verdict>,
    /// Review findings.
    pub findings: Vec<Finding>,
    /// The first artifact checked.
    pub artifact: String,
    /// Non-blocking remarks.
    pub warnings: Vec<String>,
}

impl Outcome {
    /// An outcome with `hint` and nothing else yet.
    pub fn empty(hint: &'static str) -> Outcome {
        Outcome {
            transitions: Vec::new(),
            hint,
            verdict: None,
            findings: Vec::new(),
            artifact: String::new(),
            warnings: Vec::new(),
        }
    }
}

/// One report of the current phase, as the standalone tool and the embedded
/// path of `pipeline_next_action` both make it.
pub struct ReportInput {
    /// The phase reported (must be current and in progress).
    pub phase: String,
    /// Tokens used.
    pub tokens: u64,
    /// Duration in ms.
    pub duration_ms: u64,
    /// Model label (default: the last dispatch's).
    pub model: Option<String>,
    /// A setup step: log only.
    pub setup_only: bool,
    /// A command's exit code.
    pub exit_code: Option<i64>,
    /// Per agent of a spawn: what its client reported (`previous_usage`).
    pub usage: Vec<crate::pipeline::usage::AgentUsage>,
}

/// An event a report emits before its transitions.
pub struct ReportEvent {
    /// `action-complete` or `revision-required`.
    pub kind: EventKind,
    /// For `action-complete`: the model that ran.
    pub detail: Option<String>,
    /// An outcome other than the kind's (a failed command).
    pub outcome: Option<baton_events::Outcome>,
}

/// The events of an accepted report, in seed 003's order, whichever tool
/// made it: `action-complete` (detail: the model reported, else the one
/// dispatched; `failed` for a command that failed its phase), then
/// `revision-required` for a REVISE/FAIL sent back. `state` is the state
/// after the report.
pub fn report_events(
    input: &ReportInput,
    state: &WorkspaceState,
    outcome: &Outcome,
) -> Vec<ReportEvent> {
    let model = input
        .model
        .clone()
        .or_else(|| state.last_dispatch.as_ref().map(|d| d.model.clone()))
        .filter(|m| !m.is_empty());
    let failed = input.exit_code.is_some_and(|c| c != 0)
        && state.current_phase_status == baton_state::PhaseStatus::Failed;
    let mut events = vec![ReportEvent {
        kind: EventKind::ActionComplete,
        detail: model,
        outcome: failed.then_some(baton_events::Outcome::Failed),
    }];
    if outcome.hint == "revision_required" {
        events.push(ReportEvent {
            kind: EventKind::RevisionRequired,
            detail: None,
            outcome: None,
        });
    }
    events
}

fn stop_for_person(
    lc: &Lifecycle<'_>,
    state: &mut WorkspaceState,
    phase: &str,
    reason: DecisionReason,
    detail: String,
    mut outcome: Outcome,
) -> Result<Outcome, Error> {
    outcome
        .warnings
        .push(format!("a person must decide: {detail}"));
    outcome.transitions = lc.checkpoint(state, phase)?;
    state.pending_decision = Some(PendingDecision {
        phase: phase.to_string(),
        reason,
        detail,
    });
    Ok(outcome)
}

/// The report procedure on a loaded state (inside the store's locked update).
/// Artifacts are checked before anything is logged; on error nothing changes.
pub fn report_core(
    def: &WorkflowDefinition,
    state: &mut WorkspaceState,
    files: &DiskFiles,
    now: chrono::DateTime<Utc>,
    input: &ReportInput,
) -> Result<Outcome, Error> {
    let phase = input.phase.as_str();
    let lc = Lifecycle::new(def, now);
    // The phase must be the current one and in progress.
    lc.ensure_running(state, "report", phase)?;
    let phase_def = def.phase(phase);
    let log = PhaseLogEntry {
        phase: phase.to_string(),
        tokens: input.tokens,
        duration_ms: input.duration_ms,
        model: input
            .model
            .clone()
            .or_else(|| state.last_dispatch.as_ref().map(|d| d.model.clone()))
            .unwrap_or_default(),
        timestamp: now,
        tasks: state
            .last_dispatch
            .as_ref()
            .filter(|d| d.phase == phase)
            .map(|d| super::ids::dispatched_tasks(&d.action))
            .unwrap_or_default(),
        cost_usd: None,
    };
    let log = crate::pipeline::usage::entries(log, &input.usage);
    if input.setup_only {
        state.phase_log.extend(log);
        return Ok(Outcome::empty("setup_continue"));
    }
    if let Some(CommandSource::Fixed(commands)) = phase_def.and_then(|p| p.commands.as_ref()) {
        state.phase_log.extend(log);
        let step = state.command_step as usize;
        let current = commands.get(step);
        let shown = current.map(|c| c.run().join(" ")).unwrap_or_default();
        let mut skipped_as_done = None;
        if let Some(check) = current.and_then(|c| c.skip_if())
            && state.command_guard == CommandGuard::Check
        {
            // This report is the "already done" check's. Without an exit
            // code the work is assumed not done (never skip real work).
            if input.exit_code != Some(0) {
                state.command_guard = CommandGuard::Run;
                return Ok(Outcome::empty("setup_continue"));
            }
            skipped_as_done = Some(format!(
                "`{}` exited 0: `{shown}` was already done and is skipped",
                check.join(" ")
            ));
        }
        if skipped_as_done.is_none()
            && let Some(code) = input.exit_code.filter(|c| *c != 0)
        {
            let message = format!(
                "command {} of {phase} (`{shown}`) exited with code {code}",
                step + 1
            );
            let mut outcome = Outcome::empty("setup_continue");
            outcome.transitions = lc.fail(state, phase, &message)?;
            outcome.warnings.push(message);
            return Ok(outcome);
        }
        state.command_step += 1;
        state.command_guard = CommandGuard::Check;
        if (state.command_step as usize) < commands.len() {
            let mut outcome = Outcome::empty("setup_continue");
            outcome.warnings.extend(skipped_as_done);
            return Ok(outcome);
        }
        state.command_step = 0;
        let mut outcome = Outcome::empty("proceed");
        outcome.warnings.extend(skipped_as_done);
        outcome.transitions = lc.complete_to(
            state,
            phase,
            &def.default_successor(phase, &state.skipped_phases),
        )?;
        return Ok(outcome);
    }
    let mut checks = match phase_def {
        Some(p) => check_phase(p, state, files as &dyn WorkspaceFiles),
        None => Vec::new(),
    };
    require_fresh(&mut checks, phase, state, files);
    let artifact = checks.first().map(|c| c.file.clone()).unwrap_or_default();
    if let Some(bad) = checks.iter().find(|c| !c.valid) {
        return Err(Error::from(GuardViolation {
            rule: "artifact_invalid",
            message: format!(
                "artifact invalid for {phase}: {}",
                bad.error
                    .clone()
                    .unwrap_or_else(|| format!("{} is not valid", bad.file))
            ),
        }));
    }
    state.phase_log.extend(log);
    let mut outcome = Outcome::empty("proceed");
    outcome.artifact = artifact;
    outcome.findings = checks.iter().flat_map(|c| c.findings.clone()).collect();
    // A review whose verdict is missing or unclear goes to a person.
    if checks.iter().any(|c| c.review && c.verdict.is_none()) {
        let why: Vec<String> = checks
            .iter()
            .filter(|c| c.review)
            .filter_map(|c| c.error.clone())
            .collect();
        outcome.hint = "setup_continue";
        return stop_for_person(
            &lc,
            state,
            phase,
            DecisionReason::NoVerdict,
            format!("no clear verdict ({})", why.join("; ")),
            outcome,
        );
    }
    // The worst verdict across the phase's reviews decides.
    outcome.verdict = checks
        .iter()
        .filter_map(|c| c.verdict)
        .min_by_key(|v| v.is_positive());
    if let Some(list) = phase_def.and_then(|p| p.task_list()) {
        outcome.warnings.extend(register_tasks(state, files, list)?);
    }
    let per_task = phase_def.and_then(|p| p.per_task);
    if per_task == Some(PerTask::Implement) {
        let written: Vec<String> = state
            .tasks
            .keys()
            .filter(|key| {
                let file = format!("impl-{key}.md");
                files.is_nonempty_file(&file) && is_fresh(&file, state, files)
            })
            .cloned()
            .collect();
        let mut pending = Vec::new();
        for (key, task) in state.tasks.iter_mut() {
            if task.execution_mode == ExecutionMode::HumanGate
                || task.impl_status == ImplStatus::Completed
            {
                continue;
            }
            if written.contains(key) {
                task.impl_status = ImplStatus::Completed;
            } else {
                pending.push(key.clone());
            }
        }
        let gates_open = state.tasks.values().any(|t| {
            t.execution_mode == ExecutionMode::HumanGate && t.impl_status != ImplStatus::Completed
        });
        if !pending.is_empty() || gates_open {
            if !pending.is_empty() {
                outcome
                    .warnings
                    .push(format!("tasks still to implement: {}", pending.join(", ")));
            }
            outcome.hint = "setup_continue";
            return Ok(outcome);
        }
    }
    let mut failed_impls: Vec<String> = Vec::new();
    if per_task == Some(PerTask::Review) {
        for check in &checks {
            let key = check
                .file
                .trim_start_matches("review-")
                .trim_end_matches(".md")
                .to_string();
            if let Some(task) = state.tasks.get_mut(&key) {
                match check.verdict {
                    Some(v) if !v.is_positive() => {
                        task.review_status = ReviewStatus::Fail;
                        task.impl_status = ImplStatus::Pending;
                        task.impl_retries += 1;
                        failed_impls.push(format!("impl-{key}.md"));
                    }
                    Some(v) if v.has_notes() => task.review_status = ReviewStatus::PassWithNotes,
                    Some(_) => task.review_status = ReviewStatus::Pass,
                    None => {}
                }
            }
        }
    }
    // A failed task's implementation must be written again on its retry.
    baton_engine::completion::freshness::mark(state, files, &failed_impls);
    let decision = decide(
        def,
        state,
        phase,
        ResultKind::Success,
        outcome.verdict.map(Verdict::as_str),
    );
    let decision = match decision {
        Ok(d) => d,
        Err(limit) => {
            outcome.hint = "setup_continue";
            return stop_for_person(
                &lc,
                state,
                phase,
                DecisionReason::RetryLimit,
                limit.message,
                outcome,
            );
        }
    };
    let Decision::Advance { target } = decision else {
        return Err(Error::new(
            ErrorCode::Internal,
            "a success cannot fail in place",
        ));
    };
    advance(def, state, &lc, files, phase, &target, &mut outcome)?;
    Ok(outcome)
}

/// Registers the tasks of the task list `file` (the one place a task list
/// becomes the run's tasks); returns the parser's warnings.
pub fn register_tasks(
    state: &mut WorkspaceState,
    files: &dyn WorkspaceFiles,
    file: &str,
) -> Result<Vec<String>, Error> {
    let text = files
        .read(file)
        .ok_or_else(|| Error::new(ErrorCode::Blocked, format!("{file} could not be read")))?;
    let (tasks, warnings) = parse_tasks(&text).map_err(|errors| {
        Error::new(ErrorCode::Blocked, format!("{file}: {}", errors.join("; ")))
    })?;
    state.tasks = tasks;
    Ok(warnings)
}

/// Completes `phase` towards `target`, counting a revision when the move goes
/// backwards, and clears what the phase's completion answers.
///
/// A forward move of a work phase passes the one gatekeeper first
/// ([`baton_engine::completion::check_completion`]); a move back (a revision) does
/// not need the evidence it is sent back for. Either way the phase's
/// artifacts are fingerprinted, so the next visit must write them anew.
pub fn advance(
    def: &WorkflowDefinition,
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    files: &dyn WorkspaceFiles,
    phase: &str,
    target: &str,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    let backwards = def
        .position(target)
        .zip(def.position(phase))
        .is_some_and(|(t, p)| t < p);
    let work = def.phase(phase).filter(|p| !p.kind.waits_for_human());
    if !backwards && work.is_some() {
        baton_engine::completion::check_completion(def, state, phase, files)?;
    }
    if let Some(p) = work {
        baton_engine::completion::freshness::mark(state, files, &p.artifacts);
    }
    if backwards {
        match def.phase(phase).and_then(|p| p.counts_revisions) {
            Some(RevisionCounter::DesignRevisions) => state.revisions.design_revisions += 1,
            Some(RevisionCounter::TaskRevisions) => state.revisions.task_revisions += 1,
            None => {}
        }
    }
    state.pending_decision = None;
    if state
        .human_feedback
        .as_ref()
        .is_some_and(|f| f.phase == phase)
    {
        state.human_feedback = None;
    }
    outcome
        .transitions
        .extend(lc.complete_to(state, phase, target)?);
    if backwards && outcome.hint == "proceed" {
        outcome.hint = "revision_required";
    }
    Ok(())
}
