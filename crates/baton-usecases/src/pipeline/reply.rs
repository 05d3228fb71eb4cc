//! Reply shaping for the pipeline loop: a step's plan becomes the typed
//! action the agent executes — the spawned agent's 4-layer prompt (with
//! Layer 4 from the run history and a person's revision text), the command,
//! the file, the question with how a person answers it, the end — with the
//! line shown to the person and the embedded report's result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use baton_engine::completion::verdict::Verdict;
use baton_engine::pipeline::prompt::{PromptParts, assemble};
use baton_engine::plan::{Plan, Question, QuestionKind, Spawn, post_method, request_meta};
use baton_engine::summary::phase_label;
use baton_state::{WorkspaceRef, WorkspaceState};
use baton_workflow::{Answerer, WorkflowDefinition};

use super::action::{
    Action, Done, EmbeddedReport, Exec, Question as AskAction, SpawnAgent, WriteFile,
};
use super::step::answers::how_to_answer;
use super::step::report::Outcome;
use super::step::run::Stepped;
use crate::error::{Error, ErrorCode, Result};
use crate::files::DiskFiles;
use crate::services::Services;

/// The seed's `report_result` object embedded in a next-action reply.
pub(crate) fn embedded(outcome: &Outcome) -> EmbeddedReport {
    EmbeddedReport {
        next_action_hint: outcome.hint.to_string(),
        verdict_parsed: outcome
            .verdict
            .map(Verdict::as_str)
            .unwrap_or("")
            .to_string(),
        findings: outcome.findings.clone(),
        warning: outcome.warnings.join("; "),
        display_message: String::new(),
    }
}

/// The `checkpoint` / `human_gate` action of a question.
pub(crate) fn question_action(ws: &WorkspaceRef, files: &DiskFiles, q: &Question) -> AskAction {
    use baton_engine::WorkspaceFiles;
    let post_method = (q.kind == QuestionKind::PostToSource).then(|| {
        let meta = files
            .read("request.md")
            .map(|t| request_meta(&t))
            .unwrap_or_default();
        post_method(&meta, &ws.display)
    });
    let person = q.answered_by == Answerer::Person;
    AskAction {
        phase: q.phase.clone(),
        name: q.name.clone(),
        present_to_user: q.message.clone(),
        options: q.options.clone(),
        answered_by: q.answered_by.as_str().to_string(),
        how_to_answer: person.then(|| how_to_answer(&ws.display, &q.options)),
        post_method,
    }
}

fn display_label(def: &WorkflowDefinition, phase: &str) -> String {
    let label = phase_label(def, phase);
    match phase.strip_prefix("phase-") {
        Some(n) => format!("Phase {n} — {label}"),
        None => label,
    }
}

/// The `spawn_agent` action: the 4-layer prompt, the fan-out, and a
/// person's revision text for the phase it was given for. On a thread that
/// must not wait (a server's protocol thread) it fails instead, having
/// changed nothing, when the prompt would wait for the run history's load
/// or search the project's manuals (which may index them first).
pub(crate) fn spawn_action(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    files: &DiskFiles,
    spawn: &Spawn,
) -> std::result::Result<SpawnAgent, crate::git::Refused> {
    if baton_state::fs::waiting_refused_here()
        && (!svc.history.ready() || super::manual_refs::would_search(svc, files))
        && baton_state::fs::refuse_to_wait()
    {
        return Err(crate::git::Refused);
    }
    let override_dir = svc.config.repo_root.join(".baton/agents");
    let body = baton_workflow::agents::agent(&spawn.agent, Some(&override_dir))
        .map(|a| a.body)
        .unwrap_or_else(|| format!("# {}\n\n{}\n", spawn.agent, spawn.summary));
    let profile = svc.repo_profile.get(&svc.config.repo_root);
    let learning = crate::history::layer4(svc, ws, files, &spawn.agent);
    let manual_refs = super::manual_refs::manual_references(svc, files);
    let mut prompt = assemble(&PromptParts {
        agent_body: &body,
        workspace: &ws.display,
        branch: state.branch.as_deref(),
        spec_name: &state.spec_name,
        task: spawn.task.as_deref(),
        input_files: &spawn.inputs,
        output_file: spawn.output.as_deref(),
        profile: &profile,
        learning: &learning,
        manual_refs: &manual_refs,
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
    Ok(SpawnAgent {
        agent: spawn.agent.clone(),
        prompt,
        model: spawn.model.clone(),
        phase: spawn.phase.clone(),
        input_files: spawn.inputs.clone(),
        output_file: spawn.output.clone().unwrap_or_default(),
        parallel_task_ids: parallel.then(|| spawn.parallel.iter().map(|p| p.id.clone()).collect()),
        parallel_tasks: parallel.then(|| spawn.parallel.clone()),
    })
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
    /// Extension: this action's id; send it back as `previous_action_id`
    /// with its report. Empty for `done` (nothing to report).
    pub action_id: String,
    /// The current phase after this call.
    pub current_phase: String,
    /// Its status.
    pub current_phase_status: String,
}

/// The reply of `pipeline_next_action` for what a step decided.
pub(crate) fn shape(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    files: &DiskFiles,
    stepped: &Stepped,
) -> Result<NextReply> {
    use baton_engine::WorkspaceFiles;
    let def = svc.run_definition(state)?;
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
                Action::SpawnAgent(spawn_action(svc, ws, state, files, spawn)?),
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
            let display = format!(
                "⏸ {}  ·  waiting for a person ({})",
                q.name,
                q.options.join(" / ")
            );
            let question = question_action(ws, files, q);
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
        Plan::RegisterTasks { .. }
        | Plan::CompletePhase { .. }
        | Plan::Skip { .. }
        | Plan::SkipStep { .. }
        | Plan::ReadRepo { .. } => {
            return Err(Error::new(
                ErrorCode::Internal,
                "an internal step reached the reply",
            ));
        }
    };
    let mut warnings = stepped.warnings.clone();
    if let Some(r) = &stepped.report {
        warnings.extend(r.warnings.iter().cloned());
    }
    Ok(NextReply {
        action,
        warning: warnings.join("; "),
        display_message: stepped
            .notes
            .iter()
            .map(String::as_str)
            .chain([display.as_str()])
            .collect::<Vec<_>>()
            .join("\n"),
        report_result: stepped.report.as_ref().map(embedded),
        action_id: stepped.action_id.clone(),
        current_phase: state.current_phase.clone(),
        current_phase_status: state.current_phase_status.as_str().to_string(),
    })
}
