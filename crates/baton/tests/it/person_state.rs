//! A run's rules and record cannot be changed behind its back (issue 19,
//! Done-means 8 and 9): a project `forge.yaml` with `answered_by: agent`
//! written while a run waits changes nothing for that run (it is pinned to
//! the definition it started with; new runs follow the new file, flagged);
//! a hand edit of `state.json` that moves a run past a checkpoint without
//! an answer is shown as tampering by `baton show` and `run_overview`, and
//! the checkpoint is asked again.

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::pipeline::{Script, create, drive_until, git_repo};
use crate::common::{Client, Repo, assert_question_warns, baton_bin, spawn};

const BUILTIN_FORGE: &str = include_str!("../../../baton-workflow/workflows/forge.yaml");

fn show_json(repo: &Repo, ws: &str) -> Value {
    let out = Command::new(baton_bin())
        .args(["show", ws, "--json"])
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn show_text(repo: &Repo, ws: &str) -> String {
    let out = Command::new(baton_bin())
        .args(["show", ws])
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).to_string()
}

async fn at_checkpoint(c: &Client, repo: &Repo, text: &str) -> String {
    let ws = create(c, text, "M", "--nopr").await;
    let q = drive_until(c, repo, &ws, &mut Script::default(), |a| {
        a["type"] == "checkpoint"
    })
    .await;
    assert_eq!(q["name"], "checkpoint-a");
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_definition_written_while_a_run_waits_does_not_change_that_run() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = at_checkpoint(&c, &repo, "add login rate limiting").await;
    c.close().await;
    // The agent writes a project forge.yaml that lets it answer.
    let loosened = BUILTIN_FORGE.replacen("id: forge\n", "id: forge\nanswered_by: agent\n", 1);
    assert_ne!(loosened, BUILTIN_FORGE);
    let dir = repo.path().join(".baton/workflows");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("forge.yaml"), &loosened).unwrap();
    // A new server reads it — and the waiting run still refuses the agent.
    let c = spawn(repo.path(), &[], &[]).await;
    let refused = c
        .err(
            "pipeline_next_action",
            json!({"workspace": ws, "user_response": "proceed"}),
            "blocked",
        )
        .await;
    assert_eq!(refused["details"]["rule"], "person_only", "{refused}");
    let state = repo.state(&ws);
    assert_eq!(state["currentPhase"], "checkpoint-a");
    assert_eq!(state["currentPhaseStatus"], "awaiting_human");
    assert!(state["answers"].as_array().is_none_or(|a| a.is_empty()));
    assert_eq!(state["definition"]["source"], "builtin");
    let shown = show_json(&repo, &ws);
    assert_eq!(shown["integrity"]["definition"]["source"], "builtin");
    assert_eq!(shown["integrity"]["tampered"], false);
    // A run started now follows the new file: the agent may answer it, and
    // the loosening is flagged for people.
    let new_ws = at_checkpoint(&c, &repo, "add a logout button").await;
    assert_eq!(repo.state(&new_ws)["definition"]["source"], "project");
    c.ok(
        "pipeline_next_action",
        json!({"workspace": new_ws, "user_response": "proceed"}),
    )
    .await;
    let shown = show_json(&repo, &new_ws);
    let def = &shown["integrity"]["definition"];
    assert_eq!(def["source"], "project");
    assert!(
        def["loosened"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "checkpoint-a"),
        "{def}"
    );
    let notes = shown["integrity"]["notes"].to_string();
    assert!(notes.contains("lets the agent answer"), "{notes}");
    assert!(show_text(&repo, &new_ws).contains("which a person answers in the built-in workflow"));
    // The same view through MCP (the dashboard's run_overview).
    let over = c.ok("run_overview", json!({"workspace": new_ws})).await;
    assert_eq!(over["integrity"]["definition"]["loosened"], def["loosened"]);
    // Changing the project file again changes neither run.
    std::fs::write(dir.join("forge.yaml"), BUILTIN_FORGE).unwrap();
    let c2 = spawn(repo.path(), &[], &[]).await;
    let shown = show_json(&repo, &new_ws);
    assert_eq!(shown["integrity"]["definition"]["changedSinceStart"], true);
    c2.close().await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edit_past_a_checkpoint_is_shown_as_tampering_and_the_checkpoint_is_asked_again() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = at_checkpoint(&c, &repo, "add login rate limiting").await;
    // Moved past checkpoint-a by hand: no answer, no actor.
    let path = repo.ws_dir(&ws).join("state.json");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["currentPhase"] = json!("phase-4");
    state["currentPhaseStatus"] = json!("pending");
    state["completedPhases"]
        .as_array_mut()
        .unwrap()
        .push(json!("checkpoint-a"));
    std::fs::write(&path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    // baton show and run_overview say so.
    let shown = show_json(&repo, &ws);
    assert_eq!(
        shown["integrity"]["tampered"], true,
        "{}",
        shown["integrity"]
    );
    let said = shown["integrity"]["tampering"].to_string();
    assert!(said.contains("checkpoint-a"), "{said}");
    let text = show_text(&repo, &ws);
    assert!(text.contains("TAMPERING"), "{text}");
    assert!(text.contains("checkpoint-a"), "{text}");
    let over = c.ok("run_overview", json!({"workspace": ws})).await;
    assert_eq!(over["integrity"]["tampered"], true);
    // The dashboard's view (and baton show) offer the question again.
    assert_eq!(
        over["question"]["name"], "checkpoint-a",
        "{}",
        over["question"]
    );
    // The next step asks checkpoint-a again instead of going on.
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_question_warns(&next, "checkpoint-a", "changed outside baton");
    let state = repo.state(&ws);
    assert_eq!(state["currentPhase"], "checkpoint-a");
    assert_eq!(state["currentPhaseStatus"], "awaiting_human");
    assert_eq!(state["tampering"][0]["phase"], "checkpoint-a");
    // Still the person's: the agent is refused, the person answers.
    c.err(
        "pipeline_next_action",
        json!({"workspace": ws, "user_response": "proceed"}),
        "blocked",
    )
    .await;
    crate::common::person_answer(repo.path(), &ws, "proceed");
    // What happened stays visible after the repair, each finding once:
    // the question passed without an answer, and the file's tag that no
    // longer matched.
    let shown = show_json(&repo, &ws);
    assert_eq!(shown["integrity"]["tampered"], true);
    let found = shown["integrity"]["tampering"].as_array().unwrap();
    assert_eq!(found.len(), 2, "{}", shown["integrity"]);
    assert_eq!(
        found
            .iter()
            .filter(|f| f.as_str().unwrap().contains("integrity tag"))
            .count(),
        1,
        "{}",
        shown["integrity"]
    );
    assert!(
        found
            .iter()
            .any(|f| f.as_str().unwrap().contains("checkpoint-a")),
        "{}",
        shown["integrity"]
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edit_that_only_moves_the_current_phase_is_tampering_too() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = at_checkpoint(&c, &repo, "add login rate limiting").await;
    let path = repo.ws_dir(&ws).join("state.json");
    // Edited in place, as a text editor would: the tag stays, and no
    // longer matches.
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text
        .replacen(
            "\"currentPhase\": \"checkpoint-a\"",
            "\"currentPhase\": \"phase-5\"",
            1,
        )
        .replacen(
            "\"currentPhaseStatus\": \"awaiting_human\"",
            "\"currentPhaseStatus\": \"in_progress\"",
            1,
        );
    assert_ne!(edited, text);
    std::fs::write(&path, edited).unwrap();
    let over = c.ok("run_overview", json!({"workspace": ws})).await;
    assert_eq!(over["integrity"]["tampered"], true);
    assert!(
        over["integrity"]["tampering"]
            .to_string()
            .contains("no longer matches"),
        "{}",
        over["integrity"]
    );
    assert!(
        over["integrity"]["tampering"]
            .to_string()
            .contains("never completed"),
        "{}",
        over["integrity"]
    );
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(next["name"], "checkpoint-a", "{next}");
    c.close().await;
}

/// A program that holds the person's key (under Codex it can read it)
/// writes a validly tagged `state.json` that moves the run past the
/// checkpoint, while no agent command runs (a program left running in the
/// background): the tag matches, but the witness outside every agent
/// sandbox says baton never wrote it — the next read shows it as tampering
/// and the checkpoint is asked again, as for a hand edit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validly_tagged_state_baton_never_wrote_is_tampering_between_commands() {
    const FORGE: &str = r#"import hashlib, hmac, json, os, pwd, sys
home = pwd.getpwuid(os.getuid()).pw_dir
key = open(os.path.join(home, '.config', 'baton', 'state.key')).read().strip().encode()
f = sys.argv[1]
state = json.loads(open(f).read())
state.pop('integrity', None)
state['currentPhase'] = 'phase-5'
state['currentPhaseStatus'] = 'in_progress'
body = json.dumps(state, indent=2, ensure_ascii=False) + '\n'
kid = hashlib.sha256(key).hexdigest()[:8]
tag = 'hmac-sha256:%s:%s' % (kid, hmac.new(key, body.encode(), hashlib.sha256).hexdigest())
open(f, 'w').write(body.rstrip()[:-1].rstrip() + ',\n  "integrity": "%s"\n}\n' % tag)
"#;
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = at_checkpoint(&c, &repo, "add login rate limiting").await;
    let path = repo.ws_dir(&ws).join("state.json");
    let out = Command::new("python3")
        .args(["-c", FORGE])
        .arg(&path)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\"currentPhase\": \"phase-5\"") && text.contains("hmac-sha256:"),
        "forged and tagged: {text}"
    );
    let over = c.ok("run_overview", json!({"workspace": ws})).await;
    assert_eq!(over["integrity"]["tampered"], true, "{}", over["integrity"]);
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(next["name"], "checkpoint-a", "{next}");
    c.close().await;
}

fn git(repo: &Repo, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// A run the Go server left (state version 2, no baseline of the
/// repository) just before its summary: baton finishes it, and its commit
/// stages none of the person's files that were untracked when baton met it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_run_commits_nothing_that_was_untracked_when_baton_met_it() {
    let repo = crate::common::pipeline::git_repo();
    std::fs::write(repo.path().join("README.md"), "# demo\n").unwrap();
    git(&repo, &["add", "README.md"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    // The person's own notes, never the run's.
    std::fs::write(repo.path().join("notes.txt"), "my notes\n").unwrap();
    std::fs::create_dir_all(repo.path().join("scratch")).unwrap();
    std::fs::write(repo.path().join("scratch/todo.md"), "- later\n").unwrap();
    let ws = ".specs/20260330-migrated";
    let dir = repo.ws_dir(ws);
    std::fs::create_dir_all(&dir).unwrap();
    let tasks = json!({"1": {"title": "Implement", "executionMode": "sequential", "implStatus": "completed", "reviewStatus": "completed_pass"}});
    let state = json!({
        "version": 2, "forge-state-mcp-version": "2.19.0",
        "specName": "migrated", "workspace": ws, "branch": null, "effort": "S", "flowTemplate": "light",
        "autoApprove": false, "skipPr": true, "useCurrentBranch": true,
        "branchClassified": false, "branchPushed": false, "debug": false,
        "skippedPhases": ["phase-2", "phase-4", "phase-4b", "checkpoint-b", "phase-6", "pr-creation", "post-to-source", "final-push"],
        "currentPhase": "final-summary", "currentPhaseStatus": "pending",
        "completedPhases": ["setup", "phase-1", "phase-3", "phase-3b", "checkpoint-a", "phase-5", "phase-7", "final-verification"],
        "revisions": {"designRevisions": 0, "taskRevisions": 0, "designInlineRevisions": 0, "taskInlineRevisions": 0},
        "checkpointRevisionPending": {"checkpoint-a": false, "checkpoint-b": false},
        "needsBatchCommit": false, "tasks": tasks, "phaseLog": [],
        "timestamps": {"created": "2026-03-30T09:00:00Z", "lastUpdated": "2026-03-30T10:00:00Z", "phaseStarted": null},
        "error": null
    });
    std::fs::write(
        dir.join("state.json"),
        serde_json::to_string_pretty(&state).unwrap(),
    )
    .unwrap();
    for (file, text) in [
        (
            "request.md",
            "---\nsource_type: text\n---\n\nAdd a greeting\n",
        ),
        ("analysis.md", "# Analysis\n\nfacts\n"),
        ("design.md", "# Design\n\nSay hello.\n"),
        ("review-design.md", "# Review\n\n## Verdict: APPROVE\n"),
        ("tasks.md", crate::common::pipeline::TASKS_MD),
        ("impl-1.md", "# impl\n"),
        ("comprehensive-review.md", "# Review\n\nfine\n"),
        ("final-verification.md", "# Verification\n\nfine\n"),
    ] {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let c = spawn(repo.path(), &[], &[]).await;
    let mut script = Script::default();
    let trace = crate::common::pipeline::drive(&c, &repo, ws, &mut script, &[], 40).await;
    assert_eq!(trace.last["type"], "done", "{:#?}", trace.steps);
    c.close().await;
    let baseline = &repo.state(ws)["repoBaseline"];
    assert_eq!(baseline["takenLate"], true, "{baseline}");
    // The run's commit holds its workspace, and none of the person's files.
    let committed = git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(committed.contains("20260330-migrated/"), "{committed}");
    assert!(!committed.contains("notes.txt"), "{committed}");
    assert!(!committed.contains("scratch/"), "{committed}");
    let status = git(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.contains("?? notes.txt"), "{status}");
    assert!(status.contains("?? scratch/todo.md"), "{status}");
}

/// A hand edit that forges a `--auto` grant (and touches nothing else a
/// person's question depends on) is caught by the state's integrity tag:
/// shown as tampering, and the forged grant answers nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_auto_grant_in_state_json_answers_nothing_and_shows() {
    let repo = crate::common::pipeline::git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = at_checkpoint(&c, &repo, "add login rate limiting").await;
    let path = repo.ws_dir(&ws).join("state.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\"integrity\": \"hmac-sha256:"),
        "baton tags what it writes"
    );
    let mut state: Value = serde_json::from_str(&text).unwrap();
    state["autoApprove"] = json!(true);
    state["autoGrantedBy"] = json!({"who": "auto", "channel": "driver"});
    std::fs::write(&path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    let over = c.ok("run_overview", json!({"workspace": ws})).await;
    assert_eq!(over["integrity"]["tampered"], true, "{}", over["integrity"]);
    assert!(
        over["integrity"]["tampering"]
            .to_string()
            .contains("outside baton"),
        "{}",
        over["integrity"]
    );
    // The next step does not take the forged grant.
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_question_warns(&next, "checkpoint-a", "withdrawn");
    let after = repo.state(&ws);
    assert!(after.get("autoGrantedBy").is_none(), "{after}");
    assert!(after["answers"].as_array().is_none_or(|a| a.is_empty()));
    assert_eq!(after["currentPhaseStatus"], "awaiting_human");
    // What happened stays visible.
    let shown = show_json(&repo, &ws);
    assert!(
        shown["integrity"]["tampering"]
            .to_string()
            .contains("withdrawn"),
        "{}",
        shown["integrity"]
    );
    c.close().await;
}

/// A hand edit that passes no question (here: `skipPr` turned off and the
/// effort changed) is recorded before baton writes over it, so the next
/// write's fresh tag does not hide it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_outside_baton_stays_visible_after_baton_writes_again() {
    let repo = crate::common::pipeline::git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = at_checkpoint(&c, &repo, "add login rate limiting").await;
    let before = show_json(&repo, &ws);
    assert_eq!(
        before["integrity"]["tampered"], false,
        "{}",
        before["integrity"]
    );
    let path = repo.ws_dir(&ws).join("state.json");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(state["skipPr"], true);
    state["skipPr"] = json!(false);
    std::fs::write(&path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    let shown = show_json(&repo, &ws);
    assert_eq!(
        shown["integrity"]["tampered"], true,
        "{}",
        shown["integrity"]
    );
    // baton steps the run (writing a freshly tagged state) …
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(next["name"], "checkpoint-a", "{next}");
    assert!(
        next["warning"]
            .as_str()
            .is_some_and(|w| w.contains("changed outside baton")),
        "{next}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"integrity\": \"hmac-sha256:"), "re-tagged");
    // … and the change is still shown, as a recorded note.
    let after = show_json(&repo, &ws);
    assert_eq!(
        after["integrity"]["tampered"], true,
        "{}",
        after["integrity"]
    );
    let notes = repo.state(&ws)["tampering"].clone();
    assert_eq!(notes.as_array().map(Vec::len), Some(1), "{notes}");
    assert!(
        notes[0]["message"]
            .as_str()
            .unwrap()
            .contains("integrity tag")
    );
    c.close().await;
}
