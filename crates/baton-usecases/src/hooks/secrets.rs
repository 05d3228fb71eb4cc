//! Tool calls that name baton's secrets or a run's control files are
//! refused, reads as well as writes (`baton_engine::scope::secrets`):
//!
//! * in every session, bound or not: the person's configuration folder
//!   (`~/.config/baton`: the state key, `config.toml`) and the dashboard's
//!   token file — a key read once could sign a forged state later;
//! * while a run is bound: a run's control files (`state.json`, its live
//!   state, journal and archive, `.specs/.history/`, `.baton/`), which the
//!   agent reads through baton's tools and `baton show`.
//!
//! The texts judged are what the client shows: path arguments (`file_path`,
//! `path`, `notebook_path`, Glob's `pattern`, Grep's `glob`), a patch's
//! files and the command line. What a program computes while it runs is
//! beyond them: Claude Code's sandbox (`baton init`) keeps such a program
//! away from the key, and the hooks detect a state changed during a command
//! ([`super::integrity`]).

use std::path::Path;

use serde_json::Value;

use baton_config::Config;
use baton_engine::scope::{self, secrets::Secrets};

use super::input::{HookInput, ToolCall};

/// The secrets of this repository's configuration and this person.
pub fn of(config: &Config) -> Secrets {
    let show = |p: &Path| p.to_string_lossy().into_owned();
    let mut files = Vec::new();
    if let Some(token) = &config.dashboard.token_file {
        let absolute = if token.is_absolute() {
            token.clone()
        } else {
            config.repo_root.join(token)
        };
        files.push(show(&absolute));
        if let Ok(rel) = absolute.strip_prefix(&config.repo_root) {
            files.push(show(rel));
        }
    }
    Secrets {
        dirs: baton_config::person::config_dir()
            .map(|d| vec![show(&d)])
            .unwrap_or_default(),
        files,
        home: std::env::var("HOME").ok().filter(|h| h.starts_with('/')),
    }
}

/// The texts of a tool call that name files: path arguments and the
/// command line.
fn texts(input: &HookInput) -> Vec<String> {
    let Some(tool) = &input.tool else {
        return Vec::new();
    };
    if tool.name().starts_with("mcp__baton__") {
        return Vec::new();
    }
    let mut out: Vec<String> = match tool {
        ToolCall::Write { paths, .. } => paths.clone(),
        ToolCall::Shell { command, .. } => vec![command.clone()],
        ToolCall::Other { .. } => Vec::new(),
    };
    let fields: &[&str] = match tool.name() {
        "Grep" => &["path", "glob"],
        "Glob" => &["path", "pattern"],
        _ => &[
            "file_path",
            "path",
            "notebook_path",
            "filePath",
            "target_file",
        ],
    };
    for field in fields {
        if let Some(Value::String(text)) = input.tool_input.get(*field) {
            out.push(text.clone());
        }
    }
    out
}

/// `text` as an absolute path from `cwd`, its existing folders' links
/// resolved.
fn absolute(cwd: &Path, text: &str) -> String {
    let joined = if text.starts_with('/') {
        text.to_string()
    } else {
        format!("{}/{text}", cwd.display())
    };
    let normal = scope::paths::normalise(&joined).unwrap_or(joined);
    super::paths::resolve_existing_prefix(Path::new(&normal))
        .to_string_lossy()
        .into_owned()
}

fn refused(tool: &str, what: &str) -> String {
    format!(
        "baton: {tool} names {what}. No agent tool reads or writes baton's key, the person's configuration, the dashboard's token or a run's control files; a run's state is read with baton's tools (pipeline_next_action, run_overview) or `baton show <workspace>`."
    )
}

/// Why `input`'s tool call is refused because it names a secret — in any
/// session, bound to a run or not; `None` when it names none.
pub fn refusal(config: &Config, input: &HookInput) -> Option<String> {
    let texts = texts(input);
    if texts.is_empty() {
        return None;
    }
    let secrets = of(config);
    let tool = input.tool.as_ref().map(ToolCall::name).unwrap_or_default();
    for text in &texts {
        let shell = matches!(input.tool, Some(ToolCall::Shell { .. })) && text.contains(' ');
        let found = scope::secrets::secret_named(&secrets, text).or_else(|| {
            (!shell)
                .then(|| scope::secrets::secret_named(&secrets, &absolute(&input.cwd, text)))
                .flatten()
        });
        if let Some(what) = found {
            return Some(refused(tool, &what));
        }
    }
    None
}

/// While a run is bound: why `input`'s tool call is refused because it
/// names a run's control file (`control`: repository-relative patterns);
/// the command the run handed out is the run's own.
pub(super) fn control_refusal(
    root: &Path,
    control: &[String],
    input: &HookInput,
    handed_out: bool,
) -> Option<String> {
    if handed_out {
        return None;
    }
    let tool = input.tool.as_ref()?;
    let home = std::env::var("HOME").ok();
    let mut candidates: Vec<String> = Vec::new();
    for text in texts(input) {
        match tool {
            ToolCall::Shell { .. } => {
                candidates.extend(scope::secrets::path_words(&text, home.as_deref()))
            }
            _ => candidates.push(text),
        }
    }
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    for word in candidates {
        let path = absolute(&input.cwd, &word);
        let Ok(rel) = Path::new(&path).strip_prefix(&root) else {
            continue;
        };
        if let Some(file) = scope::secrets::control_named(control, &rel.to_string_lossy()) {
            return Some(refused(
                tool.name(),
                &format!("{file} (a run's control file, written and read by baton only)"),
            ));
        }
    }
    None
}
