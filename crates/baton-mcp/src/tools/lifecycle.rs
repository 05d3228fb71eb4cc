//! The `lifecycle` group: create a workspace and move its phases (seed 003
//! "path 2", the standalone tools). Every call is one locked load-modify-write;
//! events are published only after the write succeeded.

use std::path::PathBuf;

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use baton_engine::guards;
use baton_engine::summary::next_step;
use baton_engine::{FileInfo, WorkspaceFiles};
use baton_events::{EventKind, EventRecord};
use baton_state::{Effort, FlowTemplate, Lifecycle, Transition, WorkspaceRef, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use super::{ToolSpec, input_schema, output_schema};
use crate::args::{check_text, parse};
use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

/// Longest phase id accepted.
const MAX_PHASE: usize = 64;
/// Longest failure message or abandon reason accepted.
const MAX_MESSAGE: usize = 4096;
/// Longest spec name accepted before slugging.
const MAX_SPEC_NAME: usize = 200;
/// Longest slug kept.
const MAX_SLUG: usize = 60;
/// Longest workspace argument accepted.
const MAX_WORKSPACE: usize = 1024;

/// Arguments of `init`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitArgs {
    /// Short name of the work, e.g. "fix auth timeout". It is turned into a
    /// slug (lower-case ASCII, hyphens) and becomes part of the folder name.
    pub spec_name: String,
    /// Id of the workflow to run (default "forge").
    #[serde(default)]
    pub workflow: Option<String>,
    /// Folder name under the specs root. Default: "YYYYMMDD-<slug>".
    #[serde(default)]
    pub workspace: Option<String>,
    /// Effort S, M or L. Phases the workflow skips for that effort (or its
    /// flow template light/standard/full) are skipped from the start.
    #[serde(default)]
    pub effort: Option<Effort>,
}

/// Arguments naming a workspace and a phase.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseArgs {
    /// The workspace: its folder name ("20260401-fix-auth"), ".specs/<name>", or its absolute path.
    pub workspace: String,
    /// The phase id. It must be the workspace's current phase.
    pub phase: String,
}

/// Arguments of `phase_fail`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailArgs {
    /// The workspace: its folder name, ".specs/<name>", or its absolute path.
    pub workspace: String,
    /// The phase id. It must be the current phase and in progress.
    pub phase: String,
    /// Why the phase failed (kept in state.json as `error.message`).
    #[serde(default)]
    pub message: Option<String>,
}

/// Arguments of `abandon`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbandonArgs {
    /// The workspace: its folder name, ".specs/<name>", or its absolute path.
    pub workspace: String,
    /// Why the work is abandoned.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Reply of `init`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitReply {
    /// The new workspace, relative to the repository root.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// Spec name (slug).
    pub spec_name: String,
    /// The first phase to run.
    pub current_phase: String,
    /// Its status (`pending`).
    pub current_phase_status: String,
    /// Phases skipped for the effort.
    pub skipped_phases: Vec<String>,
    /// Flow template chosen by the effort.
    pub flow_template: Option<String>,
    /// Absolute path of state.json.
    pub state_file: String,
    /// What to call next.
    pub next_step: String,
}

/// Reply of every phase transition tool.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleReply {
    /// The workspace.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// The phase the workflow is at now (`completed` at the end).
    pub current_phase: String,
    /// Its status.
    pub current_phase_status: String,
    /// What happened, in order.
    pub transitions: Vec<Transition>,
    /// Events published, in order.
    pub events: Vec<String>,
    /// What to call next.
    pub next_step: String,
}

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "init",
            group: "lifecycle",
            description: "Create a workspace folder (.specs/YYYYMMDD-<slug>/) with a fresh state.json for a workflow (default \"forge\"). Returns the workspace to pass to every other call and the first phase.",
            input_schema: input_schema::<InitArgs>,
            output_schema: output_schema::<InitReply>,
            read_only: false,
            destructive: false,
            handler: init,
        },
        ToolSpec {
            name: "phase_start",
            group: "lifecycle",
            description: "Start the current phase (pending or failed -> in_progress). Name the phase explicitly; it must be the current one. Checkpoint phases are not started: call checkpoint instead.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: phase_start,
        },
        ToolSpec {
            name: "phase_complete",
            group: "lifecycle",
            description: "Complete the current phase and move to the next one. Refused unless the phase was started (or presented as a checkpoint), its artifacts exist in the workspace, and no revision is pending.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: phase_complete,
        },
        ToolSpec {
            name: "phase_fail",
            group: "lifecycle",
            description: "Mark the current, in-progress phase as failed with a message. The phase can be started again after the cause is fixed.",
            input_schema: input_schema::<FailArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: phase_fail,
        },
        ToolSpec {
            name: "checkpoint",
            group: "lifecycle",
            description: "Put the current phase in front of a person (status awaiting_human). Complete it with phase_complete once the person approves, or abandon.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: checkpoint,
        },
        ToolSpec {
            name: "skip_phase",
            group: "lifecycle",
            description: "Skip the current phase without running it (only when pending or failed) and move to the next one.",
            input_schema: input_schema::<PhaseArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: false,
            handler: skip_phase,
        },
        ToolSpec {
            name: "abandon",
            group: "lifecycle",
            description: "Abandon the workflow. Final: every later change to this workspace is refused.",
            input_schema: input_schema::<AbandonArgs>,
            output_schema: output_schema::<LifecycleReply>,
            read_only: false,
            destructive: true,
            handler: abandon,
        },
    ]
}

fn init(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: InitArgs = parse(arguments)?;
    check_text("spec_name", &args.spec_name, MAX_SPEC_NAME)?;
    let slug = slugify(&args.spec_name, MAX_SLUG);
    if slug.is_empty() {
        return Err(ToolError::invalid(
            "spec_name",
            "spec_name must contain ASCII letters or digits",
        ));
    }
    let workflow_id = args.workflow.as_deref().unwrap_or("forge");
    let definition = ctx
        .workflow(workflow_id)
        .map_err(|e| e.with_details(serde_json::json!({ "field": "workflow" })))?;
    let now = Utc::now();
    let folder = match &args.workspace {
        Some(w) => {
            check_text("workspace", w, MAX_WORKSPACE)?;
            w.clone()
        }
        None => format!("{}-{slug}", now.format("%Y%m%d")),
    };
    let ws = ctx.store.resolve(&folder)?;
    let Some(first) = definition.first_phase() else {
        return Err(ToolError::new(
            ErrorCode::Internal,
            format!("workflow {workflow_id:?} has no phases"),
        ));
    };
    let mut state = WorkspaceState::fresh(
        &definition.id,
        &first.id,
        &slug,
        &ws.display,
        ctx.version,
        now,
    );
    let mut transitions = Vec::new();
    if let Some(effort) = args.effort {
        let template = FlowTemplate::for_effort(effort);
        state.effort = Some(effort);
        state.flow_template = Some(template);
        let mut skips = definition.skipped_for(template.as_str());
        for id in definition.skipped_for(&format!("{effort:?}")) {
            if !skips.contains(&id) {
                skips.push(id);
            }
        }
        transitions = Lifecycle::new(&definition, now).apply_skips(&mut state, &skips)?;
    }
    ctx.store.create(&ws, &state)?;

    let mut events = vec![
        ctx.event(EventKind::PipelineInit, baton_workflow::SETUP, &ws, &state)
            .with_detail(match state.effort {
                Some(e) => format!("workflow={} effort={e:?}", definition.id),
                None => format!("workflow={}", definition.id),
            }),
    ];
    events.extend(events_for(ctx, &ws, &state, &transitions));
    ctx.publish(events);

    to_value(&InitReply {
        workspace: ws.display.clone(),
        workflow: definition.id.clone(),
        spec_name: state.spec_name.clone(),
        current_phase: state.current_phase.clone(),
        current_phase_status: state.current_phase_status.as_str().to_string(),
        skipped_phases: state.skipped_phases.clone(),
        flow_template: state.flow_template.map(|t| t.as_str().to_string()),
        state_file: ws.state_file().display().to_string(),
        next_step: next_step(&state, &definition),
    })
}

fn phase_start(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: PhaseArgs = parse(arguments)?;
    check_phase(&args.phase)?;
    transition(ctx, &args.workspace, |lc, def, state, _| {
        guards::check_start(state, def, &args.phase)?;
        Ok(lc.start(state, &args.phase)?)
    })
}

fn phase_complete(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: PhaseArgs = parse(arguments)?;
    check_phase(&args.phase)?;
    transition(ctx, &args.workspace, |lc, def, state, files| {
        // The lifecycle's own checks (current phase, status) come first so the
        // agent hears about the real problem before artifact details.
        let mut probe = state.clone();
        lc.complete(&mut probe, &args.phase)?;
        guards::check_complete(state, def, &args.phase, files)?;
        Ok(lc.complete(state, &args.phase)?)
    })
}

fn phase_fail(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: FailArgs = parse(arguments)?;
    check_phase(&args.phase)?;
    let message = args.message.unwrap_or_else(|| "failed".to_string());
    check_text("message", &message, MAX_MESSAGE)?;
    transition(ctx, &args.workspace, |lc, _, state, _| {
        Ok(lc.fail(state, &args.phase, &message)?)
    })
}

fn checkpoint(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: PhaseArgs = parse(arguments)?;
    check_phase(&args.phase)?;
    transition(ctx, &args.workspace, |lc, _, state, _| {
        Ok(lc.checkpoint(state, &args.phase)?)
    })
}

fn skip_phase(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: PhaseArgs = parse(arguments)?;
    check_phase(&args.phase)?;
    transition(ctx, &args.workspace, |lc, _, state, _| {
        Ok(lc.skip(state, &args.phase)?)
    })
}

fn abandon(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: AbandonArgs = parse(arguments)?;
    if let Some(reason) = &args.reason {
        check_text("reason", reason, MAX_MESSAGE)?;
    }
    transition(ctx, &args.workspace, |lc, _, state, _| {
        Ok(lc.abandon(state, args.reason.as_deref())?)
    })
}

fn check_phase(phase: &str) -> Result<(), ToolError> {
    check_text("phase", phase, MAX_PHASE)
}

/// One locked load → change → write, then the events, then the reply.
fn transition(
    ctx: &AppContext,
    workspace: &str,
    change: impl FnOnce(
        &Lifecycle<'_>,
        &WorkflowDefinition,
        &mut WorkspaceState,
        &dyn WorkspaceFiles,
    ) -> Result<Vec<Transition>, ToolError>,
) -> Result<Value, ToolError> {
    check_text("workspace", workspace, MAX_WORKSPACE)?;
    let ws = ctx.store.resolve(workspace)?;
    let files = DiskFiles {
        dir: ws.dir.clone(),
    };
    let now = Utc::now();
    let mut definition = None;
    let updated = ctx
        .store
        .update(&ws, now, |state| -> Result<_, ToolError> {
            let def = ctx.workflow(&state.workflow)?;
            let transitions = change(&Lifecycle::new(&def, now), &def, state, &files)?;
            definition = Some(def);
            Ok(transitions)
        })?;
    let events = events_for(ctx, &ws, &updated.state, &updated.value);
    let names = events
        .iter()
        .map(|e| e.event.as_str().to_string())
        .collect();
    ctx.publish(events);
    let next = match &definition {
        Some(def) => next_step(&updated.state, def),
        None => String::new(),
    };
    to_value(&LifecycleReply {
        workspace: ws.display.clone(),
        workflow: updated.state.workflow.clone(),
        current_phase: updated.state.current_phase.clone(),
        current_phase_status: updated.state.current_phase_status.as_str().to_string(),
        transitions: updated.value,
        events: names,
        next_step: next,
    })
}

/// Seed 003's event for each transition. Skips publish nothing.
pub fn events_for(
    ctx: &AppContext,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    transitions: &[Transition],
) -> Vec<EventRecord> {
    transitions
        .iter()
        .filter_map(|t| match t {
            Transition::PhaseStarted { phase } => {
                Some(ctx.event(EventKind::PhaseStart, phase, ws, state))
            }
            Transition::PhaseCompleted { phase } => {
                Some(ctx.event(EventKind::PhaseComplete, phase, ws, state))
            }
            Transition::PhaseSkipped { .. } => None,
            Transition::PhaseFailed { phase, message } => Some(
                ctx.event(EventKind::PhaseFail, phase, ws, state)
                    .with_detail(message),
            ),
            Transition::CheckpointReached { phase } => {
                Some(ctx.event(EventKind::Checkpoint, phase, ws, state))
            }
            Transition::Abandoned { phase } => {
                Some(ctx.event(EventKind::Abandon, phase, ws, state))
            }
            Transition::WorkflowCompleted { last_phase } => {
                Some(ctx.event(EventKind::PipelineComplete, last_phase, ws, state))
            }
        })
        .collect()
}

/// The real workspace folder, read-only, for the engine's guards.
pub struct DiskFiles {
    /// The workspace folder.
    pub dir: PathBuf,
}

impl WorkspaceFiles for DiskFiles {
    fn file(&self, relative: &str) -> Option<FileInfo> {
        let path = self.dir.join(relative);
        // Artifacts are relative paths without `..` (checked when the
        // definition is loaded); a symlink leading out is not an artifact.
        let meta = std::fs::symlink_metadata(&path).ok()?;
        meta.is_file().then(|| FileInfo {
            len: meta.len(),
            modified: meta.modified().ok().map(chrono::DateTime::<Utc>::from),
        })
    }

    fn read(&self, relative: &str) -> Option<String> {
        /// Artifacts larger than this are not read (a runaway file is not a review).
        const MAX_ARTIFACT_BYTES: u64 = 4 * 1024 * 1024;
        let info = self.file(relative)?;
        if info.len > MAX_ARTIFACT_BYTES {
            return None;
        }
        std::fs::read_to_string(self.dir.join(relative)).ok()
    }
}

/// Lower-case ASCII letters and digits joined by single hyphens, cut at a hyphen before `max`.
pub fn slugify(text: &str, max: usize) -> String {
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.len() <= max {
        return slug.to_string();
    }
    let cut = &slug[..max];
    match cut.rfind('-') {
        Some(i) if i > 0 => cut[..i].to_string(),
        _ => cut.to_string(),
    }
}

fn to_value<T: Serialize>(reply: &T) -> Result<Value, ToolError> {
    serde_json::to_value(reply).map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::slugify;

    #[test]
    fn slugs_are_ascii_hyphenated_and_bounded() {
        assert_eq!(slugify("Fix Auth  Timeout!", 60), "fix-auth-timeout");
        assert_eq!(slugify("  --x--  ", 60), "x");
        assert_eq!(slugify("日本語", 60), "");
        assert_eq!(slugify("aaa bbb ccc", 9), "aaa-bbb");
        assert_eq!(slugify("$(rm -rf /); echo", 60), "rm-rf-echo");
    }
}
