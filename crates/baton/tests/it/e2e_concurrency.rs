//! Several `baton serve` processes (two agent sessions and more) hammering one
//! workspace lose no update and never deadlock; SIGKILL in the middle of
//! writes never leaves a state.json that fails to parse or goes backwards.

use crate::common;

use std::time::Duration;

use crate::common::{Repo, spawn};
use serde_json::{Value, json};

/// A workflow for racing the recovery tools: work phases with artifacts,
/// checkpoints the agent may answer, and a command step without evidence
/// (the one kind of phase a tool may skip).
const RACE: &str = "id: race\nlabel: Race\nanswered_by: agent\nphases:\n  - {id: a1, label: A1, kind: agent, artifacts: [a1.md]}\n  - {id: a2, label: A2, kind: agent, artifacts: [a2.md]}\n  - {id: cp1, label: CP1, kind: checkpoint}\n  - {id: a3, label: A3, kind: agent, artifacts: [a3.md]}\n  - {id: step, label: Step, kind: command, commands: {fixed: [[\"true\"]]}}\n  - {id: a4, label: A4, kind: agent, artifacts: [a4.md]}\n  - {id: a5, label: A5, kind: agent, artifacts: [a5.md]}\n  - {id: cp2, label: CP2, kind: checkpoint}\n  - {id: a6, label: A6, kind: agent, artifacts: [a6.md]}\n";

/// One racing agent: repeatedly reads the state and tries the call that moves
/// it forward. Returns the successful calls as (tool, phase).
async fn race(
    client: common::Client,
    dir: std::path::PathBuf,
    ws: String,
) -> Vec<(String, String)> {
    let mut wins = Vec::new();
    for _ in 0..400 {
        let info = client
            .ok("state_resume_info", json!({"workspace": ws}))
            .await;
        let phase = info["currentPhase"].as_str().unwrap().to_string();
        let status = info["currentPhaseStatus"].as_str().unwrap().to_string();
        if phase == "completed" {
            break;
        }
        let args = json!({"workspace": ws, "phase": phase, "force": true, "reason": "race"});
        let tool = match (phase.as_str(), status.as_str()) {
            ("cp1" | "cp2", "pending") => "checkpoint",
            ("step", _) => "skip_phase",
            (_, "pending") => "phase_start",
            (_, "in_progress" | "awaiting_human") => "phase_complete",
            _ => continue,
        };
        if tool == "phase_complete" && phase.starts_with('a') {
            // The work of the visit: its artifact, written after the start
            // (atomically: another racer may be checking it right now).
            let tmp = dir.join(format!(".{phase}.{}.tmp", std::process::id()));
            let tmp = tmp.with_extension(format!("{}.tmp", rand_suffix()));
            std::fs::write(&tmp, format!("# {phase}\n")).unwrap();
            std::fs::rename(&tmp, dir.join(format!("{phase}.md"))).unwrap();
        }
        match client.call(tool, args).await {
            Ok(_) => wins.push((tool.to_string(), phase)),
            Err(e) => assert_eq!(e["code"], "invalid_state", "only lost races may fail: {e}"),
        }
    }
    client.close().await;
    wins
}

/// A name part no other racer uses at the same moment.
fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_processes_lose_no_update() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path().join(".baton/workflows")).unwrap();
    std::fs::write(repo.path().join(".baton/workflows/race.yaml"), RACE).unwrap();
    let setup = spawn(repo.path(), &[], &[]).await;
    let ws = setup
        .ok(
            "init",
            json!({"spec_name": "race", "workflow": "race", "workspace": "20260101-race"}),
        )
        .await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    setup.close().await;
    let mut racers = Vec::new();
    for _ in 0..4 {
        let client = spawn(repo.path(), &["--no-transcript"], &[]).await;
        racers.push(tokio::spawn(race(client, repo.ws_dir(&ws), ws.clone())));
    }
    let mut wins = Vec::new();
    for r in racers {
        let got = tokio::time::timeout(Duration::from_secs(120), r)
            .await
            .expect("racers must not deadlock")
            .unwrap();
        wins.extend(got);
    }
    let state = repo.state(&ws);
    assert_eq!(state["currentPhase"], "completed");
    // Exactly one winner per transition, and the history holds each once.
    let count = |tool: &str| wins.iter().filter(|(t, _)| t == tool).count();
    let history = state["history"].as_array().unwrap();
    let hcount = |action: &str| history.iter().filter(|h| h["action"] == action).count();
    assert_eq!(count("phase_start"), 6, "{wins:?}");
    assert_eq!(count("checkpoint"), 2);
    assert_eq!(count("phase_complete"), 8);
    assert_eq!(count("skip_phase"), 1);
    assert_eq!(hcount("start"), 6);
    assert_eq!(hcount("complete"), 8);
    assert_eq!(hcount("checkpoint"), 2);
    let mut phases: Vec<&String> = wins
        .iter()
        .filter(|(t, _)| t == "phase_complete")
        .map(|(_, p)| p)
        .collect();
    phases.dedup();
    assert_eq!(phases.len(), 8, "no phase completed twice");
    // Every racer saw the same final document.
    let events = repo.events();
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "phase-complete")
            .count(),
        8
    );
}

/// state.json as it is now (a kill never leaves it unparsable; a read
/// racing a rename sees the old or the new file).
fn read_state(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).expect("state.json");
    serde_json::from_str(&text).expect("state.json parses")
}

fn history_len(v: &Value) -> usize {
    v["history"].as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_writes_never_corrupts_or_rewinds_state() {
    let repo = Repo::new();
    let setup = spawn(repo.path(), &[], &[]).await;
    let ws = setup
        .ok(
            "init",
            json!({"spec_name": "crash", "workspace": "20260101-crash"}),
        )
        .await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    setup.close().await;
    let state_file = repo.ws_dir(&ws).join("state.json");
    let mut last = history_len(&repo.state(&ws));
    for round in 0..25u64 {
        let client = spawn(repo.path(), &["--no-transcript"], &[]).await;
        let pid = client.pid.expect("pid");
        // Fire fail/start cycles on phase-1 back to back while the kill lands.
        let hammer = tokio::spawn(async move {
            let args = json!({"workspace": "20260101-crash", "phase": "phase-1", "force": true, "reason": "crash test"});
            for _ in 0..1000 {
                let _ = client.call("phase_start", args.clone()).await;
                let _ = client
                    .call(
                        "phase_fail",
                        json!({"workspace": "20260101-crash", "phase": "phase-1", "message": "x", "force": true, "reason": "crash test"}),
                    )
                    .await;
            }
        });
        // Kill while writes are under way: wait until this server has
        // written at least once (a loaded machine starts it slowly), then
        // land the kill a varying moment later.
        let started = std::time::Instant::now();
        while history_len(&read_state(&state_file)) <= last
            && started.elapsed() < Duration::from_secs(30)
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(5 + (round * 7) % 40)).await;
        let status = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let _ = tokio::time::timeout(Duration::from_secs(10), hammer).await;
        let text = std::fs::read_to_string(&state_file).unwrap();
        let doc: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("round {round}: state.json does not parse: {e}"));
        let len = history_len(&doc);
        assert!(
            len >= last,
            "round {round}: history went backwards ({len} < {last})"
        );
        last = len;
    }
    assert!(last > 10, "the hammer must have written something ({last})");
    // No stray temp files accumulate beyond those of killed writes, and they never replace state.json.
    let c = spawn(repo.path(), &[], &[]).await;
    let info = c.ok("state_resume_info", json!({"workspace": ws})).await;
    assert_eq!(info["currentPhase"], "phase-1");
    c.close().await;
}

/// The stdio server runs a quick call (`pipeline_next_action`) on its
/// protocol thread when it is the only call — but never waits there for a
/// lock another process holds: such a call goes to the blocking pool, and
/// a call on another run sent after it answers while it waits. Without
/// that, the second call would wait out the first one's lock (60 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_call_waiting_for_a_lock_never_holds_up_the_next_call() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[("BATON_LOCK_TIMEOUT_MS", "60000")]).await;
    let mut runs = Vec::new();
    for name in ["held", "free"] {
        let ws = c.ok("init", json!({"spec_name": name})).await["workspace"]
            .as_str()
            .unwrap()
            .to_string();
        runs.push(ws);
    }
    let (held, free) = (&runs[0], &runs[1]);
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(repo.ws_dir(held).join(".state.lock"))
        .unwrap();
    holder.lock().unwrap();
    {
        let held_call = c.call("pipeline_next_action", json!({"workspace": held}));
        tokio::pin!(held_call);
        let free_answer = tokio::select! {
            biased;
            early = &mut held_call => panic!("the held run's call answered while its lock was held: {early:?}"),
            answer = c.call("pipeline_next_action", json!({"workspace": free})) => answer,
        };
        let free_action = free_answer.expect("the free run's next action");
        assert_eq!(free_action["type"], "spawn_agent", "{free_action}");
        // Released: the held call goes on and answers (waited, not refused).
        drop(holder);
        let held_action = held_call.await.expect("the held run's next action");
        assert_eq!(held_action["type"], "spawn_agent", "{held_action}");
    }
    c.close().await;
}

/// A quick call that must read the repository (the run's commit runs `git
/// status`) never does it on the protocol thread: it goes to the blocking
/// pool, so another call sent meanwhile answers while git runs. Here git
/// is a wrapper that waits while a flag file exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_call_that_reads_the_repository_never_holds_up_the_next_call() {
    use crate::common::pipeline::{Script, create, drive_until, git_repo, perform};
    let repo = git_repo();
    std::fs::write(repo.path().join("README.md"), "x\n").unwrap();
    for args in [&["add", "."][..], &["commit", "-qm", "init"]] {
        assert!(
            std::process::Command::new("git")
                .args(args)
                .current_dir(repo.path())
                .status()
                .unwrap()
                .success()
        );
    }
    let real_git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let bin = tempfile::tempdir().unwrap();
    let flag = bin.path().join("git-waits");
    let wrapper = bin.path().join("git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nwhile [ -e '{}' ]; do sleep 0.01; done\nexec '{real_git}' \"$@\"\n",
            flag.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let c = spawn(repo.path(), &[], &[("PATH", &path)]).await;
    let ws = create(&c, "add a health endpoint", "S", "--nopr").await;
    let mut script = Script::default();
    let last = drive_until(&c, &repo, &ws, &mut script, |a| {
        a["type"] == "spawn_agent" && a["phase"] == "final-summary"
    })
    .await;
    let args = perform(
        repo.path(),
        &ws,
        &last,
        &mut script,
        &mut std::collections::VecDeque::new(),
    );
    std::fs::write(&flag, "").unwrap();
    {
        let commit = c.call("pipeline_next_action", args);
        tokio::pin!(commit);
        let other = tokio::select! {
            biased;
            early = &mut commit => panic!("the commit's call answered while git waited: {early:?}"),
            answer = c.call("state_resume_info", json!({"workspace": ws})) => answer,
        };
        other.expect("another call answers while git runs");
        std::fs::remove_file(&flag).unwrap();
        let action = commit.await.expect("the commit's action");
        assert_eq!(action["phase"], "final-commit", "{action}");
        assert_eq!(action["type"], "exec", "{action}");
    }
    c.close().await;
}
