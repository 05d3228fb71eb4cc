//! The chaos campaign: pipelines driven to their end and writers racing on
//! one workspace, while a killer SIGKILLs `baton serve` processes at random
//! moments. Each client reconnects to a fresh server and sends its last call
//! again, as a real client would after a lost reply.
//!
//! Checked throughout and at the end:
//! * every `state.json` a reader sees parses (no partial file, ever);
//! * a run's audit trail never shrinks (archived + kept history);
//! * every pipeline ends `completed` with exactly one commit of its own and a
//!   clean working tree, however many kills hit it;
//! * no lost update: the writers' transitions in the history equal the calls
//!   that succeeded, plus at most the calls whose reply a kill took.
//!
//! `chaos_short` runs in the test suite (a few seconds). The long campaign
//! whose figures are in docs/performance.md:
//!
//! ```text
//! BATON_CHAOS_SECS=90 cargo test --release -p baton --test chaos -- --ignored --nocapture
//! ```

use crate::common;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::pipeline::{Script, git_repo, perform};
use crate::common::{Client, Repo, try_spawn};
use serde_json::{Value, json};

/// The size of one campaign.
struct Plan {
    pipelines: usize,
    writers: usize,
    duration: Duration,
    /// The killer's pause between kills (uniform in this range, ms).
    kill_pause_ms: (u64, u64),
}

/// What a campaign did and found.
#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    kills: AtomicU64,
    resent: AtomicU64,
    busy: AtomicU64,
    stale: AtomicU64,
    runs_completed: AtomicU64,
    writer_ok: AtomicU64,
    writer_lost_reply: AtomicU64,
    state_reads: AtomicU64,
    violations: Mutex<Vec<String>>,
}

impl Tally {
    fn violation(&self, what: String) {
        self.violations.lock().unwrap().push(what);
    }
}

/// Server processes that may be killed (registered while connected).
#[derive(Default)]
struct Victims {
    pids: Mutex<Vec<u32>>,
}

impl Victims {
    fn add(&self, client: &Client) {
        if let Some(pid) = client.pid {
            self.pids.lock().unwrap().push(pid);
        }
    }
    fn remove(&self, client: &Client) {
        if let Some(pid) = client.pid {
            self.pids.lock().unwrap().retain(|p| *p != pid);
        }
    }
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// A small deterministic generator (xorshift), seeded per campaign.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// A connection that comes back after a kill.
struct Conn {
    repo: std::path::PathBuf,
    client: Option<Client>,
    victims: Arc<Victims>,
}

impl Conn {
    fn new(repo: &Path, victims: &Arc<Victims>) -> Conn {
        Conn {
            repo: repo.to_path_buf(),
            client: None,
            victims: Arc::clone(victims),
        }
    }

    /// The call's reply; after a kill, a fresh server and the same call
    /// again (counted as resent), until it answers.
    async fn call(&mut self, tally: &Tally, name: &str, args: &Value) -> Result<Value, Value> {
        loop {
            if self.client.is_none() {
                let c = try_spawn(&self.repo, &[], &[("BATON_LOCK_TIMEOUT_MS", "2000")]).await;
                if let Some(c) = &c {
                    self.victims.add(c);
                }
                self.client = c;
                continue;
            }
            let client = self.client.as_ref().unwrap();
            tally.calls.fetch_add(1, Ordering::Relaxed);
            match client.try_call(name, args.clone()).await {
                Some(Err(e)) if e["code"] == "busy" => {
                    tally.busy.fetch_add(1, Ordering::Relaxed);
                }
                Some(reply) => return reply,
                None => {
                    tally.resent.fetch_add(1, Ordering::Relaxed);
                    self.drop_client().await;
                }
            }
        }
    }

    /// One attempt: `None` when the server died before replying.
    async fn call_once(
        &mut self,
        tally: &Tally,
        name: &str,
        args: &Value,
    ) -> Option<Result<Value, Value>> {
        while self.client.is_none() {
            let c = try_spawn(&self.repo, &[], &[("BATON_LOCK_TIMEOUT_MS", "2000")]).await;
            if let Some(c) = &c {
                self.victims.add(c);
            }
            self.client = c;
        }
        tally.calls.fetch_add(1, Ordering::Relaxed);
        let reply = self
            .client
            .as_ref()
            .unwrap()
            .try_call(name, args.clone())
            .await;
        if reply.is_none() {
            self.drop_client().await;
        }
        reply
    }

    async fn drop_client(&mut self) {
        if let Some(c) = self.client.take() {
            self.victims.remove(&c);
            c.close().await;
        }
    }
}

/// The number of transitions a run has recorded, archived ones included.
fn trail_len(state: &Value) -> u64 {
    state["historyArchived"]["history"].as_u64().unwrap_or(0)
        + state["history"].as_array().map_or(0, |h| h.len() as u64)
}

/// A run's state as baton reads it: the live file while the run's final
/// form is sealed into `state.json`, else `state.json`. A live file that
/// goes between looking and reading (the run completed) is read from
/// `state.json`, which then holds it; a file that is there and does not
/// parse is `None`.
fn read_state(repo: &Path, ws: &str) -> Option<Value> {
    let dir = repo.join(ws);
    let text = match std::fs::read_to_string(dir.join(".state.live.json")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::read_to_string(dir.join("state.json")).ok()?
        }
        Err(_) => return None,
    };
    serde_json::from_str(&text).ok()
}

fn git_out(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Drives pipelines to their end, one after another, until the deadline —
/// at least one, and on past the deadline (up to [`OVERTIME`]) while the
/// killer has killed nothing yet, so a slow machine still gets a campaign
/// that checks something.
async fn pipeline_driver(id: usize, deadline: Instant, victims: Arc<Victims>, tally: Arc<Tally>) {
    let mut round = 0;
    while round == 0
        || Instant::now() < deadline
        || (tally.kills.load(Ordering::Relaxed) == 0 && Instant::now() < deadline + OVERTIME)
    {
        round += 1;
        let repo = git_repo();
        std::fs::write(repo.path().join("README.md"), "x\n").unwrap();
        git_out(repo.path(), &["add", "."]);
        git_out(repo.path(), &["commit", "-qm", "initial"]);
        let mut conn = Conn::new(repo.path(), &victims);
        let ws = match create(&mut conn, &tally, &format!("chaos run {id}-{round}")).await {
            Some(ws) => ws,
            None => continue,
        };
        let mut script = Script::default();
        let mut answers = VecDeque::new();
        let mut args = json!({"workspace": ws});
        let mut trail = 0;
        let mut ended = false;
        for _ in 0..200 {
            let a = match conn.call(&tally, "pipeline_next_action", &args).await {
                Ok(a) => a,
                Err(e) if e["code"] == "stale_action" => {
                    // Not applied: ask for the current action.
                    tally.stale.fetch_add(1, Ordering::Relaxed);
                    args = json!({"workspace": ws});
                    continue;
                }
                Err(e) => {
                    tally.violation(format!("pipeline {id}-{round}: {e}"));
                    break;
                }
            };
            match read_state(repo.path(), &ws) {
                Some(state) => {
                    let now = trail_len(&state);
                    if now < trail {
                        tally.violation(format!(
                            "pipeline {id}-{round}: history shrank {trail} → {now}"
                        ));
                    }
                    trail = now;
                }
                None => tally.violation(format!("pipeline {id}-{round}: state.json did not parse")),
            }
            if a["type"] == "done" {
                ended = true;
                break;
            }
            let action_id = a["action_id"].clone();
            let mut next = perform(repo.path(), &ws, &a, &mut script, &mut answers);
            if next.get("previous_action_complete").is_some() {
                next["previous_action_id"] = action_id;
            }
            args = next;
        }
        conn.drop_client().await;
        let state = read_state(repo.path(), &ws).unwrap_or(Value::Null);
        let commits = git_out(repo.path(), &["rev-list", "--count", "HEAD"]);
        let dirty = git_out(repo.path(), &["status", "--porcelain"]);
        if !ended || state["currentPhaseStatus"] != "completed" {
            tally.violation(format!(
                "pipeline {id}-{round} did not complete: {}",
                state["currentPhaseStatus"]
            ));
        } else if commits != "2" {
            tally.violation(format!(
                "pipeline {id}-{round}: {commits} commits, expected the initial one and the run's"
            ));
        } else if !dirty.is_empty() {
            tally.violation(format!(
                "pipeline {id}-{round}: working tree not clean: {dirty}"
            ));
        } else {
            tally.runs_completed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The three init calls, resent after kills. The same confirmation sent again
/// completes whatever a kill interrupted.
async fn create(conn: &mut Conn, tally: &Tally, text: &str) -> Option<String> {
    let init = conn
        .call(
            tally,
            "pipeline_init",
            &json!({"arguments": format!("{text} --nopr")}),
        )
        .await
        .ok()?;
    // The question first, as a client asks the person: the server makes
    // the run's folder ahead meanwhile (crate baton-state's kit), and a
    // kill may land while it does or while the confirmation takes it.
    let ask = json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"]});
    conn.call(tally, "pipeline_init_with_context", &ask)
        .await
        .ok()?;
    let confirm = json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
                         "user_confirmation": {"effort": "S", "use_current_branch": true}});
    match conn
        .call(tally, "pipeline_init_with_context", &confirm)
        .await
    {
        Ok(done) if done["ready"] == true => done["workspace"].as_str().map(str::to_string),
        other => {
            tally.violation(format!("confirmation of {text}: {other:?}"));
            None
        }
    }
}

/// Forced start/fail cycles on one shared workspace; counts what succeeded
/// and what a kill left unknown.
async fn writer(
    repo: std::path::PathBuf,
    ws: String,
    deadline: Instant,
    victims: Arc<Victims>,
    tally: Arc<Tally>,
) {
    let mut conn = Conn::new(&repo, &victims);
    let mut n = 0u64;
    while Instant::now() < deadline {
        n += 1;
        let tool = if n % 2 == 1 {
            "phase_start"
        } else {
            "phase_fail"
        };
        let mut args =
            json!({"workspace": ws, "phase": "phase-1", "force": true, "reason": "chaos"});
        if tool == "phase_fail" {
            args["message"] = json!("chaos writer");
        }
        match conn.call_once(&tally, tool, &args).await {
            Some(Ok(_)) => {
                tally.writer_ok.fetch_add(1, Ordering::Relaxed);
            }
            Some(Err(e)) if matches!(e["code"].as_str(), Some("invalid_state" | "busy")) => {}
            Some(Err(e)) => tally.violation(format!("writer {tool}: {e}")),
            None => {
                tally.writer_lost_reply.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    conn.drop_client().await;
}

/// Reads the shared workspace's state.json as fast as it can: every read
/// must parse.
fn reader(path: std::path::PathBuf, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    while !stop.load(Ordering::Relaxed) {
        if let Ok(text) = std::fs::read_to_string(&path) {
            tally.state_reads.fetch_add(1, Ordering::Relaxed);
            if serde_json::from_str::<Value>(&text).is_err() {
                tally.violation(format!(
                    "a reader saw a state.json that does not parse ({} bytes)",
                    text.len()
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Kills a registered server now and then; only processes that are baton.
fn killer(
    victims: Arc<Victims>,
    stop: Arc<AtomicBool>,
    pause: (u64, u64),
    seed: u64,
    tally: Arc<Tally>,
) {
    let mut rng = Rng(seed | 1);
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(rng.range(pause.0, pause.1)));
        let pids = victims.pids.lock().unwrap();
        if pids.is_empty() {
            continue;
        }
        let pid = pids[(rng.next() % pids.len() as u64) as usize];
        let is_baton = std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
            exe.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("baton"))
        });
        if is_baton && unsafe { kill(pid as i32, 9) } == 0 {
            tally.kills.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// How long pipelines go on past the deadline while nothing was killed.
const OVERTIME: Duration = Duration::from_secs(120);

async fn campaign(plan: Plan) -> Arc<Tally> {
    let tally = Arc::new(Tally::default());
    let victims = Arc::new(Victims::default());
    let stop = Arc::new(AtomicBool::new(false));

    // The shared workspace of the writers.
    let shared = Repo::new();
    let c = common::spawn(shared.path(), &[], &[]).await;
    let ws = c.ok("init", json!({"spec_name": "shared"})).await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    c.close().await;

    let seed = std::env::var("BATON_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c4a05);
    let k = std::thread::spawn({
        let (victims, stop, tally) = (Arc::clone(&victims), Arc::clone(&stop), Arc::clone(&tally));
        move || killer(victims, stop, plan.kill_pause_ms, seed, tally)
    });
    let r = std::thread::spawn({
        let (path, stop, tally) = (
            shared.ws_dir(&ws).join("state.json"),
            Arc::clone(&stop),
            Arc::clone(&tally),
        );
        move || reader(path, stop, tally)
    });
    // The campaign's time starts when its workers do: the setup above (a
    // server started, a workspace made) can take longer than a short
    // campaign on a loaded machine, and must not use it up.
    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut tasks = Vec::new();
    for id in 0..plan.pipelines {
        tasks.push(tokio::spawn(pipeline_driver(
            id,
            deadline,
            Arc::clone(&victims),
            Arc::clone(&tally),
        )));
    }
    for _ in 0..plan.writers {
        tasks.push(tokio::spawn(writer(
            shared.path().to_path_buf(),
            ws.clone(),
            deadline,
            Arc::clone(&victims),
            Arc::clone(&tally),
        )));
    }
    for t in tasks {
        if let Err(e) = t.await {
            tally.violation(format!("a campaign task panicked: {e}"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    k.join().unwrap();
    r.join().unwrap();

    // No lost update: each successful writer call is one transition in the
    // history; a call whose reply a kill took may or may not have applied.
    let state = read_state(shared.path(), &ws).expect("the shared state parses");
    let recorded = trail_len(&state).saturating_sub(1); // the creation entry
    let ok = tally.writer_ok.load(Ordering::Relaxed);
    let unknown = tally.writer_lost_reply.load(Ordering::Relaxed);
    if recorded < ok || recorded > ok + unknown {
        tally.violation(format!(
            "lost or invented updates: {recorded} transitions recorded, {ok} calls succeeded, {unknown} replies lost"
        ));
    }
    let c = common::spawn(shared.path(), &[], &[]).await;
    c.ok("state_resume_info", json!({"workspace": ws})).await;
    c.close().await;

    println!(
        "chaos: {:.0} s, {} pipelines + {} writers: {} tool calls, {} SIGKILLs, {} calls resent after a kill, {} busy, {} stale reports refused, {} runs completed (each one commit, clean tree), {} writer transitions ({} replies lost to kills), {} state reads, {} violations",
        started.elapsed().as_secs_f64(),
        plan.pipelines,
        plan.writers,
        tally.calls.load(Ordering::Relaxed),
        tally.kills.load(Ordering::Relaxed),
        tally.resent.load(Ordering::Relaxed),
        tally.busy.load(Ordering::Relaxed),
        tally.stale.load(Ordering::Relaxed),
        tally.runs_completed.load(Ordering::Relaxed),
        tally.writer_ok.load(Ordering::Relaxed),
        unknown,
        tally.state_reads.load(Ordering::Relaxed),
        tally.violations.lock().unwrap().len(),
    );
    tally
}

fn assert_clean(tally: &Tally) {
    let violations = tally.violations.lock().unwrap();
    assert!(
        violations.is_empty(),
        "{} violations:\n{}",
        violations.len(),
        violations.join("\n")
    );
    assert!(
        tally.kills.load(Ordering::Relaxed) > 0,
        "the killer killed nothing"
    );
    assert!(
        tally.runs_completed.load(Ordering::Relaxed) > 0,
        "no run completed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_short() {
    let tally = campaign(Plan {
        pipelines: 2,
        writers: 2,
        duration: Duration::from_secs(6),
        kill_pause_ms: (50, 400),
    })
    .await;
    assert_clean(&tally);
}

/// A campaign whose time is used up before its workers start (a loaded
/// machine: the setup's server start took longer than the campaign) still
/// drives each pipeline to its end under the killer and checks it; it used
/// to end at once, with nothing killed and no run, and fail the harness's
/// own checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_campaign_shorter_than_its_setup_still_checks_something() {
    let tally = campaign(Plan {
        pipelines: 1,
        writers: 1,
        duration: Duration::ZERO,
        kill_pause_ms: (50, 400),
    })
    .await;
    assert_clean(&tally);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
#[ignore = "the long campaign (BATON_CHAOS_SECS, default 90): run with --ignored --nocapture"]
async fn chaos_campaign() {
    let secs = std::env::var("BATON_CHAOS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(90);
    let tally = campaign(Plan {
        pipelines: 8,
        writers: 4,
        duration: Duration::from_secs(secs),
        kill_pause_ms: (20, 200),
    })
    .await;
    assert_clean(&tally);
}
