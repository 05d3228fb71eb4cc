//! Nothing gets past the gates: one end-to-end test through a real MCP
//! client (rmcp, over stdio) per finding of the integrity review, and resume
//! from `state.json` files baton did not write itself (the Go server's
//! version 1 and 2 layout, hand edits, states left by a crash).
//!
//! Each test names the finding it pins. Git hygiene has its own file
//! (`e2e_git.rs`) with a real repository and a bare remote.

use crate::common;

use std::process::{Command, Stdio};

use crate::common::pipeline::{Script, TASKS_MD, create, drive_until, git_repo, perform};
use crate::common::{Client, Repo, person_answer, person_answers, spawn};
use serde_json::{Value, json};

/// Events of `phase` as their kinds.
fn kinds_of(repo: &Repo, phase: &str) -> Vec<String> {
    repo.events()
        .iter()
        .filter(|e| e["phase"] == phase)
        .map(|e| e["event"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A workspace whose `state.json` is a forge file as the Go server writes
/// it (version 2: no `workflow`, no `history`, its own version key), with
/// the given fields laid over it, and the artifacts named.
fn forge_v2_workspace(
    repo: &Repo,
    name: &str,
    fields: Value,
    artifacts: &[(&str, &str)],
) -> String {
    let ws = format!(".specs/{name}");
    let dir = repo.ws_dir(&ws);
    std::fs::create_dir_all(&dir).unwrap();
    let mut doc = json!({
        "version": 2, "forge-state-mcp-version": "2.19.0",
        "specName": name.split_once('-').map(|(_, s)| s).unwrap_or(name),
        "workspace": ws, "branch": null, "effort": "M", "flowTemplate": "standard",
        "autoApprove": false, "skipPr": false, "useCurrentBranch": true,
        "branchClassified": false, "branchPushed": false, "debug": false,
        "skippedPhases": ["phase-4b", "checkpoint-b"],
        "currentPhase": "phase-1", "currentPhaseStatus": "pending",
        "completedPhases": ["setup"],
        "revisions": {"designRevisions": 0, "taskRevisions": 0, "designInlineRevisions": 0, "taskInlineRevisions": 0},
        "checkpointRevisionPending": {"checkpoint-a": false, "checkpoint-b": false},
        "needsBatchCommit": false, "tasks": {}, "phaseLog": [],
        "timestamps": {"created": "2026-03-30T09:00:00Z", "lastUpdated": "2026-03-30T10:00:00Z", "phaseStarted": null},
        "error": null
    });
    for (k, v) in fields.as_object().unwrap() {
        doc[k] = v.clone();
    }
    std::fs::write(
        dir.join("state.json"),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();
    for (file, text) in artifacts {
        std::fs::write(dir.join(file), text).unwrap();
    }
    ws
}

const REQUEST: &str = "---\nsource_type: text\n---\n\nAdd login rate limiting\n";
const DESIGN: &str = "# Design\n\n## Approach\n\nToken bucket.\n";
const APPROVE: &str = "# Review\n\n## Verdict: APPROVE\n";

fn done_through_design() -> Vec<(&'static str, &'static str)> {
    vec![
        ("request.md", REQUEST),
        ("analysis.md", "# Analysis\n\nfacts\n"),
        ("investigation.md", "# Investigation\n\nmore facts\n"),
        ("design.md", DESIGN),
        ("review-design.md", APPROVE),
        ("tasks.md", TASKS_MD),
    ]
}

/// Finding 1: one `phase_complete` ended implementation with 0 of 2 tasks
/// done and no impl-*.md. Now the recovery tool needs force and a reason,
/// and even then the gate checks every task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_1_phase_complete_cannot_end_implementation_without_its_tasks() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script = Script::default();
    let first = drive_until(&c, &repo, &ws, &mut script, |a| a["phase"] == "phase-5").await;
    assert_eq!(first["type"], "spawn_agent");
    let before = repo.snapshot();
    let e = c
        .err(
            "phase_complete",
            json!({"workspace": ws, "phase": "phase-5"}),
            "blocked",
        )
        .await;
    assert_eq!(e["details"]["rule"], "recovery_only");
    let e = c
        .err(
            "phase_complete",
            json!({"workspace": ws, "phase": "phase-5", "force": true, "reason": "done, trust me"}),
            "blocked",
        )
        .await;
    assert_eq!(e["details"]["rule"], "tasks_incomplete");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("task 1 is not implemented"),
        "{e}"
    );
    assert_eq!(repo.snapshot(), before, "a refused call changes nothing");
    assert_eq!(repo.state(&ws)["currentPhase"], "phase-5");
    c.close().await;
}

/// Finding 1: `completePhase` accepted a stale report left from a failed
/// visit. The artifact of a visit that ended is fingerprinted: reporting the
/// retry with the very same file is refused, however fast it comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_1_a_stale_artifact_from_a_failed_visit_does_not_pass() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let run = c
        .ok("startIssueWorkflow", json!({"issueNumber": "7"}))
        .await;
    let ws = run["workspace"].as_str().unwrap().to_string();
    let report = |phase: &str, status: &str, n_tasks: usize, n_criteria: usize| {
        let tasks: Vec<String> = (1..=n_tasks).map(|i| i.to_string()).collect();
        let criteria: Vec<String> = (1..=n_criteria).map(|i| i.to_string()).collect();
        json!({"issueNumber": "7", "phaseResult": {"phaseName": phase, "status": status,
            "workingFiles": [], "completedTasks": tasks, "acceptanceCriteriaMet": criteria, "notes": "tests are red"}})
    };
    let instruction = |r: &Value| {
        (
            r["instruction"]["tasks"].as_array().unwrap().len(),
            r["instruction"]["acceptanceCriteria"]
                .as_array()
                .unwrap()
                .len(),
        )
    };
    let (t, a) = instruction(&run);
    common::write_artifact(&repo, &ws, "issue.md");
    let r = c
        .ok("completePhase", report("issue_start", "completed", t, a))
        .await;
    assert_eq!(r["currentPhase"], "implementation");
    let (t, a) = instruction(&r);
    common::write_artifact(&repo, &ws, "implementation.md");
    let r = c
        .ok("completePhase", report("implementation", "failed", t, a))
        .await;
    assert_eq!(r["outcome"], "retry");
    assert_eq!(r["currentPhaseStatus"], "in_progress");
    // The retry, reported at once with the failed visit's file: refused.
    let e = c
        .err(
            "completePhase",
            report("implementation", "completed", t, a),
            "blocked",
        )
        .await;
    assert_eq!(e["details"]["rule"], "artifact_stale", "{e}");
    common::write_artifact(&repo, &ws, "implementation.md");
    std::fs::write(
        repo.ws_dir(&ws).join("implementation.md"),
        "# Implementation\n\nfixed\n",
    )
    .unwrap();
    let r = c
        .ok("completePhase", report("implementation", "completed", t, a))
        .await;
    assert_eq!(r["currentPhase"], "quality_check");
    c.close().await;
}

/// Finding 1: the advice texts pointed the agent at `phase_complete`, even
/// while a pipeline waited at a checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_1_advice_never_points_at_recovery_tools() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let info = c.ok("state_resume_info", json!({"workspace": ws})).await;
    assert!(
        info["nextStep"]
            .as_str()
            .unwrap()
            .contains("pipeline_next_action"),
        "{info}"
    );
    let mut script = Script::default();
    let cp = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    assert_eq!(cp["answered_by"], "person");
    assert!(
        cp["how_to_answer"]
            .as_str()
            .unwrap()
            .contains("baton answer"),
        "{cp}"
    );
    let info = c.ok("state_resume_info", json!({"workspace": ws})).await;
    let next = info["nextStep"].as_str().unwrap();
    assert!(
        !next.contains("phase_complete") && !next.contains("phase_start"),
        "{next}"
    );
    assert!(
        next.contains("baton answer") && next.contains("do not answer it yourself"),
        "{next}"
    );
    // The CLI says the same.
    let out = Command::new(common::baton_bin())
        .args(["state", "show", &ws])
        .current_dir(repo.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("baton answer") && !text.contains("phase_complete"),
        "{text}"
    );
    c.close().await;
}

/// Finding 2: the agent answered its own checkpoint (`user_response:
/// "approve"`). A person's question is refused to the agent; the person
/// answers at a terminal (which an agent's shell does not have), and who
/// answered through which channel is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_2_the_agent_cannot_answer_a_persons_question() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script = Script::default();
    let cp = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    assert_eq!(cp["name"], "checkpoint-a");
    let before = repo.snapshot();
    for answer in ["approve", "proceed", "revise: ship it"] {
        let e = c
            .err(
                "pipeline_next_action",
                json!({"workspace": ws, "user_response": answer}),
                "blocked",
            )
            .await;
        assert_eq!(e["details"]["rule"], "person_only", "{e}");
    }
    // Not through a recovery tool either.
    let e = c
        .err(
            "phase_complete",
            json!({"workspace": ws, "phase": "checkpoint-a", "force": true, "reason": "approved"}),
            "blocked",
        )
        .await;
    assert_eq!(e["details"]["rule"], "person_only");
    // `baton answer` run by an agent's shell (no terminal) is refused.
    let out = Command::new(common::baton_bin())
        .args(["answer", &ws, "proceed"])
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must run in a terminal"));
    assert_eq!(repo.snapshot(), before, "no refusal changed anything");
    // The person answers.
    let out = person_answer(repo.path(), &ws, "proceed");
    assert!(
        out.contains("checkpoint-a: proceed (by person:terminal)"),
        "{out}"
    );
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(next["phase"], "phase-4", "{next}");
    let state = repo.state(&ws);
    assert_eq!(
        state["answers"],
        json!([{"at": state["answers"][0]["at"], "phase": "checkpoint-a", "question": "checkpoint-a",
                "answer": "proceed", "by": {"who": "person", "channel": "terminal"}}])
    );
    let complete = repo
        .events()
        .into_iter()
        .find(|e| e["event"] == "phase-complete" && e["phase"] == "checkpoint-a")
        .unwrap();
    assert_eq!(
        complete["detail"],
        "checkpoint-a: proceed by person:terminal"
    );
    c.close().await;
}

/// Finding 4: an events log configured into the repository root made baton
/// write a `.gitignore` with `*` there, hiding the whole repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_4_configured_paths_never_hide_the_repository() {
    let repo = git_repo();
    // A log folder that is the repository root is refused, and nothing is written.
    let out = Command::new(common::baton_bin())
        .args(["serve"])
        .current_dir(repo.path())
        .env("BATON_EVENTS_LOG", repo.path().join("events.jsonl"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("contains the repository"), "{err}");
    assert!(!repo.path().join(".gitignore").exists());
    assert!(!repo.path().join("events.jsonl").exists());
    // A folder of the user's own gets the log, never an ignore file.
    std::fs::create_dir(repo.path().join("logs")).unwrap();
    std::fs::write(repo.path().join("logs/app.log"), "mine\n").unwrap();
    let c = spawn(
        repo.path(),
        &[],
        &[("BATON_EVENTS_LOG", "logs/events.jsonl")],
    )
    .await;
    c.ok("init", json!({"spec_name": "x"})).await;
    c.close().await;
    assert!(repo.path().join("logs/events.jsonl").exists());
    assert!(!repo.path().join("logs/.gitignore").exists());
    // The default folder is baton's own: it is ignored there.
    let c = spawn(repo.path(), &[], &[]).await;
    c.ok("init", json!({"spec_name": "y"})).await;
    c.close().await;
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".baton/events/.gitignore")).unwrap(),
        "*\n"
    );
}

/// Finding 5: a phase listed in `skippedPhases` on which the state rests
/// (a forge v2 file) was started and its agent dispatched, with events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_5_a_resting_skipped_phase_is_skipped_without_events() {
    let repo = git_repo();
    let ws = forge_v2_workspace(
        &repo,
        "20260330-rate-limit",
        json!({"currentPhase": "phase-4b", "completedPhases": ["setup", "phase-1", "phase-2", "phase-3", "phase-3b", "checkpoint-a", "phase-4"]}),
        &done_through_design(),
    );
    let c = spawn(repo.path(), &[], &[]).await;
    let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(a["phase"], "phase-5", "{a}");
    assert_eq!(a["type"], "spawn_agent");
    for skipped in ["phase-4b", "checkpoint-b"] {
        assert!(
            kinds_of(&repo, skipped).is_empty(),
            "{skipped}: {:?}",
            kinds_of(&repo, skipped)
        );
    }
    let state = repo.state(&ws);
    assert_eq!(state["version"], 3, "migrated");
    assert_eq!(
        state["forge-state-mcp-version"], "2.19.0",
        "unknown keys kept"
    );
    c.close().await;
}

/// Finding 5: `skipPr` was applied only when the workspace was created; a
/// run whose state says `skipPr: true` (its skip list not saying so) pushed
/// and opened a PR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_5_skip_pr_is_read_at_every_step() {
    let repo = git_repo();
    let mut files = done_through_design();
    files.extend([
        ("impl-1.md", "# impl 1\n"),
        ("impl-2.md", "# impl 2\n"),
        ("impl-3.md", "# impl 3\n"),
        ("review-1.md", "## Verdict: PASS\n"),
        ("review-2.md", "## Verdict: PASS\n"),
        ("review-3.md", "## Verdict: PASS\n"),
        ("comprehensive-review.md", "# Review\n\nfine\n"),
    ]);
    let tasks: Value = (1..=3)
        .map(|k| (k.to_string(), json!({"title": "t", "executionMode": "sequential", "implStatus": "completed", "reviewStatus": "completed_pass"})))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let ws = forge_v2_workspace(
        &repo,
        "20260330-nopr",
        json!({"currentPhase": "final-verification", "skipPr": true, "tasks": tasks,
               "completedPhases": ["setup", "phase-1", "phase-2", "phase-3", "phase-3b", "checkpoint-a", "phase-4", "phase-5", "phase-6", "phase-7"]}),
        &files,
    );
    let c = spawn(repo.path(), &[], &[]).await;
    let mut script = Script::default();
    let mut answers = std::collections::VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut commands = Vec::new();
    for _ in 0..40 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["type"] == "done" {
            break;
        }
        if a["type"] == "exec" {
            commands.push(a["commands"].to_string());
        }
        assert_ne!(a["phase"], "pr-creation");
        assert_ne!(a["phase"], "final-push");
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    }
    assert!(
        commands
            .iter()
            .all(|c| !c.contains("push") && !c.contains("\"gh\"")),
        "{commands:?}"
    );
    for phase in ["pr-creation", "final-push"] {
        let kinds: Vec<String> = kinds_of(&repo, phase)
            .into_iter()
            .filter(|k| k != "pipeline-complete")
            .collect();
        assert!(kinds.is_empty(), "{phase}: {kinds:?}");
    }
    c.close().await;
}

/// Finding 5: a GitHub issue given by `source_url`/`source_id` without
/// `external_context` got `source_type: text` (no `Closes #42`, Jira advice
/// on a GitHub issue); a text request was asked to post "as a comment to .".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_5_the_source_follows_the_url() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let url = "https://github.com/owner/repo/issues/42";
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": format!("{url} --nopr")}),
        )
        .await;
    let done = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "source_url": url, "source_id": "42", "flags": init["flags"],
                   "user_confirmation": {"effort": "S", "use_current_branch": true,
                                         "enriched_request_body": "Fix the login timeout\n\nRequests time out after 30s."}}),
        )
        .await;
    let ws = done["workspace"].as_str().unwrap().to_string();
    let request = std::fs::read_to_string(repo.ws_dir(&ws).join("request.md")).unwrap();
    assert!(request.starts_with("---\nsource_type: github_issue\nsource_url: https://github.com/owner/repo/issues/42\nsource_id: 42\n---"), "{request}");
    let mut script = Script::default();
    let q = drive_until(&c, &repo, &ws, &mut script, |a| {
        a["name"] == "post-to-source"
    })
    .await;
    assert_eq!(
        q["post_method"]["command"],
        json!([
            "gh",
            "issue",
            "comment",
            url,
            "--body-file",
            format!("{ws}/summary.md")
        ])
    );
    assert!(q["present_to_user"].as_str().unwrap().contains(url));
    // The commit message of the run names the title.
    c.close().await;

    // A text request has no source to post to: the question never comes.
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "fix typo in the help text", "S", "--nopr").await;
    let mut script = Script::default();
    let mut answers = std::collections::VecDeque::new();
    let mut args = json!({"workspace": ws});
    for _ in 0..40 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        assert_ne!(a["name"], "post-to-source", "{a}");
        if a["type"] == "done" {
            break;
        }
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    }
    c.close().await;
}

/// Finding 5: phase-5 completed although a task recorded as implemented had
/// no impl-N.md (then the reviewer was sent to read the missing file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_5_a_task_without_its_impl_file_is_implemented_again() {
    let repo = git_repo();
    let tasks = json!({
        "1": {"title": "Core", "executionMode": "sequential", "implStatus": "completed", "reviewStatus": ""},
        "2": {"title": "API", "executionMode": "parallel", "depends_on": [1], "implStatus": "completed", "reviewStatus": ""},
        "3": {"title": "CLI", "executionMode": "parallel", "depends_on": [1], "implStatus": "completed", "reviewStatus": ""}
    });
    let mut files = done_through_design();
    files.extend([("impl-1.md", "# impl 1\n"), ("impl-3.md", "# impl 3\n")]);
    let ws = forge_v2_workspace(
        &repo,
        "20260330-missing",
        json!({"currentPhase": "phase-5", "currentPhaseStatus": "in_progress", "tasks": tasks,
               "timestamps": {"created": "2026-03-30T09:00:00Z", "lastUpdated": "2026-03-30T10:00:00Z", "phaseStarted": "2026-03-30T10:00:00Z"},
               "completedPhases": ["setup", "phase-1", "phase-2", "phase-3", "phase-3b", "checkpoint-a", "phase-4"]}),
        &files,
    );
    let c = spawn(repo.path(), &[], &[]).await;
    let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(a["phase"], "phase-5", "{a}");
    assert_eq!(
        a["output_file"], "impl-2.md",
        "task 2 is implemented again: {a}"
    );
    // The report path agrees: the phase is not done.
    std::fs::write(repo.ws_dir(&ws).join("impl-2.md"), "# impl 2\n").unwrap();
    let next = c
        .ok(
            "pipeline_next_action",
            json!({"workspace": ws, "previous_action_complete": true}),
        )
        .await;
    assert_eq!(next["phase"], "phase-6", "{next}");
    c.close().await;
}

/// Finding 5: a task depending on a task that does not exist was dropped
/// silently by `pipeline_next_action` (phase-5 completed without it) while
/// `pipeline_report_result` said it was still to implement. Now both say it
/// is not done, and a person decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_5_a_task_that_can_never_start_goes_to_a_person() {
    let repo = git_repo();
    let tasks = json!({
        "1": {"title": "Core", "executionMode": "sequential", "implStatus": "completed", "reviewStatus": ""},
        "4": {"title": "Docs", "executionMode": "sequential", "depends_on": [9], "implStatus": "pending", "reviewStatus": ""}
    });
    let mut files = done_through_design();
    files.push(("impl-1.md", "# impl 1\n"));
    let ws = forge_v2_workspace(
        &repo,
        "20260330-stuck",
        json!({"currentPhase": "phase-5", "currentPhaseStatus": "in_progress", "tasks": tasks,
               "timestamps": {"created": "2026-03-30T09:00:00Z", "lastUpdated": "2026-03-30T10:00:00Z", "phaseStarted": "2026-03-30T10:00:00Z"},
               "completedPhases": ["setup", "phase-1", "phase-2", "phase-3", "phase-3b", "checkpoint-a", "phase-4"]}),
        &files,
    );
    let c = spawn(repo.path(), &[], &[]).await;
    let r = c
        .ok(
            "pipeline_report_result",
            json!({"workspace": ws, "phase": "phase-5"}),
        )
        .await;
    assert_eq!(r["next_action_hint"], "setup_continue");
    assert!(
        r["warning"]
            .as_str()
            .unwrap()
            .contains("tasks still to implement: 4"),
        "{r}"
    );
    let q = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(q["type"], "checkpoint", "{q}");
    assert_eq!(q["name"], "phase-5-stuck-tasks");
    assert_eq!(q["answered_by"], "person");
    assert!(
        q["present_to_user"]
            .as_str()
            .unwrap()
            .contains("depends on task 9, which does not exist"),
        "{q}"
    );
    assert_eq!(repo.state(&ws)["currentPhase"], "phase-5");
    person_answer(repo.path(), &ws, "skip");
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(next["phase"], "phase-6", "{next}");
    assert_eq!(
        repo.state(&ws)["tasks"]["4"]["reviewStatus"],
        "skipped_by_human"
    );
    c.close().await;
}

/// Finding 6: with a corrupt state.json, `getCurrentPhase` said there was no
/// workflow for the issue, and `startIssueWorkflow` created a second run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_6_a_corrupt_state_never_creates_a_second_run() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let run = c
        .ok("startIssueWorkflow", json!({"issueNumber": "43"}))
        .await;
    let ws = run["workspace"].as_str().unwrap().to_string();
    let file = repo.ws_dir(&ws).join("state.json");
    let good = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, &good[..good.len() / 2]).unwrap();
    for (tool, args) in [
        ("getCurrentPhase", json!({"issueNumber": "43"})),
        ("getWorkflowStatus", json!({"issueNumber": "43"})),
        ("startIssueWorkflow", json!({"issueNumber": "43"})),
        ("getCurrentPhase", json!({"workspace": ws})),
    ] {
        let e = c.err(tool, args, "corrupt_state").await;
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("state.json") && message.contains("restore"),
            "{tool}: {message}"
        );
        assert!(
            e["details"]["file"]
                .as_str()
                .unwrap()
                .ends_with("state.json")
        );
    }
    let runs: Vec<_> = std::fs::read_dir(repo.specs())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("issue-43"))
        .collect();
    assert_eq!(runs.len(), 1, "no second run");
    std::fs::write(&file, &good).unwrap();
    let r = c.ok("getCurrentPhase", json!({"issueNumber": "43"})).await;
    assert_eq!(r["workspace"], ws);
    c.close().await;
}

/// Finding 7: `revise: <text>` at an unknown-verdict question never reached
/// the next agent's prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_7_a_persons_revision_text_reaches_the_next_prompt() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script =
        Script::default().with("review-design.md", &["# Review\n\nLooks fine I guess.\n"]);
    let q = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    assert_eq!(q["name"], "phase-3b-unknown-verdict");
    person_answer(
        repo.path(),
        &ws,
        "revise: handle token expiry and clock skew",
    );
    let next = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(next["phase"], "phase-3", "{next}");
    let prompt = next["prompt"].as_str().unwrap();
    assert!(prompt.contains("## Human Feedback"), "{prompt}");
    assert!(
        prompt.contains("handle token expiry and clock skew"),
        "{prompt}"
    );
    c.close().await;
}

/// The answers a person gives are checked like any other input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_answer_must_be_an_option_and_needs_a_question() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let nothing = person_answers(repo.path(), &ws, "proceed");
    assert!(!nothing.ok);
    assert!(nothing.output.contains("nothing in"), "{}", nothing.output);
    let mut script = Script::default();
    drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    let bad = person_answers(repo.path(), &ws, "perhaps");
    assert!(!bad.ok);
    assert!(
        bad.output.contains("proceed, revise, abandon"),
        "{}",
        bad.output
    );
    c.close().await;
}

/// Where the person trusts elicitation in their own configuration, they
/// answer through the client itself when it supports MCP elicitation: the
/// server asks, the client's user answers, the answer is recorded as the
/// client's (`client:elicitation`, issue 19: the channel is the client's,
/// the trust the person's), and the agent receives the next action.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_lets_the_clients_user_answer_where_the_person_trusts_it() {
    let repo = git_repo();
    let trust = baton_testkit::person::PersonConfig::trusting_elicitation();
    let (k, v) = trust.env();
    let person = common::elicit::Person::answering(&["revise: split the rate limiter", "proceed"]);
    let c: Client =
        common::elicit::spawn_with_person_env(repo.path(), person.clone(), &[(k, &v)]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script = Script::default();
    // The agent never sees checkpoint-a: the person answered it in the client.
    let a = drive_until(&c, &repo, &ws, &mut script, |a| {
        a["phase"] == "phase-3"
            && a["prompt"]
                .as_str()
                .is_some_and(|p| p.contains("split the rate limiter"))
    })
    .await;
    assert_eq!(a["type"], "spawn_agent");
    let asked = person.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("checkpoint-a"), "{asked:?}");
    let state = repo.state(&ws);
    assert_eq!(
        state["answers"][0]["by"],
        json!({"who": "client", "channel": "elicitation"})
    );
    assert_eq!(state["answers"][0]["feedback"], "split the rate limiter");
    c.close().await;
}

/// Finding 5, resumed: a version-1 file (no `version` key, as the oldest Go
/// server wrote) whose request.md front matter says `text` but names a
/// GitHub issue: the URL decides, so the run posts to that issue with `gh`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_5_a_resumed_v1_run_takes_its_source_from_the_url() {
    let repo = git_repo();
    let request = "---\nsource_type: text\nsource_url: https://github.com/owner/repo/issues/42\nsource_id: 42\n---\n\nFix the login timeout\n";
    let mut files: Vec<(&str, &str)> = done_through_design()
        .into_iter()
        .filter(|(f, _)| *f != "request.md")
        .collect();
    files.push(("request.md", request));
    files.push(("impl-1.md", "# impl\n"));
    files.push(("comprehensive-review.md", "# Review\n\nfine\n"));
    files.push(("final-verification.md", "# Verification\n\nfine\n"));
    let tasks = json!({"1": {"title": "Implement", "executionMode": "sequential", "implStatus": "completed", "reviewStatus": ""}});
    let ws = forge_v2_workspace(
        &repo,
        "20260330-v1",
        json!({"version": null, "effort": "S", "flowTemplate": "light", "skipPr": true, "tasks": tasks,
               "skippedPhases": ["phase-2", "phase-4", "phase-4b", "checkpoint-b", "phase-6", "pr-creation", "final-push"],
               "currentPhase": "final-summary",
               "completedPhases": ["setup", "phase-1", "phase-3", "phase-3b", "checkpoint-a", "phase-5", "phase-7", "final-verification"]}),
        &files,
    );
    let c = spawn(repo.path(), &[], &[]).await;
    let mut script = Script::default();
    let q = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    assert_eq!(q["name"], "post-to-source", "{q}");
    assert_eq!(q["post_method"]["command"][0], "gh");
    assert_eq!(
        q["post_method"]["command"][3],
        "https://github.com/owner/repo/issues/42"
    );
    assert_eq!(repo.state(&ws)["version"], 3);
    c.close().await;
}
