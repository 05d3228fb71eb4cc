//! The `lifecycle` group: create a workspace and move its phases (seed 003
//! "path 2", the standalone tools). Every call is one locked load-modify-write;
//! events are published only after the write succeeded.

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use baton_engine::WorkspaceFiles;
use baton_engine::completion::guards;
use baton_engine::summary::next_step;
use baton_events::EventKind;
use baton_state::{Effort, FlowTemplate, Lifecycle, Transition, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use crate::events::Happened;
use crate::files::DiskFiles;
use crate::validate::{check_text, slugify};
use crate::{Error, ErrorCode, Result, Services};

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
    /// Short name of the work ("fix auth timeout"); slugged into the folder name.
    pub spec_name: String,
    /// Id of the workflow to run (default "forge").
    #[serde(default)]
    pub workflow: Option<String>,
    /// Folder name under the specs root. Default: "YYYYMMDD-<slug>".
    #[serde(default)]
    pub workspace: Option<String>,
    /// Skips what the workflow skips for this effort.
    #[serde(default)]
    pub effort: Option<Effort>,
}

/// Arguments of a recovery tool: a workspace, its current phase, and the
/// explicit `force` with a reason that every recovery step needs.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseArgs {
    /// Folder name, .specs/<name> or absolute path.
    pub workspace: String,
    /// The current phase's id.
    pub phase: String,
    /// Must be true (a recovery step a person takes).
    #[serde(default)]
    pub force: bool,
    /// Why (recorded).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Arguments of `phase_fail`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailArgs {
    /// Folder name, .specs/<name> or absolute path.
    pub workspace: String,
    /// The current phase's id.
    pub phase: String,
    /// Why the phase failed (kept in state.json as `error.message`).
    #[serde(default)]
    pub message: Option<String>,
    /// Must be true (a recovery step a person takes).
    #[serde(default)]
    pub force: bool,
    /// Why (recorded).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Arguments of `abandon`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbandonArgs {
    /// Folder name, .specs/<name> or absolute path.
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

/// `init`.
pub fn init(svc: &Services, args: InitArgs) -> Result<InitReply> {
    check_text("spec_name", &args.spec_name, MAX_SPEC_NAME)?;
    let slug = slugify(&args.spec_name, MAX_SLUG);
    if slug.is_empty() {
        return Err(Error::invalid(
            "spec_name",
            "spec_name must contain ASCII letters or digits",
        ));
    }
    let workflow_id = args.workflow.as_deref().unwrap_or("forge");
    let definition = svc
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
    let ws = svc.store.resolve(&folder)?;
    let Some(first) = definition.first_phase() else {
        return Err(Error::new(
            ErrorCode::Internal,
            format!("workflow {workflow_id:?} has no phases"),
        ));
    };
    let mut state = WorkspaceState::fresh(
        &definition.id,
        &first.id,
        &slug,
        &ws.display,
        svc.version,
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
    svc.store.create(&ws, &state)?;

    let mut happened = vec![Happened::Event(
        EventKind::PipelineInit,
        baton_workflow::SETUP.to_string(),
        Some(match state.effort {
            Some(e) => format!("workflow={} effort={e:?}", definition.id),
            None => format!("workflow={}", definition.id),
        }),
        None,
    )];
    happened.extend(transitions.into_iter().map(Happened::Transition));
    svc.after_write(&ws, &state, happened);

    Ok(InitReply {
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

/// `phase_start` (recovery): pending/failed → in_progress, with the
/// start guards.
pub fn phase_start(svc: &Services, args: PhaseArgs) -> Result<LifecycleReply> {
    check_phase(&args.phase)?;
    let forced = Forced::new("phase_start", args.force, args.reason.as_deref());
    transition(
        svc,
        &args.workspace,
        Some(&forced),
        |lc, def, state, files| {
            guards::check_start(state, def, &args.phase)?;
            // A phase the run skips (its template, its flags) is never started.
            let request =
                baton_engine::plan::request_meta(&files.read("request.md").unwrap_or_default());
            if baton_engine::plan::effective_skips(def, state, &request).contains(&args.phase) {
                return Err(Error::from(
                    baton_engine::completion::guards::GuardViolation {
                        rule: "phase_skipped",
                        message: format!(
                            "{} is skipped by this run (its effort, its flags or its source); it is not started",
                            args.phase
                        ),
                    },
                ));
            }
            Ok(lc.start(state, &args.phase)?)
        },
    )
}

/// `phase_complete` (recovery): completes the current phase through the
/// same gatekeeper as every other path; a question for a person is never
/// completed here.
pub fn phase_complete(svc: &Services, args: PhaseArgs) -> Result<LifecycleReply> {
    check_phase(&args.phase)?;
    let forced = Forced::new("phase_complete", args.force, args.reason.as_deref());
    transition(
        svc,
        &args.workspace,
        Some(&forced),
        |lc, def, state, files| {
            // A person's question is theirs to answer, whatever its status.
            if def
                .phase(&args.phase)
                .is_some_and(|p| p.kind.waits_for_human())
            {
                baton_engine::completion::check_completion(def, state, &args.phase, files)?;
            }
            // The lifecycle's own checks (current phase, status) come first so
            // the caller hears about the real problem before evidence details.
            let mut probe = state.clone();
            lc.complete(&mut probe, &args.phase)?;
            baton_engine::completion::check_completion(def, state, &args.phase, files)?;
            guards::check_complete(state, def, &args.phase, files)?;
            let transitions = lc.complete(state, &args.phase)?;
            if let Some(p) = def.phase(&args.phase) {
                baton_engine::completion::freshness::mark(state, files, &p.artifacts);
            }
            Ok(transitions)
        },
    )
}

/// `phase_fail` (recovery): in_progress → failed with a message.
pub fn phase_fail(svc: &Services, args: FailArgs) -> Result<LifecycleReply> {
    check_phase(&args.phase)?;
    let forced = Forced::new("phase_fail", args.force, args.reason.as_deref());
    let message = args.message.unwrap_or_else(|| "failed".to_string());
    check_text("message", &message, MAX_MESSAGE)?;
    transition(
        svc,
        &args.workspace,
        Some(&forced),
        |lc, def, state, files| {
            let transitions = lc.fail(state, &args.phase, &message)?;
            if let Some(p) = def.phase(&args.phase) {
                baton_engine::completion::freshness::mark(state, files, &p.artifacts);
            }
            Ok(transitions)
        },
    )
}

/// `checkpoint` (recovery): puts the current phase in front of a person.
pub fn checkpoint(svc: &Services, args: PhaseArgs) -> Result<LifecycleReply> {
    check_phase(&args.phase)?;
    let forced = Forced::new("checkpoint", args.force, args.reason.as_deref());
    transition(svc, &args.workspace, Some(&forced), |lc, _, state, _| {
        Ok(lc.checkpoint(state, &args.phase)?)
    })
}

/// `skip_phase` (recovery): skips a pending or failed phase that has no
/// evidence to give — a command or file-writing step. A phase with
/// artifacts, verdicts or per-task work, or a question for a person, is
/// never skipped by a tool: that would be a way around its gate.
pub fn skip_phase(svc: &Services, args: PhaseArgs) -> Result<LifecycleReply> {
    check_phase(&args.phase)?;
    let forced = Forced::new("skip_phase", args.force, args.reason.as_deref());
    transition(svc, &args.workspace, Some(&forced), |lc, def, state, _| {
        // The lifecycle's own checks (current phase, status) come first.
        lc.skip(&mut state.clone(), &args.phase)?;
        if let Some(p) = def.phase(&args.phase)
            && (p.kind.waits_for_human()
                || !p.artifacts.is_empty()
                || !p.verdicts.is_empty()
                || p.per_task.is_some())
        {
            return Err(Error::from(
                baton_engine::completion::guards::GuardViolation {
                    rule: "gated_phase",
                    message: format!(
                        "{} has a gate (artifacts, a verdict, per-task work or a person's answer) and is not skipped by a tool; do its work, or let a person decide at its question",
                        args.phase
                    ),
                },
            ));
        }
        Ok(lc.skip(state, &args.phase)?)
    })
}

/// A recovery step's explicit consent: `force` and a reason, checked after
/// the workspace and its state were read (so a wrong path or a corrupt file
/// is reported as such first).
struct Forced {
    tool: &'static str,
    force: bool,
    reason: String,
    label: String,
}

impl Forced {
    fn new(tool: &'static str, force: bool, reason: Option<&str>) -> Forced {
        let reason = reason.map(str::trim).unwrap_or("").to_string();
        Forced {
            tool,
            force,
            label: format!("forced ({reason})"),
            reason,
        }
    }

    /// The refusal that explains what to call instead, if consent is missing.
    fn check(&self) -> Result<()> {
        let tool = self.tool;
        if !self.force {
            return Err(Error::from(
                baton_engine::completion::guards::GuardViolation {
                    rule: "recovery_only",
                    message: format!(
                        "{tool} is a recovery tool for a person, not a step of the workflow: to move a run on, call pipeline_next_action (seed pipeline) or completePhase (issue and other workflows). To repair a run by hand, call {tool} again with force: true and a reason."
                    ),
                },
            ));
        }
        if self.reason.is_empty() {
            return Err(Error::invalid(
                "reason",
                format!(
                    "{tool} with force needs a reason (why the run is moved by hand); it is kept in the history"
                ),
            ));
        }
        check_text("reason", &self.reason, MAX_MESSAGE)
    }
}

/// `abandon`.
pub fn abandon(svc: &Services, args: AbandonArgs) -> Result<LifecycleReply> {
    if let Some(reason) = &args.reason {
        check_text("reason", reason, MAX_MESSAGE)?;
    }
    transition(svc, &args.workspace, None, |lc, _, state, _| {
        Ok(lc.abandon(state, args.reason.as_deref())?)
    })
}

/// A definition with no phases, standing in for one that has gone missing.
fn placeholder(id: &str) -> WorkflowDefinition {
    WorkflowDefinition {
        id: id.to_string(),
        label: id.to_string(),
        version: 1,
        description: String::new(),
        model: None,
        answered_by: baton_workflow::Answerer::Person,
        driven_by: baton_workflow::Driver::Reports,
        protected: None,
        phases: Vec::new(),
    }
}

/// `abandon` by a person through a channel of theirs (the dashboard): the
/// same lifecycle change, guard and event as the tool, with who abandoned
/// kept in the history (`by`) and as the event's detail.
pub fn abandon_by(
    svc: &Services,
    args: AbandonArgs,
    by: &baton_state::Actor,
) -> Result<LifecycleReply> {
    if let Some(reason) = &args.reason {
        check_text("reason", reason, MAX_MESSAGE)?;
    }
    let label = by.label();
    let as_person = Forced {
        tool: "abandon",
        force: true,
        reason: label.clone(),
        label,
    };
    transition(svc, &args.workspace, Some(&as_person), |lc, _, state, _| {
        Ok(lc.abandon(state, args.reason.as_deref())?)
    })
}

fn check_phase(phase: &str) -> Result<(), Error> {
    check_text("phase", phase, MAX_PHASE)
}

/// One locked load → change → write, then the events, then the reply.
fn transition(
    svc: &Services,
    workspace: &str,
    forced: Option<&Forced>,
    change: impl FnOnce(
        &Lifecycle<'_>,
        &WorkflowDefinition,
        &mut WorkspaceState,
        &dyn WorkspaceFiles,
    ) -> Result<Vec<Transition>, Error>,
) -> Result<LifecycleReply> {
    check_text("workspace", workspace, MAX_WORKSPACE)?;
    let ws = svc.store.resolve(workspace)?;
    let files = DiskFiles::new(&ws.dir);
    let now = Utc::now();
    let mut definition = None;
    let updated = svc.store.update(&ws, now, |state| -> Result<_, Error> {
        if let Some(f) = forced {
            f.check()?;
        }
        // A run whose definition has gone missing can still be abandoned
        // (abandoning needs no phase of it).
        let def = match (svc.run_definition(state), forced) {
            (Ok(def), _) => def,
            (Err(_), None) => std::sync::Arc::new(placeholder(&state.workflow)),
            (Err(e), Some(_)) => return Err(e),
        };
        let mut lc = Lifecycle::new(&def, now);
        if let Some(f) = forced {
            lc = lc.by(&f.label);
        }
        let transitions = change(&lc, &def, state, &files)?;
        definition = Some(def);
        Ok(transitions)
    })?;
    // A forced change names who forced it on each event without a detail.
    let happened = updated
        .value
        .iter()
        .cloned()
        .map(|t| match forced {
            Some(f) => Happened::Annotated(t, f.label.clone()),
            None => Happened::Transition(t),
        })
        .collect();
    let names = svc.after_write(&ws, &updated.state, happened);
    let next = match &definition {
        Some(def) => next_step(&updated.state, def),
        None => String::new(),
    };
    Ok(LifecycleReply {
        workspace: ws.display.clone(),
        workflow: updated.state.workflow.clone(),
        current_phase: updated.state.current_phase.clone(),
        current_phase_status: updated.state.current_phase_status.as_str().to_string(),
        transitions: updated.value,
        events: names,
        next_step: next,
    })
}
