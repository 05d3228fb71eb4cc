//! The `state` group: read-only views of workspaces.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The rows and views of the `state` replies.
pub use baton_engine::summary::{ResumeInfo, WorkspaceRow};
use baton_engine::summary::{resume_info, row};

use crate::validate::check_text;
use crate::{Error, ErrorCode, Result, Services};

/// Arguments of `state_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateGetArgs {
    /// Folder name, .specs/<name> or absolute path.
    pub workspace: String,
    /// A field of state.json, dotted ("timestamps.created"); omit for all.
    #[serde(default)]
    pub field: Option<String>,
}

/// Arguments naming a workspace.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceArgs {
    /// Folder name, .specs/<name> or absolute path.
    pub workspace: String,
}

/// Arguments of `workspace_list`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only workspaces running this workflow id.
    #[serde(default)]
    pub workflow: Option<String>,
    /// Only workspaces whose current phase has this status (`awaiting_human`…).
    #[serde(default)]
    pub status: Option<String>,
}

/// Reply of `state_get`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StateGetReply {
    /// The workspace.
    pub workspace: String,
    /// The field read, when one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The value (the whole state.json when no field was named).
    pub value: Value,
}

/// Reply of `workspace_list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListReply {
    /// Workspaces, by folder name.
    pub workspaces: Vec<WorkspaceRow>,
    /// Workspaces whose state.json could not be read.
    pub unreadable: Vec<Unreadable>,
}

/// A workspace whose state could not be read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Unreadable {
    /// The workspace.
    pub workspace: String,
    /// Error code.
    pub code: String,
    /// What is wrong.
    pub message: String,
}

/// `state_get`.
pub fn state_get(svc: &Services, args: StateGetArgs) -> Result<StateGetReply> {
    check_text("workspace", &args.workspace, 1024)?;
    let ws = svc.store.resolve(&args.workspace)?;
    let state = svc.store.load(&ws)?;
    let doc =
        serde_json::to_value(&state).map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?;
    let value = match &args.field {
        None => doc,
        Some(field) => {
            check_text("field", field, 128)?;
            lookup(&doc, field).cloned().ok_or_else(|| {
                let keys: Vec<&String> = doc
                    .as_object()
                    .map(|o| o.keys().collect())
                    .unwrap_or_default();
                Error::invalid("field", format!("state.json has no field {field:?}"))
                    .with_details(serde_json::json!({ "field": "field", "valid": keys }))
            })?
        }
    };
    Ok(StateGetReply {
        workspace: ws.display,
        field: args.field,
        value,
    })
}

fn lookup<'a>(doc: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted
        .split('.')
        .try_fold(doc, |value, key| value.as_object()?.get(key))
}

/// `state_resume_info`.
pub fn state_resume_info(svc: &Services, args: WorkspaceArgs) -> Result<ResumeInfo> {
    check_text("workspace", &args.workspace, 1024)?;
    let ws = svc.store.resolve(&args.workspace)?;
    let state = svc.store.load(&ws)?;
    let definition = svc.run_definition(&state)?;
    Ok(resume_info(&state, &definition))
}

const STATUSES: [&str; 6] = [
    "pending",
    "in_progress",
    "completed",
    "failed",
    "awaiting_human",
    "abandoned",
];

/// `workspace_list`.
pub fn workspace_list(svc: &Services, args: ListArgs) -> Result<ListReply> {
    if let Some(status) = &args.status
        && !STATUSES.contains(&status.as_str())
    {
        return Err(Error::invalid(
            "status",
            format!(
                "unknown status {status:?}: pass one of {}, or leave status out for every run",
                STATUSES.join(", ")
            ),
        )
        .with_details(serde_json::json!({ "field": "status", "valid": STATUSES })));
    }
    let mut workspaces = Vec::new();
    let mut unreadable = Vec::new();
    for (ws, state) in svc.store.list()? {
        match state {
            Ok(state) => {
                if args.workflow.as_ref().is_some_and(|w| *w != state.workflow)
                    || args
                        .status
                        .as_ref()
                        .is_some_and(|s| s != state.current_phase_status.as_str())
                {
                    continue;
                }
                let definition = svc.run_definition(&state).ok();
                workspaces.push(row(&state, definition.as_deref()));
            }
            Err(e) => {
                let err = Error::from(e);
                unreadable.push(Unreadable {
                    workspace: ws.display,
                    code: err.code.as_str().to_string(),
                    message: err.message,
                });
            }
        }
    }
    Ok(ListReply {
        workspaces,
        unreadable,
    })
}

/// One row of `baton ls`: the workspace row, and in team mode where the
/// run runs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunRow {
    /// The row (`workspace` is `folder@machine` for another machine's run).
    #[serde(flatten)]
    pub row: WorkspaceRow,
    /// Team mode: where the run runs (this machine or another).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::team::MachineView>,
}

/// What `baton ls` lists.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunList {
    /// This machine's runs, then (team mode) the other machines' runs,
    /// most recently written first.
    pub workspaces: Vec<RunRow>,
    /// Workspaces whose state.json could not be read.
    pub unreadable: Vec<Unreadable>,
    /// Team mode: the team database could not answer (the list holds this
    /// machine's runs only); why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_problem: Option<String>,
    /// When the list was read (for "how long ago" in a person's words).
    pub listed_at: chrono::DateTime<chrono::Utc>,
}

/// The most other machines' runs `baton ls` lists (newest first).
pub const MAX_TEAM_ROWS: usize = 5000;

/// `baton ls`: every run of the repository — in team mode, of every
/// machine of the team (this machine's from its files, the others' from
/// the team database).
pub fn list_runs(svc: &Services) -> Result<RunList> {
    let local = workspace_list(svc, ListArgs::default())?;
    let me = crate::team::this_machine(svc);
    let mut workspaces: Vec<RunRow> = local
        .workspaces
        .into_iter()
        .map(|row| RunRow {
            row,
            machine: me.clone(),
        })
        .collect();
    let mut team_problem = None;
    match crate::team::other_runs_page(svc, crate::overview::RunFilter::All, None, MAX_TEAM_ROWS) {
        Ok(Some(other)) => workspaces.extend(other.runs.into_iter().map(|r| RunRow {
            row: WorkspaceRow {
                workspace: r.id,
                workflow: r.workflow,
                spec_name: r.spec_name,
                current_phase: r.current_phase,
                status: r.status,
                // The same figure as this machine's rows (summary::row).
                progress: baton_engine::summary::progress(
                    r.done.saturating_sub(r.skipped),
                    r.skipped,
                    r.total,
                ),
                last_updated: r.last_updated.to_rfc3339(),
            },
            machine: r.machine,
        })),
        Ok(None) => {}
        Err(e) => team_problem = Some(e.message),
    }
    Ok(RunList {
        workspaces,
        unreadable: local.unreadable,
        team_problem,
        listed_at: chrono::Utc::now(),
    })
}
