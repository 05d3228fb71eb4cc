//! The step loop: applies an embedded report and a given answer, takes the
//! internal steps no agent is needed for (a resting skip, task
//! registration, a finished phase through the gatekeeper, an empty command
//! step, reading the repository), and stops at the next action — an agent
//! to spawn, a command, a file to write, a question for a person, or the
//! end. It imports nothing above it: the public use cases (next, answer)
//! call it inside their locked write.

use serde_json::Value;

use baton_engine::plan::{Plan, PlanInput, QuestionKind};
use baton_engine::route::{Decision, decide};
use baton_events::EventKind;
use baton_state::{CommandGuard, Lifecycle, PhaseStatus, WorkspaceState, schema::LastDispatch};
use baton_workflow::{ResultKind, WorkflowDefinition};

use super::answers::Given;
use super::answers::{
    Answer, Run, check_may_answer, not_an_option, option_matches, resolve, wait_for_person,
};
use super::context::StepContext;
use super::ids::dispatch_key;
use super::report::{Outcome, ReportInput, advance, register_tasks, report_core, report_events};
use crate::error::{Error, ErrorCode, Result};
use crate::events::Happened;

/// How many internal steps (task registration, automatic approvals,
/// answered questions) one call may take before it must return an action.
pub(crate) const MAX_INTERNAL_STEPS: usize = 32;

/// What one call did and what it returns.
pub(crate) struct Stepped {
    pub(crate) report: Option<Outcome>,
    pub(crate) plan: Plan,
    pub(crate) happened: Vec<Happened>,
    pub(crate) warnings: Vec<String>,
    /// What the call did that a person should know and that is no warning
    /// (a checkpoint approved under `--auto`): shown before the action's line.
    pub(crate) notes: Vec<String>,
    /// The id of the action handed out.
    pub(crate) action_id: String,
}

/// The previous action's report as a call carries it (`previous_*` of
/// `pipeline_next_action`).
#[derive(Debug, Clone, Default)]
pub(crate) struct PreviousAction {
    /// The action completed.
    pub(crate) complete: Option<bool>,
    /// Tokens it used.
    pub(crate) tokens: Option<u64>,
    /// How long it took, in ms.
    pub(crate) duration_ms: Option<u64>,
    /// The model that ran it.
    pub(crate) model: Option<String>,
    /// It was a setup step.
    pub(crate) setup_only: Option<bool>,
    /// A command's exit code.
    pub(crate) exit_code: Option<i64>,
    /// Per agent: what its client reported.
    pub(crate) usage: Option<Vec<crate::pipeline::usage::AgentUsage>>,
}

impl PreviousAction {
    /// Whether the call reports the previous action at all.
    pub(crate) fn reported(&self) -> bool {
        self.complete == Some(true)
            || self.usage.as_ref().is_some_and(|u| !u.is_empty())
            || self.tokens.is_some_and(|t| t > 0)
            || self.duration_ms.is_some_and(|d| d > 0)
            || self.model.as_deref().is_some_and(|m| !m.is_empty())
            || self.exit_code.is_some()
    }
}

/// Takes the internal steps and stops at the next action.
pub(crate) fn step(
    ctx: &StepContext<'_>,
    state: &mut WorkspaceState,
    previous: &PreviousAction,
    mut given: Option<Given>,
) -> Result<Stepped, Error> {
    let def = ctx.def;
    let files = ctx.files;
    let now = ctx.now;
    let lc = Lifecycle::new(def, now);
    let run = Run {
        definition: def,
        lifecycle: &lc,
        files,
    };
    let mut happened = Vec::new();
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let mut report = None;
    if previous.reported() {
        if state.current_phase_status == PhaseStatus::InProgress {
            let phase = state.current_phase.clone();
            let input = ReportInput {
                phase: phase.clone(),
                tokens: previous
                    .tokens
                    .unwrap_or_else(|| previous.usage.iter().flatten().map(|u| u.tokens).sum()),
                duration_ms: previous.duration_ms.unwrap_or(0),
                model: previous.model.clone().filter(|m| !m.is_empty()),
                usage: previous.usage.clone().unwrap_or_default(),
                setup_only: state
                    .last_dispatch
                    .as_ref()
                    .filter(|d| d.phase == phase)
                    .map(|d| d.setup_only)
                    .unwrap_or(false)
                    || previous.setup_only == Some(true),
                exit_code: previous.exit_code,
            };
            let outcome = report_core(def, state, files, now, &input).map_err(|e| {
                Error::new(e.code, format!("report_result: {}", e.message))
                    .with_details(e.details.clone().unwrap_or(Value::Null))
            })?;
            happened.extend(
                report_events(&input, state, &outcome)
                    .into_iter()
                    .map(|e| Happened::Event(e.kind, phase.clone(), e.detail, e.outcome)),
            );
            happened.extend(
                outcome
                    .transitions
                    .iter()
                    .cloned()
                    .map(Happened::Transition),
            );
            report = Some(outcome);
        } else {
            warnings.push(format!(
                "nothing was in progress to report ({} is {}); the report was ignored",
                state.current_phase,
                state.current_phase_status.as_str()
            ));
        }
    }
    // The repository before the run is in the state before the call
    // returns any action (`crate::git`).
    crate::git::settle_baseline_before_actions(ctx.repo_root, ctx.ws, state)?;
    for _ in 0..MAX_INTERNAL_STEPS {
        let plan = plan_now(ctx, state)?;
        match plan {
            Plan::RegisterTasks { .. }
            | Plan::CompletePhase { .. }
            | Plan::Skip { .. }
            | Plan::SkipStep { .. }
            | Plan::ReadRepo { .. } => {
                internal_step(ctx, state, &lc, plan, &mut happened, &mut warnings)?;
                continue;
            }
            Plan::Ask(question) => {
                if let Some(g) = given.take() {
                    check_may_answer(ctx, state, &question, &g.by)?;
                    if option_matches(&question, &g.answer.word).is_none() {
                        return Err(not_an_option(&question, &g.answer.word, "user_response"));
                    }
                    resolve(&run, state, &question, g.answer, &g.by, &mut happened)?;
                    continue;
                }
                if question.kind == QuestionKind::Checkpoint && state.auto_approve {
                    // Asked for; answered only where the person granted it.
                    match crate::trust::auto_actor(state, ctx.person, ctx.repo_root) {
                        Some(auto_by) => {
                            let auto = Answer {
                                word: "proceed".into(),
                                feedback: None,
                            };
                            notes.push(format!(
                                "✓ {} approved automatically (--auto, {})",
                                question.name,
                                auto_by.label()
                            ));
                            resolve(&run, state, &question, auto, &auto_by, &mut happened)?;
                            continue;
                        }
                        None => warnings.push(crate::trust::how_to_allow_auto(ctx.repo_root)),
                    }
                }
                wait_for_person(state, &lc, &question, &mut happened)?;
                return Ok(finish(
                    report,
                    Plan::Ask(question),
                    happened,
                    warnings,
                    notes,
                ));
            }
            Plan::Spawn(ref spawn) => {
                let action = dispatch_key(spawn);
                // A repeated call (no report, same action, phase running)
                // hands the action out again without announcing it again.
                let repeat = report.is_none()
                    && state.current_phase_status == PhaseStatus::InProgress
                    && state
                        .last_dispatch
                        .as_ref()
                        .is_some_and(|d| d.phase == spawn.phase && d.action == action);
                dispatch(state, &lc, &spawn.phase, &spawn.model, false, &mut happened)?;
                if let Some(d) = state.last_dispatch.as_mut() {
                    d.action = action;
                }
                if !repeat {
                    happened.push(Happened::Event(
                        EventKind::AgentDispatch,
                        spawn.phase.clone(),
                        Some(spawn.agent.clone()),
                        None,
                    ));
                }
            }
            Plan::Exec {
                ref phase, check, ..
            } => {
                dispatch(state, &lc, phase, "", false, &mut happened)?;
                // A guarded step: a report now is the check's, or the command's.
                state.command_guard = if check {
                    CommandGuard::Check
                } else if state.command_guard == CommandGuard::Run {
                    CommandGuard::Running
                } else {
                    state.command_guard
                };
            }
            Plan::WriteFile { ref phase, .. } => {
                dispatch(state, &lc, phase, "", true, &mut happened)?;
            }
            Plan::Done { .. } => {}
        }
        // An action to hand out (or the end): the call returns it.
        return Ok(finish(
            report,
            plan,
            happened,
            ignored(given, warnings),
            notes,
        ));
    }
    Err(Error::new(
        ErrorCode::Internal,
        format!(
            "no action after {MAX_INTERNAL_STEPS} internal steps at {}: the workflow definition loops without work",
            state.current_phase
        ),
    ))
}

pub(crate) fn finish(
    report: Option<Outcome>,
    plan: Plan,
    happened: Vec<Happened>,
    warnings: Vec<String>,
    notes: Vec<String>,
) -> Stepped {
    Stepped {
        report,
        plan,
        happened,
        warnings,
        notes,
        action_id: String::new(),
    }
}

pub(crate) fn ignored(given: Option<Given>, mut warnings: Vec<String>) -> Vec<String> {
    if let Some(g) = given {
        warnings.push(format!(
            "user_response {:?} ignored: no checkpoint or gate was waiting for an answer",
            g.answer.word
        ));
    }
    warnings
}

/// The plan for the run as it is now.
pub(crate) fn plan_now(ctx: &StepContext<'_>, state: &WorkspaceState) -> Result<Plan> {
    baton_engine::plan::plan(
        &PlanInput {
            definition: ctx.def,
            files: ctx.files,
            workspace: &ctx.ws.display,
            repo: ctx.repo_status(),
        },
        state,
    )
    .map_err(|e| Error::new(ErrorCode::Blocked, e.0))
}

/// Applies an internal plan (no agent involved): a resting skip, task
/// registration, a finished phase (through the gatekeeper), an empty step.
pub(crate) fn internal_step(
    ctx: &StepContext<'_>,
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    plan: Plan,
    happened: &mut Vec<Happened>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let def = ctx.def;
    match plan {
        Plan::Skip { phase } => {
            // A run resting on a phase its template or flags skip: skipped
            // without events (seed 003). One that was started is closed first.
            if state.current_phase_status == PhaseStatus::InProgress {
                happened.extend(
                    lc.fail(state, &phase, "skipped: the run's flags skip this phase")?
                        .into_iter()
                        .map(Happened::Transition),
                );
            }
            if !state.skipped_phases.contains(&phase) && !state.completed_phases.contains(&phase) {
                state.skipped_phases.push(phase.clone());
            }
            state.command_step = 0;
            state.command_guard = CommandGuard::Check;
            happened.extend(
                lc.skip(state, &phase)?
                    .into_iter()
                    .map(Happened::Transition),
            );
        }
        Plan::SkipStep { .. } => {
            state.command_step += 1;
            state.command_guard = CommandGuard::Check;
        }
        Plan::ReadRepo { phase } => {
            if ctx.repo.get().is_some() {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!("{phase} asked for the repository's status twice"),
                ));
            }
            // The baseline the commit leaves out is in the state first
            // (read off the confirmation's reply path; `crate::git`).
            crate::git::settle_baseline_now(ctx.repo_root, ctx.ws, state)?;
            ctx.read_repo(&phase)?;
        }
        Plan::RegisterTasks { .. } => {
            warnings.extend(register_tasks(state, ctx.files, def.task_list())?);
        }
        Plan::CompletePhase { phase } => {
            let mut out = Outcome::empty("proceed");
            if matches!(
                state.current_phase_status,
                PhaseStatus::Pending | PhaseStatus::Failed
            ) {
                out.transitions.extend(lc.start(state, &phase)?);
            }
            // The one gatekeeper: the same evidence on every path.
            baton_engine::completion::check_completion(def, state, &phase, ctx.files)?;
            state.command_step = 0;
            state.command_guard = CommandGuard::Check;
            let target = successor(def, state, &phase)?;
            advance(def, state, lc, ctx.files, &phase, &target, &mut out)?;
            happened.extend(out.transitions.into_iter().map(Happened::Transition));
        }
        other => {
            return Err(Error::new(
                ErrorCode::Internal,
                format!("not an internal step: {other:?}"),
            ));
        }
    }
    Ok(())
}

/// The phase after `phase` on the positive path.
fn successor(
    def: &WorkflowDefinition,
    state: &WorkspaceState,
    phase: &str,
) -> Result<String, Error> {
    match decide(def, state, phase, ResultKind::Success, None) {
        Ok(Decision::Advance { target }) => Ok(target),
        Ok(Decision::FailInPlace) => Ok(def.default_successor(phase, &state.skipped_phases)),
        Err(limit) => Err(Error::from(limit)),
    }
}

/// Starts the action's phase unless it is already running, and records the dispatch.
fn dispatch(
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    phase: &str,
    model: &str,
    setup_only: bool,
    happened: &mut Vec<Happened>,
) -> Result<(), Error> {
    if matches!(
        state.current_phase_status,
        PhaseStatus::Pending | PhaseStatus::Failed
    ) {
        for t in lc.start(state, phase)? {
            happened.push(Happened::Transition(t));
        }
    }
    state.last_dispatch = Some(LastDispatch {
        phase: phase.to_string(),
        model: model.to_string(),
        setup_only,
        action: String::new(),
    });
    Ok(())
}
