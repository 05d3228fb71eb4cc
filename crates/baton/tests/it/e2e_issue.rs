//! End-to-end: seed 004's issue workflow through a real MCP client.

use crate::common;

use crate::common::{Client, Repo, spawn, write_artifact};
use serde_json::{Value, json};

const ARTIFACT: &[(&str, &str)] = &[
    ("issue_start", "issue.md"),
    ("implementation", "implementation.md"),
    ("quality_check", "quality-report.md"),
    ("pr_creation", "pr.md"),
    ("fix", "fix-report.md"),
    ("completion", "retrospective.md"),
];

fn artifact(phase: &str) -> &'static str {
    ARTIFACT.iter().find(|(p, _)| *p == phase).unwrap().1
}

/// A complete, truthful report for the current phase: every task and
/// criterion by number, after writing the artifact.
async fn report(c: &Client, repo: &Repo, issue: &str, ok: bool, files: &[&str]) -> Value {
    let current = c.ok("getCurrentPhase", json!({"issueNumber": issue})).await;
    let phase = current["currentPhase"].as_str().unwrap().to_string();
    let ws = current["workspace"].as_str().unwrap().to_string();
    let instruction = &current["instruction"];
    write_artifact(repo, &ws, artifact(&phase));
    let numbers = |key: &str| -> Vec<String> {
        (1..=instruction[key].as_array().unwrap().len())
            .map(|i| i.to_string())
            .collect()
    };
    let mut result = json!({
        "phaseName": phase,
        "status": if ok { "completed" } else { "failed" },
        "workingFiles": files,
        "completedTasks": numbers("tasks"),
        "acceptanceCriteriaMet": numbers("acceptanceCriteria"),
    });
    if !ok {
        result["notes"] = json!("CI: 2 checks failed (unit tests)");
    }
    c.ok(
        "completePhase",
        json!({"issueNumber": issue, "phaseResult": result}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_walks_the_six_phases_and_carries_working_files() {
    let repo = Repo::new();
    std::fs::write(repo.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let start = c
        .ok("startIssueWorkflow", json!({"issueNumber": "#42"}))
        .await;
    assert_eq!(start["issueNumber"], "42");
    assert_eq!(start["currentPhase"], "issue_start");
    assert_eq!(start["currentPhaseStatus"], "in_progress");
    assert_eq!(start["events"], json!(["pipeline-init", "phase-start"]));
    let i = &start["instruction"];
    assert_eq!(i["phaseName"], "issue_start");
    assert!(i["preconditions"].as_array().unwrap().len() >= 2);
    assert!(i["acceptanceCriteria"].as_array().unwrap().len() >= 3);
    assert_eq!(i["artifacts"], json!(["issue.md"]));

    let r = report(&c, &repo, "42", true, &["src/lib.rs"]).await;
    assert_eq!(r["completedPhase"], "issue_start");
    assert_eq!(r["outcome"], "advanced");
    assert_eq!(r["currentPhase"], "implementation");
    assert_eq!(r["events"], json!(["phase-complete", "phase-start"]));
    let r = report(&c, &repo, "42", true, &["src/lib.rs", "./tests/it.rs"]).await;
    assert_eq!(r["currentPhase"], "quality_check");
    // The quality check carries the commands detected from the repository.
    let commands: Vec<String> = r["instruction"]["context"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        commands,
        [
            "cargo fmt --all -- --check",
            "cargo clippy --all-targets -- -D warnings",
            "cargo test --all-targets"
        ]
    );
    let r = report(&c, &repo, "42", true, &[]).await;
    assert_eq!(r["currentPhase"], "pr_creation");
    let r = report(&c, &repo, "42", true, &[]).await;
    assert_eq!(
        r["currentPhase"], "completion",
        "green CI leads to completion, never past it"
    );
    assert!(
        r["instruction"]["tasks"][1]
            .as_str()
            .unwrap()
            .contains("retrospective")
    );
    let r = report(&c, &repo, "42", true, &["CHANGELOG.md"]).await;
    assert_eq!(r["outcome"], "completed");
    assert_eq!(r["currentPhase"], "completed");
    assert!(r["instruction"].is_null());
    assert_eq!(r["events"], json!(["phase-complete", "pipeline-complete"]));
    assert_eq!(
        r["workingFiles"],
        json!(["src/lib.rs", "tests/it.rs", "CHANGELOG.md"])
    );

    let status = c
        .ok("getWorkflowStatus", json!({"issueNumber": "42"}))
        .await;
    assert_eq!(status["active"], false);
    assert_eq!(
        status["completedPhases"],
        json!([
            "issue_start",
            "implementation",
            "quality_check",
            "pr_creation",
            "completion"
        ])
    );
    assert_eq!(status["phaseHistory"].as_array().unwrap().len(), 5);
    assert_eq!(status["stats"]["recoveryTrips"], 0);
    // Completion is terminal.
    c.err(
        "completePhase",
        json!({"issueNumber": "42", "phaseResult": {"phaseName": "completion", "status": "completed", "workingFiles": [], "completedTasks": []}}),
        "invalid_state",
    )
    .await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ci_failing_twice_goes_through_fix_and_back_through_the_quality_check() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    c.ok("startIssueWorkflow", json!({"issueNumber": "7"}))
        .await;
    for _ in 0..2 {
        report(&c, &repo, "7", true, &[]).await;
    }
    let mut path = Vec::new();
    for ci_green in [false, false, true] {
        let r = report(&c, &repo, "7", true, &[]).await; // quality_check passes
        assert_eq!(r["currentPhase"], "pr_creation");
        let r = report(&c, &repo, "7", ci_green, &[]).await;
        path.push(r["currentPhase"].as_str().unwrap().to_string());
        if !ci_green {
            // The second trip tells the agent it is back in fix.
            let trip = path.len();
            assert_eq!(r["visit"], trip);
            if trip > 1 {
                assert_eq!(r["instruction"]["context"]["visit"], trip);
            }
            let r = report(&c, &repo, "7", true, &["src/fix.rs"]).await; // fix
            assert_eq!(
                r["currentPhase"], "quality_check",
                "fix leads back to the quality check"
            );
        }
    }
    assert_eq!(path, ["fix", "fix", "completion"]);
    let status = c.ok("getWorkflowStatus", json!({"issueNumber": "7"})).await;
    assert_eq!(status["stats"]["recoveryTrips"], 2);
    let visits: Vec<(String, u64)> = status["stats"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["phase"].as_str().unwrap().to_string(),
                p["visits"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(visits.contains(&("quality_check".to_string(), 3)));
    assert!(visits.contains(&("pr_creation".to_string(), 3)));
    let stats = c.ok("workflow_stats", json!({"workflow": "issue"})).await;
    assert_eq!(stats["byWorkflow"]["issue"]["recoveryTrips"], 2);
    assert_eq!(stats["byWorkflow"]["issue"]["phaseVisits"]["fix"], 2);

    // A failed quality check can only go forward through fix, never to the PR.
    report(&c, &repo, "7", true, &[]).await; // completion → done
    c.ok("startIssueWorkflow", json!({"issueNumber": "8"}))
        .await;
    report(&c, &repo, "8", true, &[]).await;
    report(&c, &repo, "8", true, &[]).await;
    let r = report(&c, &repo, "8", false, &[]).await;
    assert_eq!(r["currentPhase"], "fix");
    write_artifact(&repo, r["workspace"].as_str().unwrap(), "fix-report.md");
    let e = c
        .err(
            "completePhase",
            json!({"issueNumber": "8", "phaseResult": {"phaseName": "fix", "status": "completed", "workingFiles": [], "completedTasks": ["1","2","3","4"], "acceptanceCriteriaMet": ["1","2"], "nextPhase": "pr_creation"}}),
            "invalid_parameter",
        )
        .await;
    assert_eq!(e["details"]["field"], "phaseResult.nextPhase");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reports_and_inputs_are_refused_and_change_nothing() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    c.err(
        "startIssueWorkflow",
        json!({"issueNumber": 42}),
        "invalid_parameter",
    )
    .await;
    c.err("startIssueWorkflow", json!({}), "invalid_parameter")
        .await;
    c.err(
        "startIssueWorkflow",
        json!({"issueNumber": ""}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "startIssueWorkflow",
        json!({"issueNumber": "../../etc"}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "startIssueWorkflow",
        json!({"issueNumber": "1; rm -rf /"}),
        "invalid_parameter",
    )
    .await;
    c.err("getCurrentPhase", json!({}), "not_found").await;
    let start = c
        .ok("startIssueWorkflow", json!({"issueNumber": "5"}))
        .await;
    let ws = start["workspace"].as_str().unwrap().to_string();
    let e = c
        .err(
            "startIssueWorkflow",
            json!({"issueNumber": "5"}),
            "conflict",
        )
        .await;
    assert_eq!(e["details"]["workspace"], ws);
    let before = repo.snapshot();

    let base = |phase: &str| json!({"phaseName": phase, "status": "completed", "workingFiles": [], "completedTasks": ["1","2","3","4"], "acceptanceCriteriaMet": ["1","2","3","4"]});
    let call = |result: Value| json!({"issueNumber": "5", "phaseResult": result});
    // Shape errors.
    c.err(
        "completePhase",
        json!({"issueNumber": "5"}),
        "invalid_parameter",
    )
    .await;
    let mut r = base("issue_start");
    r["status"] = json!("done");
    let e = c.err("completePhase", call(r), "invalid_parameter").await;
    assert_eq!(e["details"]["field"], "phaseResult.status");
    let mut r = base("issue_start");
    r.as_object_mut().unwrap().remove("completedTasks");
    c.err("completePhase", call(r), "invalid_parameter").await;
    let mut r = base("issue_start");
    r["completedAt"] = json!("yesterday");
    c.err("completePhase", call(r), "invalid_parameter").await;
    // Not the current phase; unknown phase.
    c.err(
        "completePhase",
        call(base("implementation")),
        "invalid_state",
    )
    .await;
    c.err("completePhase", call(base("deploy")), "invalid_parameter")
        .await;
    // The artifact is missing.
    let e = c
        .err("completePhase", call(base("issue_start")), "blocked")
        .await;
    assert_eq!(e["details"]["rule"], "artifact_missing");
    write_artifact(&repo, &ws, "issue.md");
    let before_with_artifact = repo.snapshot();
    // Tasks or criteria not accounted for.
    let mut r = base("issue_start");
    r["completedTasks"] = json!(["1", "2"]);
    let e = c.err("completePhase", call(r), "blocked").await;
    assert_eq!(e["details"]["rule"], "tasks_incomplete");
    assert!(e["message"].as_str().unwrap().contains("3. "));
    let mut r = base("issue_start");
    r["acceptanceCriteriaMet"] = json!([]);
    let e = c.err("completePhase", call(r), "blocked").await;
    assert_eq!(e["details"]["rule"], "criteria_unmet");
    // A failure must say why.
    let mut r = base("issue_start");
    r["status"] = json!("failed");
    let e = c.err("completePhase", call(r), "blocked").await;
    assert_eq!(e["details"]["rule"], "failure_unexplained");
    // Working files must stay inside the repository.
    for bad in ["../outside.rs", "/etc/passwd", "src/../../x"] {
        let mut r = base("issue_start");
        r["workingFiles"] = json!([bad]);
        c.err("completePhase", call(r), "out_of_scope").await;
    }
    assert_eq!(
        repo.snapshot(),
        before_with_artifact,
        "refused reports change nothing"
    );
    assert_ne!(before, before_with_artifact);

    // A stale artifact (written before the phase started) does not count.
    let r = c.ok("completePhase", call(base("issue_start"))).await;
    assert_eq!(r["currentPhase"], "implementation");
    write_artifact(&repo, &ws, "implementation.md");
    let r = c
        .ok("completePhase", call(json!({"phaseName": "implementation", "status": "completed", "workingFiles": [], "completedTasks": ["1","2","3","4"], "acceptanceCriteriaMet": ["1","2","3","4"]})))
        .await;
    assert_eq!(r["currentPhase"], "quality_check");
    let qc = |status: &str| json!({"phaseName": "quality_check", "status": status, "workingFiles": [], "completedTasks": ["1","2","3"], "acceptanceCriteriaMet": ["1","2"], "notes": "lint failed"});
    write_artifact(&repo, &ws, "quality-report.md");
    c.ok("completePhase", call(qc("failed"))).await; // → fix
    write_artifact(&repo, &ws, "fix-report.md");
    c.ok("completePhase", call(json!({"phaseName": "fix", "status": "completed", "workingFiles": [], "completedTasks": ["1","2","3","4"], "acceptanceCriteriaMet": ["1","2"]}))).await;
    // Back in quality_check: the old quality-report.md is from the previous visit.
    let quality = repo.ws_dir(&ws).join("quality-report.md");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&quality)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let e = c
        .err("completePhase", call(qc("completed")), "blocked")
        .await;
    assert_eq!(e["details"]["rule"], "artifact_stale");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_in_every_phase_resumes_where_it_stopped() {
    let repo = Repo::new();
    let mut c = spawn(repo.path(), &[], &[]).await;
    c.ok("startIssueWorkflow", json!({"issueNumber": "9"}))
        .await;
    let expected = [
        "implementation",
        "quality_check",
        "pr_creation",
        "completion",
        "completed",
    ];
    for next in expected {
        c.close().await;
        c = spawn(repo.path(), &[], &[]).await;
        let r = report(&c, &repo, "9", true, &[]).await;
        assert_eq!(r["currentPhase"], next);
        c.close().await;
        c = spawn(repo.path(), &[], &[]).await;
        let status = c.ok("getWorkflowStatus", json!({"issueNumber": "9"})).await;
        assert_eq!(status["currentPhase"], next, "state survives the restart");
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_issues_run_in_parallel_and_calls_name_their_issue() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    c.ok("startIssueWorkflow", json!({"issueNumber": "11"}))
        .await;
    // With one active issue, the issue may be omitted.
    assert_eq!(
        c.ok("getCurrentPhase", json!({})).await["issueNumber"],
        "11"
    );
    c.ok("startIssueWorkflow", json!({"issueNumber": "12"}))
        .await;
    let e = c
        .err("getCurrentPhase", json!({}), "invalid_parameter")
        .await;
    assert_eq!(e["details"]["candidates"].as_array().unwrap().len(), 2);
    report(&c, &repo, "11", true, &["a.rs"]).await;
    report(&c, &repo, "12", true, &["b.rs"]).await;
    report(&c, &repo, "12", true, &["b2.rs"]).await;
    let a = c.ok("getCurrentPhase", json!({"issueNumber": "11"})).await;
    let b = c.ok("getCurrentPhase", json!({"issueNumber": "12"})).await;
    assert_eq!(a["currentPhase"], "implementation");
    assert_eq!(b["currentPhase"], "quality_check");
    assert_eq!(a["workingFiles"], json!(["a.rs"]));
    assert_eq!(b["workingFiles"], json!(["b.rs", "b2.rs"]));
    let e = c
        .err(
            "getCurrentPhase",
            json!({"issueNumber": "11", "workspace": b["workspace"]}),
            "invalid_parameter",
        )
        .await;
    assert_eq!(e["details"]["field"], "issueNumber");

    // A finished run can be restarted (a new run) and archived.
    c.ok("abandon", json!({"workspace": a["workspace"]})).await;
    let again = c
        .ok("startIssueWorkflow", json!({"issueNumber": "11"}))
        .await;
    assert_ne!(again["workspace"], a["workspace"]);
    assert!(
        again["workspace"]
            .as_str()
            .unwrap()
            .ends_with("-issue-11-2")
    );
    c.err(
        "workflow_archive",
        json!({"workspace": again["workspace"]}),
        "invalid_state",
    )
    .await;
    let archived = c
        .ok("workflow_archive", json!({"workspace": a["workspace"]}))
        .await;
    assert!(
        archived["archived_to"]
            .as_str()
            .unwrap()
            .starts_with(".specs/archive/")
    );
    assert!(!repo.path().join(a["workspace"].as_str().unwrap()).exists());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_defined_workflow_from_the_docs_runs_on_the_same_engine() {
    let repo = Repo::new();
    common::install_example_workflow(&repo);
    let dir = repo.path().join(".baton/workflows");
    std::fs::write(
        dir.join("broken.yaml"),
        "id: broken\nlabel: B\nphases: []\n",
    )
    .unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let defs = c.ok("workflow_definitions", json!({})).await;
    let ids: Vec<&str> = defs["workflows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["forge", "issue", "release"]);
    assert_eq!(defs["errors"][0]["field"], "phases");

    let run = c
        .ok(
            "workflow_start",
            json!({"workflow": "release", "specName": "v1.2.0"}),
        )
        .await;
    let ws = run["workspace"].as_str().unwrap().to_string();
    assert_eq!(run["currentPhase"], "changelog");
    let done = |phase: &str, tasks: usize, status: &str| {
        json!({"workspace": ws, "phaseResult": {"phaseName": phase, "status": status, "workingFiles": [],
            "completedTasks": (1..=tasks).map(|i| i.to_string()).collect::<Vec<_>>(),
            "acceptanceCriteriaMet": ["1"], "notes": "failed checks"}})
    };
    write_artifact(&repo, &ws, "changelog.md");
    assert_eq!(
        c.ok("completePhase", done("changelog", 2, "completed"))
            .await["currentPhase"],
        "verify"
    );
    write_artifact(&repo, &ws, "verify.md");
    assert_eq!(
        c.ok("completePhase", done("verify", 1, "failed")).await["currentPhase"],
        "repair"
    );
    write_artifact(&repo, &ws, "repair.md");
    assert_eq!(
        c.ok("completePhase", done("repair", 1, "completed")).await["currentPhase"],
        "verify"
    );
    write_artifact(&repo, &ws, "verify.md");
    let r = c.ok("completePhase", done("verify", 1, "completed")).await;
    assert_eq!(r["currentPhase"], "approval");
    assert_eq!(
        r["currentPhaseStatus"], "pending",
        "a checkpoint waits for a person"
    );
    // The agent cannot pass the checkpoint, with or without force…
    let e = c
        .err(
            "phase_complete",
            json!({"force": true, "reason": "test", "workspace": ws, "phase": "approval"}),
            "blocked",
        )
        .await;
    assert_eq!(e["details"]["rule"], "person_only");
    // …a person answers it at their terminal, and the next phase starts.
    let out = common::person_answer(repo.path(), &ws, "proceed");
    assert!(out.contains("by person:terminal"), "{out}");
    let r = c.ok("getCurrentPhase", json!({"workspace": ws})).await;
    assert_eq!(r["currentPhase"], "publish");
    assert_eq!(r["currentPhaseStatus"], "in_progress");
    write_artifact(&repo, &ws, "publish.md");
    let r = c.ok("completePhase", done("publish", 2, "completed")).await;
    assert_eq!(r["currentPhase"], "completed");
    c.close().await;
}

/// The seed pipeline's review loop is data too: through the generic tools, a
/// design REVISE goes back to the design phase, then APPROVE reaches the
/// human checkpoint; a stale design from the first round does not count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forge_design_revise_then_approve_runs_on_the_same_engine() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let run = c
        .ok(
            "workflow_start",
            json!({"workflow": "forge", "specName": "fix auth"}),
        )
        .await;
    let ws = run["workspace"].as_str().unwrap().to_string();
    let report = |phase: &str, verdict: Option<&str>| {
        let mut r = json!({"phaseName": phase, "status": "completed", "workingFiles": [], "completedTasks": []});
        if let Some(v) = verdict {
            r["verdict"] = json!(v);
        }
        json!({"workspace": ws, "phaseResult": r})
    };
    let write = |name: &str, text: &str| std::fs::write(repo.ws_dir(&ws).join(name), text).unwrap();
    let design = "# Design\n\n## Approach\n\nToken bucket.\n";
    for (phase, file) in [("phase-1", "analysis.md"), ("phase-2", "investigation.md")] {
        write_artifact(&repo, &ws, file);
        c.ok("completePhase", report(phase, None)).await;
    }
    // The seed pipeline's own artifact rules hold on this path too.
    write_artifact(&repo, &ws, "design.md");
    let e = c
        .err("completePhase", report("phase-3", None), "blocked")
        .await;
    assert_eq!(e["details"]["rule"], "artifact_invalid");
    write("design.md", design);
    c.ok("completePhase", report("phase-3", None)).await;
    write(
        "review-design.md",
        "# Review\n\n## Verdict: REVISE\n\n**1. [CRITICAL] No expiry**\n",
    );
    // A review needs its verdict, and it is the file's.
    let e = c
        .err("completePhase", report("phase-3b", None), "blocked")
        .await;
    assert_eq!(e["details"]["rule"], "verdict_missing");
    let e = c
        .err(
            "completePhase",
            report("phase-3b", Some("APPROVE")),
            "blocked",
        )
        .await;
    assert_eq!(e["details"]["rule"], "verdict_mismatch");
    let r = c
        .ok("completePhase", report("phase-3b", Some("REVISE")))
        .await;
    assert_eq!(r["currentPhase"], "phase-3");
    assert_eq!(r["visit"], 2);
    // The first round's design.md is older than this visit.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(repo.ws_dir(&ws).join("design.md"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let e = c
        .err("completePhase", report("phase-3", None), "blocked")
        .await;
    assert_eq!(e["details"]["rule"], "artifact_stale");
    write("design.md", design);
    c.ok("completePhase", report("phase-3", None)).await;
    write("review-design.md", "# Review\n\n## Verdict: APPROVE\n");
    let r = c
        .ok("completePhase", report("phase-3b", Some("APPROVE")))
        .await;
    assert_eq!(r["currentPhase"], "checkpoint-a");
    assert_eq!(
        r["currentPhaseStatus"], "pending",
        "a person decides at the checkpoint"
    );
    let status = c.ok("getWorkflowStatus", json!({"workspace": ws})).await;
    let verdicts: Vec<&str> = status["phaseHistory"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["verdict"].as_str())
        .collect();
    assert_eq!(verdicts, ["REVISE", "APPROVE"]);
    c.close().await;
}
