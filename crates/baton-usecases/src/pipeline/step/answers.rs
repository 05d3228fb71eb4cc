//! Answers to a run's questions — checkpoints, human gates, reviews
//! without a verdict, used-up loop limits, failed commands, tasks that can
//! never start, secret-looking files — whoever gives them: the person
//! (terminal, dashboard, MCP elicitation), the person's `--auto` choice, or
//! the agent where the workflow lets it. One procedure for every channel;
//! who answered is recorded with the answer and in the history.

use serde_json::json;

use baton_engine::completion::tasks::tasks_to_review;
use baton_engine::plan::{Question, QuestionKind, revise_verdict};
use baton_engine::route::{Decision, decide};
use baton_events::EventKind;
use baton_state::{
    Actor, AnswerRecord, CommandGuard, ExecutionMode, HumanFeedback, ImplStatus, Lifecycle,
    PhaseLogEntry, PhaseStatus, ReviewStatus, WorkspaceState,
};
use baton_workflow::{PerTask, ResultKind, WorkflowDefinition};

use super::context::StepContext;
use super::report::{Outcome, advance};
use crate::error::{Error, Result};
use crate::events::Happened;

/// An answer as given: the option word and optional free text
/// (`revise: make the API paginated`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The option, lower case.
    pub word: String,
    /// Free text after the option.
    pub feedback: Option<String>,
}

/// Splits `revise: text` (or `revise text`) into the option and its text.
pub fn parse_answer(raw: &str) -> Answer {
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

/// Puts the run in `awaiting_human` for `question` (once; a repeated call
/// presents the same question without another event).
pub fn wait_for_person(
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    question: &Question,
    happened: &mut Vec<Happened>,
) -> Result<(), Error> {
    // Questions raised inside a phase's own work (a task's gate, stuck
    // tasks, secret-looking files) wait in a started phase, which resumes
    // once answered.
    let inside_work = matches!(
        question.kind,
        QuestionKind::TaskGate { .. }
            | QuestionKind::StuckTasks { .. }
            | QuestionKind::SecretFiles { .. }
    );
    if inside_work && state.current_phase_status == PhaseStatus::Pending {
        happened.extend(
            lc.start(state, &question.phase)?
                .into_iter()
                .map(Happened::Transition),
        );
    }
    if let QuestionKind::TaskGate { task } = &question.kind {
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

/// The option `word` means (`approve` and `proceed` are the same answer).
pub fn option_matches(question: &Question, word: &str) -> Option<String> {
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

/// The run an answer applies to: its definition, the lifecycle (with the
/// instant of the change) and its files.
pub struct Run<'a> {
    /// The workflow definition.
    pub definition: &'a WorkflowDefinition,
    /// Lifecycle operations at this instant.
    pub lifecycle: &'a Lifecycle<'a>,
    /// The workspace's files.
    pub files: &'a dyn baton_engine::WorkspaceFiles,
}

/// Applies `answer`, given by `by`, to `question`: records it, moves the
/// run as the answer says, and queues the events. The caller has checked
/// that `by` may answer.
pub fn resolve(
    at: &Run<'_>,
    state: &mut WorkspaceState,
    question: &Question,
    answer: Answer,
    by: &Actor,
    happened: &mut Vec<Happened>,
) -> Result<(), Error> {
    let (def, lc, files) = (at.definition, at.lifecycle, at.files);
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
    let label = by.label();
    let lc = &lc.by(&label);
    state.answers.push(AnswerRecord {
        // When it was answered (the last update is when it was asked).
        at: lc.now(),
        phase: phase.to_string(),
        question: question.name.clone(),
        answer: word.clone(),
        feedback: answer.feedback.clone(),
        by: by.clone(),
    });
    let note = format!("{}: {word} by {label}", question.name);
    let feedback_for = |state: &mut WorkspaceState, target: &str| {
        state.human_feedback = Some(HumanFeedback {
            from: question.name.clone(),
            phase: target.to_string(),
            text: answer
                .feedback
                .clone()
                .unwrap_or_else(|| "Revise the work (no details were given).".into()),
        });
    };
    let mut out = Outcome::empty("proceed");
    if word == "abandon" {
        out.transitions.extend(lc.abandon(
            state,
            Some(&format!("abandoned at {} by {label}", question.name)),
        )?);
        push_annotated(happened, out.transitions, &note);
        return Ok(());
    }
    // A question answered before it was presented still waits first, so the
    // history reads checkpoint → complete.
    let presentable = !matches!(
        question.kind,
        QuestionKind::CommandFailed
            | QuestionKind::TaskGate { .. }
            | QuestionKind::StuckTasks { .. }
            | QuestionKind::SecretFiles { .. }
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
                feedback_for(state, &target);
            }
            log_answer(state, phase, &word);
            advance(def, state, lc, files, phase, &target, &mut out)?;
        }
        QuestionKind::Decision(_) => {
            let review_phase = def.phase(phase).and_then(|p| p.per_task) == Some(PerTask::Review);
            let target = if word == "revise" {
                let verdict = def.phase(phase).and_then(revise_verdict);
                if review_phase {
                    for key in tasks_to_review(state) {
                        if let Some(t) = state.tasks.get_mut(&key) {
                            t.review_status = ReviewStatus::Fail;
                            t.impl_status = ImplStatus::Pending;
                        }
                    }
                }
                let target = match decide(def, state, phase, ResultKind::Success, verdict)? {
                    Decision::Advance { target } => target,
                    Decision::FailInPlace => phase.to_string(),
                };
                // The person's words reach the agent that revises.
                feedback_for(state, &target);
                target
            } else {
                if review_phase {
                    for t in state.tasks.values_mut() {
                        let open = t.execution_mode != ExecutionMode::HumanGate
                            && !t.review_status.closed();
                        if open {
                            t.impl_status = ImplStatus::Completed;
                            t.review_status = ReviewStatus::AcceptedByHuman;
                        }
                    }
                }
                def.default_successor(phase, &state.skipped_phases)
            };
            log_answer(state, phase, &word);
            advance(def, state, lc, files, phase, &target, &mut out)?;
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
        QuestionKind::StuckTasks { tasks } => {
            if word == "revise" {
                // Back to the task list's author, with the person's words.
                let author = def
                    .task_list_authors()
                    .find(|p| !state.skipped_phases.contains(&p.id))
                    .map(|p| p.id.clone())
                    .unwrap_or_else(|| phase.to_string());
                feedback_for(state, &author);
                state.tasks.clear();
                log_answer(state, phase, &word);
                advance(def, state, lc, files, phase, &author, &mut out)?;
            } else {
                for key in tasks {
                    if let Some(t) = state.tasks.get_mut(key) {
                        t.impl_status = ImplStatus::Completed;
                        t.review_status = ReviewStatus::SkippedByHuman;
                    }
                }
                resume_work(
                    state,
                    lc,
                    phase,
                    &format!("{}: {word}", question.name),
                    &mut out,
                )?;
            }
        }
        QuestionKind::SecretFiles { files } => {
            let list = if word == "include" {
                &mut state.commit_allowed
            } else {
                &mut state.commit_excluded
            };
            for f in files {
                if !list.contains(f) {
                    list.push(f.clone());
                }
            }
            resume_work(
                state,
                lc,
                phase,
                &format!("{}: {word}", question.name),
                &mut out,
            )?;
        }
        QuestionKind::TaskGate { task } => {
            if let Some(t) = state.tasks.get_mut(task) {
                t.impl_status = ImplStatus::Completed;
                t.review_status = if word == "skip" {
                    ReviewStatus::SkippedByHuman
                } else {
                    ReviewStatus::DoneByHuman
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
    push_annotated(happened, out.transitions, &note);
    Ok(())
}

/// Queues `transitions`; the first one's event says who answered what.
fn push_annotated(
    happened: &mut Vec<Happened>,
    transitions: Vec<baton_state::Transition>,
    note: &str,
) {
    let mut first = true;
    for t in transitions {
        if first && !matches!(t, baton_state::Transition::PhaseSkipped { .. }) {
            happened.push(Happened::Annotated(t, note.to_string()));
            first = false;
        } else {
            happened.push(Happened::Transition(t));
        }
    }
}

/// Back to work inside the phase after a question raised within it.
fn resume_work(
    state: &mut WorkspaceState,
    lc: &Lifecycle<'_>,
    phase: &str,
    detail: &str,
    out: &mut Outcome,
) -> Result<(), Error> {
    match state.current_phase_status {
        PhaseStatus::AwaitingHuman => {
            lc.resume(state, phase, detail)?;
        }
        PhaseStatus::Pending | PhaseStatus::Failed => {
            out.transitions.extend(lc.start(state, phase)?);
        }
        _ => {}
    }
    Ok(())
}

fn log_answer(state: &mut WorkspaceState, phase: &str, word: &str) {
    state.phase_log.push(PhaseLogEntry {
        phase: phase.to_string(),
        tokens: 0,
        duration_ms: 0,
        model: format!("checkpoint:{word}"),
        timestamp: state.timestamps.last_updated,
        tasks: Vec::new(),
        cost_usd: None,
    });
}

/// An answer and who gave it.
pub(crate) struct Given {
    pub(crate) answer: Answer,
    pub(crate) by: Actor,
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
pub(crate) fn check_may_answer(
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

/// The error for an answer that is not one of the question's options.
pub(crate) fn not_an_option(question: &Question, word: &str, field: &str) -> Error {
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
