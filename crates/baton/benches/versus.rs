//! baton side by side with the Go server behind seed 001 (`forge-state`)
//! and with a baton baseline (an earlier commit), through one client over
//! stdio, interleaved so a busy moment of a shared machine hits all alike.
//!
//! Per repetition and server, in a fresh real git repository (committed
//! files, one modified, one untracked): cold start (spawn → `initialize`
//! response), peak RSS after `initialize` + `tools/list`, then an effort-L
//! walk of seed 001's orchestrator loop — `pipeline_init`, the two
//! `pipeline_init_with_context` calls (the second, the confirmation,
//! creates the run; sent 50 ms after the first's reply, the person's
//! reading time, left out of the walk), then `pipeline_next_action` / `pipeline_report_result`
//! until `done`, writing each agent's artifact and answering each
//! checkpoint (`approve`/`proceed`/`done`, else its first option: Go by
//! `user_response`; baton by `baton answer` at a terminal, as the person
//! it asks, that time left out of the walk) — and the peak RSS after it. Every
//! server runs in its default configuration (baton: fsync on, transcript on).
//!
//! Then growth with history: repositories holding 0, 1,000 and 10,000 ended
//! past runs (committed, never seen by the server): the first session pays
//! whatever catch-up the server does; a second session in the same
//! repository shows the steady state.
//!
//! Run it with `./scripts/bench-versus` (builds the release binary, the
//! baseline and checks the Go binary), or by hand:
//!
//! ```text
//! BATON_BENCH_BIN=target/release/baton \
//! BATON_BASELINE_BIN=/path/to/old/baton \
//! FORGE_STATE_BIN=/path/to/forge-state FORGE_AGENTS_PATH=/path/to/agents \
//! cargo bench -p baton --bench versus
//! ```
//!
//! `BATON_VERSUS_REPS` (default 30) and `BATON_VERSUS_GROWTH` (default
//! `0,1000`; `0,1000,10000` adds the largest history, several minutes
//! more; `none` skips it) size the run. Without `FORGE_STATE_BIN` the Go column is
//! skipped with a message; nothing of the Go server is part of the project
//! (docs/performance.md says how it was built).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

#[path = "support/person.rs"]
mod person;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Baton,
    Go,
}

#[derive(Clone)]
struct Candidate {
    label: String,
    kind: Kind,
    bin: PathBuf,
}

fn candidates() -> Vec<Candidate> {
    let mut out = vec![Candidate {
        label: "baton".into(),
        kind: Kind::Baton,
        bin: std::env::var_os("BATON_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_baton"))),
    }];
    match std::env::var_os("BATON_BASELINE_BIN").map(PathBuf::from) {
        Some(bin) if bin.is_file() => out.push(Candidate {
            label: "baseline".into(),
            kind: Kind::Baton,
            bin,
        }),
        Some(bin) => println!(
            "BATON_BASELINE_BIN={} is not a file: the baseline column is skipped",
            bin.display()
        ),
        None => println!("BATON_BASELINE_BIN is not set: the baseline column is skipped"),
    }
    match std::env::var_os("FORGE_STATE_BIN").map(PathBuf::from) {
        Some(bin) if bin.is_file() => out.push(Candidate {
            label: "go".into(),
            kind: Kind::Go,
            bin,
        }),
        Some(bin) => println!(
            "FORGE_STATE_BIN={} is not a file: the Go column is skipped",
            bin.display()
        ),
        None => println!(
            "FORGE_STATE_BIN is not set: the Go column is skipped (build it with /work/shared/tools/go-reference/build.sh or see docs/performance.md)"
        ),
    }
    out
}

/// A server over stdio, baton or Go, spoken to the same way.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(c: &Candidate, repo: &Path, scratch: &Path) -> Server {
        let mut cmd = Command::new(&c.bin);
        cmd.current_dir(repo);
        match c.kind {
            Kind::Baton => {
                cmd.arg("serve");
                for var in [
                    "BATON_TOOLS",
                    "BATON_FSYNC",
                    "BATON_TRANSCRIPT",
                    "MALLOC_ARENA_MAX",
                ] {
                    cmd.env_remove(var);
                }
            }
            Kind::Go => {
                let agents = std::env::var_os("FORGE_AGENTS_PATH")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| c.bin.parent().unwrap().join("agents"));
                let home = scratch.join("home");
                std::fs::create_dir_all(&home).unwrap();
                cmd.env("FORGE_SPECS_DIR", repo.join(".specs"))
                    .env("FORGE_AGENTS_PATH", agents)
                    .env("FORGE_EVENTS_LOG", scratch.join("events.jsonl"))
                    .env("HOME", home);
            }
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", c.bin.display()));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    /// Sends a request; returns the response and the round trip in ms,
    /// from before the request is written to when the response's line has
    /// arrived (the client's own JSON work is not counted).
    fn request(&mut self, method: &str, params: Value) -> (Value, f64) {
        let id = self.next_id;
        self.next_id += 1;
        let msg = format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        );
        let mut line = String::new();
        let started = Instant::now();
        self.stdin.write_all(msg.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            let arrived = ms(started);
            assert!(n > 0, "the server closed its output during {method}");
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["id"] == id {
                return (v, arrived);
            }
        }
    }

    fn initialize(&mut self) {
        let (r, _) = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "versus", "version": "0"}}),
        );
        assert!(r["result"]["serverInfo"]["name"].is_string(), "{r}");
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
    }

    /// A tool call's structured result (or its text parsed as JSON),
    /// whether it is an error, and its round trip (ms).
    fn call(&mut self, tool: &str, args: Value) -> (Value, bool, f64) {
        let (r, rtt) = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &r["result"];
        let is_error = result["isError"] == true || r.get("error").is_some();
        let body = match result.get("structuredContent") {
            Some(v) if !v.is_null() => v.clone(),
            _ => result["content"][0]["text"]
                .as_str()
                .and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_else(|| r.clone()),
        };
        (body, is_error, rtt)
    }

    fn kib(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
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

/// What one session measured (milliseconds, KiB).
#[derive(Default, Clone)]
struct Session {
    cold_ms: f64,
    rss_start_kib: u64,
    confirm_ms: f64,
    next_ms: Vec<f64>,
    report_ms: Vec<f64>,
    walk_ms: f64,
    rss_walk_kib: u64,
}

const TASKS: &str = "# Tasks\n\n## Task 1: Core\nmode: sequential\n\n## Task 2: API\nmode: parallel\ndepends_on: [1]\n\n## Task 3: CLI\nmode: parallel\ndepends_on: [1]\n";

fn artifact(name: &str) -> String {
    match name {
        "tasks.md" => TASKS.to_string(),
        "review-design.md" | "review-tasks.md" => {
            "# Review\n\n## Verdict: APPROVE\n\n**1. [MINOR] Naming of the session store**\n".into()
        }
        o if o.starts_with("review-") => "# Review\n\n## Verdict: PASS\n".into(),
        "summary.md" => "# Summary\n\n## Improvement Report\n\n### AI Agent Support\n- The test command was hard to find\n".into(),
        _ => "# Artifact\n\n## Section\n\ntext\n".into(),
    }
}

/// A fresh repository: committed sources, one modified file, one untracked.
fn git_repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for i in 0..20 {
        std::fs::write(
            dir.join(format!("src/m{i}.rs")),
            format!("pub fn f{i}() {{}}\n"),
        )
        .unwrap();
    }
    std::fs::write(dir.join(".gitignore"), "target/\n").unwrap();
    git(dir, &["init", "-q"]);
    // The Go server commits parallel tasks itself: it needs an identity.
    git(dir, &["config", "user.name", "bench"]);
    git(dir, &["config", "user.email", "bench@example.invalid"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
    std::fs::write(dir.join("src/m0.rs"), "pub fn f0() { /* edited */ }\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "untracked\n").unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// How long the bench's person takes to confirm the effort the question
/// showed them — for every server alike, left out of the walk. A person
/// takes seconds; a confirmation sent the instant the question's reply
/// arrived would be no session's.
const PERSON_CONFIRMS: std::time::Duration = std::time::Duration::from_millis(50);

/// One session: start, `tools/list`, an effort-L walk, stop.
fn session(c: &Candidate, repo: &Path, scratch: &Path, text: &str) -> Session {
    let mut out = Session::default();
    let started = Instant::now();
    let mut s = Server::spawn(c, repo, scratch);
    s.initialize();
    out.cold_ms = ms(started);
    s.request("tools/list", json!({}));
    out.rss_start_kib = s.kib("VmHWM:");
    let walk = Instant::now();
    let mut person_ms = 0.0;
    let (init, e, _) = s.call(
        "pipeline_init",
        json!({"arguments": format!("{text} --nopr --auto")}),
    );
    assert!(!e, "{} pipeline_init: {init}", c.label);
    let (_ask, e, _) = s.call(
        "pipeline_init_with_context",
        json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"]}),
    );
    assert!(!e, "{}", c.label);
    // The person reads the question and confirms: never at once (seconds
    // in a real session). Left out of the walk, as the checkpoints' answers.
    let reading = Instant::now();
    std::thread::sleep(PERSON_CONFIRMS);
    person_ms += ms(reading);
    let (created, e, rtt) = s.call(
        "pipeline_init_with_context",
        json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
               "user_confirmation": {"effort": "L", "use_current_branch": true}}),
    );
    out.confirm_ms = rtt;
    assert!(!e && created["ready"] == true, "{}: {created}", c.label);
    let ws = created["workspace"].as_str().unwrap().to_string();
    let dir = if Path::new(&ws).is_absolute() {
        PathBuf::from(&ws)
    } else {
        repo.join(&ws)
    };
    let mut answer: Option<String> = None;
    for step in 0.. {
        assert!(step < 300, "{}: the walk does not end", c.label);
        let mut args = json!({"workspace": ws});
        if let Some(a) = answer.take() {
            args["user_response"] = json!(a);
        }
        let (action, e, rtt) = s.call("pipeline_next_action", args);
        out.next_ms.push(rtt);
        assert!(!e, "{} pipeline_next_action: {action}", c.label);
        let kind = action["type"].as_str().unwrap_or("").to_string();
        match kind.as_str() {
            "done" => break,
            "checkpoint" | "human_gate" => {
                let pick = person::pick(&action["options"]);
                match c.kind {
                    // baton takes a checkpoint's answer from the person
                    // only (docs/pipeline.md): the bench answers as one,
                    // with `baton answer` at a terminal. The person's time
                    // is not the server's: it is left out of the walk.
                    Kind::Baton => {
                        let t = Instant::now();
                        person::answer_at_terminal(&c.bin, repo, &ws, pick);
                        person_ms += ms(t);
                    }
                    Kind::Go => answer = Some(pick.to_string()),
                }
                continue;
            }
            "spawn_agent" => {
                let outputs: Vec<String> = match action["parallel_tasks"].as_array() {
                    Some(tasks) if !tasks.is_empty() => tasks
                        .iter()
                        .filter_map(|t| t["output_file"].as_str().map(str::to_string))
                        .collect(),
                    _ => action["output_file"]
                        .as_str()
                        .map(|o| vec![o.to_string()])
                        .unwrap_or_default(),
                };
                for o in outputs {
                    std::fs::write(dir.join(&o), artifact(&o)).unwrap();
                }
            }
            "write_file" => {
                let path = action["path"].as_str().unwrap();
                let path = if Path::new(path).is_absolute() {
                    PathBuf::from(path)
                } else {
                    repo.join(path)
                };
                std::fs::write(path, action["content"].as_str().unwrap_or("")).unwrap();
            }
            "exec" => {}
            other => panic!("{}: unexpected action {other}: {action}", c.label),
        }
        let mut report = json!({"workspace": ws, "phase": action["phase"], "tokens_used": 1000, "duration_ms": 1});
        if let Some(id) = action.get("action_id").filter(|v| v.is_string()) {
            report["action_id"] = id.clone();
        }
        if kind == "exec" && c.kind == Kind::Baton {
            report["exit_code"] = json!(0);
        }
        let (r, e, rtt) = s.call("pipeline_report_result", report);
        out.report_ms.push(rtt);
        assert!(!e, "{} pipeline_report_result after {kind}: {r}", c.label);
    }
    out.walk_ms = ms(walk) - person_ms;
    out.rss_walk_kib = s.kib("VmHWM:");
    s.stop();
    out
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return f64::NAN;
    }
    s[((s.len() as f64 - 1.0) * p).round() as usize]
}

struct Row {
    what: &'static str,
    unit: &'static str,
    /// Per candidate: the samples.
    samples: Vec<Vec<f64>>,
}

fn print_rows(cands: &[Candidate], rows: &[Row]) {
    print!("{:<44}", "what (p50 / p95)");
    for c in cands {
        print!(" {:>22}", c.label);
    }
    let go = cands.iter().position(|c| c.kind == Kind::Go);
    let base = cands.iter().position(|c| c.label == "baseline");
    if go.is_some() {
        print!(" {:>14}", "baton/go");
    }
    if base.is_some() {
        print!(" {:>16}", "baton/baseline");
    }
    println!();
    for row in rows {
        print!("{:<44}", format!("{} ({})", row.what, row.unit));
        for s in &row.samples {
            print!(
                " {:>22}",
                format!("{:.3} / {:.3}", percentile(s, 0.5), percentile(s, 0.95))
            );
        }
        let ratio = |k: usize| percentile(&row.samples[0], 0.5) / percentile(&row.samples[k], 0.5);
        if let Some(g) = go {
            print!(" {:>14}", format!("{:.2}x", ratio(g)));
        }
        if let Some(b) = base {
            print!(" {:>16}", format!("{:.2}x", ratio(b)));
        }
        println!();
    }
}

fn machine() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{cpus} cores, load average {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

fn main() {
    let cands = candidates();
    let reps: usize = std::env::var("BATON_VERSUS_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let root = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    println!("machine: {} (at the start)", machine());
    for c in &cands {
        println!("{:<9} {}", c.label, c.bin.display());
    }
    let mut sessions: Vec<Vec<Session>> = vec![Vec::new(); cands.len()];
    for rep in 0..reps {
        // Rotate the order so no server always runs first.
        for k in 0..cands.len() {
            let i = (rep + k) % cands.len();
            let scratch = root.path().join(format!("walk-{rep}-{i}"));
            let repo = scratch.join("repo");
            git_repo(&repo);
            let s = session(
                &cands[i],
                &repo,
                &scratch,
                &format!("rewrite the session store token cache {rep}"),
            );
            sessions[i].push(s);
            let _ = std::fs::remove_dir_all(&scratch);
        }
    }
    println!(
        "\neffort-L walk, {reps} interleaved repetitions; machine at the end: {}",
        machine()
    );
    let collect = |f: &dyn Fn(&Session) -> Vec<f64>| -> Vec<Vec<f64>> {
        sessions
            .iter()
            .map(|ss| ss.iter().flat_map(f).collect())
            .collect()
    };
    let walk_calls: Vec<String> = sessions
        .iter()
        .map(|ss| {
            ss.first()
                .map(|s| format!("{}+{}", s.next_ms.len(), s.report_ms.len()))
                .unwrap_or_default()
        })
        .collect();
    println!(
        "calls per walk (next_action+report_result): {}",
        cands
            .iter()
            .zip(&walk_calls)
            .map(|(c, n)| format!("{} {n}", c.label))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let rows = vec![
        Row {
            what: "pipeline_next_action, round trip",
            unit: "ms",
            samples: collect(&|s| s.next_ms.clone()),
        },
        Row {
            what: "pipeline_report_result, round trip",
            unit: "ms",
            samples: collect(&|s| s.report_ms.clone()),
        },
        Row {
            what: "confirmation call, round trip",
            unit: "ms",
            samples: collect(&|s| vec![s.confirm_ms]),
        },
        Row {
            what: "walk wall time (init to done)",
            unit: "ms",
            samples: collect(&|s| vec![s.walk_ms]),
        },
        Row {
            what: "cold start (spawn -> initialize)",
            unit: "ms",
            samples: collect(&|s| vec![s.cold_ms]),
        },
        Row {
            what: "peak RSS after initialize + tools/list",
            unit: "MB",
            samples: collect(&|s| vec![s.rss_start_kib as f64 * 1024.0 / 1e6]),
        },
        Row {
            what: "peak RSS after the walk",
            unit: "MB",
            samples: collect(&|s| vec![s.rss_walk_kib as f64 * 1024.0 / 1e6]),
        },
    ];
    print_rows(&cands, &rows);
    growth(&cands, root.path());
}

/// Growth with history: 0 / 1,000 / 10,000 ended past runs, committed,
/// never seen by the server. First session (any catch-up) and second.
fn growth(cands: &[Candidate], root: &Path) {
    let sizes: Vec<usize> = match std::env::var("BATON_VERSUS_GROWTH") {
        Ok(v) if v == "none" => return,
        Ok(v) => v.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        // 10,000 past runs take minutes per server on 2 cores (writing and
        // committing them, each first session's catch-up): asked for by
        // name, so the default run stays within ten minutes.
        Err(_) => vec![0, 1000],
    };
    let reps: usize = std::env::var("BATON_VERSUS_GROWTH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    println!("\ngrowth with past runs ({reps} interleaved repetitions each)");
    for n in sizes {
        let template = root.join(format!("template-{n}"));
        git_repo(&template);
        if n > 0 {
            let t = Instant::now();
            baton_testkit::history::write_past_runs(&template.join(".specs"), n);
            git(&template, &["add", "-A", ".specs"]);
            git(&template, &["commit", "-q", "-m", "past runs"]);
            println!(
                "{n} past runs written and committed in {:.1} s",
                t.elapsed().as_secs_f64()
            );
        }
        let mut first: Vec<Vec<Session>> = vec![Vec::new(); cands.len()];
        let mut second: Vec<Vec<Session>> = vec![Vec::new(); cands.len()];
        for rep in 0..reps {
            for k in 0..cands.len() {
                let i = (rep + k) % cands.len();
                let scratch = root.join(format!("growth-{n}-{rep}-{i}"));
                std::fs::create_dir_all(&scratch).unwrap();
                let repo = scratch.join("repo");
                let ok = Command::new("cp")
                    .arg("-a")
                    .arg(&template)
                    .arg(&repo)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "copy the template");
                let text = format!("rewrite the session store token cache {rep}");
                first[i].push(session(&cands[i], &repo, &scratch, &text));
                second[i].push(session(
                    &cands[i],
                    &repo,
                    &scratch,
                    &format!("{text} again"),
                ));
                let _ = std::fs::remove_dir_all(&scratch);
            }
        }
        println!("-- {n} past runs (machine: {})", machine());
        let pick = |ss: &[Vec<Session>], f: &dyn Fn(&Session) -> Vec<f64>| -> Vec<Vec<f64>> {
            ss.iter().map(|s| s.iter().flat_map(f).collect()).collect()
        };
        let rows = vec![
            Row {
                what: "first session: cold start",
                unit: "ms",
                samples: pick(&first, &|s| vec![s.cold_ms]),
            },
            Row {
                what: "first session: walk wall time",
                unit: "ms",
                samples: pick(&first, &|s| vec![s.walk_ms]),
            },
            Row {
                what: "first session: peak RSS after the walk",
                unit: "MB",
                samples: pick(&first, &|s| vec![s.rss_walk_kib as f64 * 1024.0 / 1e6]),
            },
            Row {
                what: "second session: cold start",
                unit: "ms",
                samples: pick(&second, &|s| vec![s.cold_ms]),
            },
            Row {
                what: "second session: pipeline_next_action",
                unit: "ms",
                samples: pick(&second, &|s| s.next_ms.clone()),
            },
            Row {
                what: "second session: walk wall time",
                unit: "ms",
                samples: pick(&second, &|s| vec![s.walk_ms]),
            },
            Row {
                what: "second session: peak RSS after the walk",
                unit: "MB",
                samples: pick(&second, &|s| vec![s.rss_walk_kib as f64 * 1024.0 / 1e6]),
            },
        ];
        print_rows(cands, &rows);
        let _ = std::fs::remove_dir_all(&template);
    }
}
