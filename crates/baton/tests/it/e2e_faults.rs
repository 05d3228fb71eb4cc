//! Nothing lost under faults: the checks of the attack campaign, as tests.
//!
//! * a kill between the writes of every multi-file step, then the step sent
//!   again: nothing lost (`BATON_CRASH_AFTER_WRITES=N` aborts the server
//!   right after its N-th atomic write);
//! * a report sent twice (a lost reply) is applied once, for every action
//!   type; a late report for another action is refused;
//! * symbolic links and FIFOs in the repository never lead a write elsewhere
//!   or hang a call;
//! * a lock held by another process costs a bounded wait, and other
//!   workspaces keep answering;
//! * 10,000 transitions keep state.json small and every call working;
//! * racing starts of one issue create one run;
//! * broken states give the right codes.

use crate::common;

use std::collections::VecDeque;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::pipeline::{Script, create, drive, drive_until, git_repo, perform};
use crate::common::{Repo, spawn};
use serde_json::{Value, json};

/// The confirmation call of a text pipeline.
/// A git repository with one commit (a README), as runs expect.
fn committed_repo() -> Repo {
    let repo = git_repo();
    std::fs::write(repo.path().join("README.md"), "x\n").unwrap();
    git_output(repo.path(), &["add", "."]);
    git_output(repo.path(), &["commit", "-qm", "init"]);
    repo
}

/// Runs git in `repo` (its output, for the caller to read).
fn git_output(repo: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap()
}

fn confirmation(workspace: &Value) -> Value {
    json!({"workspace": workspace, "task_text": "add login rate limiting",
           "flags": {"auto": false, "skip_pr": true, "debug": false, "discuss": false, "effort_override": null, "current_branch": null},
           "user_confirmation": {"effort": "M", "use_current_branch": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_between_the_writes_of_a_confirmation_loses_nothing() {
    for crash_after in 1..=2 {
        let repo = git_repo();
        std::fs::write(repo.path().join("README.md"), "x\n").unwrap();
        Command::new("git")
            .args(["add", "."])
            .current_dir(repo.path())
            .status()
            .unwrap();
        Command::new("git")
            .args(["commit", "-qm", "init"])
            .current_dir(repo.path())
            .status()
            .unwrap();
        let c = spawn(repo.path(), &[], &[]).await;
        let init = c
            .ok(
                "pipeline_init",
                json!({"arguments": "add login rate limiting --nopr"}),
            )
            .await;
        c.close().await;
        // The server dies right after its N-th write of the confirmation.
        let env = crash_after.to_string();
        let dying = spawn(
            repo.path(),
            &["--no-transcript"],
            &[("BATON_CRASH_AFTER_WRITES", &env)],
        )
        .await;
        dying
            .call_dying(
                "pipeline_init_with_context",
                confirmation(&init["workspace"]),
            )
            .await;
        // Whatever is on disk now, sending the confirmation again completes it.
        let c = spawn(repo.path(), &[], &[]).await;
        let done = c
            .ok(
                "pipeline_init_with_context",
                confirmation(&init["workspace"]),
            )
            .await;
        assert_eq!(
            done["ready"], true,
            "after a kill at write {crash_after}: {done}"
        );
        let ws = done["workspace"].as_str().unwrap();
        let request = std::fs::read_to_string(repo.ws_dir(ws).join("request.md")).unwrap();
        assert!(request.contains("add login rate limiting"), "{request}");
        assert_eq!(request, done["request_md_content"].as_str().unwrap());
        let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
        assert_eq!(a["phase"], "phase-1");
        // The request is the run's: its commit holds it, and the tree ends clean.
        let trace = drive(&c, &repo, ws, &mut Script::default(), &[], 100).await;
        assert_eq!(trace.last["type"], "done", "{:?}", trace.steps);
        let committed = git_output(repo.path(), &["show", "--name-only", "--format=", "HEAD"]);
        assert!(String::from_utf8_lossy(&committed.stdout).contains(&format!("{ws}/request.md")));
        let status = git_output(repo.path(), &["status", "--porcelain"]);
        assert_eq!(
            String::from_utf8_lossy(&status.stdout),
            "",
            "after a kill at write {crash_after}"
        );
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_while_sealing_the_final_state_is_repaired() {
    // The seal writes the live state, then state.json: die after the first.
    let repo = committed_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "fix typo in the help text", "S", "--nopr").await;
    let mut script = Script::default();
    let last = drive_until(&c, &repo, &ws, &mut script, |a| {
        a["phase"] == "final-summary" && a["type"] == "spawn_agent"
    })
    .await;
    let mut answers = VecDeque::new();
    let mut report = perform(repo.path(), &ws, &last, &mut script, &mut answers);
    report["previous_action_id"] = last["action_id"].clone();
    c.close().await;
    let dying = spawn(
        repo.path(),
        &["--no-transcript"],
        &[("BATON_CRASH_AFTER_WRITES", "1")],
    )
    .await;
    dying
        .call_dying("pipeline_next_action", report.clone())
        .await;
    let live = repo.ws_dir(&ws).join(".state.live.json");
    assert!(live.exists(), "the kill came after the live state's write");
    let sealed = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(repo.ws_dir(&ws).join("state.json")).unwrap())
            .unwrap()
    };
    assert_ne!(
        sealed()["currentPhaseStatus"],
        "completed",
        "state.json was not sealed yet"
    );
    // The client lost the reply and sends the same report again: it gets
    // the reply the report got (the commit's first step), and the seal is
    // completed before that step runs.
    let c = spawn(repo.path(), &[], &[]).await;
    let again = c.ok("pipeline_next_action", report).await;
    assert_eq!(again["phase"], "final-commit", "{again}");
    assert_eq!(
        sealed()["currentPhaseStatus"],
        "completed",
        "sealed before the commit's first step"
    );
    let mut args = perform(repo.path(), &ws, &again, &mut script, &mut answers);
    args["previous_action_id"] = again["action_id"].clone();
    for _ in 0..20 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["type"] == "done" {
            break;
        }
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    }
    let committed = git_output(repo.path(), &["show", &format!("HEAD:{ws}/state.json")]);
    let committed: Value = serde_json::from_slice(&committed.stdout).unwrap();
    assert_eq!(committed["currentPhaseStatus"], "completed");
    assert!(!live.exists());
    let status = git_output(repo.path(), &["status", "--porcelain"]);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "the tree is clean after the run"
    );
    c.close().await;
}

/// Every action type: its report sent twice is applied once, and the
/// repeat gets the same answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_sent_twice_is_applied_once_for_every_action_type() {
    let repo = committed_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "fix typo in the help text", "S", "--nopr").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut seen = std::collections::BTreeSet::new();
    let commits_before = commits(repo.path());
    let mut next: Option<Value> = None;
    for _ in 0..60 {
        let a = match next.take() {
            Some(a) => a,
            None => c.ok("pipeline_next_action", args.clone()).await,
        };
        if a["type"] == "done" {
            break;
        }
        let id = a["action_id"].as_str().unwrap().to_string();
        assert!(!id.is_empty());
        let mut report = perform(repo.path(), &ws, &a, &mut script, &mut answers);
        if a["type"] == "checkpoint" || a["type"] == "human_gate" {
            args = report;
            continue;
        }
        report["previous_action_id"] = json!(id);
        let first = c.ok("pipeline_next_action", report.clone()).await;
        let state = repo.state(&ws);
        let events = repo.events().len();
        // The same report again, as a client does after a lost reply.
        let again = c.ok("pipeline_next_action", report.clone()).await;
        assert_eq!(again["action_id"], first["action_id"], "{a}");
        assert_eq!(again["type"], first["type"]);
        if first["type"] == "done" {
            // The run has ended: the repeat gets `done` again, says that
            // nothing was applied, and writes nothing (the committed
            // state.json stays as committed).
            assert!(
                again["warning"]
                    .as_str()
                    .unwrap()
                    .contains("nothing was applied"),
                "{again}"
            );
            let status = git_output(repo.path(), &["status", "--porcelain"]);
            assert_eq!(
                String::from_utf8_lossy(&status.stdout),
                "",
                "the tree stays clean"
            );
        } else {
            assert_eq!(again["report_result"], first["report_result"], "{a}");
        }
        let mut after = repo.state(&ws);
        after["timestamps"]["lastUpdated"] = state["timestamps"]["lastUpdated"].clone();
        assert_eq!(after, state, "a repeat changes nothing ({a})");
        assert_eq!(repo.events().len(), events, "a repeat publishes nothing");
        let kind = match (a["type"].as_str(), a["check_only"].as_bool()) {
            (Some("exec"), Some(true)) => "check",
            (Some(t), _) => t,
            _ => "",
        };
        seen.insert(kind.to_string());
        // The orchestrator performs the action the (first) reply gave.
        next = Some(first);
    }
    for kind in ["spawn_agent", "exec", "check", "write_file"] {
        assert!(seen.contains(kind), "{kind} was not repeated: {seen:?}");
    }
    assert_eq!(
        commits(repo.path()),
        commits_before + 1,
        "the final commit was made once"
    );
    assert!(repo.state(&ws)["currentPhaseStatus"] == "completed");
    c.close().await;
}

fn commits(repo: &Path) -> usize {
    let out = Command::new("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(repo)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_report_for_another_action_is_refused() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let first = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    std::fs::write(repo.ws_dir(&ws).join("analysis.md"), "# A\n\nfacts\n").unwrap();
    let second = c
        .ok("pipeline_next_action", json!({"workspace": ws, "previous_action_complete": true, "previous_action_id": first["action_id"]}))
        .await;
    assert_ne!(second["action_id"], first["action_id"]);
    let before = repo.snapshot();
    let e = c
        .err(
            "pipeline_next_action",
            json!({"workspace": ws, "previous_action_complete": true, "previous_action_id": "a999"}),
            "stale_action",
        )
        .await;
    assert_eq!(e["details"]["outstanding"], second["action_id"]);
    // The standalone report too.
    let e = c
        .err(
            "pipeline_report_result",
            json!({"workspace": ws, "phase": second["phase"], "action_id": first["action_id"]}),
            "stale_action",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("was not applied"));
    assert_eq!(repo.snapshot(), before);
    // The standalone report with the right id, twice: once applied.
    std::fs::write(repo.ws_dir(&ws).join("investigation.md"), "# I\n\nmore\n").unwrap();
    let r1 = c
        .ok(
            "pipeline_report_result",
            json!({"workspace": ws, "phase": "phase-2", "action_id": second["action_id"]}),
        )
        .await;
    let state = repo.state(&ws);
    let r2 = c
        .ok(
            "pipeline_report_result",
            json!({"workspace": ws, "phase": "phase-2", "action_id": second["action_id"]}),
        )
        .await;
    assert_eq!(r1, r2);
    assert_eq!(repo.state(&ws), state);
    c.close().await;
}

/// A report for an action of a run the person abandoned meanwhile says the
/// run is over and what to do, not only that the action is stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_for_an_abandoned_run_says_the_run_ended() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let first = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    common::person_answer(repo.path(), &ws, "abandon: not needed");
    let before = repo.snapshot();
    let e = c
        .err(
            "pipeline_report_result",
            json!({"workspace": ws, "phase": first["phase"], "action_id": first["action_id"]}),
            "invalid_state",
        )
        .await;
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("has ended (abandoned)") && message.contains("was not applied"),
        "{message}"
    );
    assert!(
        message.contains("start a new run") && message.contains("pipeline_init"),
        "{message}"
    );
    assert_eq!(e["details"]["currentPhaseStatus"], "abandoned");
    assert_eq!(e["details"]["field"], "action_id");
    // The loop's own report says so too, and applies nothing.
    let done = c
        .ok("pipeline_next_action", json!({"workspace": ws, "previous_action_complete": true, "previous_action_id": first["action_id"]}))
        .await;
    assert_eq!(done["type"], "done", "{done}");
    assert!(
        done["warning"]
            .as_str()
            .unwrap_or("")
            .contains("the run has ended (abandoned)"),
        "{done}"
    );
    assert_eq!(repo.snapshot(), before);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_and_fifos_in_the_repository_lead_no_write_elsewhere() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "untouched\n").unwrap();

    // A symlinked .specs or .baton folder: refused at start.
    for folder in [".specs", ".baton"] {
        let repo = Repo::new();
        std::os::unix::fs::symlink(outside.path(), repo.path().join(folder)).unwrap();
        let out = Command::new(common::baton_bin())
            .arg("serve")
            .current_dir(repo.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{folder}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
            "{folder}"
        );
    }

    // A symlinked event log: not appended to.
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path().join(".baton/events")).unwrap();
    std::os::unix::fs::symlink(&victim, repo.path().join(".baton/events/events.jsonl")).unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let r = c.ok("init", json!({"spec_name": "links"})).await;
    let ws = r["workspace"].as_str().unwrap().to_string();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");

    // A symlinked lock file, and a lock that is a FIFO: refused, no hang.
    let dir = repo.ws_dir(&ws);
    std::fs::remove_file(dir.join(".state.lock")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("made-by-baton"),
        dir.join(".state.lock"),
    )
    .unwrap();
    let e = c.err("abandon", json!({"workspace": ws}), "io_error").await;
    assert!(
        e["message"].as_str().unwrap().contains("symbolic link"),
        "{e}"
    );
    assert!(!outside.path().join("made-by-baton").exists());
    std::fs::remove_file(dir.join(".state.lock")).unwrap();
    let fifo = std::ffi::CString::new(dir.join(".state.lock").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc_mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let started = Instant::now();
    let e = c.err("abandon", json!({"workspace": ws}), "io_error").await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a FIFO never blocks a call"
    );
    assert!(
        e["message"].as_str().unwrap().contains("special file"),
        "{e}"
    );
    std::fs::remove_file(dir.join(".state.lock")).unwrap();

    // A dangling .gitignore link in a workspace: nothing is created through it.
    std::fs::remove_file(dir.join(".gitignore")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("ignore-all"), dir.join(".gitignore")).unwrap();
    c.ok("abandon", json!({"workspace": ws})).await;
    assert!(!outside.path().join("ignore-all").exists());
    c.close().await;
}

unsafe extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_costs_a_bounded_wait_and_others_keep_answering() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[("BATON_LOCK_TIMEOUT_MS", "400")]).await;
    let held = c.ok("init", json!({"spec_name": "held"})).await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    let free = c.ok("init", json!({"spec_name": "free"})).await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    // Another process (this test) holds the workspace lock: flock(2), the
    // lock baton takes.
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(repo.ws_dir(&held).join(".state.lock"))
        .unwrap();
    holder.lock().unwrap();
    let mut waiting = Vec::new();
    for _ in 0..6 {
        let started = Instant::now();
        let e = c.err("abandon", json!({"workspace": held}), "busy").await;
        waiting.push(started.elapsed());
        assert!(e["message"].as_str().unwrap().contains("busy"), "{e}");
    }
    assert!(
        waiting.iter().all(|w| *w < Duration::from_secs(5)),
        "{waiting:?}"
    );
    // Other workspaces and the tool list answer meanwhile.
    c.ok("state_resume_info", json!({"workspace": free})).await;
    c.ok("abandon", json!({"workspace": free})).await;
    assert!(!c.tool_names().await.is_empty());
    drop(holder);
    c.ok("abandon", json!({"workspace": held})).await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_transitions_keep_state_small_and_every_call_working() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &["--no-transcript"], &[("BATON_FSYNC", "off")]).await;
    let ws = c.ok("init", json!({"spec_name": "growth"})).await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    let message = "x".repeat(4000);
    let forced =
        json!({"workspace": ws, "phase": "phase-1", "force": true, "reason": "growth test"});
    for _ in 0..5000 {
        c.ok("phase_start", forced.clone()).await;
        let mut fail = forced.clone();
        fail["message"] = json!(message);
        c.ok("phase_fail", fail).await;
    }
    let size = std::fs::metadata(repo.ws_dir(&ws).join("state.json"))
        .unwrap()
        .len();
    assert!(size < 512 * 1024, "state.json is {size} bytes");
    let archive = std::fs::read_to_string(repo.ws_dir(&ws).join("state-archive.jsonl")).unwrap();
    assert!(archive.lines().count() > 9000);
    let state = repo.state(&ws);
    assert_eq!(
        state["historyArchived"]["visits"]["phase-1"]
            .as_u64()
            .unwrap()
            + state["history"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|h| h["action"] == "start")
                .count() as u64,
        5000
    );
    c.ok("state_resume_info", json!({"workspace": ws})).await;
    c.ok("state_get", json!({"workspace": ws})).await;
    c.ok("abandon", json!({"workspace": ws})).await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_starts_of_one_issue_create_one_run() {
    let repo = Repo::new();
    for round in 0..10 {
        let issue = format!("{}", 100 + round);
        let mut racers = Vec::new();
        for _ in 0..4 {
            let c = spawn(repo.path(), &["--no-transcript"], &[]).await;
            let issue = issue.clone();
            racers.push(tokio::spawn(async move {
                let r = c
                    .call("startIssueWorkflow", json!({"issueNumber": issue}))
                    .await;
                c.close().await;
                r
            }));
        }
        let mut created = 0;
        for r in racers {
            match r.await.unwrap() {
                Ok(_) => created += 1,
                Err(e) => assert_eq!(e["code"], "conflict", "{e}"),
            }
        }
        assert_eq!(created, 1, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_folder_fsync_after_the_rename_is_the_success_it_is() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[("BATON_FAULT_DIR_FSYNC", "1")]).await;
    let ws = c.ok("init", json!({"spec_name": "fsync"})).await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c
        .ok(
            "phase_start",
            json!({"workspace": ws, "phase": "phase-1", "force": true, "reason": "test"}),
        )
        .await;
    assert_eq!(r["events"], json!(["phase-start"]));
    assert_eq!(repo.state(&ws)["currentPhaseStatus"], "in_progress");
    assert!(repo.events().iter().any(|e| e["event"] == "phase-start"));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_states_give_the_right_codes() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let mk = |name: &str| repo.specs().join(name);
    std::fs::create_dir_all(mk("20260101-dir").join("state.json")).unwrap();
    std::fs::create_dir_all(mk("20260101-utf8")).unwrap();
    std::fs::write(
        mk("20260101-utf8").join("state.json"),
        b"{\"version\": 3, \"x\": \"\xff\"}",
    )
    .unwrap();
    std::fs::create_dir_all(mk("20260101-fifo")).unwrap();
    let fifo =
        std::ffi::CString::new(mk("20260101-fifo").join("state.json").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc_mkfifo(fifo.as_ptr(), 0o644) }, 0);
    for (ws, says) in [
        ("20260101-dir", "a folder"),
        ("20260101-utf8", "not UTF-8"),
        ("20260101-fifo", "special file"),
    ] {
        let e = c
            .err(
                "state_resume_info",
                json!({"workspace": ws}),
                "corrupt_state",
            )
            .await;
        assert!(e["message"].as_str().unwrap().contains(says), "{ws}: {e}");
    }
    // A run whose workflow definition has gone missing can be abandoned.
    std::fs::create_dir_all(repo.path().join(".baton/workflows")).unwrap();
    std::fs::write(
        repo.path().join(".baton/workflows/gone.yaml"),
        "id: gone\nlabel: Gone\nphases:\n  - {id: a, label: A, kind: agent}\n",
    )
    .unwrap();
    c.close().await;
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = c
        .ok(
            "workflow_start",
            json!({"workflow": "gone", "specName": "orphan"}),
        )
        .await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    c.close().await;
    std::fs::remove_file(repo.path().join(".baton/workflows/gone.yaml")).unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let r = c
        .ok(
            "abandon",
            json!({"workspace": ws, "reason": "its definition is gone"}),
        )
        .await;
    assert_eq!(r["currentPhaseStatus"], "abandoned");
    // A state file keeps its permissions across writes.
    use std::os::unix::fs::PermissionsExt;
    let ws2 = c.ok("init", json!({"spec_name": "modes"})).await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    let file = repo.ws_dir(&ws2).join("state.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    c.ok("abandon", json!({"workspace": ws2})).await;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o640
    );
    // Issue numbers are names like any other.
    for bad in ["..", ".hidden", "-x"] {
        c.err(
            "startIssueWorkflow",
            json!({"issueNumber": bad}),
            "invalid_parameter",
        )
        .await;
    }
    c.close().await;
}

/// A write killed between its temporary file and the rename leaves
/// `.state.json.*.tmp` behind; a server start removes those older than a
/// minute (off the start path) and keeps a fresh one, which may be a write
/// in flight in another process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_files_of_killed_writes_are_swept_after_a_start() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let r = c
        .ok("init", json!({"spec_name": "sweep", "effort": "S"}))
        .await;
    c.close().await;
    let ws = repo.path().join(r["workspace"].as_str().unwrap());
    let stale = ws.join(".state.json.4242.tmp");
    let fresh = ws.join(".state.json.4343.tmp");
    for f in [&stale, &fresh] {
        std::fs::write(f, "{}").unwrap();
    }
    let old = std::time::SystemTime::now() - Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while stale.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!stale.exists(), "the stale temporary file is swept");
    assert!(fresh.exists(), "a fresh one may be a write in flight: kept");
    // The workspace itself is untouched.
    c.ok("state_get", json!({"workspace": r["workspace"]}))
        .await;
    c.close().await;
}
