//! The link to the database: connecting (and creating or checking the
//! schema) in the background, the state callers wait on, and the sender
//! that empties the outbox.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

use crate::{Inner, RETRY_EVERY, TeamError, db, lock, schema};

/// Writes sent per transaction at most.
const BATCH: usize = 64;

/// How long a failure makes callers fail at once instead of waiting for
/// the database again: while it is away, calls answer at once from the
/// files. The sender keeps trying (on every queued write, and every
/// [`RETRY_EVERY`]); its first success ends this at once.
const FAIL_FAST_FOR: Duration = Duration::from_secs(10);

/// How long taking a connection may wait (a server that does not answer).
const ACQUIRE_WAIT: Duration = Duration::from_secs(3);

pub(crate) struct Link {
    options: PgConnectOptions,
    url: String,
    outbox: String,
    state: Mutex<LinkState>,
    changed: Condvar,
}

#[derive(Default)]
struct LinkState {
    pool: Option<PgPool>,
    /// The schema is in place and this machine registered.
    ready: bool,
    /// At least one connection attempt has finished.
    attempted: bool,
    schema: Option<i64>,
    problem: Option<(TeamError, Instant)>,
    delivery: &'static str,
}

/// What [`Link::snapshot`] tells.
pub(crate) struct Snapshot {
    pub ready: bool,
    pub schema: Option<i64>,
    pub problem: Option<TeamError>,
    pub delivery: &'static str,
}

impl Link {
    pub(crate) fn new(options: PgConnectOptions, url: String, outbox: String) -> Link {
        Link {
            options,
            url,
            outbox,
            state: Mutex::new(LinkState {
                delivery: "off",
                ..LinkState::default()
            }),
            changed: Condvar::new(),
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let st = lock(&self.state);
        Snapshot {
            ready: st.ready,
            schema: st.schema,
            problem: st.problem.as_ref().map(|(p, _)| p.clone()),
            delivery: st.delivery,
        }
    }

    pub(crate) fn set_delivery(&self, how: &'static str) {
        lock(&self.state).delivery = how;
    }

    /// The pool once the schema is in place; else waits up to `wait` for
    /// the first connection attempt, and returns its problem.
    pub(crate) fn ready_pool(&self, wait: Duration) -> Result<PgPool, TeamError> {
        let deadline = Instant::now() + wait;
        let mut st = lock(&self.state);
        loop {
            if st.ready
                && let Some(pool) = &st.pool
            {
                if let Some((problem, at)) = &st.problem
                    && at.elapsed() < FAIL_FAST_FOR
                {
                    return Err(problem.clone());
                }
                return Ok(pool.clone());
            }
            if st.attempted
                && let Some((problem, _)) = &st.problem
            {
                return Err(problem.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timeout(wait.as_millis() as u64));
            }
            st = match self.changed.wait_timeout(st, deadline - now) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// The pool when the schema is in place (for the background tasks).
    pub(crate) fn pool_if_ready(&self) -> Option<PgPool> {
        let st = lock(&self.state);
        if st.ready { st.pool.clone() } else { None }
    }

    /// Whether the database is known to be away now (writes wait).
    pub(crate) fn is_away(&self) -> bool {
        let st = lock(&self.state);
        st.problem.is_some() || (st.attempted && !st.ready)
    }

    pub(crate) fn note_ok(&self) {
        let mut st = lock(&self.state);
        if st.problem.take().is_some() {
            tracing::info!("team: the database at {} answers again", self.url);
        }
    }

    pub(crate) fn note_error(&self, e: sqlx::Error) -> TeamError {
        let problem = db::classify(e, &self.url, &self.outbox);
        self.note_problem(problem.clone());
        problem
    }

    fn note_problem(&self, problem: TeamError) {
        let mut st = lock(&self.state);
        let fresh = st
            .problem
            .as_ref()
            .is_none_or(|(p, _)| p.to_string() != problem.to_string());
        if fresh {
            tracing::warn!("team: {problem}");
        }
        st.problem = Some((problem, Instant::now()));
        st.attempted = true;
        drop(st);
        self.changed.notify_all();
    }

    pub(crate) fn timeout(&self, ms: u64) -> TeamError {
        TeamError::Timeout {
            url: self.url.clone(),
            ms,
        }
    }
}

/// Connects, brings the schema up to date (or refuses a newer one) and
/// registers this machine; retries until it succeeds.
pub(crate) async fn connect_loop(inner: Arc<Inner>) {
    let link = &inner.link;
    let pool = PgPoolOptions::new()
        .max_connections(6)
        .min_connections(0)
        .acquire_timeout(ACQUIRE_WAIT)
        .idle_timeout(Some(Duration::from_secs(60)))
        .connect_lazy_with(link.options.clone());
    lock(&link.state).pool = Some(pool.clone());
    let mut delay = Duration::from_millis(250);
    loop {
        let outcome = async {
            // One connection of its own first: its error says exactly what
            // is wrong (refused, a password, no such database), where the
            // pool would only say it found no connection in time.
            match tokio::time::timeout(ACQUIRE_WAIT, link.options.connect()).await {
                Ok(Ok(conn)) => {
                    let _ = conn.close().await;
                }
                Ok(Err(e)) => return Err(db::classify(e, &link.url, &link.outbox)),
                Err(_) => {
                    return Err(TeamError::Unreachable {
                        url: link.url.clone(),
                        reason: format!("no answer within {} s", ACQUIRE_WAIT.as_secs()),
                    });
                }
            }
            let version = schema::migrate(&pool, &link.url, inner.version, &link.outbox).await?;
            db::register_machine(&pool, &inner.machine, &inner.repo, inner.version)
                .await
                .map_err(|e| db::classify(e, &link.url, &link.outbox))?;
            Ok::<i64, TeamError>(version)
        }
        .await;
        match outcome {
            Ok(version) => {
                {
                    let mut st = lock(&link.state);
                    st.ready = true;
                    st.attempted = true;
                    st.schema = Some(version);
                    st.problem = None;
                }
                link.changed.notify_all();
                inner.wake_pusher.notify_one();
                return;
            }
            Err(problem) => {
                if let TeamError::SchemaTooNew { found, .. } = &problem {
                    lock(&link.state).schema = Some(*found);
                }
                link.note_problem(problem);
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(RETRY_EVERY);
            }
        }
    }
}

/// Sends the outbox: woken by every queued write, and every
/// [`RETRY_EVERY`] for what failed or what other processes left.
pub(crate) async fn push_loop(inner: Arc<Inner>) {
    loop {
        tokio::select! {
            _ = inner.wake_pusher.notified() => {}
            _ = tokio::time::sleep(RETRY_EVERY) => {}
        }
        let Some(pool) = inner.link.pool_if_ready() else {
            continue;
        };
        push_all(&inner, &pool).await;
    }
}

/// Sends every queued write now, batch by batch; stops at the first
/// failure to reach the database (the files stay for the next try).
pub(crate) async fn push_all(inner: &Inner, pool: &PgPool) {
    loop {
        let files = inner.outbox.list(BATCH);
        if files.is_empty() {
            return;
        }
        let mut batch = Vec::new();
        let mut paths = Vec::new();
        for f in files {
            match inner.outbox.read(&f) {
                Ok(Some(q)) if q.v == crate::OUTBOX_VERSION => {
                    batch.push((q.machine, q.repo, q.write));
                    paths.push(f);
                }
                Ok(Some(q)) => inner.outbox.reject(
                    &f,
                    &format!(
                        "outbox format {} is not this baton's ({})",
                        q.v,
                        crate::OUTBOX_VERSION
                    ),
                ),
                Ok(None) => {}
                Err(why) => inner.outbox.reject(&f, &format!("does not parse: {why}")),
            }
        }
        if batch.is_empty() {
            continue;
        }
        match db::apply_writes(pool, &batch).await {
            Ok(()) => {
                inner.link.note_ok();
                sent(inner, &paths);
            }
            Err(e) if db::is_connection_error(&e) => {
                inner.link.note_error(e);
                return;
            }
            Err(_) => {
                // One write the database refuses must not hold up the
                // others: send them one by one and set the bad one aside.
                for (write, path) in batch.into_iter().zip(paths) {
                    match db::apply_writes(pool, std::slice::from_ref(&write)).await {
                        Ok(()) => sent(inner, std::slice::from_ref(&path)),
                        Err(e) if db::is_connection_error(&e) => {
                            inner.link.note_error(e);
                            return;
                        }
                        Err(e) => inner.outbox.reject(&path, &e.to_string()),
                    }
                }
            }
        }
    }
}

fn sent(inner: &Inner, paths: &[std::path::PathBuf]) {
    for p in paths {
        inner.outbox.done(p);
    }
    let mut mine = lock(&inner.mine);
    for p in paths {
        mine.remove(p);
    }
    drop(mine);
    inner.mine_changed.notify_all();
}
