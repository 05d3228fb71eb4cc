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
        // Merged into the local settings `baton init` wrote (the sandbox's
        // paths on this machine).
        let local = repo.path().join(".claude/settings.local.json");
        let mut settings: Value = std::fs::read_to_string(&local)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| json!({}));
        settings["enableAllProjectMcpServers"] = json!(true);
        repo.write(".claude/settings.local.json", &settings.to_string());
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

/// Issue 18: the hooks never block a session that has no baton run. With
/// baton's hooks installed and no run anywhere, the real CLI writes a
/// source file, commits by Bash and ends its turn at once.
#[test]
fn without_a_run_the_hooks_let_every_call_and_the_end_of_the_turn_through() {
    let project = Project::new();
    let head = project.head();
    let new_file = project.path().join("src/greeting.rs");
    let server = AnthropicServer::start([
        Turn::tool(
            "Write",
            json!({"file_path": new_file, "content": "pub const HI: &str = \"hi\";\n"}),
        )
        .into(),
        Turn::tool(
            "Bash",
            json!({"command": "git add src/greeting.rs && git commit -q -m greeting", "description": "commit"}),
        )
        .into(),
        Turn::text("Done.").into(),
    ]);
    let out = project
        .claude(&server)
        .prompt("add a greeting and commit it");
    check_run(&out, &server);
    assert_eq!(out.json()["result"], "Done.", "{}", out.stdout);
    // One request per scripted turn: the end of the turn was not sent back.
    assert_eq!(server.requests().len(), 3);
    let (write, write_err) = result_of_call(&server, "Write", 0);
    assert!(!write_err, "the Write was refused: {write}");
    let (bash, bash_err) = result_of_call(&server, "Bash", 0);
    assert!(!bash_err, "the commit was refused: {bash}");
    assert_eq!(
        std::fs::read_to_string(&new_file).unwrap(),
        "pub const HI: &str = \"hi\";\n"
    );
    assert_ne!(project.head(), head, "the commit was made");
    assert!(!project.path().join(".specs").exists(), "no run was made");
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
    // A hook's refusal first: reports of 2.1.227 say hooks stopped firing
    // for MCP tools after one; with 2.1.328 the next MCP call still goes
    // through baton's hook (the answer is applied there).
    server.push([
        Turn::tool(
            "Bash",
            json!({"command": format!("baton answer {ws} approve"), "description": "answer"}),
        )
        .into(),
        answer(&ws),
        Turn::text("Recorded your answer.").into(),
    ]);
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
    let (denied, denied_err) = result_of_call(&server, "Bash", 0);
    assert!(denied_err, "{denied}");
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

/// What the scripted orchestrator asked a tool to do, by tool-use id.
#[derive(Debug, Clone)]
enum Purpose {
    ToolSearch,
    Init,
    Context,
    Next,
    /// The orchestrator's `Agent` call for the action `action_id`.
    Agent,
    /// A sub-agent's write of one of its files.
    SubWrite,
    /// The orchestrator's write of a sub-agent's output file (Claude Code
    /// 2.1.328 tells sub-agents to return reports as text, not files).
    OutputWrite,
    Exec,
    WriteFile,
}

/// A scripted orchestrator that follows baton's pipeline the way the
/// /baton-pipeline command says: every agent action through a sub-agent
/// (`Agent`, the definitions `baton init` installed), commands through
/// Bash with their argv quoted, questions left to the person.
#[derive(Default)]
struct Orchestrator {
    next_id: u64,
    purposes: std::collections::HashMap<String, Purpose>,
    ws: String,
    /// The action being carried out (its reply from baton).
    action: Value,
    /// Tasks of a fan-out not yet handed to a sub-agent.
    tasks: std::collections::VecDeque<Value>,
    /// The files the current sub-agent writes, in order.
    sub_files: std::collections::VecDeque<(String, String)>,
    /// The output file of the current sub-agent and its text.
    sub_output: Option<(String, String)>,
    /// Output files the orchestrator still writes for the batch.
    outputs_to_write: std::collections::VecDeque<(String, String)>,
    /// The marker in the current sub-agent's prompt.
    sub_marker: String,
    agents_started: Vec<String>,
    /// Prompts the sub-agents got.
    exits: Vec<i64>,
}

impl Orchestrator {
    fn call(&mut self, name: &str, input: Value, purpose: Purpose) -> Turn {
        self.next_id += 1;
        let id = format!("toolu_o{:04}", self.next_id);
        self.purposes.insert(id.clone(), purpose);
        Turn {
            blocks: vec![baton_testkit::model::anthropic::Block::ToolUse {
                id: Some(id),
                name: name.into(),
                input,
            }],
            usage: baton_testkit::model::anthropic::Usage {
                input_tokens: 120,
                output_tokens: 30,
            },
        }
    }

    fn next(&mut self, extra: Value) -> Turn {
        let mut args = json!({"workspace": self.ws});
        if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        self.call("mcp__baton__pipeline_next_action", args, Purpose::Next)
    }

    fn report(&mut self, extra: Value) -> Turn {
        let mut e = json!({"previous_action_complete": true, "previous_action_id": self.action["action_id"]});
        if let (Some(a), Some(x)) = (e.as_object_mut(), extra.as_object()) {
            a.extend(x.clone());
        }
        self.next(e)
    }

    fn start_agent(&mut self, task: Option<Value>) -> Turn {
        let action = self.action.clone();
        let agent = action["agent"]
            .as_str()
            .unwrap_or("general-purpose")
            .to_string();
        let output = task
            .as_ref()
            .and_then(|t| t["output_file"].as_str())
            .or(action["output_file"].as_str())
            .unwrap_or("out.md")
            .to_string();
        let mut prompt = action["prompt"].as_str().unwrap_or_default().to_string();
        if let Some(t) = &task {
            prompt.push_str(&format!(
                "\n\n## Assigned Task\n\nTask {}. Output file: {}/{output}\n",
                t["id"].as_str().unwrap_or("?"),
                self.ws
            ));
        }
        self.sub_marker = format!("(sub-agent {} of the test)", self.agents_started.len());
        prompt.push_str(&format!("\n{}\n", self.sub_marker));
        let mut files = std::collections::VecDeque::new();
        if agent == "implementer" {
            files.push_back((
                "src/greeting.rs".to_string(),
                "pub fn greeting() -> &'static str {\n    \"hello\"\n}\n".to_string(),
            ));
        }
        self.sub_files = files;
        self.sub_output = Some((
            format!("{}/{output}", self.ws),
            crate::common::pipeline::default_output(&output),
        ));
        self.agents_started.push(agent.clone());
        self.call(
            "Agent",
            json!({"description": format!("{} for baton", agent), "prompt": prompt, "subagent_type": agent, "run_in_background": false}),
            Purpose::Agent,
        )
    }

    fn act(&mut self, action: Value) -> Turn {
        self.action = action.clone();
        match action["type"].as_str().unwrap_or_default() {
            "spawn_agent" => {
                self.tasks = action["parallel_tasks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into();
                let first = self.tasks.pop_front();
                self.start_agent(first)
            }
            "exec" => {
                let argv: Vec<String> = action["commands"]
                    .as_array()
                    .expect("argv")
                    .iter()
                    .map(|a| {
                        format!(
                            "'{}'",
                            a.as_str().unwrap_or_default().replace('\'', "'\\''")
                        )
                    })
                    .collect();
                self.call(
                    "Bash",
                    json!({"command": argv.join(" "), "description": "run baton's command"}),
                    Purpose::Exec,
                )
            }
            "write_file" => {
                let path = self.ws.clone();
                let _ = path;
                self.call(
                    "Write",
                    json!({"file_path": action["path"], "content": action["content"]}),
                    Purpose::WriteFile,
                )
            }
            "checkpoint" | "human_gate" => Turn::text(format!(
                "{}\n\n{}",
                action["present_to_user"].as_str().unwrap_or_default(),
                action["how_to_answer"].as_str().unwrap_or_default()
            )),
            "done" => Turn::text("The pipeline is done."),
            other => panic!("unexpected action {other}: {action}"),
        }
    }

    /// The sub-agent's next file, or its final reply: its output's text.
    fn sub_done(&mut self) -> Turn {
        if !self.sub_files.is_empty() {
            return self.sub_write();
        }
        let text = self
            .sub_output
            .as_ref()
            .map(|(_, content)| content.clone())
            .unwrap_or_else(|| "Done.".into());
        Turn::text(text)
    }

    /// Writes the batch's output files from the sub-agents' replies, then
    /// reports the action.
    fn write_outputs(&mut self) -> Turn {
        if let Some((path, content)) = self.outputs_to_write.pop_front() {
            let root = self.root();
            return self.call(
                "Write",
                json!({"file_path": format!("{root}/{path}"), "content": content}),
                Purpose::OutputWrite,
            );
        }
        self.report(json!({"previous_tokens": 1000, "previous_duration_ms": 500}))
    }

    fn sub_write(&mut self) -> Turn {
        let (path, content) = self.sub_files.pop_front().expect("a file to write");
        self.call(
            "Write",
            json!({"file_path": format!("{}/{path}", self.root()), "content": content}),
            Purpose::SubWrite,
        )
    }

    fn root(&self) -> String {
        self.action["__root"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn respond(
        &mut self,
        req: &baton_testkit::model::anthropic::MessagesRequest,
        root: &str,
    ) -> Turn {
        let results = req.last_tool_results();
        if let Some(result) = results.first()
            && let Some(purpose) = self.purposes.remove(&result.tool_use_id)
        {
            let value: Value = serde_json::from_str(&result.text).unwrap_or(Value::Null);
            return match purpose {
                Purpose::ToolSearch => self.call(
                    "mcp__baton__pipeline_init",
                    json!({"arguments": "add a greeting function --nopr", "current_branch": "main"}),
                    Purpose::Init,
                ),
                Purpose::Init => self.call(
                    "mcp__baton__pipeline_init_with_context",
                    json!({"workspace": value["workspace"], "task_text": value["core_text"], "flags": value["flags"],
                           "user_confirmation": {"effort": "S", "use_current_branch": true}}),
                    Purpose::Context,
                ),
                Purpose::Context => {
                    self.ws = value["workspace"]
                        .as_str()
                        .unwrap_or_else(|| panic!("no workspace in {}", result.text))
                        .to_string();
                    self.next(json!({}))
                }
                Purpose::Next => {
                    assert!(!result.is_error, "baton refused a step: {}", result.text);
                    let mut action = value;
                    action["__root"] = json!(root);
                    self.act(action)
                }
                Purpose::SubWrite => {
                    assert!(!result.is_error, "a sub-agent's write was refused: {}", result.text);
                    self.sub_done()
                }
                Purpose::Agent => {
                    assert!(!result.is_error, "the sub-agent failed: {}", result.text);
                    if let Some(out) = self.sub_output.take() {
                        assert!(
                            result.text.contains(out.1.lines().next().unwrap_or("#")),
                            "the sub-agent's reply reaches the orchestrator: {}",
                            result.text
                        );
                        self.outputs_to_write.push_back(out);
                    }
                    if let Some(task) = self.tasks.pop_front() {
                        self.start_agent(Some(task))
                    } else {
                        self.write_outputs()
                    }
                }
                Purpose::OutputWrite => {
                    assert!(!result.is_error, "the phase's own output was refused: {}", result.text);
                    self.write_outputs()
                }
                Purpose::Exec => {
                    let code = if result.is_error {
                        result
                            .text
                            .split("Exit code ")
                            .nth(1)
                            .and_then(|t| t.split_whitespace().next())
                            .and_then(|n| n.parse::<i64>().ok())
                            .unwrap_or(1)
                    } else {
                        0
                    };
                    self.exits.push(code);
                    self.report(json!({"previous_exit_code": code, "previous_duration_ms": 10}))
                }
                Purpose::WriteFile => {
                    assert!(!result.is_error, "a write_file action was refused: {}", result.text);
                    self.report(json!({}))
                }
            };
        }
        let text = req.last_message_text();
        if !self.sub_marker.is_empty()
            && req.all_text().contains(&self.sub_marker)
            && req.messages().len() <= 2
        {
            return self.sub_done();
        }
        if text.contains("approve") && !self.ws.is_empty() {
            return self.next(json!({"user_response": "approve"}));
        }
        if !self.ws.is_empty() {
            // Anything else (a hook's message): ask baton what comes next.
            return self.next(json!({}));
        }
        self.call(
            "ToolSearch",
            json!({"query": "select:mcp__baton__pipeline_init,mcp__baton__pipeline_init_with_context,mcp__baton__pipeline_next_action,mcp__baton__pipeline_report_result"}),
            Purpose::ToolSearch,
        )
    }
}

/// A run from `pipeline_init` to its commit inside the real CLI, every
/// agent phase through a sub-agent (`Agent` with the definitions `baton
/// init` installed), the design checkpoint answered by the person in the
/// chat, and the run's commit made by the command baton handed out —
/// all under baton's hooks.
#[test]
fn a_whole_run_with_sub_agents_reaches_its_commit_under_the_hooks() {
    let project = Project::new();
    let root = std::fs::canonicalize(project.path())
        .unwrap()
        .display()
        .to_string();
    let head = project.head();
    let orchestrator = std::sync::Arc::new(std::sync::Mutex::new(Orchestrator::default()));
    let steps = |n: usize| -> Vec<Step> {
        (0..n)
            .map(|_| {
                let o = orchestrator.clone();
                let root = root.clone();
                baton_testkit::model::anthropic::step(move |req| {
                    o.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .respond(req, &root)
                })
            })
            .collect()
    };
    let server = AnthropicServer::start(steps(60));
    let claude = project.claude(&server);
    let first = claude.prompt("/baton-pipeline add a greeting function --nopr");
    check_run(&first, &server);
    let ws = orchestrator.lock().unwrap().ws.clone();
    assert!(!ws.is_empty(), "the run was created");
    let state = project.state(&ws);
    assert_eq!(state["currentPhase"], "checkpoint-a", "{}", first.stdout);
    assert_eq!(state["currentPhaseStatus"], "awaiting_human");

    // The person answers in the chat; the orchestrator carries on to the end.
    let session = first.json()["session_id"]
        .as_str()
        .expect("session")
        .to_string();
    server.push(steps(80));
    let second = claude.resume(&session, "approve");
    check_run(&second, &server);
    let o = orchestrator.lock().unwrap();
    let state = project.state(&ws);
    assert_eq!(state["currentPhase"], "completed", "{}", second.stdout);
    assert_eq!(
        second.json()["result"],
        "The pipeline is done.",
        "{}",
        second.stdout
    );
    // Every agent phase ran through a sub-agent of the installed definitions.
    assert!(
        o.agents_started.contains(&"implementer".to_string()),
        "{:?}",
        o.agents_started
    );
    assert!(o.agents_started.len() >= 4, "{:?}", o.agents_started);
    for agent in &o.agents_started {
        assert!(
            project
                .path()
                .join(format!(".claude/agents/{agent}.md"))
                .is_file(),
            "{agent}"
        );
    }
    // The checkpoint's answer is the person's, from the chat.
    let answer = state["answers"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["question"] == "checkpoint-a"))
        .cloned()
        .expect("checkpoint-a answered");
    assert_eq!(answer["by"], json!({"who": "person", "channel": "prompt"}));
    // The run's commit holds the implementer's source file and the run's
    // files, and nothing was left over.
    assert_ne!(project.head(), head, "the run committed");
    let committed = project
        .repo
        .git(&["show", "--name-only", "--format=", "HEAD"]);
    assert!(committed.contains("src/greeting.rs"), "{committed}");
    assert!(
        committed.contains(&format!("{ws}/state.json")),
        "{committed}"
    );
    assert_eq!(
        project.repo.git(&["status", "--porcelain"]),
        "",
        "a clean tree after the run"
    );
    assert!(o.exits.contains(&0));
}
