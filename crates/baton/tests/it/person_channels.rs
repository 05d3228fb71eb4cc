//! Only a person answers a person's question (issue 19, Done-means 1–3):
//! `baton run <ws> --auto` from a program never answers a run it did not
//! start; an elicitation answer from a client the agent starts is the
//! client's and, by default, answers nothing; `flags.auto: true` from a
//! tool asks for `--auto` and grants nothing. Where the person allows it in
//! their own configuration (outside the repository), `--auto` and
//! elicitation count, recorded with their true channel.

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::elicit::{Person, spawn_with_person, spawn_with_person_env};
use crate::common::pipeline::{Script, create, drive, drive_until, git_repo};
use crate::common::{Repo, assert_question_warns, baton_bin, spawn};
use baton_testkit::person::PersonConfig;

/// Creates an effort-`effort` run through MCP (another process than any
/// `baton run`) and drives it to its first checkpoint; returns the
/// workspace and the checkpoint action.
async fn run_at_checkpoint(repo: &Repo, effort: &str, flags: &str) -> (String, Value) {
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", effort, flags).await;
    let mut script = Script::default();
    let q = drive_until(&c, repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    c.close().await;
    (ws, q)
}

fn answers(repo: &Repo, ws: &str) -> Vec<Value> {
    repo.state(ws)["answers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_run_auto_from_a_program_never_answers_a_run_it_did_not_start() {
    let repo = git_repo();
    let (ws, q) = run_at_checkpoint(&repo, "M", "--nopr").await;
    assert_eq!(q["name"], "checkpoint-a");
    let before = repo.state(&ws);
    assert_eq!(before["currentPhaseStatus"], "awaiting_human");
    // The agent's shell: no terminal on stdin.
    let out = Command::new(baton_bin())
        .args(["run", &ws, "--auto", "--agent", "exit 1"])
        .current_dir(repo.path())
        .env("BATON_FSYNC", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    // It stops at the question, which waits for a person (exit 3).
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains("waits for your answer"), "{said}");
    assert!(said.contains("--auto is not used"), "{said}");
    // No message suggests --auto to a caller without a terminal.
    assert!(
        !said.contains("pass --auto") && !said.contains("use --auto"),
        "{said}"
    );
    let after = repo.state(&ws);
    assert_eq!(after["currentPhase"], "checkpoint-a");
    assert_eq!(after["currentPhaseStatus"], "awaiting_human");
    assert!(answers(&repo, &ws).is_empty(), "no answer recorded");
    assert!(after.get("autoGrantedBy").is_none(), "{after}");
    // A person at a terminal still answers it.
    crate::common::person_answer(repo.path(), &ws, "proceed");
    assert_eq!(answers(&repo, &ws)[0]["by"]["who"], "person");
}

#[test]
fn baton_run_auto_answers_the_run_it_started_itself_and_says_so() {
    let repo = git_repo();
    let out = Command::new(baton_bin())
        .args([
            "run",
            "fix the login typo",
            "--effort",
            "S",
            "--nopr",
            "--auto",
            "--agent",
            "builtin:scripted",
        ])
        .current_dir(repo.path())
        .env("BATON_FSYNC", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // Said as what happened, not as a warning.
    assert!(
        said.contains("✓ checkpoint-a approved automatically (--auto"),
        "{said}"
    );
    assert!(
        !said
            .lines()
            .any(|l| l.contains("warning") && l.contains("approved automatically")),
        "{said}"
    );
    let ws = std::fs::read_dir(repo.specs())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| n.ends_with("fix-the-login-typo"))
        .unwrap();
    let state = repo.state(&format!(".specs/{ws}"));
    assert_eq!(state["currentPhaseStatus"], "completed");
    assert_eq!(
        state["autoGrantedBy"],
        json!({"who": "auto", "channel": "driver"})
    );
    let by: Vec<&Value> = state["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["by"])
        .collect();
    assert!(!by.is_empty());
    assert!(
        by.iter()
            .all(|b| **b == json!({"who": "auto", "channel": "driver"})),
        "{by:?}"
    );
}

/// A run that ends abandoned — here `--auto` giving up on a command that
/// fails twice — exits 4, not 0 like a completed run: a script can tell.
#[test]
fn baton_run_exits_4_when_the_run_ends_abandoned() {
    let repo = git_repo();
    // The final commit's `git commit` fails: --auto retries once, then abandons.
    let hook = repo.path().join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, "#!/bin/sh\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(baton_bin())
        .args([
            "run",
            "fix the login typo",
            "--effort",
            "S",
            "--nopr",
            "--auto",
            "--agent",
            "builtin:scripted",
        ])
        .current_dir(repo.path())
        .env("BATON_FSYNC", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("→ retry") && said.contains("→ abandon"),
        "{said}"
    );
    assert!(
        said.contains("Pipeline abandoned at final-commit"),
        "{said}"
    );
    assert_eq!(out.status.code(), Some(4), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_answer_from_a_client_the_agent_starts_answers_nothing_by_default() {
    let repo = git_repo();
    // The agent's own client: it declares elicitation and would accept
    // every form with "proceed".
    let agent_client = Person::answering(&["proceed", "proceed", "proceed"]);
    let c = spawn_with_person(repo.path(), agent_client.clone()).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script = Script::default();
    let q = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    // The question stays open, shown to the agent with how a person answers.
    assert_eq!(q["name"], "checkpoint-a");
    assert_eq!(q["answered_by"], "person");
    assert!(
        q["how_to_answer"]
            .as_str()
            .is_some_and(|h| h.contains("baton answer")),
        "{q}"
    );
    // Asked again: still open, and no form was ever sent to the client.
    let again = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(again["name"], "checkpoint-a");
    assert!(
        agent_client.asked().is_empty(),
        "{:?}",
        agent_client.asked()
    );
    let state = repo.state(&ws);
    assert_eq!(state["currentPhaseStatus"], "awaiting_human");
    assert!(answers(&repo, &ws).is_empty(), "no answer recorded");
    // Nothing recorded under a person's channel, anywhere in the state.
    assert!(!state.to_string().contains("\"person\""), "{state}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_answer_counts_where_the_person_trusts_it_recorded_as_the_clients() {
    let repo = git_repo();
    let trust = PersonConfig::trusting_elicitation();
    let (k, v) = trust.env();
    let person = Person::answering(&["proceed"]);
    let c = spawn_with_person_env(repo.path(), person.clone(), &[(k, &v)]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script = Script::default();
    let a = drive_until(&c, &repo, &ws, &mut script, |a| a["phase"] == "phase-5").await;
    assert_eq!(a["type"], "spawn_agent");
    assert_eq!(person.asked().len(), 1);
    assert_eq!(
        answers(&repo, &ws)[0]["by"],
        json!({"who": "client", "channel": "elicitation"})
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_asked_for_by_a_tool_argument_waits_for_a_person() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": "add login rate limiting --nopr --auto"}),
        )
        .await;
    assert_eq!(init["flags"]["auto"], true);
    let done = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
                   "user_confirmation": {"effort": "L", "use_current_branch": true}}),
        )
        .await;
    // The reply says how the person allows it, and never tells the caller
    // to pass --auto.
    let note = done["auto_not_granted"].as_str().expect("the note");
    assert!(note.contains("only the person grants"), "{note}");
    assert!(note.contains("config.toml"), "{note}");
    let ws = done["workspace"].as_str().unwrap().to_string();
    let mut script = Script::default();
    let q = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    assert_question_warns(&q, "checkpoint-a", "only the person grants");
    assert_eq!(q["answered_by"], "person");
    let state = repo.state(&ws);
    assert_eq!(state["autoApprove"], true, "asked for");
    assert_eq!(state["currentPhaseStatus"], "awaiting_human");
    assert!(answers(&repo, &ws).is_empty());
    // The person was told: the checkpoint event is in the log.
    assert!(
        repo.events()
            .iter()
            .any(|e| e["event"] == "checkpoint" && e["phase"] == "checkpoint-a"),
        "a waiting run is announced"
    );
    // The agent's own answer is refused as before.
    let refused = c
        .err(
            "pipeline_next_action",
            json!({"workspace": ws, "user_response": "proceed"}),
            "blocked",
        )
        .await;
    assert_eq!(refused["details"]["rule"], "person_only");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_counts_where_the_person_allows_it_in_their_own_configuration() {
    let repo = git_repo();
    let allow = PersonConfig::allowing_auto_in(repo.path());
    let (k, v) = allow.env();
    let c = spawn(repo.path(), &[], &[(k, &v)]).await;
    let ws = create(&c, "add login rate limiting", "L", "--nopr --auto").await;
    let trace = drive(&c, &repo, &ws, &mut Script::default(), &[], 80).await;
    assert_eq!(trace.last["type"], "done", "{:#?}", trace.steps);
    let by: Vec<Value> = answers(&repo, &ws)
        .iter()
        .map(|a| a["by"].clone())
        .collect();
    assert!(!by.is_empty());
    assert!(
        by.iter()
            .all(|b| *b == json!({"who": "auto", "channel": "config"})),
        "{by:?}"
    );
    c.close().await;
    // A baton.toml in the repository cannot grant either: the repository's
    // files are the agent's, and baton.toml has no such setting (a file
    // that tries is refused, naming the key).
    let repo = git_repo();
    for setting in [
        "[auto]\nrepositories = [\"*\"]\n",
        "[answers]\ntrust = [\"elicitation\"]\n",
    ] {
        std::fs::write(repo.path().join("baton.toml"), setting).unwrap();
        let out = Command::new(baton_bin())
            .args(["ls"])
            .current_dir(repo.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{setting}: {said}");
        assert!(said.contains("unknown field"), "{said}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_sent_with_a_repeated_report_is_never_dropped_silently() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let first = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(first["type"], "spawn_agent", "{first}");
    let id = first["action_id"].as_str().unwrap().to_string();
    std::fs::write(
        repo.ws_dir(&ws)
            .join(first["output_file"].as_str().unwrap()),
        "# Analysis\n\nDone.\n",
    )
    .unwrap();
    let report =
        json!({"workspace": ws, "previous_action_complete": true, "previous_action_id": id});
    let applied = c.ok("pipeline_next_action", report.clone()).await;
    // The same report again, now with an answer: the same reply, and a
    // warning that the answer was not applied.
    let mut again = report.clone();
    again["user_response"] = json!("proceed");
    let repeat = c.ok("pipeline_next_action", again).await;
    assert_eq!(repeat["action_id"], applied["action_id"]);
    assert!(
        repeat["warning"]
            .as_str()
            .is_some_and(|w| w.contains("user_response was not applied")),
        "{repeat}"
    );
    c.close().await;
}
