//! Peak memory of the real binary, as an agent's client uses it: peak RSS
//! (`VmHWM` in /proc/<pid>/status) after `initialize` + `tools/list`, and
//! after a whole effort-L pipeline driven through MCP over stdio. Also the
//! split of resident memory into file-backed pages (the mapped binary and
//! libraries) and anonymous memory (the heap, stacks), and the same pipeline
//! with glibc's default malloc arenas (`MALLOC_ARENA_MAX=64`) instead of
//! baton's one.
//!
//! Run: `./scripts/bench-memory`, which measures a copy of the `cargo build
//! --release` binary (the bench profile builds the binary under other
//! symbol names, so the start-up order of `crates/baton/build.rs` would not
//! apply to `cargo bench`'s own build). Another binary (an older build, for
//! a before/after) with `BATON_BENCH_BIN=/path/to/baton`.
//! Prints the machine and a table. Not a test: memory is measured, not asserted.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

#[path = "support/person.rs"]
mod person;

fn binary() -> PathBuf {
    std::env::var_os("BATON_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_baton")))
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<Server> {
        let mut cmd = Command::new(binary());
        cmd.arg("serve").args(args).current_dir(repo);
        cmd.env_remove("BATON_TOOLS").env_remove("MALLOC_ARENA_MAX");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn baton");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        )?;
        assert_eq!(init["result"]["serverInfo"]["name"], "baton");
        writeln!(
            s.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .ok()?;
        Some(s)
    }

    fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").ok()?;
        self.stdin.flush().ok()?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let v: Value = serde_json::from_str(&line).ok()?;
            if v["id"] == id {
                return Some(v);
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .expect("answer");
        assert!(r["result"]["isError"] == false, "{tool}: {r}");
        r["result"]["structuredContent"].clone()
    }

    /// (VmHWM, RssAnon, RssFile) in KiB.
    fn memory(&self) -> (u64, u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        (field("VmHWM:"), field("RssAnon:"), field("RssFile:"))
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    repo
}

/// Peak memory after initialize + tools/list with `args`; None when the
/// binary refuses them (an older build without `--tools all`).
fn after_tools_list(args: &[&str]) -> Option<(u64, u64, u64)> {
    let repo = repo();
    let mut s = Server::spawn(repo.path(), args, &[])?;
    let list = s.request("tools/list", json!({}))?;
    assert!(
        list["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    let m = s.memory();
    s.stop();
    Some(m)
}

/// Peak memory after one whole effort-L pipeline (17 decisions: all phases,
/// reviews, checkpoints, three tasks with a parallel pair), driven like the
/// /baton-pipeline command drives it: artifacts written, exec steps reported
/// as succeeded.
fn after_pipeline(env: &[(&str, &str)]) -> (u64, u64, u64) {
    const TASKS: &str = "# Tasks\n\n## Task 1: Core\nmode: sequential\n\n## Task 2: API\nmode: parallel\ndepends_on: [1]\n\n## Task 3: CLI\nmode: parallel\ndepends_on: [1]\n";
    let repo = repo();
    let mut s = Server::spawn(repo.path(), &[], env).expect("serve");
    s.request("tools/list", json!({})).expect("tools/list");
    let init = s.call(
        "pipeline_init",
        json!({"arguments": "rewrite the session store --nopr --auto"}),
    );
    let created = s.call(
        "pipeline_init_with_context",
        json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
               "user_confirmation": {"effort": "L", "use_current_branch": true}}),
    );
    let ws = created["workspace"].as_str().unwrap().to_string();
    let dir = repo.path().join(&ws);
    let mut args = json!({"workspace": ws});
    loop {
        let a = s.call("pipeline_next_action", args.clone());
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
                        "review-design.md" | "review-tasks.md" => "## Verdict: APPROVE\n".into(),
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
            // Checkpoints are a person's (an agent's `--auto` grants
            // nothing): answered as one, with `baton answer` at a terminal
            // (`script` gives it one), as crates/baton/benches/versus.rs does.
            "checkpoint" | "human_gate" => {
                let pick = person::pick(&a["options"]);
                person::answer_at_terminal(&binary(), repo.path(), &ws, pick);
                json!({"workspace": ws})
            }
            other => panic!("unexpected action {other}: {a}"),
        };
    }
    let m = s.memory();
    s.stop();
    m
}

/// KiB as decimal megabytes (the unit of the targets: 8 MB, 12 MB).
fn mb(kib: u64) -> String {
    format!("{:.2} MB", kib as f64 * 1024.0 / 1e6)
}

/// Median, min and max of the runs' peak, with the anon/file split of the median run.
fn row(name: &str, mut runs: Vec<(u64, u64, u64)>) {
    runs.sort();
    let (hwm, anon, file) = runs[runs.len() / 2];
    println!(
        "| {name} | {} | {}–{} | {} | {} |",
        mb(hwm),
        mb(runs[0].0),
        mb(runs[runs.len() - 1].0),
        mb(anon),
        mb(file)
    );
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_default();
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string())
        })
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or("?".into(), |kib| format!("{} GiB", kib / 1024 / 1024));
    format!("{cpu}, {cores} cores, {memory}, Linux {kernel}")
}

fn main() {
    let bin = binary();
    let size = std::fs::metadata(&bin).map_or(0, |m| m.len());
    println!("machine: {}", machine());
    println!("binary: {} ({:.1} MB)", bin.display(), size as f64 / 1e6);
    println!();
    println!("| scenario | peak RSS (median) | min–max | anon | file-backed |");
    println!("|---|---|---|---|---|");
    let runs = 7;
    row(
        "initialize + tools/list, default profile",
        (0..runs).filter_map(|_| after_tools_list(&[])).collect(),
    );
    let all: Vec<_> = (0..runs)
        .filter_map(|_| after_tools_list(&["--tools", "all"]))
        .collect();
    if !all.is_empty() {
        row("initialize + tools/list, all tools", all);
    }
    row(
        "a whole effort-L pipeline",
        (0..5).map(|_| after_pipeline(&[])).collect(),
    );
    row(
        "the same, glibc's default arenas (MALLOC_ARENA_MAX=64)",
        (0..5)
            .map(|_| after_pipeline(&[("MALLOC_ARENA_MAX", "64")]))
            .collect(),
    );
}
