//! The `state.json` document.
//!
//! Field names follow forge-pipeline-spec §6.1 (camelCase, `depends_on` as
//! written there). Version 3 adds `workflow` (the definition the workspace
//! runs) and `history` (an audit trail of every lifecycle transition).
//! Older files (forge's version 1 and 2, or no version) are migrated on load;
//! keys this version does not know are kept, never dropped.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;

pub use crate::actor::{Actor, Channel, Who};
pub use crate::task::Task;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 3;

/// The whole state of one workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceState {
    /// Schema version ([`SCHEMA_VERSION`]).
    pub version: u32,
    /// The baton version that created the file.
    #[serde(
        rename = "baton-version",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub baton_version: String,
    /// Id of the workflow definition this workspace runs.
    pub workflow: String,
    /// The definition the run started with, pinned: a changed project
    /// definition applies to new runs only. Absent in runs started before
    /// pinning (they use the current definition, flagged as unpinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<DefinitionPin>,
    /// Workspace folder name without the `YYYYMMDD-` prefix.
    pub spec_name: String,
    /// The workspace, relative to the repository root when inside it.
    pub workspace: String,
    /// The git branch of the work.
    #[serde(default)]
    pub branch: Option<String>,
    /// Effort S, M or L.
    #[serde(default)]
    pub effort: Option<Effort>,
    /// Flow template light, standard or full.
    #[serde(default)]
    pub flow_template: Option<FlowTemplate>,
    /// `--auto` was asked for: checkpoints may proceed without a person —
    /// once the person granted it ([`WorkspaceState::auto_granted_by`], or
    /// their own configuration). Asking alone grants nothing.
    #[serde(default)]
    pub auto_approve: bool,
    /// Who granted `--auto` for this run (`auto:terminal`: `baton run` at a
    /// terminal; `auto:driver`: `baton run` for a run it started itself).
    /// Absent: not granted with the run (the person's configuration may
    /// still allow it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_granted_by: Option<Actor>,
    /// `--nopr`: no pull request.
    #[serde(default)]
    pub skip_pr: bool,
    /// Work on the current branch instead of creating one.
    #[serde(default)]
    pub use_current_branch: bool,
    /// The branch type was re-classified after design.
    #[serde(default)]
    pub branch_classified: bool,
    /// The branch was pushed.
    #[serde(default)]
    pub branch_pushed: bool,
    /// `--debug`.
    #[serde(default)]
    pub debug: bool,
    /// Phases skipped by the flow template or by `skip_phase`.
    #[serde(default)]
    pub skipped_phases: Vec<String>,
    /// The phase the workflow is at (`completed` at the end).
    pub current_phase: String,
    /// Status of the current phase.
    pub current_phase_status: PhaseStatus,
    /// Phases that ran and completed, in completion order, without duplicates.
    #[serde(default)]
    pub completed_phases: Vec<String>,
    /// Revision counters.
    #[serde(default)]
    pub revisions: Revisions,
    /// The design REVISE cap was reached.
    #[serde(default, skip_serializing_if = "is_false")]
    pub design_revise_cap_reached: bool,
    /// Per checkpoint: a revision was requested and not yet cleared.
    #[serde(default)]
    pub checkpoint_revision_pending: BTreeMap<String, bool>,
    /// A parallel batch awaits its commit.
    #[serde(default)]
    pub needs_batch_commit: bool,
    /// The task whose human gate is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_human_gate: Option<String>,
    /// Registered tasks by key.
    #[serde(default)]
    pub tasks: BTreeMap<String, Task>,
    /// Metrics per reported phase.
    #[serde(default)]
    pub phase_log: Vec<PhaseLogEntry>,
    /// Every lifecycle transition, in order.
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    /// The issue this workspace works on (issue workflows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_number: Option<String>,
    /// Files worked on so far, carried from phase to phase (ordered, no duplicates).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub working_files: Vec<String>,
    /// What the agent reported for each completed or failed phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase_results: Vec<PhaseReport>,
    /// Creation, last update, start of the current phase.
    pub timestamps: Timestamps,
    /// The last failure, cleared when the phase starts again.
    #[serde(default)]
    pub error: Option<PhaseError>,
    /// The last dispatched action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_dispatch: Option<LastDispatch>,
    /// How many commands of the current command phase have run (resume point).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub command_step: u32,
    /// Where the current command step stands with its `skip_if` check
    /// (guarded steps only; see [`CommandGuard`]).
    #[serde(default, skip_serializing_if = "CommandGuard::is_check")]
    pub command_guard: CommandGuard,
    /// A question for a person outside a checkpoint phase (a review without a
    /// clear verdict, a used-up loop limit, a failed command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_decision: Option<PendingDecision>,
    /// What a person asked for when sending work back at a checkpoint; given
    /// to the phase's agent until that phase completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_feedback: Option<HumanFeedback>,
    /// Every answer to a question, with who gave it and through which channel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<AnswerRecord>,
    /// Changes to this file made outside baton that baton found and
    /// handled (a person's question passed without an answer, reopened).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tampering: Vec<TamperNote>,
    /// The run is held: its state was changed outside baton while an
    /// agent's command ran. Nothing moves the run on until a person
    /// releases it (`baton enforce release`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
    /// What the repository held when the run started: the final commit never
    /// stages these files (they were not the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_baseline: Option<RepoBaseline>,
    /// Per artifact file: its fingerprint (modification time and size) when
    /// the visit of the phase that wrote it last ended. A file still equal to
    /// it was not written for the current visit (a stale artifact).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifact_marks: BTreeMap<String, String>,
    /// How many actions were handed out (the last action's number).
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub action_seq: u64,
    /// The action handed out and not reported yet: its id and what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outstanding_action: Option<OutstandingAction>,
    /// The last report applied with an action id, and the answer it got: a
    /// repeat of it gets the same answer and changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report: Option<ReportMemo>,
    /// What moved to `state-archive.jsonl` to keep this file small (counts that
    /// decisions still need: visits per phase, totals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_archived: Option<Archived>,
    /// Secret-looking files a person allowed into the run's commit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commit_allowed: Vec<String>,
    /// Files a person kept out of the run's commit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commit_excluded: Vec<String>,
    /// Keys written by newer versions or other tools, preserved verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Why a run is held (docs/errors.md `state_changed_outside_baton`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hold {
    /// The stable code (`state_changed_outside_baton`).
    pub code: String,
    /// When baton found the change.
    pub at: DateTime<Utc>,
    /// The agent's command that was running (its first 300 characters).
    pub command: String,
    /// What was found and what baton did, for people.
    pub message: String,
}

/// A change of `state.json` made outside baton, found and handled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TamperNote {
    /// When baton found it.
    pub at: DateTime<Utc>,
    /// The person's question concerned.
    pub phase: String,
    /// What was found and what baton did.
    pub message: String,
}

/// Where a pinned definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PinSource {
    /// Embedded in the baton binary (the binary is its copy).
    Builtin,
    /// A project file (`.baton/workflows/…`): its text is kept with the run.
    Project,
}

/// The workflow definition a run started with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DefinitionPin {
    /// Built-in or project file.
    pub source: PinSource,
    /// The embedded file's name, or the project file's path.
    pub file: String,
    /// SHA-256 of the text, hex.
    pub digest: String,
    /// The project definition's text (absent for built-ins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// One answer to a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerRecord {
    /// When it was given.
    pub at: DateTime<Utc>,
    /// The phase that waited.
    pub phase: String,
    /// The question's name.
    pub question: String,
    /// The option chosen.
    pub answer: String,
    /// Free text given with it (a revision request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// Who answered.
    pub by: Actor,
}

/// The counts of what moved from `state.json` to `state-archive.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Archived {
    /// Lines written to `state-archive.jsonl` (the next line's number).
    #[serde(default)]
    pub lines: u64,
    /// History entries archived.
    #[serde(default)]
    pub history: u64,
    /// Starts archived per phase (visits).
    #[serde(default)]
    pub visits: BTreeMap<String, u32>,
    /// Phase-log entries archived.
    #[serde(default)]
    pub phase_log: u64,
    /// Their tokens.
    #[serde(default)]
    pub tokens: u64,
    /// Their duration in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// Phase reports archived.
    #[serde(default)]
    pub phase_results: u64,
    /// Answers archived.
    #[serde(default)]
    pub answers: u64,
}

/// The repository as the run found it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepoBaseline {
    /// The commit checked out (none in a repository without commits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// Paths (repository-relative) that were modified, staged or untracked.
    #[serde(default)]
    pub dirty: Vec<String>,
    /// Taken when baton first stepped the run, not when it started (a run
    /// migrated from an older state had none): everything dirty then is
    /// treated as not the run's.
    #[serde(default, skip_serializing_if = "is_false")]
    pub taken_late: bool,
    /// Still being read (the confirmation call reads the repository off its
    /// reply's path): a change after the read finished fills it in, and it
    /// is always filled in before a call of the run returns an action.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pending: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero64(n: &u64) -> bool {
    *n == 0
}

/// The action handed out and not reported yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OutstandingAction {
    /// Its id (`a17`), given to the orchestrator with the action.
    pub id: String,
    /// What it is (kind, phase, agent or argv, outputs), so handing the same
    /// action out again keeps its id.
    pub key: String,
}

/// A report applied with an action id and the answer it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportMemo {
    /// The reported action's id.
    pub action: String,
    /// The action handed out after it (`None` for a standalone report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// The report's answer, returned again for a repeat.
    pub reply: Value,
}

/// Why a phase waits for a person although it is not a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionReason {
    /// The review has no clear verdict.
    NoVerdict,
    /// The loop back to the authoring phase has used up its visits.
    RetryLimit,
}

/// A question for a person, recorded so any later call can present it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingDecision {
    /// The phase that waits.
    pub phase: String,
    /// Why.
    pub reason: DecisionReason,
    /// Details for the person (the parser's complaint, the limit reached).
    #[serde(default)]
    pub detail: String,
}

/// Free-text feedback from a person for the phase work was sent back to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HumanFeedback {
    /// The checkpoint it was given at.
    pub from: String,
    /// The phase that receives it.
    pub phase: String,
    /// The text.
    pub text: String,
}

/// Effort levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Effort {
    /// Small.
    S,
    /// Medium.
    M,
    /// Large.
    L,
}

/// Flow templates (effort S → light, M → standard, L → full).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowTemplate {
    /// Fewest phases.
    Light,
    /// The default.
    Standard,
    /// Every phase.
    Full,
}

impl FlowTemplate {
    /// The template an effort maps to.
    pub fn for_effort(effort: Effort) -> FlowTemplate {
        match effort {
            Effort::S => FlowTemplate::Light,
            Effort::M => FlowTemplate::Standard,
            Effort::L => FlowTemplate::Full,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowTemplate::Light => "light",
            FlowTemplate::Standard => "standard",
            FlowTemplate::Full => "full",
        }
    }
}

/// Status of the current phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    /// Not started.
    Pending,
    /// Started, not finished.
    InProgress,
    /// The whole workflow is complete.
    Completed,
    /// The phase failed; it may be started again.
    Failed,
    /// Waiting for a person.
    AwaitingHuman,
    /// The workflow was abandoned; nothing may change any more.
    Abandoned,
}

impl PhaseStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseStatus::Pending => "pending",
            PhaseStatus::InProgress => "in_progress",
            PhaseStatus::Completed => "completed",
            PhaseStatus::Failed => "failed",
            PhaseStatus::AwaitingHuman => "awaiting_human",
            PhaseStatus::Abandoned => "abandoned",
        }
    }

    /// The workflow has ended (completed or abandoned).
    pub fn is_terminal(self) -> bool {
        matches!(self, PhaseStatus::Completed | PhaseStatus::Abandoned)
    }
}

/// Revision counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Revisions {
    /// Design revisions.
    #[serde(default)]
    pub design_revisions: u32,
    /// Task-list revisions.
    #[serde(default)]
    pub task_revisions: u32,
    /// Inline design revisions.
    #[serde(default)]
    pub design_inline_revisions: u32,
    /// Inline task-list revisions.
    #[serde(default)]
    pub task_inline_revisions: u32,
}

/// Metrics of one reported phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseLogEntry {
    /// Phase id.
    pub phase: String,
    /// Tokens used.
    #[serde(default)]
    pub tokens: u64,
    /// Duration in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// Model label.
    #[serde(default)]
    pub model: String,
    /// When it was recorded.
    pub timestamp: DateTime<Utc>,
    /// The tasks the reported agent run worked on (per-task phases; a
    /// fan-out lists all of its tasks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    /// What the agent's own client reported it cost, in US dollars (none
    /// when it reported no cost: analytics then prices the tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// One lifecycle transition, as recorded in `history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryEntry {
    /// When it happened.
    pub at: DateTime<Utc>,
    /// The phase it happened to.
    pub phase: String,
    /// What happened.
    pub action: HistoryAction,
    /// Extra text (failure message, abandon reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Who made it happen, when not the pipeline itself (`person:terminal`,
    /// `person:dashboard`, `person:elicitation`, `auto`, `agent:forced`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// Lifecycle transitions recorded in `history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HistoryAction {
    /// The workspace was created.
    Init,
    /// pending/failed → in_progress.
    Start,
    /// → next phase.
    Complete,
    /// in_progress → failed.
    Fail,
    /// → awaiting_human.
    Checkpoint,
    /// Skipped without running.
    Skip,
    /// The workflow was abandoned.
    Abandon,
    /// awaiting_human → in_progress: a person answered inside a running phase
    /// (a human gate of one task).
    Resume,
}

/// A phase result as reported by the agent (seed 004 PhaseResult, checked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseReport {
    /// The phase.
    pub phase_name: String,
    /// `completed` or `failed`.
    pub status: String,
    /// Tasks reported done.
    #[serde(default)]
    pub completed_tasks: Vec<String>,
    /// Acceptance criteria reported met.
    #[serde(default)]
    pub acceptance_criteria_met: Vec<String>,
    /// Files reported for this phase.
    #[serde(default)]
    pub working_files: Vec<String>,
    /// The review verdict, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Free-form notes (the failure for a failed phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// When baton recorded it.
    pub recorded_at: DateTime<Utc>,
    /// When the agent says it finished, if it said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<DateTime<Utc>>,
}

/// Creation, update and phase-start times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timestamps {
    /// When the workspace was created.
    pub created: DateTime<Utc>,
    /// The last write.
    pub last_updated: DateTime<Utc>,
    /// When the current phase started (null when not in progress).
    #[serde(default)]
    pub phase_started: Option<DateTime<Utc>>,
}

/// The last failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseError {
    /// Phase that failed.
    pub phase: String,
    /// Why.
    pub message: String,
    /// When.
    pub timestamp: DateTime<Utc>,
}

/// The stage of a guarded command step (`run` + `skip_if` in the definition):
/// its check runs first, and a resumed run checks again, so a step whose
/// work was done before an interruption is never done twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandGuard {
    /// The check is next; a report is the check's.
    #[default]
    Check,
    /// The check said "not done": the command is next.
    Run,
    /// The command was handed out; a report is the command's, and a call
    /// without one (a resume) checks again.
    Running,
}

impl CommandGuard {
    /// Whether this is the default stage (not written to state.json).
    pub fn is_check(&self) -> bool {
        *self == CommandGuard::Check
    }
}

/// The last dispatched action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastDispatch {
    /// Phase.
    pub phase: String,
    /// Model label.
    #[serde(default)]
    pub model: String,
    /// Setup-only exec.
    #[serde(default)]
    pub setup_only: bool,
    /// What was handed out (agent, output, tasks), so a repeated call that
    /// hands out the same action again is recognised and not announced twice.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
}

impl WorkspaceState {
    /// A fresh state: `setup` completed, the first phase pending.
    pub fn fresh(
        workflow: &str,
        first_phase: &str,
        spec_name: &str,
        workspace: &str,
        baton_version: &str,
        now: DateTime<Utc>,
    ) -> WorkspaceState {
        WorkspaceState {
            version: SCHEMA_VERSION,
            baton_version: baton_version.to_string(),
            workflow: workflow.to_string(),
            definition: None,
            spec_name: spec_name.to_string(),
            workspace: workspace.to_string(),
            branch: None,
            effort: None,
            flow_template: None,
            auto_approve: false,
            auto_granted_by: None,
            skip_pr: false,
            use_current_branch: false,
            branch_classified: false,
            branch_pushed: false,
            debug: false,
            skipped_phases: Vec::new(),
            current_phase: first_phase.to_string(),
            current_phase_status: PhaseStatus::Pending,
            completed_phases: vec![baton_workflow::SETUP.to_string()],
            revisions: Revisions::default(),
            design_revise_cap_reached: false,
            checkpoint_revision_pending: BTreeMap::new(),
            needs_batch_commit: false,
            pending_human_gate: None,
            tasks: BTreeMap::new(),
            phase_log: Vec::new(),
            issue_number: None,
            working_files: Vec::new(),
            phase_results: Vec::new(),
            history: vec![HistoryEntry {
                at: now,
                phase: baton_workflow::SETUP.to_string(),
                action: HistoryAction::Init,
                detail: None,
                by: None,
            }],
            timestamps: Timestamps {
                created: now,
                last_updated: now,
                phase_started: None,
            },
            error: None,
            last_dispatch: None,
            command_step: 0,
            command_guard: CommandGuard::Check,
            pending_decision: None,
            human_feedback: None,
            answers: Vec::new(),
            tampering: Vec::new(),
            hold: None,
            artifact_marks: BTreeMap::new(),
            action_seq: 0,
            outstanding_action: None,
            last_report: None,
            history_archived: None,
            repo_baseline: None,
            commit_allowed: Vec::new(),
            commit_excluded: Vec::new(),
            extra: BTreeMap::new(),
        }
    }

    /// Parses a `state.json` document, migrating older versions.
    pub fn from_json(text: &str) -> Result<WorkspaceState, SchemaError> {
        // A document of this version needs no migration: read straight into
        // the state (about half the work of reading it as a tree first).
        // Anything else, and any error, takes the path below, which also
        // words the error.
        if let Ok(mut state) = serde_json::from_str::<WorkspaceState>(text)
            && state.version == SCHEMA_VERSION
        {
            state.extra.remove(crate::integrity::INTEGRITY_KEY);
            return Ok(state);
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| SchemaError::Malformed(e.to_string()))?;
        let value = migrate(value)?;
        let mut state: WorkspaceState =
            serde_json::from_value(value).map_err(|e| SchemaError::Malformed(e.to_string()))?;
        // The tag is the file's, not the state's (crate::integrity).
        state.extra.remove(crate::integrity::INTEGRITY_KEY);
        Ok(state)
    }

    /// The document as written to disk: pretty JSON, trailing newline.
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Why a document could not be read as a [`WorkspaceState`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// Not JSON, or JSON of the wrong shape.
    #[error("{0}")]
    Malformed(String),
    /// Written by a newer baton.
    #[error("schema version {0} is newer than this baton understands ({SCHEMA_VERSION})")]
    TooNew(u64),
}

/// Brings a document of any older version up to [`SCHEMA_VERSION`].
///
/// * versions 1 and 2 (and no version): the forge layout. It has no
///   `workflow` (it can only be `forge`) and no `history`.
pub fn migrate(mut value: Value) -> Result<Value, SchemaError> {
    let Some(obj) = value.as_object_mut() else {
        return Err(SchemaError::Malformed(
            "state.json must hold a JSON object".into(),
        ));
    };
    let version = match obj.get("version") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            SchemaError::Malformed("version must be a non-negative integer".into())
        })?,
    };
    if version > u64::from(SCHEMA_VERSION) {
        return Err(SchemaError::TooNew(version));
    }
    if version < 3 {
        obj.entry("workflow")
            .or_insert_with(|| Value::from("forge"));
        obj.entry("history")
            .or_insert_with(|| Value::Array(Vec::new()));
        // forge's server-version key becomes an unknown, preserved key.
        obj.insert("version".into(), Value::from(SCHEMA_VERSION));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-04-01T10:00:00Z".parse().unwrap()
    }

    #[test]
    fn fresh_state_round_trips() {
        let s = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "fix",
            ".specs/20260401-fix",
            "0.1.0",
            now(),
        );
        let back = WorkspaceState::from_json(&s.to_json()).unwrap();
        assert_eq!(s, back);
        let v: Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(v["currentPhaseStatus"], "pending");
        assert_eq!(v["completedPhases"], serde_json::json!(["setup"]));
        assert_eq!(v["version"], 3);
    }

    #[test]
    fn forge_v2_documents_migrate_and_keep_unknown_keys() {
        let v2 = r#"{"version":2,"forge-state-mcp-version":"2.19.0","specName":"fix-auth","workspace":".specs/20260330-fix-auth",
          "branch":null,"effort":"M","flowTemplate":"standard","autoApprove":false,"skipPr":false,"useCurrentBranch":false,
          "branchClassified":false,"branchPushed":false,"debug":false,"skippedPhases":["phase-4b","checkpoint-b"],
          "currentPhase":"phase-3","currentPhaseStatus":"in_progress","completedPhases":["setup","phase-1","phase-2"],
          "revisions":{"designRevisions":1,"taskRevisions":0,"designInlineRevisions":0,"taskInlineRevisions":0},
          "checkpointRevisionPending":{"checkpoint-a":false,"checkpoint-b":false},"needsBatchCommit":false,"tasks":{},
          "phaseLog":[{"phase":"phase-1","tokens":1500,"duration_ms":42000,"model":"sonnet","timestamp":"2026-03-30T10:00:00.123456789Z"}],
          "timestamps":{"created":"2026-03-30T09:00:00Z","lastUpdated":"2026-03-30T10:00:00Z","phaseStarted":"2026-03-30T10:01:00Z"},
          "error":null,"taskType":"legacy"}"#;
        let s = WorkspaceState::from_json(v2).unwrap();
        assert_eq!(s.version, SCHEMA_VERSION);
        assert_eq!(s.workflow, "forge");
        assert_eq!(s.effort, Some(Effort::M));
        assert_eq!(s.current_phase_status, PhaseStatus::InProgress);
        assert_eq!(s.revisions.design_revisions, 1);
        assert_eq!(s.extra["taskType"], "legacy");
        assert_eq!(s.extra["forge-state-mcp-version"], "2.19.0");
        let again: Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(again["taskType"], "legacy");
    }

    #[test]
    fn newer_and_malformed_documents_are_refused() {
        assert_eq!(
            WorkspaceState::from_json(r#"{"version":99}"#).unwrap_err(),
            SchemaError::TooNew(99)
        );
        assert!(matches!(
            WorkspaceState::from_json("{\"version\":3,").unwrap_err(),
            SchemaError::Malformed(_)
        ));
        assert!(matches!(
            WorkspaceState::from_json("[1,2]").unwrap_err(),
            SchemaError::Malformed(_)
        ));
    }
}
