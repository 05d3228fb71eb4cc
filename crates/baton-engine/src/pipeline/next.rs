//! The next action of a pipeline run (seed 001 `pipeline_next_action`),
//! decided from the state, the workflow definition and the workspace files
//! alone. Read-only: the handler applies what the plan implies (start the
//! phase, register tasks, record a question) in one locked write.
//!
//! Every question a run can stop at is answerable: checkpoints, reviews
//! without a verdict, used-up loop limits, failed commands and human gates
//! each list their options, and [`Plan::Ask`] carries what each answer does.

use baton_state::{CommandGuard, DecisionReason, PhaseStatus, WorkspaceState};
use baton_workflow::{
    Answerer, COMPLETED, CommandSource, CommandStep, PerTask, PhaseDefinition, PhaseKind,
    ResultKind, WorkflowDefinition,
};
use schemars::JsonSchema;
use serde::Serialize;

use super::commit::{RepoStatus, RunPaths, stage_plan};
use super::tasks::{next_batch, ordered_keys};
use crate::WorkspaceFiles;
use crate::route::decide;
use crate::summary::phase_label;

/// The stub tasks.md written when the decomposition phase was skipped: the
/// whole design as one sequential task.
pub const SINGLE_TASK_STUB: &str = "# Tasks\n\n## Task 1: Implement\n\nApply all changes described in design.md as a single implementation unit.\n\nmode: sequential\n";

/// The model label when neither the phase nor the workflow names one.
pub const DEFAULT_MODEL: &str = "sonnet";

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

/// Reads the front matter (`---` … `---`) and the first body line of request.md.
pub fn request_meta(text: &str) -> RequestMeta {
    let mut meta = RequestMeta {
        source_type: "text".into(),
        ..RequestMeta::default()
    };
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---")
    {
        for line in rest[..end].lines() {
            if let Some((key, value)) = line.split_once(':') {
                let value = value.trim().to_string();
                match key.trim() {
                    "source_type" if !value.is_empty() => meta.source_type = value,
                    "source_url" => meta.source_url = value,
                    "source_id" => meta.source_id = value,
                    _ => {}
                }
            }
        }
        body = rest[end + 4..].trim_start_matches(['-', '\n']);
    }
    let first = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    meta.title = first.chars().take(72).collect();
    // The URL decides the source, whatever the front matter says (seed 001's
    // patterns); a request without a recognised URL is text.
    meta.source_type = match super::init::classify(&meta.source_url) {
        Ok((kind, _, Some(_))) if !meta.source_url.is_empty() => kind.as_str().to_string(),
        _ => "text".to_string(),
    };
    meta
}

/// The phases the run skips, read from the state at every step: those it
/// recorded, its flow template's (or its effort's), `nopr` when `skipPr` is
/// set, and `no_source` when the request did not come from an issue tracker.
pub fn effective_skips(
    def: &WorkflowDefinition,
    state: &WorkspaceState,
    request: &RequestMeta,
) -> Vec<String> {
    let mut skips = state.skipped_phases.clone();
    let template = state
        .flow_template
        .or_else(|| state.effort.map(baton_state::FlowTemplate::for_effort));
    let mut groups: Vec<&str> = Vec::new();
    if let Some(t) = template {
        groups.push(t.as_str());
    }
    if state.skip_pr {
        groups.push("nopr");
    }
    if request.source_type == "text" {
        groups.push("no_source");
    }
    for group in groups {
        for id in def.skipped_for(group) {
            if !skips.contains(&id) && !state.completed_phases.contains(&id) {
                skips.push(id);
            }
        }
    }
    skips
}

/// The values placeholders in commands and contents are replaced with.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    /// `{workspace}`: the workspace as shown to agents.
    pub workspace: String,
    /// `{branch}`.
    pub branch: String,
    /// `{spec-name}`.
    pub spec_name: String,
    /// `{title}`: the pull request title.
    pub title: String,
    /// `{pr-body}`.
    pub pr_body: String,
    /// `{commit-message}`.
    pub commit_message: String,
}

impl Placeholders {
    /// The values for a run.
    pub fn for_run(state: &WorkspaceState, workspace: &str, request: &RequestMeta) -> Placeholders {
        let kind = state
            .branch
            .as_deref()
            .and_then(|b| b.split_once('/'))
            .map(|(k, _)| k)
            .filter(|k| ["feat", "feature", "fix", "refactor", "docs", "chore"].contains(k))
            .map(|k| if k == "feature" { "feat" } else { k })
            .unwrap_or("feat");
        let subject = if request.title.is_empty() {
            state.spec_name.clone()
        } else {
            request.title.clone()
        };
        let title = format!("{kind}: {subject}");
        let mut pr_body = format!(
            "Pipeline run by baton.\n\nWorkspace: {workspace}\nSpec: {}",
            state.spec_name
        );
        if request.source_type == "github_issue" && !request.source_id.is_empty() {
            pr_body.push_str(&format!("\n\nCloses #{}", request.source_id));
        }
        Placeholders {
            workspace: workspace.to_string(),
            branch: state.branch.clone().unwrap_or_default(),
            spec_name: state.spec_name.clone(),
            commit_message: format!("{title}\n\nbaton pipeline: {}", state.spec_name),
            title,
            pr_body,
        }
    }

    /// Replaces the placeholders in one argument (one pass; the result is
    /// never split, so a value can never become a second argument).
    pub fn render(&self, template: &str) -> String {
        let pairs: [(&str, &str); 6] = [
            ("{workspace}", &self.workspace),
            ("{branch}", &self.branch),
            ("{spec-name}", &self.spec_name),
            ("{title}", &self.title),
            ("{pr-body}", &self.pr_body),
            ("{commit-message}", &self.commit_message),
        ];
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        'scan: while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            for (key, value) in pairs {
                if let Some(after) = tail.strip_prefix(key) {
                    out.push_str(value);
                    rest = after;
                    continue 'scan;
                }
            }
            out.push('{');
            rest = &tail[1..];
        }
        out.push_str(rest);
        out
    }
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

/// Decides the next step of the run.
pub fn plan(input: &PlanInput<'_>, state: &WorkspaceState) -> Result<Plan, PlanError> {
    let mut plan = decide_plan(input, state)?;
    if let Plan::Ask(q) = &mut plan {
        q.answered_by = input.definition.answerer(&q.phase);
    }
    Ok(plan)
}

fn decide_plan(input: &PlanInput<'_>, state: &WorkspaceState) -> Result<Plan, PlanError> {
    let def = input.definition;
    match state.current_phase_status {
        PhaseStatus::Abandoned => {
            return Ok(Plan::Done {
                summary: format!("Pipeline abandoned at {}", state.current_phase),
                abandoned: true,
            });
        }
        PhaseStatus::Completed => return Ok(done(def, state)),
        _ if state.current_phase == COMPLETED => return Ok(done(def, state)),
        _ => {}
    }
    let Some(phase) = def.phase(&state.current_phase) else {
        return Err(PlanError(format!(
            "workflow {:?} has no phase {:?}",
            def.id, state.current_phase
        )));
    };
    let request = input
        .files
        .read("request.md")
        .map(|t| request_meta(&t))
        .unwrap_or_else(|| RequestMeta {
            source_type: "text".into(),
            ..RequestMeta::default()
        });
    if state.current_phase_status != PhaseStatus::AwaitingHuman
        && effective_skips(def, state, &request).contains(&phase.id)
    {
        return Ok(Plan::Skip {
            phase: phase.id.clone(),
        });
    }
    if state.current_phase_status == PhaseStatus::AwaitingHuman {
        if let Some(task) = &state.pending_human_gate {
            return Ok(Plan::Ask(task_gate(phase, state, task)));
        }
        if let Some(decision) = state
            .pending_decision
            .as_ref()
            .filter(|d| d.phase == phase.id)
        {
            return Ok(Plan::Ask(decision_question(
                input,
                state,
                phase,
                decision.reason,
                &decision.detail,
            )));
        }
    }
    if state.current_phase_status == PhaseStatus::Failed && phase.kind == PhaseKind::Command {
        return Ok(Plan::Ask(command_failed(phase, state)));
    }
    match phase.kind {
        PhaseKind::Checkpoint if phase.posts_to_source => {
            Ok(Plan::Ask(post_to_source(input, phase)))
        }
        PhaseKind::Checkpoint => Ok(Plan::Ask(checkpoint(input, state, phase))),
        PhaseKind::HumanGate => Ok(Plan::Ask(Question {
            phase: phase.id.clone(),
            name: phase.id.clone(),
            message:
                format!(
                    "## {}\n\n{}\n\nChoose `done` when it is done, `skip` to go on without it, or `abandon`.",
                    phase.label,
                    phase
                        .instruction
                        .as_ref()
                        .map(|i| i.tasks.join("\n"))
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(
                            || "This step is done by a person outside the pipeline.".into()
                        )
                ),
            options: options(&["done", "skip", "abandon"]),
            kind: QuestionKind::PhaseGate,
            answered_by: Answerer::Person,
        })),
        PhaseKind::Command => command(input, state, phase),
        PhaseKind::WriteFile => {
            let file = phase.artifacts.first().cloned().unwrap_or_default();
            let vars = placeholders(input, state);
            Ok(Plan::WriteFile {
                phase: phase.id.clone(),
                file,
                content: vars.render(phase.content.as_deref().unwrap_or("")),
            })
        }
        PhaseKind::Agent | PhaseKind::Review => match phase.per_task {
            Some(PerTask::Implement) => implement(input, state, phase),
            Some(PerTask::Review) => Ok(review_tasks(input, state, phase)),
            None => Ok(Plan::Spawn(single(input, state, phase))),
        },
    }
}

fn options(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn done(def: &WorkflowDefinition, state: &WorkspaceState) -> Plan {
    let ran = state
        .completed_phases
        .iter()
        .filter(|p| def.phase(p).is_some())
        .count();
    let skipped = state.skipped_phases.len();
    Plan::Done {
        summary: format!("Pipeline completed: {ran} phases, {skipped} skipped"),
        abandoned: false,
    }
}

fn model(def: &WorkflowDefinition, phase: &PhaseDefinition) -> String {
    phase
        .model
        .clone()
        .or_else(|| def.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_string())
}

fn agent(state: &WorkspaceState, phase: &PhaseDefinition) -> String {
    if let Some(variant) = &phase.agent_when_skipped
        && state.skipped_phases.contains(&variant.phase)
    {
        return variant.agent.clone();
    }
    phase.agent.clone().unwrap_or_else(|| phase.id.clone())
}

fn existing(files: &dyn WorkspaceFiles, names: &[String], except: Option<&str>) -> Vec<String> {
    names
        .iter()
        .filter(|f| Some(f.as_str()) != except && files.file(f).is_some())
        .cloned()
        .collect()
}

fn placeholders(input: &PlanInput<'_>, state: &WorkspaceState) -> Placeholders {
    let meta = input
        .files
        .read("request.md")
        .map(|t| request_meta(&t))
        .unwrap_or_default();
    Placeholders::for_run(state, input.workspace, &meta)
}

fn single(input: &PlanInput<'_>, state: &WorkspaceState, phase: &PhaseDefinition) -> Spawn {
    let output = phase.artifacts.first().cloned();
    let revising =
        crate::route::visits(state, &phase.id) > 1 || state.completed_phases.contains(&phase.id);
    let summary = if revising {
        format!(
            "Revise: {} (see the review and feedback inputs).",
            phase.label
        )
    } else {
        format!("Run {}.", phase.label)
    };
    Spawn {
        phase: phase.id.clone(),
        agent: agent(state, phase),
        model: model(input.definition, phase),
        inputs: existing(input.files, &phase.inputs, output.as_deref()),
        output,
        task: None,
        parallel: Vec::new(),
        summary,
    }
}

fn implement(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Result<Plan, PlanError> {
    if state.tasks.is_empty() {
        if input.files.file("tasks.md").is_some() {
            return Ok(Plan::RegisterTasks {
                phase: phase.id.clone(),
            });
        }
        let decomposer_skipped = input
            .definition
            .phases
            .iter()
            .filter(|p| p.artifacts.iter().any(|a| a == "tasks.md"))
            .all(|p| state.skipped_phases.contains(&p.id));
        if decomposer_skipped {
            return Ok(Plan::WriteFile {
                phase: phase.id.clone(),
                file: "tasks.md".into(),
                content: SINGLE_TASK_STUB.into(),
            });
        }
        return Err(PlanError(format!(
            "{} needs tasks.md, which does not exist; the task decomposition must run first",
            phase.id
        )));
    }
    // A task counts as implemented only with its impl-N.md on disk: a task
    // recorded as done whose file is gone is implemented again.
    let tasks = implemented_on_disk(state, input.files);
    let batch = next_batch(&tasks);
    let Some(first) = batch.first() else {
        let stuck: Vec<String> = ordered_keys(&tasks)
            .into_iter()
            .filter(|k| tasks[k].impl_status != "completed")
            .collect();
        if !stuck.is_empty() {
            return Ok(Plan::Ask(stuck_tasks(input, state, phase, &tasks, stuck)));
        }
        return Ok(Plan::CompletePhase {
            phase: phase.id.clone(),
        });
    };
    let state = &WorkspaceState {
        tasks,
        ..state.clone()
    };
    if state.tasks[first].execution_mode == "human_gate" {
        return Ok(Plan::Ask(task_gate(phase, state, first)));
    }
    let retry_inputs = |key: &str| -> Vec<String> {
        let review = format!("review-{key}.md");
        let failed = state.tasks[key].review_status == "completed_fail";
        if failed && input.files.file(&review).is_some() {
            vec![review]
        } else {
            Vec::new()
        }
    };
    let base = existing(input.files, &phase.inputs, None);
    let model = model(input.definition, phase);
    if batch.len() == 1 {
        let mut inputs = base;
        inputs.extend(retry_inputs(first));
        let retry = state.tasks[first].review_status == "completed_fail";
        return Ok(Plan::Spawn(Spawn {
            phase: phase.id.clone(),
            agent: agent(state, phase),
            model,
            inputs,
            output: Some(format!("impl-{first}.md")),
            task: Some(first.clone()),
            parallel: Vec::new(),
            summary: if retry {
                format!("Retry implementation for task {first} after review failure.")
            } else {
                format!("Implement task {first}.")
            },
        }));
    }
    Ok(Plan::Spawn(Spawn {
        phase: phase.id.clone(),
        agent: agent(state, phase),
        model,
        inputs: base,
        output: None,
        task: None,
        parallel: batch
            .iter()
            .map(|k| ParallelTask {
                id: k.clone(),
                input_files: retry_inputs(k),
                output_file: format!("impl-{k}.md"),
            })
            .collect(),
        summary: format!("Implement tasks {} in parallel.", batch.join(", ")),
    }))
}

/// The task registry with every non-gate task whose `impl-N.md` is missing
/// or empty reset to not implemented.
pub fn implemented_on_disk(
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> std::collections::BTreeMap<String, baton_state::Task> {
    let mut tasks = state.tasks.clone();
    for (key, task) in tasks.iter_mut() {
        if task.execution_mode != "human_gate"
            && task.impl_status == "completed"
            && task.review_status != "skipped_by_human"
            && !files.is_nonempty_file(&format!("impl-{key}.md"))
        {
            task.impl_status = "pending".into();
        }
    }
    tasks
}

/// Why a task can never become ready, if it cannot: a dependency that does
/// not exist, or one that cannot finish itself.
pub fn blocked_reason(
    tasks: &std::collections::BTreeMap<String, baton_state::Task>,
    key: &str,
) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![key.to_string()];
    while let Some(k) = stack.pop() {
        if !seen.insert(k.clone()) {
            continue;
        }
        let task = tasks.get(&k)?;
        for d in task.depends_on.iter().flatten() {
            let d = d.to_string();
            match tasks.get(&d) {
                None => {
                    return Some(if k == key {
                        format!("it depends on task {d}, which does not exist")
                    } else {
                        format!(
                            "it waits for task {k}, which depends on task {d}, which does not exist"
                        )
                    });
                }
                Some(dep) if dep.impl_status != "completed" => stack.push(d),
                Some(_) => {}
            }
        }
    }
    None
}

fn stuck_tasks(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
    tasks: &std::collections::BTreeMap<String, baton_state::Task>,
    stuck: Vec<String>,
) -> Question {
    let mut message = format!(
        "## {} — tasks that can never start\n\nThese tasks are not implemented and can never become ready:\n",
        phase.label
    );
    for k in &stuck {
        let why = blocked_reason(tasks, k)
            .unwrap_or_else(|| "its dependencies cannot finish".to_string());
        let title = tasks.get(k).map(|t| t.title.as_str()).unwrap_or("");
        message.push_str(&format!("- Task {k} ({title}): {why}\n"));
    }
    // Revising means sending the task list back to its author.
    let author = input
        .definition
        .phases
        .iter()
        .find(|p| {
            p.artifacts.iter().any(|a| a == "tasks.md") && !state.skipped_phases.contains(&p.id)
        })
        .map(|p| p.id.clone());
    let mut opts = vec!["skip"];
    if author.is_some() {
        opts.push("revise");
    }
    opts.push("abandon");
    message.push_str(&format!(
        "\nAnswer `skip` to go on without them{}, or `abandon`.",
        if author.is_some() {
            ", `revise: <what to change>` to send the task list back"
        } else {
            ""
        }
    ));
    Question {
        phase: phase.id.clone(),
        name: format!("{}-stuck-tasks", phase.id),
        message,
        options: options(&opts),
        kind: QuestionKind::StuckTasks { tasks: stuck },
        answered_by: Answerer::Person,
    }
}

/// Tasks implemented by an agent whose review has not passed.
pub fn tasks_to_review(state: &WorkspaceState) -> Vec<String> {
    ordered_keys(&state.tasks)
        .into_iter()
        .filter(|k| {
            let t = &state.tasks[k];
            t.impl_status == "completed"
                && t.execution_mode != "human_gate"
                && !matches!(
                    t.review_status.as_str(),
                    "completed_pass" | "completed_pass_with_notes" | "accepted_by_human"
                )
        })
        .collect()
}

/// The task registry with every review recorded as passed whose
/// `review-N.md` is missing or does not pass reset to not reviewed.
pub fn reviewed_on_disk(
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) -> std::collections::BTreeMap<String, baton_state::Task> {
    use super::verdict::{Verdict, parse_review};
    let mut tasks = state.tasks.clone();
    for (key, task) in tasks.iter_mut() {
        if matches!(
            task.review_status.as_str(),
            "completed_pass" | "completed_pass_with_notes"
        ) {
            let passing = files
                .read(&format!("review-{key}.md"))
                .and_then(|t| parse_review(&t, &Verdict::IMPL_REVIEW).verdict)
                .is_some_and(Verdict::is_positive);
            if !passing {
                task.review_status = String::new();
            }
        }
    }
    tasks
}

fn review_tasks(input: &PlanInput<'_>, state: &WorkspaceState, phase: &PhaseDefinition) -> Plan {
    let state = &WorkspaceState {
        tasks: reviewed_on_disk(state, input.files),
        ..state.clone()
    };
    let keys = tasks_to_review(state);
    let base = existing(input.files, &phase.inputs, None);
    let model = model(input.definition, phase);
    match keys.as_slice() {
        [] => Plan::CompletePhase {
            phase: phase.id.clone(),
        },
        [key] => {
            let mut inputs = vec![format!("impl-{key}.md")];
            inputs.extend(base);
            Plan::Spawn(Spawn {
                phase: phase.id.clone(),
                agent: agent(state, phase),
                model,
                inputs,
                output: Some(format!("review-{key}.md")),
                task: Some(key.clone()),
                parallel: Vec::new(),
                summary: format!("Review implementation for task {key}."),
            })
        }
        _ => Plan::Spawn(Spawn {
            phase: phase.id.clone(),
            agent: agent(state, phase),
            model,
            inputs: base,
            output: None,
            task: None,
            parallel: keys
                .iter()
                .map(|k| ParallelTask {
                    id: k.clone(),
                    input_files: vec![format!("impl-{k}.md")],
                    output_file: format!("review-{k}.md"),
                })
                .collect(),
            summary: format!("Review tasks {} in parallel.", keys.join(", ")),
        }),
    }
}

fn task_gate(phase: &PhaseDefinition, state: &WorkspaceState, task: &str) -> Question {
    let title = state
        .tasks
        .get(task)
        .map(|t| t.title.clone())
        .unwrap_or_default();
    Question {
        phase: phase.id.clone(),
        name: format!("task-{task}"),
        message: format!(
            "Task {task} requires human action: {title}\n\nDo it outside the pipeline, then choose `done`; `skip` marks it without action; `abandon` stops the run."
        ),
        options: options(&["done", "skip", "abandon"]),
        kind: QuestionKind::TaskGate {
            task: task.to_string(),
        },
        answered_by: Answerer::Person,
    }
}

fn file_list(input: &PlanInput<'_>, names: &[String]) -> String {
    let present = existing(input.files, names, None);
    if present.is_empty() {
        return String::new();
    }
    let mut out = String::from("Files to review:\n");
    for f in present {
        out.push_str(&format!("- {}/{f}\n", input.workspace));
    }
    out
}

fn can_revise(input: &PlanInput<'_>, state: &WorkspaceState, phase: &PhaseDefinition) -> bool {
    phase
        .transitions
        .iter()
        .any(|t| t.when.result == Some(ResultKind::Failure))
        && decide(
            input.definition,
            state,
            &phase.id,
            ResultKind::Failure,
            None,
        )
        .is_ok()
}

fn checkpoint(input: &PlanInput<'_>, state: &WorkspaceState, phase: &PhaseDefinition) -> Question {
    let def = input.definition;
    let next = def.default_successor(&phase.id, &state.skipped_phases);
    let revise = can_revise(input, state, phase);
    let mut message = format!("## {}\n\n", phase.label);
    message.push_str(&file_list(input, &phase.inputs));
    message.push_str(&format!(
        "\nNext: {}.\n\nAnswer `proceed`{}, or `abandon`.",
        phase_label(def, &next),
        if revise {
            ", `revise: <what to change>`"
        } else {
            ""
        }
    ));
    let mut opts = vec!["proceed"];
    if revise {
        opts.push("revise");
    }
    opts.push("abandon");
    Question {
        phase: phase.id.clone(),
        name: phase.id.clone(),
        message,
        options: options(&opts),
        kind: QuestionKind::Checkpoint,
        answered_by: Answerer::Person,
    }
}

fn post_to_source(input: &PlanInput<'_>, phase: &PhaseDefinition) -> Question {
    let meta = input
        .files
        .read("request.md")
        .map(|t| request_meta(&t))
        .unwrap_or_default();
    let target = match meta.source_type.as_str() {
        "github_issue" => "GitHub issue",
        "jira_issue" => "Jira issue",
        "linear_issue" => "Linear issue",
        _ => "source",
    };
    Question {
        phase: phase.id.clone(),
        name: phase.id.clone(),
        message: format!(
            "Pipeline complete. Post the final summary as a comment to the {target}?\n\nURL: {}\nSummary file: {}/summary.md",
            meta.source_url, input.workspace
        ),
        options: options(&["post", "skip"]),
        kind: QuestionKind::PostToSource,
        answered_by: Answerer::Person,
    }
}

/// How to post the summary to the run's source (seed 001 `post_method`):
/// an argv for GitHub, an MCP tool for Linear, an instruction for Jira.
pub fn post_method(meta: &RequestMeta, workspace: &str) -> serde_json::Value {
    let summary = format!("{workspace}/summary.md");
    match meta.source_type.as_str() {
        "github_issue" => serde_json::json!({
            "command": ["gh", "issue", "comment", meta.source_url, "--body-file", summary],
            "body_source": summary,
        }),
        "linear_issue" => serde_json::json!({
            "mcp_tool": "mcp__linear__save_comment",
            "mcp_params": {"issueId": meta.source_id},
            "body_source": summary,
        }),
        _ => serde_json::json!({
            "body_source": summary,
            "instruction": format!(
                "Post the contents of {summary} as a comment to {}. Use the Atlassian MCP tools if available, or the Jira REST API.",
                meta.source_url
            ),
        }),
    }
}

fn decision_question(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
    reason: DecisionReason,
    detail: &str,
) -> Question {
    let (name, heading, opts): (String, &str, Vec<&str>) = match reason {
        DecisionReason::NoVerdict => {
            let revise = revise_verdict(phase).is_some_and(|v| {
                decide(
                    input.definition,
                    state,
                    &phase.id,
                    ResultKind::Success,
                    Some(v),
                )
                .is_ok()
            });
            let mut o = vec!["approve"];
            if revise {
                o.push("revise");
            }
            o.push("abandon");
            (
                format!("{}-unknown-verdict", phase.id),
                "The review gave no clear verdict.",
                o,
            )
        }
        DecisionReason::RetryLimit => (
            format!("{}-retry-limit", phase.id),
            "The revision limit is reached.",
            vec!["approve", "abandon"],
        ),
    };
    let mut message = format!("## {} — a person must decide\n\n{heading}", phase.label);
    // The report's detail repeats the heading's first words for the log
    // ("no clear verdict (why)"); the question shows only the why.
    let detail = match reason {
        DecisionReason::NoVerdict => detail
            .strip_prefix("no clear verdict (")
            .and_then(|d| d.strip_suffix(')'))
            .unwrap_or(detail),
        _ => detail,
    };
    if !detail.is_empty() {
        message.push_str(&format!(" Why: {}.", detail.trim_end_matches('.')));
    }
    message.push_str("\n\n");
    let mut shown = phase.artifacts.clone();
    shown.extend(phase.inputs.iter().cloned());
    if phase.per_task == Some(PerTask::Review) {
        shown.extend(
            tasks_to_review(state)
                .iter()
                .map(|k| format!("review-{k}.md")),
        );
    }
    message.push_str(&file_list(input, &shown));
    message.push_str(&format!(
        "\nAnswer {}.",
        opts.iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Question {
        phase: phase.id.clone(),
        name,
        message,
        options: options(&opts),
        kind: QuestionKind::Decision(reason),
        answered_by: Answerer::Person,
    }
}

/// The verdict of a review phase that sends work back (its first transition
/// on a verdict), if any.
pub fn revise_verdict(phase: &PhaseDefinition) -> Option<&str> {
    phase
        .transitions
        .iter()
        .find_map(|t| t.when.verdict.first())
        .map(String::as_str)
}

fn command_failed(phase: &PhaseDefinition, state: &WorkspaceState) -> Question {
    let why = state
        .error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default();
    Question {
        phase: phase.id.clone(),
        name: format!("{}-failed", phase.id),
        message: format!(
            "## {} failed\n\n{why}\n\nFix the cause and answer `retry` (the failed command runs again), `skip` to go on without this step, or `abandon`.",
            phase.label
        ),
        options: options(&["retry", "skip", "abandon"]),
        kind: QuestionKind::CommandFailed,
        answered_by: Answerer::Person,
    }
}

/// The argument that expands to the run's files in a `commits` phase.
pub const RUN_FILES: &str = "{run-files}";

fn run_files(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Result<Option<super::commit::StagePlan>, PlanError> {
    if !phase.commits {
        return Err(PlanError(format!(
            "{} uses {RUN_FILES} but is not a `commits` phase",
            phase.id
        )));
    }
    let Some(status) = input.repo else {
        return Ok(None);
    };
    let specs_dir = input
        .workspace
        .rsplit_once('/')
        .map(|(dir, _)| dir)
        .unwrap_or("");
    Ok(Some(stage_plan(
        state,
        status,
        RunPaths {
            specs_dir,
            workspace: input.workspace,
        },
    )))
}

fn secret_files(input: &PlanInput<'_>, phase: &PhaseDefinition, files: Vec<String>) -> Question {
    let mut message = format!(
        "## {} — files that look like secrets\n\nThe run changed these files, which look like secrets (keys, environment or credential files):\n",
        phase.label
    );
    for f in &files {
        message.push_str(&format!("- {f}\n"));
    }
    message.push_str(&format!(
        "\nThey are not committed unless you say so. Answer `exclude` to leave them out of the commit, `include` to commit them, or `abandon`. (Workspace: {})",
        input.workspace
    ));
    Question {
        phase: phase.id.clone(),
        name: format!("{}-secret-files", phase.id),
        message,
        options: options(&["exclude", "include", "abandon"]),
        kind: QuestionKind::SecretFiles { files },
        answered_by: Answerer::Person,
    }
}

fn command(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Result<Plan, PlanError> {
    let commands: &[CommandStep] = match &phase.commands {
        Some(CommandSource::Fixed(list)) => list,
        _ => &[],
    };
    let step = state.command_step as usize;
    let Some(command) = commands.get(step) else {
        return Ok(Plan::CompletePhase {
            phase: phase.id.clone(),
        });
    };
    // A guarded step checks first, and checks again when the command was
    // handed out but never reported (a resume): its work may be done.
    let (argv, check) = match command.skip_if() {
        Some(probe) if state.command_guard != CommandGuard::Run => (probe, true),
        _ => (command.run(), false),
    };
    let vars = placeholders(input, state);
    let mut rendered = Vec::with_capacity(argv.len());
    for arg in argv {
        if arg == RUN_FILES {
            let Some(files) = run_files(input, state, phase)? else {
                return Ok(Plan::ReadRepo {
                    phase: phase.id.clone(),
                });
            };
            if !files.undecided_secrets.is_empty() {
                return Ok(Plan::Ask(secret_files(
                    input,
                    phase,
                    files.undecided_secrets,
                )));
            }
            if files.stage.is_empty() {
                return Ok(Plan::SkipStep {
                    phase: phase.id.clone(),
                });
            }
            rendered.extend(files.stage);
        } else {
            rendered.push(vars.render(arg));
        }
    }
    let argv = rendered;
    if argv.first().is_none_or(|a| a.is_empty()) {
        return Err(PlanError(format!(
            "{} command {} is empty",
            phase.id,
            step + 1
        )));
    }
    Ok(Plan::Exec {
        phase: phase.id.clone(),
        argv,
        check,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::tasks::parse_tasks;
    use baton_state::{Lifecycle, PendingDecision};
    use baton_workflow::Registry;
    use std::collections::BTreeMap;

    fn t() -> baton_state::Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn forge() -> std::sync::Arc<WorkflowDefinition> {
        Registry::builtin().get("forge").unwrap()
    }

    fn state(template: &str, nopr: bool) -> WorkspaceState {
        let def = forge();
        let mut s = WorkspaceState::fresh("forge", "phase-1", "fix-auth", "x", "t", t());
        let mut skips = def.skipped_for(template);
        if nopr {
            skips.extend(def.skipped_for("nopr"));
        }
        skips.extend(def.skipped_for("no_source"));
        Lifecycle::new(&def, t())
            .apply_skips(&mut s, &skips)
            .unwrap();
        s
    }

    fn files(entries: &[&str]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|f| (f.to_string(), format!("# {f}\n\n## Section\n")))
            .collect()
    }

    fn plan_for(s: &WorkspaceState, f: &BTreeMap<String, String>) -> Plan {
        let def = forge();
        plan(
            &PlanInput {
                definition: &def,
                files: f,
                workspace: ".specs/20260101-fix-auth",
                repo: None,
            },
            s,
        )
        .unwrap()
    }

    #[test]
    fn the_first_phase_uses_the_combined_agent_when_investigation_is_skipped() {
        let f = files(&["request.md"]);
        let Plan::Spawn(light) = plan_for(&state("light", true), &f) else {
            panic!()
        };
        assert_eq!(light.agent, "situation-analyst-investigator");
        assert_eq!(light.inputs, ["request.md"]);
        assert_eq!(light.output.as_deref(), Some("analysis.md"));
        assert_eq!(light.model, "sonnet");
        let Plan::Spawn(full) = plan_for(&state("full", true), &f) else {
            panic!()
        };
        assert_eq!(full.agent, "situation-analyst");
    }

    #[test]
    fn inputs_are_the_listed_files_that_exist() {
        let mut s = state("standard", true);
        s.current_phase = "phase-3".into();
        let Plan::Spawn(first) = plan_for(&s, &files(&["request.md", "analysis.md"])) else {
            panic!()
        };
        assert_eq!(first.inputs, ["request.md", "analysis.md"]);
        let Plan::Spawn(again) = plan_for(
            &s,
            &files(&[
                "request.md",
                "analysis.md",
                "investigation.md",
                "review-design.md",
                "design.md",
            ]),
        ) else {
            panic!()
        };
        assert_eq!(
            again.inputs,
            [
                "request.md",
                "analysis.md",
                "investigation.md",
                "review-design.md"
            ]
        );
    }

    #[test]
    fn implementation_registers_tasks_then_fans_out_by_the_dag() {
        let mut s = state("full", true);
        s.current_phase = "phase-5".into();
        let tasks_md = "## Task 1: A\nmode: sequential\n\n## Task 2: B\nmode: parallel\ndepends_on: [1]\n\n## Task 3: C\nmode: parallel\ndepends_on: [1]\n\n## Task 4: Merge PR\nmode: human_gate\ndepends_on: [2, 3]\n";
        let mut f = files(&["tasks.md", "design.md"]);
        f.insert("tasks.md".into(), tasks_md.into());
        assert_eq!(
            plan_for(&s, &f),
            Plan::RegisterTasks {
                phase: "phase-5".into()
            }
        );
        s.tasks = parse_tasks(tasks_md).unwrap().0;
        let Plan::Spawn(one) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(one.task.as_deref(), Some("1"));
        assert_eq!(one.output.as_deref(), Some("impl-1.md"));
        s.tasks.get_mut("1").unwrap().impl_status = "completed".into();
        // Recorded as done without its impl-1.md: implemented again.
        let Plan::Spawn(again) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(again.task.as_deref(), Some("1"));
        f.insert("impl-1.md".into(), "done".into());
        let Plan::Spawn(fan) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(fan.output, None);
        let ids: Vec<_> = fan.parallel.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["2", "3"]);
        assert_eq!(fan.parallel[1].output_file, "impl-3.md");
        for k in ["2", "3"] {
            s.tasks.get_mut(k).unwrap().impl_status = "completed".into();
            f.insert(format!("impl-{k}.md"), "done".into());
        }
        let Plan::Ask(gate) = plan_for(&s, &f) else {
            panic!()
        };
        assert!(gate.is_gate());
        assert_eq!(gate.name, "task-4");
        assert_eq!(gate.options, ["done", "skip", "abandon"]);
        s.tasks.get_mut("4").unwrap().impl_status = "completed".into();
        assert_eq!(
            plan_for(&s, &f),
            Plan::CompletePhase {
                phase: "phase-5".into()
            }
        );
    }

    #[test]
    fn the_light_template_writes_a_single_task_stub() {
        let mut s = state("light", true);
        s.current_phase = "phase-5".into();
        assert_eq!(
            plan_for(&s, &files(&["design.md"])),
            Plan::WriteFile {
                phase: "phase-5".into(),
                file: "tasks.md".into(),
                content: SINGLE_TASK_STUB.into()
            }
        );
        assert!(parse_tasks(SINGLE_TASK_STUB).is_ok());
    }

    #[test]
    fn reviews_fan_out_per_implemented_task_and_retries_read_the_failed_review() {
        let mut s = state("full", true);
        s.current_phase = "phase-6".into();
        s.tasks = parse_tasks("## Task 1: A\n## Task 2: B\n## Task 3: C\nmode: human_gate\n")
            .unwrap()
            .0;
        for t in s.tasks.values_mut() {
            t.impl_status = "completed".into();
        }
        let f = files(&["tasks.md", "impl-1.md", "impl-2.md", "review-1.md"]);
        let Plan::Spawn(fan) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(
            fan.parallel,
            [
                ParallelTask {
                    id: "1".into(),
                    input_files: vec!["impl-1.md".into()],
                    output_file: "review-1.md".into()
                },
                ParallelTask {
                    id: "2".into(),
                    input_files: vec!["impl-2.md".into()],
                    output_file: "review-2.md".into()
                }
            ]
        );
        // Task 1 failed its review: back in phase-5 it is retried with the review.
        s.current_phase = "phase-5".into();
        let t1 = s.tasks.get_mut("1").unwrap();
        t1.impl_status = "pending".into();
        t1.review_status = "completed_fail".into();
        let Plan::Spawn(retry) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(retry.task.as_deref(), Some("1"));
        assert!(retry.inputs.contains(&"review-1.md".to_string()));
        assert!(retry.summary.starts_with("Retry implementation for task 1"));
    }

    #[test]
    fn checkpoints_offer_revise_only_while_the_loop_has_visits_left() {
        let mut s = state("standard", true);
        s.current_phase = "checkpoint-a".into();
        let f = files(&["design.md", "review-design.md"]);
        let Plan::Ask(q) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(q.options, ["proceed", "revise", "abandon"]);
        assert!(
            q.message
                .contains("- .specs/20260101-fix-auth/review-design.md")
        );
        assert!(q.message.contains("Next: Task Decomposition."));
        for _ in 0..6 {
            s.history.push(baton_state::HistoryEntry {
                at: t(),
                phase: "phase-3".into(),
                action: baton_state::HistoryAction::Start,
                detail: None,
                by: None,
            });
        }
        let Plan::Ask(q) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(q.options, ["proceed", "abandon"]);
    }

    #[test]
    fn review_phases_waiting_for_a_person_are_answerable() {
        let mut s = state("standard", true);
        s.current_phase = "phase-3b".into();
        s.current_phase_status = PhaseStatus::AwaitingHuman;
        s.pending_decision = Some(PendingDecision {
            phase: "phase-3b".into(),
            reason: DecisionReason::NoVerdict,
            detail: "no clear verdict (review-design.md: no verdict line found)".into(),
        });
        let Plan::Ask(q) = plan_for(&s, &files(&["design.md", "review-design.md"])) else {
            panic!()
        };
        assert_eq!(q.name, "phase-3b-unknown-verdict");
        // The reason is said once, then why.
        assert!(
            q.message.contains(
                "The review gave no clear verdict. Why: review-design.md: no verdict line found.\n"
            ),
            "{}",
            q.message
        );
        assert_eq!(q.message.matches("no clear verdict").count(), 1);
        assert_eq!(q.options, ["approve", "revise", "abandon"]);
        s.pending_decision.as_mut().unwrap().reason = DecisionReason::RetryLimit;
        let Plan::Ask(q) = plan_for(&s, &files(&[])) else {
            panic!()
        };
        assert_eq!(q.name, "phase-3b-retry-limit");
        assert_eq!(q.options, ["approve", "abandon"]);
    }

    #[test]
    fn commands_are_argv_with_placeholders_inside_single_arguments() {
        let mut s = state("full", false);
        s.branch = Some("fix/auth-timeout".into());
        s.current_phase = "pr-creation".into();
        let mut f = files(&[]);
        f.insert(
            "request.md".into(),
            "---\nsource_type: github_issue\nsource_url: https://github.com/o/r/issues/42\nsource_id: 42\n---\n\n# Fix the auth timeout; rm -rf / $(reboot)\n".into(),
        );
        assert_eq!(
            plan_for(&s, &f),
            Plan::Exec {
                phase: "pr-creation".into(),
                argv: vec![
                    "git".into(),
                    "push".into(),
                    "-u".into(),
                    "origin".into(),
                    "HEAD".into()
                ],
                check: false,
            }
        );
        // The PR step is guarded: first the "already done" check…
        s.command_step = 1;
        assert_eq!(
            plan_for(&s, &f),
            Plan::Exec {
                phase: "pr-creation".into(),
                argv: vec![
                    "gh".into(),
                    "pr".into(),
                    "view".into(),
                    "--json".into(),
                    "url".into()
                ],
                check: true,
            }
        );
        // …then, when it said "not done", the command itself.
        s.command_guard = CommandGuard::Run;
        let Plan::Exec { argv, check, .. } = plan_for(&s, &f) else {
            panic!()
        };
        assert!(!check);
        assert_eq!(argv.len(), 7);
        assert_eq!(argv[4], "fix: Fix the auth timeout; rm -rf / $(reboot)");
        assert!(argv[6].ends_with("Closes #42"));
        // Handed out but not reported (an interrupted run): check again.
        s.command_guard = CommandGuard::Running;
        let Plan::Exec { check, .. } = plan_for(&s, &f) else {
            panic!()
        };
        assert!(check);
        s.command_guard = CommandGuard::Check;
        s.command_step = 2;
        assert_eq!(
            plan_for(&s, &f),
            Plan::CompletePhase {
                phase: "pr-creation".into()
            }
        );
        s.command_step = 0;
        s.current_phase_status = PhaseStatus::Failed;
        let Plan::Ask(q) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(q.kind, QuestionKind::CommandFailed);
        assert_eq!(q.options, ["retry", "skip", "abandon"]);
    }

    #[test]
    fn post_to_source_names_the_tracker_and_how_to_post() {
        let meta = request_meta(
            "---\nsource_type: linear_issue\nsource_url: https://linear.app/o/issue/ENG-7\nsource_id: ENG-7\n---\n\nTitle\n",
        );
        assert_eq!(meta.source_id, "ENG-7");
        assert_eq!(meta.title, "Title");
        let m = post_method(&meta, ".specs/x");
        assert_eq!(m["mcp_tool"], "mcp__linear__save_comment");
        assert_eq!(m["mcp_params"]["issueId"], "ENG-7");
        let gh = request_meta(
            "---\nsource_type: github_issue\nsource_url: https://github.com/o/r/issues/1\nsource_id: 1\n---\nT\n",
        );
        assert_eq!(post_method(&gh, ".specs/x")["command"][0], "gh");
    }

    #[test]
    fn finished_and_abandoned_runs_are_done() {
        let mut s = state("light", true);
        s.current_phase_status = PhaseStatus::Abandoned;
        assert_eq!(
            plan_for(&s, &files(&[])),
            Plan::Done {
                summary: "Pipeline abandoned at phase-1".into(),
                abandoned: true
            }
        );
        s.current_phase = COMPLETED.into();
        s.current_phase_status = PhaseStatus::Completed;
        let Plan::Done { abandoned, .. } = plan_for(&s, &files(&[])) else {
            panic!()
        };
        assert!(!abandoned);
    }

    #[test]
    fn the_url_decides_the_source_whatever_the_front_matter_says() {
        let m = request_meta(
            "---\nsource_type: text\nsource_url: https://github.com/o/r/issues/42\nsource_id: 42\n---\nFix it\n",
        );
        assert_eq!(m.source_type, "github_issue");
        let m = request_meta("---\nsource_type: jira_issue\n---\nFix it\n");
        assert_eq!(m.source_type, "text", "no URL: a text request");
        let m = request_meta("no front matter\n");
        assert_eq!(m.source_type, "text");
    }

    #[test]
    fn skips_are_read_from_the_state_at_every_step() {
        let def = forge();
        let text = request_meta("---\nsource_type: text\n---\nx\n");
        let issue = request_meta("---\nsource_url: https://github.com/o/r/issues/1\n---\nx\n");
        let mut s = WorkspaceState::fresh("forge", "phase-1", "x", "x", "t", t());
        s.effort = Some(baton_state::Effort::M);
        let skips = effective_skips(&def, &s, &text);
        for p in ["phase-4b", "checkpoint-b", "post-to-source"] {
            assert!(skips.contains(&p.to_string()), "{p}: {skips:?}");
        }
        assert!(!skips.contains(&"pr-creation".to_string()));
        assert!(!effective_skips(&def, &s, &issue).contains(&"post-to-source".to_string()));
        s.skip_pr = true;
        let skips = effective_skips(&def, &s, &issue);
        assert!(
            skips.contains(&"pr-creation".to_string()) && skips.contains(&"final-push".to_string())
        );
        // A run resting on a skipped phase skips it (no start, no agent).
        s.current_phase = "pr-creation".into();
        assert_eq!(
            plan_for(&s, &files(&["request.md"])),
            Plan::Skip {
                phase: "pr-creation".into()
            }
        );
    }

    #[test]
    fn a_task_that_can_never_start_is_a_question_with_its_reason() {
        let mut s = state("full", true);
        s.current_phase = "phase-5".into();
        s.current_phase_status = PhaseStatus::InProgress;
        s.tasks = parse_tasks("## Task 1: A\nmode: sequential\n").unwrap().0;
        s.tasks.insert(
            "4".into(),
            baton_state::Task {
                title: "Docs".into(),
                execution_mode: "sequential".into(),
                depends_on: Some(vec![9]),
                impl_status: "pending".into(),
                ..Default::default()
            },
        );
        s.tasks.get_mut("1").unwrap().impl_status = "completed".into();
        let mut f = files(&["tasks.md", "design.md"]);
        f.insert("impl-1.md".into(), "done".into());
        let Plan::Ask(q) = plan_for(&s, &f) else {
            panic!()
        };
        assert_eq!(
            q.kind,
            QuestionKind::StuckTasks {
                tasks: vec!["4".into()]
            }
        );
        assert!(
            q.message
                .contains("depends on task 9, which does not exist"),
            "{}",
            q.message
        );
        assert_eq!(q.answered_by, Answerer::Person);
        assert_eq!(blocked_reason(&s.tasks, "1"), None);
    }

    #[test]
    fn the_commit_stage_needs_the_repository_and_asks_about_secrets() {
        let def = forge();
        let mut s = state("light", true);
        s.current_phase = "final-commit".into();
        s.current_phase_status = PhaseStatus::InProgress;
        s.repo_baseline = Some(baton_state::RepoBaseline::default());
        let f = files(&["request.md"]);
        let plan_with = |s: &WorkspaceState, repo: Option<&RepoStatus>| {
            plan(
                &PlanInput {
                    definition: &def,
                    files: &f,
                    workspace: ".specs/20260101-fix-auth",
                    repo,
                },
                s,
            )
            .unwrap()
        };
        assert_eq!(
            plan_with(&s, None),
            Plan::ReadRepo {
                phase: "final-commit".into()
            }
        );
        let none = RepoStatus::default();
        assert_eq!(
            plan_with(&s, Some(&none)),
            Plan::SkipStep {
                phase: "final-commit".into()
            },
            "nothing to stage: the add step is skipped"
        );
        let some = RepoStatus {
            changed: vec!["src/a.rs".into(), "secrets.env".into()],
        };
        let Plan::Ask(q) = plan_with(&s, Some(&some)) else {
            panic!()
        };
        assert_eq!(
            q.kind,
            QuestionKind::SecretFiles {
                files: vec!["secrets.env".into()]
            }
        );
        s.commit_excluded = vec!["secrets.env".into()];
        let Plan::Exec { argv, .. } = plan_with(&s, Some(&some)) else {
            panic!()
        };
        assert_eq!(argv, ["git", "add", "--", "src/a.rs"]);
    }
}
