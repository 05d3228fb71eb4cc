//! `baton history …` and the dashboard of `baton stats`, on ended forge runs
//! found on disk (written by the older Go server, state.json version 2).

use std::process::Command;

use crate::common::{Repo, baton_bin};
use serde_json::Value;

fn run(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(baton_bin())
        .args(args)
        .current_dir(repo.path())
        .env_remove("BATON_PRICE_USD_PER_MTOK")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A completed forge run (Go server, version 2) with a review and an improvement report.
fn forge_run(repo: &Repo, name: &str, request: &str, finding: &str, tokens: u64) {
    let dir = repo.specs().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let state = format!(
        r#"{{"version":2,"specName":"{name}","workspace":".specs/{name}","effort":"M","flowTemplate":"standard",
        "skippedPhases":["phase-4b"],"currentPhase":"completed","currentPhaseStatus":"completed",
        "completedPhases":["setup","phase-1","phase-3","phase-3b"],
        "revisions":{{"designRevisions":1,"taskRevisions":0,"designInlineRevisions":0,"taskInlineRevisions":0}},
        "phaseLog":[{{"phase":"phase-3","tokens":{tokens},"duration_ms":600000,"model":"opus","timestamp":"2026-02-10T10:00:00Z"}}],
        "timestamps":{{"created":"2026-02-10T09:00:00Z","lastUpdated":"2026-02-10T12:00:00Z"}}}}"#
    );
    std::fs::write(dir.join("state.json"), state).unwrap();
    std::fs::write(
        dir.join("request.md"),
        format!("---\nsource_type: text\n---\n\n{request}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("review-design.md"),
        format!("## Verdict: APPROVE\n**1. [CRITICAL] {finding}**\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("summary.md"),
        "## Improvement Report\n### AI Agent Support\n- The test command was hard to find — add it to CLAUDE.md\n",
    )
    .unwrap();
}

#[test]
fn history_commands_and_stats_show_past_runs() {
    let repo = Repo::new();
    forge_run(
        &repo,
        "20260210-session-timeout",
        "Fix the session timeout on the login page",
        "Missing error handling for token refresh",
        1_000_000,
    );
    forge_run(
        &repo,
        "20260211-csv-export",
        "Add CSV export to reports",
        "Missing error handling for token refreshes",
        3_000_000,
    );
    std::fs::write(
        repo.path().join("baton.toml"),
        "[prices]\ndefault = 2.0\nopus = 10\n",
    )
    .unwrap();

    let (code, out, err) = run(&repo, &["history", "search", "login session timeout"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("20260210-session-timeout"), "{out}");
    assert!(out.contains("matched: "), "{out}");
    assert!(!out.contains("csv-export"), "{out}");
    assert!(
        repo.specs().join(".history/history.jsonl").is_file(),
        "first use records the runs"
    );

    let (_, out, _) = run(&repo, &["history", "patterns", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs_analyzed"], 2);
    assert_eq!(v["patterns"][0]["count"], 2, "{v}");
    assert_eq!(v["patterns"][0]["by"][0]["agent"], "design-reviewer");
    let (_, out, _) = run(&repo, &["history", "patterns", "--severity", "MINOR"]);
    assert!(out.starts_with("0 patterns"), "{out}");

    let (_, out, _) = run(&repo, &["history", "friction"]);
    assert!(
        out.contains(
            "2× AI Agent Support: The test command was hard to find — add it to CLAUDE.md"
        ),
        "{out}"
    );

    let (_, out, _) = run(&repo, &["history", "estimate", "anything", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["basis"], "all");
    assert_eq!(v["sample"], 2);
    // 1M and 3M opus tokens at $10 per million.
    assert_eq!(v["cost_usd"]["p50"], 10.0);
    assert_eq!(v["cost_usd"]["p90"], 30.0);

    let (code, out, _) = run(&repo, &["stats", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["dashboard"];
    assert_eq!(d["runs"], 2);
    assert_eq!(d["completed"], 2);
    assert_eq!(d["loops_per_run"], 1.0, "one design revision each");
    assert_eq!(d["cost_usd"], 40.0);
    let (_, out, _) = run(&repo, &["stats"]);
    assert!(
        out.starts_with(
            "Ended runs (the run history, every branch): 2 — 2 completed, 0 abandoned;"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "BY EFFORT\neffort  runs  completed  loops/run  mean tokens  mean time  mean cost\n"
        ),
        "{out}"
    );
    assert!(out.contains("BY PHASE\nphase "), "{out}");

    // A damaged file is rebuilt with a warning, never an error.
    std::fs::write(repo.specs().join(".history/history.jsonl"), "garbage\n").unwrap();
    let (code, out, err) = run(&repo, &["history", "search", "csv export"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("WARN") && err.contains("rebuilding"), "{err}");
    assert!(out.starts_with("20260211-csv-export"), "{out}");

    let (code, out, _) = run(&repo, &["history", "reindex"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("recorded 2 ended runs"), "{out}");
}
