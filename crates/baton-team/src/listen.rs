//! The listener: other machines' events, history records and answers,
//! handed to the use cases' sinks. `NOTIFY` only wakes it; what it hands
//! on is always read from the tables after the last position it handed
//! on, so a listener that reconnects (or never received a notification)
//! loses nothing. At start it checks that notifications arrive at all
//! (a connection pooler in transaction mode accepts `LISTEN` and then
//! drops it): when its own test notification does not come back, it
//! polls instead.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;

use crate::records::{RemoteAnswer, TeamEvent, TeamHistory};
use crate::{AnswerHandler, Inner, Sink, db, lock};

/// How long the self-test waits for its own notification.
const SELF_TEST_WAIT: Duration = Duration::from_secs(2);
/// Polling period when notifications do not arrive.
const POLL_EVERY: Duration = Duration::from_millis(250);
/// Catch-up period even when notifications arrive (a safety net).
const SWEEP_EVERY: Duration = Duration::from_secs(5);
/// Events handed on per read at most.
const EVENT_BATCH: i64 = 1000;
/// History records read per query.
pub(crate) const HISTORY_BATCH: i64 = 500;
/// A history record larger than this is not taken (past-run text is data,
/// and data from the database is bounded like data from a file).
const MAX_HISTORY_RECORD: usize = 256 * 1024;

/// Where deliveries go (set by the use cases).
#[derive(Default)]
pub(crate) struct Sinks {
    /// Other machines' events, and the position after which to start.
    pub events: Option<(i64, Sink<TeamEvent>)>,
    /// Other machines' history records.
    pub history: Option<Sink<TeamHistory>>,
    /// Who applies answers for this machine's runs.
    pub answers: Option<AnswerHandler>,
}

pub(crate) async fn listen_loop(inner: Arc<Inner>) {
    // Only one delivery at a time (the listener and a caller's sync).
    loop {
        let Some(pool) = wait_ready(&inner).await else {
            continue;
        };
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                inner.link.note_error(e);
                tokio::time::sleep(crate::RETRY_EVERY).await;
                continue;
            }
        };
        let listening =
            listener.listen(db::CHANNEL).await.is_ok() && self_test(&pool, &mut listener).await;
        inner
            .link
            .set_delivery(if listening { "listen" } else { "poll" });
        if !listening {
            tracing::info!(
                "team: notifications do not arrive through this connection (a pooler?); polling every {} ms",
                POLL_EVERY.as_millis()
            );
        }
        deliver_all(&inner, &pool).await;
        let period = if listening { SWEEP_EVERY } else { POLL_EVERY };
        loop {
            tokio::select! {
                got = listener.try_recv(), if listening => match got {
                    // A wake-up, or a reconnect (notifications may have
                    // been missed): read the tables either way.
                    Ok(_) => {
                        while listener.next_buffered().is_some() {}
                        deliver_all(&inner, &pool).await;
                    }
                    Err(e) => {
                        inner.link.note_error(e);
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        break;
                    }
                },
                _ = tokio::time::sleep(period) => deliver_all(&inner, &pool).await,
            }
        }
    }
}

async fn wait_ready(inner: &Inner) -> Option<PgPool> {
    for _ in 0..40 {
        if let Some(pool) = inner.link.pool_if_ready() {
            return Some(pool);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    None
}

/// Sends a notification with a fresh word and waits for it to come back.
async fn self_test(pool: &PgPool, listener: &mut PgListener) -> bool {
    let word = format!("selftest:{}", uuid::Uuid::new_v4());
    if sqlx::query("SELECT pg_notify($1, $2)")
        .bind(db::CHANNEL)
        .bind(&word)
        .execute(pool)
        .await
        .is_err()
    {
        return false;
    }
    let wait = async {
        loop {
            match listener.try_recv().await {
                Ok(Some(n)) if n.payload() == word => return true,
                Ok(Some(_)) => continue,
                _ => return false,
            }
        }
    };
    tokio::time::timeout(SELF_TEST_WAIT, wait)
        .await
        .unwrap_or(false)
}

async fn deliver_all(inner: &Arc<Inner>, pool: &PgPool) {
    if let Err(e) = deliver_events(inner, pool).await {
        inner.link.note_error(e);
        return;
    }
    if let Err(e) = deliver_history(inner, pool).await {
        inner.link.note_error(e);
        return;
    }
    if let Err(e) = apply_answers(inner, pool).await {
        inner.link.note_error(e);
        return;
    }
    inner.link.note_ok();
}

async fn deliver_events(inner: &Arc<Inner>, pool: &PgPool) -> Result<(), sqlx::Error> {
    let Some((mut after, sink)) = lock(&inner.sinks).events.clone() else {
        return Ok(());
    };
    loop {
        let batch = db::events_after(pool, &inner.repo, after, EVENT_BATCH, None).await?;
        let Some(last) = batch.last().map(|e| e.id) else {
            return Ok(());
        };
        after = last;
        if let Some(s) = lock(&inner.sinks).events.as_mut() {
            s.0 = after;
        }
        let full = batch.len() as i64 == EVENT_BATCH;
        let sink = Arc::clone(&sink);
        let _ = tokio::task::spawn_blocking(move || sink(batch)).await;
        if !full {
            return Ok(());
        }
    }
}

/// Hands the history records other machines wrote since the cursor to the
/// history sink; returns how many.
pub(crate) async fn deliver_history(
    inner: &Arc<Inner>,
    pool: &PgPool,
) -> Result<usize, sqlx::Error> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let Some(sink) = lock(&inner.sinks).history.clone() else {
        return Ok(0);
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let mut cursor = read_cursor(&inner.history_cursor);
    let mut delivered = 0;
    loop {
        let batch =
            db::history_after(pool, &inner.repo, &inner.machine.id, cursor, HISTORY_BATCH).await?;
        let Some(last) = batch.last().map(|h| h.seq) else {
            *lock(&inner.history_fetched) = Some(std::time::Instant::now());
            return Ok(delivered);
        };
        let full = batch.len() as i64 == HISTORY_BATCH;
        let batch = bounded(batch);
        delivered += batch.len();
        let sink = Arc::clone(&sink);
        let _ = tokio::task::spawn_blocking(move || sink(batch)).await;
        cursor = last;
        write_cursor(&inner.history_cursor, cursor);
        if !full {
            *lock(&inner.history_fetched) = Some(std::time::Instant::now());
            return Ok(delivered);
        }
    }
}

/// The records of `batch` small enough to take.
pub(crate) fn bounded(batch: Vec<TeamHistory>) -> Vec<TeamHistory> {
    batch
        .into_iter()
        .filter(|h| serde_json::to_vec(&h.record).map_or(0, |b| b.len()) <= MAX_HISTORY_RECORD)
        .collect()
}

pub(crate) fn read_cursor(path: &std::path::Path) -> i64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

pub(crate) fn write_cursor(path: &std::path::Path, cursor: i64) {
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if baton_fs::create_new_whole(&tmp, cursor.to_string().as_bytes()).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// Applies the answers waiting for this machine's runs through the
/// handler (one process takes each); returns how many were settled.
pub(crate) async fn apply_answers(inner: &Arc<Inner>, pool: &PgPool) -> Result<usize, sqlx::Error> {
    let Some(handler) = lock(&inner.sinks).answers.clone() else {
        return Ok(0);
    };
    let mut settled = 0;
    for answer in db::pending_answers(pool, &inner.machine.id).await? {
        let Some(mut conn) = db::take_answer(pool, answer.id).await? else {
            continue;
        };
        let outcome = apply_one(&handler, answer.clone()).await;
        let (applied, result) = match &outcome {
            Ok(said) => (true, said.as_str()),
            Err(why) => (false, why.as_str()),
        };
        let done = db::settle_answer(pool, answer.id, applied, result).await;
        let _ = db::release_answer(&mut conn, answer.id).await;
        if done? {
            settled += 1;
        }
    }
    Ok(settled)
}

async fn apply_one(handler: &AnswerHandler, answer: RemoteAnswer) -> Result<String, String> {
    let handler = Arc::clone(handler);
    tokio::task::spawn_blocking(move || handler(&answer))
        .await
        .unwrap_or_else(|e| Err(format!("the answer could not be applied: {e}")))
}
