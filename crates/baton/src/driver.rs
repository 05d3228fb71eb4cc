//! The headless driver: `baton run` and `baton demo` drive a whole pipeline
//! through the same use cases the MCP tools call (in-process, typed, same
//! validation, same events), executing each action themselves: agents as
//! commands (or the built-in scripted agent), `exec` argv without a shell,
//! `write_file`, and checkpoints asked on the terminal or answered by `--auto`.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, anyhow, bail};

use baton_usecases::Actor;
use baton_usecases::Services;
use baton_usecases::headless::{self, resume_command, shell_word};
use baton_usecases::trust::{self, AutoGrant};

pub use crate::agents::Agent;
use crate::agents::Usage;
use crate::agents::step::{AgentStop, failed, inside, spawn_agents};
use baton_usecases::pipeline::action::{Action, Exec, Question as AskAction, WriteFile};
use baton_usecases::pipeline::answer;
use baton_usecases::pipeline::init;
use baton_usecases::pipeline::next::{self, NextArgs};
use baton_usecases::pipeline::usage::AgentUsage;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The task text (or issue URL).
    pub text: String,
    /// S, M or L (default: the detected one).
    pub effort: Option<String>,
    /// Answer questions automatically.
    pub auto: bool,
    /// No pull request.
    pub nopr: bool,
    /// The agent.
    pub agent: Agent,
    /// Which branch the run works on.
    pub branch: BranchChoice,
    /// What the run may spend before it stops for the person.
    pub budget: baton_config::Budget,
}

/// Parses `--max-cost`: US dollars above 0.
pub fn parse_max_cost(text: &str) -> Result<f64, String> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "--max-cost takes an amount of US dollars above 0, e.g. 2.50 (got {text:?})"
        )),
    }
}

/// Parses `--max-tokens`: a whole number above 0 (`_` and `,` allowed).
pub fn parse_max_tokens(text: &str) -> Result<u64, String> {
    match text.trim().replace(['_', ','], "").parse::<u64>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!(
            "--max-tokens takes a whole number of tokens above 0, e.g. 500000 (got {text:?})"
        )),
    }
}

/// Why the budget stops the run, when it does: a line for a person.
fn over_budget(budget: &baton_config::Budget, spent: &headless::Spent) -> Option<String> {
    if let Some(max) = budget.max_cost_usd
        && spent.cost_usd >= max
    {
        return Some(format!(
            "the run has used ${:.2} of its ${max:.2} budget",
            spent.cost_usd
        ));
    }
    if let Some(max) = budget.max_tokens
        && spent.tokens >= max
    {
        return Some(format!(
            "the run has used {} of its {} tokens",
            spent.tokens, max
        ));
    }
    None
}

/// `--branch`: where a new run's work goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BranchChoice {
    /// A new branch from the default branch, the current branch elsewhere
    /// (runs never stack branches on branches).
    #[default]
    Auto,
    /// The current branch, whatever it is.
    Current,
    /// A new branch from wherever the repository is.
    New,
}

impl BranchChoice {
    /// Parses `--branch`: `current` or `new`.
    pub fn parse(text: &str) -> Result<BranchChoice, String> {
        match text {
            "current" => Ok(BranchChoice::Current),
            "new" => Ok(BranchChoice::New),
            other => Err(format!(
                "--branch takes `current` (work on the branch you are on) or `new` (a new branch for the run), not {other:?}"
            )),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The workspace (repository-relative).
    pub workspace: String,
    /// The `done` action's summary.
    pub summary: String,
    /// How many actions were executed.
    pub actions: usize,
    /// The run stopped at a question for a person (no terminal to ask it
    /// on): it is not done, and resumes with the same command.
    pub waits_for_person: bool,
    /// The run ended abandoned (a person's or `--auto`'s `abandon`), not
    /// completed: `baton run` exits with its own code so a script can tell.
    pub abandoned: bool,
}

/// The most actions one run may take (a runaway guard).
const MAX_ACTIONS: usize = 500;

fn say(line: &str) {
    eprintln!("{line}");
}

/// Drives a pipeline from the task text (or a `.specs/<run>` to resume) to
/// `done`, or to a question nobody at this terminal can answer.
pub fn run(svc: &Services, repo: &Path, opts: &RunOptions) -> anyhow::Result<RunOutcome> {
    let started = Instant::now();
    if opts.text.trim().is_empty() {
        anyhow::bail!(
            "the task is empty: say what to do, e.g. baton run \"fix the login typo\" --agent claude, \
             or name a run to resume (baton ls lists them)"
        );
    }
    let mut arguments = opts.text.clone();
    if let Some(e) = &opts.effort {
        arguments.push_str(&format!(" --effort={e}"));
    }
    if opts.auto {
        arguments.push_str(" --auto");
    }
    if opts.nopr {
        arguments.push_str(" --nopr");
    }
    let current_branch = git_line(repo, &["branch", "--show-current"]);
    let init = init::pipeline_init(
        svc,
        init::InitArgs {
            arguments,
            current_branch: current_branch.clone(),
        },
    )
    .map_err(|e| failed("pipeline_init", e))?;
    if let Some(errors) = &init.errors {
        bail!("{}", errors.join("; "));
    }
    let (ws, started_here) = match (&init.resume_mode, &init.workspace) {
        (Some(_), Some(ws)) => {
            say(&format!("resuming {ws}"));
            (ws.clone(), false)
        }
        _ => (
            create(svc, repo, &init, opts, current_branch.as_deref())?,
            true,
        ),
    };
    say(&format!("workspace {ws}"));
    // --auto is the person's: granted for a run this command started
    // itself, or at a terminal; never for someone else's run from a
    // program (trust::AutoGrant).
    let grant = match (opts.auto, started_here) {
        (false, _) => None,
        (true, true) => Some(AutoGrant::for_run_started_here()),
        (true, false) => AutoGrant::at_terminal(),
    };
    let auto_by = match grant {
        Some(grant) => {
            let by = grant.actor();
            trust::grant_auto(svc, &ws, grant).map_err(|e| failed("--auto", e))?;
            Some(by)
        }
        None => {
            if opts.auto {
                say(&format!(
                    "--auto is not used: {ws} was not started by this command and no terminal is attached; its questions wait for a person (baton answer, or the dashboard)"
                ));
            }
            None
        }
    };
    let auto = auto_by.is_some();
    let agent_label = opts.agent.label();
    headless::begin_driving(svc, &ws, &agent_label).map_err(|e| failed("baton run", e))?;
    let resume = resume_command(&ws, &agent_label);
    let stop = |reason: &str| {
        if let Err(e) = headless::stop_driving(svc, &ws, reason) {
            say(&format!("  warning: {}", e.message));
        }
    };
    let mut next = NextArgs::for_workspace(&ws);
    let mut retried: BTreeMap<String, bool> = BTreeMap::new();
    for count in 1..=MAX_ACTIONS {
        let reply = match next::next_action(svc, next) {
            Ok(r) => r,
            Err(e) => {
                stop("when baton refused a step");
                return Err(failed("pipeline_next_action", e));
            }
        };

        show_reply(&reply);
        next = NextArgs::for_workspace(&ws);
        // A report names its action: applied once, even if sent twice.
        next.previous_action_id = Some(reply.action_id.clone());
        match &reply.action {
            Action::Done(done) => {
                say(&format!(
                    "■ {} in {:.1}s{}",
                    done.summary,
                    started.elapsed().as_secs_f64(),
                    if done.summary_path.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", done.summary_path)
                    }
                ));
                stop("when the run was done");
                return Ok(RunOutcome {
                    workspace: ws,
                    summary: done.summary.clone(),
                    actions: count,
                    waits_for_person: false,
                    abandoned: reply.current_phase_status == "abandoned",
                });
            }
            Action::SpawnAgent(spawn) => {
                let spent = headless::spent(svc, &ws).map_err(|e| failed("baton run", e))?;
                if let Some(why) = over_budget(&opts.budget, &spent) {
                    stop(&format!("because {why}"));
                    say(&format!(
                        "\n{why}; it stops here for you to decide before {} starts.\nTo go on, resume it with a higher limit (--max-cost USD, --max-tokens N, or [budget] in baton.toml):\n  {resume} --max-cost {:.2}\nor abandon it:\n  baton answer {} abandon",
                        reply.current_phase,
                        (spent.cost_usd * 2.0).max(opts.budget.max_cost_usd.unwrap_or(1.0) * 2.0),
                        shell_word(&ws)
                    ));
                    return Ok(RunOutcome {
                        workspace: ws,
                        summary: why,
                        actions: count,
                        waits_for_person: true,
                        abandoned: false,
                    });
                }
                let t = Instant::now();
                let usage = match spawn_agents(svc, repo, &ws, spawn, &opts.agent) {
                    Ok(usage) => usage,
                    Err(AgentStop::Failed(failure)) => {
                        let recorded = headless::agent_failed(svc, &ws, &reply.action_id, &failure);
                        stop("when the agent failed");
                        let mut text = format!("✗ {}", failure.message());
                        match recorded {
                            Ok(()) => text.push_str(&format!(
                                "\n\nThe run stops here; {} is marked failed.\nFix the cause, then resume it:\n  {resume}",
                                reply.current_phase
                            )),
                            // Ended meanwhile (abandoned while the agent worked):
                            // there is nothing to resume.
                            Err(e) if ended(&e) => text.push_str(&format!(
                                "\n\nNothing to resume: {}.\nTo do this work after all, start a new run: baton run \"<task>\"",
                                e.message
                            )),
                            Err(e) => text.push_str(&format!(
                                "\n\nThe failure could not be recorded ({}).\nResume the run with:\n  {resume}",
                                e.message
                            )),
                        }
                        bail!("{text}");
                    }
                    Err(AgentStop::Unreadable(why)) => {
                        stop("when the agent's output could not be read");
                        bail!(
                            "{why}.\n\nNothing was recorded for this step; the run is where it was. Resume it with:\n  {resume}"
                        );
                    }
                    Err(AgentStop::Other(e)) => {
                        stop("when the agent could not be run");
                        return Err(e.context(format!("resume the run with: {resume}")));
                    }
                };
                let ms = t.elapsed().as_millis() as u64;
                let total = Usage::sum(usage.iter().map(|(_, u)| u));
                say(&format!(
                    "  ✓ {:.1}s{}",
                    ms as f64 / 1000.0,
                    usage_note(&total)
                ));
                next.previous_action_complete = Some(true);
                next.previous_duration_ms = Some(ms);
                next.previous_tokens = Some(total.tokens);
                next.previous_model = Some(total.model.unwrap_or_else(|| "unknown".into()));
                // Per agent, as its client reported it: a fan-out is
                // recorded per task, each step with its cost.
                next.previous_usage = Some(
                    usage
                        .into_iter()
                        .map(|(task, u)| AgentUsage {
                            task,
                            tokens: u.tokens,
                            cost_usd: u.cost_usd,
                        })
                        .collect(),
                );
            }
            Action::Exec(exec_action) => {
                let t = Instant::now();
                let code = exec(repo, exec_action)?;
                next.previous_action_complete = Some(true);
                next.previous_duration_ms = Some(t.elapsed().as_millis() as u64);
                next.previous_exit_code = Some(code);
            }
            Action::WriteFile(write) => {
                write_file(repo, write)?;
                next.previous_action_complete = Some(true);
            }
            Action::Checkpoint(question) | Action::HumanGate(question) => {
                // The person at this terminal answers (or their --auto
                // choice does): never the agent command.
                let Some(given) = answer(question, auto, &mut retried)? else {
                    stop("at a question for you");
                    say(&waiting_message(&ws, question, &resume));
                    return Ok(RunOutcome {
                        workspace: ws,
                        summary: format!("{} waits for your answer", question.name),
                        actions: count,
                        waits_for_person: true,
                        abandoned: false,
                    });
                };
                say(&format!("  → {given}"));
                let by = auto_by.clone().unwrap_or_else(|| Actor::person("terminal"));
                answer::answer_question(
                    svc,
                    answer::AnswerArgs {
                        workspace: ws.clone(),
                        answer: given,
                    },
                    by,
                )
                .map_err(|e| failed("answer", e))?;
            }
        }
    }
    stop("after too many steps");
    bail!(
        "stopped after {MAX_ACTIONS} actions: the pipeline did not finish; resume it with: {resume}"
    )
}

/// What a person reads when the run stops at their question: the answer
/// command with the run's own options, and the resume command.
/// Whether a use case refused because the run has ended (completed or
/// abandoned) — its `currentPhaseStatus` says so.
fn ended(e: &baton_usecases::Error) -> bool {
    e.code == baton_usecases::ErrorCode::InvalidState
        && e.details
            .as_ref()
            .and_then(|d| d["currentPhaseStatus"].as_str())
            .is_some_and(|s| matches!(s, "completed" | "abandoned"))
}

fn waiting_message(ws: &str, question: &AskAction, resume: &str) -> String {
    let first = question.options.first().map(String::as_str).unwrap_or("…");
    format!(
        "{} waits for your answer ({}). Answer it in a terminal:\n  baton answer {} {}\nor on the dashboard (baton dashboard), then resume the run:\n  {resume}",
        question.name,
        question.options.join(" / "),
        shell_word(ws),
        shell_word(first),
    )
}

fn usage_note(usage: &Usage) -> String {
    let mut parts = Vec::new();
    if usage.tokens > 0 {
        parts.push(format!("{} tokens", usage.tokens));
    }
    if let Some(c) = usage.cost_usd {
        parts.push(format!("${c:.4}"));
    }
    if let Some(m) = &usage.model {
        parts.push(m.clone());
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" · {}", parts.join(" · "))
    }
}

/// One line of `git` output in `repo`, when git says something.
fn git_line(repo: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !line.is_empty()).then_some(line)
}

/// The repository's default branch: the remote's HEAD, else git's
/// `init.defaultBranch`, else `main` or `master`.
fn is_default_branch(repo: &Path, branch: &str) -> bool {
    if let Some(remote_head) = git_line(
        repo,
        &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
    ) {
        return remote_head.rsplit('/').next() == Some(branch);
    }
    if let Some(configured) = git_line(repo, &["config", "init.defaultBranch"]) {
        return configured == branch;
    }
    matches!(branch, "main" | "master")
}

/// The two confirmation calls; creates the branch when asked to.
fn create(
    svc: &Services,
    repo: &Path,
    init: &init::InitReply,
    opts: &RunOptions,
    current_branch: Option<&str>,
) -> anyhow::Result<String> {
    let base = init::InitWithContextArgs {
        workspace: init.workspace.clone().unwrap_or_default(),
        source_id: None,
        source_url: None,
        external_context: None,
        flags: init.flags.clone(),
        task_text: init.core_text.clone(),
        user_confirmation: None,
        discussion_answers: None,
    };
    let first = init::pipeline_init_with_context(svc, base.clone())
        .map_err(|e| failed("pipeline_init_with_context", e))?;
    let effort = opts
        .effort
        .clone()
        .or_else(|| {
            first
                .needs_user_confirmation
                .as_ref()
                .map(|n| n.detected_effort.clone())
        })
        .unwrap_or_else(|| "M".to_string());
    // A new branch from the default branch only: a run started on a
    // feature branch works there (no branch stacked on a branch).
    let use_current = match (opts.branch, current_branch) {
        (_, None) => false,
        (BranchChoice::Current, Some(_)) => true,
        (BranchChoice::New, Some(_)) => false,
        (BranchChoice::Auto, Some(b)) => !is_default_branch(repo, b),
    };
    let mut confirm = base;
    confirm.user_confirmation = Some(init::UserConfirmation {
        effort: effort.clone(),
        workspace_slug: None,
        use_current_branch: Some(use_current),
        enriched_request_body: None,
    });
    let done = init::pipeline_init_with_context(svc, confirm)
        .map_err(|e| failed("pipeline_init_with_context", e))?;
    let ws = done
        .workspace
        .clone()
        .ok_or_else(|| anyhow!("pipeline_init_with_context returned no workspace"))?;
    let skipped = done.skipped_phases.clone().unwrap_or_default();
    say(&format!(
        "effort {effort} ({} flow), {}{}",
        done.flow_template.clone().unwrap_or_default(),
        if skipped.is_empty() {
            "no phase skipped".to_string()
        } else {
            format!("skipping {}", skipped.join(", "))
        },
        // The pull-request phases are skipped when the run reaches them.
        if opts.nopr {
            "; no pull request (--nopr)"
        } else {
            ""
        }
    ));
    if done.create_branch == Some(true)
        && let Some(branch) = done.branch.as_deref()
    {
        let ok = Command::new("git")
            .args(["checkout", "-q", "-b", branch])
            .current_dir(repo)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            say(&format!("branch {branch} (new)"));
        } else {
            say(&format!(
                "warning: could not create branch {branch}; staying on the current one"
            ));
        }
    } else if let Some(b) = current_branch {
        say(&format!("branch {b} (current)"));
    }
    Ok(ws)
}

fn show_reply(reply: &next::NextReply) {
    if let Some(r) = &reply.report_result
        && r.next_action_hint == "revision_required"
    {
        say(&format!("  ↺ revision required ({})", r.verdict_parsed));
        for f in &r.findings {
            say(&format!(
                "    [{}] {}",
                serde_json::to_value(f.severity)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                f.description
            ));
        }
    }
    if !reply.warning.is_empty() {
        say(&format!("  warning: {}", reply.warning));
    }
    if !reply.display_message.is_empty() && !matches!(reply.action, Action::Done(_)) {
        for line in reply.display_message.lines() {
            say(&shorten_line(line, 160));
        }
    }
}

/// A progress line short enough for a terminal: a long command line keeps
/// its start and says how many more arguments it had.
fn shorten_line(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_string();
    }
    let mut out = String::new();
    let mut rest = 0usize;
    for word in line.split(' ') {
        if rest == 0 && out.chars().count() + word.chars().count() < max.saturating_sub(24) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        } else if !word.is_empty() {
            rest += 1;
        }
    }
    format!("{out} … (+{rest} more)")
}

fn exec(repo: &Path, action: &Exec) -> anyhow::Result<i64> {
    let Some((program, rest)) = action.commands.split_first() else {
        bail!("exec action without a command");
    };
    let out = Command::new(program).args(rest).current_dir(repo).output();
    let check_only = action.check_only;
    let code = match out {
        Ok(out) => {
            let code = out.status.code().unwrap_or(1) as i64;
            if check_only {
                // A guarded step's check: both answers are normal.
                say(if code == 0 {
                    "  ✓ already done"
                } else {
                    "  · not done yet"
                });
            } else if code != 0 {
                say(&format!(
                    "  ✗ exit {code}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            } else {
                say("  ✓");
            }
            code
        }
        Err(e) => {
            say(&format!("  ✗ {program}: {e}"));
            127
        }
    };
    Ok(code)
}

fn write_file(repo: &Path, action: &WriteFile) -> anyhow::Result<()> {
    let path = inside(repo, &action.path)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, &action.content).with_context(|| format!("writing {}", path.display()))
}

/// The answer to a checkpoint or gate: asked on the terminal, or by
/// `--auto`; none when there is no terminal to ask on.
fn answer(
    question: &AskAction,
    auto: bool,
    retried: &mut BTreeMap<String, bool>,
) -> anyhow::Result<Option<String>> {
    let options = &question.options;
    let name = question.name.clone();
    say(&format!("\n{}\n", question.present_to_user));
    if auto {
        let has = |o: &str| options.iter().any(|x| x == o);
        let pick = if has("retry") {
            if retried.insert(name, true).is_some() {
                "abandon"
            } else {
                "retry"
            }
        } else if has("post") {
            "skip"
        } else if has("proceed") {
            "proceed"
        } else if has("approve") {
            "approve"
        } else if has("done") {
            "done"
        } else {
            "abandon"
        };
        return Ok(Some(pick.to_string()));
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(None);
    }
    // A terminal inside an agent's sandbox is not the person's.
    baton_usecases::witness::person_may_write().map_err(|m| anyhow::anyhow!(m))?;
    loop {
        eprint!("{} > ", options.join(" / "));
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim().to_string();
        let word = line
            .split([':', ' '])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if options.contains(&word) {
            return Ok(Some(line));
        }
        if !std::io::stderr().is_terminal() {
            bail!("{line:?} is not one of {}", options.join(", "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_line_is_shortened_for_people() {
        let files: Vec<String> = (0..60).map(|i| format!(".specs/x/file-{i}.md")).collect();
        let line = format!("▶ Final Commit  ·  running git add -- {}", files.join(" "));
        let short = shorten_line(&line, 160);
        assert!(short.chars().count() <= 160, "{short}");
        assert!(short.starts_with("▶ Final Commit  ·  running git add -- .specs/x/file-0.md"));
        assert!(short.ends_with("more)"), "{short}");
        assert_eq!(shorten_line("short", 160), "short");
    }

    #[test]
    fn branch_choice_parses_and_explains_bad_values() {
        assert_eq!(BranchChoice::parse("current"), Ok(BranchChoice::Current));
        assert_eq!(BranchChoice::parse("new"), Ok(BranchChoice::New));
        let e = BranchChoice::parse("main").unwrap_err();
        assert!(e.contains("`current`") && e.contains("`new`"), "{e}");
    }
}
