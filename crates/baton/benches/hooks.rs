//! What baton's hooks add to each tool call of the real Claude Code CLI
//! (`tests/clients`, 2.1.328), measured through the CLI itself: sessions
//! driven by the scripted model server make the same tool calls (`Bash`
//! `git status --short`: a PreToolUse and a PostToolUse hook each) in three
//! set-ups, interleaved round by round on this machine —
//!
//! * **none**: `baton init`'s settings without its hooks (the Bash
//!   sandbox and permissions stay in every set-up, so the differences are
//!   the hooks' alone);
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
//! `BATON_BENCH_BEFORE=<another baton binary>` adds that binary's hooks as
//! one more set-up (**before**: bound, interleaved with the others) and
//! times its `baton hook pre-tool-use` alone interleaved call by call with
//! this one's, so a change is compared on the same machine under the same
//! load.
//!
//! `cargo bench -p baton --bench hooks` (release build; `BATON_BENCH_CALLS`,
//! `BATON_BENCH_ROUNDS` and `BATON_BENCH_ALONE` change the size; under three
//! minutes with the defaults). Not run in CI.

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
        // The same settings without the hooks: the sandbox and the
        // permissions `baton init` writes stay in every set-up, so the
        // differences are the hooks' alone.
        Hooks::None => {
            let text =
                std::fs::read_to_string(repo.join(".claude/settings.json")).expect("settings");
            let mut settings: Value = serde_json::from_str(&text).expect("settings json");
            if let Some(map) = settings.as_object_mut() {
                map.remove("hooks");
            }
            std::fs::write(
                repo.join(".claude/settings.json"),
                serde_json::to_string_pretty(&settings).expect("json") + "\n",
            )
            .expect("settings")
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
/// then stop, with `baton` found in `bin`. Returns the time of each Bash
/// call.
fn session(repo: &GitRepo, ws: &str, calls: usize, bin: &Path) -> Vec<Duration> {
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
    let claude = ClaudeCode::new(
        repo.path(),
        home.path(),
        &server.base_url(),
        &[bin.to_path_buf()],
    );
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

/// `baton hook pre-tool-use` of `binary` run alone once.
fn hook_once(binary: &Path, repo: &Path, session: &str) -> Duration {
    let payload = json!({
        "session_id": session, "cwd": repo, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git status --short"}, "tool_use_id": "t",
    })
    .to_string();
    let started = Instant::now();
    let mut child = Command::new(binary)
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
}

/// A folder holding `baton` (a link to `binary`), for a client's `PATH`.
fn bin_folder(binary: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("bin folder");
    std::os::unix::fs::symlink(binary, dir.path().join("baton")).expect("link");
    dir
}

/// The name of the session file in `repo` (the one session bound there).
fn bound_session(repo: &GitRepo) -> Option<String> {
    std::fs::read_dir(repo.join(".baton/sessions"))
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".json"))
        .map(|n| n.trim_end_matches(".json").to_string())
}

fn report(name: &str, times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    let (p50, p95) = (percentile(times, 0.5), percentile(times, 0.95));
    println!(
        "  {:<40} p50 {:>7.1} ms   p95 {:>7.1} ms   max {:>7.1} ms",
        name,
        ms(p50),
        ms(p95),
        ms(*times.last().unwrap_or(&Duration::ZERO))
    );
    (p50, p95)
}

fn main() {
    let calls = env_usize("BATON_BENCH_CALLS", 30);
    let rounds = env_usize("BATON_BENCH_ROUNDS", 3);
    let alone = env_usize("BATON_BENCH_ALONE", 200);
    let before = std::env::var_os("BATON_BENCH_BEFORE").map(PathBuf::from);
    let this_bin = bin_folder(&baton());
    let before_bin = before.as_deref().map(bin_folder);
    let none = project(Hooks::None);
    let noop = project(Hooks::Noop);
    let hooked = project(Hooks::Baton);
    let hooked_before = project(Hooks::Baton);
    let ws_none = start_run(none.path());
    let ws_noop = start_run(noop.path());
    let ws_hooked = start_run(hooked.path());
    let ws_before = start_run(hooked_before.path());
    let mut names = vec![
        "no hooks",
        "baton's hooks, no run bound",
        "baton's hooks, run bound",
        "hooks running `true`",
    ];
    if before_bin.is_some() {
        names.push("BEFORE: baton's hooks, run bound");
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    for round in 0..rounds {
        times[0].extend(session(&none, &ws_none, calls, this_bin.path()));
        times[3].extend(session(&noop, &ws_noop, calls, this_bin.path()));
        times[2].extend(session(&hooked, &ws_hooked, calls, this_bin.path()));
        if let Some(dir) = &before_bin {
            times[4].extend(session(&hooked_before, &ws_before, calls, dir.path()));
        }
        // Unbound: a session whose baton call names no run.
        times[1].extend(unbound_session(&hooked, calls, this_bin.path()));
        eprintln!("round {}/{rounds} done", round + 1);
    }
    println!(
        "\nper Bash tool call through Claude Code 2.1.328 ({} calls per set-up):",
        calls * rounds
    );
    let mut p50 = Vec::new();
    let mut p95 = Vec::new();
    for (name, t) in names.iter().zip(times.iter_mut()) {
        let (a, b) = report(name, t);
        p50.push(a);
        p95.push(b);
    }
    println!(
        "  the client's cost of running two hook commands per call (`true` minus none): p50 {:+.1} ms  p95 {:+.1} ms",
        ms(p50[3]) - ms(p50[0]),
        ms(p95[3]) - ms(p95[0])
    );
    for i in [1, 2, 4].into_iter().filter(|&i| i < names.len()) {
        println!(
            "  hooks' share, {:<34} (minus `true`): p50 {:>+6.1} ms   p95 {:>+6.1} ms",
            names[i],
            ms(p50[i]) - ms(p50[3]),
            ms(p95[i]) - ms(p95[3])
        );
    }

    // `baton hook pre-tool-use` alone, interleaved call by call.
    let bound = bound_session(&hooked).expect("a session bound by the rounds");
    let mut unbound = Vec::new();
    let mut bound_now = Vec::new();
    let mut bound_before = Vec::new();
    let mut unbound_before = Vec::new();
    let before_session = bound_session(&hooked_before);
    for _ in 0..alone {
        unbound.push(hook_once(&baton(), hooked.path(), "never-bound"));
        bound_now.push(hook_once(&baton(), hooked.path(), &bound));
        if let (Some(old), Some(session)) = (&before, &before_session) {
            unbound_before.push(hook_once(old, hooked_before.path(), "never-bound"));
            bound_before.push(hook_once(old, hooked_before.path(), session));
        }
    }
    println!("\n`baton hook pre-tool-use` alone ({alone} runs each, interleaved):");
    report("no run bound", &mut unbound);
    report("run bound (phase-1, strict shell rules)", &mut bound_now);
    if !bound_before.is_empty() {
        report("BEFORE: no run bound", &mut unbound_before);
        report("BEFORE: run bound", &mut bound_before);
    }
}

/// A hooked session whose baton call is a tool baton never binds from
/// (`pipeline_init` names no existing run), so no run is bound.
fn unbound_session(repo: &GitRepo, calls: usize, bin: &Path) -> Vec<Duration> {
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
    let claude = ClaudeCode::new(
        repo.path(),
        home.path(),
        &server.base_url(),
        &[bin.to_path_buf()],
    );
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
