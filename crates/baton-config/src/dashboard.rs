//! Dashboard settings (`[dashboard]` in `baton.toml`, `BATON_DASHBOARD_*`):
//! its port, the access token required when it listens beyond loopback,
//! and extra host names it answers to.

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
}

impl Default for DashboardConfig {
    fn default() -> DashboardConfig {
        DashboardConfig {
            port: DEFAULT_PORT,
            token: None,
            allowed_hosts: Vec::new(),
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
    token_env: Option<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
}

pub(crate) fn resolve(
    file: FileDashboard,
    env: &dyn EnvSource,
) -> Result<DashboardConfig, ConfigError> {
    let port = match env.var(env::DASHBOARD_PORT) {
        Some(v) => v.parse().map_err(|_| ConfigError::InvalidValue {
            name: env::DASHBOARD_PORT.into(),
            value: v.clone(),
            reason: "expected a port number (0 picks a free one)".into(),
        })?,
        None => file.port.unwrap_or(DEFAULT_PORT),
    };
    let (token, name) = match env.var(env::DASHBOARD_TOKEN) {
        Some(t) => (Some(t), env::DASHBOARD_TOKEN.to_string()),
        None => match &file.token_env {
            Some(var) => (env.var(var), var.clone()),
            None => (None, String::new()),
        },
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_port_and_hosts_resolve_and_short_tokens_are_refused() {
        let file: FileDashboard = toml::from_str(
            "port = 9000\ntoken_env = \"MY_TOKEN\"\nallowed_hosts = [\"Box.Local\"]\n",
        )
        .unwrap();
        let env = [
            ("MY_TOKEN", "0123456789abcdef0123"),
            (env::DASHBOARD_HOSTS, "dash.example"),
        ];
        let c = resolve(file, &env).unwrap();
        assert_eq!(c.port, 9000);
        assert_eq!(c.token.unwrap().expose(), "0123456789abcdef0123");
        assert_eq!(c.allowed_hosts, ["box.local", "dash.example"]);
        let err = resolve(FileDashboard::default(), &[(env::DASHBOARD_TOKEN, "short")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("16") && !err.contains("short"), "{err}");
        assert_eq!(
            resolve(FileDashboard::default(), &[]).unwrap().port,
            DEFAULT_PORT
        );
    }
}
