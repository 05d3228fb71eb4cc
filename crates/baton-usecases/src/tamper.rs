//! Tampering made visible: a `state.json` changed outside baton.
//!
//! baton writes `state.json` only through its use cases, and every move
//! past a person's question is recorded with the answer that made it (and
//! who gave it). A run whose state shows a person's question passed
//! without such an answer was moved by hand — a text editor, `jq`, an
//! agent's shell. [`findings`] lists what does not add up; the dashboard,
//! `baton show` and `run_overview` show it, and the next step of the run
//! reopens the first person's question it skipped ([`reopen_skipped`]),
//! recording that it did ([`baton_state::TamperNote`]).
//!
//! What this cannot see: a same-user process that also forges the
//! answers (who and which channel) makes a consistent file. The state's
//! seal (docs/lifecycle.md "Tampering") catches edits that do not carry
//! baton's key; within a hooked client the hook keeps the agent from
//! writing the state at all.

use chrono::{DateTime, Utc};

use baton_state::{HistoryAction, PhaseStatus, TamperNote, WorkspaceState};
use baton_workflow::{Answerer, WorkflowDefinition};

/// What does not add up in a run's state, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The person's question concerned.
    pub phase: String,
    /// What is wrong, in words.
    pub message: String,
    /// The question was passed without an answer (the run must go back).
    pub skipped: bool,
}

/// Question phases of `def` a person answers.
fn persons_questions(def: &WorkflowDefinition) -> impl Iterator<Item = &str> {
    def.phases
        .iter()
        .filter(|p| p.kind.waits_for_human() && def.answerer(&p.id) == Answerer::Person)
        .map(|p| p.id.as_str())
}

/// Whether `phase` is behind the run: the run is past it in definition
/// order, or ended.
fn behind(def: &WorkflowDefinition, state: &WorkspaceState, phase: &str) -> bool {
    if state.current_phase == baton_workflow::COMPLETED
        || state.current_phase_status == PhaseStatus::Completed
    {
        return true;
    }
    match (def.position(phase), def.position(&state.current_phase)) {
        (Some(p), Some(c)) => c > p,
        _ => false,
    }
}

/// What does not add up in `state` under its definition `def`: person's
/// questions passed without an answer, completed more often than
/// answered, or answered by someone who may not.
pub fn findings(def: &WorkflowDefinition, state: &WorkspaceState) -> Vec<Finding> {
    let mut out = Vec::new();
    if state.current_phase_status == PhaseStatus::Abandoned {
        // An abandoned run goes nowhere: nothing it skipped can act.
        return out;
    }
    // Answers are counted only in runs a baton that records every answer
    // started (they are pinned to their definition); a forge run of the Go
    // server, or one migrated from it, has none. With part of the history
    // archived, counts are not comparable either.
    let counted = state.definition.is_some() && state.history_archived.is_none();
    for phase in persons_questions(def) {
        let answered = state.answers.iter().filter(|a| a.phase == phase).count();
        let completed = state
            .history
            .iter()
            .filter(|h| h.phase == phase && h.action == HistoryAction::Complete)
            .count();
        let done = state.completed_phases.iter().any(|p| p == phase);
        let skipped = state.skipped_phases.iter().any(|p| p == phase);
        let skipped_by_rule = skipped && skipped_at_start(def, state, phase);
        if skipped && !skipped_by_rule {
            out.push(Finding {
                phase: phase.to_string(),
                message: format!(
                    "{phase} is marked skipped, but neither the run's flow nor its flags skip it and no recorded step did"
                ),
                skipped: true,
            });
            continue;
        }
        if skipped_by_rule {
            continue;
        }
        if counted && answered == 0 && (done || completed > 0) {
            out.push(Finding {
                phase: phase.to_string(),
                message: format!("{phase} is marked completed, but no answer to it is recorded"),
                skipped: true,
            });
            continue;
        }
        if counted && completed > answered {
            out.push(Finding {
                phase: phase.to_string(),
                message: format!(
                    "{phase} was completed {completed} times with {answered} answers recorded"
                ),
                skipped: false,
            });
        }
        if !done && behind(def, state, phase) {
            out.push(Finding {
                phase: phase.to_string(),
                message: format!(
                    "the run is past {phase} ({} is {}), but {phase} was never completed: it moved past a person's question without an answer",
                    state.current_phase,
                    state.current_phase_status.as_str()
                ),
                skipped: true,
            });
        }
    }
    for a in &state.answers {
        let rule = def.answerer(&a.phase);
        if rule == Answerer::Person && a.by.who == baton_state::Who::Agent {
            out.push(Finding {
                phase: a.phase.clone(),
                message: format!(
                    "{} records an answer by {}, which never answers a person's question",
                    a.question,
                    a.by.label()
                ),
                skipped: false,
            });
        }
    }
    out
}

/// Whether `phase` is skipped by what the run started with: its flow
/// template, its flags, or a recorded skip at creation.
fn skipped_at_start(def: &WorkflowDefinition, state: &WorkspaceState, phase: &str) -> bool {
    let mut rules = Vec::new();
    if let Some(t) = state.flow_template {
        rules.extend(def.skipped_for(t.as_str()));
    }
    if state.skip_pr {
        rules.extend(def.skipped_for("nopr"));
    }
    // Without a source URL a run skips the posting step (seed 001).
    rules.extend(def.skipped_for("no_source"));
    rules.iter().any(|r| r == phase)
}

/// The first person's question `state` passed without an answer, if any.
pub fn first_skipped(def: &WorkflowDefinition, state: &WorkspaceState) -> Option<Finding> {
    let skipped: Vec<Finding> = findings(def, state)
        .into_iter()
        .filter(|f| f.skipped)
        .collect();
    skipped
        .into_iter()
        .min_by_key(|f| def.position(&f.phase).unwrap_or(usize::MAX))
}

/// Sends the run back to the first person's question its state passed
/// without an answer, recording why: that question is asked again. Returns
/// the note recorded, or `None` when nothing was skipped.
pub fn reopen_skipped(
    def: &WorkflowDefinition,
    state: &mut WorkspaceState,
    now: DateTime<Utc>,
) -> Option<TamperNote> {
    let finding = first_skipped(def, state)?;
    let phase = finding.phase.clone();
    let position = def.position(&phase).unwrap_or(0);
    // The question and everything after it is to be done again.
    state
        .completed_phases
        .retain(|p| def.position(p).is_none_or(|at| at < position));
    state.skipped_phases.retain(|p| *p != phase);
    state.current_phase = phase.clone();
    state.current_phase_status = PhaseStatus::Pending;
    state.pending_decision = None;
    state.last_dispatch = None;
    state.outstanding_action = None;
    state.command_step = 0;
    let note = TamperNote {
        at: now,
        phase: phase.clone(),
        message: format!(
            "{}; state.json was changed outside baton, and the run was sent back to {phase} to ask it again",
            finding.message
        ),
    };
    state.tampering.push(note.clone());
    Some(note)
}

/// Everything a person should know about tampering in this run: what was
/// found and handled before (recorded notes) and what does not add up now.
pub fn report(def: Option<&WorkflowDefinition>, state: &WorkspaceState) -> Vec<String> {
    let held = state.hold.iter().map(|h| {
        format!(
            "HELD since {} ({}): {}",
            h.at.format("%Y-%m-%d %H:%M UTC"),
            h.code,
            h.message
        )
    });
    let mut out: Vec<String> = held.collect();
    out.extend(
        state
            .tampering
            .iter()
            .map(|n| format!("{}: {}", n.at.format("%Y-%m-%d %H:%M UTC"), n.message)),
    );
    if let Some(def) = def {
        out.extend(findings(def, state).into_iter().map(|f| f.message));
    }
    out
}

/// A state changed outside baton (its integrity tag no longer matches,
/// [`crate::integrity`]) is recorded before baton writes over it — the
/// next write's tag would otherwise hide the change — and grants nothing:
/// a `--auto` grant it carries is withdrawn, so a forged grant never
/// answers a person's question. Returns the note recorded.
pub fn record_changed_outside(state: &mut WorkspaceState, now: DateTime<Utc>) -> TamperNote {
    let message = match state.auto_granted_by.take() {
        Some(grant) => format!(
            "state.json was changed outside baton since baton last wrote it (its integrity tag no longer matched), so its --auto grant ({}) was withdrawn: a person answers this run's questions",
            grant.label()
        ),
        None => "state.json was changed outside baton since baton last wrote it (its integrity tag no longer matched); baton went on from the file as it found it".to_string(),
    };
    let note = TamperNote {
        at: now,
        phase: state.current_phase.clone(),
        message,
    };
    state.tampering.push(note.clone());
    note
}
