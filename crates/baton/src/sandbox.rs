//! Claude Code's Bash sandbox as baton sets it up (`baton init --client
//! claude`, `baton run`'s Claude preset): the operating system, not a hook,
//! keeps every command the agent runs — and every program that command
//! starts, a test suite, a script — from reading baton's key and the
//! person's configuration, and from writing baton's control files.
//!
//! Claude Code 2.1.328 runs each Bash command under bubblewrap on Linux
//! (Seatbelt on macOS) when `sandbox.enabled` is set. baton sets:
//!
//! * `enabled`, `failIfUnavailable` (no sandbox — bubblewrap or socat
//!   missing — means the client refuses to start rather than run commands
//!   unguarded) and `allowUnsandboxedCommands: false` (the model cannot ask
//!   for a command outside the sandbox);
//! * `filesystem.denyRead`: the person's configuration folder
//!   (`~/.config/baton`: `state.key`, `config.toml`) and the dashboard's
//!   token file;
//! * `filesystem.denyWrite`: that folder, the person's witness folder
//!   (`~/.local/state/baton`: what baton wrote to each run's state,
//!   `baton_state::witness`; readable), `.baton/`, the specs folder
//!   (every run's `state.json`, live state, journal, answers, archive),
//!   the clients' settings and baton's configuration in the repository,
//!   and the clients' folders in the home folder (Claude Code's transcripts,
//!   which a chat answer is checked against);
//! * `network.allowedDomains`: the public package registries and GitHub,
//!   so builds and installs work; anything else is refused in a headless
//!   run (docs/clients.md, "Claude Code's sandbox").
//!
//! Paths go in two files: `.claude/settings.json` (committed) gets the
//! portable forms (`~/…`), `.claude/settings.local.json` (this machine's)
//! the absolute ones for this repository and this person.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use baton_config::Config;

/// Domains sandboxed commands may reach: package registries and GitHub.
pub const ALLOWED_DOMAINS: &[&str] = &[
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "static.rust-lang.org",
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "proxy.golang.org",
    "sum.golang.org",
    "github.com",
    "api.github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
    "raw.githubusercontent.com",
];

/// What sandboxed commands may not read and may not write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// Paths no sandboxed command reads.
    pub deny_read: Vec<String>,
    /// Paths no sandboxed command writes.
    pub deny_write: Vec<String>,
}

/// The portable entries (committed in `.claude/settings.json`): the home
/// folder's parts, which `~` names on every developer's machine.
pub fn portable() -> Protected {
    Protected {
        deny_read: vec!["~/.config/baton".into()],
        deny_write: vec![
            "~/.config/baton".into(),
            "~/.local/state/baton".into(),
            "~/.claude".into(),
            "~/.claude.json".into(),
            "~/.codex".into(),
            "~/.cursor".into(),
        ],
    }
}

/// The absolute entries for this repository and this person (this
/// machine's `.claude/settings.local.json`, and `baton run`'s settings).
pub fn absolute(config: &Config) -> Protected {
    let mut p = Protected::default();
    let show = |path: &Path| path.to_string_lossy().into_owned();
    if let Some(dir) = baton_config::person::config_dir() {
        p.deny_read.push(show(&dir));
        p.deny_write.push(show(&dir));
    }
    if let Some(witness) = baton_config::person::witness_dir() {
        // Made now: a path that does not exist yet could be created inside
        // the sandbox.
        let _ = baton_usecases::witness::create_folder(&witness);
        p.deny_write.push(show(&witness));
    }
    if let Some(token) = &config.dashboard.token_file {
        p.deny_read
            .push(show(&absolute_path(&config.repo_root, token)));
    }
    let root = &config.repo_root;
    for part in [
        ".baton",
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".mcp.json",
        ".codex",
        ".cursor",
        "baton.toml",
    ] {
        p.deny_write.push(show(&root.join(part)));
    }
    p.deny_write.push(show(&config.specs_root));
    p
}

fn absolute_path(root: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    }
}

/// The `sandbox` settings block denying `p`.
pub fn block(p: &Protected) -> Value {
    json!({
        "enabled": true,
        "failIfUnavailable": true,
        "allowUnsandboxedCommands": false,
        "filesystem": {
            "denyRead": p.deny_read,
            "denyWrite": p.deny_write,
        },
        "network": {
            "allowedDomains": ALLOWED_DOMAINS,
        },
    })
}

/// Merges `p` into the `sandbox` block of a settings document: the sandbox
/// on and required, baton's paths and domains added to the person's own
/// (which stay). Fails, changing nothing, when `sandbox` or one of its
/// lists is not of the expected shape.
pub fn merge(doc: &mut Map<String, Value>, p: &Protected) -> Result<(), String> {
    let sandbox = doc
        .entry("sandbox")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(sandbox) = sandbox else {
        return Err("sandbox is not an object".into());
    };
    let mut merged = sandbox.clone();
    for (key, value) in [
        ("enabled", true),
        ("failIfUnavailable", true),
        ("allowUnsandboxedCommands", false),
    ] {
        merged.insert(key.into(), Value::Bool(value));
    }
    let lists: [(&str, &str, Vec<String>); 3] = [
        ("filesystem", "denyRead", p.deny_read.clone()),
        ("filesystem", "denyWrite", p.deny_write.clone()),
        (
            "network",
            "allowedDomains",
            ALLOWED_DOMAINS.iter().map(|d| d.to_string()).collect(),
        ),
    ];
    for (group, key, wanted) in lists {
        let group_value = merged
            .entry(group)
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(group_map) = group_value else {
            return Err(format!("sandbox.{group} is not an object"));
        };
        let list = group_map
            .entry(key)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            return Err(format!("sandbox.{group}.{key} is not a list"));
        };
        for item in wanted {
            if !list.iter().any(|v| v.as_str() == Some(item.as_str())) {
                list.push(Value::String(item));
            }
        }
    }
    *sandbox = merged;
    Ok(())
}

/// Whether this machine has what Claude Code's sandbox needs on Linux
/// (`bwrap` and `socat` on `PATH`); `Err` names what is missing. Other
/// systems are not checked (macOS has Seatbelt built in).
pub fn linux_requirements() -> Result<(), Vec<&'static str>> {
    if !cfg!(target_os = "linux") {
        return Ok(());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&'static str> = ["bwrap", "socat"]
        .into_iter()
        .filter(|p| !std::env::split_paths(&path).any(|d| d.join(p).is_file()))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_the_persons_entries_and_adds_baton_s_once() {
        let mut doc: Map<String, Value> = serde_json::from_value(json!({
            "sandbox": {
                "enabled": false,
                "filesystem": {"denyRead": ["~/.aws"]},
                "excludedCommands": ["docker"],
            },
            "theme": "dark",
        }))
        .unwrap();
        let p = portable();
        merge(&mut doc, &p).unwrap();
        merge(&mut doc, &p).unwrap();
        let s = &doc["sandbox"];
        assert_eq!(s["enabled"], true);
        assert_eq!(s["failIfUnavailable"], true);
        assert_eq!(s["allowUnsandboxedCommands"], false);
        assert_eq!(s["excludedCommands"], json!(["docker"]));
        assert_eq!(
            s["filesystem"]["denyRead"],
            json!(["~/.aws", "~/.config/baton"])
        );
        assert_eq!(
            s["network"]["allowedDomains"].as_array().unwrap().len(),
            ALLOWED_DOMAINS.len()
        );
        assert_eq!(doc["theme"], "dark");
    }

    #[test]
    fn a_sandbox_of_the_wrong_shape_is_left_alone() {
        let mut doc: Map<String, Value> =
            serde_json::from_value(json!({"sandbox": {"filesystem": {"denyRead": "x"}}})).unwrap();
        let before = doc.clone();
        let err = merge(&mut doc, &portable()).unwrap_err();
        assert!(err.contains("sandbox.filesystem.denyRead"), "{err}");
        assert_eq!(doc, before);
    }
}
