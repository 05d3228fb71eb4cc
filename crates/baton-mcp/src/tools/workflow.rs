//! The `workflow` group: any workflow definition, run by the same engine.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use baton_engine::stats::{RunStats, WorkflowStats, aggregate, run_stats};
use baton_workflow::{Diagnostic, Source};

use super::lifecycle::slugify;
use super::runs::{RunView, fresh_folder, normalize_issue, start_run, view};
use super::{ToolSpec, input_schema, output_schema};
use crate::args::{check_text, parse};
use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

/// Arguments of `workflow_start`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkflowStartArgs {
    /// Id of the workflow definition (see workflow_definitions).
    pub workflow: String,
    /// Short name of the work; becomes part of the folder name.
    pub spec_name: String,
    /// The issue the work is for, if any.
    #[serde(default)]
    pub issue_number: Option<String>,
}

/// Arguments of `workflow_stats`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsArgs {
    /// Only runs of this workflow id.
    #[serde(default)]
    pub workflow: Option<String>,
}

/// Arguments of `workflow_archive`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveArgs {
    /// The workspace of an ended (completed or abandoned) run.
    pub workspace: String,
}

/// One known definition.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DefinitionRow {
    /// Id.
    pub id: String,
    /// Label.
    pub label: String,
    /// Version.
    pub version: u32,
    /// Phase ids in order.
    pub phases: Vec<String>,
    /// Where it came from: built-in or a project file.
    pub source: Value,
}

/// Reply of `workflow_definitions`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DefinitionsReply {
    /// Usable definitions.
    pub workflows: Vec<DefinitionRow>,
    /// Problems in project definition files (those files are not loaded).
    pub errors: Vec<Value>,
}

/// Reply of `workflow_stats`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsReply {
    /// Per run.
    pub runs: Vec<RunStats>,
    /// Per workflow id, across runs.
    pub by_workflow: BTreeMap<String, WorkflowStats>,
}

/// Reply of `workflow_archive`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ArchiveReply {
    /// The workspace as it was.
    pub workspace: String,
    /// Where it is now, relative to the repository root.
    pub archived_to: String,
}

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "workflow_start",
            group: "workflow",
            description: "Start a run of any workflow definition (built-in or from .baton/workflows/) and get the first phase's instruction. Continue with completePhase, passing the returned workspace.",
            input_schema: input_schema::<WorkflowStartArgs>,
            output_schema: output_schema::<RunView>,
            read_only: false,
            destructive: false,
            handler: workflow_start,
        },
        ToolSpec {
            name: "workflow_definitions",
            group: "workflow",
            description: "List the workflow definitions this server knows, with where each came from, and any errors in project definition files.",
            input_schema: input_schema::<StatsArgs>,
            output_schema: output_schema::<DefinitionsReply>,
            read_only: true,
            destructive: false,
            handler: workflow_definitions,
        },
        ToolSpec {
            name: "workflow_stats",
            group: "workflow",
            description: "Run analytics: per-phase durations and visits, trips through recovery phases such as fix, per run and per workflow across the repository.",
            input_schema: input_schema::<StatsArgs>,
            output_schema: output_schema::<StatsReply>,
            read_only: true,
            destructive: false,
            handler: workflow_stats,
        },
        ToolSpec {
            name: "workflow_archive",
            group: "workflow",
            description: "Move an ended (completed or abandoned) run's workspace to .specs/archive/ so it no longer shows among active work. Active runs are refused.",
            input_schema: input_schema::<ArchiveArgs>,
            output_schema: output_schema::<ArchiveReply>,
            read_only: false,
            destructive: false,
            handler: workflow_archive,
        },
    ]
}

fn workflow_start(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: WorkflowStartArgs = parse(arguments)?;
    check_text("workflow", &args.workflow, 64)?;
    check_text("specName", &args.spec_name, 200)?;
    let definition = ctx
        .workflow(&args.workflow)
        .map_err(|e| e.with_details(serde_json::json!({"field": "workflow"})))?;
    let slug = slugify(&args.spec_name, 60);
    if slug.is_empty() {
        return Err(ToolError::invalid(
            "specName",
            "specName must contain ASCII letters or digits",
        ));
    }
    let issue = args
        .issue_number
        .as_deref()
        .map(normalize_issue)
        .transpose()?;
    let folder = fresh_folder(ctx, &slug)?;
    let (ws, state, events) = start_run(ctx, &definition, &folder, &slug, issue)?;
    serde_json::to_value(view(ctx, &ws, &state, &definition, events))
        .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

fn workflow_definitions(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: StatsArgs = parse(arguments)?;
    let workflows = ctx
        .workflows
        .iter()
        .filter(|(d, _)| args.workflow.as_ref().is_none_or(|w| *w == d.id))
        .map(|(d, source)| DefinitionRow {
            id: d.id.clone(),
            label: d.label.clone(),
            version: d.version,
            phases: d.phases.iter().map(|p| p.id.clone()).collect(),
            source: source_json(source),
        })
        .collect();
    let errors = ctx
        .workflow_errors
        .iter()
        .map(|d: &Diagnostic| serde_json::to_value(d).unwrap_or(Value::Null))
        .collect();
    serde_json::to_value(DefinitionsReply { workflows, errors })
        .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

fn source_json(source: &Source) -> Value {
    serde_json::to_value(source).unwrap_or(Value::Null)
}

fn workflow_stats(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: StatsArgs = parse(arguments)?;
    let runs: Vec<RunStats> = super::runs::runs(ctx, |s| {
        args.workflow.as_ref().is_none_or(|w| *w == s.workflow)
    })?
    .iter()
    .map(|(_, s)| run_stats(s, ctx.workflows.get(&s.workflow).as_deref()))
    .collect();
    let by_workflow = aggregate(&runs);
    serde_json::to_value(StatsReply { runs, by_workflow })
        .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

fn workflow_archive(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    let args: ArchiveArgs = parse(arguments)?;
    check_text("workspace", &args.workspace, 1024)?;
    let ws = ctx.store.resolve(&args.workspace)?;
    let state = ctx.store.load(&ws)?;
    if !state.current_phase_status.is_terminal() {
        return Err(ToolError::new(
            ErrorCode::InvalidState,
            format!(
                "{} is still {}; only completed or abandoned runs can be archived",
                ws.display,
                state.current_phase_status.as_str()
            ),
        )
        .with_details(
            serde_json::json!({"currentPhaseStatus": state.current_phase_status.as_str()}),
        ));
    }
    let archive = ctx.config.specs_root.join("archive");
    std::fs::create_dir_all(&archive).map_err(|e| {
        ToolError::new(
            ErrorCode::IoError,
            format!("create {}: {e}", archive.display()),
        )
    })?;
    let target = archive.join(&ws.name);
    if target.exists() {
        return Err(ToolError::new(
            ErrorCode::Conflict,
            format!("{} is already archived", ws.name),
        ));
    }
    std::fs::rename(&ws.dir, &target).map_err(|e| {
        ToolError::new(
            ErrorCode::IoError,
            format!("move {}: {e}", ws.dir.display()),
        )
    })?;
    let shown = target
        .strip_prefix(&ctx.config.repo_root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| target.display().to_string());
    serde_json::to_value(ArchiveReply {
        workspace: ws.display,
        archived_to: shown,
    })
    .map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}
