//! The team database's schema: versioned migrations embedded in the binary
//! (`migrations/*.sql`, applied by sqlx's migrator under its advisory lock,
//! so machines starting at once against an empty database create it
//! once). A database whose schema is newer than this binary knows is
//! refused with a clear message instead of being written with old rules.

use sqlx::PgPool;
use sqlx::migrate::{MigrateError, Migrator};

use crate::TeamError;

/// The schema every object of team mode lives in.
pub const SCHEMA: &str = "baton";

/// The migrations, embedded at build time (no database needed to build).
fn migrator() -> Migrator {
    let mut m = sqlx::migrate!("./migrations");
    m.create_schema(SCHEMA);
    m.dangerous_set_table_name("baton._sqlx_migrations");
    m
}

/// The newest schema version this binary knows.
pub fn known_version() -> i64 {
    migrator().iter().map(|m| m.version).max().unwrap_or(0)
}

/// The newest schema version applied in the database (`None`: none yet).
pub async fn applied_version(pool: &PgPool) -> Result<Option<i64>, sqlx::Error> {
    let exists: bool =
        sqlx::query_scalar("SELECT to_regclass('baton._sqlx_migrations') IS NOT NULL")
            .fetch_one(pool)
            .await?;
    if !exists {
        return Ok(None);
    }
    sqlx::query_scalar("SELECT max(version) FROM baton._sqlx_migrations WHERE success")
        .fetch_one(pool)
        .await
}

/// Brings the database to this binary's schema, or refuses a newer one.
/// Returns the version in place afterwards.
pub async fn migrate(
    pool: &PgPool,
    url: &str,
    version: &str,
    outbox: &str,
) -> Result<i64, TeamError> {
    let known = known_version();
    let too_new = |found: i64| TeamError::SchemaTooNew {
        url: url.to_string(),
        found,
        known,
        version: version.to_string(),
        outbox: outbox.to_string(),
    };
    match applied_version(pool).await {
        Ok(Some(found)) if found > known => return Err(too_new(found)),
        Ok(_) => {}
        Err(e) => return Err(crate::db::classify(e, url, outbox)),
    }
    match migrator().run(pool).await {
        Ok(()) => Ok(known),
        // Another machine applied a newer migration in between.
        Err(MigrateError::VersionMissing(found)) if found > known => Err(too_new(found)),
        Err(MigrateError::Execute(e)) => Err(crate::db::classify(e, url, outbox)),
        Err(e) => Err(TeamError::SchemaMismatch {
            url: url.to_string(),
            reason: e.to_string(),
        }),
    }
}
