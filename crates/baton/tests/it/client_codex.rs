//! baton inside the real Codex CLI (`tests/clients`, pinned), driven
//! headless (`codex exec --json`) by a scripted OpenAI Responses API server
//! on loopback (`baton_testkit::model::openai`), configured as a custom
//! model provider in `$CODEX_HOME/config.toml`.

use std::path::PathBuf;

use baton_testkit::clients::Codex;
use baton_testkit::git::GitRepo;
use baton_testkit::model::openai::{OpenAiServer, Turn};

use crate::common::baton_bin;

/// The folder of the baton under test, first on the client's `PATH`.
fn baton_dir() -> PathBuf {
    baton_bin().parent().expect("bin folder").to_path_buf()
}

#[test]
fn the_real_cli_runs_a_scripted_shell_call_and_returns_its_output_to_the_model() {
    let repo = GitRepo::new();
    let head = repo.git(&["rev-parse", "HEAD"]);
    let home = tempfile::tempdir().expect("home");
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).expect("CODEX_HOME");
    let server = OpenAiServer::start([
        Turn::shell("git rev-parse HEAD").into(),
        Turn::text("HEAD is known.").into(),
    ]);
    std::fs::write(
        codex_home.join("config.toml"),
        server.codex_provider("gpt-scripted", "SCRIPTED_MODEL_KEY"),
    )
    .expect("config.toml");
    let codex = Codex::new(repo.path(), home.path(), &codex_home, &[baton_dir()]);
    let out = codex.exec("what is HEAD?");
    assert!(
        server.errors().0.is_empty(),
        "{:?}\n{}",
        server.errors(),
        out.stderr
    );
    assert!(
        out.success(),
        "codex failed: {}\n{}",
        out.stdout,
        out.stderr
    );
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
