//! baton inside the real Claude Code CLI (`tests/clients`, pinned), driven
//! headless by a scripted Anthropic Messages API server on loopback
//! (`baton_testkit::model::anthropic`), in scratch git repositories set up
//! by `baton init --client claude`: the CLI starts baton from `.mcp.json`,
//! runs baton's hooks from `.claude/settings.json`, and the tests read
//! what the CLI sent back to the model and what is on disk.

use std::path::{Path, PathBuf};

use baton_testkit::clients::{ClaudeCode, CliOutput};
use baton_testkit::git::GitRepo;
use baton_testkit::model::anthropic::{AnthropicServer, Step, Turn};
use serde_json::{Value, json};

use crate::common::baton_bin;
use crate::common::pipeline::{run_to_checkpoint, start_run};

/// The folder of the baton under test, first on the client's `PATH`.
fn baton_dir() -> PathBuf {
    baton_bin().parent().expect("bin folder").to_path_buf()
}

const SOURCE: &str = "fn main() {\n    println!(\"hello\");\n}\n";

/// A repository set up as a person would: a committed source file, then
/// `baton init --client claude` (committed too), and the person's local
/// choice to enable the project's MCP servers.
struct Project {
    repo: GitRepo,
    home: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let repo = GitRepo::new();
        repo.write("src/main.rs", SOURCE);
        repo.git(&["add", "src/main.rs"]);
        repo.git(&["commit", "-q", "-m", "source"]);
        let out = std::process::Command::new(baton_bin())
            .args(["init", "--client", "claude"])
            .current_dir(repo.path())
            .output()
            .expect("baton init");
        assert!(
            out.status.success(),
            "baton init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "baton init --client claude"]);
        repo.write(
            ".claude/settings.local.json",
            &json!({"enableAllProjectMcpServers": true}).to_string(),
        );
        // The person's local settings stay out of the run's commit.
        repo.write(".git/info/exclude", ".claude/settings.local.json\n");
        Project {
            repo,
            home: tempfile::tempdir().expect("home"),
        }
    }

    fn path(&self) -> &Path {
        self.repo.path()
    }

    fn claude(&self, server: &AnthropicServer) -> ClaudeCode {
        ClaudeCode::new(
            self.path(),
            self.home.path(),
            &server.base_url(),
            &[baton_dir()],
        )
    }

    fn state(&self, ws: &str) -> Value {
        let dir = self.path().join(ws);
        let live = dir.join(".state.live.json");
        let path = if live.is_file() {
            live
        } else {
            dir.join("state.json")
        };
        serde_json::from_str(&std::fs::read_to_string(path).expect("state")).expect("state json")
    }

    fn head(&self) -> String {
        self.repo.git(&["rev-parse", "HEAD"])
    }
}

fn load_tools() -> Step {
    Turn::tool(
        "ToolSearch",
        json!({"query": "select:mcp__baton__pipeline_init,mcp__baton__pipeline_init_with_context,mcp__baton__pipeline_next_action,mcp__baton__pipeline_report_result"}),
    )
    .into()
}

fn next_action(ws: &str) -> Step {
    Turn::tool("mcp__baton__pipeline_next_action", json!({"workspace": ws})).into()
}

/// Turns that try to end the turn: the stop guard blocks while a step is
/// outstanding (at most three times in a row), so a script ends with four.
fn try_to_stop() -> Vec<Step> {
    (0..4)
        .map(|i| Turn::text(format!("I am done ({i}).")).into())
        .collect()
}

fn check_run(out: &CliOutput, server: &AnthropicServer) {
    assert!(
        server.errors().0.is_empty(),
        "script errors: {:?}\nstdout: {}\nstderr: {}",
        server.errors(),
        out.stdout,
        out.stderr
    );
    assert!(
        out.success(),
        "claude failed: {}\n{}",
        out.stdout,
        out.stderr
    );
}

/// The result the model saw for the `n`-th call of `tool` (0-based).
fn result_of_call(server: &AnthropicServer, tool: &str, n: usize) -> (String, bool) {
    let requests = server.requests();
    let last = requests.last().expect("requests");
    let ids: Vec<String> = last
        .tool_uses()
        .into_iter()
        .filter(|(_, name, _)| name == tool)
        .map(|(id, _, _)| id)
        .collect();
    let id = ids
        .get(n)
        .unwrap_or_else(|| panic!("no call {n} of {tool}"));
    let result = last
        .tool_results()
        .into_iter()
        .find(|r| &r.tool_use_id == id)
        .unwrap_or_else(|| panic!("no result for {tool} #{n}"));
    (result.text, result.is_error)
}

#[test]
fn the_real_cli_starts_baton_from_mcp_json_and_returns_its_reply_to_the_model() {
    let project = Project::new();
    let server = AnthropicServer::start([
        Turn::tool(
            "ToolSearch",
            json!({"query": "select:mcp__baton__pipeline_init"}),
        )
        .into(),
        Turn::tool(
            "mcp__baton__pipeline_init",
            json!({"arguments": "add a greeting to the README", "current_branch": "main"}),
        )
        .into(),
        Turn::text("The pipeline is ready.").into(),
    ]);
    let out = project
        .claude(&server)
        .prompt("start a pipeline for: add a greeting to the README");
    check_run(&out, &server);
    assert_eq!(
        out.json()["result"],
        "The pipeline is ready.",
        "{}",
        out.stdout
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one request per scripted turn");
    assert!(
        requests[0]
            .system_text()
            .contains("mcp__baton__pipeline_init")
            || requests[0].all_text().contains("mcp__baton__pipeline_init"),
        "baton's tools are announced to the model as deferred tools"
    );
    assert!(
        requests[1]
            .tool_names()
            .contains(&"mcp__baton__pipeline_init".to_string()),
        "ToolSearch loaded baton's tool: {:?}",
        requests[1].tool_names()
    );
    let reply = requests[2]
        .result_of("mcp__baton__pipeline_init")
        .expect("the tool's result reaches the model");
    assert!(!reply.is_error, "{}", reply.text);
    let value: Value = serde_json::from_str(&reply.text).expect("baton's JSON reply");
    assert_eq!(value["spec_name"], "add-a-greeting-to-the-readme");
    assert!(
        value["workspace"]
            .as_str()
            .is_some_and(|w| w.starts_with(".specs/")),
        "{value}"
    );
}

/// Done-means (a) and (d): in phase-1 an Edit and a Write of a source file
/// are refused and the file is unchanged; a Write of the action's own
/// output file succeeds; ending the turn with phase-1 unreported brings
/// the client back to the model with the next step to take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reading_phase_refuses_source_edits_takes_its_artifact_and_cannot_stop() {
    let project = Project::new();
    let ws = start_run(project.path()).await;
    let src = project.path().join("src/main.rs");
    let artifact = project.path().join(&ws).join("analysis.md");
    let mut steps = vec![
        load_tools(),
        next_action(&ws),
        Turn::tool(
            "Edit",
            json!({"file_path": src, "old_string": "hello", "new_string": "hacked"}),
        )
        .into(),
        Turn::tool("Write", json!({"file_path": src, "content": "// gone\n"})).into(),
        Turn::tool(
            "Write",
            json!({"file_path": artifact, "content": "# Analysis\n\nThe README has no greeting.\n"}),
        )
        .into(),
    ];
    steps.extend(try_to_stop());
    let server = AnthropicServer::start(steps);
    let out = project
        .claude(&server)
        .prompt(&format!("/baton-pipeline {ws}"));
    check_run(&out, &server);

    // The session was bound by baton's reply naming the run.
    let bound = std::fs::read_dir(project.path().join(".baton/sessions"))
        .expect("session files")
        .count();
    assert!(bound >= 1);
    let (edit, edit_err) = result_of_call(&server, "Edit", 0);
    assert!(edit_err, "the Edit went through: {edit}");
    assert!(
        edit.contains("phase-1") && edit.contains("analysis.md"),
        "the refusal names the phase and what it may write: {edit}"
    );
    let (write, write_err) = result_of_call(&server, "Write", 0);
    assert!(write_err, "the Write went through: {write}");
    assert_eq!(
        std::fs::read_to_string(&src).unwrap(),
        SOURCE,
        "the source file is unchanged"
    );
    let (own, own_err) = result_of_call(&server, "Write", 1);
    assert!(!own_err, "the phase's own artifact was refused: {own}");
    assert!(
        std::fs::read_to_string(&artifact)
            .unwrap()
            .contains("no greeting")
    );

    // (d) The first attempt to stop came back to the model with the step
    // to take; the guard let the turn end after three blocks.
    let requests = server.requests();
    let after_stop = &requests[6];
    let text = after_stop.all_text();
    assert!(
        text.contains("is outstanding")
            && text.contains("previous_action_complete")
            && text.contains(&ws),
        "the client came back with baton's next step: {}",
        after_stop.last_message_text()
    );
    assert_eq!(requests.len(), 9, "three blocked stops, then the turn ends");
    let state = project.state(&ws);
    assert_eq!(state["currentPhase"], "phase-1");
    assert!(state["answers"].as_array().is_none_or(Vec::is_empty));
}

/// Done-means (b): `git add -A && git commit` by Bash mid-run is refused
/// and HEAD stays where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_in_the_middle_of_a_run_is_refused_and_head_stays() {
    let project = Project::new();
    let ws = start_run(project.path()).await;
    let head = project.head();
    project.repo.write("src/extra.rs", "// extra\n");
    let mut steps = vec![
        load_tools(),
        next_action(&ws),
        Turn::tool(
            "Bash",
            json!({"command": "git add -A && git commit -m 'wip'", "description": "commit"}),
        )
        .into(),
        Turn::tool(
            "Bash",
            json!({"command": "sh -c 'git commit -am wip'", "description": "commit"}),
        )
        .into(),
        Turn::tool(
            "Bash",
            json!({"command": "git status --short", "description": "status"}),
        )
        .into(),
    ];
    steps.extend(try_to_stop());
    let server = AnthropicServer::start(steps);
    let out = project
        .claude(&server)
        .prompt(&format!("/baton-pipeline {ws}"));
    check_run(&out, &server);
    for n in [0, 1] {
        let (text, is_error) = result_of_call(&server, "Bash", n);
        assert!(is_error, "commit #{n} went through: {text}");
        assert!(text.contains("git"), "{text}");
    }
    let (status, status_err) = result_of_call(&server, "Bash", 2);
    assert!(!status_err, "a read-only git command is refused: {status}");
    assert!(status.contains("src/extra.rs"), "{status}");
    assert_eq!(project.head(), head, "HEAD unchanged");
    assert_eq!(
        project.repo.git(&["diff", "--cached", "--name-only"]),
        "",
        "nothing was staged"
    );
}

/// Done-means (c): with the run waiting at checkpoint-a, the agent's shell
/// cannot answer it (`baton answer`, through `sh -c`, `script`, an absolute
/// path) nor drive the run (`baton run … --auto`): the run stays waiting
/// and no answer is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_checkpoint_the_agents_shell_can_neither_answer_nor_drive_the_run() {
    let project = Project::new();
    let ws = run_to_checkpoint(project.path()).await;
    let before = project.state(&ws);
    assert_eq!(before["currentPhase"], "checkpoint-a");
    assert_eq!(before["currentPhaseStatus"], "awaiting_human");
    let baton = baton_bin().display().to_string();
    let attempts = [
        format!("baton answer {ws} approve"),
        format!("baton run {ws} --auto --agent claude"),
        format!("sh -c 'baton answer {ws} approve'"),
        format!("script -qec 'baton answer {ws} approve' /dev/null"),
        format!("{baton} answer {ws} approve"),
        format!("env BATON_X=1 baton answer {ws} approve"),
        format!("echo $(baton answer {ws} approve)"),
    ];
    let mut steps = vec![load_tools(), next_action(&ws)];
    for a in &attempts {
        steps.push(Turn::tool("Bash", json!({"command": a, "description": "answer"})).into());
    }
    steps.push(Turn::text("Waiting for you to answer checkpoint-a.").into());
    let server = AnthropicServer::start(steps);
    let out = project
        .claude(&server)
        .prompt(&format!("/baton-pipeline {ws}"));
    check_run(&out, &server);
    for (n, a) in attempts.iter().enumerate() {
        let (text, is_error) = result_of_call(&server, "Bash", n);
        assert!(is_error, "{a} went through: {text}");
        assert!(text.contains("baton"), "{a}: {text}");
    }
    let after = project.state(&ws);
    assert_eq!(after["currentPhase"], "checkpoint-a");
    assert_eq!(after["currentPhaseStatus"], "awaiting_human");
    assert_eq!(after["answers"], before["answers"], "no answer recorded");
    // Waiting for a person lets the turn end at once, and the person is
    // told how to answer.
    assert_eq!(server.requests().len(), 2 + attempts.len() + 1);
    let result = out.json();
    assert_eq!(result["result"], "Waiting for you to answer checkpoint-a.");
}

/// Done-means (e): the model's `user_response: approve` is refused before
/// the person speaks; after the person's own prompt `approve` (checked
/// against the client's transcript) it is accepted and recorded with the
/// person's chat channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_persons_approve_in_the_chat_is_recorded_as_theirs() {
    let project = Project::new();
    let ws = run_to_checkpoint(project.path()).await;
    let answer = |ws: &str| -> Step {
        Turn::tool(
            "mcp__baton__pipeline_next_action",
            json!({"workspace": ws, "user_response": "approve"}),
        )
        .into()
    };
    let server = AnthropicServer::start([
        load_tools(),
        next_action(&ws),
        answer(&ws),
        Turn::text("Checkpoint-a waits for your answer.").into(),
    ]);
    let claude = project.claude(&server);
    let first = claude.prompt(&format!("/baton-pipeline {ws}"));
    check_run(&first, &server);
    let (refused, is_error) = result_of_call(&server, "mcp__baton__pipeline_next_action", 1);
    assert!(
        is_error,
        "the agent answered the person's question: {refused}"
    );
    assert!(
        refused.contains("person_only") || refused.contains("person"),
        "{refused}"
    );
    assert_eq!(project.state(&ws)["currentPhaseStatus"], "awaiting_human");

    // The person answers in the chat; the model passes it on.
    let session = first.json()["session_id"]
        .as_str()
        .expect("session id")
        .to_string();
    server.push([answer(&ws), Turn::text("Recorded your answer.").into()]);
    server.push(try_to_stop());
    let second = claude.resume(&session, "approve");
    check_run(&second, &server);
    let requests = server.requests();
    let prompt_request = &requests[4];
    assert!(
        prompt_request.all_text().contains("the person answered"),
        "the hook told the model what the person said: {}",
        prompt_request.last_message_text()
    );
    let (accepted, is_error) = result_of_call(&server, "mcp__baton__pipeline_next_action", 2);
    assert!(!is_error, "the person's answer was refused: {accepted}");
    let state = project.state(&ws);
    let answers = state["answers"].as_array().expect("answers");
    let last = answers.last().expect("an answer");
    assert_eq!(last["question"], "checkpoint-a", "{last}");
    assert_eq!(last["by"]["who"], "person", "{last}");
    assert_eq!(last["by"]["channel"], "prompt", "{last}");
    assert_ne!(state["currentPhase"], "checkpoint-a", "the run moved on");
}
