//! The headless driver: `baton run` and `baton demo` drive a whole pipeline
//! through the same tool handlers the MCP server exposes (in-process, same
//! validation, same events), executing each action themselves: agents as
//! commands (or the built-in scripted agent), `exec` argv without a shell,
//! `write_file`, and checkpoints asked on the terminal or answered by `--auto`.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};

use baton_mcp::AppContext;

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

fn call(ctx: &AppContext, tool: &str, args: Value) -> anyhow::Result<Value> {
    baton_mcp::tools::call(ctx, tool, args)
        .map_err(|e| anyhow!("{tool}: {} ({})", e.message, e.code.as_str()))
}

fn say(line: &str) {
    eprintln!("{line}");
}

/// Drives a pipeline from the task text to `done`.
pub fn run(ctx: &AppContext, repo: &Path, opts: &RunOptions) -> anyhow::Result<RunOutcome> {
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
    let init = call(ctx, "pipeline_init", json!({ "arguments": arguments }))?;
    if let Some(errors) = init["errors"].as_array() {
        bail!("pipeline_init: {}", join_values(errors));
    }
    let ws = match init["resume_mode"].as_str() {
        Some(_) => init["workspace"].as_str().unwrap_or_default().to_string(),
        None => create(ctx, repo, &init, opts)?,
    };
    say(&format!("workspace {ws}"));
    let mut args = json!({ "workspace": ws });
    let mut retried: BTreeMap<String, bool> = BTreeMap::new();
    for count in 1..=MAX_ACTIONS {
        let action = call(ctx, "pipeline_next_action", args.clone())?;
        show_reply(&action);
        let kind = action["type"].as_str().unwrap_or("");
        args = match kind {
            "done" => {
                let summary = action["summary"].as_str().unwrap_or("").to_string();
                say(&format!(
                    "■ {summary} in {:.1}s{}",
                    started.elapsed().as_secs_f64(),
                    match action["summary_path"].as_str() {
                        Some(p) if !p.is_empty() => format!(" — {p}"),
                        _ => String::new(),
                    }
                ));
                return Ok(RunOutcome {
                    workspace: ws,
                    summary,
                    actions: count,
                });
            }
            "spawn_agent" => {
                let t = Instant::now();
                spawn_agents(repo, &ws, &action, &opts.agent)?;
                let ms = t.elapsed().as_millis() as u64;
                say(&format!("  ✓ {:.1}s", ms as f64 / 1000.0));
                json!({"workspace": ws, "previous_action_complete": true, "previous_duration_ms": ms})
            }
            "exec" => {
                let t = Instant::now();
                let code = exec(repo, &action)?;
                json!({"workspace": ws, "previous_action_complete": true,
                       "previous_duration_ms": t.elapsed().as_millis() as u64, "previous_exit_code": code})
            }
            "write_file" => {
                write_file(repo, &action)?;
                json!({"workspace": ws, "previous_action_complete": true})
            }
            "checkpoint" | "human_gate" => {
                let answer = answer(&action, opts.auto, &mut retried)?;
                say(&format!("  → {answer}"));
                json!({"workspace": ws, "user_response": answer})
            }
            other => bail!("unknown action type {other:?}"),
        };
    }
    bail!("stopped after {MAX_ACTIONS} actions: the pipeline did not finish")
}

fn join_values(values: &[Value]) -> String {
    values
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The two confirmation calls; creates the branch when asked to.
fn create(
    ctx: &AppContext,
    repo: &Path,
    init: &Value,
    opts: &RunOptions,
) -> anyhow::Result<String> {
    let base = json!({
        "workspace": init["workspace"],
        "task_text": init["core_text"],
        "flags": init["flags"],
    });
    let first = call(ctx, "pipeline_init_with_context", base.clone())?;
    let effort = opts
        .effort
        .clone()
        .or_else(|| {
            first["needs_user_confirmation"]["detected_effort"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "M".to_string());
    let mut confirm = base;
    confirm["user_confirmation"] = json!({ "effort": effort });
    let done = call(ctx, "pipeline_init_with_context", confirm)?;
    let ws = done["workspace"]
        .as_str()
        .ok_or_else(|| anyhow!("pipeline_init_with_context returned no workspace"))?
        .to_string();
    say(&format!(
        "effort {effort} ({}), skipping {}",
        done["flow_template"].as_str().unwrap_or(""),
        done["skipped_phases"]
            .as_array()
            .map(|a| join_values(a))
            .unwrap_or_default()
    ));
    if done["create_branch"] == true
        && let Some(branch) = done["branch"].as_str()
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

fn show_reply(action: &Value) {
    if let Some(r) = action["report_result"].as_object() {
        let hint = r
            .get("next_action_hint")
            .and_then(Value::as_str)
            .unwrap_or("");
        if hint == "revision_required" {
            say(&format!(
                "  ↺ revision required ({})",
                r.get("verdict_parsed")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ));
            for f in r
                .get("findings")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                say(&format!(
                    "    [{}] {}",
                    f["severity"].as_str().unwrap_or(""),
                    f["description"].as_str().unwrap_or("")
                ));
            }
        }
    }
    if let Some(w) = action["warning"].as_str().filter(|w| !w.is_empty()) {
        say(&format!("  warning: {w}"));
    }
    if let Some(d) = action["display_message"].as_str().filter(|d| !d.is_empty())
        && action["type"] != "done"
    {
        say(d);
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

fn jobs(ws: &str, action: &Value) -> Vec<AgentJob> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(|s| format!("{ws}/{s}")))
                    .collect()
            })
            .unwrap_or_default()
    };
    let agent = action["agent"].as_str().unwrap_or("").to_string();
    let phase = action["phase"].as_str().unwrap_or("").to_string();
    let inputs = strings(&action["input_files"]);
    match action["parallel_tasks"].as_array() {
        Some(tasks) => tasks
            .iter()
            .map(|t| {
                let mut i = inputs.clone();
                i.extend(strings(&t["input_files"]));
                AgentJob {
                    agent: agent.clone(),
                    phase: phase.clone(),
                    task: t["id"].as_str().map(str::to_string),
                    inputs: i,
                    output: format!("{ws}/{}", t["output_file"].as_str().unwrap_or("")),
                }
            })
            .collect(),
        None => vec![AgentJob {
            agent,
            phase,
            task: None,
            inputs,
            output: format!("{ws}/{}", action["output_file"].as_str().unwrap_or("")),
        }],
    }
}

fn spawn_agents(repo: &Path, ws: &str, action: &Value, agent: &Agent) -> anyhow::Result<()> {
    let prompt = action["prompt"].as_str().unwrap_or("").to_string();
    let jobs = jobs(ws, action);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| scope.spawn(|| run_agent(repo, job, &prompt, agent)))
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

fn exec(repo: &Path, action: &Value) -> anyhow::Result<i64> {
    let argv: Vec<String> = action["commands"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let Some((program, rest)) = argv.split_first() else {
        bail!("exec action without a command");
    };
    let out = Command::new(program).args(rest).current_dir(repo).output();
    let check_only = action["check_only"] == true;
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

fn write_file(repo: &Path, action: &Value) -> anyhow::Result<()> {
    let path = inside(repo, action["path"].as_str().unwrap_or(""))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, action["content"].as_str().unwrap_or(""))
        .with_context(|| format!("writing {}", path.display()))
}

/// The answer to a checkpoint or gate: asked on the terminal, or by `--auto`.
fn answer(
    action: &Value,
    auto: bool,
    retried: &mut BTreeMap<String, bool>,
) -> anyhow::Result<String> {
    let options: Vec<String> = action["options"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let name = action["name"].as_str().unwrap_or("").to_string();
    say(&format!(
        "\n{}\n",
        action["present_to_user"].as_str().unwrap_or("")
    ));
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
