//! Driving the seed pipeline from tests the way an orchestrator does:
//! scripted agent outputs, exec through a real process, and a person who
//! answers every question at their terminal.

#![allow(
    dead_code,
    reason = "shared by several test or bench targets; each uses part of it"
)]

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use serde_json::{Value, json};

use super::{Client, Repo};

/// Scripted agent outputs: per output file, a queue of contents (the last one
/// repeats); files without a script get a plausible default.
#[derive(Default)]
pub struct Script {
    /// Per output file, its contents in order.
    pub outputs: BTreeMap<String, VecDeque<String>>,
}

impl Script {
    pub fn with(mut self, file: &str, contents: &[&str]) -> Script {
        self.outputs.insert(
            file.to_string(),
            contents.iter().map(|c| c.to_string()).collect(),
        );
        self
    }

    pub fn content(&mut self, file: &str) -> String {
        if let Some(queue) = self.outputs.get_mut(file) {
            if queue.len() > 1 {
                return queue.pop_front().unwrap_or_default();
            }
            if let Some(last) = queue.front() {
                return last.clone();
            }
        }
        default_output(file)
    }
}

pub const TASKS_MD: &str = "# Tasks\n\n## Task 1: Core\n\nmode: sequential\ndepends_on: []\nfiles:\n- src/core.rs\n\n## Task 2: API [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- src/api.rs\n\n## Task 3: CLI [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- src/cli.rs\n";

pub fn default_output(file: &str) -> String {
    match file {
        "design.md" => "# Design\n\n## Approach\n\nDo it.\n\n## Risks\n\nNone.\n".into(),
        "review-design.md" | "review-tasks.md" => {
            "# Review\n\n## Verdict: APPROVE\n\n**1. [MINOR] Naming**\n".into()
        }
        "tasks.md" => TASKS_MD.into(),
        f if f.starts_with("review-") => "# Review\n\n## Verdict: PASS\n".into(),
        f => format!("# {f}\n\nWritten by the scripted agent.\n"),
    }
}

/// What the loop saw: one entry per action returned.
#[derive(Debug, Default)]
pub struct Trace {
    /// One line per action.
    pub steps: Vec<String>,
    /// The prompts of spawned agents.
    pub prompts: Vec<String>,
    /// The last action.
    pub last: Value,
}

impl Trace {
    pub fn spawned_phases(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(|s| s.strip_prefix("spawn_agent "))
            .map(|s| s.split(' ').next().unwrap_or("").to_string())
            .collect()
    }
}

/// Performs one action the way an orchestrator would; returns the arguments
/// of the next `pipeline_next_action` call.
pub fn perform(
    repo: &Path,
    ws: &str,
    action: &Value,
    script: &mut Script,
    answers: &mut VecDeque<String>,
) -> Value {
    let dir = repo.join(ws);
    match action["type"].as_str().unwrap_or("") {
        "spawn_agent" => {
            let mut outputs = Vec::new();
            if let Some(tasks) = action["parallel_tasks"].as_array() {
                for t in tasks {
                    outputs.push(t["output_file"].as_str().unwrap().to_string());
                }
            } else {
                outputs.push(action["output_file"].as_str().unwrap().to_string());
            }
            for out in outputs {
                let text = script.content(&out);
                if text != "<skip>" {
                    std::fs::write(dir.join(&out), text).unwrap();
                }
            }
            json!({"workspace": ws, "previous_action_complete": true, "previous_tokens": 1200, "previous_duration_ms": 3000})
        }
        "exec" => {
            let argv: Vec<String> = action["commands"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            let code = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(repo)
                .output()
                .map(|o| o.status.code().unwrap_or(1))
                .unwrap_or(127);
            json!({"workspace": ws, "previous_action_complete": true, "previous_exit_code": code})
        }
        "write_file" => {
            let path = repo.join(action["path"].as_str().unwrap());
            std::fs::write(path, action["content"].as_str().unwrap()).unwrap();
            json!({"workspace": ws, "previous_action_complete": true})
        }
        "checkpoint" | "human_gate" => {
            let answer = answers.pop_front().unwrap_or_else(|| {
                let options = action["options"].as_array().unwrap();
                options[0].as_str().unwrap().to_string()
            });
            // Every question of the seed pipeline is a person's: they
            // answer at their terminal, and the agent asks for the next
            // action.
            assert_eq!(action["answered_by"], "person", "{action}");
            super::person_answer(repo, ws, &answer);
            json!({"workspace": ws})
        }
        other => panic!("unexpected action {other}: {action}"),
    }
}

pub fn describe(action: &Value) -> String {
    match action["type"].as_str().unwrap_or("") {
        "spawn_agent" => format!(
            "spawn_agent {} {}",
            action["phase"].as_str().unwrap_or(""),
            action["agent"].as_str().unwrap_or("")
        ),
        "checkpoint" | "human_gate" => format!(
            "{} {}",
            action["type"].as_str().unwrap_or(""),
            action["name"].as_str().unwrap_or("")
        ),
        "exec" if action["check_only"] == true => {
            format!("check {}", action["phase"].as_str().unwrap_or(""))
        }
        "exec" => format!("exec {}", action["phase"].as_str().unwrap_or("")),
        "write_file" => format!("write_file {}", action["phase"].as_str().unwrap_or("")),
        other => other.to_string(),
    }
}

/// A temporary repository that is a real git repository (the tail phases commit).
pub fn git_repo() -> Repo {
    let repo = Repo::new();
    std::fs::remove_dir(repo.path().join(".git")).unwrap();
    for args in [
        &["init", "-q"][..],
        &["config", "user.name", "baton test"],
        &["config", "user.email", "test@example.invalid"],
        &["config", "commit.gpgsign", "false"],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    repo
}

/// Creates a pipeline workspace through the two init tools.
pub async fn create(c: &Client, text: &str, effort: &str, flags: &str) -> String {
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": format!("{text} {flags}")}),
        )
        .await;
    let done = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"], "user_confirmation": {"effort": effort, "use_current_branch": true}}),
        )
        .await;
    done["workspace"].as_str().unwrap().to_string()
}

/// Performs actions until one satisfies `stop` and returns it, unperformed;
/// the run must not end first.
pub async fn drive_until(
    c: &Client,
    repo: &Repo,
    ws: &str,
    script: &mut Script,
    stop: impl Fn(&Value) -> bool,
) -> Value {
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    for _ in 0..100 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if stop(&a) {
            return a;
        }
        assert_ne!(a["type"], "done", "the run ended first: {a}");
        args = perform(repo.path(), ws, &a, script, &mut answers);
    }
    panic!("no such action within 100 steps")
}

/// Performs `action` (no person's answers queued) and asks for the next
/// one: one turn of the loop.
pub async fn perform_and_next(
    c: &Client,
    repo: &Repo,
    ws: &str,
    action: &Value,
    script: &mut Script,
) -> Value {
    let args = perform(repo.path(), ws, action, script, &mut VecDeque::new());
    c.ok("pipeline_next_action", args).await
}

/// Runs the loop until `done` (or `limit` actions).
pub async fn drive(
    c: &Client,
    repo: &Repo,
    ws: &str,
    script: &mut Script,
    answers: &[&str],
    limit: usize,
) -> Trace {
    let mut answers: VecDeque<String> = answers.iter().map(|a| a.to_string()).collect();
    let mut trace = Trace::default();
    let mut args = json!({"workspace": ws});
    for _ in 0..limit {
        let action = c.ok("pipeline_next_action", args.clone()).await;
        trace.steps.push(describe(&action));
        if let Some(p) = action["prompt"].as_str() {
            trace.prompts.push(p.to_string());
        }
        if action["type"] == "done" {
            trace.last = action;
            return trace;
        }
        args = perform(repo.path(), ws, &action, script, &mut answers);
        trace.last = action;
    }
    trace
}

/// Starts a run of effort S (`--nopr`) through baton's MCP tools and asks
/// for its first action (phase-1 is handed out); returns its workspace.
pub async fn start_run(repo: &Path) -> String {
    let c = super::spawn(repo, &[], &[]).await;
    let ws = create(&c, "add a greeting", "S", "--nopr").await;
    c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    ws
}

/// Starts a run of effort S (`--nopr`) and drives it, the agent's work
/// scripted, until it waits at its first checkpoint; returns its workspace.
pub async fn run_to_checkpoint(repo: &Path) -> String {
    let c = super::spawn(repo, &[], &[]).await;
    let ws = create(&c, "add a greeting", "S", "--nopr").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    for _ in 0..20 {
        let action = c.ok("pipeline_next_action", args.clone()).await;
        if action["type"] == "checkpoint" {
            return ws;
        }
        args = perform(repo, &ws, &action, &mut script, &mut answers);
        args["previous_action_id"] = action["action_id"].clone();
    }
    panic!("the run never reached a checkpoint");
}

/// Starts a run of effort S (`--nopr`) and drives it (the agent's work
/// scripted, a person approving at the terminal) until `phase` is handed
/// out; returns its workspace and that action.
pub async fn run_to_phase(repo: &Path, phase: &str) -> (String, Value) {
    let c = super::spawn(repo, &[], &[]).await;
    let ws = create(&c, "add a greeting", "S", "--nopr").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    for _ in 0..60 {
        let action = c.ok("pipeline_next_action", args.clone()).await;
        if action["phase"] == phase && action["type"] != "checkpoint" {
            return (ws, action);
        }
        args = perform(repo, &ws, &action, &mut script, &mut answers);
        args["previous_action_id"] = action["action_id"].clone();
    }
    panic!("the run never reached {phase}");
}
