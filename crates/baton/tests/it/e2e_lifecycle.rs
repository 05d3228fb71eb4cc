//! End-to-end: `baton serve` driven through rmcp's MCP client over stdio.

use crate::common;

use crate::common::{Repo, spawn};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_is_listed_with_input_and_output_schemas() {
    let repo = Repo::new();
    let client = spawn(repo.path(), &[], &[]).await;
    let tools = client.service.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "abandon",
            "analytics_dashboard",
            "analytics_estimate",
            "analytics_summary",
            "checkpoint",
            "completePhase",
            "getCurrentPhase",
            "getWorkflowStatus",
            "history_friction",
            "history_patterns",
            "history_reindex",
            "history_search",
            "init",
            "manual_find",
            "manual_hits",
            "manual_ls",
            "manual_read",
            "manual_scan",
            "manual_toc",
            "phase_complete",
            "phase_fail",
            "phase_start",
            "pipeline_init",
            "pipeline_init_with_context",
            "pipeline_next_action",
            "pipeline_report_result",
            "run_overview",
            "skip_phase",
            "startIssueWorkflow",
            "state_get",
            "state_resume_info",
            "workflow_archive",
            "workflow_definitions",
            "workflow_start",
            "workflow_stats",
            "workspace_list"
        ]
    );
    for t in &tools {
        assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        let out = t.output_schema.as_ref().expect("outputSchema");
        assert_eq!(out["type"], "object", "{}", t.name);
        assert!(
            t.description.as_ref().is_some_and(|d| d.len() > 40),
            "{}",
            t.name
        );
    }
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_groups_limit_what_is_exposed() {
    let repo = Repo::new();
    let flag = spawn(repo.path(), &["--tools", "state"], &[]).await;
    assert_eq!(
        flag.tool_names().await,
        [
            "run_overview",
            "state_get",
            "state_resume_info",
            "workspace_list"
        ]
    );
    // A tool outside the profile is refused with a clear code.
    let e = flag
        .err("init", json!({"spec_name": "x"}), "unknown_tool")
        .await;
    assert!(e["details"]["exposed"].as_array().unwrap().len() == 4);
    flag.close().await;

    let env = spawn(repo.path(), &[], &[("BATON_TOOLS", "lifecycle")]).await;
    assert_eq!(env.tool_names().await.len(), 7);
    env.close().await;

    let out = std::process::Command::new(common::baton_bin())
        .args(["serve", "--tools", "lifecycle,nope"])
        .current_dir(repo.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown tool profile or group \"nope\"")
            && stderr.contains("profiles: pipeline, issue, manuals, recovery, history, all"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing but protocol on stdout");
}

/// `baton serve` without options exposes the pipeline profile; profiles and
/// groups combine; a tool outside the profile names the profile that has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_select_what_one_use_needs() {
    let repo = Repo::new();
    let default = spawn(repo.path(), &[], &[("BATON_TOOLS", "")]).await;
    assert_eq!(
        default.tool_names().await,
        [
            "pipeline_init",
            "pipeline_init_with_context",
            "pipeline_next_action",
            "pipeline_report_result"
        ]
    );
    let e = default
        .err(
            "phase_start",
            json!({"workspace": "x", "phase": "phase-1"}),
            "unknown_tool",
        )
        .await;
    assert_eq!(e["details"]["profiles"], json!(["recovery"]));
    assert!(
        e["message"].as_str().unwrap().contains("--tools recovery"),
        "{e}"
    );
    default.close().await;

    let issue = spawn(repo.path(), &["--tools", "issue,manual"], &[]).await;
    let names = issue.tool_names().await;
    assert!(
        names.contains(&"completePhase".to_string())
            && names.contains(&"workflow_start".to_string())
            && names.contains(&"manual_find".to_string())
            && !names.contains(&"phase_start".to_string()),
        "{names:?}"
    );
    issue.close().await;

    let recovery = spawn(repo.path(), &[], &[("BATON_TOOLS", "recovery")]).await;
    let names = recovery.tool_names().await;
    for setter in [
        "init",
        "phase_start",
        "phase_complete",
        "phase_fail",
        "checkpoint",
        "skip_phase",
        "abandon",
    ] {
        assert!(names.contains(&setter.to_string()), "{setter}: {names:?}");
    }
    assert!(!names.contains(&"pipeline_next_action".to_string()));
    recovery.close().await;
}

/// Walks the forge workflow (effort S) with the recovery tools: each needs
/// an explicit force with a reason, each completion passes the same gate as
/// the pipeline loop, a checkpoint is a person's, and a gated phase is never
/// skipped; the events keep seed 003's sequence and say who forced what.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forge_walked_by_hand_keeps_every_gate_and_seed_003_events() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let init = c
        .ok(
            "init",
            json!({"spec_name": "Fix auth timeout", "effort": "S"}),
        )
        .await;
    let ws = init["workspace"].as_str().unwrap().to_string();
    assert!(
        ws.starts_with(".specs/") && ws.ends_with("-fix-auth-timeout"),
        "{ws}"
    );
    assert_eq!(init["flowTemplate"], "light");
    assert_eq!(
        init["skippedPhases"],
        json!(["phase-2", "phase-4", "phase-4b", "checkpoint-b", "phase-6"])
    );
    let dir = repo.ws_dir(&ws);
    let write = |f: &str, text: &str| std::fs::write(dir.join(f), text).unwrap();
    let forced =
        |p: &str| json!({"workspace": ws, "phase": p, "force": true, "reason": "repair by hand"});

    // Without force a recovery tool explains what moves a run instead.
    let e = c
        .err(
            "phase_start",
            json!({"workspace": ws, "phase": "phase-1"}),
            "blocked",
        )
        .await;
    assert_eq!(e["details"]["rule"], "recovery_only");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("pipeline_next_action")
    );
    let e = c
        .err(
            "phase_start",
            json!({"workspace": ws, "phase": "phase-1", "force": true}),
            "invalid_parameter",
        )
        .await;
    assert_eq!(e["details"]["field"], "reason");

    for (phase, file, bad, good) in [
        ("phase-1", "analysis.md", "", "# Analysis\n\nfacts\n"),
        (
            "phase-3",
            "design.md",
            "# Design\nno sections\n",
            "# Design\n\n## Approach\n\nx\n",
        ),
        (
            "phase-3b",
            "review-design.md",
            "",
            "# Review\n\n## Verdict: APPROVE\n",
        ),
    ] {
        c.ok("phase_start", forced(phase)).await;
        if !bad.is_empty() {
            write(file, bad);
            let e = c.err("phase_complete", forced(phase), "blocked").await;
            assert_eq!(e["details"]["rule"], "artifact_invalid", "{phase}: {e}");
        } else {
            let e = c.err("phase_complete", forced(phase), "blocked").await;
            assert_eq!(e["details"]["rule"], "artifact_missing", "{phase}: {e}");
        }
        write(file, good);
        c.ok("phase_complete", forced(phase)).await;
    }
    // The checkpoint is a person's: neither started nor completed by a tool.
    let e = c
        .err("phase_start", forced("checkpoint-a"), "blocked")
        .await;
    assert_eq!(e["details"]["rule"], "human_phase_not_startable");
    let r = c.ok("checkpoint", forced("checkpoint-a")).await;
    assert_eq!(r["currentPhaseStatus"], "awaiting_human");
    let e = c
        .err("phase_complete", forced("checkpoint-a"), "blocked")
        .await;
    assert_eq!(e["details"]["rule"], "person_only");
    let out = common::person_answer(repo.path(), &ws, "proceed");
    assert!(out.contains("by person:terminal"), "{out}");
    // The implementation cannot start without tasks, nor be skipped.
    let e = c.err("phase_start", forced("phase-5"), "blocked").await;
    assert_eq!(e["details"]["rule"], "tasks_required");
    let e = c.err("skip_phase", forced("phase-5"), "blocked").await;
    assert_eq!(e["details"]["rule"], "gated_phase");

    let state = repo.state(&ws);
    assert_eq!(state["currentPhase"], "phase-5");
    assert_eq!(
        state["answers"][0]["by"],
        json!({"who": "person", "channel": "terminal"})
    );
    let by: Vec<&str> = state["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["by"].as_str())
        .collect();
    assert!(by.contains(&"forced (repair by hand)"), "{by:?}");
    assert!(by.contains(&"person:terminal"), "{by:?}");
    let got: Vec<(String, String)> = repo
        .events()
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_string(),
                e["phase"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        got,
        expect(&[
            ("pipeline-init", "setup"),
            ("phase-start", "phase-1"),
            ("phase-complete", "phase-1"),
            ("phase-start", "phase-3"),
            ("phase-complete", "phase-3"),
            ("phase-start", "phase-3b"),
            ("phase-complete", "phase-3b"),
            ("checkpoint", "checkpoint-a"),
            ("phase-complete", "checkpoint-a"),
        ])
    );
    let details: Vec<String> = repo
        .events()
        .iter()
        .filter_map(|e| e["detail"].as_str().map(str::to_string))
        .collect();
    assert!(
        details.iter().any(|d| d == "forced (repair by hand)"),
        "{details:?}"
    );
    assert!(
        details
            .iter()
            .any(|d| d == "checkpoint-a: proceed by person:terminal"),
        "{details:?}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_rules_are_enforced_and_refusals_change_nothing() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = c
        .ok(
            "init",
            json!({"spec_name": "rules", "workspace": "20260101-rules"}),
        )
        .await["workspace"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(ws, ".specs/20260101-rules");
    let before = repo.snapshot();

    // No complete without a start; no start of another phase (A9).
    let e = c
        .err(
            "phase_complete",
            json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-1"}),
            "invalid_state",
        )
        .await;
    assert_eq!(e["details"]["currentPhaseStatus"], "pending");
    let e = c
        .err(
            "phase_start",
            json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-3"}),
            "invalid_state",
        )
        .await;
    assert_eq!(e["details"]["currentPhase"], "phase-1");
    let e = c
        .err(
            "skip_phase",
            json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-2"}),
            "invalid_state",
        )
        .await;
    assert_eq!(e["details"]["currentPhase"], "phase-1");
    let e = c
        .err(
            "phase_start",
            json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-99"}),
            "invalid_parameter",
        )
        .await;
    assert!(
        e["details"]["valid"]
            .as_array()
            .unwrap()
            .contains(&json!("phase-1"))
    );
    c.err(
        "phase_fail",
        json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-1"}),
        "invalid_state",
    )
    .await;
    assert_eq!(
        repo.snapshot(),
        before,
        "refused calls must not touch state.json"
    );

    // A second init of the same folder is a conflict.
    c.err(
        "init",
        json!({"spec_name": "rules", "workspace": "20260101-rules"}),
        "conflict",
    )
    .await;

    // Duplicate start is refused; fail then restart works and clears the error.
    let args = json!({"workspace": ws, "phase": "phase-1", "force": true, "reason": "test"});
    c.ok("phase_start", args.clone()).await;
    c.err("phase_start", args.clone(), "invalid_state").await;
    let r = c
        .ok(
            "phase_fail",
            json!({"force": true, "reason": "test", "workspace": ws, "phase": "phase-1", "message": "tests red"}),
        )
        .await;
    assert_eq!(r["currentPhaseStatus"], "failed");
    assert_eq!(repo.state(&ws)["error"]["message"], "tests red");
    c.ok("phase_start", args.clone()).await;
    assert_eq!(repo.state(&ws)["error"], Value::Null);

    // Abandon is final (A3): every later mutation is refused, reads still work.
    let r = c
        .ok(
            "abandon",
            json!({"workspace": ws, "reason": "wrong approach"}),
        )
        .await;
    assert_eq!(r["events"], json!(["abandon"]));
    let after_abandon = repo.snapshot();
    for tool in [
        "phase_start",
        "phase_complete",
        "phase_fail",
        "checkpoint",
        "skip_phase",
    ] {
        let e = c.err(tool, args.clone(), "invalid_state").await;
        assert_eq!(e["details"]["currentPhaseStatus"], "abandoned", "{tool}");
    }
    c.err("abandon", json!({"workspace": ws}), "invalid_state")
        .await;
    assert_eq!(repo.snapshot(), after_abandon);
    let info = c.ok("state_resume_info", json!({"workspace": ws})).await;
    assert_eq!(info["currentPhaseStatus"], "abandoned");
    assert!(info["nextStep"].as_str().unwrap().contains("abandoned"));

    let events: Vec<String> = repo
        .events()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        events,
        [
            "pipeline-init",
            "phase-start",
            "phase-fail",
            "phase-start",
            "abandon"
        ],
        "events only for successful mutations"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_tools_read_whole_documents_fields_and_lists() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    for (name, effort) in [("one", "M"), ("two", "L")] {
        c.ok(
            "init",
            json!({"spec_name": name, "effort": effort, "workspace": format!("20260101-{name}")}),
        )
        .await;
    }
    let whole = c
        .ok("state_get", json!({"workspace": "20260101-one"}))
        .await;
    assert_eq!(whole["value"]["effort"], "M");
    assert_eq!(whole["value"]["flowTemplate"], "standard");
    let field = c
        .ok(
            "state_get",
            json!({"workspace": ".specs/20260101-two", "field": "timestamps.created"}),
        )
        .await;
    assert!(field["value"].as_str().unwrap().starts_with("20"));
    let e = c
        .err(
            "state_get",
            json!({"workspace": "20260101-two", "field": "nope.x"}),
            "invalid_parameter",
        )
        .await;
    assert!(
        e["details"]["valid"]
            .as_array()
            .unwrap()
            .contains(&json!("currentPhase"))
    );
    c.err(
        "state_get",
        json!({"workspace": "20260101-three"}),
        "not_found",
    )
    .await;

    let list = c.ok("workspace_list", json!({})).await;
    let rows = list["workspaces"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["workspace"], ".specs/20260101-one");
    // Standard skips phase-4b and checkpoint-b: shown as skipped, never as
    // done (it said "2/17" before, counting them done).
    assert_eq!(rows[0]["progress"], "0/17 (2 skipped)");
    c.ok("abandon", json!({"workspace": "20260101-two"})).await;
    let abandoned = c.ok("workspace_list", json!({"status": "abandoned"})).await;
    assert_eq!(abandoned["workspaces"].as_array().unwrap().len(), 1);
    c.err(
        "workspace_list",
        json!({"status": "weird"}),
        "invalid_parameter",
    )
    .await;

    // A corrupt state file is reported, listed as unreadable, and left alone.
    let bad = repo.specs().join("20260101-one/state.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let e = c
        .err(
            "state_get",
            json!({"workspace": "20260101-one"}),
            "corrupt_state",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("20260101-one/state.json")
    );
    c.err(
        "phase_start",
        json!({"force": true, "reason": "test", "workspace": "20260101-one", "phase": "phase-1"}),
        "corrupt_state",
    )
    .await;
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "{ not json");
    let list = c.ok("workspace_list", json!({})).await;
    assert_eq!(list["unreadable"][0]["code"], "corrupt_state");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transcript_records_every_message_with_durations() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    c.ok("init", json!({"spec_name": "t"})).await;
    c.err(
        "phase_start",
        json!({"force": true, "reason": "test", "workspace": "x/../../y", "phase": "p"}),
        "out_of_scope",
    )
    .await;
    c.close().await;
    // The server flushes on stdin EOF; give it a moment to exit.
    let dir = repo.path().join(".baton/logs");
    let mut lines = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
            .collect();
        assert_eq!(files.len(), 1);
        let name = files[0].file_name().to_string_lossy().to_string();
        assert!(
            name.starts_with("mcp-") && name.ends_with("Z.jsonl"),
            "{name}"
        );
        let text = std::fs::read_to_string(files[0].path()).unwrap();
        lines = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect();
        if lines.len() >= 7 {
            break;
        }
    }
    let summary: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["direction"].as_str().unwrap().to_string(),
                l["kind"].as_str().unwrap().to_string(),
                l["method"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let expect = |d: &str, k: &str, m: &str| (d.to_string(), k.to_string(), m.to_string());
    assert!(
        summary.contains(&expect("in", "request", "initialize")),
        "{summary:?}"
    );
    assert!(summary.contains(&expect("out", "response", "initialize")));
    assert!(summary.contains(&expect("in", "notification", "notifications/initialized")));
    let calls: Vec<&Value> = lines.iter().filter(|l| l["tool"].is_string()).collect();
    assert_eq!(calls.len(), 4, "two tool calls, in and out");
    for out in calls.iter().filter(|l| l["direction"] == "out") {
        assert!(out["duration_ms"].as_f64().unwrap() >= 0.0);
        let result = &out["payload"]["result"];
        // A success carries structuredContent; a refusal only its text.
        if result["isError"] == true {
            assert!(result["structuredContent"].is_null(), "{result}");
            assert!(result["content"][0]["text"].is_string(), "{result}");
        } else {
            assert!(result["structuredContent"].is_object(), "{result}");
        }
    }
    let session = lines[0]["session_id"].as_str().unwrap();
    assert!(lines.iter().all(|l| l["session_id"] == session));
    // The transcript folder keeps itself out of git.
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "*\n"
    );
}
