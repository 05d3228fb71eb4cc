//! Shared helpers for end-to-end tests: a temporary repository and a real MCP
//! client (rmcp) talking to `baton serve` as a child process over stdio.

#![allow(
    dead_code,
    reason = "shared by several test or bench targets; each uses part of it"
)]

pub mod elicit;
pub mod pipeline;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// The `baton` binary under test: the one cargo built with the tests, or
/// `BATON_TEST_BIN` when set (`scripts/test-release-gates` runs issue 19's
/// checks against the release binary a user installs).
pub fn baton_bin() -> PathBuf {
    match std::env::var_os("BATON_TEST_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_baton")),
    }
}

/// A temporary git-like repository.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(".git")).expect(".git");
        Repo { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn specs(&self) -> PathBuf {
        self.path().join(".specs")
    }

    /// The workspace folder for a display path like `.specs/2026-x`.
    pub fn ws_dir(&self, display: &str) -> PathBuf {
        self.path().join(display)
    }

    /// The run's live state: `state.json`, or while a run's final form is
    /// sealed into it before the commit, `.state.live.json`.
    pub fn state(&self, display: &str) -> Value {
        let dir = self.ws_dir(display);
        let live = dir.join(".state.live.json");
        let path = if live.is_file() {
            live
        } else {
            dir.join("state.json")
        };
        let text = std::fs::read_to_string(path).expect("state.json");
        serde_json::from_str(&text).expect("state.json parses")
    }

    pub fn events(&self) -> Vec<Value> {
        let path = self.path().join(".baton/events/events.jsonl");
        match std::fs::read_to_string(path) {
            Ok(text) => text
                .lines()
                .map(|l| serde_json::from_str(l).expect("event line"))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Every file under `.specs` (except lock files and the run history,
    /// derived data baton may write in the background) with its bytes, sorted.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        walk(&self.specs(), &mut out);
        out.sort();
        out
    }

    /// Every path under the repository root, for "nothing was created" checks.
    pub fn all_paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(self.path(), &mut out);
        let mut names: Vec<String> = out.into_iter().map(|(p, _)| p).collect();
        names.sort();
        names
    }
}

fn walk(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.display().to_string();
        if name.contains("/.baton/")
            || name.ends_with(".state.lock")
            // The journal is a runtime file like the lock: the syncer
            // empties or removes it in the background after the reply.
            || name.ends_with(".state.json.journal.tmp")
            || name.contains("/.specs/.history/")
        {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        // A server's next state file (is_spare): a runtime file. A
        // temporary file with content is never skipped.
        if is_spare(&path, &meta) {
            continue;
        }
        if meta.is_dir() {
            walk(&path, out);
        } else {
            out.push((name, std::fs::read(&path).unwrap_or_default()));
        }
    }
}

/// A server's spare state file: an empty `.state.json.*.tmp` the syncer
/// makes in the background after a reply, for the next change to write and
/// rename into place (baton-state's `spare` module) — a runtime file like
/// the lock and the journal. A temporary file a write left behind is not
/// empty, and still counts.
pub fn is_spare(path: &Path, meta: &std::fs::Metadata) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    meta.is_file() && meta.len() == 0 && name.starts_with(".state.json.") && name.ends_with(".tmp")
}

/// A connected MCP client.
pub struct Client {
    pub service: RunningService<RoleClient, elicit::TestClient>,
    pub pid: Option<u32>,
}

/// Starts `baton serve` in `repo` with extra arguments and environment, and connects.
/// Unless the arguments or environment choose the tools, every tool is
/// exposed (`--tools all`): most tests drive tools outside the default profile.
pub async fn spawn(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> Client {
    spawn_as(repo, args, env, elicit::TestClient::default()).await
}

/// Like [`spawn`], with `handler` as the client (e.g. one whose user answers
/// elicitation requests).
pub async fn spawn_as(
    repo: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    handler: elicit::TestClient,
) -> Client {
    let mut cmd = tokio::process::Command::new(baton_bin());
    cmd.arg("serve").args(args).current_dir(repo);
    cmd.env_remove("BATON_TOOLS").env_remove("BATON_DEV");
    let chooses_tools = args.contains(&"--tools") || env.iter().any(|(k, _)| *k == "BATON_TOOLS");
    if !chooses_tools {
        cmd.args(["--tools", "all"]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stderr(std::process::Stdio::null());
    let transport = TokioChildProcess::new(cmd).expect("spawn baton");
    let pid = transport.id();
    let service = handler.serve(transport).await.expect("initialize");
    Client { service, pid }
}

/// Like [`spawn`], but `None` when the server dies before the handshake ends
/// (fault tests kill servers at random moments).
pub async fn try_spawn(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<Client> {
    let mut cmd = tokio::process::Command::new(baton_bin());
    cmd.arg("serve").args(args).current_dir(repo);
    cmd.env_remove("BATON_TOOLS").env_remove("BATON_DEV");
    let chooses_tools = args.contains(&"--tools") || env.iter().any(|(k, _)| *k == "BATON_TOOLS");
    if !chooses_tools {
        cmd.args(["--tools", "all"]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stderr(std::process::Stdio::null());
    let transport = TokioChildProcess::new(cmd).ok()?;
    let pid = transport.id();
    let service = tokio::time::timeout(
        Duration::from_secs(30),
        elicit::TestClient::default().serve(transport),
    )
    .await
    .ok()?
    .ok()?;
    Some(Client { service, pid })
}

impl Client {
    /// Calls a tool; `None` when the server went away (or did not answer in
    /// 30 s) before replying, else what [`Client::call`] returns.
    pub async fn try_call(&self, name: &str, args: Value) -> Option<Result<Value, Value>> {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let result = tokio::time::timeout(Duration::from_secs(30), self.service.call_tool(params))
            .await
            .ok()?
            .ok()?;
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())?
            .text
            .clone();
        let parsed = serde_json::from_str::<Value>(&text).expect("text is JSON");
        if result.is_error == Some(true) {
            return Some(Err(parsed));
        }
        Some(Ok(result
            .structured_content
            .clone()
            .expect("structuredContent")))
    }

    /// Calls a tool. Ok(structuredContent) on success; on `isError`,
    /// Err(the error object), read from the text content — an error result
    /// carries no structuredContent (it would not match the outputSchema).
    pub async fn call(&self, name: &str, args: Value) -> Result<Value, Value> {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let result = tokio::time::timeout(Duration::from_secs(30), self.service.call_tool(params))
            .await
            .expect("tool call timed out")
            .expect("tool call transport error");
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .expect("text content");
        let parsed = serde_json::from_str::<Value>(&text).expect("text is JSON");
        if result.is_error == Some(true) {
            assert!(
                result.structured_content.is_none(),
                "{name}: an error result must not carry structuredContent"
            );
            return Err(parsed);
        }
        let structured = result
            .structured_content
            .clone()
            .expect("structuredContent");
        // The text mirror carries the same JSON.
        assert_eq!(parsed, structured);
        Ok(structured)
    }

    /// Sends a call to a server that is meant to die while handling it:
    /// returns once the server has gone (or answered), without caring which.
    pub async fn call_dying(&self, name: &str, args: Value) {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), self.service.call_tool(params)).await;
    }

    /// Calls a tool that must succeed.
    pub async fn ok(&self, name: &str, args: Value) -> Value {
        match self.call(name, args.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("{name} {} failed: {e}", short(&args)),
        }
    }

    /// Calls a tool that must fail with `code`; returns the error.
    pub async fn err(&self, name: &str, args: Value, code: &str) -> Value {
        match self.call(name, args.clone()).await {
            Ok(v) => panic!("{name} {} should fail with {code}, got {v}", short(&args)),
            Err(e) => {
                assert_eq!(e["code"], code, "{name} {}: {e}", short(&args));
                assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
                e
            }
        }
    }

    pub async fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .service
            .list_all_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        names
    }

    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// Writes a non-empty artifact into a workspace.
pub fn write_artifact(repo: &Repo, ws: &str, name: &str) {
    let path = repo.ws_dir(ws).join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, format!("# {name}\n\ncontent\n")).expect("write artifact");
}

/// The first 200 characters of a JSON value, for assertion messages.
pub fn short(v: &Value) -> String {
    let text = v.to_string();
    text.chars().take(200).collect()
}

/// Copies the user workflow example (docs/examples/release.yaml) into the
/// repository's `.baton/workflows/`.
pub fn install_example_workflow(repo: &Repo) {
    let dir = repo.path().join(".baton/workflows");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/examples/release.yaml"
        ),
        dir.join("release.yaml"),
    )
    .expect("copy example");
}

/// Asserts that `action` is the person's question `name`, with a warning
/// that says `why`.
pub fn assert_question_warns(action: &Value, name: &str, why: &str) {
    assert_eq!(action["type"], "checkpoint", "{action}");
    assert_eq!(action["name"], name, "{action}");
    assert!(
        action["warning"].as_str().is_some_and(|w| w.contains(why)),
        "{action}"
    );
}

/// A forged run state was caught after the agent's command (the real
/// clients' integrity tests): the agent was told the run is held and how a
/// person releases it (`agent_text`: what the model received last), the
/// hold is recorded, the forged move of the phase is undone (`phase`: where
/// the run was) and the forged answer not counted.
pub fn assert_forgery_held(agent_text: &str, state: &Value, phase: &str, answers_before: &Value) {
    assert!(
        agent_text.contains("state_changed_outside_baton")
            && agent_text.contains("baton enforce release"),
        "the agent was told the run is held: {}",
        &agent_text[agent_text.len().saturating_sub(3000)..]
    );
    assert_eq!(
        state["hold"]["code"], "state_changed_outside_baton",
        "{state}"
    );
    assert_eq!(state["currentPhase"], phase, "the forged move is undone");
    assert_eq!(
        state["answers"], *answers_before,
        "the forged answer is not counted"
    );
}

/// Quotes one argument for `sh`.
pub fn sh_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', "'\\''"))
}

/// What a person at a terminal sees when they answer.
#[derive(Debug)]
pub struct Answered {
    /// `baton answer` exited 0.
    pub ok: bool,
    /// Everything it printed (the pseudo-terminal merges stdout and stderr).
    pub output: String,
}

/// A person answers the run's question at a terminal: `baton answer WS
/// WORDS…` under a pseudo-terminal (`script`), the channel an agent's
/// shell tool does not have.
pub fn person_answers(repo: &Path, ws: &str, answer: &str) -> Answered {
    let mut cmd = format!(
        "{} answer {}",
        sh_quote(&baton_bin().display().to_string()),
        sh_quote(ws)
    );
    // `revise: text` → the option, then the text as one argument.
    let (word, text) = match answer.split_once([':', ' ']) {
        Some((w, t)) => (w.to_string(), t.trim().to_string()),
        None => (answer.to_string(), String::new()),
    };
    cmd.push(' ');
    cmd.push_str(&sh_quote(&word));
    if !text.is_empty() {
        cmd.push(' ');
        cmd.push_str(&sh_quote(&text));
    }
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(repo)
        .env_remove("BATON_TOOLS")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs baton answer under a pseudo-terminal");
    Answered {
        ok: out.status.success(),
        output: String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
    }
}

/// A person runs `baton ARGS…` at a terminal (a pseudo-terminal made by
/// `script`), which must succeed; returns what it printed.
pub fn person_runs(dir: &Path, args: &[&str]) -> String {
    let cmd = std::iter::once(baton_bin().display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| sh_quote(&a))
        .collect::<Vec<_>>()
        .join(" ");
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs baton under a pseudo-terminal");
    let printed = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert!(
        out.status.success(),
        "baton {args:?} at a terminal failed:\n{printed}"
    );
    printed
}

/// Like [`person_answers`], which must succeed.
pub fn person_answer(repo: &Path, ws: &str, answer: &str) -> String {
    let a = person_answers(repo, ws, answer);
    assert!(a.ok, "baton answer {ws} {answer} failed:\n{}", a.output);
    a.output
}

/// Records a client suite's `N passed, M failed` closing line for the test
/// command's summary (`./scripts/test` sets BATON_SUITE_COUNTS to a folder
/// and adds these counts to cargo's). Without the variable nothing is written.
pub fn record_suite_counts(name: &str, output: &str) {
    let Some(dir) = std::env::var_os("BATON_SUITE_COUNTS") else {
        return;
    };
    // A suite that ended without its closing line counts as one failure.
    let (passed, failed) = suite_counts(output).unwrap_or((0, 1));
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(Path::new(&dir).join(name), format!("{passed} {failed}\n"));
}

/// The counts of the last `… N passed, M failed` line of a suite's output.
pub fn suite_counts(output: &str) -> Option<(u64, u64)> {
    output.lines().rev().find_map(|line| {
        let (before, rest) = line.split_once(" passed, ")?;
        let passed = before.rsplit(' ').next()?;
        let failed = rest.strip_suffix(" failed")?;
        Some((passed.parse().ok()?, failed.trim().parse().ok()?))
    })
}
