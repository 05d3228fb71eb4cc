//! `pipeline_init` (seed 001 §1): parses the raw arguments, detects the
//! source and a run to resume. Writes nothing.

use chrono::Utc;

use baton_engine::pipeline::init::{MAX_SLUG, SourceType, parse_arguments, slugify};

use super::types::{FetchNeeded, InitArgs, InitReply};
use crate::error::Result;
use crate::services::Services;
use crate::validate::check_line;

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
    // A run is being started: its confirmation will be the first change.
    svc.warm_for_runs();
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
                        "no run at {}: state.json not found. To resume, pass a run that `baton ls` (workspace_list) lists; to start a new run, describe the task instead",
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
