//! What baton's hooks add to each tool call of the real Claude Code CLI
//! (`tests/clients`, 2.1.328), measured through the CLI itself: sessions
//! driven by the scripted model server make the same tool calls (`Bash`
//! `git status --short`: a PreToolUse and a PostToolUse hook each) in three
//! set-ups, interleaved round by round on this machine —
//!
//! * **none**: the repository without baton's hooks;
//! * **unbound**: `baton init --client claude`'s hooks, no run bound to the
//!   session (the fast path every session without a baton run takes);
//! * **bound**: the hooks, the session bound to a run in phase-1 (the
//!   strict shell rules, the state read on every call).
//!
//! A call's time is the time between two requests of the CLI to the model
//! server (the server answers at once): the CLI's own work, the tool and
//! its hooks. The report gives p50/p95 per set-up and the hooks' share
//! (set-up minus none). It also times `baton hook pre-tool-use` run alone.
//!
//! `cargo bench -p baton --bench hooks` (release build; `BATON_BENCH_CALLS`
//! and `BATON_BENCH_ROUNDS` change the size). Not run in CI.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_testkit::clients::ClaudeCode;
use baton_testkit::git::GitRepo;
use baton_testkit::model::anthropic::{AnthropicServer, Step, Turn};
use serde_json::{Value, json};

fn baton() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_baton"))
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Which hooks a repository has.
#[derive(Clone, Copy, PartialEq)]
enum Hooks {
    /// None.
    None,
    /// The same events and matchers, running `true`: the client's own cost
    /// of running a hook command.
    Noop,
    /// baton's.
    Baton,
}

/// A repository set up with `baton init --client claude`, its hooks as
/// `hooks` says.
fn project(hooks: Hooks) -> GitRepo {
    let repo = GitRepo::new();
    let out = Command::new(baton())
        .args(["init", "--client", "claude"])
        .current_dir(repo.path())
        .output()
        .expect("baton init");
    assert!(out.status.success());
    match hooks {
        Hooks::None => {
            std::fs::write(repo.join(".claude/settings.json"), "{}\n").expect("settings")
        }
        Hooks::Noop => {
            let text =
                std::fs::read_to_string(repo.join(".claude/settings.json")).expect("settings");
            let noop = text
                .lines()
                .map(|l| {
                    if l.contains("\"command\": \"baton hook") {
                        l.split("\"command\"")
                            .next()
                            .unwrap_or_default()
                            .to_string()
                            + "\"command\": \"true\","
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            std::fs::write(repo.join(".claude/settings.json"), noop).expect("settings");
        }
        Hooks::Baton => {}
    }
    repo.write(
        ".claude/settings.local.json",
        &json!({"enableAllProjectMcpServers": true}).to_string(),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "init"]);
    repo
}

/// Starts a run of effort S in `repo` through `baton serve` (raw JSON-RPC
/// over stdio) and hands out phase-1; returns its workspace.
fn start_run(repo: &Path) -> String {
    let mut child = Command::new(baton())
        .arg("serve")
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("baton serve");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut rpc = |id: u64, method: &str, params: Value| -> Value {
        writeln!(
            input,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        if id == 1 {
            writeln!(
                input,
                "{}",
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
            )
            .unwrap();
        }
        loop {
            let mut line = String::new();
            output.read_line(&mut line).expect("reply");
            let v: Value = serde_json::from_str(&line).expect("json");
            if v["id"] == id {
                return v;
            }
        }
    };
    rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    );
    let mut call = |id: u64, name: &str, args: Value| -> Value {
        let r = rpc(id, "tools/call", json!({"name": name, "arguments": args}));
        serde_json::from_str(r["result"]["content"][0]["text"].as_str().expect("text"))
            .expect("reply")
    };
    let init = call(
        2,
        "pipeline_init",
        json!({"arguments": "add a greeting --nopr"}),
    );
    let ready = call(
        3,
        "pipeline_init_with_context",
        json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
               "user_confirmation": {"effort": "S", "use_current_branch": true}}),
    );
    let ws = ready["workspace"].as_str().expect("workspace").to_string();
    call(4, "pipeline_next_action", json!({"workspace": ws}));
    drop(input);
    let _ = child.wait();
    ws
}

/// One session: bind (a baton tool naming the run), `calls` Bash calls,
/// then stop. Returns the time of each Bash call.
fn session(repo: &GitRepo, ws: &str, calls: usize) -> Vec<Duration> {
    let home = tempfile::tempdir().expect("home");
    let mut steps: Vec<Step> = vec![
        Turn::tool(
            "ToolSearch",
            json!({"query": "select:mcp__baton__pipeline_next_action"}),
        )
        .into(),
        Turn::tool("mcp__baton__pipeline_next_action", json!({"workspace": ws})).into(),
    ];
    for _ in 0..calls {
        steps.push(
            Turn::tool(
                "Bash",
                json!({"command": "git status --short", "description": "status"}),
            )
            .into(),
        );
    }
    // The stop guard blocks a bound session three times.
    for _ in 0..4 {
        steps.push(Turn::text("done").into());
    }
    let server = AnthropicServer::start(steps);
    let baton_dir = baton().parent().expect("bin folder").to_path_buf();
    let claude = ClaudeCode::new(repo.path(), home.path(), &server.base_url(), &[baton_dir]);
    let out = claude.prompt("measure");
    assert!(
        out.success(),
        "claude failed: {}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(server.errors().0.is_empty(), "{:?}", server.errors());
    let at = server.arrivals();
    // Request k+3 carries the result of Bash call k (0-based): the gap
    // before it is that call.
    (0..calls).map(|k| at[k + 3] - at[k + 2]).collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `baton hook pre-tool-use` run alone, `n` times.
fn hook_alone(repo: &Path, session: &str, n: usize) -> Vec<Duration> {
    let payload = json!({
        "session_id": session, "cwd": repo, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git status --short"}, "tool_use_id": "t",
    })
    .to_string();
    (0..n)
        .map(|_| {
            let started = Instant::now();
            let mut child = Command::new(baton())
                .args(["hook", "pre-tool-use"])
                .current_dir(repo)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("hook");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(payload.as_bytes())
                .expect("write");
            assert!(child.wait().expect("wait").success());
            started.elapsed()
        })
        .collect()
}

fn main() {
    let calls = env_usize("BATON_BENCH_CALLS", 30);
    let rounds = env_usize("BATON_BENCH_ROUNDS", 3);
    let none = project(Hooks::None);
    let noop = project(Hooks::Noop);
    let hooked = project(Hooks::Baton);
    let ws_none = start_run(none.path());
    let ws_noop = start_run(noop.path());
    let ws_hooked = start_run(hooked.path());
    let mut times: [Vec<Duration>; 4] = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let mut bound_alone: Vec<Duration> = Vec::new();
    for round in 0..rounds {
        // none; unbound (the run exists, but a session that never called a
        // baton tool is not bound: drop the binding after the bound round);
        // bound.
        times[0].extend(session(&none, &ws_none, calls));
        times[3].extend(session(&noop, &ws_noop, calls));
        let sessions = hooked.join(".baton/sessions");
        times[2].extend(session(&hooked, &ws_hooked, calls));
        if round + 1 == rounds {
            // The hook alone for the session just bound.
            let bound_session = std::fs::read_dir(&sessions).ok().and_then(|mut d| {
                d.find_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                    .into_iter()
                    .find(|n| n.ends_with(".json"))
            });
            if let Some(name) = bound_session {
                bound_alone = hook_alone(hooked.path(), name.trim_end_matches(".json"), 100);
            }
        }
        // Unbound: a session whose baton call names no run.
        let unbound = unbound_session(&hooked, calls);
        times[1].extend(unbound);
        eprintln!("round {}/{rounds} done", round + 1);
    }
    let names = [
        "no hooks",
        "baton's hooks, no run bound",
        "baton's hooks, run bound",
        "hooks running `true`",
    ];
    let mut p95 = [Duration::ZERO; 4];
    let mut p50 = [Duration::ZERO; 4];
    println!(
        "\nper Bash tool call through Claude Code 2.1.328 ({} calls per set-up):",
        calls * rounds
    );
    for (i, t) in times.iter_mut().enumerate() {
        t.sort();
        p50[i] = percentile(t, 0.5);
        p95[i] = percentile(t, 0.95);
        println!(
            "  {:<30} p50 {:>7.1} ms   p95 {:>7.1} ms   max {:>7.1} ms",
            names[i],
            ms(p50[i]),
            ms(p95[i]),
            ms(*t.last().unwrap_or(&Duration::ZERO))
        );
    }
    println!(
        "  the client's cost of running two hook commands per call (`true` minus none): p50 {:+.1} ms  p95 {:+.1} ms",
        ms(p50[3]) - ms(p50[0]),
        ms(p95[3]) - ms(p95[0])
    );
    for i in 1..3 {
        println!(
            "  baton's share, {:<28} (minus `true`): p50 {:>+6.1} ms   p95 {:>+6.1} ms",
            names[i],
            ms(p50[i]) - ms(p50[3]),
            ms(p95[i]) - ms(p95[3])
        );
    }
    let mut unbound = hook_alone(hooked.path(), "never-bound", 100);
    unbound.sort();
    println!(
        "\n`baton hook pre-tool-use` alone, no run bound: p50 {:.1} ms  p95 {:.1} ms",
        ms(percentile(&unbound, 0.5)),
        ms(percentile(&unbound, 0.95))
    );
    if !bound_alone.is_empty() {
        bound_alone.sort();
        println!(
            "`baton hook pre-tool-use` alone, run bound:    p50 {:.1} ms  p95 {:.1} ms",
            ms(percentile(&bound_alone, 0.5)),
            ms(percentile(&bound_alone, 0.95))
        );
    }
}

/// A hooked session whose baton call is a tool baton never binds from
/// (`pipeline_init` names no existing run), so no run is bound.
fn unbound_session(repo: &GitRepo, calls: usize) -> Vec<Duration> {
    let home = tempfile::tempdir().expect("home");
    let mut steps: Vec<Step> = vec![
        Turn::tool(
            "ToolSearch",
            json!({"query": "select:mcp__baton__pipeline_init"}),
        )
        .into(),
        Turn::tool(
            "mcp__baton__pipeline_init",
            json!({"arguments": "something else entirely"}),
        )
        .into(),
    ];
    for _ in 0..calls {
        steps.push(
            Turn::tool(
                "Bash",
                json!({"command": "git status --short", "description": "status"}),
            )
            .into(),
        );
    }
    steps.push(Turn::text("done").into());
    let server = AnthropicServer::start(steps);
    let baton_dir = baton().parent().expect("bin folder").to_path_buf();
    let claude = ClaudeCode::new(repo.path(), home.path(), &server.base_url(), &[baton_dir]);
    let out = claude.prompt("measure");
    assert!(
        out.success(),
        "claude failed: {}\n{}",
        out.stdout,
        out.stderr
    );
    let at = server.arrivals();
    (0..calls).map(|k| at[k + 3] - at[k + 2]).collect()
}
