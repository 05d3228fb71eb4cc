//! The step loop of the seed pipeline (`pipeline_next_action`, seed 001 §3,
//! seed 003 path 1): reports the
//! previous action when asked to, applies a person's answer, and returns the
//! next typed action — starting its phase. One locked write per call; events
//! are published after it, in the order things happened.

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use baton_engine::pipeline::prompt::{PromptParts, assemble};
use baton_engine::pipeline::tasks::parse_tasks;
use baton_engine::plan::commit::RepoStatus;
use baton_engine::plan::{
    Plan, PlanInput, Question, QuestionKind, Spawn, post_method, request_meta,
};
use baton_engine::route::{Decision, decide};
use baton_engine::summary::phase_label;
use baton_events::EventKind;
use baton_state::{
    Actor, CommandGuard, Finish, Lifecycle, PhaseStatus, WorkspaceRef, WorkspaceState,
    schema::LastDispatch,
};
use baton_workflow::{Answerer, ResultKind, WorkflowDefinition};

use super::action::{
    Action, Done, EmbeddedReport, Exec, Question as AskAction, SpawnAgent, WriteFile,
};
use super::answer::{Answer, Run, option_matches, parse_answer, resolve, wait_for_person};
use super::report::{Outcome, ReportInput, advance, report_core, report_events};
use crate::events::Happened;
use crate::files::DiskFiles;
use crate::validate::check_text;
use crate::{Error, ErrorCode, Result, Services};

/// How many internal steps (task registration, automatic approvals,
/// answered questions) one call may take before it must return an action.
const MAX_INTERNAL_STEPS: usize = 32;

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
}

/// Reply of `pipeline_next_action`: the action's fields flattened beside
/// the reply's own (seed 001).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NextReply {
    /// The action to execute (`type` and its fields).
    #[serde(flatten)]
    pub action: Action,
    /// Non-blocking remarks.
    pub warning: String,
    /// A line to show the person.
    pub display_message: String,
    /// The embedded report's result when the previous action was reported.
    pub report_result: Option<EmbeddedReport>,
    /// Extension: this action's id; send it back as `previous_action_id`
    /// with its report. Empty for `done` (nothing to report).
    pub action_id: String,
    /// The current phase after this call.
    pub current_phase: String,
    /// Its status.
    pub current_phase_status: String,
}

/// What one call did and what it returns.
struct Stepped {
    report: Option<Outcome>,
    plan: Plan,
    happened: Vec<Happened>,
    warnings: Vec<String>,
    /// The id of the action handed out.
    action_id: String,
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
        .filter(|_| reported(&args))
        .map(str::to_string);
    // The same report again (its reply was lost): the same answer, and
    // nothing changes.
    let current = svc.store.load(&ws)?;
    if let Some(id) = &reported_id
        && let Some(reply) = repeated_reply(&current, id)
    {
        svc.store.repair(&ws)?;
        return Ok(reply);
    }
    // A run that has ended changes no more: its `done` action, read-only
    // (a sealed run's state.json is as committed and must stay so).
    if current.current_phase_status.is_terminal() {
        return ended_reply(svc, &ws, &files, current, &args, now);
    }
    let updated = svc.store.update_sealing(&ws, now, |state, sealed| {
        let def = svc.run_definition(state)?;
        let ctx = StepContext {
            def: &def,
            files: &files,
            ws: &ws,
            now,
            repo_root: &svc.config.repo_root,
            person: svc.person(),
            repo: std::cell::OnceCell::new(),
        };
        if let Some(id) = &reported_id {
            check_reported_action(state, id)?;
        }
        // A person's question the state skipped (changed outside baton) is
        // asked again (crate::tamper).
        let reopened = crate::tamper::reopen_skipped(&def, state, now);
        let mut stepped = step(&ctx, state, &args, given)?;
        if let Some(note) = reopened {
            stepped.warnings.insert(0, note.message);
        }
        assign_action_id(state, &mut stepped);
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
    let ctx = StepContext {
        def: &def,
        files,
        ws,
        now,
        repo_root: &svc.config.repo_root,
        person: svc.person(),
        repo: std::cell::OnceCell::new(),
    };
    let quiet = NextArgs {
        workspace: args.workspace.clone(),
        ..NextArgs::default()
    };
    let mut stepped = step(&ctx, &mut state, &quiet, None)?;
    stepped.action_id = match stepped.plan {
        Plan::Done { .. } => String::new(),
        _ => state
            .outstanding_action
            .as_ref()
            .filter(|o| o.key == action_key(&stepped.plan))
            .map(|o| o.id.clone())
            .unwrap_or_default(),
    };
    if reported(args) || args.user_response.is_some() {
        stepped.warnings.push(format!(
            "the run has ended ({}); nothing was applied",
            state.current_phase_status.as_str()
        ));
    }
    shape(svc, ws, &state, files, &stepped)
}

/// An answer and who gave it.
struct Given {
    answer: Answer,
    by: Actor,
}

/// What one step reads besides the state.
struct StepContext<'a> {
    def: &'a WorkflowDefinition,
    files: &'a DiskFiles,
    ws: &'a WorkspaceRef,
    now: chrono::DateTime<Utc>,
    /// The repository root, for `git status` when a step needs it.
    repo_root: &'a std::path::Path,
    /// The person's own settings: who counts as them, where `--auto` is
    /// allowed (`crate::trust`).
    person: &'a baton_config::PersonSettings,
    /// The repository's status, read at most once per call, when a step
    /// needs it (the run's commit).
    repo: std::cell::OnceCell<Option<RepoStatus>>,
}

impl StepContext<'_> {
    fn repo_status(&self) -> Option<&RepoStatus> {
        self.repo.get().and_then(|r| r.as_ref())
    }

    /// Reads the repository's status for a step that needs it.
    fn read_repo(&self, phase: &str) -> Result<()> {
        let status = self.repo.get_or_init(|| crate::git::status(self.repo_root));
        if status.is_none() {
            return Err(Error::new(
                ErrorCode::Blocked,
                format!(
                    "{phase} commits the run's files, but `git status` failed in {}: is it a git repository, and is git installed?",
                    self.repo_root.display()
                ),
            ));
        }
        Ok(())
    }
}

/// Arguments of an answer given through a person's channel.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerArgs {
    /// The workspace whose question is answered.
    pub workspace: String,
    /// One of the question's options; `revise: <text>` carries the text to
    /// the agent that revises.
    pub answer: String,
}

/// What an answer did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AnswerReply {
    /// The workspace.
    pub workspace: String,
    /// The question answered.
    pub question: String,
    /// The option taken.
    pub answer: String,
    /// Who answered, e.g. `person:terminal`.
    pub by: String,
    /// The phase the run is at now.
    pub current_phase: String,
    /// Its status.
    pub current_phase_status: String,
    /// What happens next.
    pub next_step: String,
}

/// Answers the question a run waits at, as `by` (a person through the
/// terminal, the dashboard or elicitation; or the agent where the workflow
/// lets it). Refused when nothing waits for an answer, when the answer is
/// not one of the options, or when `by` may not answer this question.
pub fn answer_question(svc: &Services, args: AnswerArgs, by: Actor) -> Result<AnswerReply> {
    check_text("workspace", &args.workspace, 1024)?;
    check_text("answer", &args.answer, 16 * 1024)?;
    // Team mode: a run of another machine is answered there, under its lock.
    if let Some(remote) = crate::team::remote_for(svc, &args.workspace)? {
        return crate::team::answer_remote(svc, &remote, &args.answer, &by);
    }
    let ws = svc.store.resolve(&args.workspace)?;
    let files = DiskFiles::new(&ws.dir);
    let now = Utc::now();
    let given = parse_answer(&args.answer);
    let label = by.label();
    let updated = svc.store.update(&ws, now, |state| {
        let def = svc.run_definition(state)?;
        let ctx = StepContext {
            def: &def,
            files: &files,
            ws: &ws,
            now,
            repo_root: &svc.config.repo_root,
            person: svc.person(),
            repo: std::cell::OnceCell::new(),
        };
        let lc = Lifecycle::new(&def, now);
        let mut happened = Vec::new();
        // A person's question the state skipped is the one answered now.
        crate::tamper::reopen_skipped(&def, state, now);
        // Reach the question: steps that need no agent (a resting skip,
        // tasks to register, a finished phase) are taken first.
        for _ in 0..MAX_INTERNAL_STEPS {
            let plan = plan_now(&ctx, state)?;
            match plan {
                Plan::Ask(question) => {
                    check_may_answer(&ctx, state, &question, &by)?;
                    let word = option_matches(&question, &given.word).ok_or_else(|| {
                        not_an_option(&question, &given.word, "answer")
                    })?;
                    resolve(
                        &Run {
                            definition: &def,
                            lifecycle: &lc,
                            files: &files,
                        },
                        state,
                        &question,
                        given.clone(),
                        &by,
                        &mut happened,
                    )?;
                    start_reported_work(&def, state, &lc, &mut happened)?;
                    let next = baton_engine::summary::next_step(state, &def);
                    return Ok((question.name, word, happened, next));
                }
                Plan::Skip { .. }
                | Plan::RegisterTasks { .. }
                | Plan::CompletePhase { .. }
                | Plan::SkipStep { .. }
                | Plan::ReadRepo { .. } => {
                    internal_step(&ctx, state, &lc, plan, &mut happened, &mut Vec::new())?;
                }
                _ => {
                    return Err(Error::new(
                        ErrorCode::InvalidState,
                        format!(
                            "nothing in {} waits for an answer: {} is {} and the agent has work to do (see `baton show {}`)",
                            ws.display,
                            state.current_phase,
                            state.current_phase_status.as_str(),
                            ws.display
                        ),
                    )
                    .with_details(json!({"currentPhase": state.current_phase, "currentPhaseStatus": state.current_phase_status.as_str()})));
                }
            }
        }
        Err(Error::new(ErrorCode::Internal, "no question reached"))
    })?;
    let (question, word, happened, next) = updated.value;
    svc.after_write(&ws, &updated.state, happened);
    Ok(AnswerReply {
        workspace: ws.display.clone(),
        question,
        answer: word,
        by: label,
        current_phase: updated.state.current_phase.clone(),
        current_phase_status: updated.state.current_phase_status.as_str().to_string(),
        next_step: next,
    })
}

/// In a workflow driven by phase reports (`completePhase`), the work phase
/// after a person's answer starts at once, as it does after a report; in
/// the pipeline loop `pipeline_next_action` starts it when it hands it out.
fn start_reported_work(
    def: &WorkflowDefinition,
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    happened: &mut Vec<Happened>,
) -> Result<()> {
    if baton_engine::summary::driven_by_loop(def)
        || state.current_phase_status != PhaseStatus::Pending
    {
        return Ok(());
    }
    let phase = state.current_phase.clone();
    let Some(p) = def.phase(&phase) else {
        return Ok(());
    };
    if p.kind.waits_for_human()
        || p.max_visits
            .is_some_and(|limit| baton_engine::route::visits(state, &phase) >= limit)
    {
        return Ok(());
    }
    happened.extend(
        lc.start(state, &phase)?
            .into_iter()
            .map(Happened::Transition),
    );
    Ok(())
}

/// The question the run waits at (or would wait at on its next step), if
/// any — read-only: nothing is written and no event is published.
pub fn pending_question(svc: &Services, workspace: &str) -> Result<Option<AskAction>> {
    check_text("workspace", workspace, 1024)?;
    // Team mode: another machine's run waits at what its machine wrote.
    if let Some(remote) = crate::team::remote_for(svc, workspace)? {
        return Ok(remote.question());
    }
    let ws = svc.store.resolve(workspace)?;
    let files = DiskFiles::new(&ws.dir);
    let mut state = svc.store.load(&ws)?;
    let def = svc.run_definition(&state)?;
    // On the copy: the question a skipped one would be reopened at.
    crate::tamper::reopen_skipped(&def, &mut state, Utc::now());
    let ctx = StepContext {
        def: &def,
        files: &files,
        ws: &ws,
        now: Utc::now(),
        repo_root: &svc.config.repo_root,
        person: svc.person(),
        repo: std::cell::OnceCell::new(),
    };
    let lc = Lifecycle::new(&def, ctx.now);
    for _ in 0..MAX_INTERNAL_STEPS {
        match plan_now(&ctx, &state)? {
            Plan::Ask(q) => return Ok(Some(question_action(&ws, &files, &q))),
            plan @ (Plan::Skip { .. }
            | Plan::RegisterTasks { .. }
            | Plan::CompletePhase { .. }
            | Plan::SkipStep { .. }
            | Plan::ReadRepo { .. }) => {
                // On a copy: a peek changes nothing on disk.
                if internal_step(
                    &ctx,
                    &mut state,
                    &lc,
                    plan,
                    &mut Vec::new(),
                    &mut Vec::new(),
                )
                .is_err()
                {
                    return Ok(None);
                }
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// The `checkpoint` / `human_gate` action of a question.
fn question_action(ws: &WorkspaceRef, files: &DiskFiles, q: &Question) -> AskAction {
    use baton_engine::WorkspaceFiles;
    let post_method = (q.kind == QuestionKind::PostToSource).then(|| {
        let meta = files
            .read("request.md")
            .map(|t| request_meta(&t))
            .unwrap_or_default();
        post_method(&meta, &ws.display)
    });
    let person = q.answered_by == Answerer::Person;
    AskAction {
        phase: q.phase.clone(),
        name: q.name.clone(),
        present_to_user: q.message.clone(),
        options: q.options.clone(),
        answered_by: q.answered_by.as_str().to_string(),
        how_to_answer: person.then(|| how_to_answer(&ws.display, &q.options)),
        post_method,
    }
}

/// How a person answers a question the agent may not answer: the terminal
/// command and the dashboard.
pub fn how_to_answer(workspace: &str, options: &[String]) -> String {
    let mut examples: Vec<String> = options
        .iter()
        .map(|o| {
            if o == "revise" {
                format!("baton answer {workspace} revise \"<what to change>\"")
            } else {
                format!("baton answer {workspace} {o}")
            }
        })
        .collect();
    examples.dedup();
    format!(
        "A person answers this, not the agent. Show them the question, then ask them to run one of these in a terminal: {} (or use the dashboard: `baton dashboard`). Then call pipeline_next_action again without user_response.",
        examples.join(" | ")
    )
}

/// Whether `by` may answer `question` (`crate::trust` decides).
fn check_may_answer(
    ctx: &StepContext<'_>,
    state: &WorkspaceState,
    question: &Question,
    by: &Actor,
) -> Result<()> {
    crate::trust::may_answer(question.answered_by, by, state, ctx.person, ctx.repo_root).map_err(
        |refusal| {
            crate::trust::refusal_error(
                refusal,
                &question.name,
                &question.options,
                by,
                &how_to_answer(&ctx.ws.display, &question.options),
                ctx.repo_root,
            )
        },
    )
}

fn not_an_option(question: &Question, word: &str, field: &str) -> Error {
    Error::invalid(
        field,
        format!(
            "{word:?} is not an answer to {}; answer one of: {}",
            question.name,
            question.options.join(", ")
        ),
    )
    .with_details(json!({ "field": field, "question": question.name, "options": question.options }))
}

/// Seals the run's final state into state.json before the commit phase's
/// commands are handed out, so the commit holds the state as it will be
/// when the run is done (`git status` is clean afterwards).
fn seal_if_committing(
    ctx: &StepContext<'_>,
    state: &WorkspaceState,
    plan: &Plan,
    sealed: bool,
) -> Finish {
    let Plan::Exec { phase, .. } = plan else {
        return Finish::Plain;
    };
    if sealed || !ctx.def.phase(phase).is_some_and(|p| p.commits) {
        return Finish::Plain;
    }
    match predict_final(ctx.def, state, ctx.now) {
        Some(final_form) => Finish::Seal(Box::new(final_form)),
        None => Finish::Plain,
    }
}

/// The state as it will be once the commit phase and the command phases
/// after it have run: each completed, the run completed. `None` when a
/// phase after the commit needs an agent or a person (then nothing is
/// sealed).
pub fn predict_final(
    def: &WorkflowDefinition,
    state: &WorkspaceState,
    now: chrono::DateTime<Utc>,
) -> Option<WorkspaceState> {
    let lc = Lifecycle::new(def, now);
    let mut s = state.clone();
    for _ in 0..def.phases.len() + 1 {
        if s.current_phase_status.is_terminal() {
            s.command_step = 0;
            s.command_guard = CommandGuard::Check;
            s.last_dispatch = None;
            return Some(s);
        }
        let phase = s.current_phase.clone();
        let p = def.phase(&phase)?;
        if p.kind != baton_workflow::PhaseKind::Command {
            return None;
        }
        if matches!(
            s.current_phase_status,
            PhaseStatus::Pending | PhaseStatus::Failed
        ) {
            lc.start(&mut s, &phase).ok()?;
        }
        let next = def.default_successor(&phase, &s.skipped_phases);
        lc.complete_to(&mut s, &phase, &next).ok()?;
    }
    None
}

fn plan_now(ctx: &StepContext<'_>, state: &WorkspaceState) -> Result<Plan> {
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
fn internal_step(
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
            ctx.read_repo(&phase)?;
        }
        Plan::RegisterTasks { .. } => {
            let text = files_read(ctx.files, "tasks.md")?;
            let (tasks, task_warnings) = parse_tasks(&text).map_err(|errors| {
                Error::new(
                    ErrorCode::Blocked,
                    format!("tasks.md: {}", errors.join("; ")),
                )
            })?;
            state.tasks = tasks;
            warnings.extend(task_warnings);
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

fn reported(args: &NextArgs) -> bool {
    args.previous_action_complete == Some(true)
        || args.previous_usage.as_ref().is_some_and(|u| !u.is_empty())
        || args.previous_tokens.is_some_and(|t| t > 0)
        || args.previous_duration_ms.is_some_and(|d| d > 0)
        || args
            .previous_model
            .as_deref()
            .is_some_and(|m| !m.is_empty())
        || args.previous_exit_code.is_some()
}

fn step(
    ctx: &StepContext<'_>,
    state: &mut WorkspaceState,
    args: &NextArgs,
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
    let mut report = None;
    if reported(args) {
        if state.current_phase_status == PhaseStatus::InProgress {
            let phase = state.current_phase.clone();
            let input = ReportInput {
                phase: phase.clone(),
                tokens: args.previous_tokens.unwrap_or_else(|| {
                    args.previous_usage.iter().flatten().map(|u| u.tokens).sum()
                }),
                duration_ms: args.previous_duration_ms.unwrap_or(0),
                model: args.previous_model.clone().filter(|m| !m.is_empty()),
                usage: args.previous_usage.clone().unwrap_or_default(),
                setup_only: state
                    .last_dispatch
                    .as_ref()
                    .filter(|d| d.phase == phase)
                    .map(|d| d.setup_only)
                    .unwrap_or(false)
                    || args.previous_setup_only == Some(true),
                exit_code: args.previous_exit_code,
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
    for _ in 0..MAX_INTERNAL_STEPS {
        let plan = plan_now(ctx, state)?;
        match plan {
            Plan::RegisterTasks { .. }
            | Plan::CompletePhase { .. }
            | Plan::Skip { .. }
            | Plan::SkipStep { .. }
            | Plan::ReadRepo { .. } => {
                internal_step(ctx, state, &lc, plan, &mut happened, &mut warnings)?;
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
                            warnings.push(format!(
                                "{} approved automatically (--auto, {})",
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
                return Ok(finish(report, Plan::Ask(question), happened, warnings));
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
                return Ok(finish(report, plan, happened, ignored(given, warnings)));
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
                return Ok(finish(report, plan, happened, ignored(given, warnings)));
            }
            Plan::WriteFile { ref phase, .. } => {
                dispatch(state, &lc, phase, "", true, &mut happened)?;
                return Ok(finish(report, plan, happened, ignored(given, warnings)));
            }
            Plan::Done { .. } => {
                return Ok(finish(report, plan, happened, ignored(given, warnings)));
            }
        }
    }
    Err(Error::new(
        ErrorCode::Internal,
        format!(
            "no action after {MAX_INTERNAL_STEPS} internal steps at {}: the workflow definition loops without work",
            state.current_phase
        ),
    ))
}

fn finish(
    report: Option<Outcome>,
    plan: Plan,
    happened: Vec<Happened>,
    warnings: Vec<String>,
) -> Stepped {
    Stepped {
        report,
        plan,
        happened,
        warnings,
        action_id: String::new(),
    }
}

/// What identifies a handed-out action: handing the same one out again
/// keeps its id.
fn action_key(plan: &Plan) -> String {
    match plan {
        Plan::Spawn(spawn) => format!("spawn|{}|{}", spawn.phase, dispatch_key(spawn)),
        Plan::Exec { phase, argv, check } => {
            format!("exec|{phase}|{check}|{}", argv.join("\u{1f}"))
        }
        Plan::WriteFile { phase, file, .. } => format!("write|{phase}|{file}"),
        Plan::Ask(q) => format!("ask|{}|{}", q.phase, q.name),
        _ => String::new(),
    }
}

/// Gives the action of `stepped` its id: the same as before when the same
/// action is handed out again (no report applied in between), else the next
/// number.
fn assign_action_id(state: &mut WorkspaceState, stepped: &mut Stepped) {
    if matches!(stepped.plan, Plan::Done { .. }) {
        // Nothing to report for `done`: no id, and none outstanding.
        state.outstanding_action = None;
        stepped.action_id = String::new();
        return;
    }
    let key = action_key(&stepped.plan);
    let same = stepped.report.is_none()
        && state
            .outstanding_action
            .as_ref()
            .is_some_and(|o| o.key == key);
    let id = match (&state.outstanding_action, same) {
        (Some(o), true) => o.id.clone(),
        _ => {
            state.action_seq += 1;
            format!("a{}", state.action_seq)
        }
    };
    state.outstanding_action = Some(baton_state::OutstandingAction {
        id: id.clone(),
        key,
    });
    stepped.action_id = id;
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

/// Refuses a report naming an action that is not the one handed out.
fn check_reported_action(state: &WorkspaceState, id: &str) -> Result<()> {
    let outstanding = state.outstanding_action.as_ref().map(|o| o.id.as_str());
    if outstanding == Some(id) {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::StaleAction,
        format!(
            "this report is for action {id:?}, but the action handed out is {}: it came late or belongs to another action, and it was not applied. Call pipeline_next_action without a report to get the current action",
            outstanding
                .map(|o| format!("{o:?}"))
                .unwrap_or_else(|| "none".into())
        ),
    )
    .with_details(json!({"field": "previous_action_id", "outstanding": outstanding})))
}

fn ignored(given: Option<Given>, mut warnings: Vec<String>) -> Vec<String> {
    if let Some(g) = given {
        warnings.push(format!(
            "user_response {:?} ignored: no checkpoint or gate was waiting for an answer",
            g.answer.word
        ));
    }
    warnings
}

fn files_read(files: &DiskFiles, name: &str) -> Result<String, Error> {
    use baton_engine::WorkspaceFiles;
    files
        .read(name)
        .ok_or_else(|| Error::new(ErrorCode::Blocked, format!("{name} could not be read")))
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

/// What identifies a handed-out agent action: agent, output and tasks.
fn dispatch_key(spawn: &Spawn) -> String {
    let tasks: Vec<&str> = spawn.parallel.iter().map(|t| t.id.as_str()).collect();
    format!(
        "{}|{}|{}|{}",
        spawn.agent,
        spawn.output.as_deref().unwrap_or(""),
        spawn.task.as_deref().unwrap_or(""),
        tasks.join(",")
    )
}

/// The task keys of a handed-out agent action (the inverse of the dispatch
/// key: a single per-task agent's task, or a fan-out's tasks); empty for an
/// action that works on no task.
pub fn dispatched_tasks(key: &str) -> Vec<String> {
    let mut parts = key.split('|').skip(2);
    let single = parts.next().unwrap_or("");
    let fan_out: Vec<String> = parts
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if !fan_out.is_empty() {
        fan_out
    } else if single.is_empty() {
        Vec::new()
    } else {
        vec![single.to_string()]
    }
}

fn display_label(def: &WorkflowDefinition, phase: &str) -> String {
    let label = phase_label(def, phase);
    match phase.strip_prefix("phase-") {
        Some(n) => format!("Phase {n} — {label}"),
        None => label,
    }
}

/// The `spawn_agent` action: the 4-layer prompt, the fan-out, and a
/// person's revision text for the phase it was given for.
fn spawn_action(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    spawn: &Spawn,
) -> SpawnAgent {
    let override_dir = svc.config.repo_root.join(".baton/agents");
    let body = baton_workflow::agents::agent(&spawn.agent, Some(&override_dir))
        .map(|a| a.body)
        .unwrap_or_else(|| format!("# {}\n\n{}\n", spawn.agent, spawn.summary));
    let profile = crate::repo_profile::detect(&svc.config.repo_root);
    let learning = crate::history::layer4(svc, ws, &spawn.agent);
    let manual_refs = super::manual_refs::manual_references(svc, ws);
    let mut prompt = assemble(&PromptParts {
        agent_body: &body,
        workspace: &ws.display,
        branch: state.branch.as_deref(),
        spec_name: &state.spec_name,
        task: spawn.task.as_deref(),
        input_files: &spawn.inputs,
        output_file: spawn.output.as_deref(),
        profile: &profile,
        learning: &learning,
        manual_refs: &manual_refs,
    });
    if !spawn.parallel.is_empty() {
        prompt.push_str("\n## Parallel Tasks\n\nOne agent runs per task, concurrently; each reads its own inputs and writes its own output file:\n");
        for t in &spawn.parallel {
            let inputs: Vec<String> = t
                .input_files
                .iter()
                .map(|f| format!("{}/{f}", ws.display))
                .collect();
            prompt.push_str(&format!(
                "- Task {}: read {} → write {}/{}\n",
                t.id,
                if inputs.is_empty() {
                    "the inputs above".to_string()
                } else {
                    inputs.join(", ")
                },
                ws.display,
                t.output_file
            ));
        }
    }
    if let Some(feedback) = state
        .human_feedback
        .as_ref()
        .filter(|f| f.phase == spawn.phase)
    {
        prompt.push_str(&format!(
            "\n## Human Feedback\n\nA person reviewed the work at {} and asked for this revision. Incorporate it:\n\n{}\n",
            feedback.from,
            feedback.text.trim()
        ));
    }
    let parallel = !spawn.parallel.is_empty();
    SpawnAgent {
        agent: spawn.agent.clone(),
        prompt,
        model: spawn.model.clone(),
        phase: spawn.phase.clone(),
        input_files: spawn.inputs.clone(),
        output_file: spawn.output.clone().unwrap_or_default(),
        parallel_task_ids: parallel.then(|| spawn.parallel.iter().map(|p| p.id.clone()).collect()),
        parallel_tasks: parallel.then(|| spawn.parallel.clone()),
    }
}

fn shape(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    files: &DiskFiles,
    stepped: &Stepped,
) -> Result<NextReply> {
    use baton_engine::WorkspaceFiles;
    let def = svc.run_definition(state)?;
    let (action, display) = match &stepped.plan {
        Plan::Spawn(spawn) => {
            let label = display_label(&def, &spawn.phase);
            let display = if spawn.parallel.is_empty() {
                format!("▶ {label}  ·  spawning {}…", spawn.agent)
            } else {
                format!(
                    "▶ {label}  ·  spawning {}  (parallel · {} tasks)…",
                    spawn.agent,
                    spawn.parallel.len()
                )
            };
            (
                Action::SpawnAgent(spawn_action(svc, ws, state, spawn)),
                display,
            )
        }
        Plan::Exec { phase, argv, check } => {
            let doing = if *check {
                "checking whether the next step is already done:"
            } else {
                "running"
            };
            let display = format!(
                "▶ {}  ·  {doing} {}",
                display_label(&def, phase),
                argv.join(" ")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let exec = Exec {
                phase: phase.clone(),
                commands: argv.clone(),
                setup_only: false,
                check_only: *check,
            };
            (Action::Exec(exec), display)
        }
        Plan::WriteFile {
            phase,
            file,
            content,
        } => {
            let display = format!("▶ {}  ·  writing {file}", display_label(&def, phase));
            let write = WriteFile {
                phase: phase.clone(),
                path: format!("{}/{file}", ws.display),
                content: content.clone(),
                setup_only: true,
            };
            (Action::WriteFile(write), display)
        }
        Plan::Ask(q) => {
            let display = format!(
                "⏸ {}  ·  waiting for a person ({})",
                q.name,
                q.options.join(" / ")
            );
            let question = question_action(ws, files, q);
            let action = if q.is_gate() {
                Action::HumanGate(question)
            } else {
                Action::Checkpoint(question)
            };
            (action, display)
        }
        Plan::Done { summary, .. } => {
            let summary_path = if files.file("summary.md").is_some() {
                format!("{}/summary.md", ws.display)
            } else {
                String::new()
            };
            let done = Done {
                summary: summary.clone(),
                summary_path,
            };
            (Action::Done(done), format!("■ {summary}"))
        }
        Plan::RegisterTasks { .. }
        | Plan::CompletePhase { .. }
        | Plan::Skip { .. }
        | Plan::SkipStep { .. }
        | Plan::ReadRepo { .. } => {
            return Err(Error::new(
                ErrorCode::Internal,
                "an internal step reached the reply",
            ));
        }
    };
    let mut warnings = stepped.warnings.clone();
    if let Some(r) = &stepped.report {
        warnings.extend(r.warnings.iter().cloned());
    }
    Ok(NextReply {
        action,
        warning: warnings.join("; "),
        display_message: display,
        report_result: stepped.report.as_ref().map(Outcome::to_embedded),
        action_id: stepped.action_id.clone(),
        current_phase: state.current_phase.clone(),
        current_phase_status: state.current_phase_status.as_str().to_string(),
    })
}
