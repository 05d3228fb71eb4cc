//! `baton hook` as each client calls it: JSON on stdin, the client's
//! answer on stdout and its exit code. Bad input (not JSON, no session,
//! an unknown event, a huge payload) gets a clear message, the client's
//! "go ahead" when no run is bound here and its refusal when one is, and
//! nothing is written. Cursor cannot run on this machine: its hooks are
//! tested with payloads in its documented format (docs/clients.md).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use baton_testkit::git::GitRepo;
use serde_json::{Value, json};

use crate::common::baton_bin;
use crate::common::pipeline::{run_to_checkpoint, start_run};

struct Hooked {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Hooked {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or(Value::Null)
    }
}

fn hook(repo: &Path, args: &[&str], stdin: &[u8]) -> Hooked {
    let mut child = Command::new(baton_bin())
        .arg("hook")
        .args(args)
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("baton hook");
    {
        let mut input = child.stdin.take().expect("stdin");
        // A hook that stops reading early closes the pipe: not an error here.
        let _ = input.write_all(stdin);
    }
    let out = child.wait_with_output().expect("wait");
    Hooked {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn claude(repo: &GitRepo, event: &str, payload: Value) -> Hooked {
    hook(repo.path(), &[event], payload.to_string().as_bytes())
}

fn pre_write(repo: &GitRepo, session: &str, file: &str) -> Value {
    json!({
        "session_id": session,
        "cwd": repo.path(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": repo.join(file), "content": "x"},
        "tool_use_id": "toolu_1",
    })
}

/// Binds `session` to `ws` the way Claude Code reports a baton tool's reply.
fn bind(repo: &GitRepo, session: &str, ws: &str) {
    let out = claude(
        repo,
        "post-tool-use",
        json!({
            "session_id": session,
            "cwd": repo.path(),
            "hook_event_name": "PostToolUse",
            "tool_name": "mcp__baton__pipeline_next_action",
            "tool_input": {"workspace": ws},
            "tool_response": json!({"type": "spawn_agent", "workspace": ws}).to_string(),
            "tool_use_id": "toolu_0",
        }),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        repo.join(&format!(".baton/sessions/{session}.json"))
            .is_file()
    );
}

fn sessions(repo: &GitRepo) -> Vec<String> {
    std::fs::read_dir(repo.join(".baton/sessions"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn without_a_bound_run_every_call_goes_ahead_and_nothing_is_written() {
    let repo = GitRepo::new();
    let out = claude(&repo, "pre-tool-use", pre_write(&repo, "s1", "src/a.rs"));
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    let out = claude(
        &repo,
        "stop",
        json!({"session_id": "s1", "cwd": repo.path(), "hook_event_name": "Stop", "stop_hook_active": false}),
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
    assert!(!repo.join(".baton").exists(), "nothing written");
}

#[test]
fn bad_input_is_explained_goes_ahead_when_nothing_is_bound_and_writes_nothing() {
    let repo = GitRepo::new();
    let cases: Vec<(Vec<&str>, Vec<u8>, &str)> = vec![
        (vec!["pre-tool-use"], b"{not json".to_vec(), "not JSON"),
        (vec!["pre-tool-use"], b"[1, 2]".to_vec(), "not a JSON object"),
        (vec!["pre-tool-use"], json!({"cwd": repo.path(), "tool_name": "Write"}).to_string().into_bytes(), "no session id"),
        (vec!["pre-tool-use"], json!({"session_id": "s1", "cwd": repo.path(), "hook_event_name": "PreToolUse"}).to_string().into_bytes(), "no tool_name"),
        (vec!["pre-tool-use"], json!({"session_id": "../../etc", "cwd": repo.path(), "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {}}).to_string().into_bytes(), "session id"),
        (vec!["pre-tool-use"], json!({"session_id": "s1", "cwd": repo.path(), "hook_event_name": "Stop"}).to_string().into_bytes(), "sent Stop"),
        (vec!["user-prompt-submit"], json!({"session_id": "s1", "cwd": repo.path(), "hook_event_name": "UserPromptSubmit"}).to_string().into_bytes(), "no prompt"),
        (vec!["after-lunch"], b"{}".to_vec(), "unknown event"),
        (vec!["pre-tool-use"], vec![b' '; 17 * 1024 * 1024], "larger than 16 MiB"),
    ];
    for (args, stdin, says) in cases {
        let out = hook(repo.path(), &args, &stdin);
        assert_eq!(out.code, 1, "{args:?} {says}: {}", out.stderr);
        assert!(
            out.stderr.contains(says),
            "{args:?}: {:?} lacks {says:?}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    }
    assert!(!repo.join(".baton").exists(), "nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_while_a_run_is_bound_is_refused_and_an_unreadable_run_fails_closed() {
    let repo = GitRepo::new();
    let ws = start_run(repo.path()).await;
    bind(&repo, "s1", &ws);
    let before = std::fs::read(repo.join(".baton/sessions/s1.json")).unwrap();
    let out = hook(repo.path(), &["pre-tool-use"], b"{not json");
    assert_eq!(out.code, 0);
    let v = out.json();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        out.stdout
    );
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("not JSON") && r.contains("bound")),
        "{v}"
    );
    // A stop with bad input is never trapped.
    let out = hook(repo.path(), &["stop"], b"{not json");
    assert_eq!(out.code, 1);
    assert_eq!(
        std::fs::read(repo.join(".baton/sessions/s1.json")).unwrap(),
        before
    );

    // The bound run's state cannot be read: writes are refused, with how a
    // person lifts it; reading tools go ahead.
    let state = repo.join(&format!("{ws}/state.json"));
    let kept = std::fs::read(&state).unwrap();
    std::fs::write(&state, "{ broken").unwrap();
    let out = claude(&repo, "pre-tool-use", pre_write(&repo, "s1", "src/a.rs"));
    let v = out.json();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        out.stdout
    );
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("cannot read run") && reason.contains(".baton/sessions"),
        "{reason}"
    );
    let read = claude(
        &repo,
        "pre-tool-use",
        json!({"session_id": "s1", "cwd": repo.path(), "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": repo.join("README.md")}}),
    );
    assert_eq!((read.code, read.stdout.as_str()), (0, ""));
    std::fs::write(&state, kept).unwrap();
    // Another session of the same repository is not this run's.
    let other = claude(&repo, "pre-tool-use", pre_write(&repo, "s2", "src/a.rs"));
    assert_eq!((other.code, other.stdout.as_str()), (0, ""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_and_codex_answers_have_their_clients_shapes() {
    let repo = GitRepo::new();
    let ws = start_run(repo.path()).await;
    bind(&repo, "s1", &ws);
    let out = claude(&repo, "pre-tool-use", pre_write(&repo, "s1", "src/a.rs"));
    let v = out.json();
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"], "PreToolUse",
        "{}",
        out.stdout
    );
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let own = claude(
        &repo,
        "pre-tool-use",
        pre_write(&repo, "s1", &format!("{ws}/analysis.md")),
    );
    assert_eq!(
        (own.code, own.stdout.as_str()),
        (0, ""),
        "the phase's own artifact"
    );

    // Codex: only the fields its schema declares (an unknown one discards
    // the whole answer).
    let payload = json!({
        "session_id": "s1", "turn_id": "t1", "cwd": repo.path(), "hook_event_name": "PreToolUse",
        "model": "gpt", "permission_mode": "bypassPermissions",
        "tool_name": "Bash", "tool_input": {"command": "git commit -am x"}, "tool_use_id": "call_1",
    });
    let out = hook(
        repo.path(),
        &["--client", "codex", "pre-tool-use"],
        payload.to_string().as_bytes(),
    );
    let v = out.json();
    let allowed = [
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
    ];
    let keys: Vec<&String> = v["hookSpecificOutput"]
        .as_object()
        .expect("object")
        .keys()
        .collect();
    assert!(
        keys.iter().all(|k| allowed.contains(&k.as_str())),
        "{keys:?}"
    );
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    // A Codex stop with the step outstanding: block with a reason.
    let stop = json!({"session_id": "s1", "turn_id": "t1", "cwd": repo.path(), "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "done"});
    let out = hook(
        repo.path(),
        &["--client", "codex", "stop"],
        stop.to_string().as_bytes(),
    );
    let v = out.json();
    assert_eq!(v["decision"], "block", "{}", out.stdout);
    assert!(
        v["reason"]
            .as_str()
            .is_some_and(|r| r.contains("outstanding"))
    );
    assert_eq!(v.as_object().unwrap().len(), 2);
}

/// Cursor's hooks, with payloads in its documented format: the session is
/// its `conversation_id`, baton's server is recognised by its command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_payloads_get_permission_answers_and_never_ask() {
    let repo = GitRepo::new();
    let ws = run_to_checkpoint(repo.path()).await;
    let common = |event: &str| {
        json!({
            "conversation_id": "c1", "generation_id": "g1", "hook_event_name": event,
            "workspace_roots": [repo.path()],
        })
    };
    let cursor = |arg: &str, payload: Value| {
        hook(
            repo.path(),
            &["--client", "cursor", arg],
            payload.to_string().as_bytes(),
        )
    };
    // Not bound yet: go ahead.
    let mut shell = common("beforeShellExecution");
    shell["command"] = json!(format!("baton answer {ws} approve"));
    shell["cwd"] = json!(repo.path());
    assert_eq!(
        cursor("before-shell-execution", shell.clone()).json(),
        json!({"permission": "allow"})
    );
    // Baton's MCP reply binds the conversation.
    let mut after = common("afterMCPExecution");
    after["tool_name"] = json!("pipeline_next_action");
    after["tool_input"] = json!(json!({"workspace": ws}).to_string());
    after["command"] = json!("baton serve --tools pipeline");
    after["result_json"] = json!(json!({"type": "checkpoint", "workspace": ws}).to_string());
    let out = cursor("after-mcp-execution", after);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(sessions(&repo).contains(&"c1.json".to_string()));
    // Now the shell cannot answer the checkpoint, nor commit.
    let v = cursor("before-shell-execution", shell).json();
    assert_eq!(v["permission"], "deny", "{v}");
    assert!(
        v["agent_message"]
            .as_str()
            .is_some_and(|m| m.contains("baton answer")),
        "{v}"
    );
    let mut commit = common("beforeShellExecution");
    commit["command"] = json!("git commit -am wip");
    assert_eq!(
        cursor("before-shell-execution", commit).json()["permission"],
        "deny"
    );
    let mut status = common("beforeShellExecution");
    status["command"] = json!("git status");
    assert_eq!(
        cursor("before-shell-execution", status).json(),
        json!({"permission": "allow"})
    );
    // A Write through Cursor's generic preToolUse.
    let mut write = common("preToolUse");
    write["tool_name"] = json!("Write");
    write["tool_input"] = json!({"file_path": repo.join("src/a.rs"), "content": "x"});
    assert_eq!(cursor("pre-tool-use", write).json()["permission"], "deny");
    // Another MCP server's tool while a person's question is open.
    let mut mcp = common("beforeMCPExecution");
    mcp["tool_name"] = json!("write_file");
    mcp["tool_input"] = json!("{}");
    mcp["command"] = json!("npx fs-server");
    assert_eq!(
        cursor("before-mcp-execution", mcp).json()["permission"],
        "deny"
    );
    // The run waits for a person: the agent may stop.
    let stop = cursor("stop", common("stop")).json();
    assert!(stop.get("followup_message").is_none(), "{stop}");
    // The person's prompt `approve` is kept as their answer for the next step.
    let mut prompt = common("beforeSubmitPrompt");
    prompt["prompt"] = json!("approve");
    assert_eq!(
        cursor("before-submit-prompt", prompt).json(),
        json!({"continue": true})
    );
    let session: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join(".baton/sessions/c1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(session["chat_answer"]["answer"], "proceed", "{session}");
    assert_eq!(
        session["chat_answer"]["question"], "checkpoint-a",
        "{session}"
    );
}

fn bash(repo: &GitRepo, event: &str, session: &str, command: &str, id: &str) -> Hooked {
    claude(
        repo,
        event,
        json!({
            "session_id": session, "cwd": repo.path(),
            "hook_event_name": if event == "pre-tool-use" { "PreToolUse" } else { "PostToolUse" },
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": id,
            "tool_response": {"stdout": "", "stderr": ""},
        }),
    )
}

fn next_call(repo: &GitRepo, session: &str, ws: &str) -> Hooked {
    claude(
        repo,
        "pre-tool-use",
        json!({
            "session_id": session, "cwd": repo.path(), "hook_event_name": "PreToolUse",
            "tool_name": "mcp__baton__pipeline_next_action", "tool_input": {"workspace": ws},
            "tool_use_id": "toolu_n",
        }),
    )
}

/// The verifier may run any command (`commands: ['*']`), watched: a change
/// it leaves outside its artifact is reported to the agent, the run does
/// not go on until it is reverted, and reverting it is allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_command_that_changes_sources_holds_the_run_until_reverted() {
    let repo = GitRepo::new();
    repo.write("src/main.rs", "fn main() {}\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "src"]);
    let (ws, action) =
        crate::common::pipeline::run_to_phase(repo.path(), "final-verification").await;
    assert_eq!(action["type"], "spawn_agent", "{action}");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "work so far"]);
    bind(&repo, "s1", &ws);
    // Running the test suite is allowed, watched.
    let pre = bash(&repo, "pre-tool-use", "s1", "make check", "toolu_w");
    assert_eq!((pre.code, pre.stdout.as_str()), (0, ""), "{}", pre.stderr);
    // The command changed a source file.
    repo.write("src/main.rs", "fn main() { changed() }\n");
    let post = bash(&repo, "post-tool-use", "s1", "make check", "toolu_w");
    let v = post.json();
    assert_eq!(v["decision"], "block", "{}", post.stdout);
    assert!(
        v["reason"]
            .as_str()
            .is_some_and(|r| r.contains("src/main.rs")),
        "{v}"
    );
    // The run does not go on while the change is there.
    let v = next_call(&repo, "s1", &ws).json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("revert"))
    );
    // Reverting is allowed in this reading phase; other writes are not.
    let undo = bash(
        &repo,
        "pre-tool-use",
        "s1",
        "git checkout -- src/main.rs",
        "toolu_u",
    );
    assert_eq!(
        (undo.code, undo.stdout.as_str()),
        (0, ""),
        "{}",
        undo.stdout
    );
    let other = bash(
        &repo,
        "pre-tool-use",
        "s1",
        "git checkout -- README.md",
        "toolu_o",
    );
    assert_eq!(
        other.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    repo.git(&["checkout", "--", "src/main.rs"]);
    let next = next_call(&repo, "s1", &ws);
    assert_eq!(
        (next.code, next.stdout.as_str()),
        (0, ""),
        "reverted: the run goes on"
    );
}

/// A person turns enforcement off for one run, in their terminal; it is
/// recorded; the agent's shell cannot do it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_turns_enforcement_off_for_one_run_and_it_is_recorded() {
    let repo = GitRepo::new();
    let ws = start_run(repo.path()).await;
    bind(&repo, "s1", &ws);
    assert_eq!(
        claude(&repo, "pre-tool-use", pre_write(&repo, "s1", "src/a.rs")).json()["hookSpecificOutput"]
            ["permissionDecision"],
        "deny"
    );
    // Not from the agent's shell: its hook refuses, and without a terminal
    // the command refuses too.
    let v = bash(
        &repo,
        "pre-tool-use",
        "s1",
        &format!("baton enforce off {ws}"),
        "t",
    )
    .json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let out = Command::new(baton_bin())
        .args(["enforce", "off", &ws])
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("terminal"));
    // The person, at a terminal.
    crate::common::person_runs(
        repo.path(),
        &["enforce", "off", &ws, "fixtures need writing"],
    );
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join(&format!("{ws}/state.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(state["hooks"]["off"], true, "{}", state["hooks"]);
    assert_eq!(state["hooks"]["by"], "person:terminal");
    assert_eq!(state["hooks"]["reason"], "fixtures need writing");
    let out = claude(&repo, "pre-tool-use", pre_write(&repo, "s1", "src/a.rs"));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, ""),
        "enforcement is off for this run"
    );
}

/// `baton init --client codex` keeps a sandbox mode the person chose and
/// says what it means for baton: `danger-full-access` lets the agent's
/// programs write baton's witness folder (not guaranteed).
#[test]
fn init_keeps_the_persons_codex_sandbox_mode_and_says_what_it_means() {
    let repo = GitRepo::new();
    repo.write(
        ".codex/config.toml",
        "sandbox_mode = \"danger-full-access\"\n",
    );
    let out = Command::new(baton_bin())
        .args(["init", "--client", "codex"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("danger-full-access") && said.contains("NOT GUARANTEED"),
        "{said}"
    );
    let codex = std::fs::read_to_string(repo.join(".codex/config.toml")).unwrap();
    assert!(
        codex.starts_with("sandbox_mode = \"danger-full-access\"\n"),
        "{codex}"
    );
    assert_eq!(codex.matches("sandbox_mode").count(), 1, "{codex}");
}

/// `baton init` merges its hooks into the person's settings (their own
/// hooks and keys stay), writes nothing of this machine's paths, and a
/// second run changes nothing.
#[test]
fn init_merges_hooks_keeps_the_persons_own_and_is_idempotent() {
    let repo = GitRepo::new();
    repo.write(
        ".claude/settings.json",
        &json!({"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}]}}).to_string(),
    );
    repo.write(".codex/config.toml", "# my settings\nmodel = \"o5\"\n");
    repo.write(
        ".cursor/hooks.json",
        &json!({"version": 1, "hooks": {"stop": [{"command": "mine"}]}}).to_string(),
    );
    let init = || {
        let out = Command::new(baton_bin())
            .args(["init", "--client", "all"])
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = init();
    assert!(first.contains("Next:"), "{first}");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(settings["model"], "opus");
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "{pre:?}");
    assert_eq!(pre[0]["hooks"][0]["command"], "my-guard");
    assert_eq!(pre[1]["hooks"][0]["command"], "baton hook pre-tool-use");
    for event in [
        "PostToolUse",
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
        "SessionStart",
    ] {
        assert_eq!(
            settings["hooks"][event].as_array().map(Vec::len),
            Some(1),
            "{event}"
        );
    }
    let codex = std::fs::read_to_string(repo.join(".codex/config.toml")).unwrap();
    assert!(
        codex.starts_with("# my settings\nmodel = \"o5\"\n"),
        "{codex}"
    );
    assert_eq!(codex.matches("[mcp_servers.baton]").count(), 1);
    // Codex's sandbox keeps the agent's programs out of baton's witness
    // folder: set where the person chose no mode (a top-level key).
    let parsed: toml::Table = toml::from_str(&codex).expect("config.toml parses");
    assert_eq!(
        parsed["sandbox_mode"].as_str(),
        Some("workspace-write"),
        "{codex}"
    );
    let codex_hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(
        codex_hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "baton hook --client codex pre-tool-use"
    );
    let cursor: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".cursor/hooks.json")).unwrap())
            .unwrap();
    let stops: Vec<&str> = cursor["hooks"]["stop"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["command"].as_str())
        .collect();
    assert_eq!(stops, ["mine", "baton hook --client cursor stop"]);
    let cursor_command =
        std::fs::read_to_string(repo.join(".cursor/commands/baton-pipeline.md")).unwrap();
    assert!(
        !cursor_command.starts_with("---"),
        "Cursor gets no Claude front matter"
    );
    assert!(cursor_command.contains("pipeline_next_action"));
    let agent = std::fs::read_to_string(repo.join(".claude/agents/implementer.md")).unwrap();
    assert!(
        agent.starts_with("---\nname: implementer\ndescription: "),
        "{agent}"
    );

    // Nothing of this machine's paths in the files meant to be committed.
    let machine = baton_bin().parent().unwrap().display().to_string();
    let repo_path = repo.path().display().to_string();
    let written: Vec<&str> = vec![
        ".mcp.json",
        ".claude/settings.json",
        ".codex/config.toml",
        ".codex/hooks.json",
        ".cursor/mcp.json",
        ".cursor/hooks.json",
    ];
    let mut before = Vec::new();
    for file in &written {
        let text = std::fs::read_to_string(repo.join(file)).unwrap();
        assert!(
            !text.contains(&machine) && !text.contains(&repo_path),
            "{file}: {text}"
        );
        before.push(text);
    }
    // A second run changes nothing.
    let second = init();
    assert!(second.contains("up to date"), "{second}");
    for (file, old) in written.iter().zip(before) {
        assert_eq!(
            std::fs::read_to_string(repo.join(file)).unwrap(),
            old,
            "{file}"
        );
    }
    // Outside a git repository it says so.
    let plain = tempfile::tempdir().unwrap();
    std::fs::write(plain.path().join("baton.toml"), "").unwrap();
    let out = Command::new(baton_bin())
        .args(["init", "--client", "claude"])
        .current_dir(plain.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("not a git repository"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Every file of the repository but git's own, with its bytes.
fn files_of(repo: &GitRepo) -> Vec<(String, Vec<u8>)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else if !std::fs::symlink_metadata(&path)
                .is_ok_and(|meta| crate::common::is_spare(&path, &meta))
            {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    let mut out = Vec::new();
    walk(repo.path(), repo.path(), &mut out);
    out.sort();
    out
}

/// Bad input while a run is bound: every tool call the hook cannot read is
/// refused in the client's own shape (Claude's and Codex's deny, Cursor's
/// `permission: deny`) with a message naming the problem; a stop, a prompt
/// or the report after a call is never trapped (the non-blocking error);
/// and nothing of the repository changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_while_bound_is_refused_per_client_and_writes_nothing() {
    let repo = GitRepo::new();
    let ws = start_run(repo.path()).await;
    bind(&repo, "s1", &ws);
    let before = files_of(&repo);
    let cwd = repo.path();
    let pre = |extra: Value| {
        let mut v = json!({"session_id": "s1", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_use_id": "t1"});
        for (k, val) in extra.as_object().unwrap() {
            v[k] = val.clone();
        }
        v.to_string().into_bytes()
    };
    let huge = {
        // Valid JSON, one byte over the limit.
        let mut text = pre(json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}));
        text.pop();
        let pad = 16 * 1024 * 1024 - text.len() + 1 - r#","pad":""}"#.len();
        text.extend_from_slice(format!(r#","pad":"{}"}}"#, "x".repeat(pad)).as_bytes());
        assert_eq!(text.len(), 16 * 1024 * 1024 + 1);
        text
    };
    let refused: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "not JSON"),
        (b"\"a string\"".to_vec(), "not a JSON object"),
        (b"".to_vec(), "not JSON"),
        (
            pre(json!({"session_id": null, "tool_name": "Bash", "tool_input": {"command": "ls"}})),
            "no session id",
        ),
        (
            pre(
                json!({"session_id": "a/../s1", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
            ),
            "session id",
        ),
        (
            pre(json!({"tool_input": {"command": "ls"}})),
            "no tool_name",
        ),
        (
            pre(json!({"tool_name": "Write", "tool_input": {"content": "x"}})),
            "Write without file_path",
        ),
        (
            pre(json!({"tool_name": "Edit", "tool_input": {"file_path": 7}})),
            "Edit without file_path",
        ),
        (
            pre(json!({"tool_name": "Bash", "tool_input": {}})),
            "Bash without command",
        ),
        (
            pre(json!({"tool_name": "NotebookEdit", "tool_input": {}})),
            "NotebookEdit without notebook_path",
        ),
        (
            pre(json!({"tool_name": "apply_patch", "tool_input": {"command": "no headers"}})),
            "apply_patch names no file",
        ),
        (
            pre(
                json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}),
            ),
            "sent PostToolUse",
        ),
        (huge, "larger than 16 MiB"),
    ];
    for (stdin, says) in &refused {
        for client in ["claude", "codex"] {
            let out = hook(repo.path(), &["--client", client, "pre-tool-use"], stdin);
            let v = out.json();
            assert_eq!(out.code, 0, "{client} {says}: {}", out.stderr);
            assert_eq!(
                v["hookSpecificOutput"]["permissionDecision"], "deny",
                "{client} {says}: {}",
                out.stdout
            );
            let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap_or_default();
            assert!(
                reason.contains(says) && reason.contains("refused"),
                "{client}: {reason:?} lacks {says:?}"
            );
        }
    }
    // Cursor: its own refusal, never `ask`.
    let out = hook(
        repo.path(),
        &["--client", "cursor", "before-shell-execution"],
        br#"{"conversation_id": "c1", "hook_event_name": "beforeShellExecution"}"#,
    );
    let v = out.json();
    assert_eq!(v["permission"], "deny", "{}", out.stdout);
    assert!(
        v["agent_message"]
            .as_str()
            .is_some_and(|m| m.contains("beforeShellExecution without command")),
        "{v}"
    );
    // Other events are never trapped: the non-blocking error, stdout empty.
    for (event, stdin, says) in [
        ("stop", b"{not json".to_vec(), "not JSON"),
        ("user-prompt-submit", b"[]".to_vec(), "not a JSON object"),
        (
            "user-prompt-submit",
            br#"{"session_id": "s1", "hook_event_name": "UserPromptSubmit"}"#.to_vec(),
            "no prompt",
        ),
        (
            "post-tool-use",
            br#"{"session_id": "s1", "hook_event_name": "PostToolUse"}"#.to_vec(),
            "no tool_name",
        ),
        (
            "subagent-stop",
            br#"{"hook_event_name": "SubagentStop"}"#.to_vec(),
            "no session id",
        ),
        ("before-lunch", b"{}".to_vec(), "unknown event"),
    ] {
        let out = hook(repo.path(), &[event], &stdin);
        assert_eq!(out.code, 1, "{event} {says}: {}", out.stdout);
        assert!(out.stdout.is_empty(), "{event}: {}", out.stdout);
        assert!(
            out.stderr.contains(says),
            "{event}: {:?} lacks {says:?}",
            out.stderr
        );
    }
    assert!(files_of(&repo) == before, "bad input changed a file");
}

/// An implementer (phase-5, `writes: repository`) runs any program, but
/// what a script does is not in its command line: HEAD and the protected
/// files are compared around every command. A commit or a changed client
/// setting made by a script is reported at once, the run does not go on
/// until it is undone, and undoing it (`git reset --soft <commit>`,
/// restoring the file) is allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_commits_or_changes_settings_in_an_open_phase_holds_the_run() {
    let repo = GitRepo::new();
    repo.write("src/main.rs", "fn main() {}\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "src"]);
    let (ws, action) = crate::common::pipeline::run_to_phase(repo.path(), "phase-5").await;
    assert_eq!(action["phase"], "phase-5", "{action}");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "work so far"]);
    let head = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(repo.path())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    bind(&repo, "s1", &ws);
    // The line is allowed (a script of the repository's), and a script that
    // changes nothing guarded goes through.
    repo.write("build.sh", "echo ok\n");
    let pre = bash(&repo, "pre-tool-use", "s1", "sh build.sh", "toolu_1");
    assert_eq!((pre.code, pre.stdout.as_str()), (0, ""), "{}", pre.stderr);
    repo.write("src/main.rs", "fn main() { build() }\n");
    let post = bash(&repo, "post-tool-use", "s1", "sh build.sh", "toolu_1");
    assert_eq!(
        (post.code, post.stdout.as_str()),
        (0, ""),
        "{}",
        post.stderr
    );
    assert_eq!(next_call(&repo, "s1", &ws).stdout, "", "sources may change");

    // A script that commits: reported, the run held, `git reset --soft` allowed.
    assert_eq!(
        bash(&repo, "pre-tool-use", "s1", "sh build.sh", "toolu_2").stdout,
        ""
    );
    repo.git(&["add", "src/main.rs"]);
    repo.git(&["commit", "-q", "-m", "sneaky"]);
    let v = bash(&repo, "post-tool-use", "s1", "sh build.sh", "toolu_2").json();
    assert_eq!(v["decision"], "block", "{v}");
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("HEAD") && reason.contains(&format!("git reset --soft {head}")),
        "{reason}"
    );
    let held = next_call(&repo, "s1", &ws).json();
    assert_eq!(
        held["hookSpecificOutput"]["permissionDecision"], "deny",
        "{held}"
    );
    let undo = format!("git reset --soft {head}");
    assert_eq!(
        bash(&repo, "pre-tool-use", "s1", &undo, "toolu_3").stdout,
        ""
    );
    let elsewhere = bash(
        &repo,
        "pre-tool-use",
        "s1",
        "git reset --soft HEAD~2",
        "toolu_4",
    );
    assert_eq!(
        elsewhere.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    repo.git(&["reset", "-q", "--soft", &head]);
    assert_eq!(next_call(&repo, "s1", &ws).stdout, "", "HEAD is back");

    // A script that turns the client's hooks off.
    let settings = repo.join(".claude/settings.json");
    let kept = std::fs::read(&settings).ok();
    assert_eq!(
        bash(&repo, "pre-tool-use", "s1", "python3 tool.py", "toolu_5").stdout,
        ""
    );
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(&settings, "{\"hooks\": {}}").unwrap();
    let v = bash(&repo, "post-tool-use", "s1", "python3 tool.py", "toolu_5").json();
    assert_eq!(v["decision"], "block", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .is_some_and(|r| r.contains(".claude/settings.json")),
        "{v}"
    );
    assert_eq!(
        next_call(&repo, "s1", &ws).json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    match kept {
        Some(bytes) => std::fs::write(&settings, bytes).unwrap(),
        None => std::fs::remove_file(&settings).unwrap(),
    }
    assert_eq!(next_call(&repo, "s1", &ws).stdout, "", "settings restored");
}

/// Layer 2 by payload, for the tools the pinned CLIs do not offer here
/// (Claude Code's Grep and Glob) and for Cursor: a call naming baton's key
/// or the person's configuration folder is refused whether or not a run is
/// bound; with a run bound, one naming a run's control file too (a read);
/// the run's other files stay readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_naming_baton_s_key_or_a_run_s_control_files_are_refused_per_client() {
    let repo = GitRepo::new();
    let ws = crate::common::pipeline::start_run(repo.path()).await;
    let pre = |session: &str, tool: &str, input: Value| {
        claude(
            &repo,
            "pre-tool-use",
            json!({
                "session_id": session, "cwd": repo.path(), "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_9",
            }),
        )
    };
    let denied = |out: &Hooked, what: &str| {
        let v = out.json();
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecision"], "deny",
            "{what}: {}",
            out.stdout
        );
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // No run bound to s0.
    for (tool, input) in [
        ("Grep", json!({"pattern": "x", "path": "~/.config/baton"})),
        ("Glob", json!({"pattern": "**/state.key"})),
        (
            "Read",
            json!({"file_path": "$HOME/.config/baton/config.toml"}),
        ),
    ] {
        let reason = denied(&pre("s0", tool, input), tool);
        assert!(reason.contains("baton's key"), "{tool}: {reason}");
    }
    // Cursor's shell hook.
    let shell = json!({
        "conversation_id": "c1", "generation_id": "g1",
        "hook_event_name": "beforeShellExecution", "workspace_roots": [repo.path()],
        "command": "cat ~/.config/baton/state.key", "cwd": repo.path(),
    });
    let out = hook(
        repo.path(),
        &["--client", "cursor", "before-shell-execution"],
        shell.to_string().as_bytes(),
    )
    .json();
    assert_eq!(out["permission"], "deny", "{out}");
    assert!(
        out["agent_message"]
            .as_str()
            .unwrap_or_default()
            .contains("baton's key"),
        "{out}"
    );
    // With a run bound, its control files.
    bind(&repo, "s1", &ws);
    for (tool, input) in [
        (
            "Grep",
            json!({"pattern": "phase", "path": format!("{ws}/state.json")}),
        ),
        ("Glob", json!({"pattern": ".specs/*/state.json"})),
        (
            "Read",
            json!({"file_path": repo.join(&format!("{ws}/.state.json.journal.tmp"))}),
        ),
        (
            "Read",
            json!({"file_path": repo.join(".baton/sessions/s1.json")}),
        ),
    ] {
        let reason = denied(&pre("s1", tool, input.clone()), tool);
        assert!(reason.contains("control file"), "{tool} {input}: {reason}");
    }
    let request = pre(
        "s1",
        "Grep",
        json!({"pattern": "greeting", "path": format!("{ws}/request.md")}),
    );
    assert_eq!(
        (request.code, request.stdout.as_str()),
        (0, ""),
        "{}",
        request.stderr
    );
}

/// A person answering in their own terminal while an agent's command runs
/// is baton's own write (journaled), not a change outside baton: after the
/// command the run is not held and the answer counts. A write behind
/// baton's back in the next command (a copy of an older state) holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answering_during_a_command_is_kept_and_a_write_behind_baton_s_back_holds_the_run()
{
    let repo = GitRepo::new();
    let ws = run_to_checkpoint(repo.path()).await;
    bind(&repo, "s1", &ws);
    let state_file = repo.join(&format!("{ws}/state.json"));
    let older = std::fs::read(&state_file).expect("state");
    let read_state = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&state_file).expect("state")).expect("json")
    };
    let pre = bash(&repo, "pre-tool-use", "s1", "git status --short", "toolu_1");
    assert_eq!((pre.code, pre.stdout.as_str()), (0, ""), "{}", pre.stderr);
    crate::common::person_answer(repo.path(), &ws, "approve");
    let post = bash(
        &repo,
        "post-tool-use",
        "s1",
        "git status --short",
        "toolu_1",
    );
    assert_eq!(
        (post.code, post.stdout.as_str()),
        (0, ""),
        "{}",
        post.stderr
    );
    let state = read_state();
    assert!(state.get("hold").is_none(), "{state}");
    let answers = state["answers"].as_array().expect("answers").len();
    assert!(answers >= 1, "the person's answer counts: {state}");
    assert_ne!(state["currentPhase"], "checkpoint-a");

    // Now a command that puts an older state back behind baton's back.
    let pre = bash(&repo, "pre-tool-use", "s1", "git log -1", "toolu_2");
    assert_eq!(pre.code, 0, "{}", pre.stderr);
    std::fs::write(&state_file, &older).expect("write behind baton's back");
    let post = bash(&repo, "post-tool-use", "s1", "git log -1", "toolu_2").json();
    assert_eq!(post["decision"], "block", "{post}");
    let reason = post["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("state_changed_outside_baton") && reason.contains("git log -1"),
        "{reason}"
    );
    let held = read_state();
    assert_eq!(held["hold"]["code"], "state_changed_outside_baton");
    assert_eq!(
        held["answers"].as_array().expect("answers").len(),
        answers,
        "the person's answer is kept"
    );
    assert_eq!(
        held["currentPhase"], state["currentPhase"],
        "baton's last state is back"
    );
}

/// The witness, not the state at the command's start, says what baton
/// wrote: a program that copies back the state the command started with,
/// after a person answered during it, is held (the person's answer is
/// kept); a program that forges an answer before the person answers during
/// the same command does not get it passed off as baton's write — the
/// person's answer is recorded on the state baton last wrote, the forged
/// one is not counted, and the run is held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_s_writes_during_a_command_never_pass_off_a_rollback_or_a_forgery_as_its_own() {
    let repo = GitRepo::new();
    let ws = run_to_checkpoint(repo.path()).await;
    bind(&repo, "s1", &ws);
    let state_file = repo.join(&format!("{ws}/state.json"));
    let read_state = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&state_file).expect("state")).expect("json")
    };
    let answer_count = |state: &Value| state["answers"].as_array().map_or(0, Vec::len);
    let answers_before = answer_count(&read_state());

    // A forged answer, then the person's own, during one command.
    let pre = bash(&repo, "pre-tool-use", "s1", "git status --short", "toolu_1");
    assert_eq!((pre.code, pre.stdout.as_str()), (0, ""), "{}", pre.stderr);
    let mut forged = read_state();
    let fake = json!({
        "at": "2026-01-01T00:00:00Z",
        "phase": forged["currentPhase"],
        "question": "forged",
        "answer": "approve",
        "by": {"who": "person", "channel": "terminal"}
    });
    match forged["answers"].as_array_mut() {
        Some(answers) => answers.push(fake),
        None => forged["answers"] = json!([fake]),
    }
    std::fs::write(
        &state_file,
        serde_json::to_string_pretty(&forged).expect("json"),
    )
    .expect("forge");
    crate::common::person_answer(repo.path(), &ws, "approve");
    let post = bash(
        &repo,
        "post-tool-use",
        "s1",
        "git status --short",
        "toolu_1",
    )
    .json();
    assert_eq!(post["decision"], "block", "{post}");
    let held = read_state();
    assert_eq!(
        held["hold"]["code"], "state_changed_outside_baton",
        "{held}"
    );
    let answers = held["answers"].as_array().expect("answers");
    assert!(
        answers.iter().all(|a| a["question"] != "forged"),
        "the forged answer is not counted: {held}"
    );
    assert_eq!(
        answers.len(),
        answers_before + 1,
        "the person's answer is kept: {held}"
    );
    let answered = read_state();

    // Released by the person; then a copy of the state the next command
    // started with, put back after the person acted during it.
    crate::common::person_runs(repo.path(), &["enforce", "release", &ws]);
    let pre = bash(&repo, "pre-tool-use", "s1", "git log -1", "toolu_2");
    assert_eq!(pre.code, 0, "{}", pre.stderr);
    let at_start = std::fs::read(&state_file).expect("state");
    crate::common::person_runs(repo.path(), &["enforce", "off", &ws, "the person steps in"]);
    assert_ne!(
        std::fs::read(&state_file).expect("state"),
        at_start,
        "the person's write"
    );
    std::fs::write(&state_file, &at_start).expect("the state the command started with");
    let post = bash(&repo, "post-tool-use", "s1", "git log -1", "toolu_2").json();
    assert_eq!(post["decision"], "block", "{post}");
    let rolled = read_state();
    assert_eq!(
        rolled["hold"]["code"], "state_changed_outside_baton",
        "{rolled}"
    );
    assert_eq!(rolled["answers"], answered["answers"]);
}
