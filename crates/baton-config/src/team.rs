//! Team mode settings (`[team]` in `baton.toml`, `BATON_DATABASE_URL`):
//! the PostgreSQL database every machine of the team shares
//! (docs/team.md). Unset, baton works on files alone and nothing of team
//! mode starts. The URL is a [`Secret`]: its password never appears in
//! `Debug`, logs or error messages.

use serde::Deserialize;

use crate::notify::Secret;
use crate::{ConfigError, EnvSource, env};

/// Team mode settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamConfig {
    /// The team database (`postgres://USER:PASSWORD@HOST:PORT/DATABASE`);
    /// `None`: team mode is off.
    pub database_url: Option<Secret>,
}

impl TeamConfig {
    /// Whether team mode is on.
    pub fn enabled(&self) -> bool {
        self.database_url.is_some()
    }
}

/// `[team]` in `baton.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTeam {
    database_url: Option<String>,
}

pub(crate) fn resolve(file: FileTeam, env: &dyn EnvSource) -> Result<TeamConfig, ConfigError> {
    let (url, name) = match env.var(env::DATABASE_URL) {
        Some(u) => (Some(u), env::DATABASE_URL),
        None => (
            file.database_url.filter(|u| !u.trim().is_empty()),
            "[team] database_url",
        ),
    };
    let Some(url) = url else {
        return Ok(TeamConfig::default());
    };
    let scheme = url.trim().split("://").next().unwrap_or_default();
    if !url.contains("://") || !(scheme == "postgres" || scheme == "postgresql") {
        return Err(ConfigError::InvalidValue {
            name: name.into(),
            // The value may hold a password: never shown.
            value: "<hidden>".into(),
            reason: "expected a PostgreSQL URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE (docs/team.md)".into(),
        });
    }
    Ok(TeamConfig {
        database_url: Some(Secret::new(url.trim())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_and_a_wrong_scheme_is_refused_without_showing_it() {
        let off = resolve(FileTeam::default(), &[("X", "y")]).unwrap();
        assert!(!off.enabled());
        let file = FileTeam {
            database_url: Some("postgres://a:b@h/db".into()),
        };
        let on = resolve(file, &[(env::DATABASE_URL, "postgresql://c:d@h/db2")]).unwrap();
        assert_eq!(on.database_url.unwrap().expose(), "postgresql://c:d@h/db2");
        let e = resolve(
            FileTeam::default(),
            &[(env::DATABASE_URL, "mysql://u:s3cret@h/db")],
        )
        .unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert!(e.to_string().contains("BATON_DATABASE_URL"), "{e}");
        assert!(
            !format!(
                "{:?}",
                TeamConfig {
                    database_url: Some(Secret::new("postgres://u:s3cret@h/db"))
                }
            )
            .contains("s3cret")
        );
    }
}
