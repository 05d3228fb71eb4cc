//! One row of the run list ([`RunSummary`]) and the filters over rows
//! ([`RunFilter`]): what the list, the team's other machines' runs and
//! the views share.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, Result};

/// Which runs a page lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunFilter {
    /// Every run.
    #[default]
    All,
    /// Runs that have not ended.
    Active,
    /// Runs waiting for a person.
    Waiting,
    /// Runs whose current phase failed.
    Failed,
    /// Completed runs.
    Completed,
    /// Abandoned runs.
    Abandoned,
}

impl RunFilter {
    /// The names [`RunFilter::parse`] takes.
    pub const NAMES: [&'static str; 6] = [
        "all",
        "active",
        "waiting",
        "failed",
        "completed",
        "abandoned",
    ];

    /// Parses a filter name (`all`, `active`, `waiting`, `failed`,
    /// `completed`, `abandoned`).
    pub fn parse(text: &str) -> Result<RunFilter> {
        Ok(match text {
            "" | "all" => RunFilter::All,
            "active" => RunFilter::Active,
            "waiting" => RunFilter::Waiting,
            "failed" => RunFilter::Failed,
            "completed" => RunFilter::Completed,
            "abandoned" => RunFilter::Abandoned,
            other => {
                return Err(Error::invalid(
                    "status",
                    format!(
                        "unknown status filter {other:?}: pass one of {}, or leave status out for every run",
                        RunFilter::NAMES.join(", ")
                    ),
                )
                .with_details(
                    serde_json::json!({"field": "status", "valid": RunFilter::NAMES}),
                ));
            }
        })
    }

    /// Whether `run` is one this filter keeps.
    pub fn keeps(self, run: &RunSummary) -> bool {
        match self {
            RunFilter::All => true,
            RunFilter::Active => !matches!(run.status.as_str(), "completed" | "abandoned"),
            RunFilter::Waiting => run.waiting,
            RunFilter::Failed => run.status == "failed",
            RunFilter::Completed => run.status == "completed",
            RunFilter::Abandoned => run.status == "abandoned",
        }
    }
}

/// One row of the run list.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The folder name (`20260401-fix-auth`): the run's id in links.
    pub id: String,
    /// The workspace as shown everywhere else (`.specs/20260401-fix-auth`).
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// Spec name.
    pub spec_name: String,
    /// The issue, for issue runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue_number: Option<String>,
    /// The current phase.
    pub current_phase: String,
    /// Its label.
    pub current_phase_label: String,
    /// Its status.
    pub status: String,
    /// Whether the run waits for a person.
    pub waiting: bool,
    /// Phases done (completed or skipped).
    pub done: usize,
    /// Of those, the phases skipped and never completed (`baton ls` shows
    /// `done - skipped` as completed, then `(N skipped)`).
    pub skipped: usize,
    /// All phases of the workflow.
    pub total: usize,
    /// When the run was created.
    pub created: DateTime<Utc>,
    /// The last state change.
    pub last_updated: DateTime<Utc>,
    /// Team mode: where the run runs (this machine or another of the team).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::team::MachineView>,
}
