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

/// The implementers' prompts among `prompts`, by their task's report
/// (`impl-2.md`); a later prompt of a conversation replaces an earlier one.
fn implementer_prompts(
    prompts: impl IntoIterator<Item = String>,
) -> std::collections::BTreeMap<String, String> {
    let mut by_report = std::collections::BTreeMap::new();
    for prompt in prompts {
        if let Some(out) = output_of(&prompt)
            && out.ends_with(".md")
            && out.contains("/impl-")
        {
            by_report.insert(out.rsplit('/').next().unwrap().to_string(), prompt);
        }
    }
    by_report
}

/// The run's folder (`.specs/<run>`) from an output file of it.
fn workspace_of(output: &str) -> String {
    output
        .rsplit_once('/')
        .map(|(d, _)| d)
        .unwrap_or("")
        .to_string()
}

/// One scripted turn for any step's agent. Phase 1 first tries to edit the
/// README and to commit (refused: it may write only its analysis); an
/// implementer first tries the person's `baton answer` and a commit
/// (refused by baton's hooks inside the CLI), then writes a source file;
/// then every agent writes its output file with valid content and ends.
fn agent_turn(repo: &Path, req: &MessagesRequest) -> Turn {
    let prompt = prompt_of(req);
    let Some(output) = output_of(&prompt) else {
        return Turn::text("nothing to do").with_usage(7, 3);
    };
    let name = output.rsplit('/').next().unwrap_or_default().to_string();
    let ws = workspace_of(&output);
    let done = req.tool_uses().len();
    let abs = |p: &str| repo.join(p).display().to_string();
    let write_output = || {
        Turn::tool(
            "Write",
            json!({"file_path": abs(&output), "content": default_output(&name)}),
        )
        .with_usage(200, 50)
    };
    let finished = || Turn::text(format!("Wrote {output}.")).with_usage(90, 10);
    if name == "analysis.md" {
        return match done {
            0 => Turn::tool(
                "Edit",
                json!({"file_path": abs("README.md"), "old_string": "# demo", "new_string": "# hacked"}),
            )
            .with_usage(120, 30),
            1 => Turn::tool("Bash", json!({"command": "git commit --allow-empty -m sneaky"}))
                .with_usage(60, 20),
            2 => write_output(),
            _ => finished(),
        };
    }
    if let Some(task) = name
        .strip_prefix("impl-")
        .and_then(|n| n.strip_suffix(".md"))
    {
        return match done {
            0 => Turn::tool("Bash", json!({"command": format!("baton answer {ws} approve")}))
                .with_usage(60, 20),
            1 => Turn::tool("Bash", json!({"command": "git commit --allow-empty -m wip"}))
                .with_usage(60, 20),
            2 => Turn::tool(
                "Write",
                json!({"file_path": abs(&format!("src/task{task}.txt")), "content": format!("task {task}\n")}),
            )
            .with_usage(150, 40),
            3 => write_output(),
            _ => finished(),
        };
    }
    if done == 0 {
        write_output()
    } else {
        finished()
    }
}

/// Every Bash command the model sent, with what came back to it.
fn bash_results(
    server: &AnthropicServer,
) -> Vec<(String, baton_testkit::model::anthropic::ToolResult)> {
    let mut out = Vec::new();
    for req in server.requests() {
        let uses = req.tool_uses();
        for result in req.last_tool_results() {
            if let Some((_, _, input)) = uses
                .iter()
                .find(|(id, name, _)| *id == result.tool_use_id && name == "Bash")
            {
                out.push((
                    input["command"].as_str().unwrap_or_default().to_string(),
                    result,
                ));
            }
        }
    }
    out
}

/// The result the model got for the first Bash command starting with `prefix`.
fn bash_result(
    server: &AnthropicServer,
    prefix: &str,
) -> baton_testkit::model::anthropic::ToolResult {
    bash_results(server)
        .into_iter()
        .find(|(c, _)| c.starts_with(prefix))
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("the model sent `{prefix}…`"))
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

/// `baton run TEXT --effort E --nopr --auto --agent claude` in `repo`
/// against `server`.
fn claude_run(repo: &Path, home: &Path, server: &AnthropicServer, text: &str, effort: &str) -> Run {
    let mut c = Command::new(baton_bin());
    c.args([
        "run", text, "--effort", effort, "--nopr", "--auto", "--agent", "claude",
    ])
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
    repo.commit_file("README.md", "# demo\n", "readme");
    let home = tempfile::tempdir().unwrap();
    let server = AnthropicServer::start(script(repo.path(), 80));
    let run = claude_run(
        repo.path(),
        home.path(),
        &server,
        "Add a greeting to the README",
        "S",
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
    // The gate inside the CLI: baton's hooks, bound to the run, refused
    // phase 1's commit, and the implementer's `baton answer` (a person's
    // command) and commit in a phase whose tools allow any Bash command.
    for (prefix, why) in [
        ("git commit --allow-empty -m sneaky", "git commit"),
        ("baton answer", "person"),
        ("git commit --allow-empty -m wip", "git commit"),
    ] {
        let r = bash_result(&server, prefix);
        assert!(r.is_error, "{prefix}: {}", r.text);
        assert!(
            r.text.contains("hook error: baton:") && r.text.contains(why),
            "{prefix} was not refused by baton's hook: {}",
            r.text
        );
    }
    assert_eq!(
        log.lines().skip(1).collect::<Vec<_>>(),
        ["readme", "initial commit"],
        "only the run's own commit was added: {log}"
    );
    assert!(
        !repo.path().join(".baton/sessions").exists()
            || std::fs::read_dir(repo.path().join(".baton/sessions"))
                .unwrap()
                .flatten()
                .all(|e| !e.file_name().to_string_lossy().ends_with(".json")),
        "the agents' sessions were released"
    );
    let refused = server
        .requests()
        .iter()
        .filter_map(|r| r.result_of("Edit"))
        .find(|r| r.is_error)
        .expect("the Edit's refusal reached the model");
    // Refused by baton's hook (it runs before Claude Code's own permission
    // rules, which would refuse it too), naming what the phase may write.
    assert!(
        refused
            .text
            .contains("hook error: baton: writing README.md is outside the phase's scope"),
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
    repo.commit_file("README.md", "# demo\n", "readme");
    // With `baton init`'s own hooks in the repository too: its stop guard
    // lets an agent `baton run` started end its turn when its step is done.
    let init = Command::new(baton_bin())
        .args(["init", "--client", "claude"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "baton init"]);
    let home = tempfile::tempdir().unwrap();
    let server = AnthropicServer::start(script(repo.path(), 200));
    let run = claude_run(
        repo.path(),
        home.path(),
        &server,
        "Add a greeting command with its tests and docs",
        "M",
    );
    assert!(server.errors().0.is_empty(), "{:?}", server.errors());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("(parallel · 2 tasks)"),
        "{}",
        run.stderr
    );
    let prompts = implementer_prompts(server.requests().iter().map(prompt_of));
    let (Some(p2), Some(p3)) = (prompts.get("impl-2.md"), prompts.get("impl-3.md")) else {
        panic!("both parallel implementers ran: {:?}", prompts.keys());
    };
    assert_ne!(p2, p3, "different prompts");
    assert!(p2.contains("task 2") && !p2.contains("task 3 only"), "{p2}");
    assert!(p3.contains("task 3") && !p3.contains("task 2 only"), "{p3}");
    for f in ["src/task2.txt", "src/task3.txt"] {
        assert!(repo.path().join(f).is_file(), "{f}");
    }
    let trapped: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.all_text())
        .filter(|t| t.contains("Stop hook"))
        .collect();
    assert!(trapped.is_empty(), "a stop hook held an agent: {trapped:?}");
}

/// A verifier may run any command (its scope's `commands: ['*']`), and the
/// hooks watch what it changes: a file it leaves outside its scope fails
/// the step, and the run stops with what to revert and how to resume.
#[test]
fn claude_a_change_a_watched_command_leaves_outside_the_scope_fails_the_step() {
    baton_testkit::clients::require("claude");
    let repo = GitRepo::new();
    repo.commit_file("README.md", "# demo\n", "readme");
    let home = tempfile::tempdir().unwrap();
    let root = repo.path().to_path_buf();
    let steps: Vec<Step> = (0..80)
        .map(|_| {
            let root = root.clone();
            step(move |req| {
                let prompt = prompt_of(req);
                let verifier =
                    output_of(&prompt).is_some_and(|o| o.ends_with("/final-verification.md"));
                if verifier && req.tool_uses().is_empty() {
                    return Turn::tool("Bash", json!({"command": "touch stray.txt"}))
                        .with_usage(50, 10);
                }
                agent_turn(&root, req)
            })
        })
        .collect();
    let server = AnthropicServer::start(steps);
    let run = claude_run(
        repo.path(),
        home.path(),
        &server,
        "Add a greeting to the README",
        "S",
    );
    assert!(server.errors().0.is_empty(), "{:?}", server.errors());
    assert_eq!(run.code, 2, "{}", run.stderr);
    // The command ran (the scope allows it) and the hook told the agent at once.
    assert!(repo.path().join("stray.txt").is_file());
    let texts: Vec<String> = server.requests().iter().map(|r| r.all_text()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("changed stray.txt outside the scope of final-verification")),
        "the hook's report reached the model: {:?}",
        texts.last()
    );
    assert!(
        run.stderr
            .contains("left changes outside the scope of final-verification")
            && run
                .stderr
                .contains("stray.txt (changed by `touch stray.txt`)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("baton run .specs/"),
        "the resume command: {}",
        run.stderr
    );
    let state = state_of(repo.path());
    assert_eq!(state["currentPhase"], "final-verification", "{state}");
    assert_eq!(state["currentPhaseStatus"], "failed", "{state}");
    let log = repo.git(&["log", "--format=%s"]);
    assert_eq!(
        log.lines().next(),
        Some("readme"),
        "nothing committed: {log}"
    );
}

mod codex {
    use super::*;
    use baton_testkit::clients::codex_env;
    use baton_testkit::model::openai::{
        self, OpenAiServer, ResponsesRequest, Turn as OaTurn, step as oa_step,
    };

    /// One scripted response for any step's Codex agent: phase 1 first
    /// tries to change the README through the shell and to commit, an
    /// implementer tries the person's `baton answer` and a commit (all
    /// refused by baton's hooks inside Codex), then writes its source file;
    /// then the agent's last message is its artifact.
    fn codex_turn(req: &ResponsesRequest) -> OaTurn {
        let text = req.all_text();
        let Some(output) = output_of(&text) else {
            return OaTurn::text("nothing to do").with_usage(7, 3);
        };
        let name = output.rsplit('/').next().unwrap_or_default().to_string();
        let ws = workspace_of(&output);
        let calls = req.function_outputs().len();
        if name == "analysis.md" {
            match calls {
                0 => return OaTurn::shell("echo hacked > README.md").with_usage(120, 30),
                1 => {
                    return OaTurn::shell("git commit --allow-empty -m sneaky").with_usage(60, 20);
                }
                _ => {}
            }
        }
        if let Some(task) = name
            .strip_prefix("impl-")
            .and_then(|n| n.strip_suffix(".md"))
        {
            match calls {
                0 => {
                    return OaTurn::shell(&format!("baton answer {ws} approve")).with_usage(60, 20);
                }
                1 => return OaTurn::shell("git commit --allow-empty -m wip").with_usage(60, 20),
                2 => {
                    return OaTurn::shell(&format!(
                        "mkdir -p src && echo task {task} > src/task{task}.txt"
                    ))
                    .with_usage(150, 40);
                }
                _ => {}
            }
        }
        OaTurn::text(default_output(&name)).with_usage(200, 50)
    }

    /// What came back to the model for the first shell command starting
    /// with `prefix`.
    fn shell_output(server: &OpenAiServer, prefix: &str) -> String {
        for req in server.requests() {
            let outputs = req.function_outputs();
            for item in req.input() {
                if item["type"] != "function_call" {
                    continue;
                }
                let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap_or("{}"))
                    .unwrap_or_default();
                let command = args["cmd"]
                    .as_str()
                    .or_else(|| args["command"].as_str())
                    .unwrap_or_default();
                if command.starts_with(prefix)
                    && let Some(o) = outputs.iter().find(|o| o.call_id == item["call_id"])
                {
                    return o.output.clone();
                }
            }
        }
        panic!("the model sent `{prefix}…` and got its output");
    }

    /// `baton run TEXT --effort E --nopr --auto --agent codex` in `repo`
    /// with `CODEX_HOME` configured for `server`.
    fn codex_run(repo: &Path, home: &Path, server: &OpenAiServer, text: &str, effort: &str) -> Run {
        let codex_home = home.join(".codex");
        std::fs::create_dir_all(&codex_home).unwrap();
        std::fs::write(
            codex_home.join("config.toml"),
            server.codex_provider("gpt-scripted", "SCRIPTED_MODEL_KEY"),
        )
        .unwrap();
        let out = Command::new(baton_bin())
            .args([
                "run", text, "--effort", effort, "--nopr", "--auto", "--agent", "codex",
            ])
            .current_dir(repo)
            .env_clear()
            .envs(codex_env(home, &codex_home, &[baton_dir()]))
            .env("BATON_FSYNC", "off")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).to_string(),
        }
    }

    /// The person's prompt of a Codex conversation: its user message that
    /// names the agent's output (not Codex's own environment context).
    fn codex_prompt_of(req: &ResponsesRequest) -> Option<String> {
        req.input()
            .iter()
            .filter(|i| i["role"] == "user")
            .map(|i| match &i["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            })
            .find(|text| output_of(text).is_some())
    }

    #[test]
    fn codex_runs_an_effort_s_run_in_its_sandboxes_with_real_tokens() {
        baton_testkit::clients::require("codex");
        let repo = GitRepo::new();
        repo.commit_file("README.md", "# demo\n", "readme");
        let home = tempfile::tempdir().unwrap();
        let server = OpenAiServer::start((0..60).map(|_| oa_step(codex_turn)));
        let run = codex_run(
            repo.path(),
            home.path(),
            &server,
            "Add a greeting to the README",
            "S",
        );
        let stderr = run.stderr;
        assert!(server.errors().0.is_empty(), "{:?}", server.errors());
        assert_eq!(run.code, 0, "{stderr}");
        // (a) Completed with its commit, the implementer's file in it.
        assert!(stderr.contains("Pipeline completed"), "{stderr}");
        let files = repo.git(&["show", "--name-only", "--format=", "HEAD"]);
        assert!(files.contains("src/task1.txt"), "{files}");
        // (c) Phase 1's write through the shell was refused; the README
        // is unchanged. baton's hooks inside Codex refuse it (and every
        // commit, and the implementer's `baton answer`) before Codex's
        // sandbox would: phase 1 ran in the read-only sandbox, the
        // implementer in workspace-write.
        assert_eq!(
            std::fs::read_to_string(repo.path().join("README.md")).unwrap(),
            "# demo\n"
        );
        for (prefix, why) in [
            ("echo hacked > README.md", "baton:"),
            ("git commit --allow-empty -m sneaky", "git commit"),
            ("baton answer", "person"),
            ("git commit --allow-empty -m wip", "git commit"),
        ] {
            let output = shell_output(&server, prefix);
            assert!(
                output.contains("PreToolUse hook: baton:") && output.contains(why),
                "{prefix} was not refused by baton's hook: {output}"
            );
        }
        let sandbox_of = |file: &str| {
            server
                .requests()
                .iter()
                .map(|r| r.all_text())
                .find(|t| output_of(t).is_some_and(|o| o.ends_with(file)))
                .unwrap_or_else(|| panic!("a request for {file}"))
        };
        let analysis = sandbox_of("/analysis.md");
        assert!(
            analysis.contains("read-only") && !analysis.contains("workspace-write"),
            "{analysis}"
        );
        assert!(sandbox_of("/impl-1.md").contains("workspace-write"));
        let log = repo.git(&["log", "--format=%s"]);
        assert_eq!(
            log.lines().skip(1).collect::<Vec<_>>(),
            ["readme", "initial commit"],
            "only the run's own commit was added: {log}"
        );
        assert!(log.lines().next().unwrap().contains("greeting"), "{log}");
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

    #[test]
    fn codex_implementers_of_a_fan_out_each_get_a_prompt_naming_their_own_task() {
        baton_testkit::clients::require("codex");
        let repo = GitRepo::new();
        repo.commit_file("README.md", "# demo\n", "readme");
        let home = tempfile::tempdir().unwrap();
        let server = OpenAiServer::start((0..200).map(|_| oa_step(codex_turn)));
        let run = codex_run(
            repo.path(),
            home.path(),
            &server,
            "Add a greeting command with its tests and docs",
            "M",
        );
        assert!(server.errors().0.is_empty(), "{:?}", server.errors());
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr.contains("(parallel · 2 tasks)"),
            "{}",
            run.stderr
        );
        let prompts = implementer_prompts(server.requests().iter().filter_map(codex_prompt_of));
        let (Some(p2), Some(p3)) = (prompts.get("impl-2.md"), prompts.get("impl-3.md")) else {
            panic!("both parallel implementers ran: {:?}", prompts.keys());
        };
        assert_ne!(p2, p3, "different prompts");
        assert!(p2.contains("You work on task 2 only"), "{p2}");
        assert!(p3.contains("You work on task 3 only"), "{p3}");
        assert!(
            p2.contains("## Task 2: API") && !p2.contains("## Task 3:"),
            "{p2}"
        );
        assert!(
            p3.contains("## Task 3: CLI") && !p3.contains("## Task 2:"),
            "{p3}"
        );
        for f in ["src/task2.txt", "src/task3.txt"] {
            assert!(repo.path().join(f).is_file(), "{f}");
        }
    }
}
