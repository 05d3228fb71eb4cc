//! baton inside the real Codex CLI (`tests/clients`, pinned), driven
//! headless (`codex exec --json`) by a scripted OpenAI Responses API server
//! on loopback (`baton_testkit::model::openai`), configured as a custom
//! model provider in `$CODEX_HOME/config.toml`; the repository is set up
//! by `baton init --client codex` (its `.codex/config.toml` and
//! `.codex/hooks.json`), trusted in `$CODEX_HOME`.
//!
//! Codex 0.169.0 runs a project's hooks only once a person trusted them
//! (its TUI asks); `codex exec` here passes `--dangerously-bypass-hook-trust`
//! for that, and `--dangerously-bypass-approvals-and-sandbox` so that what
//! is refused is refused by baton's hooks, not Codex's own sandbox.

use std::path::{Path, PathBuf};

use baton_testkit::clients::{CliOutput, Codex};
use baton_testkit::git::GitRepo;
use baton_testkit::model::openai::{OpenAiServer, Step, Turn};
use serde_json::json;

use crate::common::baton_bin;

/// The folder of the baton under test, first on the client's `PATH`.
fn baton_dir() -> PathBuf {
    baton_bin().parent().expect("bin folder").to_path_buf()
}

const SOURCE: &str = "fn main() {}\n";

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
            .args(["init", "--client", "codex"])
            .current_dir(repo.path())
            .output()
            .expect("baton init");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "baton init --client codex"]);
        Project {
            repo,
            home: tempfile::tempdir().expect("home"),
        }
    }

    fn path(&self) -> &Path {
        self.repo.path()
    }

    fn codex(&self, server: &OpenAiServer) -> Codex {
        let codex_home = self.home.path().join(".codex");
        std::fs::create_dir_all(&codex_home).expect("CODEX_HOME");
        let root = std::fs::canonicalize(self.path()).expect("repository path");
        let config = format!(
            "{}\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            server.codex_provider("gpt-scripted", "SCRIPTED_MODEL_KEY"),
            root.display()
        );
        std::fs::write(codex_home.join("config.toml"), config).expect("config.toml");
        let mut codex = Codex::new(self.path(), self.home.path(), &codex_home, &[baton_dir()]);
        codex.args = vec![
            "--json".into(),
            "--dangerously-bypass-approvals-and-sandbox".into(),
            "--dangerously-bypass-hook-trust".into(),
        ];
        codex
    }
}

fn check_run(out: &CliOutput, server: &OpenAiServer) {
    assert!(
        server.errors().0.is_empty(),
        "script errors: {:?}\nstdout: {}\nstderr: {}",
        server.errors(),
        out.stdout,
        out.stderr
    );
    assert!(
        out.success(),
        "codex failed: {}\n{}",
        out.stdout,
        out.stderr
    );
}

/// The output of the `n`-th call of `function` as the model saw it.
fn output_of_call(server: &OpenAiServer, function: &str, n: usize) -> String {
    let last = server.requests().pop().expect("requests");
    let ids: Vec<String> = last
        .input()
        .iter()
        .filter(|i| i["type"] == "function_call" && i["name"] == function)
        .filter_map(|i| i["call_id"].as_str().map(str::to_string))
        .collect();
    let id = ids
        .get(n)
        .unwrap_or_else(|| panic!("no call {n} of {function}"));
    last.function_outputs()
        .into_iter()
        .find(|o| &o.call_id == id)
        .map(|o| o.output)
        .unwrap_or_else(|| panic!("no output for {function} #{n}"))
}

#[test]
fn the_real_cli_runs_a_scripted_shell_call_and_returns_its_output_to_the_model() {
    let project = Project::new();
    let head = project.repo.git(&["rev-parse", "HEAD"]);
    let server = OpenAiServer::start([
        Turn::shell("git rev-parse HEAD").into(),
        Turn::text("HEAD is known.").into(),
    ]);
    let out = project.codex(&server).exec("what is HEAD?");
    check_run(&out, &server);
    let events = out.json_lines();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "item.completed" && e["item"]["text"] == "HEAD is known."),
        "{}",
        out.stdout
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request per scripted response");
    assert!(
        requests[0]
            .tool_names()
            .contains(&"exec_command".to_string())
    );
    let output = requests[1]
        .output_of("exec_command")
        .expect("the shell call's output reaches the model");
    assert!(output.output.contains(&head), "{}", output.output);
    let usage = server.reported_usage();
    assert_eq!((usage.input_tokens, usage.output_tokens), (200, 40));
}

/// In phase-1 (a reading phase): writing a source file through the shell
/// or a patch, and committing, are refused by baton's hooks inside Codex;
/// ending the turn with the phase's step outstanding brings Codex back to
/// the model with the next step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_reading_phase_codex_cannot_write_sources_commit_or_stop() {
    let project = Project::new();
    let c = crate::common::spawn(project.path(), &[], &[]).await;
    let ws = crate::common::pipeline::create(&c, "add a greeting", "S", "--nopr").await;
    c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    drop(c);
    let head = project.repo.git(&["rev-parse", "HEAD"]);
    let patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/main.rs\n@@\n-fn main() {}\n+fn main() { hacked() }\n*** End Patch\nEOF";
    let mut steps: Vec<Step> = vec![
        Turn::mcp("baton", "pipeline_next_action", json!({"workspace": ws})).into(),
        Turn::shell("echo hacked > src/main.rs").into(),
        Turn::shell(patch).into(),
        Turn::shell("git add -A && git commit -m wip").into(),
        Turn::shell("git status --short").into(),
    ];
    for i in 0..4 {
        steps.push(Turn::text(format!("Done ({i}).")).into());
    }
    let server = OpenAiServer::start(steps);
    let out = project
        .codex(&server)
        .exec(&format!("run the baton pipeline on {ws}"));
    check_run(&out, &server);
    for (n, what) in ["echo", "apply_patch", "git commit"].iter().enumerate() {
        let output = output_of_call(&server, "exec_command", n);
        assert!(
            output.contains("baton:"),
            "{what} was not refused by baton's hook: {output}"
        );
    }
    let status = output_of_call(&server, "exec_command", 3);
    assert!(
        !status.contains("baton:"),
        "a read-only command was refused: {status}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("src/main.rs")).unwrap(),
        SOURCE,
        "the source file is unchanged"
    );
    assert_eq!(
        project.repo.git(&["rev-parse", "HEAD"]),
        head,
        "HEAD unchanged"
    );
    // The stop guard: Codex came back to the model with baton's next step.
    let requests = server.requests();
    let after_stop = &requests[6];
    let text = after_stop.all_text();
    assert!(
        text.contains("is outstanding") && text.contains(&ws),
        "Codex did not come back with baton's next step: {}",
        &text[text.len().saturating_sub(1500)..]
    );
    assert_eq!(requests.len(), 9, "three blocked stops, then the turn ends");
}
