//! A minimal MCP client over stdio for benchmarks: spawns the real `baton`
//! binary, sends JSON-RPC lines, reads answers, and reads the process's
//! memory from /proc.

#![allow(
    dead_code,
    reason = "shared by several test or bench targets; each uses part of it"
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A running `baton serve`.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    /// Spawns `baton serve` in `repo` with extra environment variables.
    pub fn spawn(repo: &std::path::Path, env: &[(&str, &str)]) -> Server {
        // The manual tools are a profile of their own (the default is the
        // pipeline's).
        Server::spawn_bin(
            std::path::Path::new(env!("CARGO_BIN_EXE_baton")),
            repo,
            &["--tools", "manuals"],
            env,
        )
    }

    /// Spawns `bin serve ARGS…` in `repo` with extra environment variables.
    pub fn spawn_bin(
        bin: &std::path::Path,
        repo: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = Command::new(bin);
        cmd.arg("serve").args(args).current_dir(repo);
        cmd.env_remove("BATON_TOOLS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn baton");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    /// Sends a request and waits for its answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        loop {
            line.clear();
            self.stdout.read_line(&mut line).expect("read");
            let v: Value = serde_json::from_str(&line).expect("json");
            if v["id"] == id {
                return v;
            }
        }
    }

    /// The MCP handshake.
    pub fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .expect("write");
        r
    }

    /// Calls a tool.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmHWM:`).
    pub fn status_kib(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// CPU time the process has used so far, all threads, in ms (from
    /// `/proc/<pid>/task/*/schedstat`, nanosecond resolution): unlike
    /// wall-clock time it does not grow while the process waits for a core
    /// on a busy machine.
    pub fn cpu_ms(&self) -> f64 {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.child.id())) else {
            return 0.0;
        };
        let ns: u64 = tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|s| {
                s.split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .sum();
        ns as f64 / 1e6
    }

    /// Closes stdin and waits for the process.
    pub fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// Server-side durations (`duration_ms` of outgoing transcript entries) of
/// calls to `tool`, from every transcript under `repo/.baton/logs`, in order.
pub fn server_durations(repo: &std::path::Path, tool: &str) -> Vec<f64> {
    let mut files: Vec<_> = std::fs::read_dir(repo.join(".baton/logs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["direction"] == "out" && v["tool"] == tool {
                out.push(v["duration_ms"].as_f64().unwrap_or(0.0));
            }
        }
    }
    out
}

/// The value at quantile `p` of sorted samples.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
