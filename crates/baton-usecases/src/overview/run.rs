//! One run's whole picture: its workflow's phase graph with where the run
//! stands, a timeline, durations, tokens, what a person can do, and the
//! question it waits at.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use baton_state::{HistoryAction, PhaseStatus, WorkspaceRef, WorkspaceState};
use baton_workflow::{PerTask, PhaseKind, WorkflowDefinition};

use crate::error::{Error, ErrorCode, Result};
use crate::services::Services;
use crate::validate::check_text;

use super::artifacts::{ArtifactRef, list_artifacts};
use super::list::summary;
use super::row::RunSummary;
use super::tasks::{TaskView, task_views};

/// Where a phase stands in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    /// Completed.
    Done,
    /// Skipped (flow template, `--nopr`, by hand).
    Skipped,
    /// The current phase, working.
    Running,
    /// The current phase, waiting for a person.
    Waiting,
    /// The current phase, failed.
    Failed,
    /// The current phase, not started yet.
    Next,
    /// Not reached yet.
    Ahead,
    /// The phase the run was abandoned at.
    Abandoned,
}

/// One node of the phase graph.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseNode {
    /// Phase id.
    pub id: String,
    /// Label.
    pub label: String,
    /// `agent`, `review`, `checkpoint`, `command`, `write_file`, `human_gate`.
    pub kind: String,
    /// The agent, for agent and review phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Where it stands.
    pub state: PhaseState,
    /// How many times it was entered.
    pub visits: u32,
    /// Wall-clock time spent in it (start to end, every visit; a running
    /// visit counts up to now).
    pub duration_ms: u64,
    /// Tokens reported for it.
    pub tokens: u64,
    /// The files it writes.
    pub artifacts: Vec<String>,
}

/// One edge of the phase graph.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PhaseEdge {
    /// From phase.
    pub from: String,
    /// To phase (or `completed`).
    pub to: String,
    /// `next` (the default way on) or `loop` (a conditional transition).
    pub kind: String,
    /// What takes it (verdicts, `failure`), for conditional ones.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub when: String,
}

/// The question a run waits at.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionView {
    /// The phase that waits.
    pub phase: String,
    /// The question's name.
    pub name: String,
    /// `checkpoint` or `human_gate`.
    pub kind: String,
    /// The full text (Markdown).
    pub text: String,
    /// The accepted answers.
    pub options: Vec<String>,
    /// `person` or `agent`.
    pub answered_by: String,
    /// Whether an option takes free text (`revise`).
    pub takes_text: bool,
    /// How a person answers from a terminal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub how_to_answer: Option<String>,
}

/// One line of a run's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// The phase.
    pub phase: String,
    /// `init`, `start`, `complete`, `fail`, `checkpoint`, `skip`,
    /// `abandon`, `resume`, `answer`, `report`.
    pub what: String,
    /// Detail (failure message, the answer and its text, model and tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Who made it happen, when a person, `--auto` or a forced recovery did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// Sums over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTotals {
    /// Tokens reported.
    pub tokens: u64,
    /// Agent and command time reported.
    pub reported_ms: u64,
    /// Wall-clock time from creation to the last change.
    pub elapsed_ms: u64,
}

/// What a person may do with the run now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunActions {
    /// Answer the pending question.
    pub answer: bool,
    /// Abandon the run.
    pub abandon: bool,
}

/// One run at a glance.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunOverview {
    /// The list row (id, workspace, workflow, phase, status, progress, times).
    #[serde(flatten)]
    pub summary: RunSummary,
    /// The workflow's label.
    pub workflow_label: String,
    /// Effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Flow template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_template: Option<String>,
    /// The branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// When the current phase started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_started: Option<DateTime<Utc>>,
    /// The phase graph, in definition order.
    pub phases: Vec<PhaseNode>,
    /// Its edges.
    pub edges: Vec<PhaseEdge>,
    /// The task DAG.
    pub tasks: Vec<TaskView>,
    /// The question the run waits at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<QuestionView>,
    /// What a person asked for at the last revision, until it is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The last failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Files of the workspace a person may read.
    pub artifacts: Vec<ArtifactRef>,
    /// Every transition and answer, oldest first.
    pub timeline: Vec<TimelineEntry>,
    /// Sums.
    pub totals: RunTotals,
    /// What the person does next, in words for a person (the resume or
    /// answer command; what drives the run now).
    pub next_step: String,
    /// What a person may do now.
    pub actions: RunActions,
    /// Whether the run can be trusted as recorded: tampering found, the
    /// workflow definition it follows and what that lets the agent answer.
    pub integrity: Integrity,
}

/// How far a run can be trusted as recorded (issue 19).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Integrity {
    /// `state.json` was changed outside baton (now, or found before).
    pub tampered: bool,
    /// What was found, for people (oldest first).
    pub tampering: Vec<String>,
    /// The workflow definition the run follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<crate::pinning::DefinitionView>,
    /// What a person should know about that definition (it lets the agent
    /// answer a question, it changed since the run started, …).
    pub notes: Vec<String>,
}

/// The integrity of `state`'s run (in `ws`).
pub fn integrity(svc: &Services, ws: &WorkspaceRef, state: &WorkspaceState) -> Integrity {
    integrity_of(svc, Some(ws), state)
}

/// The integrity of a run whose files are here (`Some(ws)`: its
/// `state.json`'s tag is checked too) or on another machine of the team
/// (`None`: the tag is checked there, by the baton that wrote it).
fn integrity_of(svc: &Services, ws: Option<&WorkspaceRef>, state: &WorkspaceState) -> Integrity {
    let def = svc.run_definition(state).ok();
    let mut tampering = crate::tamper::report(def.as_deref(), state);
    let definition = crate::pinning::definition_view(svc, state);
    let mut notes = definition
        .as_ref()
        .map(crate::pinning::definition_notes)
        .unwrap_or_default();
    // An ended run's file is as committed (perhaps by someone else's baton).
    if let Some(ws) = ws
        && !state.current_phase_status.is_terminal()
    {
        use crate::integrity::Check;
        match crate::integrity::check(svc.signer(), ws) {
            Check::Changed => tampering.push(
                "state.json was changed outside baton since baton last wrote it (its integrity tag no longer matches)".into(),
            ),
            Check::Untagged if state.definition.is_some() => tampering.push(
                "state.json carries no integrity tag, though baton tags every state it writes: it was written outside baton".into(),
            ),
            Check::OtherKey => notes.push(
                "state.json was last written by a baton with another person's key: who wrote it cannot be checked here".into(),
            ),
            _ => {}
        }
    }
    Integrity {
        tampered: !tampering.is_empty(),
        tampering,
        definition,
        notes,
    }
}

/// One run at a glance. `workspace` is the folder name, `.specs/<name>` or
/// an absolute path.
pub fn run_overview(svc: &Services, workspace: &str) -> Result<RunOverview> {
    check_text("workspace", workspace, 1024)?;
    // Team mode: a run of another machine, from the team database.
    if let Some(remote) = crate::team::remote_for(svc, workspace)? {
        return remote_overview(svc, remote);
    }
    let ws = svc.store.resolve(workspace)?;
    let state = svc.store.load(&ws)?;
    let definition = svc.run_definition(&state)?;
    let summary = summary(svc, &ws, &state);
    let ended = state.current_phase_status.is_terminal();
    // The question, peeked read-only; a run that cannot be planned has none.
    let question = if ended {
        None
    } else {
        crate::pipeline::answer::pending_question(svc, &ws.display)
            .ok()
            .flatten()
            .map(question_view)
    };
    let artifacts = list_artifacts(&ws.dir, &definition);
    let next_step = crate::guidance::next_for_person(
        svc,
        &ws,
        &state,
        question.as_ref().map(|q| crate::guidance::Waiting {
            name: &q.name,
            options: &q.options,
        }),
    );
    Ok(assemble(
        svc,
        Some(&ws),
        summary,
        &state,
        &definition,
        question,
        artifacts,
        next_step,
    ))
}

/// A run of another machine at a glance: the same view, from the state
/// its machine last wrote to the team database (its files stay there, so
/// no artifacts are listed).
fn remote_overview(svc: &Services, remote: crate::team::RemoteRun) -> Result<RunOverview> {
    let Some(state) = remote.state.clone() else {
        return Err(Error::new(
            ErrorCode::CorruptState,
            format!(
                "the team database's copy of {} (on {}) cannot be read by this baton",
                remote.id, remote.run.machine.name
            ),
        ));
    };
    let definition = svc.run_definition(&state)?;
    let summary = crate::team::remote_summary(svc, &remote);
    let question = remote.question().map(question_view);
    let next_step =
        crate::team::remote_next_step(&remote, question.as_ref().map(|q| &q.options[..]));
    Ok(assemble(
        svc,
        None,
        summary,
        &state,
        &definition,
        question,
        Vec::new(),
        next_step,
    ))
}

fn question_view(q: crate::pipeline::action::Question) -> QuestionView {
    QuestionView {
        kind: if q.options.iter().any(|o| o == "done") {
            "human_gate".into()
        } else {
            "checkpoint".into()
        },
        takes_text: q.options.iter().any(|o| o == "revise"),
        phase: q.phase,
        name: q.name,
        text: q.present_to_user,
        options: q.options,
        answered_by: q.answered_by,
        how_to_answer: q.how_to_answer,
    }
}

/// One run's view from its summary, state, definition, question,
/// artifacts and next step (this machine's run, in `ws`, or another's).
#[allow(
    clippy::too_many_arguments,
    reason = "one view's parts, each computed differently for a local and a remote run"
)]
fn assemble(
    svc: &Services,
    ws: Option<&WorkspaceRef>,
    summary: RunSummary,
    state: &WorkspaceState,
    definition: &WorkflowDefinition,
    question: Option<QuestionView>,
    artifacts: Vec<ArtifactRef>,
    next_step: String,
) -> RunOverview {
    let now = Utc::now();
    let ended = state.current_phase_status.is_terminal();
    let integrity = integrity_of(svc, ws, state);
    let phases = phase_nodes(state, definition, now);
    let tasks = task_views(state, definition);
    let timeline = timeline(state);
    let totals = RunTotals {
        tokens: state.phase_log.iter().map(|e| e.tokens).sum(),
        reported_ms: state.phase_log.iter().map(|e| e.duration_ms).sum(),
        elapsed_ms: millis(state.timestamps.last_updated - state.timestamps.created),
    };
    RunOverview {
        workflow_label: definition.label.clone(),
        effort: state.effort.map(|e| format!("{e:?}")),
        flow_template: state.flow_template.map(|t| t.as_str().to_string()),
        branch: state.branch.clone(),
        phase_started: state.timestamps.phase_started,
        edges: phase_edges(definition),
        phases,
        tasks,
        actions: RunActions {
            answer: question.is_some(),
            abandon: !ended,
        },
        question,
        feedback: state.human_feedback.as_ref().map(|f| f.text.clone()),
        error: state.error.as_ref().map(|e| e.message.clone()),
        artifacts,
        timeline,
        totals,
        next_step,
        integrity,
        summary,
    }
}

fn millis(d: chrono::TimeDelta) -> u64 {
    d.num_milliseconds().max(0) as u64
}

fn kind_name(kind: PhaseKind) -> &'static str {
    match kind {
        PhaseKind::Agent => "agent",
        PhaseKind::Review => "review",
        PhaseKind::Checkpoint => "checkpoint",
        PhaseKind::Command => "command",
        PhaseKind::WriteFile => "write_file",
        PhaseKind::HumanGate => "human_gate",
    }
}

fn phase_nodes(
    state: &WorkspaceState,
    definition: &WorkflowDefinition,
    now: DateTime<Utc>,
) -> Vec<PhaseNode> {
    // Wall-clock per phase from the history: each start to the next end.
    let mut wall: BTreeMap<&str, u64> = BTreeMap::new();
    let mut visits: BTreeMap<&str, u32> = BTreeMap::new();
    let mut open: BTreeMap<&str, DateTime<Utc>> = BTreeMap::new();
    for h in &state.history {
        match h.action {
            HistoryAction::Start => {
                *visits.entry(&h.phase).or_default() += 1;
                open.insert(&h.phase, h.at);
            }
            HistoryAction::Checkpoint if !open.contains_key(h.phase.as_str()) => {
                *visits.entry(&h.phase).or_default() += 1;
                open.insert(&h.phase, h.at);
            }
            HistoryAction::Complete | HistoryAction::Fail | HistoryAction::Abandon => {
                if let Some(started) = open.remove(h.phase.as_str()) {
                    *wall.entry(&h.phase).or_default() += millis(h.at - started);
                }
            }
            _ => {}
        }
    }
    if !state.current_phase_status.is_terminal()
        && let Some(started) = open.get(state.current_phase.as_str())
    {
        *wall.entry(&state.current_phase).or_default() += millis(now - *started);
    }
    let mut tokens: BTreeMap<&str, u64> = BTreeMap::new();
    for e in &state.phase_log {
        *tokens.entry(&e.phase).or_default() += e.tokens;
    }
    definition
        .phases
        .iter()
        .map(|p| {
            let current = p.id == state.current_phase;
            let phase_state = if current {
                match state.current_phase_status {
                    PhaseStatus::InProgress => PhaseState::Running,
                    PhaseStatus::AwaitingHuman => PhaseState::Waiting,
                    PhaseStatus::Failed => PhaseState::Failed,
                    PhaseStatus::Abandoned => PhaseState::Abandoned,
                    PhaseStatus::Completed => PhaseState::Done,
                    PhaseStatus::Pending if p.kind.waits_for_human() => PhaseState::Waiting,
                    PhaseStatus::Pending => PhaseState::Next,
                }
            } else if state.skipped_phases.contains(&p.id) {
                PhaseState::Skipped
            } else if state.completed_phases.contains(&p.id) {
                PhaseState::Done
            } else {
                PhaseState::Ahead
            };
            PhaseNode {
                id: p.id.clone(),
                label: p.label.clone(),
                kind: kind_name(p.kind).to_string(),
                agent: p.agent.clone(),
                state: phase_state,
                visits: visits.get(p.id.as_str()).copied().unwrap_or(0),
                duration_ms: wall.get(p.id.as_str()).copied().unwrap_or(0),
                tokens: tokens.get(p.id.as_str()).copied().unwrap_or(0),
                artifacts: phase_artifacts(p),
            }
        })
        .collect()
}

fn phase_artifacts(p: &baton_workflow::PhaseDefinition) -> Vec<String> {
    let mut files = p.artifacts.clone();
    match p.per_task {
        Some(PerTask::Implement) => files.push("impl-N.md".into()),
        Some(PerTask::Review) => files.push("review-N.md".into()),
        None => {}
    }
    files
}

fn phase_edges(definition: &WorkflowDefinition) -> Vec<PhaseEdge> {
    let mut edges = Vec::new();
    for p in &definition.phases {
        edges.push(PhaseEdge {
            from: p.id.clone(),
            to: definition.default_successor(&p.id, &[]),
            kind: "next".into(),
            when: String::new(),
        });
        for t in &p.transitions {
            let mut when: Vec<String> = t.when.verdict.clone();
            if let Some(r) = t.when.result {
                when.push(
                    match r {
                        baton_workflow::ResultKind::Success => "success",
                        baton_workflow::ResultKind::Failure => "failure",
                    }
                    .to_string(),
                );
            }
            // A checkpoint's failure transition is what `revise` takes.
            if p.kind == PhaseKind::Checkpoint && when == ["failure"] {
                when = vec!["revise".into()];
            }
            edges.push(PhaseEdge {
                from: p.id.clone(),
                to: t.goto.clone(),
                kind: "loop".into(),
                when: when.join(" / "),
            });
        }
    }
    edges
}

fn history_word(action: HistoryAction) -> &'static str {
    match action {
        HistoryAction::Init => "init",
        HistoryAction::Start => "start",
        HistoryAction::Complete => "complete",
        HistoryAction::Fail => "fail",
        HistoryAction::Checkpoint => "checkpoint",
        HistoryAction::Skip => "skip",
        HistoryAction::Abandon => "abandon",
        HistoryAction::Resume => "resume",
    }
}

fn timeline(state: &WorkspaceState) -> Vec<TimelineEntry> {
    // At one instant a report comes before the transition it caused, and an
    // answer before the move it made: reports, answers, then the history,
    // sorted stably by time.
    let mut entries: Vec<TimelineEntry> = state
        .phase_log
        .iter()
        .filter(|e| !e.model.starts_with("checkpoint:")) // answers are shown as such
        .map(|e| {
            let mut detail = format!("{} ms", e.duration_ms);
            if e.tokens > 0 {
                detail.push_str(&format!(", {} tokens", e.tokens));
            }
            if !e.model.is_empty() {
                detail.push_str(&format!(", {}", e.model));
            }
            if !e.tasks.is_empty() {
                detail.push_str(&format!(", tasks {}", e.tasks.join(", ")));
            }
            TimelineEntry {
                at: e.timestamp,
                phase: e.phase.clone(),
                what: "report".into(),
                detail: Some(detail),
                by: None,
            }
        })
        .collect();
    entries.extend(state.answers.iter().map(|a| TimelineEntry {
        at: a.at,
        phase: a.phase.clone(),
        what: "answer".into(),
        detail: Some(match &a.feedback {
            Some(text) => format!("{}: {} — {text}", a.question, a.answer),
            None => format!("{}: {}", a.question, a.answer),
        }),
        by: Some(a.by.label()),
    }));
    entries.extend(state.history.iter().map(|h| TimelineEntry {
        at: h.at,
        phase: h.phase.clone(),
        what: history_word(h.action).to_string(),
        detail: h.detail.clone(),
        by: h.by.clone(),
    }));
    entries.sort_by_key(|e| e.at);
    entries
}
