//! One agent step of `baton run`: the agents of a `spawn_agent` action
//! started (one per task of a fan-out, at once) — the built-in scripted
//! agent, a preset's CLI with the phase's scope and baton's hooks bound to
//! the run, or a command run with `sh -c` — each given its prompt (a
//! fan-out's task named in its own), their results read, and a failure
//! told apart from output that is not what the client documents.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, anyhow, bail};

use baton_usecases::Services;
use baton_usecases::headless::{self, AgentFailure, AgentScope};
use baton_usecases::pipeline::action::SpawnAgent;

use super::{Agent, RunHooks, Usage, claude, codex};

/// A use case's refusal as an error naming what was asked.
pub fn failed(what: &str, e: baton_usecases::Error) -> anyhow::Error {
    anyhow!("{what}: {} ({})", e.message, e.code.as_str())
}

/// A path inside the repository, from a relative path without `..`.
pub fn inside(repo: &Path, relative: &str) -> anyhow::Result<PathBuf> {
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
    model: String,
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
                    model: spawn.model.clone(),
                    task: Some(t.id.clone()),
                    inputs: i,
                    output: format!("{ws}/{}", t.output_file),
                }
            })
            .collect(),
        None => vec![AgentJob {
            agent: spawn.agent.clone(),
            phase: spawn.phase.clone(),
            model: spawn.model.clone(),
            task: None,
            inputs,
            output: format!("{ws}/{}", spawn.output_file),
        }],
    }
}

/// Why an agent step did not finish.
pub enum AgentStop {
    /// The agent failed: recorded as the phase's failure.
    Failed(AgentFailure),
    /// Its client's output was not what its documentation describes:
    /// nothing is recorded.
    Unreadable(String),
    /// It could not be started, or its files not written.
    Other(anyhow::Error),
}

impl From<anyhow::Error> for AgentStop {
    fn from(e: anyhow::Error) -> AgentStop {
        AgentStop::Other(e)
    }
}

/// One agent's usage: its task and what it reported.
pub type JobUsage = (Option<String>, Usage);

/// Runs the agents of one `spawn_agent` action (one per task of a fan-out,
/// at once) and, for a preset, releases their sessions afterwards; a change
/// a watched command left outside the scope fails the step.
pub fn spawn_agents(
    svc: &Services,
    repo: &Path,
    ws: &str,
    spawn: &SpawnAgent,
    agent: &Agent,
) -> Result<Vec<JobUsage>, AgentStop> {
    let jobs = jobs(ws, spawn);
    let preset = matches!(agent, Agent::Claude(_) | Agent::Codex(_));
    let scope = if preset {
        let scope = headless::phase_scope(svc, ws, &spawn.phase)
            .map_err(|e| AgentStop::Other(failed("the phase's scope", e)))?;
        let baton = std::env::current_exe().map_err(|e| {
            AgentStop::Other(anyhow!(
                "baton cannot find its own program to install its hooks in the agent's client ({e}); run baton from its installed path"
            ))
        })?;
        let hooks = RunHooks {
            baton,
            repo: svc.config.repo_root.clone(),
            specs_dir: svc.store.specs_root().to_path_buf(),
            workspace: ws.to_string(),
            sandbox: crate::sandbox::absolute(&svc.config),
        };
        Some((scope, hooks))
    } else {
        None
    };
    let results: Vec<Result<JobUsage, AgentStop>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| {
                s.spawn(|| {
                    run_agent(repo, job, &spawn.prompt, agent, scope.as_ref())
                        .map(|u| (job.task.clone(), u))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(AgentStop::Other(anyhow!("an agent thread panicked"))))
            })
            .collect()
    });
    let usage: Result<Vec<JobUsage>, AgentStop> = results.into_iter().collect();
    if !preset {
        return usage;
    }
    // Every agent of the step has exited: their sessions are released, and
    // a change their watched commands left outside the scope fails the step.
    let left = headless::release_step_agents(svc, ws)
        .map_err(|e| AgentStop::Other(failed("releasing the agents' sessions", e)))?;
    let usage = usage?;
    if !left.is_empty() {
        return Err(AgentStop::Failed(AgentFailure::left_outside(
            &spawn.agent,
            &spawn.phase,
            &left,
        )));
    }
    Ok(usage)
}

/// The last lines of an agent's error output.
fn stderr_tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn how_it_ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "ended abnormally".into(),
    }
}

fn run_agent(
    repo: &Path,
    job: &AgentJob,
    prompt: &str,
    agent: &Agent,
    scope: Option<&(AgentScope, RunHooks)>,
) -> Result<Usage, AgentStop> {
    let output = inside(repo, &job.output)?;
    let failure = |how: String, stderr: &[u8]| {
        AgentStop::Failed(AgentFailure {
            agent: job.agent.clone(),
            task: job.task.clone(),
            how,
            stderr_tail: stderr_tail(stderr),
            left_outside: false,
        })
    };
    let mut command = match agent {
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
                    std::fs::create_dir_all(parent).map_err(anyhow::Error::from)?;
                }
                std::fs::write(&path, text).map_err(anyhow::Error::from)?;
            }
            return Ok(Usage {
                tokens: 0,
                cost_usd: None,
                model: Some("scripted".into()),
            });
        }
        Agent::Command(command) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(command);
            c
        }
        Agent::Claude(program) => {
            let (scope, hooks) =
                scope.ok_or_else(|| anyhow!("no scope for the Claude Code preset"))?;
            let mut c = Command::new(program);
            c.args(claude::args(
                scope,
                std::slice::from_ref(&job.output),
                Some(&job.model),
                hooks,
            ));
            c
        }
        Agent::Codex(program) => {
            let (scope, hooks) = scope.ok_or_else(|| anyhow!("no scope for the Codex preset"))?;
            let mut c = Command::new(program);
            c.args(codex::args(scope, repo, &last_message_file(&output), hooks));
            c
        }
    };
    command
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
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .with_context(|| format!("starting the agent ({})", agent.label()))?;
    let section = job.task.as_deref().and_then(|id| {
        let dir = output.parent()?;
        let text = std::fs::read_to_string(dir.join("tasks.md")).ok()?;
        task_section(&text, id)
    });
    let task_prompt = prompt_for(job, prompt, section.as_deref());
    let writer = child.stdin.take().map(|mut stdin| {
        std::thread::spawn(move || {
            // An agent that does not read its prompt closes the pipe; that is its choice.
            let _ = stdin.write_all(task_prompt.as_bytes());
        })
    });
    let out = child.wait_with_output().map_err(anyhow::Error::from)?;
    // A client that did not exit 0 failed, with the error it reported.
    let exited_well = |out: &std::process::Output, said: Option<&str>| {
        if out.status.success() {
            return Ok(());
        }
        let said = said.map(|e| format!(" ({e})")).unwrap_or_default();
        Err(failure(
            format!("{}{said}", how_it_ended(out.status)),
            &out.stderr,
        ))
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let (usage, reply_text) = match agent {
        Agent::Claude(_) => {
            let parsed = claude::parse(&stdout);
            exited_well(&out, parsed.as_ref().ok().and_then(|r| r.error.as_deref()))?;
            let r = parsed.map_err(|e| AgentStop::Unreadable(e.0))?;
            if let Some(e) = r.error {
                return Err(failure(format!("reported an error: {e}"), &out.stderr));
            }
            (r.usage, r.text)
        }
        Agent::Codex(_) => {
            let last_file = last_message_file(&output);
            let last = std::fs::read_to_string(&last_file).unwrap_or_default();
            let _ = std::fs::remove_file(&last_file);
            let parsed = codex::parse(&stdout);
            exited_well(&out, parsed.as_ref().ok().and_then(|r| r.error.as_deref()))?;
            let mut r = parsed.map_err(|e| AgentStop::Unreadable(e.0))?;
            if let Some(e) = r.error {
                return Err(failure(format!("reported an error: {e}"), &out.stderr));
            }
            r.usage.model = codex::configured_model(
                std::env::var_os("CODEX_HOME").as_deref().map(Path::new),
                std::env::var_os("HOME").as_deref().map(Path::new),
            );
            (r.usage, if last.is_empty() { r.text } else { last })
        }
        _ => {
            if !out.status.success() {
                return Err(failure(how_it_ended(out.status), &out.stderr));
            }
            (Usage::default(), stdout)
        }
    };
    let written = std::fs::metadata(&output)
        .map(|m| m.len() > 0)
        .unwrap_or(false);
    if !written && !reply_text.trim().is_empty() {
        // The artifact write fallback: the agent's reply becomes the file.
        std::fs::write(&output, reply_text.as_bytes())
            .with_context(|| format!("writing {}", output.display()))?;
    }
    Ok(usage)
}

/// Where Codex leaves the agent's last message: beside the artifact, hidden,
/// removed once read.
fn last_message_file(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("output");
    output.with_file_name(format!(".{name}.last-message"))
}

/// The prompt one agent gets: the step's prompt, and for one task of a
/// fan-out, which task is its own — its id, and its section of `tasks.md`
/// (title, files, acceptance criteria) when the workspace has one.
fn prompt_for(job: &AgentJob, prompt: &str, section: Option<&str>) -> String {
    let Some(task) = &job.task else {
        return prompt.to_string();
    };
    let mut out = format!(
        "{prompt}\n\n## Your task\n\nYou work on task {task} only; other agents work on the other tasks at the same time, so change only what your task needs. Write your report to `{}`.\n",
        job.output
    );
    if let Some(section) = section {
        out.push_str(&format!(
            "\nTask {task} as tasks.md states it (its title, files and acceptance criteria):\n\n{}\n",
            section.trim_end()
        ));
    }
    out
}

/// Task `id`'s section of a tasks.md text: from its `## Task N:` heading to
/// the next `## ` heading.
fn task_section(tasks_md: &str, id: &str) -> Option<String> {
    let mut lines = tasks_md.lines();
    let start = lines.by_ref().find(|l| {
        l.strip_prefix("## Task ")
            .and_then(|rest| rest.split_once(':'))
            .is_some_and(|(n, _)| n.trim().trim_start_matches('0') == id.trim_start_matches('0'))
    })?;
    let body: Vec<&str> = lines.take_while(|l| !l.starts_with("## ")).collect();
    Some(format!("{start}\n{}", body.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parallel_agent_is_told_its_own_task() {
        let job = AgentJob {
            agent: "implementer".into(),
            phase: "phase-5".into(),
            model: "sonnet".into(),
            task: Some("2".into()),
            inputs: Vec::new(),
            output: ".specs/x/impl-2.md".into(),
        };
        let tasks = "# Tasks\n\n## Task 1: Core\n\nfiles:\n- a.rs\n\n## Task 2: API [parallel]\n\n**AC-1:** GET /hello answers 200\n\nfiles:\n- src/api.rs\n\n## Task 3: CLI\n";
        let section = task_section(tasks, "2").unwrap();
        assert_eq!(
            section,
            "## Task 2: API [parallel]\n\n**AC-1:** GET /hello answers 200\n\nfiles:\n- src/api.rs\n"
        );
        let p = prompt_for(&job, "Implement the tasks.", Some(&section));
        assert!(p.contains("You work on task 2 only"), "{p}");
        assert!(p.contains("`.specs/x/impl-2.md`"), "{p}");
        assert!(
            p.contains("GET /hello answers 200") && p.contains("src/api.rs"),
            "{p}"
        );
        assert!(!p.contains("Task 3: CLI"), "{p}");
        assert_eq!(task_section(tasks, "7"), None);
        assert_eq!(prompt_for(&AgentJob { task: None, ..job }, "P", None), "P");
    }
}
