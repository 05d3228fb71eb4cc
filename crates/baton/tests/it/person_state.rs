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
use crate::common::{Client, Repo, baton_bin, spawn};

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
    assert_eq!(next["type"], "checkpoint", "{next}");
    assert_eq!(next["name"], "checkpoint-a");
    assert!(
        next["warning"]
            .as_str()
            .is_some_and(|w| w.contains("changed outside baton")),
        "{next}"
    );
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
    // What happened stays visible after the repair.
    let shown = show_json(&repo, &ws);
    assert_eq!(shown["integrity"]["tampered"], true);
    assert_eq!(
        shown["integrity"]["tampering"].as_array().unwrap().len(),
        1,
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
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["currentPhase"] = json!("phase-5");
    state["currentPhaseStatus"] = json!("in_progress");
    std::fs::write(&path, serde_json::to_string(&state).unwrap()).unwrap();
    let over = c.ok("run_overview", json!({"workspace": ws})).await;
    assert_eq!(over["integrity"]["tampered"], true);
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
