//! One line of the history file: what an ended run leaves behind.
//!
//! Field names are snake_case and stable (docs/history.md §2); optional and
//! empty fields are left out so a line stays short.

use std::collections::BTreeMap;

use baton_engine::completion::verdict::Severity;
use baton_state::{Effort, FlowTemplate, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The workflow reached its end.
    Completed,
    /// The workflow was abandoned.
    Abandoned,
    /// Still going (only in summaries of a live run, never in the index).
    Running,
}

impl Outcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Abandoned => "abandoned",
            Outcome::Running => "running",
        }
    }
}

/// The record of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The workspace folder name (e.g. `20260401-fix-auth`): the record's key.
    pub workspace: String,
    /// The workflow id (`forge`, `issue`, …).
    pub workflow: String,
    /// How the run ended.
    pub outcome: Outcome,
    /// When the workspace was created.
    pub created: Timestamp,
    /// When it ended (its last state write).
    pub ended: Timestamp,
    /// Effort S, M or L.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Flow template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowTemplate>,
    /// Where the request came from (`text`, `github`, `jira`, `linear`, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The request, summarised to one line.
    #[serde(default)]
    pub request: String,
    /// Phases that ran, in the order first started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseRecord>,
    /// Phases skipped by the flow template, run flags or `skip_phase`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The final verdict of each review artifact (`review-design.md` → `APPROVE`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, String>,
    /// Review findings of the final review artifacts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<FindingRecord>,
    /// Items of the run's improvement report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub friction: Vec<FrictionRecord>,
    /// Times work was sent back to an earlier phase (review REVISE/FAIL, a
    /// person's revision at a checkpoint).
    #[serde(default)]
    pub loops: u32,
    /// Tokens reported, all phases.
    #[serde(default)]
    pub tokens: u64,
    /// Work time in milliseconds, all phases (see [`PhaseRecord::ms`]).
    #[serde(default)]
    pub work_ms: u64,
    /// Why the run was abandoned, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Search terms of the request and design with their weighted counts
    /// (docs/history.md §4), at most [`crate::terms::MAX_DOC_TERMS`].
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::entry::terms_field"
    )]
    pub terms: Vec<(String, u32)>,
    /// The document length in weighted terms, before the cap (BM25 length).
    #[serde(default)]
    pub len: u32,
}

impl RunRecord {
    /// Wall-clock milliseconds from creation to the end.
    pub fn wall_ms(&self) -> u64 {
        u64::try_from((self.ended - self.created).num_milliseconds()).unwrap_or(0)
    }
}

/// One phase of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseRecord {
    /// Phase id.
    pub phase: String,
    /// Times the phase was started.
    pub visits: u32,
    /// Times completing it sent work back to an earlier phase.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub back: u32,
    /// The phase is a review with verdicts (they decide whether work goes back).
    #[serde(default, skip_serializing_if = "is_false")]
    pub review: bool,
    /// Times it failed (and was retried or abandoned).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fails: u32,
    /// Milliseconds: the durations agents reported, or the wall time from
    /// start to end when none was reported.
    #[serde(default)]
    pub ms: u64,
    /// Tokens reported.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub tokens: u64,
    /// The model label last reported.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// One review finding of a past run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRecord {
    /// The review phase.
    pub phase: String,
    /// The reviewing agent.
    pub agent: String,
    /// CRITICAL or MINOR.
    pub severity: Severity,
    /// The finding's title as written.
    pub text: String,
}

/// One item of an improvement report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrictionRecord {
    /// `Documentation`, `Code Readability`, `AI Agent Support` or `Other`.
    pub category: String,
    /// The problem observed.
    pub problem: String,
    /// The suggested improvement, when one was given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub improvement: String,
}
