//! baton-team against a real PostgreSQL (Debian's server, a throwaway
//! cluster per test file): machines are clones of one origin repository.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use baton_team::records::RunWrite;
use baton_team::{ClaimOutcome, IssueClaim, Team, TeamError, TeamEvent, TeamSettings};
use baton_testkit::postgres::Postgres;
use chrono::{DateTime, Utc};
use serde_json::json;

fn cluster() -> &'static Postgres {
    static PG: OnceLock<Postgres> = OnceLock::new();
    PG.get_or_init(Postgres::start)
}

/// An origin repository and clones of it: each clone a machine.
struct Origin {
    dir: tempfile::TempDir,
}

impl Origin {
    fn new() -> Origin {
        let dir = tempfile::tempdir().unwrap();
        git(
            dir.path(),
            &["init", "-q", "--bare", "-b", "main", "origin.git"],
        );
        Origin { dir }
    }

    fn clone(&self, name: &str) -> PathBuf {
        git(self.dir.path(), &["clone", "-q", "origin.git", name]);
        self.dir.path().join(name)
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn open(repo: &Path, url: &str) -> Team {
    Team::open(TeamSettings {
        database_url: url.to_string(),
        repo_root: repo.to_path_buf(),
        team_dir: repo.join(".baton/team"),
        version: "test",
    })
    .unwrap()
}

/// Two machines on the database at `url`, both connected (opened first,
/// then waited for: they connect side by side).
fn open_both(a_repo: &Path, b_repo: &Path, url: &str) -> (Team, Team) {
    let a = open(a_repo, url);
    let b = open(b_repo, url);
    a.wait_connected(Duration::from_secs(20)).unwrap();
    b.wait_connected(Duration::from_secs(20)).unwrap();
    (a, b)
}

fn write(workspace: &str, revision: i64, phase: &str, active: bool, events: &[&str]) -> RunWrite {
    let at = DateTime::<Utc>::from_timestamp_nanos(revision);
    RunWrite {
        workspace: workspace.into(),
        display: format!(".specs/{workspace}"),
        revision,
        workflow: "issue".into(),
        spec_name: workspace[9..].into(),
        issue: None,
        branch: Some("main".into()),
        phase: phase.into(),
        status: if active { "in_progress" } else { "completed" }.into(),
        active,
        waiting: None,
        done: 0,
        total: 5,
        created: DateTime::<Utc>::from_timestamp_nanos(1_700_000_000_000_000_000),
        updated: at,
        state: json!({"currentPhase": phase}).to_string(),
        events: events
            .iter()
            .map(|e| json!({"event": e, "workspace": format!(".specs/{workspace}")}))
            .collect(),
        history: None,
    }
}

fn until<T>(wait: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn names(events: &[TeamEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.record["event"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn an_empty_database_gets_its_tables_and_runs_of_one_machine_reach_another() {
    let url = cluster().fresh_database();
    let origin = Origin::new();
    let (a_dir, b_dir) = (origin.clone("a"), origin.clone("b"));
    let (a, b) = open_both(&a_dir, &b_dir, &url);
    assert_ne!(a.machine().id, b.machine().id, "two clones, two machines");
    assert_eq!(a.repository(), b.repository(), "one origin, one repository");
    assert_eq!(a.status().schema_version, Some(1));

    let seen: Arc<Mutex<Vec<TeamEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    b.on_events(0, Arc::new(move |batch| sink.lock().unwrap().extend(batch)));
    b.listen();

    a.record(write(
        "20260101-issue-1",
        10,
        "phase-1",
        true,
        &["pipeline-init", "phase-start"],
    ))
    .unwrap();
    a.record(write(
        "20260101-issue-1",
        20,
        "completed",
        false,
        &["pipeline-complete"],
    ))
    .unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);

    let (runs, total) = b.runs(100, 0).unwrap();
    assert_eq!(total, 1);
    assert_eq!(runs[0].machine.id, a.machine().id);
    assert_eq!(runs[0].phase, "completed");
    assert!(!runs[0].active);
    assert!(
        runs[0].machine.name.ends_with(":a"),
        "{}",
        runs[0].machine.name
    );

    let got = until(Duration::from_secs(5), || {
        let s = seen.lock().unwrap();
        (s.len() >= 3).then(|| s.clone())
    })
    .expect("B's listener hands on A's events");
    assert_eq!(
        names(&got),
        ["pipeline-init", "phase-start", "pipeline-complete"]
    );
    assert!(got.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(b.status().delivery, "listen");

    // The same write sent again (a resend after a lost reply, two
    // processes of one working copy) is stored once; an older write never
    // replaces a newer row.
    a.record(write(
        "20260101-issue-1",
        10,
        "phase-1",
        true,
        &["pipeline-init", "phase-start"],
    ))
    .unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);
    let events = b.last_events(100, None).unwrap();
    assert_eq!(
        names(&events),
        ["pipeline-init", "phase-start", "pipeline-complete"]
    );
    assert_eq!(b.runs(10, 0).unwrap().0[0].phase, "completed");
}

#[test]
fn one_run_per_issue_across_machines_and_a_claim_goes_with_its_run() {
    let url = cluster().fresh_database();
    let origin = Origin::new();
    let dirs: Vec<PathBuf> = (0..4).map(|i| origin.clone(&format!("m{i}"))).collect();
    let teams: Vec<Arc<Team>> = dirs.iter().map(|d| Arc::new(open(d, &url))).collect();
    for t in &teams {
        t.wait_connected(Duration::from_secs(20)).unwrap();
    }
    for round in 0..5 {
        let issue = format!("{round}");
        let outcomes: Vec<ClaimOutcome> = std::thread::scope(|s| {
            let handles: Vec<_> = teams
                .iter()
                .map(|t| {
                    let issue = issue.clone();
                    s.spawn(move || {
                        t.claim_issue(&IssueClaim {
                            issue,
                            workspace: format!("20260101-issue-{round}"),
                            display: format!(".specs/20260101-issue-{round}"),
                        })
                        .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners = outcomes
            .iter()
            .filter(|o| **o == ClaimOutcome::Claimed)
            .count();
        assert_eq!(winners, 1, "round {round}: {outcomes:?}");
        for o in &outcomes {
            if let ClaimOutcome::Taken { display, machine } = o {
                assert_eq!(display, &format!(".specs/20260101-issue-{round}"));
                assert!(!machine.name.is_empty());
            }
        }
    }
    // The winner's run ends: the issue is free again.
    let winner = teams
        .iter()
        .find(|t| {
            t.claim_issue(&IssueClaim {
                issue: "0".into(),
                workspace: "20260101-issue-0".into(),
                display: ".specs/20260101-issue-0".into(),
            })
            .unwrap()
                == ClaimOutcome::Claimed
        })
        .expect("the holder claims its own issue again");
    let mut ended = write(
        "20260101-issue-0",
        50,
        "completed",
        false,
        &["pipeline-complete"],
    );
    ended.issue = Some("0".into());
    winner.record(ended).unwrap();
    assert_eq!(winner.flush(Duration::from_secs(10)), 0);
    let other = teams
        .iter()
        .find(|t| t.machine().id != winner.machine().id)
        .unwrap();
    assert_eq!(
        other
            .claim_issue(&IssueClaim {
                issue: "0".into(),
                workspace: "20260102-issue-0".into(),
                display: ".specs/20260102-issue-0".into(),
            })
            .unwrap(),
        ClaimOutcome::Claimed
    );
}

#[test]
fn a_wrong_password_is_a_clear_error_that_never_shows_it_and_writes_wait() {
    let pg = cluster();
    let url = pg.fresh_database();
    let wrong = url.replace(baton_testkit::postgres::PASSWORD, "not-the-password-42");
    let origin = Origin::new();
    let a_dir = origin.clone("a");
    let a = open(&a_dir, &wrong);
    let e = a.wait_connected(Duration::from_secs(20)).unwrap_err();
    assert!(matches!(e, TeamError::PasswordRefused { .. }), "{e}");
    let text = e.to_string();
    assert!(!text.contains("not-the-password-42"), "{text}");
    assert!(text.contains("refused the password"), "{text}");
    assert!(format!("{a:?}").find("not-the-password-42").is_none());
    // Writes wait in the outbox; a list answers with the same error.
    a.record(write("20260101-x-1", 10, "phase-1", true, &["phase-start"]))
        .unwrap();
    assert_eq!(a.flush(Duration::from_millis(200)), 1);
    assert!(matches!(
        a.runs(10, 0),
        Err(TeamError::PasswordRefused { .. })
    ));
    drop(a);
    // Fixed: the next process sends what waited.
    let a = open(&a_dir, &url);
    let b = open(&origin.clone("b"), &url);
    b.wait_connected(Duration::from_secs(20)).unwrap();
    let found = until(Duration::from_secs(10), || {
        let (runs, _) = b.runs(10, 0).ok()?;
        (runs.len() == 1).then_some(runs)
    });
    assert!(found.is_some(), "the queued write arrived");
    assert_eq!(a.status().queued, 0);
}

#[test]
fn a_newer_schema_is_refused_with_a_clear_message_and_nothing_is_written() {
    let pg = cluster();
    let url = pg.fresh_database();
    let origin = Origin::new();
    let a_dir = origin.clone("a");
    let a = open(&a_dir, &url);
    a.wait_connected(Duration::from_secs(20)).unwrap();
    drop(a);
    let db = url.rsplit('/').next().unwrap();
    pg.psql(
        db,
        "INSERT INTO baton._sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (9, 'from the future', true, '\\x00', 0)",
    );
    let a = open(&a_dir, &url);
    let e = a.wait_connected(Duration::from_secs(20)).unwrap_err();
    assert!(
        matches!(
            e,
            TeamError::SchemaTooNew {
                found: 9,
                known: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("upgrade"), "{e}");
    a.record(write("20260101-y-1", 10, "phase-1", true, &["phase-start"]))
        .unwrap();
    assert_eq!(a.flush(Duration::from_millis(300)), 1, "kept in the outbox");
    assert_eq!(pg.psql(db, "SELECT count(*) FROM baton.runs"), "0");
    assert_eq!(a.status().schema_version, Some(9));
}

#[test]
fn a_stopped_server_loses_nothing_and_a_dropped_transaction_is_retried() {
    // A cluster of its own: this test stops it.
    let pg = Postgres::start();
    let url = pg.create_database("outage");
    let origin = Origin::new();
    let (a, b) = open_both(&origin.clone("a"), &origin.clone("b"), &url);
    let seen: Arc<Mutex<Vec<TeamEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    b.on_events(0, Arc::new(move |batch| sink.lock().unwrap().extend(batch)));
    b.listen();

    a.record(write(
        "20260101-z-1",
        10,
        "phase-1",
        true,
        &["pipeline-init"],
    ))
    .unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);
    pg.stop();
    for i in 0..5 {
        a.record(write(
            "20260101-z-1",
            20 + i,
            "phase-2",
            true,
            &["phase-start", "phase-complete"],
        ))
        .unwrap();
    }
    a.record(write(
        "20260101-z-1",
        100,
        "completed",
        false,
        &["pipeline-complete"],
    ))
    .unwrap();
    assert_eq!(a.status().queued, 6);
    pg.start_again();
    let got = until(Duration::from_secs(10), || {
        let s = seen.lock().unwrap();
        (s.len() >= 12).then(|| s.clone())
    })
    .unwrap_or_else(|| panic!("B got {:?}", names(&seen.lock().unwrap())));
    assert_eq!(got.len(), 12, "none twice: {:?}", names(&got));
    assert_eq!(a.status().queued, 0);
    let run = &b.runs(10, 0).unwrap().0[0];
    assert_eq!((run.phase.as_str(), run.active), ("completed", false));

    // A connection that drops in the middle of a transaction: A's writer
    // has written the run's row inside its transaction and waits for the
    // log lock (held here by another session) when its backend is
    // terminated. Nothing half-written stays; the write is retried and
    // stored once.
    let hold = pg.session(
        "outage",
        &format!("SELECT pg_advisory_lock({});", baton_team::db::LOG_LOCK),
    );
    until(Duration::from_secs(5), || {
        (pg.psql(
            "outage",
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted",
        ) == "1")
            .then_some(())
    })
    .expect("the other session holds the log lock");
    a.record(write(
        "20260101-z-2",
        10,
        "phase-1",
        true,
        &["pipeline-init", "phase-start"],
    ))
    .unwrap();
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'baton' AND wait_event_type = 'Lock'";
    until(Duration::from_secs(5), || {
        (pg.psql("outage", waiting) == "1").then_some(())
    })
    .expect("A's writer waits inside its transaction");
    pg.psql(
        "outage",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'baton' AND wait_event_type = 'Lock'",
    );
    assert_eq!(
        pg.psql(
            "outage",
            "SELECT count(*) FROM baton.runs WHERE workspace = '20260101-z-2'"
        ),
        "0",
        "the dropped transaction left nothing"
    );
    drop(hold);
    let got = until(Duration::from_secs(10), || {
        let s = seen.lock().unwrap();
        (s.len() >= 14).then(|| s.clone())
    })
    .unwrap_or_else(|| panic!("B got {:?}", names(&seen.lock().unwrap())));
    assert_eq!(got.len(), 14, "{:?}", names(&got));
    assert_eq!(a.status().queued, 0);
    assert_eq!(
        pg.psql(
            "outage",
            "SELECT count(*) FROM baton.events WHERE run_key LIKE '%/20260101-z-2'"
        ),
        "2"
    );
}

/// A connection pooler in transaction mode accepts `LISTEN` and never
/// delivers a notification. A proxy that drops every NotificationResponse
/// does the same here: the listener's self-test finds out, it polls, and
/// another machine's events still arrive.
#[test]
fn without_notifications_the_listener_polls_and_misses_nothing() {
    let url = cluster().fresh_database();
    let proxy = NotificationEater::start(cluster().port());
    let through = url.replace(
        &format!(":{}/", cluster().port()),
        &format!(":{}/", proxy.port),
    ) + "?sslmode=disable";
    let origin = Origin::new();
    let a = open(&origin.clone("a"), &url);
    let b = open(&origin.clone("b"), &through);
    a.wait_connected(Duration::from_secs(20)).unwrap();
    b.wait_connected(Duration::from_secs(20)).unwrap();
    let seen: Arc<Mutex<Vec<TeamEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    b.on_events(0, Arc::new(move |batch| sink.lock().unwrap().extend(batch)));
    b.listen();
    until(Duration::from_secs(10), || {
        (b.status().delivery == "poll").then_some(())
    })
    .unwrap_or_else(|| panic!("the self-test finds no notifications: {:?}", b.status()));
    a.record(write(
        "20260101-p-1",
        10,
        "phase-1",
        true,
        &["pipeline-init", "phase-start"],
    ))
    .unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);
    let got = until(Duration::from_secs(5), || {
        let s = seen.lock().unwrap();
        (s.len() >= 2).then(|| s.clone())
    })
    .expect("polling brings A's events");
    assert_eq!(names(&got), ["pipeline-init", "phase-start"]);
}

/// A TCP proxy to PostgreSQL that drops every notification the server
/// sends (as a transaction-mode pooler does).
struct NotificationEater {
    port: u16,
}

impl NotificationEater {
    fn start(server_port: u16) -> NotificationEater {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                let (mut c_read, mut s_write) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c_read, &mut s_write);
                });
                let (mut s_read, mut c_write) = (server, client);
                std::thread::spawn(move || {
                    // Server → client: typed messages (type, length, body).
                    loop {
                        let mut head = [0u8; 5];
                        if s_read.read_exact(&mut head).is_err() {
                            return;
                        }
                        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
                        let mut body = vec![0u8; len.saturating_sub(4)];
                        if s_read.read_exact(&mut body).is_err() {
                            return;
                        }
                        if head[0] == b'A' {
                            continue;
                        }
                        if c_write.write_all(&head).is_err() || c_write.write_all(&body).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        NotificationEater { port }
    }
}

/// Failure rules (docs/team.md): a write the database refuses for its
/// content is set aside in `outbox/rejected/` with the reason beside it,
/// never deleted, and the writes queued with it go on; a file in the outbox
/// that does not parse is set aside the same way. Text PostgreSQL cannot
/// store in JSON (a NUL character in an answer or an event's detail) is no
/// such refusal: it arrives, the NUL shown as U+FFFD.
#[test]
fn a_refused_write_is_set_aside_with_why_and_the_others_go_on() {
    let url = cluster().fresh_database();
    let origin = Origin::new();
    let (a_dir, b_dir) = (origin.clone("a"), origin.clone("b"));
    let (a, b) = open_both(&a_dir, &b_dir, &url);
    let outbox = a_dir.join(".baton/team/outbox");

    // A file that does not parse (a half-copied outbox, a stray editor file).
    std::fs::create_dir_all(&outbox).unwrap();
    std::fs::write(outbox.join("00000000000000000001-1-0.json"), "{ not json").unwrap();
    // A write PostgreSQL refuses for its content (a start time out of its
    // range: a state.json with a broken clock), between two good ones.
    a.record(write(
        "20260101-r-1",
        10,
        "phase-1",
        true,
        &["pipeline-init"],
    ))
    .unwrap();
    let mut bad = write("20260101-r-2", 11, "phase-1", true, &["pipeline-init"]);
    bad.created = DateTime::<Utc>::MIN_UTC;
    a.record(bad).unwrap();
    // NUL inside the state and an event's detail: stored, shown as U+FFFD.
    let mut nul = write("20260101-r-3", 12, "phase-1", true, &[]);
    nul.state = json!({"currentPhase": "phase-1", "answer": "yes\u{0}no"}).to_string();
    nul.events = vec![json!({"event": "answer", "detail": "yes\u{0}no"})];
    a.record(nul).unwrap();

    assert_eq!(a.flush(Duration::from_secs(10)), 0, "nothing left queued");
    let rejected = outbox.join(baton_team::outbox::REJECTED);
    let mut set_aside: Vec<String> = std::fs::read_dir(&rejected)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    set_aside.sort();
    assert_eq!(
        set_aside.len(),
        4,
        "two files, each with its reason: {set_aside:?}"
    );
    let whys: Vec<String> = set_aside
        .iter()
        .filter(|n| n.ends_with(".why.txt"))
        .map(|n| std::fs::read_to_string(rejected.join(n)).unwrap())
        .collect();
    assert!(
        whys.iter().any(|w| w.starts_with("does not parse")),
        "{whys:?}"
    );
    assert!(whys.iter().any(|w| w.contains("out of range")), "{whys:?}");
    assert!(
        set_aside
            .iter()
            .filter(|n| n.ends_with(".json"))
            .any(|n| std::fs::read_to_string(rejected.join(n))
                .unwrap()
                .contains("20260101-r-2")),
        "the refused write is kept: {set_aside:?}"
    );

    let (runs, total) = b.runs(10, 0).unwrap();
    let mut stored: Vec<&str> = runs.iter().map(|r| r.workspace.as_str()).collect();
    stored.sort();
    assert_eq!((total, stored), (2, vec!["20260101-r-1", "20260101-r-3"]));
    let events = b.last_events(100, None).unwrap();
    let answer = events
        .iter()
        .find(|e| e.record["event"] == "answer")
        .expect("the event with a NUL arrived");
    assert_eq!(answer.record["detail"], "yes\u{fffd}no");
}

/// Failure rules: an issue started on B while the database was away (no
/// claim made) whose first write reaches the database while A's run holds
/// the issue is marked a duplicate of A's run; both runs stay. A write of
/// an issue nobody holds takes the claim, so a later start elsewhere gets
/// its name.
#[test]
fn a_start_made_offline_is_marked_a_duplicate_or_takes_the_free_claim() {
    let url = cluster().fresh_database();
    let origin = Origin::new();
    let (a, b, c) = (
        open(&origin.clone("a"), &url),
        open(&origin.clone("b"), &url),
        open(&origin.clone("c"), &url),
    );
    for t in [&a, &b, &c] {
        t.wait_connected(Duration::from_secs(20)).unwrap();
    }
    let claim = |t: &Team, issue: &str, ws: &str| {
        t.claim_issue(&IssueClaim {
            issue: issue.into(),
            workspace: ws.into(),
            display: format!(".specs/{ws}"),
        })
        .unwrap()
    };
    assert_eq!(claim(&a, "7", "20260101-issue-7"), ClaimOutcome::Claimed);
    let mut mine = write("20260101-issue-7", 10, "phase-1", true, &["pipeline-init"]);
    mine.issue = Some("7".into());
    a.record(mine).unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);

    // B started issue 7 offline (same day: the same folder name).
    let mut offline = write("20260101-issue-7", 20, "phase-1", true, &["pipeline-init"]);
    offline.issue = Some("7".into());
    b.record(offline).unwrap();
    // And issue 8, which nobody holds.
    let mut free = write("20260101-issue-8", 20, "phase-1", true, &["pipeline-init"]);
    free.issue = Some("8".into());
    b.record(free).unwrap();
    assert_eq!(b.flush(Duration::from_secs(10)), 0);

    let (runs, _) = c.runs(10, 0).unwrap();
    let of = |machine: &str, ws: &str| {
        runs.iter()
            .find(|r| r.machine.id == machine && r.workspace == ws)
            .unwrap_or_else(|| panic!("{ws} of {machine} in {runs:#?}"))
    };
    let a7 = of(&a.machine().id, "20260101-issue-7");
    let b7 = of(&b.machine().id, "20260101-issue-7");
    assert_eq!(a7.duplicate_of, None);
    assert!(
        b7.duplicate_of
            .as_deref()
            .is_some_and(|d| d.ends_with("/20260101-issue-7") && d.starts_with(&a.machine().id)),
        "{b7:#?}"
    );
    assert_eq!(of(&b.machine().id, "20260101-issue-8").duplicate_of, None);
    match claim(&c, "8", "20260101-issue-8") {
        ClaimOutcome::Taken { display, machine } => {
            assert_eq!(display, ".specs/20260101-issue-8");
            assert_eq!(machine.id, b.machine().id);
        }
        other => panic!("issue 8 is B's: {other:?}"),
    }
}

/// Failure rules: a write stamped earlier than the row's (the clock stepped
/// back) does not replace the row, its events are still stored; the next
/// write repairs the row.
#[test]
fn an_older_write_keeps_its_events_and_the_next_one_repairs_the_row() {
    let url = cluster().fresh_database();
    let origin = Origin::new();
    let (a, b) = (
        open(&origin.clone("a"), &url),
        open(&origin.clone("b"), &url),
    );
    a.wait_connected(Duration::from_secs(20)).unwrap();
    b.wait_connected(Duration::from_secs(20)).unwrap();
    a.record(write(
        "20260101-k-1",
        100,
        "phase-2",
        true,
        &["phase-start"],
    ))
    .unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);
    // The clock stepped back: the next write is stamped earlier.
    a.record(write(
        "20260101-k-1",
        50,
        "phase-3",
        true,
        &["phase-complete"],
    ))
    .unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);
    assert_eq!(b.runs(10, 0).unwrap().0[0].phase, "phase-2");
    assert_eq!(
        names(&b.last_events(100, None).unwrap()),
        ["phase-start", "phase-complete"]
    );
    a.record(write(
        "20260101-k-1",
        101,
        "phase-3",
        true,
        &["phase-start"],
    ))
    .unwrap();
    assert_eq!(a.flush(Duration::from_secs(10)), 0);
    assert_eq!(b.runs(10, 0).unwrap().0[0].phase, "phase-3");
    assert_eq!(b.last_events(100, None).unwrap().len(), 3);
}
