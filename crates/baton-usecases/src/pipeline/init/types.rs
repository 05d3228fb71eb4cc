//! The arguments and replies of `pipeline_init` and
//! `pipeline_init_with_context`, field for field as seed 001 names them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use baton_engine::pipeline::init::{Flags, SourceType};

/// Arguments of `pipeline_init`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitArgs {
    /// The user's raw arguments: task text or issue URL, and flags.
    pub arguments: String,
    /// Output of `git branch --show-current`.
    #[serde(default)]
    pub current_branch: Option<String>,
}

/// What to fetch before `pipeline_init_with_context` (URL sources).
#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchNeeded {
    /// `github`, `jira` or `linear`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The fields to fetch.
    pub fields: Vec<String>,
    /// What to do.
    pub instruction: String,
    /// A command that fetches them (argv), when one exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

/// Reply of `pipeline_init`: a new pipeline, a resume, or `errors`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct InitReply {
    /// `auto` when the input names an existing workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_mode: Option<String>,
    /// The workspace (relative to the repository root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// What to call next on resume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The workspace name without its date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_name: Option<String>,
    /// github_issue, jira_issue, linear_issue, text or workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_type: Option<SourceType>,
    /// The issue URL (null for a text source; absent on resume and errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_url: Option<Option<String>>,
    /// The issue id (null for a text source; absent on resume and errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_id: Option<Option<String>>,
    /// The task text without flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core_text: Option<String>,
    /// Parsed flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags: Option<Flags>,
    /// What to fetch first (URL sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch_needed: Option<FetchNeeded>,
    /// Why the input was refused (seed 001's error path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
}

/// The confirmation of the second call.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserConfirmation {
    /// The effort the person chose: S, M or L.
    pub effort: String,
    /// A 3–6 word ASCII slug for the workspace (optional).
    #[serde(default)]
    pub workspace_slug: Option<String>,
    /// Work on the current branch instead of creating one.
    #[serde(default)]
    pub use_current_branch: Option<bool>,
    /// The request body as confirmed (echo of the first call's).
    #[serde(default)]
    pub enriched_request_body: Option<String>,
}

/// Arguments of `pipeline_init_with_context`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitWithContextArgs {
    /// The workspace returned by pipeline_init.
    pub workspace: String,
    /// Issue id ("42", "SOA-123").
    #[serde(default)]
    pub source_id: Option<String>,
    /// Issue URL.
    #[serde(default)]
    pub source_url: Option<String>,
    /// Fetched issue fields (github_title, github_body, github_labels, jira_summary, …).
    #[serde(default)]
    pub external_context: Option<Map<String, Value>>,
    /// The flags from pipeline_init.
    #[serde(default)]
    pub flags: Option<Flags>,
    /// The task text (text sources).
    #[serde(default)]
    pub task_text: Option<String>,
    /// The person's confirmation (second call).
    #[serde(default)]
    pub user_confirmation: Option<UserConfirmation>,
    /// The person's answers to the discussion questions.
    #[serde(default)]
    pub discussion_answers: Option<String>,
}

/// A phase an effort skips.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkippedPhase {
    /// Phase id.
    pub phase_id: String,
    /// Label.
    pub label: String,
}

/// One effort option.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EffortOption {
    /// Phases skipped at this effort.
    pub skipped_phases: Vec<SkippedPhase>,
    /// The detected effort.
    pub recommended: bool,
}

/// The effort question for the person.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NeedsConfirmation {
    /// The effort baton detected.
    pub detected_effort: String,
    /// S, M and L with what each skips.
    pub effort_options: BTreeMap<String, EffortOption>,
    /// The current branch.
    pub current_branch: String,
    /// Whether that is main/master (or unknown).
    pub is_main_branch: bool,
    /// The request body to echo back in user_confirmation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enriched_request_body: Option<String>,
    /// What to ask.
    pub message: String,
    /// Extension: tokens, work minutes and cost (p50/p90) of the completed
    /// past runs most like this request (docs/history.md §8). Absent until
    /// a run has completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<baton_history::Estimate>,
    /// Extension: the estimate in one line, to show the person verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_display: Option<String>,
}

/// Discussion questions (`--discuss`, text sources).
#[derive(Debug, Serialize, JsonSchema)]
pub struct NeedsDiscussion {
    /// The questions.
    pub questions: Vec<String>,
    /// What to do.
    pub message: String,
}

/// Reply of `pipeline_init_with_context` (one of three shapes).
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct InitWithContextReply {
    /// First or discussion call: ask the person to confirm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_user_confirmation: Option<NeedsConfirmation>,
    /// First call with --discuss: ask these questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_discussion: Option<NeedsDiscussion>,
    /// Confirmation call: the workspace is created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// The final workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// light, standard or full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_template: Option<String>,
    /// Phases the effort's flow template skips (`[]` for L).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_phases: Option<Vec<String>>,
    /// What request.md holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_md_content: Option<String>,
    /// The branch to work on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Run `git checkout -b <branch>` (false: work on the current branch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_branch: Option<bool>,
    /// Extension: the run asked for `--auto`, which only the person grants;
    /// what they do to allow it (until then it waits at each checkpoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_not_granted: Option<String>,
}
