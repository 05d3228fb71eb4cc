//! Team mode's numbers (docs/performance.md "Team mode"; issue 21,
//! Done-means 7), with a throwaway PostgreSQL on loopback
//! (`baton_testkit::postgres`) and machines as clones of one origin:
//!
//! 1. `pipeline_next_action` server-side time (the transcript's
//!    `duration_ms`), file-only against team mode: effort-L pipelines in two
//!    servers, driven step by step in turn so the machine's load hits both
//!    alike;
//! 2. event delivery to another machine: from the reply of the call that
//!    wrote an event on A to its line on B's `baton events --json --follow`;
//! 3. a team dashboard over 10,000 runs: `GET /api/runs` on B's dashboard;
//! 4. with `BATON_BENCH=off` and `BATON_BENCH_BEFORE=/path/to/old/baton`:
//!    cold start (spawn → `initialize` response) of the old binary and this
//!    one without a database URL, interleaved (memory: `./scripts/bench-memory`
//!    and the memory bench with `BATON_BENCH_BIN`).
//!
//! Run: `cargo bench -p baton --bench team`; `BATON_BENCH_BIN` measures
//! another build. Measures, never asserts.

#[path = "support/stdio_server.rs"]
mod support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_testkit::postgres::Postgres;
use serde_json::{Value, json};
use support::{Server, percentile, server_durations};

fn binary() -> PathBuf {
    std::env::var_os("BATON_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_baton")))
}

fn report(name: &str, mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    let p50 = percentile(&samples, 0.5);
    println!(
        "| {name} | {} | {p50:.3} ms | {:.3} ms | {:.3} ms |",
        samples.len(),
        percentile(&samples, 0.95),
        samples.last().copied().unwrap_or(f64::NAN)
    );
    p50
}

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(ok, "git {args:?}");
}

/// An origin and its clones (the machines), in one temporary folder.
struct Team {
    dir: tempfile::TempDir,
}

impl Team {
    fn new() -> Team {
        let dir = tempfile::tempdir().unwrap();
        git(
            dir.path(),
            &["init", "-q", "--bare", "-b", "main", "origin.git"],
        );
        Team { dir }
    }

    fn clone(&self, name: &str) -> PathBuf {
        git(self.dir.path(), &["clone", "-q", "origin.git", name]);
        self.dir.path().join(name)
    }
}

fn main() {
    if std::env::var("BATON_BENCH").is_ok_and(|b| b == "off") {
        off_bench();
        return;
    }
    let pg = Postgres::start();
    let url = pg.create_database("bench");
    let team = Team::new();
    println!("| what | n | p50 | p95 | max |");
    println!("|---|---|---|---|---|");
    next_action_bench(&team, &url);
    delivery_bench(&team, &url);
    dashboard_bench(&pg, &team, &url);
}

/// Whole effort-L pipelines (`--auto`, every artifact written, exec steps
/// reported as succeeded) in a file-only server and a team-mode server,
/// one step each in turn.
fn next_action_bench(team: &Team, url: &str) {
    let bin = binary();
    let file_repo = team.clone("file-only");
    let team_repo = team.clone("team-a");
    let mut file = Server::spawn_bin(&bin, &file_repo, &["--tools", "all"], &[]);
    let mut teamed = Server::spawn_bin(
        &bin,
        &team_repo,
        &["--tools", "all"],
        &[("BATON_DATABASE_URL", url)],
    );
    file.initialize();
    teamed.initialize();
    for run in 0..10 {
        let text = format!("rewrite the session store part {run}");
        let mut a = Pipeline::start(&mut file, &file_repo, &text);
        let mut b = Pipeline::start(&mut teamed, &team_repo, &text);
        while !a.done || !b.done {
            if !a.done {
                a.step(&mut file);
            }
            if !b.done {
                b.step(&mut teamed);
            }
        }
    }
    file.stop();
    teamed.stop();
    std::thread::sleep(Duration::from_millis(300));
    let f = report(
        "`pipeline_next_action` server-side, file only (10 effort-L runs)",
        server_durations(&file_repo, "pipeline_next_action"),
    );
    let t = report(
        "`pipeline_next_action` server-side, team mode (the same, interleaved)",
        server_durations(&team_repo, "pipeline_next_action"),
    );
    println!("| team − file-only, p50 | | {:+.3} ms | | |", t - f);
}

/// One effort-L pipeline, driven a step at a time.
struct Pipeline {
    ws: String,
    dir: PathBuf,
    args: Value,
    done: bool,
}

impl Pipeline {
    fn start(s: &mut Server, repo: &Path, text: &str) -> Pipeline {
        let init = s.call(
            "pipeline_init",
            json!({"arguments": format!("{text} --nopr --auto")}),
        )["result"]["structuredContent"]
            .clone();
        let created = s.call(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
                   "user_confirmation": {"effort": "L", "use_current_branch": true}}),
        )["result"]["structuredContent"]
            .clone();
        let ws = created["workspace"]
            .as_str()
            .expect("a workspace")
            .to_string();
        Pipeline {
            dir: repo.join(&ws),
            args: json!({"workspace": ws}),
            ws,
            done: false,
        }
    }

    /// Returns the call's client round trip.
    fn step(&mut self, s: &mut Server) -> Instant {
        let r = s.call("pipeline_next_action", self.args.clone());
        let returned = Instant::now();
        assert!(r["result"]["isError"] == false, "{r}");
        let a = &r["result"]["structuredContent"];
        self.args = match a["type"].as_str().unwrap_or("") {
            "done" => {
                self.done = true;
                return returned;
            }
            "spawn_agent" => {
                let outputs: Vec<String> = match a["parallel_tasks"].as_array() {
                    Some(tasks) => tasks
                        .iter()
                        .filter_map(|t| t["output_file"].as_str().map(str::to_string))
                        .collect(),
                    None => a["output_file"]
                        .as_str()
                        .map(str::to_string)
                        .into_iter()
                        .collect(),
                };
                for out in outputs {
                    let text = match out.as_str() {
                        "tasks.md" => {
                            "# Tasks\n\n## Task 1: Core\nmode: sequential\n\n## Task 2: API\nmode: parallel\ndepends_on: [1]\n"
                        }
                        o if o.starts_with("review-design") || o.starts_with("review-tasks") => {
                            "## Verdict: APPROVE\n"
                        }
                        o if o.starts_with("review-") => "## Verdict: PASS\n",
                        _ => "# Artifact\n\n## Section\n\ntext\n",
                    };
                    std::fs::write(self.dir.join(out), text).unwrap();
                }
                json!({"workspace": self.ws, "previous_action_complete": true, "previous_tokens": 1000, "previous_duration_ms": 1})
            }
            "exec" => {
                json!({"workspace": self.ws, "previous_action_complete": true, "previous_exit_code": 0})
            }
            other => panic!("unexpected action {other}: {a}"),
        };
        returned
    }
}

fn event_key(e: &Value) -> String {
    format!(
        "{}|{}|{}|{}|{}",
        e["event"], e["phase"], e["workspace"], e["timestamp"], e["detail"]
    )
}

/// A writes (pipelines through MCP); B follows the team's log with
/// `baton events --json --follow`. Each event's delay: from the reply of
/// the call that wrote it on A to its line on B.
fn delivery_bench(team: &Team, url: &str) {
    let bin = binary();
    let a_repo = team.clone("deliver-a");
    let b_repo = team.clone("deliver-b");
    let arrived: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let mut follower = std::process::Command::new(&bin)
        .args(["events", "--json", "--follow", "-n", "0"])
        .current_dir(&b_repo)
        .env("BATON_DATABASE_URL", url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("baton events --follow");
    let stdout = follower.stdout.take().unwrap();
    let sink = Arc::clone(&arrived);
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                sink.lock().unwrap().push((event_key(&v), Instant::now()));
            }
        }
    });
    let mut a = Server::spawn_bin(
        &bin,
        &a_repo,
        &["--tools", "all"],
        &[("BATON_DATABASE_URL", url)],
    );
    a.initialize();
    let log = a_repo.join(".baton/events/events.jsonl");
    let logged = |from: usize| -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .skip(from)
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| event_key(&v))
            .collect()
    };
    // The follower is ready once it shows a first run's first event.
    let mut warm = Pipeline::start(&mut a, &a_repo, "warm up the follower");
    let deadline = Instant::now() + Duration::from_secs(30);
    while arrived.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    while !warm.done {
        warm.step(&mut a);
    }
    std::thread::sleep(Duration::from_secs(1));
    let mut delays = Vec::new();
    // Arrivals already matched (the warm-up's all are).
    let mut used = vec![true; arrived.lock().unwrap().len()];
    let mut lines = logged(0).len();
    for run in 0..6 {
        let mut p = Pipeline::start(&mut a, &a_repo, &format!("deliver events {run}"));
        while !p.done {
            let returned = p.step(&mut a);
            let new = logged(lines);
            lines += new.len();
            for key in new {
                let deadline = Instant::now() + Duration::from_secs(10);
                let at = loop {
                    let got = {
                        let list = arrived.lock().unwrap();
                        used.resize(list.len(), false);
                        (0..list.len())
                            .find(|&i| !used[i] && list[i].0 == key)
                            .map(|i| (i, list[i].1))
                    };
                    if let Some((i, at)) = got {
                        used[i] = true;
                        break Some(at);
                    }
                    if Instant::now() > deadline {
                        break None;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                };
                delays.push(at.map_or(10_000.0, |at| {
                    at.saturating_duration_since(returned).as_secs_f64() * 1000.0
                }));
            }
        }
    }
    a.stop();
    let _ = follower.kill();
    let _ = follower.wait();
    report(
        "event on A → B's `baton events --follow` (from A's reply)",
        delays,
    );
}

/// 10,000 runs of ten other machines in the database, then B's dashboard
/// lists them a page at a time.
fn dashboard_bench(pg: &Postgres, team: &Team, url: &str) {
    let bin = binary();
    let b_repo = team.clone("dashboard-b");
    let out = std::process::Command::new(&bin)
        .args(["team", "status", "--json"])
        .current_dir(&b_repo)
        .env("BATON_DATABASE_URL", url)
        .output()
        .expect("baton team status");
    let status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    let repo = status["repository"]
        .as_str()
        .expect("repository")
        .replace('\'', "''");
    pg.psql(
        "bench",
        &format!(
            "INSERT INTO baton.machines (id, host, path, name, repo, version)
             SELECT 'machine-' || m, 'host' || m, '/work/' || m, 'host' || m || ':repo', '{repo}', 'bench'
             FROM generate_series(1, 10) AS m;
             INSERT INTO baton.runs (run_key, machine, repo, workspace, display, workflow, spec_name,
                 issue, branch, phase, status, active, waiting, done, total, created_at, updated_at,
                 revision, state)
             SELECT 'machine-' || (i % 10 + 1) || '/2026' || lpad((i % 1000)::text, 4, '0') || '-run-' || i,
                    'machine-' || (i % 10 + 1), '{repo}', '2026' || lpad((i % 1000)::text, 4, '0') || '-run-' || i,
                    '.specs/2026' || lpad((i % 1000)::text, 4, '0') || '-run-' || i,
                    CASE WHEN i % 3 = 0 THEN 'issue' ELSE 'forge' END, 'run-' || i,
                    CASE WHEN i % 3 = 0 THEN i::text END, 'main',
                    CASE WHEN i % 4 = 0 THEN 'completed' ELSE 'phase-5' END,
                    CASE WHEN i % 4 = 0 THEN 'completed' WHEN i % 7 = 0 THEN 'awaiting_human' ELSE 'in_progress' END,
                    i % 4 <> 0,
                    CASE WHEN i % 7 = 0 AND i % 4 <> 0 THEN '{{\"phase\":\"checkpoint-a\",\"name\":\"checkpoint-a\",\"present_to_user\":\"q\",\"options\":[\"approve\"],\"answered_by\":\"person\"}}'::jsonb END,
                    (i % 17), 17, now() - make_interval(mins => i), now() - make_interval(mins => i),
                    i, '{{}}'::jsonb
             FROM generate_series(1, 10000) AS i;"
        ),
    );
    let mut cmd = std::process::Command::new(&bin);
    cmd.args(["dashboard", "--port", "0"])
        .current_dir(&b_repo)
        .env("BATON_DATABASE_URL", url)
        .stdin(std::process::Stdio::null());
    let server = baton_testkit::http::start(cmd, "dashboard at ");
    for (name, path) in [
        (
            "10,000 team runs: `GET /api/runs` (a page of 50, counts over all)",
            "/api/runs",
        ),
        (
            "10,000 team runs: `GET /api/runs?status=waiting`",
            "/api/runs?status=waiting",
        ),
        (
            "10,000 team runs: `GET /api/runs?q=run-77` (search)",
            "/api/runs?q=run-77",
        ),
    ] {
        let mut times = Vec::new();
        for i in 0..60 {
            let t = Instant::now();
            let r = baton_testkit::http::request(&server.addr, "GET", path, &[], None);
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(r.status, 200, "{}", r.body);
            if i == 0 {
                let v = r.json();
                assert!(v["counts"]["all"].as_u64().unwrap_or(0) >= 10_000, "{v}");
                continue;
            }
            times.push(ms);
        }
        report(name, times);
    }
    let mut ls = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let o = std::process::Command::new(&bin)
            .args(["ls", "--json"])
            .current_dir(&b_repo)
            .env("BATON_DATABASE_URL", url)
            .output()
            .unwrap();
        assert!(o.status.success());
        ls.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report(
        "10,000 team runs: `baton ls --json` (whole command, 5,000 rows shown)",
        ls,
    );
}

/// Without a database URL: cold start of an older build and this one,
/// interleaved.
fn off_bench() {
    let after = binary();
    let before = std::env::var_os("BATON_BENCH_BEFORE")
        .map(PathBuf::from)
        .expect("BATON_BENCH_BEFORE=/path/to/the/older/baton");
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let (mut b, mut a) = (Vec::new(), Vec::new());
    for _ in 0..60 {
        for (bin, out) in [(&before, &mut b), (&after, &mut a)] {
            let t = Instant::now();
            let mut s = Server::spawn_bin(bin, repo.path(), &[], &[]);
            s.initialize();
            out.push(t.elapsed().as_secs_f64() * 1000.0);
            s.stop();
        }
    }
    println!("| what | n | p50 | p95 | max |");
    println!("|---|---|---|---|---|");
    report("cold start (spawn → `initialize` response), before", b);
    report("cold start, after (no `BATON_DATABASE_URL`)", a);
}
