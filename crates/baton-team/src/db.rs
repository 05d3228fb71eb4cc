//! The SQL of team mode. Plain `sqlx::query` with bound parameters (no
//! compile-time checked macros: building needs no database). Every
//! statement names the `baton` schema.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Row, Transaction};

use crate::TeamError;
use crate::records::{
    ClaimOutcome, IssueClaim, MachineRef, RemoteAnswer, RunFilter, RunPage, RunWrite, TeamEvent,
    TeamHistory, TeamRun,
};

/// The NOTIFY channel: payloads are wake-ups only (`e` events, `h`
/// history, `a:<machine>` an answer for that machine); listeners read the
/// tables.
pub const CHANNEL: &str = "baton_team";

/// The transaction lock every writer of events and history takes before
/// inserting, so ids and seqs become visible in increasing order.
pub const LOG_LOCK: i64 = 0x6261_746f_6e5f_6c67; // "baton_lg"

/// A claim whose run never appeared is stale after this long.
const STALE_CLAIM_SECONDS: i64 = 120;

/// Turns a database error into a person's message: a refused password,
/// a missing database, an unreachable server, or a failed query.
pub fn classify(e: sqlx::Error, url: &str, outbox: &str) -> TeamError {
    let url = url.to_string();
    if let sqlx::Error::Database(db) = &e {
        match db.code().as_deref() {
            Some("28P01") | Some("28000") => {
                let user = crate::url::parse(&url)
                    .map(|o| o.get_username().to_string())
                    .unwrap_or_default();
                return TeamError::PasswordRefused {
                    url,
                    user,
                    outbox: outbox.to_string(),
                };
            }
            Some("3D000") => return TeamError::NoDatabase { url },
            // Connection exceptions, shutdowns, too many connections.
            Some(c) if c.starts_with("08") || c.starts_with("57P") || c == "53300" => {
                return TeamError::Unreachable {
                    url,
                    reason: db.message().to_string(),
                };
            }
            _ => {}
        }
    }
    match e {
        sqlx::Error::Io(io) => TeamError::Unreachable {
            url,
            reason: io.to_string(),
        },
        sqlx::Error::Tls(t) => TeamError::Unreachable {
            url,
            reason: format!("TLS: {t}"),
        },
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => TeamError::Unreachable {
            url,
            reason: "no connection within the wait".into(),
        },
        sqlx::Error::Protocol(p) => TeamError::Unreachable {
            url,
            reason: format!("protocol: {p}"),
        },
        other => TeamError::Query {
            url,
            reason: other.to_string(),
        },
    }
}

/// Whether `e` says the connection or server went away (retry later), as
/// opposed to the statement being refused for its content.
pub fn is_connection_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            c.starts_with("08")
                || c.starts_with("57P")
                || c.starts_with("53")
                || c.starts_with("40")
                || c == "28P01"
                || c == "28000"
                || c == "3D000"
                || c == "42P01" // the schema vanished: not this write's fault
        }),
        _ => false,
    }
}

/// Records this machine (name, folder, version) and when it was last seen.
pub async fn register_machine(
    pool: &PgPool,
    machine: &crate::Machine,
    repo: &str,
    version: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO baton.machines (id, host, path, name, repo, version)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, path = EXCLUDED.path,
             name = EXCLUDED.name, repo = EXCLUDED.repo, version = EXCLUDED.version,
             last_seen = now()",
    )
    .bind(&machine.id)
    .bind(&machine.host)
    .bind(&machine.path)
    .bind(machine.label())
    .bind(repo)
    .bind(version)
    .execute(pool)
    .await?;
    Ok(())
}

/// Writes a batch of queued writes in one transaction: each run's row
/// (only when newer), its events (once each), its history record, and
/// its issue claim (taken, released, or marked duplicate), then one
/// wake-up. All or nothing.
pub async fn apply_writes(
    pool: &PgPool,
    writes: &[(String, String, RunWrite)],
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let mut any_events = false;
    let mut any_history = false;
    for (machine, repo, w) in writes {
        let key = run_key(machine, &w.workspace);
        upsert_run(&mut tx, &key, machine, repo, w).await?;
        if !w.events.is_empty() || w.history.is_some() {
            if !any_events && !any_history {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(LOG_LOCK)
                    .execute(&mut *tx)
                    .await?;
            }
            if !w.events.is_empty() {
                sqlx::query(
                    "INSERT INTO baton.events (run_key, revision, ordinal, repo, machine, record)
                     SELECT $1, $2, (e.n - 1)::int, $3, $4, e.r
                     FROM jsonb_array_elements($5::jsonb) WITH ORDINALITY AS e(r, n)
                     ON CONFLICT (run_key, revision, ordinal) DO NOTHING",
                )
                .bind(&key)
                .bind(w.revision)
                .bind(repo)
                .bind(machine)
                .bind(Json(crate::jsonb::values(&w.events)))
                .execute(&mut *tx)
                .await?;
                any_events = true;
            }
            if let Some(record) = &w.history {
                sqlx::query(
                    "INSERT INTO baton.history (run_key, seq, repo, machine, workspace, record, ended_at)
                     VALUES ($1, nextval('baton.history_seq'), $2, $3, $4, $5, $6)
                     ON CONFLICT (run_key) DO UPDATE SET seq = nextval('baton.history_seq'),
                         record = EXCLUDED.record, ended_at = EXCLUDED.ended_at
                     WHERE baton.history.record IS DISTINCT FROM EXCLUDED.record",
                )
                .bind(&key)
                .bind(repo)
                .bind(machine)
                .bind(&w.workspace)
                .bind(Json(crate::jsonb::value(record)))
                .bind(w.updated)
                .execute(&mut *tx)
                .await?;
                any_history = true;
            }
        }
        if let Some(issue) = &w.issue {
            settle_claim(&mut tx, &key, machine, repo, issue, w).await?;
        }
    }
    if any_events {
        notify(&mut tx, "e").await?;
    }
    if any_history {
        notify(&mut tx, "h").await?;
    }
    tx.commit().await
}

async fn notify(tx: &mut Transaction<'_, Postgres>, payload: &str) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The run's key in the team.
pub fn run_key(machine: &str, workspace: &str) -> String {
    format!("{machine}/{workspace}")
}

async fn upsert_run(
    tx: &mut Transaction<'_, Postgres>,
    key: &str,
    machine: &str,
    repo: &str,
    w: &RunWrite,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO baton.runs (run_key, machine, repo, workspace, display, workflow, spec_name,
             issue, branch, phase, status, active, waiting, created_at, updated_at, revision, state,
             done, total)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                 $17::text::jsonb, $18, $19)
         ON CONFLICT (run_key) DO UPDATE SET machine = EXCLUDED.machine, repo = EXCLUDED.repo,
             display = EXCLUDED.display, workflow = EXCLUDED.workflow,
             spec_name = EXCLUDED.spec_name, issue = EXCLUDED.issue, branch = EXCLUDED.branch,
             phase = EXCLUDED.phase, status = EXCLUDED.status, active = EXCLUDED.active,
             waiting = EXCLUDED.waiting, created_at = EXCLUDED.created_at,
             updated_at = EXCLUDED.updated_at, revision = EXCLUDED.revision,
             state = EXCLUDED.state, done = EXCLUDED.done, total = EXCLUDED.total
         WHERE baton.runs.revision < EXCLUDED.revision",
    )
    .bind(key)
    .bind(machine)
    .bind(repo)
    .bind(&w.workspace)
    .bind(&w.display)
    .bind(&w.workflow)
    .bind(&w.spec_name)
    .bind(&w.issue)
    .bind(&w.branch)
    .bind(&w.phase)
    .bind(&w.status)
    .bind(w.active)
    .bind(w.waiting.as_ref().map(|v| Json(crate::jsonb::value(v))))
    .bind(w.created)
    .bind(w.updated)
    .bind(w.revision)
    .bind(crate::jsonb::text(&w.state))
    .bind(i32::try_from(w.done).unwrap_or(i32::MAX))
    .bind(i32::try_from(w.total).unwrap_or(i32::MAX))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Keeps the issue claim in step with an issue run's write: an ended run
/// lets go of its claim; an active one holds it, taking it when free (a
/// start made while the database was away), and is marked a duplicate
/// when another active run holds it.
async fn settle_claim(
    tx: &mut Transaction<'_, Postgres>,
    key: &str,
    machine: &str,
    repo: &str,
    issue: &str,
    w: &RunWrite,
) -> Result<(), sqlx::Error> {
    if !w.active {
        sqlx::query(
            "DELETE FROM baton.issue_claims WHERE repo = $1 AND issue = $2 AND run_key = $3",
        )
        .bind(repo)
        .bind(issue)
        .bind(key)
        .execute(&mut **tx)
        .await?;
        return Ok(());
    }
    lock_issue(tx, repo, issue).await?;
    let holder = current_claim(tx, repo, issue).await?;
    match holder {
        Some((holder_key, _, _, alive)) if holder_key != key && alive => {
            sqlx::query("UPDATE baton.runs SET duplicate_of = $2 WHERE run_key = $1")
                .bind(key)
                .bind(&holder_key)
                .execute(&mut **tx)
                .await?;
        }
        Some((holder_key, ..)) if holder_key == key => {}
        _ => {
            put_claim(tx, repo, issue, key, machine, &w.display).await?;
        }
    }
    Ok(())
}

async fn lock_issue(
    tx: &mut Transaction<'_, Postgres>,
    repo: &str,
    issue: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("baton-issue\u{1f}{repo}\u{1f}{issue}"))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The claim on an issue: (run key, machine, display, whether it still
/// holds: its run is active, or has not appeared yet and is recent).
async fn current_claim(
    tx: &mut Transaction<'_, Postgres>,
    repo: &str,
    issue: &str,
) -> Result<Option<(String, String, String, bool)>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT c.run_key, c.machine, c.display,
                CASE WHEN r.run_key IS NULL
                     THEN c.claimed_at > now() - make_interval(secs => $3)
                     ELSE r.active END AS alive
         FROM baton.issue_claims c LEFT JOIN baton.runs r ON r.run_key = c.run_key
         WHERE c.repo = $1 AND c.issue = $2",
    )
    .bind(repo)
    .bind(issue)
    .bind(STALE_CLAIM_SECONDS as f64)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(|r| {
        (
            r.get::<String, _>(0),
            r.get::<String, _>(1),
            r.get::<String, _>(2),
            r.get::<bool, _>(3),
        )
    }))
}

async fn put_claim(
    tx: &mut Transaction<'_, Postgres>,
    repo: &str,
    issue: &str,
    key: &str,
    machine: &str,
    display: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO baton.issue_claims (repo, issue, run_key, machine, display)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (repo, issue) DO UPDATE SET run_key = EXCLUDED.run_key,
             machine = EXCLUDED.machine, display = EXCLUDED.display, claimed_at = now()",
    )
    .bind(repo)
    .bind(issue)
    .bind(key)
    .bind(machine)
    .bind(display)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Claims `claim.issue` for the run about to start in `claim.workspace`
/// on `machine`, unless another active run holds it. Under the issue's
/// transaction lock, so two machines starting at once get one answer each.
pub async fn claim_issue(
    pool: &PgPool,
    machine: &str,
    repo: &str,
    claim: &IssueClaim,
) -> Result<ClaimOutcome, sqlx::Error> {
    let key = run_key(machine, &claim.workspace);
    let mut tx = pool.begin().await?;
    lock_issue(&mut tx, repo, &claim.issue).await?;
    if let Some((holder_key, holder_machine, display, true)) =
        current_claim(&mut tx, repo, &claim.issue).await?
        && holder_key != key
    {
        let name = machine_name(&mut tx, &holder_machine).await?;
        tx.rollback().await?;
        return Ok(ClaimOutcome::Taken {
            display,
            machine: MachineRef {
                id: holder_machine,
                name,
            },
        });
    }
    put_claim(&mut tx, repo, &claim.issue, &key, machine, &claim.display).await?;
    tx.commit().await?;
    Ok(ClaimOutcome::Claimed)
}

/// Lets go of a claim this run made (its start failed on this machine).
pub async fn release_claim(
    pool: &PgPool,
    machine: &str,
    repo: &str,
    claim: &IssueClaim,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM baton.issue_claims WHERE repo = $1 AND issue = $2 AND run_key = $3")
        .bind(repo)
        .bind(&claim.issue)
        .bind(run_key(machine, &claim.workspace))
        .execute(pool)
        .await?;
    Ok(())
}

async fn machine_name(tx: &mut Transaction<'_, Postgres>, id: &str) -> Result<String, sqlx::Error> {
    let name: Option<String> = sqlx::query_scalar("SELECT name FROM baton.machines WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(name.unwrap_or_else(|| id.to_string()))
}

const RUN_COLUMNS: &str = "r.run_key, r.machine, COALESCE(m.name, r.machine), r.workspace,
    r.display, r.workflow, r.spec_name, r.issue, r.branch, r.phase, r.status, r.active,
    r.waiting, r.created_at, r.updated_at, r.duplicate_of, r.done, r.total,
    (SELECT count(DISTINCT s.phase) FROM jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(r.state->'skippedPhases') = 'array'
        THEN r.state->'skippedPhases' ELSE '[]'::jsonb END) AS s(phase)
     WHERE s.phase <> 'setup'
       AND NOT COALESCE(r.state->'completedPhases', '[]'::jsonb) @> jsonb_build_array(s.phase)
    )::int4";

/// The machine named by columns `at` (its id) and `at + 1` (its name).
fn machine_at(row: &PgRow, at: usize) -> MachineRef {
    MachineRef {
        id: row.get(at),
        name: row.get(at + 1),
    }
}

fn run_from(row: &PgRow) -> TeamRun {
    TeamRun {
        key: row.get(0),
        machine: machine_at(row, 1),
        workspace: row.get(3),
        display: row.get(4),
        workflow: row.get(5),
        spec_name: row.get(6),
        issue: row.get(7),
        branch: row.get(8),
        phase: row.get(9),
        status: row.get(10),
        active: row.get(11),
        waiting: row.get::<Option<Json<Value>>, _>(12).map(|j| j.0),
        created: row.get::<DateTime<Utc>, _>(13),
        updated: row.get::<DateTime<Utc>, _>(14),
        duplicate_of: row.get(15),
        done: u32::try_from(row.get::<i32, _>(16)).unwrap_or(0),
        total: u32::try_from(row.get::<i32, _>(17)).unwrap_or(0),
        skipped: u32::try_from(row.get::<i32, _>(18)).unwrap_or(0),
    }
}

/// The repository's runs, most recently written first, `limit` from `offset`.
pub async fn list_runs(
    pool: &PgPool,
    repo: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<TeamRun>, sqlx::Error> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM baton.runs r LEFT JOIN baton.machines m ON m.id = r.machine
         WHERE r.repo = $1 ORDER BY r.updated_at DESC, r.run_key LIMIT $2 OFFSET $3"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(repo)
        .bind(limit)
        .bind(offset)
        .fetch_all(pool)
        .await?;
    Ok(rows.iter().map(run_from).collect())
}

/// A page of the repository's runs on machines other than `not_machine`:
/// the first `limit` that pass `filter` and `search` (newest created
/// first), how many pass, and the counts per filter.
pub async fn run_page(
    pool: &PgPool,
    repo: &str,
    not_machine: &str,
    filter: RunFilter,
    search: Option<&str>,
    limit: i64,
) -> Result<RunPage, sqlx::Error> {
    let condition = match filter {
        RunFilter::All => "TRUE",
        RunFilter::Active => "r.active",
        RunFilter::Waiting => "r.active AND r.waiting IS NOT NULL",
        RunFilter::Failed => "r.status = 'failed'",
        RunFilter::Completed => "r.status = 'completed'",
        RunFilter::Abandoned => "r.status = 'abandoned'",
    };
    let pattern = search.map(|s| {
        let escaped = s
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        format!("%{escaped}%")
    });
    let matches = "($3::text IS NULL OR r.workspace ILIKE $3 OR r.spec_name ILIKE $3
        OR r.workflow ILIKE $3 OR COALESCE(r.issue, '') ILIKE $3)";
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM baton.runs r LEFT JOIN baton.machines m ON m.id = r.machine
         WHERE r.repo = $1 AND r.machine <> $2 AND {condition} AND {matches}
         ORDER BY r.created_at DESC, r.workspace DESC LIMIT $4"
    );
    let runs = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(repo)
        .bind(not_machine)
        .bind(&pattern)
        .bind(limit)
        .fetch_all(pool)
        .await?;
    let sql = format!(
        "SELECT count(*) FILTER (WHERE {condition} AND {matches}),
                count(*),
                count(*) FILTER (WHERE r.active),
                count(*) FILTER (WHERE r.active AND r.waiting IS NOT NULL),
                count(*) FILTER (WHERE r.status = 'failed'),
                count(*) FILTER (WHERE r.status = 'completed'),
                count(*) FILTER (WHERE r.status = 'abandoned')
         FROM baton.runs r WHERE r.repo = $1 AND r.machine <> $2"
    );
    let counts = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(repo)
        .bind(not_machine)
        .bind(&pattern)
        .fetch_one(pool)
        .await?;
    let n = |i: usize| usize::try_from(counts.get::<i64, _>(i)).unwrap_or(0);
    Ok(RunPage {
        runs: runs.iter().map(run_from).collect(),
        matching: n(0),
        counts: [n(1), n(2), n(3), n(4), n(5), n(6)],
    })
}

/// How many runs the repository has.
pub async fn count_runs(pool: &PgPool, repo: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT count(*) FROM baton.runs WHERE repo = $1")
        .bind(repo)
        .fetch_one(pool)
        .await
}

/// The runs of the repository whose folder is `workspace` (on any
/// machine), with their states.
pub async fn find_runs(
    pool: &PgPool,
    repo: &str,
    workspace: &str,
) -> Result<Vec<(TeamRun, Value)>, sqlx::Error> {
    let sql = format!(
        "SELECT {RUN_COLUMNS}, r.state FROM baton.runs r
         LEFT JOIN baton.machines m ON m.id = r.machine
         WHERE r.repo = $1 AND r.workspace = $2 ORDER BY r.updated_at DESC"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(repo)
        .bind(workspace)
        .fetch_all(pool)
        .await?;
    Ok(rows
        .iter()
        .map(|r| (run_from(r), r.get::<Json<Value>, _>(19).0))
        .collect())
}

/// Events of the repository after `after` (at most `limit`, oldest
/// first), of one run when `run_key` is given.
pub async fn events_after(
    pool: &PgPool,
    repo: &str,
    after: i64,
    limit: i64,
    run_key: Option<&str>,
) -> Result<Vec<TeamEvent>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT e.id, e.run_key, e.machine, COALESCE(m.name, e.machine), e.record
         FROM baton.events e LEFT JOIN baton.machines m ON m.id = e.machine
         WHERE e.repo = $1 AND e.id > $2 AND ($4::text IS NULL OR e.run_key = $4)
         ORDER BY e.id LIMIT $3",
    )
    .bind(repo)
    .bind(after)
    .bind(limit)
    .bind(run_key)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .iter()
        .map(|r| TeamEvent {
            id: r.get(0),
            run_key: r.get(1),
            machine: machine_at(r, 2),
            record: r.get::<Json<Value>, _>(4).0,
        })
        .collect())
}

/// The last `limit` events of the repository (oldest first).
pub async fn last_events(
    pool: &PgPool,
    repo: &str,
    limit: i64,
    run_key: Option<&str>,
) -> Result<Vec<TeamEvent>, sqlx::Error> {
    let newest: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM baton.events WHERE repo = $1 AND ($3::text IS NULL OR run_key = $3)
         ORDER BY id DESC OFFSET $2 LIMIT 1",
    )
    .bind(repo)
    .bind(limit)
    .bind(run_key)
    .fetch_optional(pool)
    .await?;
    events_after(pool, repo, newest.unwrap_or(0), limit, run_key).await
}

/// The id of the repository's last event written before `before` (0 when
/// none): where a process that started at `before` begins to follow the
/// team's events, however late its first query runs.
pub async fn last_event_id_before(
    pool: &PgPool,
    repo: &str,
    before: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    let id: Option<i64> =
        sqlx::query_scalar("SELECT max(id) FROM baton.events WHERE repo = $1 AND written_at < $2")
            .bind(repo)
            .bind(before)
            .fetch_one(pool)
            .await?;
    Ok(id.unwrap_or(0))
}

/// Run-history records of the repository's other machines after `after`.
pub async fn history_after(
    pool: &PgPool,
    repo: &str,
    not_machine: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<TeamHistory>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT h.seq, h.run_key, h.machine, COALESCE(m.name, h.machine), h.record
         FROM baton.history h LEFT JOIN baton.machines m ON m.id = h.machine
         WHERE h.repo = $1 AND h.machine <> $2 AND h.seq > $3
         ORDER BY h.seq LIMIT $4",
    )
    .bind(repo)
    .bind(not_machine)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .iter()
        .map(|r| TeamHistory {
            seq: r.get(0),
            run_key: r.get(1),
            machine: machine_at(r, 2),
            record: r.get::<Json<Value>, _>(4).0,
        })
        .collect())
}

/// Queues a person's answer for a run of another machine; returns its id.
#[allow(clippy::too_many_arguments, reason = "each part named at the call")]
pub async fn send_answer(
    pool: &PgPool,
    run: &TeamRun,
    question: &str,
    answer: &str,
    who: &str,
    channel: &str,
    from: &crate::Machine,
) -> Result<i64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO baton.answers (run_key, target_machine, workspace, question, answer, who,
             channel, from_machine, from_name)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(&run.key)
    .bind(&run.machine.id)
    .bind(&run.workspace)
    .bind(question)
    .bind(answer)
    .bind(who)
    .bind(channel)
    .bind(&from.id)
    .bind(from.label())
    .fetch_one(&mut *tx)
    .await?;
    notify(&mut tx, &format!("a:{}", run.machine.id)).await?;
    tx.commit().await?;
    Ok(id)
}

/// The answer's status: (status, result).
pub async fn answer_status(
    pool: &PgPool,
    id: i64,
) -> Result<Option<(String, Option<String>)>, sqlx::Error> {
    let row = sqlx::query("SELECT status, result FROM baton.answers WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|r| (r.get(0), r.get(1))))
}

/// Answers waiting for runs of `machine`, oldest first.
pub async fn pending_answers(
    pool: &PgPool,
    machine: &str,
) -> Result<Vec<RemoteAnswer>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, workspace, question, answer, who, channel, from_machine, from_name
         FROM baton.answers WHERE target_machine = $1 AND status = 'pending' ORDER BY id LIMIT 100",
    )
    .bind(machine)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .iter()
        .map(|r| RemoteAnswer {
            id: r.get(0),
            workspace: r.get(1),
            question: r.get(2),
            answer: r.get(3),
            who: r.get(4),
            channel: r.get(5),
            from: machine_at(r, 6),
        })
        .collect())
}

/// Marks an answer applied or refused (once: a second process that
/// applied the same answer concurrently finds it done). Returns whether
/// this call settled it.
pub async fn settle_answer(
    pool: &PgPool,
    id: i64,
    applied: bool,
    result: &str,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE baton.answers SET status = $2, result = $3, done_at = now()
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(id)
    .bind(if applied { "applied" } else { "refused" })
    .bind(result)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Takes an answer to apply it: only one process of the machine gets it
/// (a session advisory lock on the answer, held by the returned
/// connection until it is settled or the connection goes).
pub async fn take_answer(
    pool: &PgPool,
    id: i64,
) -> Result<Option<sqlx::pool::PoolConnection<Postgres>>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
        .bind(format!("baton-answer\u{1f}{id}"))
        .fetch_one(&mut *conn)
        .await?;
    if !got {
        return Ok(None);
    }
    let still: Option<String> =
        sqlx::query_scalar("SELECT status FROM baton.answers WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
    if still.as_deref() != Some("pending") {
        release_answer(&mut conn, id).await?;
        return Ok(None);
    }
    Ok(Some(conn))
}

/// Lets go of the lock [`take_answer`] took.
pub async fn release_answer(
    conn: &mut sqlx::pool::PoolConnection<Postgres>,
    id: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_unlock(hashtextextended($1, 0))")
        .bind(format!("baton-answer\u{1f}{id}"))
        .execute(&mut **conn)
        .await?;
    Ok(())
}
