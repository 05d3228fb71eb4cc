//! `pipeline_init_with_context` (seed 001 §2): the three-call confirmation.
//! The first call may ask questions to discuss (`--discuss`), the second
//! returns the detected effort for a person to confirm, and the
//! confirmation call creates the workspace, state.json and request.md —
//! once: the same confirmation sent again gets the same reply.

use std::collections::BTreeMap;

use chrono::Utc;
use serde_json::{Map, Value};

use baton_engine::pipeline::init::{
    Flags, MAX_SLUG, SourceType, branch_name, classify, detect_effort, slugify,
};
use baton_events::EventKind;
use baton_state::{Effort, FlowTemplate, Lifecycle, WorkspaceState};
use baton_workflow::WorkflowDefinition;

use super::types::{
    EffortOption, InitWithContextArgs, InitWithContextReply, NeedsConfirmation, NeedsDiscussion,
    SkippedPhase, UserConfirmation,
};
use crate::error::{Error, Result};
use crate::events::Happened;
use crate::services::Services;
use crate::validate::{check_line, check_text};

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
    svc.warm_for_runs();
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
    let Some(confirmation) = args.user_confirmation.clone() else {
        // The person is asked next: the run's folder is made meanwhile.
        svc.prepare_run_folder();
        return Ok(ask(svc, &definition, &flags, &ext, &task_text, answers));
    };
    create(
        svc,
        &args,
        &definition,
        confirmation,
        &ext,
        &flags,
        &task_text,
        &context,
    )
}

/// The first and second calls: the questions to discuss first (`--discuss`
/// without answers), else the detected effort with its options for the
/// person to confirm. Writes nothing of the run (its folder may be made
/// ahead, hidden, in the background: `Services::prepare_run_folder`).
fn ask(
    svc: &Services,
    definition: &WorkflowDefinition,
    flags: &Flags,
    ext: &External,
    task_text: &str,
    answers: Option<&str>,
) -> InitWithContextReply {
    if answers.is_none() && flags.discuss && !flags.auto && !ext.known {
        return InitWithContextReply {
            needs_discussion: Some(NeedsDiscussion {
                questions: vec![
                    "What is the main goal of this change?".into(),
                    "Are there any constraints or dependencies?".into(),
                    "What is the expected scope of changes?".into(),
                ],
                message: "Please answer the following questions, then call pipeline_init_with_context again with discussion_answers.".into(),
            }),
            ..InitWithContextReply::default()
        };
    }
    let body = match answers {
        Some(a) => format!("{task_text}\n\n## Discussion Answers\n\n{a}"),
        None if !task_text.is_empty() => task_text.to_string(),
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
    InitWithContextReply {
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
    }
}

/// The confirmation call: creates the workspace, request.md and
/// state.json (request.md first, state.json last), once.
#[expect(
    clippy::too_many_arguments,
    reason = "the confirmation call's inputs, each read once"
)]
fn create(
    svc: &Services,
    args: &InitWithContextArgs,
    definition: &WorkflowDefinition,
    confirmation: UserConfirmation,
    ext: &External,
    flags: &Flags,
    task_text: &str,
    context: &Map<String, Value>,
) -> Result<InitWithContextReply> {
    // The confirmation call: create the workspace. What the repository
    // holds is read on a thread of its own once the run exists (`attach`).
    let baseline = crate::git::start_baseline(&svc.config.repo_root);
    let effort = effort_of(&confirmation.effort)?;
    let given = svc.store.resolve(&args.workspace)?;
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
    let (folder, slug) = run_folder(&given.name, &source_id, ext, &confirmation)?;
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
    let mut state =
        WorkspaceState::fresh(&definition.id, &first, &slug, &ws.display, svc.version, now);
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
    Lifecycle::new(definition, now).apply_skips(&mut state, &skips)?;
    let request = request_md(args, &source_id, ext, &confirmation, task_text)?;
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
    if already_created(svc, &ws, &state, &request) {
        return Ok(reply);
    }
    // One change: request.md, then state.json (the store's order).
    svc.store
        .create_with_files(&ws, &state, &[("request.md", request.as_bytes())])?;
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
    // Read once nothing of the call holds a lock, before its reply.
    baseline.attach(&ws);
    Ok(reply)
}

/// The confirmed effort, or `invalid_parameter` naming the field.
fn effort_of(word: &str) -> Result<Effort> {
    match word {
        "S" => Ok(Effort::S),
        "M" => Ok(Effort::M),
        "L" => Ok(Effort::L),
        other => Err(Error::invalid(
            "user_confirmation.effort",
            format!("invalid effort {other:?}: must be one of S, M, L"),
        )),
    }
}

/// The run's folder name and slug: the folder the detection proposed
/// (`given`), renamed after the fetched title or the person's own slug
/// (each prefixed with the source id), keeping its date.
fn run_folder(
    given: &str,
    source_id: &str,
    ext: &External,
    confirmation: &UserConfirmation,
) -> Result<(String, String)> {
    let date = given.split('-').next().unwrap_or("");
    let with_id = |s: &str| {
        if source_id.is_empty() {
            s.to_string()
        } else {
            format!("{source_id} {s}")
        }
    };
    let mut slug = baton_state::store::strip_date_prefix(given).to_string();
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
    Ok((folder, slug))
}

/// The run's `request.md`: front matter (source type, URL, id) and the
/// request — the fetched issue, the person's enriched body, or the task
/// text. An empty request is refused.
fn request_md(
    args: &InitWithContextArgs,
    source_id: &str,
    ext: &External,
    confirmation: &UserConfirmation,
    task_text: &str,
) -> Result<String> {
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
            .unwrap_or_else(|| task_text.to_string())
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
    Ok(request)
}

/// Whether `ws` already holds the run this confirmation creates, untouched
/// since: the same request, at the same place.
fn already_created(
    svc: &Services,
    ws: &baton_state::WorkspaceRef,
    state: &WorkspaceState,
    request: &str,
) -> bool {
    let Ok(existing) = svc.store.load(ws) else {
        return false;
    };
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
    same_request && untouched
}
