//! Answering the question a run waits at, whoever answers — a person
//! through the terminal, the dashboard or elicitation, or the agent where
//! the workflow lets it (`answer_question`) — and reading that question
//! without changing anything (`pending_question`). One procedure for every
//! channel (the step loop's answers); who answered is recorded with the
//! answer and in the history.

use chrono::Utc;
use serde_json::json;

use baton_engine::plan::Plan;
use baton_state::{Actor, Lifecycle, PhaseStatus, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use super::action::Question as AskAction;
pub use super::answer_reply::{AnswerArgs, AnswerReply};
use super::reply::question_action;
use super::step::answers::{
    Run, check_may_answer, not_an_option, option_matches, parse_answer, resolve,
};
use super::step::context::StepContext;
use super::step::run::{MAX_INTERNAL_STEPS, internal_step, plan_now};
use crate::error::{Error, ErrorCode, Result};
use crate::events::Happened;
use crate::files::DiskFiles;
use crate::services::Services;
use crate::validate::check_text;

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
    // A state written outside baton (crate::integrity) grants nothing.
    let untrusted = svc
        .store
        .load_checked(&ws)
        .is_ok_and(|(s, check)| crate::integrity::changed_outside(check, &s));
    let updated = svc.store.update(&ws, now, |state| {
        let def = svc.run_definition(state)?;
        let ctx = StepContext::new(svc, &def, &files, &ws, now);
        let lc = Lifecycle::new(&def, now);
        let mut happened = Vec::new();
        // A person's question the state skipped is the one answered now.
        crate::tamper::reopen_skipped(&def, state, now);
        if untrusted {
            crate::tamper::record_changed_outside(state, now);
        }
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
    let ctx = StepContext::new(svc, &def, &files, &ws, Utc::now());
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
