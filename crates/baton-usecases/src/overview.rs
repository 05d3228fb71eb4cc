//! Runs at a glance, for people: a paginated list of every run of the
//! repository and one run's whole picture — its workflow's phase graph with
//! where it stands, the task DAG, a timeline, artifacts, durations, tokens
//! and the question it waits at, with the question's full text and options.
//!
//! Read-only: nothing here writes a file or publishes an event. The
//! dashboard (`/api/runs…`), `baton show` and `baton ls` all shape these
//! typed values for their medium.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use baton_engine::completion::guards::is_human_phase;
use baton_engine::summary::phase_label;
use baton_state::{HistoryAction, PhaseStatus, WorkspaceRef, WorkspaceState};
use baton_workflow::{PerTask, PhaseKind, WorkflowDefinition};

use crate::validate::check_text;
use crate::{Error, ErrorCode, Result, Services};

/// The most runs one page holds.
pub const MAX_PAGE: usize = 200;

/// The largest artifact shown whole; longer ones are cut.
pub const MAX_ARTIFACT_BYTES: u64 = 1024 * 1024;

/// Which runs a page lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunFilter {
    /// Every run.
    #[default]
    All,
    /// Runs that have not ended.
    Active,
    /// Runs waiting for a person.
    Waiting,
    /// Runs whose current phase failed.
    Failed,
    /// Completed runs.
    Completed,
    /// Abandoned runs.
    Abandoned,
}

impl RunFilter {
    /// Parses a filter name (`all`, `active`, `waiting`, `failed`,
    /// `completed`, `abandoned`).
    pub fn parse(text: &str) -> Result<RunFilter> {
        Ok(match text {
            "" | "all" => RunFilter::All,
            "active" => RunFilter::Active,
            "waiting" => RunFilter::Waiting,
            "failed" => RunFilter::Failed,
            "completed" => RunFilter::Completed,
            "abandoned" => RunFilter::Abandoned,
            other => {
                return Err(
                    Error::invalid("status", format!("unknown filter {other:?}")).with_details(
                        serde_json::json!({"field": "status", "valid": ["all", "active", "waiting", "failed", "completed", "abandoned"]}),
                    ),
                );
            }
        })
    }

    fn keeps(self, run: &RunSummary) -> bool {
        match self {
            RunFilter::All => true,
            RunFilter::Active => !matches!(run.status.as_str(), "completed" | "abandoned"),
            RunFilter::Waiting => run.waiting,
            RunFilter::Failed => run.status == "failed",
            RunFilter::Completed => run.status == "completed",
            RunFilter::Abandoned => run.status == "abandoned",
        }
    }
}

/// What page of runs to list.
#[derive(Debug, Clone, Default)]
pub struct PageArgs {
    /// Runs to skip (newest first).
    pub offset: usize,
    /// Runs to return (1 to [`MAX_PAGE`]; 0 means 50).
    pub limit: usize,
    /// Which runs.
    pub filter: RunFilter,
    /// Only runs whose folder, spec name, workflow or issue contains this
    /// text (case-insensitive).
    pub search: Option<String>,
}

/// One row of the run list.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The folder name (`20260401-fix-auth`): the run's id in links.
    pub id: String,
    /// The workspace as shown everywhere else (`.specs/20260401-fix-auth`).
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// Spec name.
    pub spec_name: String,
    /// The issue, for issue runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue_number: Option<String>,
    /// The current phase.
    pub current_phase: String,
    /// Its label.
    pub current_phase_label: String,
    /// Its status.
    pub status: String,
    /// Whether the run waits for a person.
    pub waiting: bool,
    /// Phases done (completed or skipped).
    pub done: usize,
    /// All phases of the workflow.
    pub total: usize,
    /// When the run was created.
    pub created: DateTime<Utc>,
    /// The last state change.
    pub last_updated: DateTime<Utc>,
    /// Team mode: where the run runs (this machine or another of the team).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::team::MachineView>,
}

/// Counts per filter, over every run (not only the page).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunCounts {
    /// Every run.
    pub all: usize,
    /// Not ended.
    pub active: usize,
    /// Waiting for a person.
    pub waiting: usize,
    /// Failed.
    pub failed: usize,
    /// Completed.
    pub completed: usize,
    /// Abandoned.
    pub abandoned: usize,
}

/// A run whose state cannot be read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UnreadableRun {
    /// The folder name.
    pub id: String,
    /// Error code.
    pub code: String,
    /// What is wrong.
    pub message: String,
}

/// One page of runs, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunPage {
    /// Runs that pass the filter and search.
    pub total: usize,
    /// Where this page starts.
    pub offset: usize,
    /// The page size asked for.
    pub limit: usize,
    /// The page.
    pub runs: Vec<RunSummary>,
    /// Counts per filter over every run.
    pub counts: RunCounts,
    /// Runs whose state cannot be read.
    pub unreadable: Vec<UnreadableRun>,
    /// Team mode: the team database could not answer, so the page holds
    /// this machine's runs only; why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_problem: Option<String>,
    /// Ended runs whose files are on another branch (from the run history).
    pub elsewhere: Vec<crate::elsewhere::ElsewhereRun>,
}

/// Lists the runs of the repository, newest first, a page at a time (in
/// team mode, every machine's runs: this machine's from its files, the
/// others' from the team database).
pub fn run_page(svc: &Services, args: PageArgs) -> Result<RunPage> {
    run_page_with(svc, &RunIndex::default(), args)
}

/// What identifies the contents of a run's state files without reading
/// them: size, modification time and inode of `state.json` and of the live
/// state beside it. Every write is an atomic rename, so any change gives
/// the file a new inode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp([Option<(u64, Option<std::time::SystemTime>, u64)>; 2]);

fn stamp(ws: &WorkspaceRef) -> Stamp {
    let one = |path: std::path::PathBuf| {
        std::fs::metadata(path).ok().map(|m| {
            #[cfg(unix)]
            let ino = std::os::unix::fs::MetadataExt::ino(&m);
            #[cfg(not(unix))]
            let ino = 0;
            (m.len(), m.modified().ok(), ino)
        })
    };
    Stamp([
        one(ws.state_file()),
        one(ws.dir.join(baton_state::store::LIVE_STATE_FILE)),
    ])
}

/// List rows remembered between requests of a long-lived reader (the
/// dashboard), each with the [`Stamp`] of the files it was read from:
/// every request still looks at every run's files, and reads again only
/// the runs whose files changed. For display only: no decision is ever
/// taken on a remembered row.
#[derive(Debug, Default)]
pub struct RunIndex {
    rows: std::sync::Mutex<BTreeMap<String, (Stamp, RunSummary)>>,
}

/// [`run_page`] with rows remembered in `index` across calls.
pub fn run_page_with(svc: &Services, index: &RunIndex, args: PageArgs) -> Result<RunPage> {
    let limit = match args.limit {
        0 => 50,
        n => n.min(MAX_PAGE),
    };
    let search = match &args.search {
        Some(s) => {
            check_text("search", s, 256)?;
            Some(s.trim().to_lowercase()).filter(|s| !s.is_empty())
        }
        None => None,
    };
    let mut runs = Vec::new();
    let mut unreadable = Vec::new();
    let mut known = match index.rows.lock() {
        Ok(k) => k,
        Err(p) => p.into_inner(),
    };
    let mut seen = std::collections::BTreeSet::new();
    for ws in svc.store.list_refs()? {
        let stamp = stamp(&ws);
        seen.insert(ws.name.clone());
        if let Some((s, row)) = known.get(&ws.name)
            && *s == stamp
        {
            runs.push(row.clone());
            continue;
        }
        match svc.store.load(&ws) {
            Ok(state) => {
                let row = summary(svc, &ws, &state);
                known.insert(ws.name.clone(), (stamp, row.clone()));
                runs.push(row);
            }
            Err(e) => {
                known.remove(&ws.name);
                let e = Error::from(e);
                unreadable.push(UnreadableRun {
                    id: ws.name,
                    code: e.code.as_str().to_string(),
                    message: e.message,
                });
            }
        }
    }
    known.retain(|name, _| seen.contains(name));
    drop(known);
    runs.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
    let mut counts = RunCounts::default();
    for r in &runs {
        counts.all += 1;
        for (filter, n) in [
            (RunFilter::Active, &mut counts.active),
            (RunFilter::Waiting, &mut counts.waiting),
            (RunFilter::Failed, &mut counts.failed),
            (RunFilter::Completed, &mut counts.completed),
            (RunFilter::Abandoned, &mut counts.abandoned),
        ] {
            if filter.keeps(r) {
                *n += 1;
            }
        }
    }
    let mut matching: Vec<RunSummary> = runs
        .into_iter()
        .filter(|r| args.filter.keeps(r))
        .filter(|r| {
            search.as_ref().is_none_or(|s| {
                [
                    r.id.as_str(),
                    r.spec_name.as_str(),
                    r.workflow.as_str(),
                    r.issue_number.as_deref().unwrap_or(""),
                ]
                .iter()
                .any(|f| f.to_lowercase().contains(s.as_str()))
            })
        })
        .collect();
    let mut total = matching.len();
    // Team mode: the other machines' runs that can reach this page.
    let mut team_problem = None;
    match crate::team::other_runs_page(svc, args.filter, search.as_deref(), args.offset + limit) {
        Ok(Some(page)) => {
            total += page.matching;
            for (n, c) in [
                &mut counts.all,
                &mut counts.active,
                &mut counts.waiting,
                &mut counts.failed,
                &mut counts.completed,
                &mut counts.abandoned,
            ]
            .into_iter()
            .zip(page.counts)
            {
                *n += c;
            }
            matching.extend(page.runs);
            matching.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
        }
        Ok(None) => {}
        Err(e) => team_problem = Some(e.message),
    }
    Ok(RunPage {
        total,
        offset: args.offset,
        limit,
        runs: matching.into_iter().skip(args.offset).take(limit).collect(),
        counts,
        unreadable,
        team_problem,
        elsewhere: crate::elsewhere::runs_elsewhere(svc),
    })
}

/// The list row of one run.
pub fn summary(svc: &Services, ws: &WorkspaceRef, state: &WorkspaceState) -> RunSummary {
    let definition = svc.run_definition(state).ok();
    let total = definition.as_ref().map_or(0, |d| d.phases.len());
    let done = state
        .completed_phases
        .iter()
        .chain(&state.skipped_phases)
        .filter(|p| *p != baton_workflow::SETUP)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    RunSummary {
        id: ws.name.clone(),
        workspace: ws.display.clone(),
        workflow: state.workflow.clone(),
        spec_name: state.spec_name.clone(),
        issue_number: state.issue_number.clone(),
        current_phase: state.current_phase.clone(),
        current_phase_label: definition
            .as_ref()
            .map(|d| phase_label(d, &state.current_phase))
            .unwrap_or_else(|| state.current_phase.clone()),
        status: state.current_phase_status.as_str().to_string(),
        waiting: waits_for_person(state, definition.as_deref()),
        done,
        total,
        created: state.timestamps.created,
        last_updated: state.timestamps.last_updated,
        machine: crate::team::this_machine(svc),
    }
}

fn waits_for_person(state: &WorkspaceState, definition: Option<&WorkflowDefinition>) -> bool {
    match state.current_phase_status {
        PhaseStatus::AwaitingHuman => true,
        PhaseStatus::Pending => definition.is_some_and(|d| is_human_phase(d, &state.current_phase)),
        _ => false,
    }
}

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

/// One task of the task DAG.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    /// Task key.
    pub id: String,
    /// Title.
    pub title: String,
    /// `sequential`, `parallel`, `human_gate`.
    pub mode: String,
    /// Keys of the tasks it depends on.
    pub depends_on: Vec<String>,
    /// Files it writes.
    pub files: Vec<String>,
    /// Implementation status.
    pub impl_status: String,
    /// Review status.
    pub review_status: String,
    /// `done`, `implemented` (review ahead), `running`, `failed` (review
    /// failed), `waiting` (its human gate is open), `ready`, `blocked`,
    /// `skipped`.
    pub state: String,
    /// Implementation plus review retries.
    pub retries: u32,
    /// Time reported for the agent runs that worked on it (a batch of
    /// parallel tasks counts whole for each of them).
    pub duration_ms: u64,
    /// Tokens reported for those runs (shared by a batch).
    pub tokens: u64,
    /// How many agent runs worked on it.
    pub runs: u32,
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

/// One file of the workspace a person may read.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRef {
    /// File name, relative to the workspace.
    pub name: String,
    /// The phase that writes it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// Last modified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<DateTime<Utc>>,
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

/// The integrity of `state`'s run.
pub fn integrity(svc: &Services, state: &WorkspaceState) -> Integrity {
    let def = svc.run_definition(state).ok();
    let tampering = crate::tamper::report(def.as_deref(), state);
    let definition = crate::pinning::definition_view(svc, state);
    let notes = definition
        .as_ref()
        .map(crate::pinning::definition_notes)
        .unwrap_or_default();
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
        crate::pipeline::step::pending_question(svc, &ws.display)
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

fn assemble(
    svc: &Services,
    summary: RunSummary,
    state: &WorkspaceState,
    definition: &WorkflowDefinition,
    question: Option<QuestionView>,
    artifacts: Vec<ArtifactRef>,
    next_step: String,
) -> RunOverview {
    let state = state.clone();
    let definition = definition.clone();
    let now = Utc::now();
    let ended = state.current_phase_status.is_terminal();
    let phases = phase_nodes(&state, &definition, now);
    let tasks = task_views(&state, &definition);
    let timeline = timeline(&state);
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
        edges: phase_edges(&definition),
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
        integrity: integrity(svc, &state),
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

fn task_views(state: &WorkspaceState, definition: &WorkflowDefinition) -> Vec<TaskView> {
    // The tasks handed out to agents in the running per-task phase.
    let running: Vec<String> = match &state.last_dispatch {
        Some(d)
            if state.current_phase_status == PhaseStatus::InProgress
                && d.phase == state.current_phase
                && definition
                    .phase(&d.phase)
                    .is_some_and(|p| p.per_task.is_some()) =>
        {
            crate::pipeline::step::dispatched_tasks(&d.action)
        }
        _ => Vec::new(),
    };
    let mut per_task: BTreeMap<&str, (u64, u64, u32)> = BTreeMap::new();
    for e in &state.phase_log {
        for t in &e.tasks {
            let entry = per_task.entry(t.as_str()).or_default();
            entry.0 += e.duration_ms;
            entry.1 += e.tokens;
            entry.2 += 1;
        }
    }
    let done = |status: &str| {
        matches!(
            status,
            "completed_pass" | "completed_pass_with_notes" | "accepted_by_human"
        )
    };
    let mut tasks: Vec<TaskView> = state
        .tasks
        .iter()
        .map(|(key, t)| {
            let depends_on: Vec<String> = t
                .depends_on
                .clone()
                .unwrap_or_default()
                .iter()
                .map(|d| d.to_string())
                .collect();
            let deps_done = depends_on.iter().all(|d| {
                state
                    .tasks
                    .get(d)
                    .is_some_and(|dep| dep.impl_status == "completed")
            });
            let gate = state.pending_human_gate.as_deref() == Some(key.as_str());
            let task_state =
                if t.impl_status.starts_with("skipped") || t.review_status.starts_with("skipped") {
                    "skipped"
                } else if gate {
                    "waiting"
                } else if running.contains(key) {
                    "running"
                } else if done(&t.review_status)
                    || (t.impl_status == "completed"
                        && state.current_phase_status == PhaseStatus::Completed)
                {
                    "done"
                } else if t.review_status == "completed_fail" {
                    "failed"
                } else if t.impl_status == "completed" {
                    "implemented"
                } else if deps_done {
                    "ready"
                } else {
                    "blocked"
                };
            let (duration_ms, tokens, runs) =
                per_task.get(key.as_str()).copied().unwrap_or_default();
            TaskView {
                id: key.clone(),
                title: t.title.clone(),
                mode: t.execution_mode.clone(),
                depends_on,
                files: t.files.clone().unwrap_or_default(),
                impl_status: t.impl_status.clone(),
                review_status: t.review_status.clone(),
                state: task_state.to_string(),
                retries: t.impl_retries + t.review_retries,
                duration_ms,
                tokens,
                runs,
            }
        })
        .collect();
    // Numeric keys in numeric order.
    tasks.sort_by(|a, b| match (a.id.parse::<u64>(), b.id.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.id.cmp(&b.id),
    });
    tasks
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

fn list_artifacts(dir: &Path, definition: &WorkflowDefinition) -> Vec<ArtifactRef> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<ArtifactRef> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            if !is_artifact_name(&name) {
                return None;
            }
            // Regular files only: a symlink could point anywhere.
            let meta = std::fs::symlink_metadata(e.path()).ok()?;
            if !meta.file_type().is_file() {
                return None;
            }
            Some(ArtifactRef {
                phase: artifact_phase(definition, &name),
                size: meta.len(),
                modified: meta.modified().ok().map(DateTime::<Utc>::from),
                name,
            })
        })
        .collect();
    let order = |a: &ArtifactRef| {
        a.phase
            .as_deref()
            .and_then(|p| definition.position(p))
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| order(a).cmp(&order(b)).then(natural(&a.name, &b.name)));
    out
}

/// `impl-2.md` before `impl-10.md`.
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| {
        let digits: String = s.chars().filter(char::is_ascii_digit).collect();
        let stem: String = s.chars().filter(|c| !c.is_ascii_digit()).collect();
        (stem, digits.parse::<u64>().unwrap_or(0))
    };
    split(a).cmp(&split(b))
}

/// A Markdown file directly in the workspace, not hidden.
fn is_artifact_name(name: &str) -> bool {
    name.ends_with(".md")
        && !name.starts_with('.')
        && !name.contains('/')
        && !name.contains('\\')
        && name.len() <= 255
}

fn artifact_phase(definition: &WorkflowDefinition, name: &str) -> Option<String> {
    if let Some(p) = definition
        .phases
        .iter()
        .find(|p| p.artifacts.iter().any(|a| a == name))
    {
        return Some(p.id.clone());
    }
    let per_task = |kind: PerTask, prefix: &str| {
        let n = name.strip_prefix(prefix)?.strip_suffix(".md")?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        definition
            .phases
            .iter()
            .find(|p| p.per_task == Some(kind))
            .map(|p| p.id.clone())
    };
    per_task(PerTask::Implement, "impl-").or_else(|| per_task(PerTask::Review, "review-"))
}

/// An artifact's text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ArtifactText {
    /// The file name.
    pub name: String,
    /// Its text (lossy UTF-8), at most [`MAX_ARTIFACT_BYTES`].
    pub text: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether the text was cut at [`MAX_ARTIFACT_BYTES`].
    pub truncated: bool,
}

/// Reads one Markdown file of a run's workspace (a name from
/// [`RunOverview::artifacts`]): only `*.md` directly in the workspace,
/// regular files, never through a symlink.
pub fn artifact(svc: &Services, workspace: &str, name: &str) -> Result<ArtifactText> {
    check_text("workspace", workspace, 1024)?;
    check_text("name", name, 255)?;
    if !is_artifact_name(name) || name.contains("..") {
        return Err(Error::invalid(
            "name",
            format!("{name:?} is not an artifact: a .md file directly in the workspace"),
        ));
    }
    let ws = svc.store.resolve(workspace)?;
    let path = ws.dir.join(name);
    let not_found = || {
        Error::new(
            ErrorCode::NotFound,
            format!("{} has no artifact {name}", ws.display),
        )
    };
    let meta = std::fs::symlink_metadata(&path).map_err(|_| not_found())?;
    if !meta.file_type().is_file() {
        return Err(not_found());
    }
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_ARTIFACT_BYTES).read_to_end(&mut buf))
        .map_err(|e| Error::new(ErrorCode::IoError, format!("reading {name}: {e}")))?;
    Ok(ArtifactText {
        name: name.to_string(),
        text: String::from_utf8_lossy(&buf).into_owned(),
        size: meta.len(),
        truncated: meta.len() > MAX_ARTIFACT_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_unknown_ones_are_refused() {
        assert_eq!(RunFilter::parse("waiting").unwrap(), RunFilter::Waiting);
        assert_eq!(RunFilter::parse("").unwrap(), RunFilter::All);
        assert_eq!(
            RunFilter::parse("nope").unwrap_err().code,
            ErrorCode::InvalidParameter
        );
    }

    #[test]
    fn artifact_names_stay_in_the_workspace() {
        assert!(is_artifact_name("design.md"));
        for bad in ["../x.md", "a/b.md", ".hidden.md", "state.json", "x.md/"] {
            assert!(!is_artifact_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_index_reads_a_run_again_only_when_its_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let config = baton_config::Config::resolve(
            dir.path(),
            &[("BATON_FSYNC", "off")],
            &baton_config::Overrides {
                repo_root: Some(dir.path().to_path_buf()),
                ..Default::default()
            },
        )
        .unwrap();
        let svc = Services::new(
            config,
            std::sync::Arc::new(baton_events::EventBus::in_memory()),
            "test",
        );
        let init = |name: &str| {
            crate::recovery::init(
                &svc,
                crate::recovery::InitArgs {
                    spec_name: name.into(),
                    workflow: None,
                    workspace: Some(format!("20260101-{name}")),
                    effort: None,
                },
            )
            .unwrap()
        };
        init("one");
        init("two");
        let index = RunIndex::default();
        let page = run_page_with(&svc, &index, PageArgs::default()).unwrap();
        assert_eq!(page.total, 2);
        // A hand edit behind the index's back (a remembered row would be
        // stale): the next page shows it.
        let ws = svc.store.resolve("20260101-one").unwrap();
        let mut state = svc.store.load(&ws).unwrap();
        state.current_phase_status = baton_state::PhaseStatus::Abandoned;
        baton_state::store::write_atomic(
            &ws.dir,
            &ws.state_file(),
            state.to_json().as_bytes(),
            false,
        )
        .unwrap();
        let page = run_page_with(&svc, &index, PageArgs::default()).unwrap();
        let one = page.runs.iter().find(|r| r.id == "20260101-one").unwrap();
        assert_eq!(one.status, "abandoned");
        assert_eq!(page.counts.abandoned, 1);
        // A run removed is gone from the page and from the index.
        std::fs::remove_dir_all(svc.store.resolve("20260101-two").unwrap().dir).unwrap();
        let page = run_page_with(&svc, &index, PageArgs::default()).unwrap();
        assert_eq!(page.total, 1);
        assert_eq!(index.rows.lock().unwrap().len(), 1);
    }

    #[test]
    fn natural_order_puts_two_before_ten() {
        let mut names = vec!["impl-10.md", "impl-2.md", "impl-1.md"];
        names.sort_by(|a, b| natural(a, b));
        assert_eq!(names, ["impl-1.md", "impl-2.md", "impl-10.md"]);
    }
}
