//! Team mode's errors: each says what went wrong for a person and what to
//! do next, and none ever shows the database password (URLs are shown
//! redacted, [`crate::url::redact`]).

/// What went wrong talking to the team database.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TeamError {
    /// `BATON_DATABASE_URL` (or `[team] database_url`) is not a PostgreSQL URL.
    #[error(
        "the team database URL {url} is not a PostgreSQL URL ({reason}); expected postgres://USER:PASSWORD@HOST:PORT/DATABASE (BATON_DATABASE_URL or [team] database_url in baton.toml)"
    )]
    BadUrl {
        /// The URL, password hidden.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server refused the user name or password.
    #[error(
        "the team database at {url} refused the password of user {user:?}; check the user and password in BATON_DATABASE_URL (or [team] database_url). Calls go on on this machine and their writes wait in {outbox} until it is fixed"
    )]
    PasswordRefused {
        /// The URL, password hidden.
        url: String,
        /// The user name.
        user: String,
        /// Where writes wait meanwhile.
        outbox: String,
    },
    /// The database named in the URL does not exist.
    #[error(
        "the team database at {url} does not exist on its server; create it (createdb, or your provider's console) or fix the database name in BATON_DATABASE_URL"
    )]
    NoDatabase {
        /// The URL, password hidden.
        url: String,
    },
    /// The database holds a newer schema than this baton knows.
    #[error(
        "the team database at {url} has schema version {found}, newer than this baton knows (up to {known}); another machine runs a newer baton — upgrade this one (baton {version}). Until then this machine works alone and keeps its writes in {outbox}"
    )]
    SchemaTooNew {
        /// The URL, password hidden.
        url: String,
        /// The newest version applied in the database.
        found: i64,
        /// The newest version this binary has.
        known: i64,
        /// This binary's version.
        version: String,
        /// Where writes wait meanwhile.
        outbox: String,
    },
    /// The database's schema does not match this baton's (a migration was
    /// changed, or a half-applied one).
    #[error(
        "the team database at {url} has a schema this baton cannot use: {reason}; ask whoever manages it (docs/team.md, \"Schema versions\")"
    )]
    SchemaMismatch {
        /// The URL, password hidden.
        url: String,
        /// What the migrator said.
        reason: String,
    },
    /// The server cannot be reached (refused, timed out, dropped).
    #[error(
        "the team database at {url} cannot be reached ({reason}); this machine goes on alone and sends what it wrote when the database is back"
    )]
    Unreachable {
        /// The URL, password hidden.
        url: String,
        /// The underlying cause.
        reason: String,
    },
    /// A query failed for another reason.
    #[error("the team database at {url} failed: {reason}")]
    Query {
        /// The URL, password hidden.
        url: String,
        /// The underlying cause.
        reason: String,
    },
    /// A file of team mode (identity, outbox) could not be read or written.
    #[error("{op} {path}: {reason}")]
    Io {
        /// What was attempted.
        op: &'static str,
        /// The path.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The answer did not come within the wait.
    #[error("the team database at {url} did not answer within {ms} ms")]
    Timeout {
        /// The URL, password hidden.
        url: String,
        /// How long was waited.
        ms: u64,
    },
}

impl TeamError {
    /// Whether the database could not be used *now* (down, refused, a
    /// configuration to fix): calls go on locally and writes wait in the
    /// outbox. Every variant but [`TeamError::Io`] is.
    pub fn is_unavailable(&self) -> bool {
        !matches!(self, TeamError::Io { .. })
    }

    /// A stable short code for logs and replies.
    pub fn code(&self) -> &'static str {
        match self {
            TeamError::BadUrl { .. } => "team_bad_url",
            TeamError::PasswordRefused { .. } => "team_password_refused",
            TeamError::NoDatabase { .. } => "team_no_database",
            TeamError::SchemaTooNew { .. } => "team_schema_too_new",
            TeamError::SchemaMismatch { .. } => "team_schema_mismatch",
            TeamError::Unreachable { .. } => "team_unreachable",
            TeamError::Query { .. } => "team_query_failed",
            TeamError::Io { .. } => "team_io",
            TeamError::Timeout { .. } => "team_timeout",
        }
    }

    pub(crate) fn io(
        op: &'static str,
        path: &std::path::Path,
        e: impl std::fmt::Display,
    ) -> TeamError {
        TeamError::Io {
            op,
            path: path.display().to_string(),
            reason: e.to_string(),
        }
    }
}
