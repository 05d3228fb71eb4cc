//! The state's integrity against programs the agent runs, through the real
//! Claude Code CLI (`tests/clients`, pinned) driven by a scripted model
//! server, in repositories set up by `baton init --client claude`:
//!
//! * the OS layer — Claude Code's Bash sandbox as `baton init` configures it
//!   (bubblewrap on Linux): a program the agent's command starts can read
//!   neither baton's key nor write a run's state, while ordinary work
//!   (writing a source file, git) goes on;
//! * the hook layer — tools and command lines naming baton's key, its
//!   configuration folder or a run's control files are refused, reads too;
//! * detection — a run's state changed during an agent's command by
//!   anything but baton holds the run.
//!
//! Sandbox tests need `bwrap` and `socat` (`.ci/run` installs them;
//! `./scripts/test` says when they are missing).

use std::path::{Path, PathBuf};

use baton_testkit::clients::{ClaudeCode, CliOutput};
use baton_testkit::git::GitRepo;
use baton_testkit::model::anthropic::{AnthropicServer, Step, Turn};
use serde_json::{Value, json};

use crate::common::baton_bin;
use crate::common::pipeline::start_run;

fn baton_dir() -> PathBuf {
    baton_bin().parent().expect("bin folder").to_path_buf()
}

/// A repository set up by `baton init --client claude`, committed, with the
/// person's local choice to enable the project's MCP servers merged into
/// the local settings `baton init` wrote.
struct Project {
    repo: GitRepo,
    home: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let repo = GitRepo::new();
        repo.write("src/main.rs", "fn main() {}\n");
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
        let local = repo.path().join(".claude/settings.local.json");
        let mut settings: Value =
            serde_json::from_str(&std::fs::read_to_string(&local).expect("local settings"))
                .expect("local settings json");
        settings["enableAllProjectMcpServers"] = json!(true);
        std::fs::write(&local, settings.to_string()).expect("write local settings");
        repo.write(".git/info/exclude", ".claude/settings.local.json\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "baton init --client claude"]);
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
}

fn bash(command: &str) -> Step {
    Turn::tool("Bash", json!({"command": command, "description": "run"})).into()
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
    let id = last
        .tool_uses()
        .into_iter()
        .filter(|(_, name, _)| name == tool)
        .map(|(id, _, _)| id)
        .nth(n)
        .unwrap_or_else(|| panic!("no call {n} of {tool}"));
    let result = last
        .tool_results()
        .into_iter()
        .find(|r| r.tool_use_id == id)
        .unwrap_or_else(|| panic!("no result for {tool} #{n}"));
    (result.text, result.is_error)
}

/// The key a program would look for: the person's configuration folder of
/// the password database's home (what baton itself reads), spelled so that
/// no command line names it.
const READ_KEY: &str = "import os,pwd; p=os.path.join(pwd.getpwuid(os.getuid()).pw_dir, '.con'+'fig', 'bat'+'on', 'state'+'.key'); print('KEY:'+open(p).read())";

/// Layer 1: with the sandbox `baton init` configures, a program the
/// agent's command starts cannot read baton's key nor write a run's state
/// (the OS refuses; no hook sees the paths), and ordinary work still runs:
/// a source file is written, git reads and stages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_keeps_a_program_the_agent_runs_from_the_key_and_the_state() {
    let project = Project::new();
    let ws = start_run(project.path()).await;
    let state_file = project.path().join(&ws).join("state.json");
    let before = std::fs::read(&state_file).expect("state");
    let key_dir = baton_config_dir();
    let key = std::fs::read_to_string(key_dir.join("state.key")).expect("the person's key");
    let forge = "import glob; f=glob.glob('.sp'+'ecs/*/st'+'ate.json')[0]; t=open(f).read(); open(f,'w').write(t.replace('phase-1','phase-9')); print('FORGED')";
    let server = AnthropicServer::start([
        bash(&format!("python3 -c \"{READ_KEY}\"")),
        bash(&format!("python3 -c \"{forge}\"")),
        bash(
            "echo 'pub fn ok() {}' > src/ok.rs && cat src/ok.rs && git add src/ok.rs && git status --short",
        ),
        bash(&format!("python3 -c \"{WRITE_WITNESS}\"")),
        bash(&format!("python3 -c \"{PTY_ANSWER}\"")),
        Turn::text("done").into(),
    ]);
    let out = project.claude(&server).prompt("go");
    check_run(&out, &server);

    let (read, _) = result_of_call(&server, "Bash", 0);
    assert!(!read.contains("KEY:"), "the program read the key: {read}");
    assert!(!read.contains(key.trim()), "the key reached the model");
    assert!(
        read.contains("Permission denied")
            || read.contains("No such file")
            || read.contains("Read-only"),
        "the OS refused the read: {read}"
    );
    let (forged, _) = result_of_call(&server, "Bash", 1);
    assert!(
        !forged.contains("FORGED"),
        "the program wrote the state: {forged}"
    );
    assert_eq!(
        std::fs::read(&state_file).expect("state"),
        before,
        "the run's state is unchanged"
    );
    let (work, work_err) = result_of_call(&server, "Bash", 2);
    assert!(!work_err, "ordinary work was refused: {work}");
    assert!(
        work.contains("pub fn ok") && work.contains("A  src/ok.rs"),
        "{work}"
    );
    // baton's witness folder is the OS's to refuse too: a program cannot
    // record a write as baton's, and `baton answer` in a pseudo-terminal
    // it made refuses.
    let (witness, _) = result_of_call(&server, "Bash", 3);
    assert!(
        !witness.contains("WITNESSED"),
        "the program wrote the witness: {witness}"
    );
    assert!(
        witness.contains("Read-only") || witness.contains("Permission denied"),
        "the OS refused the write: {witness}"
    );
    let (pty, _) = result_of_call(&server, "Bash", 4);
    assert!(pty.contains("inside an agent's sandbox"), "{pty}");
    assert_eq!(
        std::fs::read(&state_file).expect("state"),
        before,
        "nothing was recorded"
    );
}

/// A program that writes into baton's witness folder (the password
/// database's home), spelled so that no command line names it.
const WRITE_WITNESS: &str = "import os,pwd; d=os.path.join(pwd.getpwuid(os.getuid()).pw_dir, '.local', 'state', 'bat'+'on', 'witness'); open(os.path.join(d, 'forged'), 'a').write('D x state.json y'); print('WITNESSED')";

/// A program that starts `baton answer` in a pseudo-terminal of its own.
const PTY_ANSWER: &str = "import glob,os,pty; w=os.path.dirname(glob.glob('.sp'+'ecs/*/st'+'ate.json')[0]); pty.spawn(['bat'+'on', 'ans'+'wer', w, 'approve'])";

/// The person's configuration folder the baton under test reads (the
/// password database's home; the tests do not set `BATON_PERSON_CONFIG`).
fn baton_config_dir() -> PathBuf {
    let out = std::process::Command::new("getent")
        .args(["passwd", &current_uid().to_string()])
        .output()
        .expect("getent");
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    let home = line
        .split(':')
        .nth(5)
        .expect("home field")
        .trim()
        .to_string();
    Path::new(&home).join(".config/baton")
}

fn current_uid() -> u32 {
    let out = std::process::Command::new("id")
        .arg("-u")
        .output()
        .expect("id -u");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("uid")
}

fn load_tools() -> Step {
    Turn::tool(
        "ToolSearch",
        json!({"query": "select:mcp__baton__pipeline_next_action"}),
    )
    .into()
}

fn next_action(ws: &str) -> Step {
    Turn::tool("mcp__baton__pipeline_next_action", json!({"workspace": ws})).into()
}

/// Turns that try to end the turn (the stop guard blocks three times).
fn try_to_stop() -> Vec<Step> {
    (0..4)
        .map(|i| Turn::text(format!("I am done ({i}).")).into())
        .collect()
}

/// Layer 2: the hooks refuse every tool call that names baton's key or the
/// person's configuration folder — Read and Bash (this CLI offers no Grep
/// or Glob here: `hook_cmd` covers them by payload), before any run
/// is bound too — and, while a run is bound, a run's control files (reads
/// as well); the run's other files stay readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hooks_refuse_tools_naming_the_key_the_configuration_or_control_files() {
    let project = Project::new();
    let ws = start_run(project.path()).await;
    let config = baton_config_dir();
    let key = config.join("state.key");
    let state = project.path().join(&ws).join("state.json");
    let request = project.path().join(&ws).join("request.md");
    let mut steps = vec![
        // Before the session is bound to any run.
        bash("cat ~/.config/baton/state.key"),
        load_tools(),
        next_action(&ws),
        Turn::tool("Read", json!({"file_path": key})).into(),
        Turn::tool(
            "Glob",
            json!({"pattern": "**/state.key", "path": config.parent().expect("~/.config")}),
        )
        .into(),
        bash(&format!("head -c 64 \"{}\"", key.display())),
        Turn::tool("Read", json!({"file_path": state})).into(),
        bash(&format!("cat {ws}/state.json")),
        bash(&format!("ls {ws}/ && cat {ws}/.state*")),
        Turn::tool("Read", json!({"file_path": request})).into(),
    ];
    steps.extend(try_to_stop());
    let server = AnthropicServer::start(steps);
    let out = project
        .claude(&server)
        .prompt(&format!("/baton-pipeline {ws}"));
    check_run(&out, &server);
    let secret = std::fs::read_to_string(&key).expect("key");
    for (tool, n, what) in [
        ("Bash", 0, "baton's key"),
        ("Read", 0, "baton's key"),
        ("Bash", 1, "baton's key"),
        ("Read", 1, "control file"),
        ("Bash", 2, "control file"),
        ("Bash", 3, "control file"),
    ] {
        let (text, is_error) = result_of_call(&server, tool, n);
        assert!(is_error, "{tool} #{n} went through: {text}");
        assert!(
            text.contains("baton:") && text.contains(what),
            "{tool} #{n} is refused with baton's reason: {text}"
        );
        assert!(!text.contains(secret.trim()), "the key reached the model");
    }
    let (request_text, request_err) = result_of_call(&server, "Read", 2);
    assert!(
        !request_err,
        "the run's request was refused: {request_text}"
    );
    assert!(request_text.contains("greeting"), "{request_text}");
}

/// Layer 3 (detection) through the real Claude Code CLI, with its sandbox
/// turned off in the person's local settings (a machine without
/// bubblewrap, or a person's choice): in the implementation phase a test
/// the agent runs reads the key and writes a tagged state with a made-up
/// answer; after the command the run is held, the agent is told, and
/// baton's last state is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sandbox_a_forged_state_is_detected_after_the_command_and_held() {
    let project = Project::new();
    let local = project.path().join(".claude/settings.local.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&local).expect("local")).expect("json");
    settings["sandbox"]["enabled"] = json!(false);
    settings["sandbox"]["failIfUnavailable"] = json!(false);
    std::fs::write(&local, settings.to_string()).expect("write local settings");
    let (ws, action) = crate::common::pipeline::run_to_phase(project.path(), "phase-5").await;
    assert_eq!(action["phase"], "phase-5", "{action}");
    let state_file = project.path().join(&ws).join("state.json");
    let read_state = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&state_file).expect("state")).expect("json")
    };
    let answers_before = read_state()["answers"].clone();
    project
        .repo
        .write("tests/forge.py", crate::client_codex::FORGE_PY);
    let server = AnthropicServer::start([
        load_tools(),
        next_action(&ws),
        bash("python3 tests/forge.py"),
        Turn::text("The run is held; asking the person.").into(),
    ]);
    let out = project
        .claude(&server)
        .prompt(&format!("/baton-pipeline {ws}"));
    check_run(&out, &server);
    let all = server.requests().last().expect("requests").all_text();
    let state = read_state();
    crate::common::assert_forgery_held(&all, &state, "phase-5", &answers_before);
}
