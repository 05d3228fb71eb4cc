//! `baton run --agent claude` drives the real Claude Code CLI (pinned in
//! `tests/clients`) against the scripted Anthropic Messages API server on
//! loopback (`baton_testkit::model::anthropic`): every step's agent is the
//! real CLI with the phase's permissions, and the tokens the run records
//! are the ones the model server reported (issue 20).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use baton_testkit::clients::claude_env;
use baton_testkit::git::GitRepo;
use baton_testkit::model::anthropic::{AnthropicServer, MessagesRequest, Step, Turn, step};
use serde_json::{Value, json};

use crate::common::baton_bin;
use crate::common::pipeline::default_output;

/// The folder of the baton under test, first on the client's `PATH`.
fn baton_dir() -> PathBuf {
    baton_bin().parent().expect("bin folder").to_path_buf()
}

/// The file a step's prompt asks its agent to write (repository-relative):
/// the prompt's "Output File", or the task's report in a fan-out.
fn output_of(prompt: &str) -> Option<String> {
    if let Some(rest) = prompt.split("## Output File\n\n- ").nth(1) {
        return rest.lines().next().map(str::to_string);
    }
    let rest = prompt.split("Write your report to `").nth(1)?;
    rest.split('`').next().map(str::to_string)
}

/// The first prompt of the conversation a request belongs to.
fn prompt_of(req: &MessagesRequest) -> String {
    req.messages()
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .unwrap_or_default()
}

/// One scripted turn for any step's agent: phase 1 first tries to edit the
/// README (its permissions refuse it), an implementer writes a source file,
/// then every agent writes its output file with valid content and ends.
fn agent_turn(repo: &Path, req: &MessagesRequest) -> Turn {
    let prompt = prompt_of(req);
    let Some(output) = output_of(&prompt) else {
        return Turn::text("nothing to do").with_usage(7, 3);
    };
    let name = output.rsplit('/').next().unwrap_or_default().to_string();
    let done: Vec<String> = req.tool_uses().into_iter().map(|(_, n, _)| n).collect();
    let abs = |p: &str| repo.join(p).display().to_string();
    if name == "analysis.md" && !done.contains(&"Edit".to_string()) {
        return Turn::tool(
            "Edit",
            json!({"file_path": abs("README.md"), "old_string": "# demo", "new_string": "# hacked"}),
        )
        .with_usage(120, 30);
    }
    if name.starts_with("impl-") && done.is_empty() {
        let task = name.trim_start_matches("impl-").trim_end_matches(".md");
        return Turn::tool(
            "Write",
            json!({"file_path": abs(&format!("src/task{task}.txt")), "content": format!("task {task}\n")}),
        )
        .with_usage(150, 40);
    }
    if !done.contains(&"Write".to_string()) || name.starts_with("impl-") && done.len() < 2 {
        return Turn::tool(
            "Write",
            json!({"file_path": abs(&output), "content": default_output(&name)}),
        )
        .with_usage(200, 50);
    }
    Turn::text(format!("Wrote {output}.")).with_usage(90, 10)
}

fn script(repo: &Path, steps: usize) -> Vec<Step> {
    (0..steps)
        .map(|_| {
            let repo = repo.to_path_buf();
            step(move |req| agent_turn(&repo, req))
        })
        .collect()
}

struct Run {
    code: i32,
    stderr: String,
}

fn baton_run(repo: &Path, home: &Path, server: &AnthropicServer, args: &[&str]) -> Run {
    let mut c = Command::new(baton_bin());
    c.args(args)
        .current_dir(repo)
        .env_clear()
        .envs(claude_env(home, &server.base_url(), &[baton_dir()]))
        .env("BATON_FSYNC", "off")
        .stdin(Stdio::null());
    let out = c.output().expect("baton runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

fn state_of(repo: &Path) -> Value {
    let specs = repo.join(".specs");
    let ws = std::fs::read_dir(&specs)
        .expect(".specs")
        .flatten()
        .find(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .expect("a run")
        .path();
    serde_json::from_str(&std::fs::read_to_string(ws.join("state.json")).unwrap()).unwrap()
}

#[test]
fn claude_runs_every_step_of_an_effort_s_run_with_its_scope_and_real_tokens() {
    baton_testkit::clients::require("claude");
    let repo = GitRepo::new();
    repo.write("README.md", "# demo\n");
    repo.git(&["add", "README.md"]);
    repo.git(&["commit", "-q", "-m", "readme"]);
    let home = tempfile::tempdir().unwrap();
    let server = AnthropicServer::start(script(repo.path(), 80));
    let run = baton_run(
        repo.path(),
        home.path(),
        &server,
        &[
            "run",
            "Add a greeting to the README",
            "--effort",
            "S",
            "--nopr",
            "--auto",
            "--agent",
            "claude",
        ],
    );
    assert!(server.errors().0.is_empty(), "{:?}", server.errors());
    assert_eq!(run.code, 0, "{}", run.stderr);

    // (a) The run completed with its commit.
    assert!(run.stderr.contains("Pipeline completed"), "{}", run.stderr);
    let log = repo.git(&["log", "--format=%s"]);
    assert!(log.lines().next().unwrap().contains("greeting"), "{log}");
    let files = repo.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert!(
        files.contains("src/task1.txt"),
        "the implementer's file: {files}"
    );

    // (c) Phase 1's edit of a source file was refused by the CLI; the file is unchanged.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("README.md")).unwrap(),
        "# demo\n"
    );
    let refused = server
        .requests()
        .iter()
        .filter_map(|r| r.result_of("Edit"))
        .find(|r| r.is_error)
        .expect("the Edit's refusal reached the model");
    assert!(
        refused.text.to_lowercase().contains("denied") || refused.text.contains("permission"),
        "{}",
        refused.text
    );

    // (b) Every spawned phase recorded tokens > 0 and the model; the run's
    // total is what the scripted model reported.
    let state = state_of(repo.path());
    let entries = state["phaseLog"].as_array().unwrap();
    let spawned: Vec<&Value> = entries
        .iter()
        .filter(|e| e["model"] != "" && !e["model"].is_null())
        .filter(|e| {
            [
                "phase-1",
                "phase-3",
                "phase-3b",
                "phase-5",
                "phase-7",
                "final-verification",
                "final-summary",
            ]
            .contains(&e["phase"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(spawned.len(), 7, "{entries:?}");
    for e in &spawned {
        assert!(e["tokens"].as_u64().unwrap() > 0, "{e}");
        assert!(e["model"].as_str().unwrap().starts_with("claude"), "{e}");
    }
    let total: u64 = entries
        .iter()
        .map(|e| e["tokens"].as_u64().unwrap_or(0))
        .sum();
    let reported = server.reported_usage();
    assert_eq!(total, reported.input_tokens + reported.output_tokens);
}

#[test]
fn claude_implementers_of_a_fan_out_each_get_a_prompt_naming_their_own_task() {
    baton_testkit::clients::require("claude");
    let repo = GitRepo::new();
    repo.write("README.md", "# demo\n");
    repo.git(&["add", "README.md"]);
    repo.git(&["commit", "-q", "-m", "readme"]);
    let home = tempfile::tempdir().unwrap();
    let server = AnthropicServer::start(script(repo.path(), 200));
    let run = baton_run(
        repo.path(),
        home.path(),
        &server,
        &[
            "run",
            "Add a greeting command with its tests and docs",
            "--effort",
            "M",
            "--nopr",
            "--auto",
            "--agent",
            "claude",
        ],
    );
    assert!(server.errors().0.is_empty(), "{:?}", server.errors());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("(parallel · 2 tasks)"),
        "{}",
        run.stderr
    );
    // The first prompt of each implementer conversation, by its task's report.
    let mut prompts: std::collections::BTreeMap<String, String> = Default::default();
    for req in server.requests() {
        let prompt = prompt_of(&req);
        if let Some(out) = output_of(&prompt)
            && out.ends_with(".md")
            && out.contains("/impl-")
        {
            prompts.insert(out.rsplit('/').next().unwrap().to_string(), prompt);
        }
    }
    let (Some(p2), Some(p3)) = (prompts.get("impl-2.md"), prompts.get("impl-3.md")) else {
        panic!("both parallel implementers ran: {:?}", prompts.keys());
    };
    assert_ne!(p2, p3, "different prompts");
    assert!(p2.contains("task 2") && !p2.contains("task 3 only"), "{p2}");
    assert!(p3.contains("task 3") && !p3.contains("task 2 only"), "{p3}");
    for f in ["src/task2.txt", "src/task3.txt"] {
        assert!(repo.path().join(f).is_file(), "{f}");
    }
}

mod codex {
    use super::*;
    use baton_testkit::clients::codex_env;
    use baton_testkit::model::openai::{
        self, OpenAiServer, ResponsesRequest, Turn as OaTurn, step as oa_step,
    };

    /// One scripted response for any step's Codex agent: phase 1 first
    /// tries to change the README through the shell (its read-only sandbox
    /// refuses), an implementer writes its source file, then the agent's
    /// last message is its artifact.
    fn codex_turn(req: &ResponsesRequest) -> OaTurn {
        let text = req.all_text();
        let Some(output) = output_of(&text) else {
            return OaTurn::text("nothing to do").with_usage(7, 3);
        };
        let name = output.rsplit('/').next().unwrap_or_default().to_string();
        let calls = req.function_outputs().len();
        if calls == 0 && name == "analysis.md" {
            return OaTurn::shell("echo hacked > README.md").with_usage(120, 30);
        }
        if calls == 0 && name.starts_with("impl-") {
            let task = name.trim_start_matches("impl-").trim_end_matches(".md");
            return OaTurn::shell(&format!(
                "mkdir -p src && echo task {task} > src/task{task}.txt"
            ))
            .with_usage(150, 40);
        }
        OaTurn::text(default_output(&name)).with_usage(200, 50)
    }

    #[test]
    fn codex_runs_an_effort_s_run_in_its_sandboxes_with_real_tokens() {
        baton_testkit::clients::require("codex");
        let repo = GitRepo::new();
        repo.write("README.md", "# demo\n");
        repo.git(&["add", "README.md"]);
        repo.git(&["commit", "-q", "-m", "readme"]);
        let home = tempfile::tempdir().unwrap();
        let codex_home = home.path().join(".codex");
        std::fs::create_dir_all(&codex_home).unwrap();
        let server = OpenAiServer::start((0..60).map(|_| oa_step(codex_turn)));
        std::fs::write(
            codex_home.join("config.toml"),
            server.codex_provider("gpt-scripted", "SCRIPTED_MODEL_KEY"),
        )
        .unwrap();
        let out = Command::new(baton_bin())
            .args([
                "run",
                "Add a greeting to the README",
                "--effort",
                "S",
                "--nopr",
                "--auto",
                "--agent",
                "codex",
            ])
            .current_dir(repo.path())
            .env_clear()
            .envs(codex_env(home.path(), &codex_home, &[baton_dir()]))
            .env("BATON_FSYNC", "off")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(server.errors().0.is_empty(), "{:?}", server.errors());
        assert!(out.status.success(), "{stderr}");
        // (a) Completed with its commit, the implementer's file in it.
        assert!(stderr.contains("Pipeline completed"), "{stderr}");
        let files = repo.git(&["show", "--name-only", "--format=", "HEAD"]);
        assert!(files.contains("src/task1.txt"), "{files}");
        // (c) Phase 1's read-only sandbox refused the shell's write.
        assert_eq!(
            std::fs::read_to_string(repo.path().join("README.md")).unwrap(),
            "# demo\n"
        );
        let refused = server
            .requests()
            .iter()
            .filter_map(|r| r.output_of("exec_command"))
            .find(|o| o.output.contains("README.md"))
            .expect("the refusal reached the model");
        assert!(
            refused.output.contains("Read-only file system"),
            "{}",
            refused.output
        );
        // (b) Tokens per spawned phase, the configured model, the total.
        let state = state_of(repo.path());
        let entries = state["phaseLog"].as_array().unwrap();
        let spawned: Vec<&Value> = entries
            .iter()
            .filter(|e| e["model"] == "gpt-scripted")
            .collect();
        assert_eq!(spawned.len(), 7, "{entries:?}");
        assert!(
            spawned.iter().all(|e| e["tokens"].as_u64().unwrap() > 0),
            "{entries:?}"
        );
        let total: u64 = entries
            .iter()
            .map(|e| e["tokens"].as_u64().unwrap_or(0))
            .sum();
        let reported: openai::Usage = server.reported_usage();
        assert_eq!(total, reported.input_tokens + reported.output_tokens);
    }
}
