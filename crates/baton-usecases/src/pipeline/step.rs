//! The step loop of the seed pipeline (`pipeline_next_action`, seed 001 §3,
//! seed 003 path 1): reports the
//! previous action when asked to, applies a person's answer, and returns the
//! next typed action — starting its phase. One locked write per call; events
//! are published after it, in the order things happened.

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use baton_engine::pipeline::next::{
    Plan, PlanInput, Question, QuestionKind, Spawn, post_method, request_meta, revise_verdict,
    tasks_to_review,
};
use baton_engine::pipeline::prompt::{PromptParts, assemble};
use baton_engine::pipeline::tasks::parse_tasks;
use baton_engine::route::{Decision, decide};
use baton_engine::summary::phase_label;
use baton_events::EventKind;
use baton_state::{
    CommandGuard, HumanFeedback, Lifecycle, PhaseLogEntry, PhaseStatus, WorkspaceRef,
    WorkspaceState, schema::LastDispatch,
};
use baton_workflow::{PerTask, ResultKind, WorkflowDefinition};

use super::action::{
    Action, Done, EmbeddedReport, Exec, Question as AskAction, SpawnAgent, WriteFile,
};
use super::report::{Outcome, ReportInput, advance, report_core, report_events};
use crate::events::{Happened, records};
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
}

/// A person's answer: the option word and optional free text.
struct Answer {
    word: String,
    feedback: Option<String>,
}

fn parse_answer(raw: &str) -> Answer {
    let raw = raw.trim();
    let (word, rest) = match raw.find([':', ' ', '\n']) {
        Some(i) => (&raw[..i], raw[i + 1..].trim()),
        None => (raw, ""),
    };
    Answer {
        word: word.to_ascii_lowercase(),
        feedback: (!rest.is_empty()).then(|| rest.to_string()),
    }
}

/// `pipeline_next_action` (seed 001 §3): reports the previous action when
/// asked to, applies a person's answer, and returns the next typed action —
/// starting its phase. One locked write; events after it.
pub fn next_action(svc: &Services, args: NextArgs) -> Result<NextReply> {
    check_text("workspace", &args.workspace, 1024)?;
    if let Some(m) = &args.previous_model {
        check_text("previous_model", m, 128)?;
    }
    if let Some(r) = &args.user_response {
        check_text("user_response", r, 16 * 1024)?;
    }
    let ws = svc.store.resolve(&args.workspace)?;
    let files = DiskFiles {
        dir: ws.dir.clone(),
    };
    let now = Utc::now();
    let updated = svc.store.update(&ws, now, |state| {
        let def = svc.workflow(&state.workflow)?;
        step(&def, state, &files, &ws, now, &args)
    })?;
    let state = updated.state;
    let stepped = updated.value;
    publish(svc, &ws, &state, &stepped);
    shape(svc, &ws, &state, &files, stepped)
}

fn reported(args: &NextArgs) -> bool {
    args.previous_action_complete == Some(true)
        || args.previous_tokens.is_some_and(|t| t > 0)
        || args.previous_duration_ms.is_some_and(|d| d > 0)
        || args
            .previous_model
            .as_deref()
            .is_some_and(|m| !m.is_empty())
        || args.previous_exit_code.is_some()
}

fn step(
    def: &WorkflowDefinition,
    state: &mut WorkspaceState,
    files: &DiskFiles,
    ws: &WorkspaceRef,
    now: chrono::DateTime<Utc>,
    args: &NextArgs,
) -> Result<Stepped, Error> {
    let lc = Lifecycle::new(def, now);
    let mut happened = Vec::new();
    let mut warnings = Vec::new();
    let mut report = None;
    if reported(args) {
        if state.current_phase_status == PhaseStatus::InProgress {
            let phase = state.current_phase.clone();
            let input = ReportInput {
                phase: phase.clone(),
                tokens: args.previous_tokens.unwrap_or(0),
                duration_ms: args.previous_duration_ms.unwrap_or(0),
                model: args.previous_model.clone().filter(|m| !m.is_empty()),
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
    let mut answer = args.user_response.as_deref().map(parse_answer);
    for _ in 0..MAX_INTERNAL_STEPS {
        let plan = baton_engine::pipeline::next::plan(
            &PlanInput {
                definition: def,
                files,
                workspace: &ws.display,
            },
            state,
        )
        .map_err(|e| Error::new(ErrorCode::Blocked, e.0))?;
        match plan {
            Plan::RegisterTasks { .. } => {
                let text = files_read(files, "tasks.md")?;
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
                let target = successor(def, state, &phase)?;
                advance(def, state, &lc, &phase, &target, &mut out)?;
                happened.extend(out.transitions.into_iter().map(Happened::Transition));
            }
            Plan::Ask(question) => {
                if let Some(given) = answer.take() {
                    resolve(def, state, &lc, &question, given, &mut happened)?;
                    continue;
                }
                if question.kind == QuestionKind::Checkpoint && state.auto_approve {
                    let auto = Answer {
                        word: "proceed".into(),
                        feedback: None,
                    };
                    warnings.push(format!("{} approved automatically (--auto)", question.name));
                    resolve(def, state, &lc, &question, auto, &mut happened)?;
                    continue;
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
                return Ok(finish(report, plan, happened, ignored(answer, warnings)));
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
                return Ok(finish(report, plan, happened, ignored(answer, warnings)));
            }
            Plan::WriteFile { ref phase, .. } => {
                dispatch(state, &lc, phase, "", true, &mut happened)?;
                return Ok(finish(report, plan, happened, ignored(answer, warnings)));
            }
            Plan::Done { .. } => {
                return Ok(finish(report, plan, happened, ignored(answer, warnings)));
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
    }
}

fn ignored(answer: Option<Answer>, mut warnings: Vec<String>) -> Vec<String> {
    if let Some(a) = answer {
        warnings.push(format!(
            "user_response {:?} ignored: no checkpoint or gate was waiting for an answer",
            a.word
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

/// Puts the run in `awaiting_human` for `question` (once; a repeated call
/// presents the same question without another event).
fn wait_for_person(
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    question: &Question,
    happened: &mut Vec<Happened>,
) -> Result<(), Error> {
    if let QuestionKind::TaskGate { task } = &question.kind {
        if state.current_phase_status == PhaseStatus::Pending {
            happened.extend(
                lc.start(state, &question.phase)?
                    .into_iter()
                    .map(Happened::Transition),
            );
        }
        state.pending_human_gate = Some(task.clone());
    }
    if question.kind == QuestionKind::CommandFailed {
        return Ok(());
    }
    if state.current_phase_status != PhaseStatus::AwaitingHuman {
        lc.checkpoint(state, &question.phase)?;
        happened.push(Happened::Event(
            EventKind::Checkpoint,
            question.phase.clone(),
            Some(question.name.clone()),
            None,
        ));
    }
    Ok(())
}

fn option_matches(question: &Question, word: &str) -> Option<String> {
    let alias = match word {
        "approve" => "proceed",
        "proceed" => "approve",
        "yes" => "proceed",
        _ => "",
    };
    question
        .options
        .iter()
        .find(|o| *o == word || (!alias.is_empty() && *o == alias))
        .cloned()
}

/// Applies a person's answer to `question`.
fn resolve(
    def: &WorkflowDefinition,
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    question: &Question,
    answer: Answer,
    happened: &mut Vec<Happened>,
) -> Result<(), Error> {
    let Some(word) = option_matches(question, &answer.word) else {
        return Err(Error::invalid(
            "user_response",
            format!(
                "{:?} is not an answer to {}; options: {}",
                answer.word,
                question.name,
                question.options.join(", ")
            ),
        )
        .with_details(json!({ "question": question.name, "options": question.options })));
    };
    let phase = question.phase.as_str();
    let mut out = Outcome::empty("proceed");
    if word == "abandon" {
        out.transitions.extend(lc.abandon(
            state,
            Some(&format!("abandoned by a person at {}", question.name)),
        )?);
        happened.extend(out.transitions.into_iter().map(Happened::Transition));
        return Ok(());
    }
    // A question answered before it was presented still waits first, so the
    // history reads checkpoint → complete.
    let presentable = !matches!(
        question.kind,
        QuestionKind::CommandFailed | QuestionKind::TaskGate { .. }
    );
    if presentable && state.current_phase_status != PhaseStatus::AwaitingHuman {
        out.transitions.extend(lc.checkpoint(state, phase)?);
    }
    match &question.kind {
        QuestionKind::Checkpoint | QuestionKind::PostToSource | QuestionKind::PhaseGate => {
            let result = if word == "revise" {
                ResultKind::Failure
            } else {
                ResultKind::Success
            };
            let target = match decide(def, state, phase, result, None)? {
                Decision::Advance { target } => target,
                Decision::FailInPlace => def.default_successor(phase, &state.skipped_phases),
            };
            if word == "revise" {
                state.human_feedback = Some(HumanFeedback {
                    from: phase.to_string(),
                    phase: target.clone(),
                    text: answer
                        .feedback
                        .unwrap_or_else(|| "Revise the work (no details were given).".into()),
                });
            }
            log_answer(state, phase, &word);
            advance(def, state, lc, phase, &target, &mut out)?;
        }
        QuestionKind::Decision(_) => {
            let review_phase = def.phase(phase).and_then(|p| p.per_task) == Some(PerTask::Review);
            let target = if word == "revise" {
                let verdict = def.phase(phase).and_then(revise_verdict);
                if review_phase {
                    for key in tasks_to_review(state) {
                        if let Some(t) = state.tasks.get_mut(&key) {
                            t.review_status = "completed_fail".into();
                            t.impl_status = "pending".into();
                        }
                    }
                }
                match decide(def, state, phase, ResultKind::Success, verdict)? {
                    Decision::Advance { target } => target,
                    Decision::FailInPlace => phase.to_string(),
                }
            } else {
                if review_phase {
                    for t in state.tasks.values_mut() {
                        let open = t.execution_mode != "human_gate"
                            && !matches!(
                                t.review_status.as_str(),
                                "completed_pass" | "completed_pass_with_notes"
                            );
                        if open {
                            t.impl_status = "completed".into();
                            t.review_status = "accepted_by_human".into();
                        }
                    }
                }
                def.default_successor(phase, &state.skipped_phases)
            };
            log_answer(state, phase, &word);
            advance(def, state, lc, phase, &target, &mut out)?;
        }
        QuestionKind::CommandFailed => {
            if word == "retry" {
                out.transitions.extend(lc.start(state, phase)?);
            } else {
                state.command_step = 0;
                state.command_guard = CommandGuard::Check;
                out.transitions.extend(lc.skip(state, phase)?);
            }
        }
        QuestionKind::TaskGate { task } => {
            if let Some(t) = state.tasks.get_mut(task) {
                t.impl_status = "completed".into();
                t.review_status = if word == "skip" {
                    "skipped_by_human".into()
                } else {
                    "done_by_human".into()
                };
            }
            state.pending_human_gate = None;
            let detail = format!("task {task}: {word}");
            match state.current_phase_status {
                PhaseStatus::AwaitingHuman => {
                    lc.resume(state, phase, &detail)?;
                }
                PhaseStatus::Pending | PhaseStatus::Failed => {
                    out.transitions.extend(lc.start(state, phase)?);
                }
                _ => {}
            }
        }
    }
    happened.extend(out.transitions.into_iter().map(Happened::Transition));
    Ok(())
}

fn log_answer(state: &mut WorkspaceState, phase: &str, word: &str) {
    state.phase_log.push(PhaseLogEntry {
        phase: phase.to_string(),
        tokens: 0,
        duration_ms: 0,
        model: format!("checkpoint:{word}"),
        timestamp: state.timestamps.last_updated,
    });
}

fn publish(svc: &Services, ws: &WorkspaceRef, state: &WorkspaceState, stepped: &Stepped) {
    svc.publish(records(svc, ws, state, &stepped.happened));
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
    let mut prompt = assemble(&PromptParts {
        agent_body: &body,
        workspace: &ws.display,
        branch: state.branch.as_deref(),
        spec_name: &state.spec_name,
        task: spawn.task.as_deref(),
        input_files: &spawn.inputs,
        output_file: spawn.output.as_deref(),
        profile: &profile,
        learning: &[],
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
    stepped: Stepped,
) -> Result<NextReply> {
    use baton_engine::WorkspaceFiles;
    let def = svc.workflow(&state.workflow)?;
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
            let post_method = (q.kind == QuestionKind::PostToSource).then(|| {
                let meta = files
                    .read("request.md")
                    .map(|t| request_meta(&t))
                    .unwrap_or_default();
                post_method(&meta, &ws.display)
            });
            let display = format!(
                "⏸ {}  ·  waiting for a person ({})",
                q.name,
                q.options.join(" / ")
            );
            let question = AskAction {
                phase: q.phase.clone(),
                name: q.name.clone(),
                present_to_user: q.message.clone(),
                options: q.options.clone(),
                answered_by: "agent".into(),
                how_to_answer: None,
                post_method,
            };
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
        Plan::RegisterTasks { .. } | Plan::CompletePhase { .. } => {
            return Err(Error::new(
                ErrorCode::Internal,
                "an internal step reached the reply",
            ));
        }
    };
    let mut warnings = stepped.warnings;
    if let Some(r) = &stepped.report {
        warnings.extend(r.warnings.iter().cloned());
    }
    Ok(NextReply {
        action,
        warning: warnings.join("; "),
        display_message: display,
        report_result: stepped.report.as_ref().map(Outcome::to_embedded),
        current_phase: state.current_phase.clone(),
        current_phase_status: state.current_phase_status.as_str().to_string(),
    })
}
