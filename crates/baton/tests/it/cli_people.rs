//! The terminal commands for people: `baton show RUN`, `baton events
//! [--follow] [--run RUN]`, `baton ls` with long names, and `baton answer`
//! next to them.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::baton_bin;
use crate::common::pipeline::git_repo;
use serde_json::Value;

fn baton(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(baton_bin());
    c.args(args)
        .current_dir(repo)
        .env("BATON_FSYNC", "off")
        .env_remove("COLUMNS")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A run driven by the scripted agent to its first checkpoint; its folder.
fn run_to_checkpoint(repo: &Path, text: &str, effort: &str) -> String {
    let before = folders(repo);
    let (code, _, err) = baton(
        repo,
        &[
            "run",
            text,
            "--effort",
            effort,
            "--nopr",
            "--agent",
            "builtin:scripted",
        ],
        &[],
    );
    // No terminal: the run stops at the question (exit 3), naming the
    // answer command and the command that resumes it.
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("checkpoint-a waits for your answer"), "{err}");
    assert!(err.contains("baton answer .specs/"), "{err}");
    assert!(err.contains(" proceed\n"), "{err}");
    assert!(err.contains("--agent builtin:scripted"), "{err}");
    folders(repo)
        .into_iter()
        .find(|f| !before.contains(f))
        .unwrap()
}

fn folders(repo: &Path) -> Vec<String> {
    std::fs::read_dir(repo.join(".specs"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.as_bytes().first().is_some_and(u8::is_ascii_digit))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn show_gives_the_whole_run_at_a_glance() {
    let repo = git_repo();
    let id = run_to_checkpoint(repo.path(), "Add a greeting feature", "M");
    let (code, out, err) = baton(repo.path(), &["show", &id], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("add-a-greeting-feature  ·  forge (Forge pipeline)  ·  waiting for you"),
        "{out}"
    );
    assert!(
        out.contains("phase      checkpoint-a (Design Checkpoint) — waiting for you"),
        "{out}"
    );
    // Every phase, with its state; skipped ones marked; the loop back.
    assert!(out.contains("✓ phase-3 "), "{out}");
    assert!(out.contains("⏸ checkpoint-a"), "{out}");
    assert!(out.contains("– phase-4b"), "{out}");
    assert!(out.contains("↺ phase-3 on revise"), "{out}");
    // The question's full text and its options, and how to answer.
    assert!(
        out.contains("WAITING FOR YOU: checkpoint-a (checkpoint)"),
        "{out}"
    );
    assert!(
        out.contains(&format!("  │ - .specs/{id}/design.md")),
        "{out}"
    );
    assert!(
        out.contains("  options: proceed / revise / abandon"),
        "{out}"
    );
    assert!(
        out.contains(&format!("baton answer {id} <option> [text]")),
        "{out}"
    );
    assert!(
        out.contains("design.md") && out.contains("phase-3"),
        "{out}"
    );
    assert!(out.contains("TIMELINE"), "{out}");

    let (code, json, _) = baton(
        repo.path(),
        &["show", &format!(".specs/{id}"), "--json"],
        &[],
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["id"], id.as_str());
    assert_eq!(
        v["question"]["text"].as_str().unwrap().lines().next(),
        Some("## Design Checkpoint")
    );
    assert_eq!(
        v["actions"],
        serde_json::json!({"answer": true, "abandon": true})
    );

    // The person answers at the terminal (`baton answer` refuses without one).
    let (code, _, err) = baton(repo.path(), &["answer", &id, "approve"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("must run in a terminal"), "{err}");
    let answered = common::person_answer(repo.path(), &id, "approve");
    assert!(
        answered.contains("checkpoint-a: proceed (by person:terminal)"),
        "{answered}"
    );
    // `next:` is for the person: how the run goes on, with its own agent.
    assert!(
        answered.contains(&format!(
            "next: Nothing is driving it now (`baton run` stopped at a question for you). Resume it: `baton run .specs/{id} --agent builtin:scripted`."
        )),
        "{answered}"
    );
    // The answer is stamped when it was given, not when it was asked.
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(format!(".specs/{id}/state.json"))).unwrap(),
    )
    .unwrap();
    let answered_at = state["answers"][0]["at"].as_str().unwrap().to_string();
    let asked_at = state["history"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|h| h["action"] == "checkpoint" && h["phase"] == "checkpoint-a")
        .unwrap()["at"]
        .as_str()
        .unwrap()
        .to_string();
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).unwrap();
    assert!(
        parse(&answered_at) > parse(&asked_at),
        "{answered_at} vs {asked_at}"
    );

    // Driven to the end, the tasks show with their runs.
    let (code, _, err) = baton(
        repo.path(),
        &[
            "run",
            &format!(".specs/{id}"),
            "--nopr",
            "--agent",
            "builtin:scripted",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = baton(repo.path(), &["show", &id, "--all"], &[]);
    assert!(out.contains("·  completed"), "{out}");
    assert!(out.contains("TASKS"), "{out}");
    for task in [
        "1  Add the core change",
        "2  Add tests [parallel]",
        "3  Update docs [parallel]",
    ] {
        assert!(out.contains(task), "{task}: {out}");
    }
    assert!(out.contains("after 1"), "{out}");
    assert!(out.contains("answer      checkpoint-a"), "{out}");
    assert!(
        !out.contains("last 15 of"),
        "--all shows every entry: {out}"
    );
    let v: Value =
        serde_json::from_str(&baton(repo.path(), &["show", &id, "--json"], &[]).1).unwrap();
    let tasks = v["tasks"].as_array().unwrap();
    assert!(tasks.iter().all(|t| t["state"] == "done"), "{tasks:?}");
    // Tasks 2 and 3 ran as one fan-out, each reviewed: implemented once, reviewed once.
    assert!(tasks.iter().all(|t| t["runs"] == 2), "{tasks:?}");

    // `baton answer RUN abandon` stops a run that waits for nothing, as the person.
    let other = run_to_checkpoint(repo.path(), "Another change", "S");
    common::person_answer(repo.path(), &other, "revise: redo the design");
    let none = common::person_answers(repo.path(), &other, "approve");
    assert!(
        !none.ok && none.output.contains("nothing in"),
        "{}",
        none.output
    );
    let out = common::person_answer(repo.path(), &other, "abandon: not needed");
    assert!(
        out.contains("abandoned at phase-3 (by person:terminal)"),
        "{out}"
    );
    let v: Value =
        serde_json::from_str(&baton(repo.path(), &["show", &other, "--json"], &[]).1).unwrap();
    assert_eq!(v["status"], "abandoned");
    let last = v["timeline"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (
            last["what"].as_str(),
            last["by"].as_str(),
            last["detail"].as_str()
        ),
        (Some("abandon"), Some("person:terminal"), Some("not needed"))
    );

    let (code, _, err) = baton(repo.path(), &["show", "../outside"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("outside the specs root"), "{err}");
}

#[test]
fn events_prints_the_last_ones_and_follows_other_processes() {
    let repo = git_repo();
    let (code, out, _) = baton(repo.path(), &["events"], &[]);
    assert_eq!(code, 0);
    assert!(out.is_empty(), "no log yet: {out}");
    let first = run_to_checkpoint(repo.path(), "First change", "S");

    let (code, out, _) = baton(repo.path(), &["events", "-n", "3"], &[]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[2].contains("checkpoint")
            && lines[2].contains("awaiting_human")
            && lines[2].contains(&first),
        "{out}"
    );

    // --follow: a second process's run arrives while following.
    let mut follow = Command::new(baton_bin())
        .args(["events", "--follow", "--json", "-n", "1"])
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The follower is up once it printed the last event so far.
    let last: Value = serde_json::from_str(
        &rx.recv_timeout(Duration::from_secs(30))
            .expect("the last event"),
    )
    .unwrap();
    assert_eq!(last["event"], "checkpoint");
    assert!(last["workspace"].as_str().unwrap().ends_with(&first));
    let second = run_to_checkpoint(repo.path(), "Second change", "S");
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("an event within 30 s");
        let v: Value = serde_json::from_str(&line).unwrap();
        let done = v["event"] == "checkpoint";
        seen.push(v);
        if done {
            break;
        }
    }
    let _ = follow.kill();
    let _ = follow.wait();
    assert_eq!(seen[0]["event"], "pipeline-init");
    assert!(
        seen.iter()
            .all(|e| e["workspace"].as_str().unwrap().ends_with(&second))
    );
    let logged: Vec<Value> = repo
        .events()
        .into_iter()
        .filter(|e| e["workspace"].as_str().unwrap().ends_with(&second))
        .collect();
    assert_eq!(
        seen, logged,
        "every event of the other process, once, in order"
    );

    // --run keeps one run's events.
    let (_, out, _) = baton(repo.path(), &["events", "--run", &first, "-n", "1000"], &[]);
    assert!(!out.is_empty());
    assert!(out.lines().all(|l| l.contains(&first)), "{out}");
    let (_, out, _) = baton(repo.path(), &["events", "-n", "1000"], &[]);
    assert!(out.contains(&first) && out.contains(&second));
}

/// `baton events --run` with a name that is no run here says so and what to
/// pass instead, and exits non-zero (it printed nothing and exited 0).
#[test]
fn events_for_an_unknown_run_is_an_error_for_the_person() {
    let repo = git_repo();
    let known = run_to_checkpoint(repo.path(), "Short", "S");
    let (code, out, err) = baton(repo.path(), &["events", "--run", "nope"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("no run named `nope`"), "{err}");
    assert!(err.contains("`baton ls` lists the runs"), "{err}");
    // A long name comes back cut short.
    let long = "x".repeat(5000);
    let (code, _, err) = baton(repo.path(), &["events", "--run", &long], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.len() < 600, "{err}");
    // A run that is there still prints its events.
    let (code, out, err) = baton(repo.path(), &["events", "--run", &known], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().count() > 0 && out.lines().all(|l| l.contains(&known)));
    // So does a run whose folder is gone but whose events are in the log.
    let dir = repo.specs().join(&known);
    std::fs::remove_dir_all(&dir).unwrap();
    let (code, out, err) = baton(repo.path(), &["events", "--run", &known], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&known), "{out}");
}

/// A run that is not there: the person's commands say what a person does
/// (`baton ls`, `baton run "…"`), never the agent's tools (they named
/// pipeline_init, startIssueWorkflow, workflow_start); the code stays.
#[test]
fn a_missing_run_is_explained_to_the_person_in_their_commands() {
    let repo = git_repo();
    let person = |text: &str| {
        assert!(text.contains("no workspace at"), "{text}");
        assert!(text.contains("`baton ls` lists the runs"), "{text}");
        assert!(text.contains("baton run \"<task>\""), "{text}");
        for tool in ["pipeline_init", "startIssueWorkflow", "workflow_start"] {
            assert!(!text.contains(tool), "{text}");
        }
    };
    for args in [&["show", "nope"][..], &["state", "show", "nope"]] {
        let (code, _, err) = baton(repo.path(), args, &[]);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("(not_found)"), "{err}");
        person(&err);
    }
    let answered = common::person_answers(repo.path(), "nope", "proceed");
    assert!(!answered.ok, "{}", answered.output);
    person(&answered.output);
}

#[test]
fn ls_keeps_columns_aligned_with_long_names() {
    let repo = git_repo();
    let long =
        "Make the very long feature name that goes on and on survive every column of the listing";
    let a = run_to_checkpoint(repo.path(), long, "S");
    let b = run_to_checkpoint(repo.path(), "Short", "S");
    let (code, out, _) = baton(repo.path(), &["ls"], &[]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    let col = |l: &str, w: &str| l.find(w).unwrap_or_else(|| panic!("{w} in {l}"));
    let at = col(lines[0], "WORKFLOW");
    assert_eq!(col(lines[1], "forge"), at, "{out}");
    assert_eq!(col(lines[2], "forge"), at, "{out}");
    assert!(
        out.contains(&a) && out.contains(&b),
        "nothing cut without COLUMNS: {out}"
    );

    let (_, narrow, _) = baton(repo.path(), &["ls"], &[("COLUMNS", "100")]);
    for l in narrow.lines() {
        assert!(l.chars().count() <= 100, "{l}");
    }
    assert!(narrow.contains('…'), "{narrow}");
    let (_, json, _) = baton(repo.path(), &["ls", "--json"], &[("COLUMNS", "60")]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["workspace"] == format!(".specs/{a}")),
        "JSON is never cut"
    );
}
