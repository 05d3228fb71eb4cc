//! baton inside the real Claude Code CLI (`tests/clients`, pinned), driven
//! headless by a scripted Anthropic Messages API server on loopback
//! (`baton_testkit::model::anthropic`): the CLI starts baton from the
//! repository's `.mcp.json`, the scripted model calls baton's tools, and
//! the tests read what the CLI sent back to the model.

use std::path::PathBuf;

use baton_testkit::clients::ClaudeCode;
use baton_testkit::git::GitRepo;
use baton_testkit::model::anthropic::{AnthropicServer, Turn};
use serde_json::json;

use crate::common::baton_bin;

/// The folder of the baton under test, first on the client's `PATH`.
fn baton_dir() -> PathBuf {
    baton_bin().parent().expect("bin folder").to_path_buf()
}

#[test]
fn the_real_cli_starts_baton_from_mcp_json_and_returns_its_reply_to_the_model() {
    let repo = GitRepo::new();
    repo.write(
        ".mcp.json",
        &json!({"mcpServers": {"baton": {"type": "stdio", "command": "baton", "args": ["serve", "--tools", "pipeline"]}}}).to_string(),
    );
    repo.write(
        ".claude/settings.local.json",
        &json!({"enableAllProjectMcpServers": true}).to_string(),
    );
    let home = tempfile::tempdir().expect("home");
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
    let claude = ClaudeCode::new(repo.path(), home.path(), &server.base_url(), &[baton_dir()]);
    let out = claude.prompt("start a pipeline for: add a greeting to the README");
    assert!(
        server.errors().0.is_empty(),
        "{:?}\n{}",
        server.errors(),
        out.stderr
    );
    assert!(
        out.success(),
        "claude failed: {}\n{}",
        out.stdout,
        out.stderr
    );
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
    let value: serde_json::Value = serde_json::from_str(&reply.text).expect("baton's JSON reply");
    assert_eq!(value["spec_name"], "add-a-greeting-to-the-readme");
    assert!(
        value["workspace"]
            .as_str()
            .is_some_and(|w| w.starts_with(".specs/")),
        "{value}"
    );
}
