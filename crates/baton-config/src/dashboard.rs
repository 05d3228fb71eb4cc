//! Dashboard settings (`[dashboard]` in `baton.toml`, `BATON_DASHBOARD_*`):
//! its port, the access token required when it listens beyond loopback,
//! and extra host names it answers to.
//!
//! The token is read from a file (`BATON_DASHBOARD_TOKEN_FILE`, or
//! `[dashboard] token_file`), never from the environment: a secret in the
//! environment is inherited by every process started from that shell —
//! the agent's too — and readable in `/proc/<pid>/environ`.
//! `BATON_DASHBOARD_TOKEN` (and `token_env`) are refused with a message
//! that says so. The token reads the dashboard and reaches `/mcp`; it never
//! acts (docs/dashboard.md).

use serde::Deserialize;

use crate::notify::Secret;
use crate::{ConfigError, EnvSource, env};

/// The port `baton dashboard` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 8377;

/// Dashboard settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardConfig {
    /// The port `baton dashboard` listens on.
    pub port: u16,
    /// The access token for a listener beyond loopback (generated and
    /// printed once when none is configured).
    pub token: Option<Secret>,
    /// Host names the dashboard answers to besides `localhost` and IP
    /// addresses (a name that resolves to this machine, behind a proxy).
    /// Any other `Host` is refused (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// The file the token was read from, when one is configured: what the
    /// agent's tools and sandboxed commands must not read
    /// (docs/clients.md, "Trust model").
    pub token_file: Option<std::path::PathBuf>,
}

impl Default for DashboardConfig {
    fn default() -> DashboardConfig {
        DashboardConfig {
            port: DEFAULT_PORT,
            token: None,
            allowed_hosts: Vec::new(),
            token_file: None,
        }
    }
}

/// The shortest access token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// `[dashboard]` in `baton.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileDashboard {
    port: Option<u16>,
    /// No longer supported (a secret in the environment); kept to say so.
    token_env: Option<String>,
    /// A file holding the access token (relative to the repository root).
    token_file: Option<std::path::PathBuf>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
}

/// The token in `path`: its first line, trimmed; at most 4 KiB read.
fn read_token(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut text = String::new();
    file.take(4096)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(text.lines().next().unwrap_or("").trim().to_string())
}

pub(crate) fn resolve(
    file: FileDashboard,
    env: &dyn EnvSource,
    repo_root: &std::path::Path,
) -> Result<DashboardConfig, ConfigError> {
    let port = match env.var(env::DASHBOARD_PORT) {
        Some(v) => v.parse().map_err(|_| ConfigError::InvalidValue {
            name: env::DASHBOARD_PORT.into(),
            value: v.clone(),
            reason: "expected a port number (0 picks a free one)".into(),
        })?,
        None => file.port.unwrap_or(DEFAULT_PORT),
    };
    if env.var(env::DASHBOARD_TOKEN).is_some() || file.token_env.is_some() {
        let name = if env.var(env::DASHBOARD_TOKEN).is_some() {
            env::DASHBOARD_TOKEN.to_string()
        } else {
            "[dashboard] token_env".to_string()
        };
        return Err(ConfigError::InvalidValue {
            name,
            value: "<hidden>".into(),
            reason: format!(
                "baton no longer reads the dashboard's token from the environment: every process started from it inherits it (your agent too) and can read it in /proc/<pid>/environ. Put the token in a file only you read and name the file with {} or [dashboard] token_file, then unset the variable",
                env::DASHBOARD_TOKEN_FILE
            ),
        });
    }
    let (file_path, name) = match env.var(env::DASHBOARD_TOKEN_FILE) {
        Some(p) => (
            Some(std::path::PathBuf::from(p)),
            env::DASHBOARD_TOKEN_FILE.to_string(),
        ),
        None => (
            file.token_file.map(|p| repo_root.join(p)),
            "[dashboard] token_file".to_string(),
        ),
    };
    let token = match &file_path {
        Some(path) => Some(
            read_token(path).map_err(|reason| ConfigError::InvalidValue {
                name: name.clone(),
                value: path.display().to_string(),
                reason,
            })?,
        ),
        None => None,
    };
    if let Some(t) = &token
        && t.len() < MIN_TOKEN_LEN
    {
        return Err(ConfigError::InvalidValue {
            name,
            value: "<hidden>".into(),
            reason: format!("an access token needs at least {MIN_TOKEN_LEN} characters"),
        });
    }
    let mut allowed_hosts: Vec<String> = file
        .allowed_hosts
        .iter()
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    if let Some(list) = env.var(env::DASHBOARD_HOSTS) {
        allowed_hosts.extend(
            crate::parse_groups(&list)
                .iter()
                .map(|h| h.to_ascii_lowercase()),
        );
    }
    allowed_hosts.retain(|h| !h.is_empty());
    Ok(DashboardConfig {
        port,
        token: token.map(Secret::new),
        allowed_hosts,
        token_file: file_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_port_and_hosts_resolve_and_short_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "0123456789abcdef0123\n").unwrap();
        std::fs::write(dir.path().join("short"), "short\n").unwrap();
        let file: FileDashboard = toml::from_str(
            "port = 9000\ntoken_file = \"token\"\nallowed_hosts = [\"Box.Local\"]\n",
        )
        .unwrap();
        let env = [(env::DASHBOARD_HOSTS, "dash.example")];
        let c = resolve(file, &env, dir.path()).unwrap();
        assert_eq!(c.port, 9000);
        assert_eq!(c.token.unwrap().expose(), "0123456789abcdef0123");
        assert_eq!(c.allowed_hosts, ["box.local", "dash.example"]);
        let short = dir.path().join("short").display().to_string();
        let err = resolve(
            FileDashboard::default(),
            &[(env::DASHBOARD_TOKEN_FILE, short.as_str())],
            dir.path(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("16") && !err.contains("short\n"), "{err}");
        assert_eq!(
            resolve(FileDashboard::default(), &[], dir.path())
                .unwrap()
                .port,
            DEFAULT_PORT
        );
    }

    #[test]
    fn a_token_in_the_environment_is_refused_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve(
            FileDashboard::default(),
            &[(env::DASHBOARD_TOKEN, "0123456789abcdef0123")],
            dir.path(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("BATON_DASHBOARD_TOKEN_FILE"), "{err}");
        assert!(!err.contains("0123456789abcdef0123"), "{err}");
        let file: FileDashboard = toml::from_str("token_env = \"MY_TOKEN\"\n").unwrap();
        assert!(resolve(file, &[], dir.path()).is_err());
    }
}
