//! `baton init`: sets up baton for agent clients in this repository — the
//! MCP registration, the hooks that enforce a bound run's scope inside the
//! client (`baton hook`), the pipeline's sub-agents where the client has
//! them, and the /baton-pipeline command. Every file is merged: other
//! servers, the person's own hooks and other keys are kept; a second run
//! changes nothing; a file that does not parse is never rewritten.
//!
//! The files are meant to be committed, so they name the command `baton`
//! (found on each developer's `PATH`), never this machine's path to it.
//!
//! * Claude Code: `.mcp.json`, `.claude/settings.json` (hooks, the Bash
//!   sandbox: [`crate::sandbox`]), `.claude/settings.local.json` (the
//!   sandbox's paths on this machine),
//!   `.claude/agents/*.md`, `.claude/commands/baton-pipeline.md`.
//! * Codex: `.codex/config.toml` (`[mcp_servers.baton]`, and
//!   `sandbox_mode = "workspace-write"` unless the person chose a mode:
//!   the sandbox keeps the agent's programs from writing baton's witness
//!   folder, docs/clients.md), `.codex/hooks.json`.
//! * Cursor: `.cursor/mcp.json`, `.cursor/hooks.json`,
//!   `.cursor/commands/baton-pipeline.md` (no Claude front matter).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Map, Value, json};

use baton_config::Config;

/// Which clients to set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code.
    Claude,
    /// Cursor.
    Cursor,
    /// Codex.
    Codex,
    /// All of them.
    All,
}

/// The server arguments `baton init` registers: the tool profile of what it
/// installs (the /baton-pipeline command needs the pipeline tools only).
pub const SERVE_ARGS: [&str; 3] = ["serve", "--tools", "pipeline"];

/// The command the files name: `baton` on the developer's `PATH`.
pub const COMMAND: &str = "baton";

/// Claude Code's hook events and the matcher baton uses for each.
const CLAUDE_HOOKS: &[(&str, Option<&str>, &str)] = &[
    ("PreToolUse", Some("*"), "pre-tool-use"),
    ("PostToolUse", Some("mcp__baton__.*|Bash"), "post-tool-use"),
    ("UserPromptSubmit", None, "user-prompt-submit"),
    ("Stop", None, "stop"),
    ("SubagentStop", None, "subagent-stop"),
    ("SessionStart", None, "session-start"),
];

/// Codex's hook events (0.169.0: PreToolUse runs for shell, apply_patch
/// and MCP tools).
const CODEX_HOOKS: &[(&str, Option<&str>, &str)] = &[
    ("PreToolUse", Some("*"), "pre-tool-use"),
    ("PostToolUse", Some("*"), "post-tool-use"),
    ("UserPromptSubmit", None, "user-prompt-submit"),
    ("Stop", None, "stop"),
    ("SessionStart", None, "session-start"),
];

/// Cursor's hook events.
const CURSOR_HOOKS: &[(&str, &str)] = &[
    ("beforeShellExecution", "before-shell-execution"),
    ("beforeMCPExecution", "before-mcp-execution"),
    ("afterMCPExecution", "after-mcp-execution"),
    ("preToolUse", "pre-tool-use"),
    ("afterFileEdit", "after-file-edit"),
    ("beforeSubmitPrompt", "before-submit-prompt"),
    ("stop", "stop"),
];

/// Sets up baton for `client` in the repository.
pub fn run(config: &Config, client: Client) -> anyhow::Result<ExitCode> {
    let root = &config.repo_root;
    if !root.join(".git").exists() {
        println!(
            "warning: {} is not a git repository. baton's runs commit their work with git; run `git init` here (or run baton init in your repository) before the first run.",
            root.display()
        );
    }
    let mut next: Vec<String> = Vec::new();
    if matches!(client, Client::Claude | Client::All) {
        merge_mcp(&root.join(".mcp.json"), true)?;
        merge_hooks_claude_style(&root.join(".claude/settings.json"), CLAUDE_HOOKS, "")?;
        merge_sandbox(
            &root.join(".claude/settings.json"),
            &crate::sandbox::portable(),
        )?;
        merge_sandbox(
            &root.join(".claude/settings.local.json"),
            &crate::sandbox::absolute(config),
        )?;
        exclude_locally(root, ".claude/settings.local.json")?;
        if let Err(missing) = crate::sandbox::linux_requirements() {
            println!(
                "warning: Claude Code's sandbox needs {} on this machine (Debian/Ubuntu: `sudo apt-get install bubblewrap socat`); until then Claude Code refuses to start here (sandbox.failIfUnavailable), rather than run the agent's commands where they could read baton's key.",
                missing.join(" and ")
            );
        }
        install_agents(&root.join(".claude/agents"))?;
        install_text(
            &root.join(".claude/commands/baton-pipeline.md"),
            baton_workflow::agents::PIPELINE_SKILL,
            "the /baton-pipeline command",
        )?;
        next.push("Claude Code: start `claude` here, approve the `baton` MCP server when it asks (it is in .mcp.json), then type `/baton-pipeline <what to do>`.".into());
    }
    if matches!(client, Client::Codex | Client::All) {
        merge_codex_config(&root.join(".codex/config.toml"))?;
        codex_sandbox_mode(&root.join(".codex/config.toml"))?;
        warn_witness_writable(root);
        merge_hooks_claude_style(
            &root.join(".codex/hooks.json"),
            CODEX_HOOKS,
            "--client codex ",
        )?;
        next.push("Codex: trust this project when Codex asks (it reads .codex/config.toml and .codex/hooks.json only in trusted projects), then ask it to run the baton pipeline on your task; the loop is in .claude/commands/baton-pipeline.md (`baton init --client claude` writes it).".into());
    }
    if matches!(client, Client::Cursor | Client::All) {
        merge_mcp(&root.join(".cursor/mcp.json"), false)?;
        merge_cursor_hooks(&root.join(".cursor/hooks.json"))?;
        install_text(
            &root.join(".cursor/commands/baton-pipeline.md"),
            baton_workflow::agents::strip_front_matter(baton_workflow::agents::PIPELINE_SKILL),
            "the /baton-pipeline command",
        )?;
        next.push("Cursor: enable the `baton` MCP server in Cursor's settings, then type `/baton-pipeline <what to do>` in the agent chat.".into());
    }
    println!();
    match which_baton() {
        Some(path) => println!(
            "These files name the command `baton`; on this machine it is {}. Commit them so your team gets the same setup (each developer needs `baton` on their PATH).",
            path
        ),
        None => println!(
            "These files name the command `baton`, which is not on your PATH yet: install it (e.g. `cargo install --path crates/baton` in baton's repository, or copy the binary into a folder on your PATH), then commit these files so your team gets the same setup."
        ),
    }
    println!("\nNext:");
    for line in &next {
        println!("  - {line}");
    }
    println!(
        "  - While a run works, answer its questions in the chat (`approve`, `revise: <what to change>`), with `baton answer <workspace> <option>` in your terminal, or on the dashboard (`baton dashboard`)."
    );
    Ok(ExitCode::SUCCESS)
}

fn which_baton() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(COMMAND))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

/// Reads a JSON object file; a missing or empty file is an empty object.
fn read_object(path: &Path) -> anyhow::Result<Map<String, Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Map::new()),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => anyhow::bail!(
                "{} does not hold a JSON object; not changed",
                path.display()
            ),
            Err(e) => anyhow::bail!("{} is not valid JSON ({e}); not changed", path.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes `text` to `path` through a temporary file and a rename; reports
/// whether it changed.
fn write_if_changed(path: &Path, text: &str, what: &str) -> anyhow::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        println!("{} is up to date ({what})", path.display());
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let tmp = path.with_extension("baton-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    println!("wrote {} ({what})", path.display());
    Ok(())
}

fn pretty(doc: Map<String, Value>) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(&Value::Object(doc))?;
    text.push('\n');
    Ok(text)
}

/// Adds or updates `mcpServers.baton` in the JSON file at `path`.
pub fn merge_mcp(path: &Path, with_type: bool) -> anyhow::Result<()> {
    let mut doc = read_object(path)?;
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        anyhow::bail!(
            "{}: mcpServers is not an object; not changed",
            path.display()
        );
    };
    let mut entry = json!({"command": COMMAND, "args": SERVE_ARGS});
    if with_type {
        entry["type"] = json!("stdio");
    }
    servers.insert("baton".into(), entry);
    write_if_changed(path, &pretty(doc)?, "the baton MCP server")
}

/// Merges baton's hook entries into a Claude-style hooks file
/// (`{"hooks": {"Event": [{"matcher": …, "hooks": [{"type": "command",
/// "command": …}]}]}}`): an entry that already runs baton's command for the
/// event is kept as is; everything else in the file stays.
fn merge_hooks_claude_style(
    path: &Path,
    events: &[(&str, Option<&str>, &str)],
    client_flag: &str,
) -> anyhow::Result<()> {
    let mut doc = read_object(path)?;
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        anyhow::bail!("{}: hooks is not an object; not changed", path.display());
    };
    for (event, matcher, arg) in events {
        let command = format!("{COMMAND} hook {client_flag}{arg}");
        let list = hooks
            .entry(event.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            anyhow::bail!(
                "{}: hooks.{event} is not a list; not changed",
                path.display()
            );
        };
        let present = list.iter().any(|group| {
            group["hooks"]
                .as_array()
                .is_some_and(|hs| hs.iter().any(|h| h["command"] == command.as_str()))
        });
        if present {
            continue;
        }
        let mut group = json!({"hooks": [{"type": "command", "command": command, "timeout": 30}]});
        if let Some(m) = matcher {
            group["matcher"] = json!(m);
        }
        list.push(group);
    }
    write_if_changed(path, &pretty(doc)?, "baton's hooks")
}

/// Merges Claude Code's Bash sandbox ([`crate::sandbox`]) with `p`'s paths
/// into the settings file at `path`; the person's own sandbox entries stay.
fn merge_sandbox(path: &Path, p: &crate::sandbox::Protected) -> anyhow::Result<()> {
    let mut doc = read_object(path)?;
    crate::sandbox::merge(&mut doc, p)
        .map_err(|why| anyhow::anyhow!("{}: {why}; not changed", path.display()))?;
    write_if_changed(
        path,
        &pretty(doc)?,
        "Claude Code's sandbox for the agent's commands",
    )
}

/// Keeps `path` (this machine's settings) out of git in this clone
/// (`.git/info/exclude`), unless it is listed there already.
fn exclude_locally(root: &Path, path: &str) -> anyhow::Result<()> {
    let git = root.join(".git");
    if !git.is_dir() {
        return Ok(());
    }
    let exclude = git.join("info/exclude");
    let existing = std::fs::read_to_string(&exclude).unwrap_or_default();
    if existing.lines().any(|l| l.trim() == path) {
        return Ok(());
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(path);
    text.push('\n');
    std::fs::create_dir_all(git.join("info")).context("creating .git/info")?;
    std::fs::write(&exclude, text).with_context(|| format!("writing {}", exclude.display()))?;
    println!(
        "added {path} to {} (this machine's paths stay out of commits)",
        exclude.display()
    );
    Ok(())
}

/// Merges baton's entries into `.cursor/hooks.json` (`{"version": 1,
/// "hooks": {"event": [{"command": …}]}}`).
fn merge_cursor_hooks(path: &Path) -> anyhow::Result<()> {
    let mut doc = read_object(path)?;
    doc.entry("version").or_insert(json!(1));
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        anyhow::bail!("{}: hooks is not an object; not changed", path.display());
    };
    for (event, arg) in CURSOR_HOOKS {
        let command = format!("{COMMAND} hook --client cursor {arg}");
        let list = hooks
            .entry(event.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            anyhow::bail!(
                "{}: hooks.{event} is not a list; not changed",
                path.display()
            );
        };
        if !list.iter().any(|h| h["command"] == command.as_str()) {
            list.push(json!({"command": command}));
        }
    }
    write_if_changed(path, &pretty(doc)?, "baton's hooks")
}

/// Adds `[mcp_servers.baton]` to `.codex/config.toml` unless a table of
/// that name is there (the rest of the file is kept byte for byte).
fn merge_codex_config(path: &Path) -> anyhow::Result<()> {
    let existing = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if existing.lines().any(|l| {
        let l = l.trim();
        l == "[mcp_servers.baton]" || l == "[mcp_servers.\"baton\"]"
    }) {
        println!(
            "{} already registers baton ([mcp_servers.baton] kept as it is)",
            path.display()
        );
        return Ok(());
    }
    let mut text = existing.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&format!(
        "[mcp_servers.baton]\ncommand = \"{COMMAND}\"\nargs = [{}]\n",
        SERVE_ARGS.map(|a| format!("\"{a}\"")).join(", ")
    ));
    write_if_changed(path, &text, "the baton MCP server")
}

/// Codex's sandbox mode baton asks for: the agent's commands write the
/// repository and the temporary folders, never the person's witness folder.
pub const CODEX_SANDBOX_MODE: &str = "workspace-write";

/// Sets `sandbox_mode` in `.codex/config.toml` unless the person set one;
/// then says what their mode means for baton.
fn codex_sandbox_mode(path: &Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let table: toml::Table = match toml::from_str(&text) {
        Ok(t) => t,
        Err(e) => {
            println!(
                "warning: {} does not parse ({e}); set `sandbox_mode = \"{CODEX_SANDBOX_MODE}\"` at its top yourself",
                path.display()
            );
            return Ok(());
        }
    };
    match table.get("sandbox_mode").and_then(|v| v.as_str()) {
        Some(mode) => {
            let meaning = match mode {
                "workspace-write" | "read-only" => {
                    "the agent's programs cannot write baton's witness folder: a state they forge holds the run, and `baton answer` from inside the sandbox refuses"
                }
                "danger-full-access" => {
                    "NOT GUARANTEED: the agent's programs can write baton's witness folder and its key's folder, so a program the agent runs can forge a run's state or a person's answer unseen; use \"workspace-write\" to have baton's guarantee"
                }
                _ => {
                    "a mode baton does not know: check that it keeps the agent's programs from writing ~/.local/state/baton"
                }
            };
            println!(
                "{} keeps your sandbox_mode = {mode:?}: {meaning} (docs/clients.md, \"Trust model\")",
                path.display()
            );
            Ok(())
        }
        None => {
            // A top-level key: before the first table.
            let line = format!(
                "# The agent's commands write the repository and the temporary folders only,\n# never baton's witness folder (docs/clients.md).\nsandbox_mode = \"{CODEX_SANDBOX_MODE}\"\n"
            );
            let at = text
                .match_indices('\n')
                .map(|(i, _)| i + 1)
                .chain(std::iter::once(0))
                .filter(|&i| text[i..].starts_with('['))
                .min()
                .unwrap_or(text.len());
            let mut updated = text.clone();
            if at == text.len() && !updated.is_empty() && !updated.ends_with('\n') {
                updated.push('\n');
            }
            let at = at.min(updated.len());
            updated.insert_str(at, &line);
            let placed = toml::from_str::<toml::Table>(&updated)
                .ok()
                .is_some_and(|t| {
                    t.get("sandbox_mode").and_then(|v| v.as_str()) == Some(CODEX_SANDBOX_MODE)
                });
            if !placed {
                println!(
                    "warning: baton could not place `sandbox_mode = \"{CODEX_SANDBOX_MODE}\"` in {}; set it at its top yourself",
                    path.display()
                );
                return Ok(());
            }
            write_if_changed(path, &updated, "Codex's sandbox")
        }
    }
}

/// Warns when an agent's sandbox would let its programs write the
/// person's witness folder: inside the repository (a repository at the
/// home folder) or in a temporary folder.
fn warn_witness_writable(root: &Path) {
    let Some(witness) = baton_config::person::witness_dir() else {
        return;
    };
    let tmp = std::env::temp_dir();
    let inside = [root, Path::new("/tmp"), tmp.as_path()]
        .iter()
        .find(|p| witness.starts_with(p))
        .map(|p| p.display().to_string());
    if let Some(place) = inside {
        println!(
            "warning: baton's witness folder {} is inside {place}, which Codex's workspace-write sandbox lets the agent's programs write: a state they forge there would not show. Use a repository that does not contain your home folder.",
            witness.display()
        );
    }
}

/// Writes the pipeline's agents as Claude Code sub-agent definitions
/// (`name`, `description`, the instructions); a file that differs is kept.
fn install_agents(dir: &Path) -> anyhow::Result<()> {
    for (name, text) in baton_workflow::agents::BUILTIN_AGENTS {
        let description = text
            .lines()
            .skip(1)
            .take_while(|l| *l != "---")
            .find_map(|l| l.strip_prefix("description:"))
            .map(|d| d.trim().to_string())
            .unwrap_or_else(|| format!("baton pipeline agent {name}"));
        let body = baton_workflow::agents::strip_front_matter(text);
        let file = format!(
            "---\nname: {name}\ndescription: {}\n---\n\n{body}",
            yaml_string(&description)
        );
        install_text(
            &dir.join(format!("{name}.md")),
            &file,
            "a pipeline sub-agent",
        )?;
    }
    Ok(())
}

fn yaml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Writes `text` at `path` unless a different file is there (the person
/// may have edited it).
fn install_text(path: &Path, text: &str, what: &str) -> anyhow::Result<()> {
    match std::fs::read_to_string(path) {
        Ok(existing) if existing == text => {
            println!("{} is up to date ({what})", path.display());
        }
        Ok(_) => {
            println!(
                "kept {} (it differs from this version's; delete it and run baton init again to reinstall)",
                path.display()
            );
        }
        Err(_) => write_if_changed(path, text, what)?,
    }
    Ok(())
}
