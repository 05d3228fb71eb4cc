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
            let r = s.call("phase_start", json!({"workspace": ws, "phase": "phase-1"}));
            mutate.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(r["result"]["isError"] == false, "{r}");
            let t = Instant::now();
            s.call(
                "phase_fail",
                json!({"workspace": ws, "phase": "phase-1", "message": "bench"}),
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
            s.call("phase_start", json!({"workspace": ws, "phase": "phase-1"}));
            s.call(
                "phase_fail",
                json!({"workspace": ws, "phase": "phase-1", "message": "bench"}),
            );
        }
    }
    s.stop();
    std::thread::sleep(Duration::from_millis(200));
    let nosync = server_durations(nosync_repo.path(), &["phase_start", "phase_fail"]);
    report("server-side: phase_start/phase_fail (no fsync)", nosync);
    pipeline_bench();
    manual_find_bench();
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
    const TASKS: &str = "# Tasks\n\n## Task 1: Core\nmode: sequential\n\n## Task 2: API\nmode: parallel\ndepends_on: [1]\n\n## Task 3: CLI\nmode: parallel\ndepends_on: [1]\n";
    let repo = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let mut s = Server::spawn(repo.path(), true);
    s.initialize();
    let mut rtt = Vec::new();
    let mut decisions_per_run = 0;
    for run in 0..10 {
        let init = s.call(
            "pipeline_init",
            json!({"arguments": format!("rewrite the session store {run} --nopr")}),
        )["result"]["structuredContent"]
            .clone();
        let created = s.call(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
                   "user_confirmation": {"effort": "L", "use_current_branch": true}}),
        )["result"]["structuredContent"]
            .clone();
        let ws = created["workspace"].as_str().unwrap().to_string();
        let dir = repo.path().join(&ws);
        let mut args = json!({"workspace": ws});
        let mut decisions = 0;
        loop {
            let t = Instant::now();
            let r = s.call("pipeline_next_action", args.clone());
            rtt.push(t.elapsed().as_secs_f64() * 1000.0);
            decisions += 1;
            assert!(r["result"]["isError"] == false, "{r}");
            let a = r["result"]["structuredContent"].clone();
            args = match a["type"].as_str().unwrap() {
                "done" => break,
                "spawn_agent" => {
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
                            "review-design.md" | "review-tasks.md" => {
                                "## Verdict: APPROVE\n".into()
                            }
                            o if o.starts_with("review-") => "## Verdict: PASS\n".into(),
                            _ => "# Artifact\n\n## Section\n\ntext\n".into(),
                        };
                        std::fs::write(dir.join(out), text).unwrap();
                    }
                    json!({"workspace": ws, "previous_action_complete": true, "previous_tokens": 1000, "previous_duration_ms": 1})
                }
                "exec" => {
                    json!({"workspace": ws, "previous_action_complete": true, "previous_exit_code": 0})
                }
                "checkpoint" | "human_gate" => json!({"workspace": ws, "user_response": "proceed"}),
                other => panic!("unexpected action {other}"),
            };
        }
        decisions_per_run = decisions;
    }
    s.stop();
    std::thread::sleep(Duration::from_millis(200));
    let server = server_durations(repo.path(), &["pipeline_next_action"]);
    println!("effort-L pipeline: {decisions_per_run} pipeline_next_action calls per run, 10 runs");
    report("round trip: pipeline_next_action (L pipeline)", rtt);
    report("server-side: pipeline_next_action (fsync)", server);
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
