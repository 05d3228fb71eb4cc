//! End-to-end benchmark of the real binary over stdio, as an agent's client
//! sees it: cold start (spawn → initialize response), tool-call round trips
//! (client-side), the server-side time of each call (from the transcript's
//! `duration_ms`), and memory (idle RSS and peak RSS from /proc).
//!
//! Run: `cargo bench -p baton --bench e2e` (release build). Prints a table.
//! `BATON_BENCH_BIN=/path/to/baton` measures another build instead.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use baton_testkit::history::write_past_runs;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(repo: &std::path::Path, transcript: bool) -> Server {
        Server::spawn_env(repo, transcript, &[])
    }

    fn spawn_env(repo: &std::path::Path, transcript: bool, env: &[(&str, &str)]) -> Server {
        // BATON_BENCH_BIN measures another build (before/after comparisons).
        let bin = std::env::var_os("BATON_BENCH_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_baton").into());
        let mut cmd = Command::new(bin);
        cmd.args(["serve", "--tools", "all"]).current_dir(repo);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if !transcript {
            cmd.arg("--no-transcript");
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn baton");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            self.stdout.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    fn notify(&mut self, method: &str) {
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": method})
        )
        .unwrap();
    }

    fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        self.notify("notifications/initialized");
        r
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    fn rss_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, mut samples: Vec<f64>) {
    samples.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{name:<44} n={:<5} p50={:>9.3} ms  p95={:>9.3} ms  max={:>9.3} ms",
        samples.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.95),
        samples[samples.len() - 1]
    );
}

fn main() {
    // `cargo bench` passes flags such as --bench; nothing to parse.
    // BATON_BENCH=history runs only the run-history comparison.
    if std::env::var("BATON_BENCH").is_ok_and(|b| b == "history") {
        history_bench();
        return;
    }
    let repo = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();

    // Cold start: process spawn → initialize response on stdout.
    let mut cold = Vec::new();
    for _ in 0..40 {
        let started = Instant::now();
        let mut s = Server::spawn(repo.path(), true);
        let r = s.initialize();
        cold.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(r["result"]["serverInfo"]["name"], "baton");
        s.stop();
    }
    report("cold start (spawn -> initialize response)", cold);

    // Round trips in one session.
    let mut s = Server::spawn(repo.path(), true);
    s.initialize();
    let idle_rss = s.rss_kib("VmRSS:");
    let ws = s.call(
        "init",
        json!({"spec_name": "bench", "workspace": "20260101-bench"}),
    )["result"]["structuredContent"]["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    let mut read = Vec::new();
    let mut mutate = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        let r = s.call("state_resume_info", json!({"workspace": ws}));
        read.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(r["result"]["isError"] == false);
    }
    // Writes: 50 workspaces × 10 start/fail pairs, so state.json stays the
    // size of a real workflow's (its history grows with every transition).
    for w in 0..50 {
        let ws = format!("20260102-bench-{w}");
        s.call("init", json!({"spec_name": "bench", "workspace": ws}));
        for _ in 0..10 {
            let t = Instant::now();
            let r = s.call(
                "phase_start",
                json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-1"}),
            );
            mutate.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(r["result"]["isError"] == false, "{r}");
            let t = Instant::now();
            s.call(
                "phase_fail",
                json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-1", "message": "bench"}),
            );
            mutate.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    // The issue workflow: 30 issues walked through their five phases with
    // completePhase (each call: evidence gate, routing, complete + start).
    let mut complete_rtt = Vec::new();
    for n in 0..30 {
        let issue = format!("{}", 1000 + n);
        let start = s.call("startIssueWorkflow", json!({"issueNumber": issue}));
        let ws = start["result"]["structuredContent"]["workspace"]
            .as_str()
            .unwrap()
            .to_string();
        let mut current = start["result"]["structuredContent"].clone();
        while current["currentPhase"] != "completed" {
            let phase = current["currentPhase"].as_str().unwrap().to_string();
            let instruction = &current["instruction"];
            for artifact in instruction["artifacts"].as_array().unwrap() {
                std::fs::write(
                    repo.path().join(&ws).join(artifact.as_str().unwrap()),
                    "# done\n",
                )
                .unwrap();
            }
            let count = |k: &str| {
                (1..=instruction[k].as_array().unwrap().len())
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
            };
            let t = Instant::now();
            let r = s.call(
                "completePhase",
                json!({"issueNumber": issue, "phaseResult": {"phaseName": phase, "status": "completed",
                    "workingFiles": ["src/lib.rs"], "completedTasks": count("tasks"), "acceptanceCriteriaMet": count("acceptanceCriteria")}}),
            );
            complete_rtt.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(r["result"]["isError"] == false, "{r}");
            current = r["result"]["structuredContent"].clone();
        }
    }
    let peak_rss = s.rss_kib("VmHWM:");
    s.stop();
    report("round trip: completePhase (issue workflow)", complete_rtt);
    report("round trip: state_resume_info (read)", read);
    report("round trip: phase_start/phase_fail (write)", mutate);

    // Server-side durations from the transcript.
    std::thread::sleep(Duration::from_millis(200));
    let server_read = server_durations(repo.path(), &["state_resume_info"]);
    let server_write = server_durations(repo.path(), &["phase_start", "phase_fail"]);
    let server_complete = server_durations(repo.path(), &["completePhase"]);
    report("server-side: state_resume_info", server_read);
    report("server-side: phase_start/phase_fail (fsync)", server_write);
    report("server-side: completePhase (fsync)", server_complete);
    // The same writes with BATON_FSYNC=off (atomic renames, no fsync).
    let nosync_repo = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    std::fs::create_dir(nosync_repo.path().join(".git")).unwrap();
    let mut s = Server::spawn_env(nosync_repo.path(), true, &[("BATON_FSYNC", "off")]);
    s.initialize();
    for w in 0..50 {
        let ws = format!("20260102-bench-{w}");
        s.call("init", json!({"spec_name": "bench", "workspace": ws}));
        for _ in 0..10 {
            s.call(
                "phase_start",
                json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-1"}),
            );
            s.call(
                "phase_fail",
                json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-1", "message": "bench"}),
            );
        }
    }
    s.stop();
    std::thread::sleep(Duration::from_millis(200));
    let nosync = server_durations(nosync_repo.path(), &["phase_start", "phase_fail"]);
    report("server-side: phase_start/phase_fail (no fsync)", nosync);
    pipeline_bench();
    manual_find_bench();
    history_bench();
    println!(
        "idle RSS after initialize: {:.1} MiB",
        idle_rss as f64 / 1024.0
    );
    println!(
        "peak RSS over the session: {:.1} MiB",
        peak_rss as f64 / 1024.0
    );
}

/// Whole effort-L pipelines (17 phases, 3 tasks with a parallel pair, all
/// reviews and checkpoints) driven through MCP by a scripted orchestrator
/// that writes each agent's artifact and reports exec steps as succeeded.
/// Measures every `pipeline_next_action` decision: client round trip and
/// server-side time (the transcript's `duration_ms`, fsync on).
fn pipeline_bench() {
    let repo = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let mut s = Server::spawn(repo.path(), true);
    s.initialize();
    let mut rtt = Vec::new();
    let mut decisions_per_run = 0;
    for run in 0..10 {
        let driven = drive_pipeline(
            &mut s,
            repo.path(),
            &format!("rewrite the session store {run}"),
        );
        decisions_per_run = driven.rtt.len();
        rtt.extend(driven.rtt);
    }
    s.stop();
    std::thread::sleep(Duration::from_millis(200));
    let server = server_durations(repo.path(), &["pipeline_next_action"]);
    println!("effort-L pipeline: {decisions_per_run} pipeline_next_action calls per run, 10 runs");
    report("round trip: pipeline_next_action (L pipeline)", rtt);
    report("server-side: pipeline_next_action (fsync)", server);
}

/// What one driven pipeline returned.
struct Driven {
    /// Client round trip of each `pipeline_next_action`, in order.
    rtt: Vec<f64>,
    /// Its estimate line from the confirmation reply, if any.
    estimate: Option<String>,
    /// Whether a `spawn_agent` prompt carried Layer 4.
    layer4: bool,
    /// The type of each action returned, in order.
    kinds: Vec<String>,
}

/// One effort-L pipeline driven step by step (so two can be interleaved):
/// every agent's artifact written (design reviews with findings, a summary
/// with an improvement report), exec steps reported as succeeded,
/// checkpoints approved by `--auto`.
struct Pipeline {
    ws: String,
    dir: std::path::PathBuf,
    args: Value,
    driven: Driven,
    done: bool,
}

impl Pipeline {
    /// Creates the pipeline for `text` through the two init tools.
    fn start(s: &mut Server, repo: &std::path::Path, text: &str) -> Pipeline {
        let init = s.call(
            "pipeline_init",
            json!({"arguments": format!("{text} --nopr --auto")}),
        )["result"]["structuredContent"]
            .clone();
        let ask = s.call(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"]}),
        )["result"]["structuredContent"]
            .clone();
        let estimate = ask["needs_user_confirmation"]["estimate_display"]
            .as_str()
            .map(str::to_string);
        let created = s.call(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
                   "user_confirmation": {"effort": "L", "use_current_branch": true}}),
        )["result"]["structuredContent"]
            .clone();
        let ws = created["workspace"].as_str().unwrap().to_string();
        Pipeline {
            dir: repo.join(&ws),
            args: json!({"workspace": ws}),
            ws,
            driven: Driven {
                rtt: Vec::new(),
                estimate,
                layer4: false,
                kinds: Vec::new(),
            },
            done: false,
        }
    }

    /// One `pipeline_next_action` and the action it returned, performed.
    fn step(&mut self, s: &mut Server) {
        const TASKS: &str = "# Tasks\n\n## Task 1: Core\nmode: sequential\n\n## Task 2: API\nmode: parallel\ndepends_on: [1]\n\n## Task 3: CLI\nmode: parallel\ndepends_on: [1]\n";
        let ws = self.ws.clone();
        let t = Instant::now();
        let r = s.call("pipeline_next_action", self.args.clone());
        self.driven.rtt.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(r["result"]["isError"] == false, "{r}");
        let a = r["result"]["structuredContent"].clone();
        self.driven
            .kinds
            .push(a["type"].as_str().unwrap_or("").to_string());
        self.args = match a["type"].as_str().unwrap() {
            "done" => {
                self.done = true;
                return;
            }
            "spawn_agent" => {
                self.driven.layer4 |= a["prompt"]
                    .as_str()
                    .is_some_and(|p| p.contains("## Similar Past Pipelines"));
                let outputs: Vec<String> = match a["parallel_tasks"].as_array() {
                    Some(tasks) => tasks
                        .iter()
                        .map(|t| t["output_file"].as_str().unwrap().to_string())
                        .collect(),
                    None => vec![a["output_file"].as_str().unwrap().to_string()],
                };
                for out in outputs {
                    let text = match out.as_str() {
                        "tasks.md" => TASKS.to_string(),
                        "review-design.md" | "review-tasks.md" => "## Verdict: APPROVE\n\n**1. [CRITICAL] Missing error handling for the session store**\n".into(),
                        o if o.starts_with("review-") => "## Verdict: PASS\n\n**1. [MINOR] Naming**\n".into(),
                        "summary.md" => "# Summary\n\n## Improvement Report\n\n### AI Agent Support\n- The test command was hard to find — add it to CLAUDE.md\n".into(),
                        _ => "# Artifact\n\n## Section\n\ntext\n".into(),
                    };
                    std::fs::write(self.dir.join(out), text).unwrap();
                }
                json!({"workspace": ws, "previous_action_complete": true, "previous_tokens": 1000, "previous_duration_ms": 1})
            }
            "exec" => {
                json!({"workspace": ws, "previous_action_complete": true, "previous_exit_code": 0})
            }
            other => panic!("unexpected action {other}"),
        };
    }
}

/// Creates an effort-L pipeline for `text` and drives it to `done`.
fn drive_pipeline(s: &mut Server, repo: &std::path::Path, text: &str) -> Driven {
    let mut p = Pipeline::start(s, repo, text);
    while !p.done {
        p.step(s);
    }
    p.driven
}

/// `manual_find` through MCP on a ~1.5 MB Japanese manual: 43 editions of the
/// evaluation's insurance terms (each copy marked with its edition so
/// sections differ) in one manual, queried with the evaluation's gold queries.
/// Near-duplicate editions make every query match ~43× as many sections as
/// distinct text would: a hard case for scoring.
fn manual_find_bench() {
    let repo = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let eval = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-manuals/eval");
    let source = eval.join("manuals/insurance-ja");
    let mut bytes = 0usize;
    let mut files = 0usize;
    for k in 0..43 {
        let dir = repo.path().join(format!("manuals/terms/ed-{k:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&source).unwrap().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            let text = if entry.path().extension().is_some_and(|e| e == "md") {
                format!("{text}\n（第{k}版の約款）\n")
            } else {
                text
            };
            bytes += text.len();
            files += 1;
            std::fs::write(dir.join(entry.file_name()), text).unwrap();
        }
    }
    let gold = std::fs::read_to_string(eval.join("gold/insurance-ja.jsonl")).unwrap();
    let queries: Vec<String> = gold
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(str::to_string))
        .collect();
    let started = Instant::now();
    let mut s = Server::spawn(repo.path(), true);
    s.initialize();
    let r = s.call(
        "manual_find",
        json!({"query": queries[0], "use_cache": false}),
    );
    assert!(r["result"]["isError"] == false, "{r}");
    let first = started.elapsed().as_secs_f64() * 1000.0;
    let mut rtt = Vec::new();
    for i in 0..500 {
        let q = &queries[i % queries.len()];
        let t = Instant::now();
        let r = s.call("manual_find", json!({"query": q, "use_cache": false}));
        rtt.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(r["result"]["isError"] == false, "{r}");
    }
    let peak = s.rss_kib("VmHWM:");
    s.stop();
    // A second process finds the index on disk.
    let started = Instant::now();
    let mut s = Server::spawn(repo.path(), false);
    s.initialize();
    s.call(
        "manual_find",
        json!({"query": queries[1], "use_cache": false}),
    );
    let warm = started.elapsed().as_secs_f64() * 1000.0;
    s.stop();
    std::thread::sleep(Duration::from_millis(200));
    let mut server = server_durations(repo.path(), &["manual_find"]);
    server.remove(0); // the first call opens (indexes) the manuals
    println!(
        "manual set: {:.2} MB Japanese in {files} files, {} distinct queries",
        bytes as f64 / 1e6,
        queries.len()
    );
    println!("spawn -> first manual_find answered, building the index: {first:.1} ms");
    println!("spawn -> first manual_find answered, index on disk: {warm:.1} ms");
    println!(
        "peak RSS with the manual index: {:.1} MiB",
        peak as f64 / 1024.0
    );
    report("round trip: manual_find (use_cache=false)", rtt);
    report("server-side: manual_find (use_cache=false)", server);
}

/// Issue 15's budget: the run history must not make baton slower to start
/// or to step. Two repositories — empty, and 10,000 ended runs on disk
/// (workspace folders with state, request, design, design review and
/// summary) recorded with `baton history reindex` — measured the same way:
/// cold start (spawn → initialize response; the history is loaded on a
/// background thread, never before the reply) and effort-L pipelines driven
/// through MCP, whose `pipeline_next_action` server-side durations come
/// from the transcript. Adding a run: `HistoryIndex::record_run` on a
/// finished workspace against the 10,000-run file (what the call that ends
/// a run does after its state write), and the server-side time of the call
/// that ends each run.
fn history_bench() {
    const PAST_RUNS: usize = 10_000;
    // Real git repositories: the commit phase reads `git status`, which in
    // a fake one would walk up to the enclosing checkout.
    let new_repo = || {
        let repo = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(repo.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git init");
        repo
    };
    let empty = new_repo();
    let full = new_repo();
    let t = Instant::now();
    write_past_runs(&full.path().join(".specs"), PAST_RUNS);
    let wrote = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["history", "reindex"])
        .current_dir(full.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reindexed = t.elapsed().as_secs_f64();
    let file = full.path().join(".specs/.history/history.jsonl");
    println!(
        "history: {PAST_RUNS} past runs written in {wrote:.1} s; `baton history reindex` {reindexed:.1} s; history file {:.1} MB",
        std::fs::metadata(&file).unwrap().len() as f64 / 1e6
    );
    // The past runs are committed, as a team's runs are: the commit phase's
    // `git status` then stats them instead of listing 50,000 untracked files.
    for args in [
        &["add", "-A", ".specs"][..],
        &[
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "commit",
            "-q",
            "-m",
            "past runs",
        ],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(full.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    let repos = [("empty repository", &empty), ("10,000 past runs", &full)];
    // Interleaved, so a busy moment of the shared machine hits both alike.
    let mut cold = [Vec::new(), Vec::new()];
    for _ in 0..40 {
        for (k, (_, repo)) in repos.iter().enumerate() {
            let started = Instant::now();
            let mut s = Server::spawn(repo.path(), false);
            s.initialize();
            cold[k].push(started.elapsed().as_secs_f64() * 1000.0);
            s.stop();
        }
    }
    let mut servers: Vec<Server> = repos
        .iter()
        .map(|(_, repo)| {
            let mut s = Server::spawn(repo.path(), true);
            s.initialize();
            s
        })
        .collect();
    let mut calls = [0usize; 2];
    let mut ending_calls = [Vec::new(), Vec::new()];
    let mut estimate = [None, None];
    let mut layer4 = [false; 2];
    let mut kinds: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    // Call by call, alternating between the repositories.
    for run in 0..6 {
        let text = format!("rewrite the session store token cache {run}");
        let mut pipelines: Vec<Pipeline> = repos
            .iter()
            .zip(servers.iter_mut())
            .map(|((_, repo), s)| Pipeline::start(s, repo.path(), &text))
            .collect();
        while pipelines.iter().any(|p| !p.done) {
            for (p, s) in pipelines.iter_mut().zip(servers.iter_mut()) {
                if !p.done {
                    p.step(s);
                }
            }
        }
        for (k, p) in pipelines.into_iter().enumerate() {
            calls[k] += p.driven.rtt.len();
            // The call that returned `done` reported the last step: it
            // ended the run (and recorded it).
            ending_calls[k].push(calls[k] - 1);
            if estimate[k].is_none() {
                estimate[k] = p.driven.estimate;
            }
            layer4[k] |= p.driven.layer4;
            kinds[k].extend(p.driven.kinds);
        }
    }
    let peaks: Vec<u64> = servers.iter().map(|s| s.rss_kib("VmHWM:")).collect();
    for s in servers {
        s.stop();
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut cold_p50 = Vec::new();
    let mut step_p50 = Vec::new();
    for (k, (label, repo)) in repos.iter().enumerate() {
        let server = server_durations(repo.path(), &["pipeline_next_action"]);
        let ending: Vec<f64> = ending_calls[k]
            .iter()
            .filter_map(|i| server.get(*i).copied())
            .collect();
        println!(
            "-- {label}: Layer 4 in prompts: {}; first estimate: {:?}",
            layer4[k], estimate[k]
        );
        cold_p50.push(median(&cold[k]));
        step_p50.push(median(&server));
        report(&format!("cold start, {label}"), cold[k].clone());
        report(
            &format!("server-side: pipeline_next_action, {label}"),
            server.clone(),
        );
        report(
            &format!("server-side: the call that ends a run, {label}"),
            ending,
        );
        for kind in ["spawn_agent", "exec", "done"] {
            let of_kind: Vec<f64> = server
                .iter()
                .zip(&kinds[k])
                .filter(|(_, t)| t.as_str() == kind)
                .map(|(d, _)| *d)
                .collect();
            if !of_kind.is_empty() {
                report(&format!("  … returning {kind}, {label}"), of_kind);
            }
        }
        println!("peak RSS, {label}: {:.1} MiB", peaks[k] as f64 / 1024.0);
    }
    println!(
        "ratios (10,000 runs / empty, p50): cold start {:.2}x, pipeline_next_action {:.2}x",
        cold_p50[1] / cold_p50[0],
        step_p50[1] / step_p50[0]
    );
    // Adding a run to the 10,000-run history, in process: build the record
    // from a finished workspace and append it under the lock.
    let specs = full.path().join(".specs");
    let history = baton_history::HistoryIndex::open(&specs);
    let t = Instant::now();
    let _ = history.len();
    let load = t.elapsed().as_secs_f64() * 1000.0;
    let _ = history.layer4("implementer", "rewrite the session store", None, 1200);
    // 50 new finished runs (copies of one with findings and a report).
    let finished = std::fs::read_dir(&specs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.md").is_file())
        .unwrap();
    let state = baton_state::WorkspaceState::from_json(
        &std::fs::read_to_string(finished.join("state.json")).unwrap(),
    )
    .unwrap();
    let mut add = Vec::new();
    let mut next_query = Vec::new();
    for k in 0..50 {
        let dir = specs.join(format!("20990101-new-{k}"));
        std::fs::create_dir(&dir).unwrap();
        for f in std::fs::read_dir(&finished).unwrap().flatten() {
            if f.path().is_file() {
                std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
            }
        }
        let t = Instant::now();
        history.record_run(&dir, &state).unwrap();
        add.push(t.elapsed().as_secs_f64() * 1000.0);
        // The next prompt reads the new line and merges the patterns again.
        let t = Instant::now();
        let _ = history.layer4("implementer", "rewrite the session store", None, 1200);
        next_query.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!("first use of the 10,000-run history in a process: {load:.0} ms");
    report("add a run (build its record + append)", add);
    report("next Layer 4 after an append (re-merge)", next_query);
}

fn median(samples: &[f64]) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    percentile(&s, 0.5)
}

/// Server-side durations (`duration_ms` of outgoing transcript entries) of
/// calls to `tools`, from every transcript under `repo/.baton/logs`.
fn server_durations(repo: &std::path::Path, tools: &[&str]) -> Vec<f64> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(repo.join(".baton/logs")) else {
        return out;
    };
    for entry in entries.flatten() {
        for line in std::fs::read_to_string(entry.path())
            .unwrap_or_default()
            .lines()
        {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["direction"] == "out" && v["tool"].as_str().is_some_and(|t| tools.contains(&t)) {
                out.push(v["duration_ms"].as_f64().unwrap_or(0.0));
            }
        }
    }
    out
}
