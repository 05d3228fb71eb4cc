//! The types of a workflow definition file.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A workflow: an ordered list of phases the engine walks through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowDefinition {
    /// Stable identifier used by tools and state files (`[a-z0-9][a-z0-9_-]*`).
    pub id: String,
    /// Human-readable name.
    pub label: String,
    /// Version of this definition; bump it when phases change meaning.
    #[serde(default = "default_version")]
    pub version: u32,
    /// What the workflow is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The model label handed to agents when a phase names none (e.g. `sonnet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Who answers this workflow's questions (checkpoints, human gates,
    /// decisions a review or a failed command leaves open) unless a phase
    /// says otherwise. Default `person`: an agent's answer is refused.
    #[serde(default, skip_serializing_if = "Answerer::is_person")]
    pub answered_by: Answerer,
    /// How an agent moves a run of this workflow: `loop` (it asks
    /// `pipeline_next_action` for every action, as in the seed pipeline) or
    /// `reports` (it reports each phase with `completePhase`, as in the issue
    /// workflow; the default).
    #[serde(default, skip_serializing_if = "Driver::is_reports")]
    pub driven_by: Driver,
    /// Paths (relative to the repository; `*` within a folder, `**` across
    /// folders) no phase's agent may write. Default: the agent clients'
    /// settings and hooks, `.mcp.json`, `baton.toml` and `.git/`
    /// ([`crate::scope::DEFAULT_PROTECTED`]). baton's own control files are
    /// protected whatever this says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected: Option<Vec<String>>,
    /// The phases, in order.
    pub phases: Vec<PhaseDefinition>,
}

fn default_version() -> u32 {
    1
}

/// One phase of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseDefinition {
    /// Identifier, unique within the workflow (`setup` and `completed` are reserved).
    pub id: String,
    /// Human-readable name.
    pub label: String,
    /// What kind of work the phase is.
    pub kind: PhaseKind,
    /// The agent instruction file for agent and review phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Another agent to use when a given phase is skipped (e.g. a combined
    /// analyst-investigator when the investigation phase is skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_when_skipped: Option<AgentVariant>,
    /// The model label for this phase's agent (default: the workflow's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Files the phase must produce, relative to the workspace folder; the
    /// phase cannot complete until each exists, is non-empty and passes its
    /// rule ([`PhaseDefinition::artifact_rule`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// What an artifact must show beyond existing, by file
    /// (`present`, `non_empty`, `sections`, `task_list`, `review`;
    /// [`crate::rules`]). An artifact not listed gets `review` in a phase
    /// with `verdicts`, `present` elsewhere.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifact_rules: BTreeMap<String, crate::rules::ArtifactRule>,
    /// Files the phase's agent reads (or a person reviews at a checkpoint),
    /// relative to the workspace folder; those that do not exist yet are left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// The phase works through the registered tasks one agent per task:
    /// `implement` writes `impl-N.md`, `review` writes `review-N.md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_task: Option<PerTask>,
    /// A checkpoint that offers to post the summary to the issue the run came
    /// from (GitHub, Jira, Linear).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub posts_to_source: bool,
    /// For `write_file` phases: the content written to the first artifact
    /// (placeholders as in commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The phase works through registered tasks and cannot start without them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_tasks: bool,
    /// Flow templates or efforts for which the phase is skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_for: Vec<String>,
    /// Structured instructions handed to the agent (seed 004 PhaseInstruction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<PhaseInstruction>,
    /// The phase that follows by default (a phase id, or `completed` to end
    /// the workflow). Default: the next phase in the list that is not skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Conditional transitions, tried in order when the phase completes; the
    /// first whose `when` matches the reported result or verdict wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transitions: Vec<TransitionRule>,
    /// How many times the phase may be entered in one run (loop limit).
    /// Entering it once more is refused and the workflow waits for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u32>,
    /// Commands the phase runs: `quality` means the repository's own lint,
    /// type-check and test commands, detected from its files (Cargo, npm/pnpm/yarn,
    /// Go, Python, Make).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<CommandSource>,
    /// Verdicts a review phase may give (e.g. APPROVE, REVISE).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<String>,
    /// The counter of the run's state (seed 001's `revisions`) a move back
    /// from this phase adds one to: `design_revisions` or `task_revisions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_revisions: Option<RevisionCounter>,
    /// Who answers the questions this phase raises (default: the workflow's
    /// `answered_by`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<Answerer>,
    /// This command phase makes the run's commit: baton writes the state's
    /// final form before its commands are handed out (so the commit holds
    /// it and `git status` is clean after the run), and `{run-files}` in its
    /// commands expands to exactly the files the run created or changed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub commits: bool,
    /// What the agent may touch while the phase runs (files, git commands,
    /// further client tools). Default: derived from the kind
    /// ([`PhaseDefinition::effective_scope`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::scope::PhaseScope>,
}

/// Who may answer a question.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Answerer {
    /// A person, through a channel the agent does not control (the
    /// terminal's `baton answer`, the dashboard, MCP elicitation).
    #[default]
    Person,
    /// The agent may answer (`user_response`).
    Agent,
}

impl Answerer {
    /// Whether this is the default (`person`).
    pub fn is_person(&self) -> bool {
        *self == Answerer::Person
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Answerer::Person => "person",
            Answerer::Agent => "agent",
        }
    }
}

/// An agent used instead of the phase's own when `phase` is skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentVariant {
    /// The skipped phase.
    pub phase: String,
    /// The agent to use then.
    pub agent: String,
}

/// How an agent moves a run (see [`WorkflowDefinition::driven_by`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    /// `pipeline_next_action` hands out every action.
    Loop,
    /// The agent reports each phase with `completePhase`.
    #[default]
    Reports,
}

impl Driver {
    /// Whether this is the default, `reports`.
    pub fn is_reports(&self) -> bool {
        *self == Driver::Reports
    }
}

/// A revision counter of the run's state (seed 001's `revisions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RevisionCounter {
    /// `revisions.design_revisions`: the design went back for a revision.
    DesignRevisions,
    /// `revisions.task_revisions`: the task list went back for a revision.
    TaskRevisions,
}

/// How a task-driven phase uses the task registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PerTask {
    /// One implementer per ready task (`impl-N.md`), parallel tasks fanned out.
    Implement,
    /// One reviewer per implemented task (`review-N.md`).
    Review,
}

/// A conditional transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionRule {
    /// The condition on the completed phase's report.
    pub when: Condition,
    /// The phase to go to (or `completed`).
    pub goto: String,
}

/// A condition on a phase report. All given fields must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The reported result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultKind>,
    /// Any of these verdicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdict: Vec<String>,
}

/// The result an agent reports for a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// The phase's work succeeded (tests green, CI passed, …).
    Success,
    /// The phase's work failed (lint errors, CI red, …).
    Failure,
}

/// Where a command phase's commands come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandSource {
    /// Detect the repository's quality commands (lint, type check, unit, e2e).
    Quality,
    /// These commands, run in order (argv, never through a shell). Placeholders
    /// `{workspace}`, `{branch}`, `{spec-name}`, `{title}`, `{pr-body}`,
    /// `{commit-message}` are replaced inside single arguments only; an
    /// argument that is exactly `{run-files}` (in a `commits` phase) becomes
    /// one argument per file the run created or changed.
    Fixed(Vec<CommandStep>),
}

/// One command of a command phase: an argv, or an argv guarded by a check
/// that makes the step idempotent when a run resumes after an interruption.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CommandStep {
    /// Run this argv.
    Run(Vec<String>),
    /// Run `run` unless `skip_if` exits 0 (the step's effect is already
    /// there, e.g. the pull request exists).
    Guarded(GuardedCommand),
}

/// A command with its "already done" check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardedCommand {
    /// The command (argv).
    pub run: Vec<String>,
    /// A check run first (argv): exit code 0 means the step is already
    /// done and is skipped; any other exit code means run `run`.
    pub skip_if: Vec<String>,
}

impl CommandStep {
    /// The command that does the step's work.
    pub fn run(&self) -> &[String] {
        match self {
            CommandStep::Run(argv) => argv,
            CommandStep::Guarded(g) => &g.run,
        }
    }

    /// The "already done" check, if the step has one.
    pub fn skip_if(&self) -> Option<&[String]> {
        match self {
            CommandStep::Run(_) => None,
            CommandStep::Guarded(g) => Some(&g.skip_if),
        }
    }
}

/// The kinds of phase the engine knows how to drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// An agent does work and writes artifacts.
    Agent,
    /// An agent reviews an artifact and gives a verdict.
    Review,
    /// A person reviews and answers proceed, revise or abandon.
    Checkpoint,
    /// A command runs (argv, never a shell string).
    Command,
    /// baton writes a file.
    WriteFile,
    /// The workflow waits for something a person does outside (merge a PR, …).
    HumanGate,
}

impl PhaseKind {
    /// Phases of this kind wait for a person rather than run.
    pub fn waits_for_human(self) -> bool {
        matches!(self, PhaseKind::Checkpoint | PhaseKind::HumanGate)
    }
}

/// Structured instructions for one phase (seed 004 §2.1.2). Files use
/// snake_case keys; the camelCase of the seed is accepted too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseInstruction {
    /// What must hold before the phase starts.
    #[serde(default)]
    pub preconditions: Vec<String>,
    /// What must hold for the phase to be complete.
    #[serde(default, alias = "acceptanceCriteria")]
    pub acceptance_criteria: Vec<String>,
    /// The work to do.
    #[serde(default)]
    pub tasks: Vec<String>,
    /// Free-form extra information for the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<serde_json::Value>,
}

impl WorkflowDefinition {
    /// The phase with `id`.
    pub fn phase(&self, id: &str) -> Option<&PhaseDefinition> {
        self.phases.iter().find(|p| p.id == id)
    }

    /// The position of `id` in the phase order.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.phases.iter().position(|p| p.id == id)
    }

    /// The first phase, if any.
    pub fn first_phase(&self) -> Option<&PhaseDefinition> {
        self.phases.first()
    }

    /// The phases after `id` in order (empty when `id` is unknown or last).
    pub fn phases_after(&self, id: &str) -> &[PhaseDefinition] {
        match self.position(id) {
            Some(i) => &self.phases[i + 1..],
            None => &[],
        }
    }

    /// The phase that follows `id` when no transition applies: its `next`, or
    /// the following phase not in `skipped`, or `completed`.
    pub fn default_successor(&self, id: &str, skipped: &[String]) -> String {
        if let Some(next) = self.phase(id).and_then(|p| p.next.clone()) {
            return next;
        }
        self.phases_after(id)
            .iter()
            .find(|p| !skipped.contains(&p.id))
            .map(|p| p.id.clone())
            .unwrap_or_else(|| crate::COMPLETED.to_string())
    }

    /// Who answers the questions `phase` raises.
    pub fn answerer(&self, phase: &str) -> Answerer {
        self.phase(phase)
            .and_then(|p| p.answered_by)
            .unwrap_or(self.answered_by)
    }

    /// Ids of the phases skipped for a flow template or effort name.
    pub fn skipped_for(&self, template: &str) -> Vec<String> {
        self.phases
            .iter()
            .filter(|p| p.skip_for.iter().any(|t| t == template))
            .map(|p| p.id.clone())
            .collect()
    }
}
