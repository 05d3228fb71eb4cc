//! The tool catalogue. Each tool lives in one group (its code) and belongs to
//! named profiles (its uses, [`MEMBERSHIP`]); `--tools NAMES` exposes the
//! named profiles or groups, and the default is the pipeline profile, so an
//! agent's context holds just what its workflow needs.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;

use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

pub mod history;
pub mod issue;
pub mod lifecycle;
pub mod manual;
pub mod next;
pub mod pipeline;
pub mod report;

pub mod state;
pub mod workflow;

/// A tool handler: parse the arguments, do the work, shape the reply.
pub type Handler = fn(&AppContext, Value) -> Result<Value, ToolError>;

/// One tool: its MCP description and its handler.
#[derive(Clone)]
pub struct ToolSpec {
    /// Tool name.
    pub name: &'static str,
    /// Group name used by `--tools`.
    pub group: &'static str,
    /// Description written for the agent.
    pub description: &'static str,
    /// Builds the input JSON schema.
    pub input_schema: fn() -> Arc<JsonObject>,
    /// Builds the output JSON schema.
    pub output_schema: fn() -> Arc<JsonObject>,
    /// Does not modify anything.
    pub read_only: bool,
    /// May discard work (abandon).
    pub destructive: bool,
    /// The handler.
    pub handler: Handler,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("group", &self.group)
            .finish()
    }
}

/// The published tools, precomputed from the code: one line per tool,
/// `name<TAB>Tool JSON`. Serving these spares a process the schema
/// derivation (and the memory it maps and allocates) at `tools/list`; a test
/// checks that they match what [`ToolSpec::build_tool`] makes, and
/// `BATON_BLESS=1 cargo test -p baton-mcp --lib catalog` rewrites them.
pub const CATALOG: &str = include_str!("catalog.tsv");

/// The catalogue's `Tool` named `name`, if it has one.
fn catalog_tool(name: &str) -> Option<Tool> {
    CATALOG.lines().find_map(|line| {
        let (tool, json) = line.split_once('\t')?;
        if tool != name {
            return None;
        }
        serde_json::from_str(json).ok()
    })
}

/// The catalogue text for every tool, as [`CATALOG`] must read.
pub fn catalog_text() -> String {
    all_tools()
        .iter()
        .map(|t| {
            let json = serde_json::to_string(&t.build_tool()).unwrap_or_default();
            format!("{}\t{json}\n", t.name)
        })
        .collect()
}

impl ToolSpec {
    /// The MCP `Tool` for `tools/list`: from the precomputed [`CATALOG`]
    /// (derived anew when the tool is missing there).
    pub fn to_tool(&self) -> Tool {
        catalog_tool(self.name).unwrap_or_else(|| self.build_tool())
    }

    /// The MCP `Tool`, derived from the code: schemas through schemars and
    /// [`crate::schema`].
    pub fn build_tool(&self) -> Tool {
        let mut tool = Tool::default();
        tool.name = self.name.into();
        tool.description = Some(self.description.into());
        tool.input_schema = (self.input_schema)();
        tool.output_schema = Some((self.output_schema)());
        // Only what differs from the spec's defaults (readOnly false,
        // destructive true, openWorld true): every byte is context.
        tool.annotations = Some(ToolAnnotations::from_raw(
            None,
            self.read_only.then_some(true),
            (!self.read_only && !self.destructive).then_some(false),
            None,
            Some(false),
        ));
        tool
    }
}

/// A reply value: the use case's typed output as JSON.
pub fn reply<T: serde::Serialize>(value: T) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

/// The JSON Schema schemars derives for `T` (draft 2020-12, as rmcp does;
/// `serialize`: what `T` writes rather than what it reads). Built here rather
/// than through rmcp's helpers, whose per-thread caches would keep every
/// derived schema alive for the life of the process.
fn derived<T: JsonSchema + 'static>(serialize: bool) -> JsonObject {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    if serialize {
        settings = settings.for_serialize();
    }
    let schema = settings.into_generator().into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// The published input schema of `T` (what `T` accepts, in the form every
/// client can enter: see [`crate::schema::publish_input`]).
pub fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    Arc::new(crate::schema::publish_input(&derived::<T>(false)))
}

/// The published output schema of `T` (lean: see
/// [`crate::schema::publish_output`]).
pub fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    Arc::new(crate::schema::publish_output(&derived::<T>(true)))
}

/// Every tool group with a one-line description. A group is where a tool's
/// code lives; `--tools` accepts group names as well as profiles.
pub const GROUPS: &[(&str, &str)] = &[
    (
        "lifecycle",
        "create workspaces and move phases: init, phase_start, phase_complete, phase_fail, checkpoint, skip_phase, abandon",
    ),
    (
        "state",
        "read workspaces: state_get, state_resume_info, workspace_list",
    ),
    (
        "issue",
        "the issue workflow: startIssueWorkflow, completePhase, getCurrentPhase, getWorkflowStatus",
    ),
    (
        "workflow",
        "any workflow definition: workflow_start, workflow_definitions, workflow_stats, workflow_archive",
    ),
    (
        "pipeline",
        "the pipeline: pipeline_init, pipeline_init_with_context, pipeline_next_action, pipeline_report_result",
    ),
    (
        "manual",
        "manual search: manual_ls, manual_toc, manual_find, manual_hits, manual_read, manual_scan",
    ),
    (
        "history",
        "past runs and analytics (only when selected): history_search, history_patterns, history_friction, history_reindex, analytics_summary, analytics_dashboard, analytics_estimate",
    ),
];

/// The profile `baton serve` exposes when nothing is configured: what an
/// agent running the pipeline (`/baton-pipeline`) needs.
pub const DEFAULT_PROFILE: &str = "pipeline";

/// The profile that exposes every tool.
pub const ALL_PROFILE: &str = "all";

/// Named tool profiles — what one use needs — with a one-line description.
/// Membership is declared per tool in [`MEMBERSHIP`]; `all` is every tool.
pub const PROFILES: &[(&str, &str)] = &[
    (
        "pipeline",
        "the pipeline loop an agent runs (default; what /baton-pipeline uses)",
    ),
    (
        "issue",
        "the issue workflow and other workflow definitions: start a run, complete its phases, see where it stands",
    ),
    ("manuals", "search and read project manuals"),
    (
        "recovery",
        "inspect and repair a workspace by hand: the standalone lifecycle setters, state reads, archive and analytics",
    ),
    (
        "history",
        "past runs: similar runs, review patterns, friction points, analytics and estimates",
    ),
    ("all", "every tool"),
];

/// The profiles of every tool, one row per tool (a test checks that every
/// tool has exactly one row). A new tool joins the profiles of the uses it
/// serves; the standalone lifecycle and state setters belong to `recovery`
/// only, so an agent in a workflow cannot step around the workflow's gates.
pub const MEMBERSHIP: &[(&str, &[&str])] = &[
    ("init", &["recovery"]),
    ("phase_start", &["recovery"]),
    ("phase_complete", &["recovery"]),
    ("phase_fail", &["recovery"]),
    ("checkpoint", &["recovery"]),
    ("skip_phase", &["recovery"]),
    ("abandon", &["recovery"]),
    ("state_get", &["recovery"]),
    ("state_resume_info", &["recovery"]),
    ("run_overview", &["issue", "recovery"]),
    ("workspace_list", &["recovery"]),
    ("startIssueWorkflow", &["issue"]),
    ("completePhase", &["issue"]),
    ("getCurrentPhase", &["issue"]),
    ("getWorkflowStatus", &["issue"]),
    ("workflow_start", &["issue"]),
    ("workflow_definitions", &["issue", "recovery"]),
    ("workflow_stats", &["recovery"]),
    ("workflow_archive", &["recovery"]),
    ("pipeline_init", &["pipeline"]),
    ("pipeline_init_with_context", &["pipeline"]),
    ("pipeline_next_action", &["pipeline"]),
    ("pipeline_report_result", &["pipeline"]),
    ("manual_ls", &["manuals"]),
    ("manual_toc", &["manuals"]),
    ("manual_find", &["manuals"]),
    ("manual_hits", &["manuals"]),
    ("manual_read", &["manuals"]),
    ("manual_scan", &["manuals"]),
    ("history_search", &["history"]),
    ("history_patterns", &["history"]),
    ("history_friction", &["history"]),
    ("history_reindex", &["history"]),
    ("analytics_summary", &["history"]),
    ("analytics_dashboard", &["history"]),
    ("analytics_estimate", &["history"]),
];

/// The profiles tool `name` belongs to (besides `all`).
pub fn profiles_of(name: &str) -> &'static [&'static str] {
    MEMBERSHIP
        .iter()
        .find(|(tool, _)| *tool == name)
        .map(|(_, profiles)| *profiles)
        .unwrap_or(&[])
}

/// Every tool baton has.
pub fn all_tools() -> Vec<ToolSpec> {
    let mut tools = lifecycle::tools();
    tools.extend(state::tools());
    tools.extend(issue::tools());
    tools.extend(workflow::tools());
    tools.extend(pipeline::tools());
    tools.extend(next::tools());
    tools.extend(report::tools());
    tools.extend(manual::tools());
    tools.extend(history::tools());
    tools
}

/// A `--tools` / `BATON_TOOLS` / `[tools] groups` selection that names
/// neither a profile nor a group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown tool profile or group {name:?}; profiles: {profiles}; groups: {groups} (see `baton tools`)"
)]
pub struct UnknownSelection {
    /// The name that matched nothing.
    pub name: String,
    /// The known profiles, comma-separated.
    pub profiles: String,
    /// The known groups, comma-separated.
    pub groups: String,
}

/// Whether tool `spec` is selected by `name` (a profile or a group).
fn selected_by(spec: &ToolSpec, name: &str) -> bool {
    name == ALL_PROFILE || profiles_of(spec.name).contains(&name) || spec.group == name
}

/// The tools the names select, in catalogue order: each name is a profile
/// (`pipeline`, `issue`, `manuals`, `recovery`, `all`) or a group
/// (`lifecycle`, `state`, …). `None` (or an empty list) is the default
/// profile. An unknown name is an error listing the known ones.
pub fn select(names: Option<&[String]>) -> Result<Vec<ToolSpec>, UnknownSelection> {
    let default = [DEFAULT_PROFILE.to_string()];
    let names = match names {
        Some(names) if !names.is_empty() => names,
        _ => &default[..],
    };
    if let Some(unknown) = names
        .iter()
        .find(|n| !PROFILES.iter().any(|(p, _)| p == n) && !GROUPS.iter().any(|(g, _)| g == n))
    {
        let list =
            |items: &[(&str, &str)]| items.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
        return Err(UnknownSelection {
            name: unknown.clone(),
            profiles: list(PROFILES),
            groups: list(GROUPS),
        });
    }
    Ok(all_tools()
        .into_iter()
        .filter(|t| names.iter().any(|n| selected_by(t, n)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_membership_row_naming_known_profiles() {
        let tools = all_tools();
        for t in &tools {
            let rows = MEMBERSHIP.iter().filter(|(n, _)| *n == t.name).count();
            assert_eq!(rows, 1, "{}: declare its profiles in MEMBERSHIP", t.name);
            assert!(!profiles_of(t.name).is_empty(), "{}", t.name);
        }
        for (name, profiles) in MEMBERSHIP {
            assert!(
                tools.iter().any(|t| t.name == *name),
                "MEMBERSHIP names {name}, which is no tool"
            );
            for p in *profiles {
                assert!(
                    PROFILES.iter().any(|(known, _)| known == p) && *p != ALL_PROFILE,
                    "{name}: unknown profile {p}"
                );
            }
        }
    }

    #[test]
    fn the_precomputed_catalog_matches_the_code() {
        let fresh = catalog_text();
        if std::env::var_os("BATON_BLESS").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tools/catalog.tsv");
            std::fs::write(path, &fresh).unwrap();
            return;
        }
        assert!(
            CATALOG == fresh,
            "crates/baton-mcp/src/tools/catalog.tsv is stale (a tool, its description or its \
             schema changed): run `BATON_BLESS=1 cargo test -p baton-mcp --lib catalog` and commit it"
        );
        // Every tool is served from the catalogue, exactly as derived.
        for t in all_tools() {
            let served =
                serde_json::to_value(catalog_tool(t.name).expect("in the catalogue")).unwrap();
            assert_eq!(
                served,
                serde_json::to_value(t.build_tool()).unwrap(),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn standalone_setters_live_only_in_recovery() {
        for setter in [
            "init",
            "phase_start",
            "phase_complete",
            "phase_fail",
            "checkpoint",
            "skip_phase",
            "abandon",
        ] {
            assert_eq!(profiles_of(setter), ["recovery"], "{setter}");
        }
    }

    #[test]
    fn selection_accepts_profiles_and_groups() {
        let names = |sel: &[&str]| -> Vec<&'static str> {
            let sel: Vec<String> = sel.iter().map(|s| s.to_string()).collect();
            select(Some(&sel)).unwrap().iter().map(|t| t.name).collect()
        };
        let default: Vec<&str> = select(None).unwrap().iter().map(|t| t.name).collect();
        assert_eq!(default, names(&[DEFAULT_PROFILE]));
        assert_eq!(names(&["all"]).len(), all_tools().len());
        assert_eq!(
            names(&["state"]),
            [
                "state_get",
                "state_resume_info",
                "run_overview",
                "workspace_list"
            ]
        );
        let combined = names(&["pipeline", "manual"]);
        assert_eq!(combined.len(), 10, "{combined:?}");
        let e = select(Some(&["nope".to_string()])).unwrap_err();
        assert!(
            e.to_string()
                .contains("profiles: pipeline, issue, manuals, recovery, history, all")
        );
    }
}
