//! Team mode's handle in [`Services`](crate::services::Services): the
//! settings, and the database link opened on first use (never on a
//! process's start path). Knows nothing of the use cases.

use std::sync::OnceLock;

use baton_config::Config;
use baton_team::{Team, TeamError, TeamSettings};

use crate::error::{Error, ErrorCode, Result};

/// Team mode's handle in [`Services`]: the settings, and the database link
/// opened on first use.
pub struct TeamLink {
    settings: Option<TeamSettings>,
    team: OnceLock<Result<Team, TeamError>>,
}

impl std::fmt::Debug for TeamLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.settings, self.team.get()) {
            (None, _) => f.write_str("TeamLink(off)"),
            (Some(s), None) => write!(f, "TeamLink({s:?}, not opened)"),
            (Some(_), Some(Ok(t))) => write!(f, "TeamLink({t:?})"),
            (Some(s), Some(Err(e))) => write!(f, "TeamLink({s:?}, {})", e.code()),
        }
    }
}

impl TeamLink {
    /// The link for `config` (nothing is opened here).
    pub fn new(config: &Config, version: &'static str) -> TeamLink {
        let settings = config.team.database_url.as_ref().map(|url| TeamSettings {
            database_url: url.expose().to_string(),
            repo_root: config.repo_root.clone(),
            team_dir: config.repo_root.join(".baton").join("team"),
            version,
        });
        TeamLink {
            settings,
            team: OnceLock::new(),
        }
    }

    /// Whether team mode is configured.
    pub fn enabled(&self) -> bool {
        self.settings.is_some()
    }

    /// The team handle, opened on first use; `None` when team mode is off
    /// or could not open (see [`TeamLink::problem`]; logged once).
    pub fn get(&self) -> Option<&Team> {
        self.open()?.as_ref().ok()
    }

    /// Why team mode is configured but could not open (a URL that is not
    /// one, team mode's folder not writable).
    pub fn problem(&self) -> Option<&TeamError> {
        self.open()?.as_ref().err()
    }

    fn open(&self) -> Option<&Result<Team, TeamError>> {
        let settings = self.settings.as_ref()?;
        Some(self.team.get_or_init(|| {
            Team::open(settings.clone()).inspect_err(|e| {
                tracing::error!("team mode is off for this process: {e}");
            })
        }))
    }

    /// The handle, or — team mode configured but not opened — the error
    /// that says why; `Ok(None)` when team mode is off.
    pub(crate) fn usable(&self) -> Result<Option<&Team>> {
        match self.open() {
            None => Ok(None),
            Some(Ok(team)) => Ok(Some(team)),
            Some(Err(e)) => Err(team_error(e.clone())),
        }
    }
}

pub(crate) fn team_error(e: TeamError) -> Error {
    Error::new(ErrorCode::TeamUnavailable, e.to_string()).with_details(serde_json::json!({
        "team": e.code(),
    }))
}
