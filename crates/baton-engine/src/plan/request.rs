//! What the run's request says and what follows from it: where the run came
//! from (`request.md`'s front matter and first line), the phases the run
//! skips, and the values placeholders in commands and contents take.

use baton_state::WorkspaceState;
use baton_workflow::WorkflowDefinition;

use super::types::PlanInput;

/// What `request.md` says about where the run came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestMeta {
    /// `text`, `github_issue`, `jira_issue`, `linear_issue`.
    pub source_type: String,
    /// The issue URL.
    pub source_url: String,
    /// The issue id (`42`, `PROJ-7`).
    pub source_id: String,
    /// The first line of the body, without heading marks (at most 72 characters).
    pub title: String,
}

/// Reads the front matter (`---` … `---`) and the first body line of request.md.
pub fn request_meta(text: &str) -> RequestMeta {
    let mut meta = RequestMeta {
        source_type: "text".into(),
        ..RequestMeta::default()
    };
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---")
    {
        for line in rest[..end].lines() {
            if let Some((key, value)) = line.split_once(':') {
                let value = value.trim().to_string();
                match key.trim() {
                    "source_type" if !value.is_empty() => meta.source_type = value,
                    "source_url" => meta.source_url = value,
                    "source_id" => meta.source_id = value,
                    _ => {}
                }
            }
        }
        body = rest[end + 4..].trim_start_matches(['-', '\n']);
    }
    let first = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    meta.title = first.chars().take(72).collect();
    // The URL decides the source, whatever the front matter says (seed 001's
    // patterns); a request without a recognised URL is text.
    meta.source_type = match crate::pipeline::init::classify(&meta.source_url) {
        Ok((kind, _, Some(_))) if !meta.source_url.is_empty() => kind.as_str().to_string(),
        _ => "text".to_string(),
    };
    meta
}

/// The phases the run skips, read from the state at every step: those it
/// recorded, its flow template's (or its effort's), `nopr` when `skipPr` is
/// set, and `no_source` when the request did not come from an issue tracker.
pub fn effective_skips(
    def: &WorkflowDefinition,
    state: &WorkspaceState,
    request: &RequestMeta,
) -> Vec<String> {
    let mut skips = state.skipped_phases.clone();
    let template = state
        .flow_template
        .or_else(|| state.effort.map(baton_state::FlowTemplate::for_effort));
    let mut groups: Vec<&str> = Vec::new();
    if let Some(t) = template {
        groups.push(t.as_str());
    }
    if state.skip_pr {
        groups.push("nopr");
    }
    if request.source_type == "text" {
        groups.push("no_source");
    }
    for group in groups {
        for id in def.skipped_for(group) {
            if !skips.contains(&id) && !state.completed_phases.contains(&id) {
                skips.push(id);
            }
        }
    }
    skips
}

/// The values placeholders in commands and contents are replaced with.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    /// `{workspace}`: the workspace as shown to agents.
    pub workspace: String,
    /// `{branch}`.
    pub branch: String,
    /// `{spec-name}`.
    pub spec_name: String,
    /// `{title}`: the pull request title.
    pub title: String,
    /// `{pr-body}`.
    pub pr_body: String,
    /// `{commit-message}`.
    pub commit_message: String,
}

impl Placeholders {
    /// The values for a run.
    pub fn for_run(state: &WorkspaceState, workspace: &str, request: &RequestMeta) -> Placeholders {
        let kind = state
            .branch
            .as_deref()
            .and_then(|b| b.split_once('/'))
            .map(|(k, _)| k)
            .filter(|k| ["feat", "feature", "fix", "refactor", "docs", "chore"].contains(k))
            .map(|k| if k == "feature" { "feat" } else { k })
            .unwrap_or("feat");
        let subject = if request.title.is_empty() {
            state.spec_name.clone()
        } else {
            request.title.clone()
        };
        let title = format!("{kind}: {subject}");
        let mut pr_body = format!(
            "Pipeline run by baton.\n\nWorkspace: {workspace}\nSpec: {}",
            state.spec_name
        );
        if request.source_type == "github_issue" && !request.source_id.is_empty() {
            pr_body.push_str(&format!("\n\nCloses #{}", request.source_id));
        }
        Placeholders {
            workspace: workspace.to_string(),
            branch: state.branch.clone().unwrap_or_default(),
            spec_name: state.spec_name.clone(),
            commit_message: format!("{title}\n\nbaton pipeline: {}", state.spec_name),
            title,
            pr_body,
        }
    }

    /// Replaces the placeholders in one argument (one pass; the result is
    /// never split, so a value can never become a second argument).
    pub fn render(&self, template: &str) -> String {
        let pairs: [(&str, &str); 6] = [
            ("{workspace}", &self.workspace),
            ("{branch}", &self.branch),
            ("{spec-name}", &self.spec_name),
            ("{title}", &self.title),
            ("{pr-body}", &self.pr_body),
            ("{commit-message}", &self.commit_message),
        ];
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        'scan: while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            for (key, value) in pairs {
                if let Some(after) = tail.strip_prefix(key) {
                    out.push_str(value);
                    rest = after;
                    continue 'scan;
                }
            }
            out.push('{');
            rest = &tail[1..];
        }
        out.push_str(rest);
        out
    }
}

/// The placeholder values of the run, from its request.md.
pub(crate) fn placeholders(input: &PlanInput<'_>, state: &WorkspaceState) -> Placeholders {
    let meta = input
        .files
        .read("request.md")
        .map(|t| request_meta(&t))
        .unwrap_or_default();
    Placeholders::for_run(state, input.workspace, &meta)
}
