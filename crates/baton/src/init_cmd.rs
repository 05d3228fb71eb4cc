//! `baton init`: registers baton with agent clients in this repository —
//! merges a `baton` server into `.mcp.json` (Claude Code) and/or
//! `.cursor/mcp.json` (Cursor), and prints the Codex snippet. Other servers
//! in those files are kept; a file that is not valid JSON is never rewritten.
//! It also installs the orchestrator skill (the loop contract) as a slash
//! command: `.claude/commands/baton-pipeline.md` and/or
//! `.cursor/commands/baton-pipeline.md`; an existing file that differs is
//! kept (the person may have edited it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Map, Value, json};

use baton_config::Config;

/// Which clients to register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` at the repository root.
    Claude,
    /// Cursor: `.cursor/mcp.json`.
    Cursor,
    /// Codex: prints the `config.toml` snippet.
    Codex,
    /// All of them.
    All,
}

/// The server arguments `baton init` registers: the tool profile of what it
/// installs (the /baton-pipeline command needs the pipeline tools only).
pub const SERVE_ARGS: [&str; 3] = ["serve", "--tools", "pipeline"];

/// Registers baton for `client` in the repository.
pub fn run(config: &Config, client: Client) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the baton binary")?;
    let command = exe.display().to_string();
    if matches!(client, Client::Claude | Client::All) {
        let path = config.repo_root.join(".mcp.json");
        merge(&path, &command, true)?;
        println!("registered baton in {}", path.display());
        install_skill(&config.repo_root.join(".claude/commands"))?;
    }
    if matches!(client, Client::Cursor | Client::All) {
        let path = config.repo_root.join(".cursor/mcp.json");
        merge(&path, &command, false)?;
        println!("registered baton in {}", path.display());
        install_skill(&config.repo_root.join(".cursor/commands"))?;
    }
    if matches!(client, Client::Codex | Client::All) {
        println!(
            "add to ~/.codex/config.toml (or .codex/config.toml in a trusted project):\n\n[mcp_servers.baton]\ncommand = {}\nargs = [{}]\n",
            toml_string(&command),
            SERVE_ARGS.map(toml_string).join(", ")
        );
        println!(
            "for the pipeline command, save the skill as ~/.codex/prompts/baton-pipeline.md:\n  baton init --client claude writes it to .claude/commands/baton-pipeline.md; copy that file"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the pipeline skill into `dir` unless a different file is there.
fn install_skill(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join("baton-pipeline.md");
    let skill = baton_workflow::agents::PIPELINE_SKILL;
    match std::fs::read_to_string(&path) {
        Ok(existing) if existing == skill => {
            println!("{} is up to date", path.display());
        }
        Ok(_) => {
            println!(
                "kept {} (it differs from this version's skill; delete it and run baton init again to reinstall)",
                path.display()
            );
        }
        Err(_) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            std::fs::write(&path, skill).with_context(|| format!("writing {}", path.display()))?;
            println!(
                "installed the /baton-pipeline command in {}",
                path.display()
            );
        }
    }
    Ok(())
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Adds or updates `mcpServers.baton` in the JSON file at `path`.
pub fn merge(path: &Path, command: &str, with_type: bool) -> anyhow::Result<()> {
    let mut doc: Map<String, Value> = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Map::new(),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => anyhow::bail!(
                "{} does not hold a JSON object; not changed",
                path.display()
            ),
            Err(e) => anyhow::bail!("{} is not valid JSON ({e}); not changed", path.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        anyhow::bail!(
            "{}: mcpServers is not an object; not changed",
            path.display()
        );
    };
    let mut entry = json!({"command": command, "args": SERVE_ARGS});
    if with_type {
        entry["type"] = json!("stdio");
    }
    servers.insert("baton".into(), entry);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(doc))?;
    text.push('\n');
    let tmp: PathBuf = path.with_extension("json.baton-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}
