//! Workflows are data: a review phase in a workflow of the user's own
//! (`.baton/workflows/`) gets the same verdict gate as the built-in
//! pipeline's design review — a review without a verdict stops for a
//! person, REVISE sends the work back with the review as input, APPROVE
//! lets it go on — because the rule comes from the definition (`verdicts`
//! implies the `review` rule), never from a phase id in the engine.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::pipeline::{Script, create, drive_until, git_repo, perform_and_next};
use crate::common::{Client, Repo, person_answer, spawn};

/// A memo, its review and its publication: the shape of forge's design
/// loop under names of the user's own.
const MEMO: &str = "id: memo
label: Memo with a review
driven_by: loop
phases:
  - id: draft
    label: Draft
    kind: agent
    agent: architect
    inputs: [request.md, memo-review.md]
    artifacts: [memo.md]
    max_visits: 4
  - id: memo-review
    label: Memo review
    kind: review
    agent: design-reviewer
    inputs: [memo.md]
    artifacts: [memo-review.md]
    verdicts: [APPROVE, APPROVE_WITH_NOTES, REVISE]
    transitions:
      - when: {verdict: [REVISE]}
        goto: draft
  - id: publish
    label: Publish
    kind: agent
    agent: verifier
    artifacts: [published.md]
";

/// The review loop of one workflow, by name.
struct ReviewLoop {
    author: &'static str,
    review: &'static str,
    file: &'static str,
}

/// Walks the review loop: no verdict (a person sends it back), REVISE,
/// APPROVE; returns what the run did at each step with the loop's own
/// names replaced, so two workflows can be compared line by line.
async fn walk(c: &Client, repo: &Repo, ws: &str, l: &ReviewLoop) -> Vec<String> {
    let unclear = "# Review\n\nLooks fine I guess.\n";
    let revise = "# Review\n\n## Verdict: REVISE\n\n**1. [CRITICAL] No rollback plan**\n";
    let approve = "# Review\n\n## Verdict: APPROVE\n";
    let mut script = Script::default().with(l.file, &[unclear, revise, approve]);
    let name = |s: &str| {
        s.replace(l.review, "REVIEW")
            .replace(l.author, "AUTHOR")
            .replace(l.file, "REVIEW_FILE")
    };
    let step = |a: &Value| {
        name(&format!(
            "{} {} hint={} verdict={} reads_review={}",
            a["type"].as_str().unwrap_or(""),
            a["phase"].as_str().unwrap_or(""),
            a["report_result"]["next_action_hint"],
            a["report_result"]["verdict_parsed"],
            a["input_files"]
                .as_array()
                .is_some_and(|f| f.contains(&json!(l.file))),
        ))
    };
    let mut seen = Vec::new();
    // 1. The review states no verdict: a person decides, never an approval.
    let q = drive_until(c, repo, ws, &mut script, |a| a["type"] == "checkpoint").await;
    seen.push(name(&format!(
        "question {} options={} why_no_verdict={}",
        q["name"].as_str().unwrap_or(""),
        q["options"],
        q["warning"]
            .as_str()
            .is_some_and(|w| w.contains("no clear verdict")),
    )));
    person_answer(repo.path(), ws, "revise: say how to roll back");
    let again = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    seen.push(format!("after revise: {}", step(&again)));
    assert!(
        again["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("say how to roll back")),
        "the person's words reach the author: {again}"
    );
    // 2. REVISE: back to the author, who reads the review.
    let review = perform_and_next(c, repo, ws, &again, &mut script).await;
    seen.push(format!("then: {}", step(&review)));
    let revised = perform_and_next(c, repo, ws, &review, &mut script).await;
    seen.push(format!("REVISE: {}", step(&revised)));
    seen.push(name(&format!(
        "findings={}",
        revised["report_result"]["findings"]
    )));
    // 3. APPROVE: out of the loop.
    let review = perform_and_next(c, repo, ws, &revised, &mut script).await;
    seen.push(format!("then: {}", step(&review)));
    let approved = perform_and_next(c, repo, ws, &review, &mut script).await;
    seen.push(format!(
        "APPROVE: hint={} verdict={} leaves_the_loop={}",
        approved["report_result"]["next_action_hint"],
        approved["report_result"]["verdict_parsed"],
        approved["phase"] != l.author && approved["phase"] != l.review,
    ));
    let revisions = repo
        .events()
        .iter()
        .filter(|e| e["event"] == "revision-required" && e["workspace"] == ws)
        .count();
    seen.push(format!("revision-required events: {revisions}"));
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_review_phase_gets_the_same_verdict_gate_as_the_built_in_pipeline() {
    // The built-in pipeline's design review.
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let forge = walk(
        &c,
        &repo,
        &ws,
        &ReviewLoop {
            author: "phase-3",
            review: "phase-3b",
            file: "review-design.md",
        },
    )
    .await;
    c.close().await;

    // The same loop in a workflow of the user's own.
    let repo = git_repo();
    let dir = repo.path().join(".baton/workflows");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("memo.yaml"), MEMO).unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let run = c
        .ok(
            "workflow_start",
            json!({"workflow": "memo", "specName": "release memo"}),
        )
        .await;
    let ws = run["workspace"].as_str().unwrap().to_string();
    let memo = walk(
        &c,
        &repo,
        &ws,
        &ReviewLoop {
            author: "draft",
            review: "memo-review",
            file: "memo-review.md",
        },
    )
    .await;
    c.close().await;

    assert_eq!(
        forge,
        [
            "question REVIEW-unknown-verdict options=[\"approve\",\"revise\",\"abandon\"] why_no_verdict=true",
            "after revise: spawn_agent AUTHOR hint=null verdict=null reads_review=true",
            "then: spawn_agent REVIEW hint=\"proceed\" verdict=\"\" reads_review=false",
            "REVISE: spawn_agent AUTHOR hint=\"revision_required\" verdict=\"REVISE\" reads_review=true",
            "findings=[{\"description\":\"No rollback plan\",\"severity\":\"CRITICAL\"}]",
            "then: spawn_agent REVIEW hint=\"proceed\" verdict=\"\" reads_review=false",
            "APPROVE: hint=\"proceed\" verdict=\"APPROVE\" leaves_the_loop=true",
            "revision-required events: 1",
        ],
        "{forge:#?}"
    );
    assert_eq!(memo, forge, "the user's review loop behaves as forge's");
    assert_no_stale_review(&repo, &ws);
}

/// The approved review is the one on disk, and the run moved on.
fn assert_no_stale_review(repo: &Repo, ws: &str) {
    let state = repo.state(ws);
    let completed: Vec<&str> = state["completedPhases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(completed.contains(&"memo-review"), "{state}");
    assert_eq!(state["currentPhase"], "publish", "{state}");
    let review =
        std::fs::read_to_string(Path::new(&repo.ws_dir(ws)).join("memo-review.md")).unwrap();
    assert!(review.contains("APPROVE"), "{review}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_cannot_approve_what_a_user_review_sent_back() {
    // The completePhase path of a report-driven workflow: the verdict a
    // report names must be the review file's, as in the built-in pipeline.
    let repo = git_repo();
    let dir = repo.path().join(".baton/workflows");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("memo.yaml"),
        MEMO.replace("driven_by: loop\n", "").replace(
            "max_visits: 4",
            "max_visits: 4\n    instruction: {tasks: [Write memo.md]}",
        ),
    )
    .unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let run = c
        .ok(
            "workflow_start",
            json!({"workflow": "memo", "specName": "memo"}),
        )
        .await;
    let ws = run["workspace"].as_str().unwrap().to_string();
    let write = |file: &str, text: &str| {
        std::fs::write(repo.ws_dir(&ws).join(file), text).unwrap();
    };
    let report = |phase: &str, verdict: Option<&str>| {
        let mut result = json!({"phaseName": phase, "status": "completed", "workingFiles": [],
            "completedTasks": ["1"], "acceptanceCriteriaMet": []});
        if let Some(v) = verdict {
            result["verdict"] = json!(v);
        }
        json!({"workspace": ws, "phaseResult": result})
    };
    write("memo.md", "# Memo\n");
    c.ok("completePhase", report("draft", None)).await;
    write("memo-review.md", "# Review\n\n## Verdict: REVISE\n");
    let refused = c
        .call("completePhase", report("memo-review", Some("APPROVE")))
        .await
        .unwrap_err();
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("memo-review.md says REVISE")),
        "{refused}"
    );
    let sent_back = c
        .ok("completePhase", report("memo-review", Some("REVISE")))
        .await;
    assert_eq!(sent_back["currentPhase"], "draft", "{sent_back}");
    c.close().await;
}
