//! End-to-end: the pipeline's initialisation tools of seed 001 through a real
//! MCP client — field for field.

use crate::common::{Repo, spawn};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_init_detects_sources_and_writes_nothing() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let before = repo.all_paths();

    let r = c
        .ok("pipeline_init", json!({"arguments": "https://github.com/owner/repo/issues/42 --auto", "current_branch": "main"}))
        .await;
    assert!(r["workspace"].as_str().unwrap().starts_with(".specs/"));
    assert!(
        r["workspace"]
            .as_str()
            .unwrap()
            .ends_with("-https-github-com-owner-repo-issues-42")
    );
    assert_eq!(r["spec_name"], "https-github-com-owner-repo-issues-42");
    assert_eq!(r["source_type"], "github_issue");
    assert_eq!(r["source_url"], "https://github.com/owner/repo/issues/42");
    assert_eq!(r["source_id"], "42");
    assert_eq!(r["core_text"], "https://github.com/owner/repo/issues/42");
    assert_eq!(
        r["flags"],
        json!({"auto": true, "skip_pr": false, "debug": false, "discuss": false, "effort_override": null, "current_branch": "main"})
    );
    assert_eq!(r["fetch_needed"]["type"], "github");
    assert_eq!(
        r["fetch_needed"]["fields"],
        json!(["labels", "title", "body"])
    );
    assert_eq!(
        r["fetch_needed"]["instruction"],
        "fetch github issue fields before calling pipeline_init_with_context"
    );

    let r = c.ok("pipeline_init", json!({"arguments": "ab"})).await;
    assert_eq!(
        r,
        json!({"errors": ["input too short: minimum 3 characters required"]})
    );
    let r = c
        .ok("pipeline_init", json!({"arguments": "fix it --effort=XS"}))
        .await;
    assert!(r["errors"][0].as_str().unwrap().contains("XS"));
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": "https://github.com/o/r/pull/1"}),
        )
        .await;
    assert!(r["errors"].is_array());
    c.err("pipeline_init", json!({}), "invalid_parameter").await;
    c.err(
        "pipeline_init",
        json!({"arguments": 5}),
        "invalid_parameter",
    )
    .await;
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": "$(rm -rf /); `touch x` && echo"}),
        )
        .await;
    assert_eq!(r["spec_name"], "rm-rf-touch-x-echo");
    assert_eq!(repo.all_paths(), before, "pipeline_init writes nothing");

    // Resume detection.
    c.ok(
        "init",
        json!({"spec_name": "fix auth", "workspace": "20260330-fix-auth-timeout"}),
    )
    .await;
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": ".specs/20260330-fix-auth-timeout"}),
        )
        .await;
    assert_eq!(
        r,
        json!({"resume_mode": "auto", "workspace": ".specs/20260330-fix-auth-timeout", "instruction": "call state_resume_info"})
    );
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": "20260330-fix-auth-timeout"}),
        )
        .await;
    assert_eq!(r["resume_mode"], "auto");
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": ".specs/20990101-nothing-here"}),
        )
        .await;
    assert!(
        r["errors"][0]
            .as_str()
            .unwrap()
            .contains("state.json not found")
    );
    let r = c
        .ok("pipeline_init", json!({"arguments": ".specs/../../etc"}))
        .await;
    assert!(
        r["errors"][0]
            .as_str()
            .unwrap()
            .contains("outside the specs root")
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_three_call_flow_confirms_effort_and_creates_the_workspace() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": "implement login feature --discuss", "current_branch": "main"}),
        )
        .await;
    let ws = init["workspace"].clone();
    let flags = init["flags"].clone();

    // First call with --discuss on a text source: questions.
    let first = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": ws, "flags": flags, "task_text": "implement login feature"}),
        )
        .await;
    assert_eq!(
        first["needs_discussion"]["questions"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // Discussion call: the enriched body and the effort options.
    let second = c
        .ok("pipeline_init_with_context", json!({"workspace": ws, "flags": flags, "task_text": "implement login feature", "discussion_answers": "Users log in with email."}))
        .await;
    let n = &second["needs_user_confirmation"];
    assert_eq!(n["detected_effort"], "M");
    assert_eq!(n["effort_options"]["M"]["recommended"], true);
    assert_eq!(n["effort_options"]["S"]["recommended"], false);
    assert_eq!(
        n["effort_options"]["M"]["skipped_phases"],
        json!([{"phase_id": "phase-4b", "label": "Tasks Review"}, {"phase_id": "checkpoint-b", "label": "Human Reviews Tasks"}])
    );
    assert_eq!(n["effort_options"]["L"]["skipped_phases"], json!([]));
    assert_eq!(n["current_branch"], "main");
    assert_eq!(n["is_main_branch"], true);
    assert!(
        n["enriched_request_body"]
            .as_str()
            .unwrap()
            .contains("## Discussion Answers")
    );
    // Both discriminators: ambiguous.
    c.err(
        "pipeline_init_with_context",
        json!({"workspace": ws, "discussion_answers": "x", "user_confirmation": {"effort": "M"}}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "pipeline_init_with_context",
        json!({"workspace": ws, "user_confirmation": {"effort": "XS"}}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "pipeline_init_with_context",
        json!({"workspace": ws, "external_context": "nope"}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "pipeline_init_with_context",
        json!({"workspace": "../../x", "user_confirmation": {"effort": "M"}}),
        "out_of_scope",
    )
    .await;

    // Confirmation call.
    let done = c
        .ok("pipeline_init_with_context", json!({"workspace": ws, "flags": flags, "task_text": "implement login feature",
            "user_confirmation": {"effort": "M", "workspace_slug": "login feature", "use_current_branch": false,
                "enriched_request_body": n["enriched_request_body"]}}))
        .await;
    assert_eq!(done["ready"], true);
    let workspace = done["workspace"].as_str().unwrap();
    assert!(workspace.ends_with("-login-feature"), "{workspace}");
    assert_eq!(done["effort"], "M");
    assert_eq!(done["flow_template"], "standard");
    assert_eq!(done["skipped_phases"], json!(["phase-4b", "checkpoint-b"]));
    assert_eq!(done["branch"], "feature/login-feature");
    assert_eq!(done["create_branch"], true);
    let request = std::fs::read_to_string(repo.path().join(workspace).join("request.md")).unwrap();
    assert_eq!(done["request_md_content"], request);
    assert!(request.starts_with("---\nsource_type: text\n---\n\nimplement login feature"));
    let state = repo.state(workspace);
    assert_eq!(state["workflow"], "forge");
    assert_eq!(state["effort"], "M");
    assert_eq!(state["flowTemplate"], "standard");
    assert_eq!(state["branch"], "feature/login-feature");
    assert_eq!(state["currentPhase"], "phase-1");
    assert_eq!(repo.events()[0]["event"], "pipeline-init");
    assert_eq!(repo.events()[0]["detail"], "effort=M");
    // Twice is a conflict.
    c.err("pipeline_init_with_context", json!({"workspace": ws, "task_text": "implement login feature", "user_confirmation": {"effort": "M", "workspace_slug": "login feature"}}), "conflict").await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_source_uses_its_fetched_fields() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let init = c.ok("pipeline_init", json!({"arguments": "https://github.com/owner/repo/issues/42 --nopr", "current_branch": "dev"})).await;
    let context = json!({"github_title": "Fix auth timeout in middleware", "github_body": "requests timeout after 30s", "github_labels": ["bug"]});
    let first = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "flags": init["flags"], "source_id": "42",
            "source_url": init["source_url"], "external_context": context}),
        )
        .await;
    let n = &first["needs_user_confirmation"];
    assert_eq!(n["detected_effort"], "M");
    assert_eq!(n["is_main_branch"], false);
    assert_eq!(
        n["enriched_request_body"],
        "Fix auth timeout in middleware\n\nrequests timeout after 30s"
    );
    let done = c
        .ok("pipeline_init_with_context", json!({"workspace": init["workspace"], "flags": init["flags"], "source_id": "42",
            "source_url": init["source_url"], "external_context": context, "user_confirmation": {"effort": "S"}}))
        .await;
    let ws = done["workspace"].as_str().unwrap();
    assert!(ws.ends_with("-42-fix-auth-timeout-in-middleware"), "{ws}");
    assert_eq!(done["branch"], "fix/42-fix-auth-timeout-in-middleware");
    assert_eq!(done["flow_template"], "light");
    let request = done["request_md_content"].as_str().unwrap();
    assert!(request.starts_with("---\nsource_type: github_issue\nsource_url: https://github.com/owner/repo/issues/42\nsource_id: 42\n---\n"));
    assert!(request.contains("requests timeout after 30s"));
    assert_eq!(repo.state(ws)["skipPr"], true);
    c.close().await;
}

/// pipeline_report_result on the standalone path (phases started with
/// phase_start): artifact checks, metrics, the design REVISE loop with
/// findings, and a review without a verdict handed to a person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_result_checks_artifacts_and_routes_reviews() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": "add login rate limiting"}),
        )
        .await;
    let done = c
        .ok("pipeline_init_with_context", json!({"workspace": init["workspace"], "task_text": "add login rate limiting", "user_confirmation": {"effort": "M"}}))
        .await;
    let ws = done["workspace"].as_str().unwrap().to_string();
    let dir = repo.path().join(&ws);
    let write = |f: &str, text: &str| std::fs::write(dir.join(f), text).unwrap();
    let start = |p: &str| json!({"workspace": ws, "phase": p, "force": true, "reason": "test"});
    let report = |p: &str| json!({"workspace": ws, "phase": p, "tokens_used": 1500, "duration_ms": 65000, "model": "sonnet"});

    // Reporting a phase that was not started is refused.
    c.err("pipeline_report_result", report("phase-1"), "invalid_state")
        .await;
    c.ok("phase_start", start("phase-1")).await;
    let e = c
        .err("pipeline_report_result", report("phase-1"), "blocked")
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("file not found: analysis.md"),
        "{e}"
    );
    write("analysis.md", "# Analysis\n\nfacts\n");
    let r = c.ok("pipeline_report_result", report("phase-1")).await;
    assert_eq!(r["next_action_hint"], "proceed");
    assert_eq!(r["artifact_written"], "analysis.md");
    assert_eq!(r["display_message"], "  ✓ Complete  ·  1500 tokens · 1:05");
    c.ok("phase_start", start("phase-2")).await;
    write("investigation.md", "# Investigation\n");
    c.ok("pipeline_report_result", report("phase-2")).await;

    c.ok("phase_start", start("phase-3")).await;
    write("design.md", "# Design\nno sections yet\n");
    let e = c
        .err("pipeline_report_result", report("phase-3"), "blocked")
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("section heading"),
        "{e}"
    );
    write("design.md", "# Design\n\n## Approach\n\nToken bucket.\n");
    c.ok("pipeline_report_result", report("phase-3")).await;

    // REVISE: back to the design, with the findings and a revision counted.
    c.ok("phase_start", start("phase-3b")).await;
    write(
        "review-design.md",
        "## Orchestrator Summary\nx\n## Verdict: REVISE\n## Findings\n**1. [CRITICAL] No limit per IP**\nFix: add it.\n",
    );
    let r = c.ok("pipeline_report_result", report("phase-3b")).await;
    assert_eq!(r["next_action_hint"], "revision_required");
    assert_eq!(r["verdict_parsed"], "REVISE");
    assert_eq!(
        r["findings"],
        json!([{"severity": "CRITICAL", "description": "No limit per IP"}])
    );
    let state = repo.state(&ws);
    assert_eq!(state["currentPhase"], "phase-3");
    assert_eq!(state["revisions"]["designRevisions"], 1);
    assert!(
        repo.events()
            .iter()
            .any(|e| e["event"] == "revision-required" && e["phase"] == "phase-3b")
    );

    c.ok("phase_start", start("phase-3")).await;
    write(
        "design.md",
        "# Design\n\n## Approach\n\nToken bucket per IP.\n",
    );
    c.ok("pipeline_report_result", report("phase-3")).await;
    c.ok("phase_start", start("phase-3b")).await;
    // A review without a verdict is never an approval: a person decides.
    write("review-design.md", "## Findings\nLooks fine to me.\n");
    let r = c.ok("pipeline_report_result", report("phase-3b")).await;
    assert_eq!(r["next_action_hint"], "setup_continue");
    assert!(
        r["warning"]
            .as_str()
            .unwrap()
            .contains("a person must decide")
    );
    assert_eq!(repo.state(&ws)["currentPhaseStatus"], "awaiting_human");
    let r = c.ok("phase_complete", start("phase-3b")).await;
    assert_eq!(r["currentPhase"], "checkpoint-a");

    let log = repo.state(&ws)["phaseLog"].as_array().unwrap().len();
    assert_eq!(
        log, 6,
        "one metrics entry per accepted report (refused ones log nothing)"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_keep_the_seeds_fields_and_specs_mentions_resume() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    // New pipeline from text: source_url/source_id and current_branch are null.
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": "implement login feature"}),
        )
        .await;
    assert_eq!(r["source_url"], Value::Null);
    assert_eq!(r["source_id"], Value::Null);
    assert!(r.as_object().unwrap().contains_key("source_url"));
    assert!(
        r["flags"]
            .as_object()
            .unwrap()
            .contains_key("current_branch")
    );
    assert_eq!(r["flags"]["current_branch"], Value::Null);
    // Effort L with the current branch: [] skipped, create_branch false.
    let done = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": r["workspace"], "task_text": r["core_text"], "flags": r["flags"],
                   "user_confirmation": {"effort": "L", "use_current_branch": true}}),
        )
        .await;
    assert_eq!(done["skipped_phases"], json!([]));
    assert_eq!(done["create_branch"], false);
    let ws = done["workspace"].as_str().unwrap().to_string();
    // Text that mentions the workspace resumes it.
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": format!("please continue {ws}/ where we stopped")}),
        )
        .await;
    assert_eq!(
        r,
        json!({"resume_mode": "auto", "workspace": ws, "instruction": "call state_resume_info"})
    );
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": "continue .specs/20990101-gone please"}),
        )
        .await;
    assert!(
        r["errors"][0]
            .as_str()
            .unwrap()
            .contains("state.json not found"),
        "{r}"
    );
    c.close().await;
}

/// The confirmation's question has the server make the run's folder ahead
/// (hidden, every file in it ignored by git, no run to any listing); the
/// confirmation takes that very folder and its files; nothing of it is
/// left, and `git status` never shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_makes_the_runs_folder_ahead_and_the_confirmation_takes_it() {
    use std::os::unix::fs::MetadataExt;
    let repo = crate::common::pipeline::git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": "add a health endpoint --nopr"}),
        )
        .await;
    let specs = repo.path().join(".specs");
    let kits = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&specs)
            .map(|e| {
                e.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .unwrap()
                            .to_string_lossy()
                            .starts_with(".new-run-")
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(kits().is_empty(), "pipeline_init writes nothing");
    let args = json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"]});
    c.ok("pipeline_init_with_context", args.clone()).await;
    // Made off the reply's path: wait for it (a person reads the question).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let kit = loop {
        let made = kits();
        if let Some(kit) = made.first().filter(|k| {
            k.join(".state.lock").exists() && std::fs::read_dir(k).unwrap().count() >= 5
        }) {
            break kit.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no folder made ahead: {made:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let lock_ino = std::fs::metadata(kit.join(".state.lock")).unwrap().ino();
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(status.status.success());
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        !status.contains(".new-run-"),
        "git status shows nothing of it: {status}"
    );
    let mut confirm = args.clone();
    confirm["user_confirmation"] = json!({"effort": "S", "use_current_branch": true});
    let done = c.ok("pipeline_init_with_context", confirm).await;
    let workspace = repo.path().join(done["workspace"].as_str().unwrap());
    assert_eq!(
        std::fs::metadata(workspace.join(".state.lock"))
            .unwrap()
            .ino(),
        lock_ino,
        "the run's folder is the one made ahead"
    );
    assert!(kits().is_empty());
    assert!(!kit.exists());
    assert!(workspace.join("state.json").is_file() && workspace.join("request.md").is_file());
}
