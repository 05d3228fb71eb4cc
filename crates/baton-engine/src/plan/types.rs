//! The planner's vocabulary: what it reads besides the state
//! ([`PlanInput`]), what it decides ([`Plan`]: an agent to spawn, a command,
//! a file to write, a question for a person, an internal step, the end), and
//! why it cannot decide ([`PlanError`]).

use baton_state::DecisionReason;
use baton_workflow::{Answerer, WorkflowDefinition};
use schemars::JsonSchema;
use serde::Serialize;

use super::commit::RepoStatus;
use crate::WorkspaceFiles;

/// One agent of a fan-out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
pub struct ParallelTask {
    /// The task key.
    pub id: String,
    /// Extra inputs for this task, relative to the workspace.
    pub input_files: Vec<String>,
    /// The file this task's agent writes, relative to the workspace.
    pub output_file: String,
}

/// An agent to spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn {
    /// The phase the agent works for.
    pub phase: String,
    /// The agent instruction file.
    pub agent: String,
    /// The model label.
    pub model: String,
    /// Files to read, relative to the workspace.
    pub inputs: Vec<String>,
    /// The file to write (none for a fan-out: each task has its own).
    pub output: Option<String>,
    /// The task of a single per-task agent.
    pub task: Option<String>,
    /// One entry per concurrent agent (empty unless fanned out).
    pub parallel: Vec<ParallelTask>,
    /// A one-line description (the prompt's fallback).
    pub summary: String,
}

/// What kind of question a [`Question`] is, which decides what its answers do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionKind {
    /// A checkpoint phase: proceed, revise (back along its failure
    /// transition), abandon.
    Checkpoint,
    /// The post-to-source checkpoint: post or skip.
    PostToSource,
    /// A review phase stopped for a person.
    Decision(DecisionReason),
    /// A command of a command phase failed: retry, skip, abandon.
    CommandFailed,
    /// A task that a person does: done, skip, abandon.
    TaskGate {
        /// The task key.
        task: String,
    },
    /// A human-gate phase: done, skip, abandon.
    PhaseGate,
    /// Tasks that can never become ready (a dependency that does not exist
    /// or cannot finish): skip them, send the task list back, or abandon.
    StuckTasks {
        /// The task keys.
        tasks: Vec<String>,
    },
    /// Files of the run's commit that look like secrets: include, exclude,
    /// or abandon.
    SecretFiles {
        /// The files.
        files: Vec<String>,
    },
}

/// A question for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The phase that waits.
    pub phase: String,
    /// The question's name (the checkpoint or gate id shown to people).
    pub name: String,
    /// Markdown for the person.
    pub message: String,
    /// The answers accepted (lower case).
    pub options: Vec<String>,
    /// What kind of question.
    pub kind: QuestionKind,
    /// Who may answer it (the phase's `answered_by`, default `person`).
    pub answered_by: Answerer,
}

impl Question {
    /// Whether the question is a human gate (`human_gate` action) rather than a checkpoint.
    pub fn is_gate(&self) -> bool {
        matches!(
            self.kind,
            QuestionKind::TaskGate { .. } | QuestionKind::PhaseGate
        )
    }
}

/// The next step of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Spawn one agent, or several concurrently.
    Spawn(Spawn),
    /// Run one command (argv; never a shell string).
    Exec {
        /// The phase.
        phase: String,
        /// The argv.
        argv: Vec<String>,
        /// Whether this is a step's "already done" check (`skip_if`): exit
        /// code 0 skips the step, any other code runs its command next; a
        /// non-zero exit is no failure.
        check: bool,
    },
    /// Write a file (relative to the workspace) — a setup step of the phase.
    WriteFile {
        /// The phase.
        phase: String,
        /// The file, relative to the workspace.
        file: String,
        /// Its content.
        content: String,
    },
    /// Ask a person.
    Ask(Question),
    /// Internal: register the tasks of tasks.md, then plan again.
    RegisterTasks {
        /// The phase that needs them.
        phase: String,
    },
    /// Internal: the phase's per-task work is all done; complete it, then
    /// plan again.
    CompletePhase {
        /// The phase.
        phase: String,
    },
    /// Internal: the run rests on a phase its template or flags skip (a
    /// state written by hand or by another tool); skip it without events,
    /// then plan again.
    Skip {
        /// The phase.
        phase: String,
    },
    /// Internal: the current command step has nothing to do (its
    /// `{run-files}` list is empty); move to the next step, then plan again.
    SkipStep {
        /// The phase.
        phase: String,
    },
    /// Internal: the next step needs the repository's status
    /// ([`PlanInput::repo`]); read it, then plan again.
    ReadRepo {
        /// The phase.
        phase: String,
    },
    /// The run is over.
    Done {
        /// One line.
        summary: String,
        /// It was abandoned rather than completed.
        abandoned: bool,
    },
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError(pub String);

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlanError {}

/// What `request.md` says about where the run came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestMeta {
    /// `text`, `github_issue`, `jira_issue`, `linear_issue`.
    pub source_type: String,
    /// The issue URL.
    pub source_url: String,
    /// The issue id (`42`, `PROJ-7`).
    pub source_id: String,
    /// The first line of the body, without heading marks (at most 72 characters).
    pub title: String,
}

/// Everything the planner reads besides the state.
pub struct PlanInput<'a> {
    /// The workflow.
    pub definition: &'a WorkflowDefinition,
    /// The workspace's files.
    pub files: &'a dyn WorkspaceFiles,
    /// The workspace as shown to people and agents (e.g. `.specs/20260401-x`).
    pub workspace: &'a str,
    /// What changed in the repository (`git status`), read by the caller for
    /// a `commits` phase; `None` elsewhere or outside a git repository.
    pub repo: Option<&'a RepoStatus>,
}
