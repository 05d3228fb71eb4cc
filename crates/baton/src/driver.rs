//! The headless driver: `baton run` and `baton demo` drive a whole pipeline
//! through the same use cases the MCP tools call (in-process, typed, same
//! validation, same events), executing each action themselves: agents as
//! commands (or the built-in scripted agent), `exec` argv without a shell,
//! `write_file`, and checkpoints asked on the terminal or answered by `--auto`.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, anyhow, bail};

use baton_state::{Actor, Who};
use baton_usecases::Services;
use baton_usecases::pipeline::action::{
    Action, Exec, Question as AskAction, SpawnAgent, WriteFile,
};
use baton_usecases::pipeline::init;
use baton_usecases::pipeline::step::{self, NextArgs};

/// Where agents come from.
#[derive(Debug, Clone)]
pub enum Agent {
    /// The built-in deterministic scripted agent (no LLM).
    Scripted,
    /// A command run with `sh -c`, the prompt on stdin.
    Command(String),
}

impl Agent {
    /// Parses `--agent`: `builtin:scripted` or a command line.
    pub fn parse(text: &str) -> Agent {
        if text == "builtin:scripted" {
            Agent::Scripted
        } else {
            Agent::Command(text.to_string())
        }
    }
}

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
}

/// The most actions one run may take (a runaway guard).
const MAX_ACTIONS: usize = 500;

fn failed(what: &str, e: baton_usecases::Error) -> anyhow::Error {
    anyhow!("{what}: {} ({})", e.message, e.code.as_str())
}

fn say(line: &str) {
    eprintln!("{line}");
}

/// Drives a pipeline from the task text to `done`.
pub fn run(svc: &Services, repo: &Path, opts: &RunOptions) -> anyhow::Result<RunOutcome> {
    let started = Instant::now();
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
    let init = init::pipeline_init(
        svc,
        init::InitArgs {
            arguments,
            current_branch: None,
        },
    )
    .map_err(|e| failed("pipeline_init", e))?;
    if let Some(errors) = &init.errors {
        bail!("pipeline_init: {}", errors.join("; "));
    }
    let ws = match (&init.resume_mode, &init.workspace) {
        (Some(_), Some(ws)) => ws.clone(),
        _ => create(svc, repo, &init, opts)?,
    };
    say(&format!("workspace {ws}"));
    let mut next = NextArgs::for_workspace(&ws);
    let mut retried: BTreeMap<String, bool> = BTreeMap::new();
    for count in 1..=MAX_ACTIONS {
        let reply = step::next_action(svc, next).map_err(|e| failed("pipeline_next_action", e))?;
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
                return Ok(RunOutcome {
                    workspace: ws,
                    summary: done.summary.clone(),
                    actions: count,
                });
            }
            Action::SpawnAgent(spawn) => {
                let t = Instant::now();
                spawn_agents(repo, &ws, spawn, &opts.agent)?;
                let ms = t.elapsed().as_millis() as u64;
                say(&format!("  ✓ {:.1}s", ms as f64 / 1000.0));
                next.previous_action_complete = Some(true);
                next.previous_duration_ms = Some(ms);
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
                let given = answer(question, opts.auto, &mut retried)?;
                say(&format!("  → {given}"));
                let by = if opts.auto {
                    Actor {
                        who: Who::Auto,
                        channel: "driver".into(),
                        machine: None,
                    }
                } else {
                    Actor::person("terminal")
                };
                step::answer_question(
                    svc,
                    step::AnswerArgs {
                        workspace: ws.clone(),
                        answer: given,
                    },
                    by,
                )
                .map_err(|e| failed("answer", e))?;
            }
        }
    }
    bail!("stopped after {MAX_ACTIONS} actions: the pipeline did not finish")
}

/// The two confirmation calls; creates the branch when asked to.
fn create(
    svc: &Services,
    repo: &Path,
    init: &init::InitReply,
    opts: &RunOptions,
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
    let mut confirm = base;
    confirm.user_confirmation = Some(init::UserConfirmation {
        effort: effort.clone(),
        workspace_slug: None,
        use_current_branch: None,
        enriched_request_body: None,
    });
    let done = init::pipeline_init_with_context(svc, confirm)
        .map_err(|e| failed("pipeline_init_with_context", e))?;
    let ws = done
        .workspace
        .clone()
        .ok_or_else(|| anyhow!("pipeline_init_with_context returned no workspace"))?;
    say(&format!(
        "effort {effort} ({}), skipping {}",
        done.flow_template.clone().unwrap_or_default(),
        done.skipped_phases.clone().unwrap_or_default().join("; ")
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
            say(&format!("branch {branch}"));
        } else {
            say(&format!(
                "warning: could not create branch {branch}; staying on the current one"
            ));
        }
    }
    Ok(ws)
}

fn show_reply(reply: &step::NextReply) {
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
        say(&reply.display_message);
    }
}

/// A path inside the repository, from a relative path without `..`.
fn inside(repo: &Path, relative: &str) -> anyhow::Result<PathBuf> {
    let p = Path::new(relative);
    if relative.is_empty()
        || p.is_absolute()
        || p.components().any(|c| !matches!(c, Component::Normal(_)))
    {
        bail!("refusing path {relative:?}: not a plain relative path inside the repository");
    }
    Ok(repo.join(p))
}

/// One agent run: what to read, what to write.
struct AgentJob {
    agent: String,
    phase: String,
    task: Option<String>,
    inputs: Vec<String>,
    output: String,
}

fn jobs(ws: &str, spawn: &SpawnAgent) -> Vec<AgentJob> {
    let paths =
        |files: &[String]| -> Vec<String> { files.iter().map(|f| format!("{ws}/{f}")).collect() };
    let inputs = paths(&spawn.input_files);
    match &spawn.parallel_tasks {
        Some(tasks) => tasks
            .iter()
            .map(|t| {
                let mut i = inputs.clone();
                i.extend(paths(&t.input_files));
                AgentJob {
                    agent: spawn.agent.clone(),
                    phase: spawn.phase.clone(),
                    task: Some(t.id.clone()),
                    inputs: i,
                    output: format!("{ws}/{}", t.output_file),
                }
            })
            .collect(),
        None => vec![AgentJob {
            agent: spawn.agent.clone(),
            phase: spawn.phase.clone(),
            task: None,
            inputs,
            output: format!("{ws}/{}", spawn.output_file),
        }],
    }
}

fn spawn_agents(repo: &Path, ws: &str, spawn: &SpawnAgent, agent: &Agent) -> anyhow::Result<()> {
    let jobs = jobs(ws, spawn);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| scope.spawn(|| run_agent(repo, job, &spawn.prompt, agent)))
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow!("an agent thread panicked"))??;
        }
        Ok(())
    })
}

fn run_agent(repo: &Path, job: &AgentJob, prompt: &str, agent: &Agent) -> anyhow::Result<()> {
    let output = inside(repo, &job.output)?;
    match agent {
        Agent::Scripted => {
            let request =
                std::fs::read_to_string(output.parent().unwrap_or(repo).join("request.md"))
                    .unwrap_or_default();
            let name = output
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            let work = crate::scripted::respond(&job.agent, &name, job.task.as_deref(), &request);
            std::fs::write(&output, work.artifact)
                .with_context(|| format!("writing {}", output.display()))?;
            if let Some((file, text)) = work.repo_file {
                let path = inside(repo, &file)?;
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, text)?;
            }
            Ok(())
        }
        Agent::Command(command) => {
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(command)
                .current_dir(repo)
                .env(
                    "BATON_WORKSPACE",
                    repo.join(job.output.rsplit_once('/').map(|(d, _)| d).unwrap_or("")),
                )
                .env("BATON_PHASE", &job.phase)
                .env("BATON_AGENT", &job.agent)
                .env("BATON_OUTPUT_FILE", &output)
                .env("BATON_TASK_ID", job.task.clone().unwrap_or_default())
                .env(
                    "BATON_INPUT_FILES",
                    job.inputs
                        .iter()
                        .map(|i| repo.join(i).display().to_string())
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .with_context(|| format!("starting agent command {command:?}"))?;
            if let Some(mut stdin) = child.stdin.take() {
                // An agent that does not read its prompt closes the pipe; that is its choice.
                let _ = stdin.write_all(prompt.as_bytes());
            }
            let out = child.wait_with_output()?;
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                let tail: String = err
                    .lines()
                    .rev()
                    .take(10)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                bail!(
                    "agent {} for {} failed ({}):\n{tail}",
                    job.agent,
                    job.output,
                    out.status
                );
            }
            let written = std::fs::metadata(&output)
                .map(|m| m.len() > 0)
                .unwrap_or(false);
            if !written && !out.stdout.is_empty() {
                // The artifact write fallback: the agent's reply becomes the file.
                std::fs::write(&output, &out.stdout)?;
            }
            Ok(())
        }
    }
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

/// The answer to a checkpoint or gate: asked on the terminal, or by `--auto`.
fn answer(
    question: &AskAction,
    auto: bool,
    retried: &mut BTreeMap<String, bool>,
) -> anyhow::Result<String> {
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
        return Ok(pick.to_string());
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!(
            "{name} needs a person's answer and stdin is not a terminal: run `baton run` in a terminal, answer later with `baton answer <workspace> <option>`, or pass --auto"
        );
    }
    loop {
        eprint!("{} > ", options.join(" / "));
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            bail!("no answer (stdin closed); run again to resume at {name}");
        }
        let line = line.trim().to_string();
        let word = line
            .split([':', ' '])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if options.contains(&word) {
            return Ok(line);
        }
        if !std::io::stderr().is_terminal() {
            bail!("{line:?} is not one of {}", options.join(", "));
        }
    }
}
