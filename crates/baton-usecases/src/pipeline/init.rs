//! Starting a seed pipeline (seeds 001/000): `pipeline_init` and
//! `pipeline_init_with_context`. `pipeline_init` is pure detection (nothing
//! written); the confirmation flow's last call creates the workspace. Field
//! names follow seed 001 exactly.

use std::collections::BTreeMap;

use chrono::Utc;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use baton_engine::pipeline::init::{
    Flags, MAX_SLUG, SourceType, branch_name, classify, detect_effort, parse_arguments, slugify,
};
use baton_events::EventKind;
use baton_state::{Effort, FlowTemplate, Lifecycle, WorkspaceState};

use crate::events::Happened;
use crate::validate::{check_line, check_text};
use crate::{Error, Result, Services};

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

fn specs_prefix(svc: &Services) -> String {
    svc.config
        .specs_root
        .strip_prefix(&svc.config.repo_root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| svc.config.specs_root.display().to_string())
}

/// `pipeline_init` (seed 001 §1): parses the raw arguments, detects the
/// source and a resume. Writes nothing; invalid input is `{errors}`.
pub fn pipeline_init(svc: &Services, args: InitArgs) -> Result<InitReply> {
    if let Some(b) = &args.current_branch {
        check_line("current_branch", b, 256)?;
    }
    let parsed = match parse_arguments(&args.arguments) {
        Ok(p) => p,
        Err(errors) => {
            return Ok(InitReply {
                errors: Some(errors),
                ..InitReply::default()
            });
        }
    };
    // Resume: the input names an existing workspace — a `.specs/<name>`
    // anywhere in it (seed 001: "input contains .specs/"), or a bare name.
    let prefix = format!("{}/", specs_prefix(svc));
    let specs_token = parsed
        .core_text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | ',' | ';' | '(' | ')')))
        .find(|w| w.starts_with(&prefix));
    let names_workspace = specs_token.is_some();
    if names_workspace || !parsed.core_text.contains(char::is_whitespace) {
        let named = specs_token.unwrap_or(parsed.core_text.as_str());
        match svc.store.resolve(named.trim_end_matches('/')) {
            Ok(ws) if ws.state_file().is_file() => {
                return Ok(InitReply {
                    resume_mode: Some("auto".into()),
                    workspace: Some(ws.display),
                    instruction: Some("call state_resume_info".into()),
                    ..InitReply::default()
                });
            }
            Ok(ws) if names_workspace => {
                return Ok(InitReply {
                    errors: Some(vec![format!(
                        "workspace path looks like a resume candidate but state.json not found: {}",
                        ws.display
                    )]),
                    ..InitReply::default()
                });
            }
            Err(e) if names_workspace => {
                return Ok(InitReply {
                    errors: Some(vec![e.to_string()]),
                    ..InitReply::default()
                });
            }
            _ => {}
        }
    }
    let slug = slugify(&parsed.core_text, MAX_SLUG);
    let workspace = format!("{prefix}{}-{slug}", Utc::now().format("%Y%m%d"));
    let mut flags = parsed.flags.clone();
    flags.current_branch = args.current_branch.filter(|b| !b.is_empty());
    let fetch_needed = match parsed.source_type {
        SourceType::GithubIssue => Some(FetchNeeded {
            kind: "github".into(),
            fields: vec!["labels".into(), "title".into(), "body".into()],
            instruction: "fetch github issue fields before calling pipeline_init_with_context".into(),
            command: parsed.source_url.as_ref().map(|u| {
                vec!["gh".into(), "issue".into(), "view".into(), u.clone(), "--json".into(), "title,body,labels".into()]
            }),
        }),
        SourceType::JiraIssue => Some(FetchNeeded {
            kind: "jira".into(),
            fields: vec!["summary".into(), "description".into(), "issue_type".into(), "story_points".into()],
            instruction: "fetch jira issue fields before calling pipeline_init_with_context (pass them as jira_summary, jira_description, jira_issue_type, jira_story_points)".into(),
            command: None,
        }),
        SourceType::LinearIssue => Some(FetchNeeded {
            kind: "linear".into(),
            fields: vec!["title".into(), "description".into(), "priority".into(), "estimate".into(), "labels".into()],
            instruction: "fetch linear issue fields before calling pipeline_init_with_context (pass them as linear_title, linear_description, linear_estimate, linear_labels)".into(),
            command: None,
        }),
        SourceType::Text | SourceType::Workspace => None,
    };
    Ok(InitReply {
        workspace: Some(workspace),
        spec_name: Some(slug),
        source_type: Some(parsed.source_type),
        source_url: Some(parsed.source_url),
        source_id: Some(parsed.source_id),
        core_text: Some(parsed.core_text),
        flags: Some(flags),
        fetch_needed,
        ..InitReply::default()
    })
}

/// The neutral record of fetched issue fields.
#[derive(Debug, Default)]
struct External {
    title: String,
    body: String,
    story_points: Option<f64>,
    known: bool,
}

fn external(context: &Map<String, Value>, source_url: Option<&str>) -> External {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| context.get(*k).and_then(Value::as_str))
            .unwrap_or("")
            .to_string()
    };
    let number = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| context.get(*k).and_then(Value::as_f64))
    };
    let kind = source_url
        .and_then(|u| classify(u).ok())
        .map(|c| c.0)
        .or_else(|| {
            [
                ("github_", SourceType::GithubIssue),
                ("jira_", SourceType::JiraIssue),
                ("linear_", SourceType::LinearIssue),
            ]
            .into_iter()
            .find(|(p, _)| context.keys().any(|k| k.starts_with(p)))
            .map(|(_, t)| t)
        });
    let mut e = match kind {
        Some(SourceType::GithubIssue) => External {
            title: text(&["github_title"]),
            body: text(&["github_body"]),
            story_points: None,
            known: true,
        },
        Some(SourceType::JiraIssue) => External {
            title: text(&["jira_summary", "summary"]),
            body: text(&["jira_description", "description"]),
            story_points: number(&["jira_story_points", "story_points"]),
            known: true,
        },
        Some(SourceType::LinearIssue) => External {
            title: text(&["linear_title", "title"]),
            body: text(&["linear_description", "description"]),
            story_points: number(&["linear_estimate", "estimate"]),
            known: true,
        },
        _ => External::default(),
    };
    e.known = e.known && (!e.title.is_empty() || !e.body.is_empty() || e.story_points.is_some());
    e
}

/// Refuses identity values that end up in file names, front matter or
/// state.json unless they are what they claim to be: the issue URL one of
/// the recognised kinds, the issue id a short token, the effort S/M/L, the
/// branch one line. Free text (task text, bodies) stays data and is not
/// restricted beyond its size.
fn check_identity_fields(args: &InitWithContextArgs) -> Result<()> {
    if let Some(url) = args.source_url.as_deref().filter(|u| !u.is_empty()) {
        check_line("source_url", url, 2048)?;
        match classify(url) {
            Ok((_, _, Some(clean))) if clean == url => {}
            _ => {
                return Err(Error::invalid(
                    "source_url",
                    "source_url must be a GitHub, Jira or Linear issue URL as returned by pipeline_init",
                ));
            }
        }
    }
    let context_id = args
        .external_context
        .as_ref()
        .and_then(|c| c.get("source_id"));
    if let Some(v) = context_id
        && !v.is_string()
    {
        return Err(Error::invalid(
            "external_context.source_id",
            "external_context.source_id must be a string",
        ));
    }
    for (field, id) in [
        ("source_id", args.source_id.as_deref()),
        (
            "external_context.source_id",
            context_id.and_then(Value::as_str),
        ),
    ] {
        if let Some(id) = id.filter(|i| !i.is_empty())
            && (id.len() > 64
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'#' | b'.')))
        {
            return Err(Error::invalid(
                field,
                format!(
                    "{field} must be an issue id of at most 64 ASCII letters, digits, '-', '_', '#' or '.'"
                ),
            ));
        }
    }
    if let Some(flags) = &args.flags {
        if let Some(e) = flags.effort_override.as_deref()
            && !matches!(e, "S" | "M" | "L")
        {
            return Err(Error::invalid(
                "flags.effort_override",
                format!("invalid effort {e:?}: must be one of S, M, L"),
            ));
        }
        if let Some(b) = flags.current_branch.as_deref() {
            check_line("flags.current_branch", b, 256)?;
        }
    }
    Ok(())
}

/// `pipeline_init_with_context` (seed 001 §2): the three-call confirmation;
/// the confirmation call creates the workspace, state.json and request.md.
pub fn pipeline_init_with_context(
    svc: &Services,
    args: InitWithContextArgs,
) -> Result<InitWithContextReply> {
    check_text("workspace", &args.workspace, 1024)?;
    for (field, value) in [
        ("task_text", &args.task_text),
        ("discussion_answers", &args.discussion_answers),
    ] {
        if let Some(v) = value
            && v.len() > 32 * 1024
        {
            return Err(Error::invalid(
                field,
                format!("{field} is longer than 32 KiB"),
            ));
        }
    }
    check_identity_fields(&args)?;
    let answers = args
        .discussion_answers
        .as_deref()
        .filter(|a| !a.trim().is_empty());
    if answers.is_some() && args.user_confirmation.is_some() {
        return Err(Error::invalid(
            "user_confirmation",
            "discussion_answers and user_confirmation must not both be present",
        ));
    }
    let context = args.external_context.clone().unwrap_or_default();
    let ext = external(&context, args.source_url.as_deref());
    let flags = args.flags.clone().unwrap_or_default();
    let task_text = args.task_text.clone().unwrap_or_default();
    let definition = svc.workflow("forge")?;

    let Some(confirmation) = args.user_confirmation else {
        if answers.is_none() && flags.discuss && !flags.auto && !ext.known {
            return Ok(InitWithContextReply {
                needs_discussion: Some(NeedsDiscussion {
                    questions: vec![
                        "What is the main goal of this change?".into(),
                        "Are there any constraints or dependencies?".into(),
                        "What is the expected scope of changes?".into(),
                    ],
                    message: "Please answer the following questions, then call pipeline_init_with_context again with discussion_answers.".into(),
                }),
                ..InitWithContextReply::default()
            });
        }
        let body = match answers {
            Some(a) => format!("{task_text}\n\n## Discussion Answers\n\n{a}"),
            None if !task_text.is_empty() => task_text.clone(),
            None => format!("{}\n\n{}", ext.title, ext.body).trim().to_string(),
        };
        let detected = detect_effort(
            flags.effort_override.as_deref(),
            ext.story_points,
            &format!("{} {} {task_text}", ext.title, ext.body),
        );
        let mut options = BTreeMap::new();
        for (effort, template) in [("S", "light"), ("M", "standard"), ("L", "full")] {
            let skipped = definition
                .skipped_for(template)
                .into_iter()
                .map(|id| SkippedPhase {
                    label: definition
                        .phase(&id)
                        .map(|p| p.label.clone())
                        .unwrap_or_default(),
                    phase_id: id,
                })
                .collect();
            options.insert(
                effort.to_string(),
                EffortOption {
                    skipped_phases: skipped,
                    recommended: effort == detected,
                },
            );
        }
        let branch = flags.current_branch.clone().unwrap_or_default();
        let is_main = matches!(branch.as_str(), "" | "main" | "master");
        let (estimate, estimate_display) = crate::history::request_estimate(svc, &body).unzip();
        return Ok(InitWithContextReply {
            needs_user_confirmation: Some(NeedsConfirmation {
                message: format!(
                    "Detected effort=\"{detected}\". Current branch=\"{branch}\" (is_main={is_main}). Confirm with the person, then call pipeline_init_with_context again with user_confirmation={{effort, workspace_slug?, use_current_branch?}}. Options: S (light flow), M (standard flow), L (full flow)."
                ),
                detected_effort: detected,
                effort_options: options,
                current_branch: branch,
                is_main_branch: is_main,
                enriched_request_body: (!body.is_empty()).then_some(body),
                estimate,
                estimate_display,
            }),
            ..InitWithContextReply::default()
        });
    };

    // The confirmation call: create the workspace. What the repository
    // holds before the run is read from now on, on its own thread.
    let baseline = crate::git::start_baseline(&svc.config.repo_root);
    let effort = match confirmation.effort.as_str() {
        "S" => Effort::S,
        "M" => Effort::M,
        "L" => Effort::L,
        other => {
            return Err(Error::invalid(
                "user_confirmation.effort",
                format!("invalid effort {other:?}: must be one of S, M, L"),
            ));
        }
    };
    let given = svc.store.resolve(&args.workspace)?;
    let date = given.name.split('-').next().unwrap_or("").to_string();
    let source_id = args
        .source_id
        .clone()
        .or_else(|| {
            context
                .get("source_id")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default();
    let with_id = |s: &str| {
        if source_id.is_empty() {
            s.to_string()
        } else {
            format!("{source_id} {s}")
        }
    };
    let mut slug = baton_state::store::strip_date_prefix(&given.name).to_string();
    if !ext.title.is_empty() {
        slug = slugify(&with_id(&ext.title), MAX_SLUG);
    }
    if let Some(s) = confirmation
        .workspace_slug
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        check_text("user_confirmation.workspace_slug", s, 200)?;
        slug = slugify(&with_id(s), MAX_SLUG);
    }
    let folder = if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) {
        format!("{date}-{slug}")
    } else {
        slug.clone()
    };
    let ws = svc.store.resolve(&folder)?;
    let template = FlowTemplate::for_effort(effort);
    let content = format!(
        "{} {} {} {task_text}",
        confirmation
            .enriched_request_body
            .clone()
            .unwrap_or_default(),
        ext.title,
        ext.body
    );
    let use_current = confirmation.use_current_branch.unwrap_or(false);
    let (branch, create_branch) = if use_current {
        (flags.current_branch.clone().unwrap_or_default(), false)
    } else {
        (branch_name(&slug, &content), true)
    };
    let now = Utc::now();
    let first = definition
        .first_phase()
        .map(|p| p.id.clone())
        .unwrap_or_default();
    let mut state = WorkspaceState::fresh("forge", &first, &slug, &ws.display, svc.version, now);
    // The run keeps the definition it starts with (crate::pinning).
    state.definition = Some(crate::pinning::pin(svc, &definition.id)?);
    state.effort = Some(effort);
    state.flow_template = Some(template);
    state.auto_approve = flags.auto;
    state.skip_pr = flags.skip_pr;
    state.debug = flags.debug;
    state.use_current_branch = use_current;
    state.branch = (!branch.is_empty()).then(|| branch.clone());
    // What the repository held before the run: never the run's to commit.
    // Read off the reply's path (started at the top of the confirmation,
    // filled in by the run's next change, without the run's own workspace;
    // `crate::git`).
    state.repo_baseline = Some(crate::git::PendingBaseline::placeholder());
    let mut skips = definition.skipped_for(template.as_str());
    if flags.skip_pr {
        skips.extend(definition.skipped_for("nopr"));
    }
    if args.source_url.as_deref().is_none_or(|u| u.is_empty()) {
        skips.extend(definition.skipped_for("no_source"));
    }
    Lifecycle::new(&definition, now).apply_skips(&mut state, &skips)?;
    // The URL decides the source (seed 001's patterns), whatever else was
    // given: an issue whose fields were folded into the request body is
    // still that issue (the PR closes it, the summary is posted to it).
    let source_type = args
        .source_url
        .as_deref()
        .filter(|u| !u.is_empty())
        .and_then(|u| classify(u).ok())
        .map(|c| c.0)
        .unwrap_or(SourceType::Text);
    let body = if ext.known {
        format!("{}\n\n{}", ext.title, ext.body).trim().to_string()
    } else {
        confirmation
            .enriched_request_body
            .clone()
            .filter(|b| !b.trim().is_empty())
            .unwrap_or(task_text.clone())
    };
    if body.trim().is_empty() {
        return Err(Error::invalid(
            "task_text",
            "the request is empty: pass task_text (text sources), the fetched issue fields in external_context, or user_confirmation.enriched_request_body",
        ));
    }
    let mut request = format!(
        "---\nsource_type: {}\n",
        serde_json::to_value(source_type)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    );
    if let Some(url) = args.source_url.as_deref().filter(|u| !u.is_empty()) {
        request.push_str(&format!("source_url: {url}\n"));
    }
    if !source_id.is_empty() {
        request.push_str(&format!("source_id: {source_id}\n"));
    }
    request.push_str("---\n");
    if !body.is_empty() {
        request.push_str(&format!("\n{body}\n"));
    }
    // request.md first, state.json last: a workspace exists only once its
    // state does, so a kill between the two leaves no run without its
    // request, and sending the confirmation again completes it.
    let reply = InitWithContextReply {
        ready: Some(true),
        workspace: Some(ws.display.clone()),
        effort: Some(confirmation.effort.clone()),
        flow_template: Some(template.as_str().to_string()),
        // The effort's flow template (seed 001); run flags add more skips in state.json.
        skipped_phases: Some(definition.skipped_for(template.as_str())),
        request_md_content: Some(request.clone()),
        branch: Some(branch.clone()),
        create_branch: Some(create_branch),
        // A tool argument asks for --auto; only the person grants it.
        auto_not_granted: (flags.auto && !svc.person().allows_auto_in(&svc.config.repo_root))
            .then(|| crate::trust::how_to_allow_auto(&svc.config.repo_root)),
        ..InitWithContextReply::default()
    };
    // The same confirmation sent again (its reply was lost): the run it
    // created, untouched since, is the answer.
    if let Ok(existing) = svc.store.load(&ws) {
        // Read as a file baton does not own: a link or FIFO in its place is
        // not the request baton wrote.
        let same_request =
            baton_fs::read_string_nofollow(&ws.dir.join("request.md"), request.len() as u64)
                .is_ok_and(|r| r == request);
        let untouched = existing.current_phase == state.current_phase
            && existing.current_phase_status == state.current_phase_status
            && existing.completed_phases == state.completed_phases
            && existing.effort == state.effort
            && existing.spec_name == state.spec_name;
        if same_request && untouched {
            return Ok(reply);
        }
    }
    svc.store.prepare(&ws)?;
    svc.store
        .write_file(&ws, "request.md", request.as_bytes())
        .map_err(Error::from)?;
    svc.store.create(&ws, &state)?;
    baseline.attach(&ws);
    svc.after_write(
        &ws,
        &state,
        vec![Happened::Event(
            EventKind::PipelineInit,
            baton_workflow::SETUP.to_string(),
            Some(format!("effort={}", confirmation.effort)),
            None,
        )],
    );
    Ok(reply)
}
