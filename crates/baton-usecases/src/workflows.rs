//! The `workflow` group: any workflow definition, run by the same engine.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use baton_engine::stats::{RunStats, WorkflowStats, aggregate, run_stats};
use baton_workflow::{Diagnostic, Source};

use crate::runs::{RunView, fresh_folder, start_run, view};
use crate::validate::{check_text, normalize_issue, slugify};
use crate::{Error, ErrorCode, Result, Services};

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

/// `workflow_start`.
pub fn workflow_start(svc: &Services, args: WorkflowStartArgs) -> Result<RunView> {
    check_text("workflow", &args.workflow, 64)?;
    check_text("specName", &args.spec_name, 200)?;
    let definition = svc
        .workflow(&args.workflow)
        .map_err(|e| e.with_details(serde_json::json!({"field": "workflow"})))?;
    let slug = slugify(&args.spec_name, 60);
    if slug.is_empty() {
        return Err(Error::invalid(
            "specName",
            "specName must contain ASCII letters or digits",
        ));
    }
    let issue = args
        .issue_number
        .as_deref()
        .map(normalize_issue)
        .transpose()?;
    let folder = fresh_folder(svc, &slug)?;
    let (ws, state, events) = start_run(svc, &definition, &folder, &slug, issue)?;
    Ok(view(svc, &ws, &state, &definition, events))
}

/// `workflow_definitions`.
pub fn workflow_definitions(svc: &Services, args: StatsArgs) -> Result<DefinitionsReply> {
    let workflows = svc
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
    let errors = svc
        .workflow_errors
        .iter()
        .map(|d: &Diagnostic| serde_json::to_value(d).unwrap_or(Value::Null))
        .collect();
    Ok(DefinitionsReply { workflows, errors })
}

fn source_json(source: &Source) -> Value {
    serde_json::to_value(source).unwrap_or(Value::Null)
}

/// `workflow_stats`.
pub fn workflow_stats(svc: &Services, args: StatsArgs) -> Result<StatsReply> {
    let runs: Vec<RunStats> = crate::runs::runs(svc, |s| {
        args.workflow.as_ref().is_none_or(|w| *w == s.workflow)
    })?
    .iter()
    .map(|(_, s)| run_stats(s, svc.run_definition(s).ok().as_deref()))
    .collect();
    let by_workflow = aggregate(&runs);
    Ok(StatsReply { runs, by_workflow })
}

/// `workflow_archive`.
pub fn workflow_archive(svc: &Services, args: ArchiveArgs) -> Result<ArchiveReply> {
    check_text("workspace", &args.workspace, 1024)?;
    let ws = svc.store.resolve(&args.workspace)?;
    let state = svc.store.load(&ws)?;
    if !state.current_phase_status.is_terminal() {
        return Err(Error::new(
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
    let archive = svc.config.specs_root.join("archive");
    std::fs::create_dir_all(&archive).map_err(|e| {
        Error::new(
            ErrorCode::IoError,
            format!("create {}: {e}", archive.display()),
        )
    })?;
    let target = archive.join(&ws.name);
    if target.exists() {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("{} is already archived", ws.name),
        ));
    }
    std::fs::rename(&ws.dir, &target).map_err(|e| {
        Error::new(
            ErrorCode::IoError,
            format!("move {}: {e}", ws.dir.display()),
        )
    })?;
    let shown = target
        .strip_prefix(&svc.config.repo_root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| target.display().to_string());
    Ok(ArchiveReply {
        workspace: ws.display,
        archived_to: shown,
    })
}
