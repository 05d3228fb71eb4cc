//! # baton-team
//!
//! Team mode: every machine of a team on one PostgreSQL — runs, events,
//! run history, one run per issue, answers given on another machine.
//! Files stay each machine's working copy; this crate keeps the database
//! in step with them. It is off unless `BATON_DATABASE_URL` (or `[team]
//! database_url`) is set, and then nothing of it starts: no thread, no
//! connection, no file (docs/team.md).
//!
//! It sits beside the other stores: the use cases call it, adapters never
//! do. Its API is blocking and transport-free (like the state store); the
//! database work runs on the handle's own small runtime (one worker
//! thread), started only in team mode.
//!
//! * [`Team`] — the handle: [`Team::record`] a state write (queued on disk
//!   first, then sent), [`Team::claim_issue`], the team's runs, events and
//!   history, answers for other machines' runs, and a listener
//!   ([`Team::listen`]) that hands other machines' events, history and
//!   answers to the use cases.
//! * [`outbox`] — the on-disk queue: nothing is lost while the database is
//!   away, nothing doubled when it returns.
//! * [`identity`] — which working copy this is and which repository.
//! * [`schema`] — embedded, versioned migrations; a newer schema is refused.
//! * [`db`] — the SQL.
//! * [`jsonb`] — a NUL in a run's text, which `jsonb` cannot hold, sent
//!   as U+FFFD.
//! * [`records`] — what goes in and comes out.
//! * [`url`] — the database URL, only ever shown without its password.

#![warn(missing_docs)]

pub mod db;
pub mod error;
pub mod identity;
pub mod jsonb;
pub mod outbox;
pub mod records;
pub mod schema;
pub mod url;

mod link;
mod listen;

use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use error::TeamError;
pub use identity::{Found, Machine};
pub use records::{
    AnswerStatus, ClaimOutcome, IssueClaim, MachineRef, RemoteAnswer, RunFilter, RunPage, RunWrite,
    TeamEvent, TeamHistory, TeamRun, TeamStatus,
};

use link::Link;
use outbox::{OUTBOX_VERSION, Outbox, Queued};

/// How long a call that must ask the database (a claim, a list) waits for
/// it before going on without it.
pub const CALL_WAIT: Duration = Duration::from_secs(5);

/// How long a process waits at its end for its own queued writes to be
/// sent (when the database is reachable); what is left is sent by the
/// next baton process of the working copy.
pub const FLUSH_WAIT: Duration = Duration::from_secs(3);

/// How long other machines' history, once fetched, counts as current for
/// a prompt: a listening process fetches every new record as it is
/// written (and every 5 s anyway), so its prompts never wait for the
/// database; others fetch at most this often.
pub const HISTORY_FRESH: Duration = Duration::from_secs(6);

/// How often a running process looks for queued writes it did not make
/// (a process that ended left them) and retries after a failure, at most.
pub const RETRY_EVERY: Duration = Duration::from_secs(4);

/// Where team mode keeps its files and which database it uses. Its
/// `Debug` shows the URL without its password.
#[derive(Clone)]
pub struct TeamSettings {
    /// The database URL (a secret: only shown redacted).
    pub database_url: String,
    /// The working copy's root.
    pub repo_root: PathBuf,
    /// Team mode's folder (`<repo>/.baton/team`): identity, outbox.
    pub team_dir: PathBuf,
    /// This baton's version (recorded per machine).
    pub version: &'static str,
}

impl std::fmt::Debug for TeamSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamSettings")
            .field("database_url", &url::redact(&self.database_url))
            .field("repo_root", &self.repo_root)
            .field("team_dir", &self.team_dir)
            .finish()
    }
}

/// A handler that applies an answer another machine sent for a run of
/// this one: `Ok(what happened)` or `Err(why it was refused)`.
pub type AnswerHandler = Arc<dyn Fn(&RemoteAnswer) -> Result<String, String> + Send + Sync>;

/// A sink for other machines' events or history records.
pub type Sink<T> = Arc<dyn Fn(Vec<T>) + Send + Sync>;

/// The team-mode handle of one process. Cheap to share (`Arc` inside).
pub struct Team {
    inner: Arc<Inner>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("database", &self.inner.url_shown)
            .field("machine", &self.inner.machine.label())
            .field("repository", &self.inner.repo)
            .finish()
    }
}

pub(crate) struct Inner {
    pub(crate) url_shown: String,
    pub(crate) machine: Machine,
    pub(crate) found: Found,
    pub(crate) repo: String,
    pub(crate) version: &'static str,
    pub(crate) outbox: Outbox,
    pub(crate) link: Link,
    /// Files this process queued and has not seen sent.
    pub(crate) mine: Mutex<HashSet<PathBuf>>,
    pub(crate) mine_changed: Condvar,
    pub(crate) wake_pusher: tokio::sync::Notify,
    pub(crate) sinks: Mutex<listen::Sinks>,
    pub(crate) listening: std::sync::atomic::AtomicBool,
    pub(crate) history_cursor: PathBuf,
    /// When other machines' history was last fetched successfully (the
    /// listener's deliveries included).
    pub(crate) history_fetched: Mutex<Option<Instant>>,
}

impl Team {
    /// Opens team mode: checks the URL, reads (or makes) this working
    /// copy's identity, and starts connecting in the background — the
    /// call does not wait for the database. A URL that is not a
    /// PostgreSQL URL is an error here; anything the server says comes
    /// later (see [`Team::status`]).
    pub fn open(settings: TeamSettings) -> Result<Team, TeamError> {
        let options = url::parse(&settings.database_url)?
            .application_name("baton")
            .statement_cache_capacity(64);
        let url_shown = url::redact(&settings.database_url);
        make_team_dir(&settings.team_dir)?;
        let (machine, found) = identity::load_or_create(&settings.team_dir, &settings.repo_root)?;
        match &found {
            Found::Copied { from } => tracing::warn!(
                "team: this working copy is a copy of {from}; it is a machine of its own now ({})",
                machine.label()
            ),
            Found::Moved { from } => {
                tracing::info!("team: this working copy moved here from {from}")
            }
            _ => {}
        }
        let repo = identity::repository_key(&settings.repo_root, &machine);
        let outbox = Outbox::new(settings.team_dir.join("outbox"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            .thread_name("baton-team")
            .enable_all()
            .build()
            .map_err(|e| TeamError::io("start the team runtime for", &settings.team_dir, e))?;
        let inner = Arc::new(Inner {
            link: Link::new(
                options,
                url_shown.clone(),
                outbox.dir().display().to_string(),
            ),
            url_shown,
            machine,
            found,
            repo,
            version: settings.version,
            outbox,
            mine: Mutex::new(HashSet::new()),
            mine_changed: Condvar::new(),
            wake_pusher: tokio::sync::Notify::new(),
            sinks: Mutex::new(listen::Sinks::default()),
            listening: std::sync::atomic::AtomicBool::new(false),
            history_cursor: settings.team_dir.join("history-cursor"),
            history_fetched: Mutex::new(None),
        });
        runtime.spawn(link::connect_loop(Arc::clone(&inner)));
        runtime.spawn(link::push_loop(Arc::clone(&inner)));
        Ok(Team {
            inner,
            runtime: Some(runtime),
        })
    }

    /// This working copy's identity.
    pub fn machine(&self) -> &Machine {
        &self.inner.machine
    }

    /// This working copy as the team names it.
    pub fn machine_ref(&self) -> MachineRef {
        MachineRef {
            id: self.inner.machine.id.clone(),
            name: self.inner.machine.label(),
        }
    }

    /// What opening found about the identity (new, copied, moved).
    pub fn identity_found(&self) -> &Found {
        &self.inner.found
    }

    /// The repository's key.
    pub fn repository(&self) -> &str {
        &self.inner.repo
    }

    /// The run's key in the team for a workspace folder of this machine.
    pub fn run_key(&self, workspace: &str) -> String {
        db::run_key(&self.inner.machine.id, workspace)
    }

    /// Queues a state write for the database (a file in the outbox first,
    /// so it survives the database's absence and this process's end) and
    /// wakes the sender. Returns at once; never waits for the database.
    pub fn record(&self, write: RunWrite) -> Result<(), TeamError> {
        let item = Queued {
            v: OUTBOX_VERSION,
            machine: self.inner.machine.id.clone(),
            repo: self.inner.repo.clone(),
            write,
        };
        let path = self.inner.outbox.push(&item)?;
        lock(&self.inner.mine).insert(path);
        self.inner.wake_pusher.notify_one();
        Ok(())
    }

    /// Waits up to `wait` until the writes this process queued — and those
    /// earlier processes left in the outbox — are in the database; returns
    /// how many of them are still queued. Returns at once when the
    /// database is known to be away.
    pub fn flush(&self, wait: Duration) -> usize {
        let deadline = Instant::now() + wait;
        self.inner.wake_pusher.notify_one();
        let mut mine = lock(&self.inner.mine);
        mine.extend(self.inner.outbox.list(usize::MAX));
        loop {
            mine.retain(|p| p.exists());
            if mine.is_empty() || self.inner.link.is_away() {
                return mine.len();
            }
            let now = Instant::now();
            if now >= deadline {
                return mine.len();
            }
            let slice = (deadline - now).min(Duration::from_millis(50));
            mine = match self.inner.mine_changed.wait_timeout(mine, slice) {
                Ok((m, _)) => m,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// The state of the link to the database, for `baton team status`
    /// and warnings.
    pub fn status(&self) -> TeamStatus {
        let snapshot = self.inner.link.snapshot();
        TeamStatus {
            database: self.inner.url_shown.clone(),
            machine: self.machine_ref(),
            repository: self.inner.repo.clone(),
            connected: snapshot.ready && snapshot.problem.is_none(),
            schema_version: snapshot.schema,
            known_schema_version: schema::known_version(),
            queued: self.inner.outbox.len(),
            delivery: snapshot.delivery.to_string(),
            problem: snapshot.problem.map(|p| p.to_string()),
        }
    }

    /// Waits up to `wait` for the first connection attempt to finish;
    /// returns its problem, if any.
    pub fn wait_connected(&self, wait: Duration) -> Result<(), TeamError> {
        self.inner.link.ready_pool(wait).map(|_| ())
    }

    /// Whether the database is connected now, its schema in place, and no
    /// problem seen since (a slow answer then is the database being slow,
    /// not away).
    pub fn is_connected(&self) -> bool {
        self.inner.link.pool_if_ready().is_some() && !self.inner.link.is_away()
    }

    /// Claims an issue for the run about to start (see [`db::claim_issue`]).
    pub fn claim_issue(&self, claim: &IssueClaim) -> Result<ClaimOutcome, TeamError> {
        let (machine, repo, claim) = (
            self.inner.machine.id.clone(),
            self.inner.repo.clone(),
            claim.clone(),
        );
        self.call(CALL_WAIT, move |pool| async move {
            db::claim_issue(&pool, &machine, &repo, &claim).await
        })
    }

    /// Lets go of a claim whose run did not start after all.
    pub fn release_claim(&self, claim: &IssueClaim) -> Result<(), TeamError> {
        let (machine, repo, claim) = (
            self.inner.machine.id.clone(),
            self.inner.repo.clone(),
            claim.clone(),
        );
        self.call(CALL_WAIT, move |pool| async move {
            db::release_claim(&pool, &machine, &repo, &claim).await
        })
    }

    /// The repository's runs on every machine, most recently written
    /// first: `limit` from `offset`, and how many there are.
    pub fn runs(&self, limit: usize, offset: usize) -> Result<(Vec<TeamRun>, usize), TeamError> {
        let repo = self.inner.repo.clone();
        self.call(CALL_WAIT, move |pool| async move {
            let runs = db::list_runs(&pool, &repo, clamp(limit), clamp(offset)).await?;
            let total = db::count_runs(&pool, &repo).await?;
            Ok((runs, usize::try_from(total).unwrap_or(0)))
        })
    }

    /// A page of the other machines' runs (see [`db::run_page`]).
    pub fn other_runs_page(
        &self,
        filter: RunFilter,
        search: Option<&str>,
        limit: usize,
    ) -> Result<RunPage, TeamError> {
        let (repo, me, search) = (
            self.inner.repo.clone(),
            self.inner.machine.id.clone(),
            search.map(str::to_string),
        );
        self.call(CALL_WAIT, move |pool| async move {
            db::run_page(&pool, &repo, &me, filter, search.as_deref(), clamp(limit)).await
        })
    }

    /// The runs of every machine whose workspace folder is `workspace`,
    /// with their states (newest first).
    pub fn find(&self, workspace: &str) -> Result<Vec<(TeamRun, serde_json::Value)>, TeamError> {
        let (repo, workspace) = (self.inner.repo.clone(), workspace.to_string());
        self.call(CALL_WAIT, move |pool| async move {
            db::find_runs(&pool, &repo, &workspace).await
        })
    }

    /// The last `limit` events of the repository (of one run when
    /// `run_key` is given), oldest first.
    pub fn last_events(
        &self,
        limit: usize,
        run_key: Option<&str>,
    ) -> Result<Vec<TeamEvent>, TeamError> {
        let (repo, run_key) = (self.inner.repo.clone(), run_key.map(str::to_string));
        self.call(CALL_WAIT, move |pool| async move {
            db::last_events(&pool, &repo, clamp(limit), run_key.as_deref()).await
        })
    }

    /// The id of the repository's last event written before `before` (0
    /// when none): the start of "events from now on" for a process that
    /// started at `before`, exact however late the query runs.
    pub fn last_event_id_before(&self, before: DateTime<Utc>) -> Result<i64, TeamError> {
        let repo = self.inner.repo.clone();
        self.call(CALL_WAIT, move |pool| async move {
            db::last_event_id_before(&pool, &repo, before).await
        })
    }

    /// Events after `after` (oldest first, at most `limit`).
    pub fn events_after(
        &self,
        after: i64,
        limit: usize,
        run_key: Option<&str>,
    ) -> Result<Vec<TeamEvent>, TeamError> {
        let (repo, run_key) = (self.inner.repo.clone(), run_key.map(str::to_string));
        self.call(CALL_WAIT, move |pool| async move {
            db::events_after(&pool, &repo, after, clamp(limit), run_key.as_deref()).await
        })
    }

    /// Sends a person's answer to the machine where `run` runs. Returns
    /// the answer's id (see [`Team::answer_status`]).
    pub fn send_answer(
        &self,
        run: &TeamRun,
        question: &str,
        answer: &str,
        who: &str,
        channel: &str,
    ) -> Result<i64, TeamError> {
        let (run, question, answer, who, channel, me) = (
            run.clone(),
            question.to_string(),
            answer.to_string(),
            who.to_string(),
            channel.to_string(),
            self.inner.machine.clone(),
        );
        self.call(CALL_WAIT, move |pool| async move {
            db::send_answer(&pool, &run, &question, &answer, &who, &channel, &me).await
        })
    }

    /// What became of answer `id`.
    pub fn answer_status(&self, id: i64) -> Result<AnswerStatus, TeamError> {
        let got = self.call(CALL_WAIT, move |pool| async move {
            db::answer_status(&pool, id).await
        })?;
        Ok(match got {
            Some((s, r)) if s == "applied" => AnswerStatus::Applied(r.unwrap_or_default()),
            Some((s, r)) if s == "refused" => AnswerStatus::Refused(r.unwrap_or_default()),
            _ => AnswerStatus::Pending,
        })
    }

    /// Waits up to `wait` for answer `id` to be applied or refused.
    pub fn wait_answer(&self, id: i64, wait: Duration) -> Result<AnswerStatus, TeamError> {
        let deadline = Instant::now() + wait;
        loop {
            let status = self.answer_status(id)?;
            if status != AnswerStatus::Pending || Instant::now() >= deadline {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Applies the answers other machines sent for this machine's runs,
    /// now (the listener does this by itself; a call that is about to use
    /// a waiting run does it first). Returns how many were settled.
    pub fn apply_pending_answers(&self, wait: Duration) -> Result<usize, TeamError> {
        let inner = Arc::clone(&self.inner);
        self.call(wait, move |pool| async move {
            listen::apply_answers(&inner, &pool).await
        })
    }

    /// Fetches the run-history records of other machines that arrived
    /// since the last call (or the listener's last delivery) and hands
    /// them to the history sink now. Returns how many.
    pub fn sync_history(&self, wait: Duration) -> Result<usize, TeamError> {
        let inner = Arc::clone(&self.inner);
        self.call(wait, move |pool| async move {
            listen::deliver_history(&inner, &pool).await
        })
    }

    /// Like [`Team::sync_history`], handing the records to `sink` (for a
    /// process that has not set one with [`Team::on_history`]).
    pub fn sync_history_with(
        &self,
        wait: Duration,
        sink: &mut dyn FnMut(Vec<TeamHistory>),
    ) -> Result<usize, TeamError> {
        // Fresh enough: the listener (woken by every new record) or a sync
        // a moment ago fetched it; a call's prompt does not wait for the
        // database again.
        if lock(&self.inner.history_fetched).is_some_and(|at| at.elapsed() < HISTORY_FRESH) {
            return Ok(0);
        }
        let mut delivered = 0;
        loop {
            let cursor = listen::read_cursor(&self.inner.history_cursor);
            let (repo, me) = (self.inner.repo.clone(), self.inner.machine.id.clone());
            let batch = self.call(wait, move |pool| async move {
                db::history_after(&pool, &repo, &me, cursor, listen::HISTORY_BATCH).await
            })?;
            let Some(last) = batch.last().map(|h| h.seq) else {
                *lock(&self.inner.history_fetched) = Some(Instant::now());
                return Ok(delivered);
            };
            let full = batch.len() as i64 == listen::HISTORY_BATCH;
            let batch = listen::bounded(batch);
            delivered += batch.len();
            sink(batch);
            listen::write_cursor(&self.inner.history_cursor, last);
            if !full {
                *lock(&self.inner.history_fetched) = Some(Instant::now());
                return Ok(delivered);
            }
        }
    }

    /// Forgets which history records were delivered (the local history
    /// was rebuilt without them): the next sync delivers all again.
    pub fn reset_history_cursor(&self) {
        let _ = std::fs::remove_file(&self.inner.history_cursor);
    }

    /// Where other machines' events go (from `after` on; `0`: all of them).
    pub fn on_events(&self, after: i64, sink: Sink<TeamEvent>) {
        let mut s = lock(&self.inner.sinks);
        s.events = Some((after, sink));
    }

    /// Where other machines' run-history records go.
    pub fn on_history(&self, sink: Sink<TeamHistory>) {
        lock(&self.inner.sinks).history = Some(sink);
    }

    /// Who applies answers other machines send for this machine's runs.
    pub fn on_answers(&self, handler: AnswerHandler) {
        lock(&self.inner.sinks).answers = Some(handler);
    }

    /// Starts the listener (once): `LISTEN` with a self-test, polling when
    /// notifications do not arrive, catching up from the tables after
    /// every reconnect; it feeds the sinks set above.
    pub fn listen(&self) {
        if self
            .inner
            .listening
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        if let Some(rt) = &self.runtime {
            rt.spawn(listen::listen_loop(Arc::clone(&self.inner)));
        }
    }

    fn call<T, F, Fut>(&self, wait: Duration, f: F) -> Result<T, TeamError>
    where
        T: Send + 'static,
        F: FnOnce(sqlx::PgPool) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, sqlx::Error>> + Send + 'static,
    {
        let started = Instant::now();
        let pool = self.inner.link.ready_pool(wait)?;
        let Some(rt) = &self.runtime else {
            return Err(self.inner.link.timeout(0));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(f(pool).await);
        });
        let left = wait
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(500));
        match rx.recv_timeout(left) {
            Ok(Ok(v)) => {
                self.inner.link.note_ok();
                Ok(v)
            }
            Ok(Err(e)) => Err(self.inner.link.note_error(e)),
            Err(_) => Err(self.inner.link.timeout(left.as_millis() as u64)),
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        let left = self.flush(FLUSH_WAIT);
        if left > 0 {
            tracing::info!(
                "team: {left} write(s) wait in {} for the next baton process",
                self.inner.outbox.dir().display()
            );
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn make_team_dir(dir: &Path) -> Result<(), TeamError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| TeamError::io("create", parent, e))?;
    }
    baton_fs::create_ignored_dir(dir).map_err(|e| TeamError::io("create", dir, e))?;
    Ok(())
}

fn clamp(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
