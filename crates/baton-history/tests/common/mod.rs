//! Workspaces on disk for the tests: baton's own runs and forge's.

#![allow(
    dead_code,
    reason = "shared by several test or bench targets; each uses part of it"
)]

use std::path::{Path, PathBuf};

use baton_state::{
    Effort, FlowTemplate, HistoryAction, HistoryEntry, PhaseLogEntry, PhaseStatus, Timestamp,
    WorkspaceState,
};

pub fn at(minute: i64) -> Timestamp {
    let base: Timestamp = "2026-03-01T09:00:00Z".parse().unwrap();
    base + chrono::Duration::minutes(minute)
}

/// What a scripted run did.
pub struct Run<'a> {
    pub name: &'a str,
    pub request: &'a str,
    pub design: &'a str,
    pub effort: Effort,
    /// Design reviews that said REVISE before the approval.
    pub design_revisions: u32,
    pub review_design: &'a str,
    pub review_tasks: &'a [&'a str],
    pub summary: &'a str,
    pub end: Option<PhaseStatus>,
    pub start_minute: i64,
}

impl Default for Run<'_> {
    fn default() -> Self {
        Run {
            name: "20260301-run",
            request: "",
            design: "",
            effort: Effort::M,
            design_revisions: 0,
            review_design: "## Verdict: APPROVE\n",
            review_tasks: &[],
            summary: "",
            end: Some(PhaseStatus::Completed),
            start_minute: 0,
        }
    }
}

/// Writes a baton (state.json version 3) forge run under `specs`.
pub fn write_run(specs: &Path, run: &Run<'_>) -> PathBuf {
    let dir = specs.join(run.name);
    std::fs::create_dir_all(&dir).unwrap();
    let t0 = run.start_minute;
    let mut state = WorkspaceState::fresh(
        "forge",
        "phase-1",
        run.name,
        &format!(".specs/{}", run.name),
        "test",
        at(t0),
    );
    state.effort = Some(run.effort);
    state.flow_template = Some(FlowTemplate::for_effort(run.effort));
    let mut minute = t0;
    let mut push =
        |state: &mut WorkspaceState, phase: &str, action: HistoryAction, minutes: i64| {
            minute += minutes;
            state.history.push(HistoryEntry {
                at: at(minute),
                phase: phase.into(),
                action,
                detail: None,
                by: None,
            });
        };
    let log = |state: &mut WorkspaceState, phase: &str, tokens: u64| {
        state.phase_log.push(PhaseLogEntry {
            phase: phase.into(),
            tokens,
            duration_ms: 60_000,
            model: "sonnet".into(),
            timestamp: at(t0),
            tasks: Vec::new(),
            cost_usd: None,
        });
    };
    for phase in ["phase-1", "phase-3"] {
        push(&mut state, phase, HistoryAction::Start, 0);
        push(&mut state, phase, HistoryAction::Complete, 2);
        log(&mut state, phase, 10_000);
    }
    for _ in 0..run.design_revisions {
        push(&mut state, "phase-3b", HistoryAction::Start, 0);
        push(&mut state, "phase-3b", HistoryAction::Complete, 1);
        log(&mut state, "phase-3b", 5_000);
        push(&mut state, "phase-3", HistoryAction::Start, 0);
        push(&mut state, "phase-3", HistoryAction::Complete, 2);
        log(&mut state, "phase-3", 10_000);
    }
    push(&mut state, "phase-3b", HistoryAction::Start, 0);
    push(&mut state, "phase-3b", HistoryAction::Complete, 1);
    log(&mut state, "phase-3b", 5_000);
    for phase in ["phase-5", "phase-6", "final-summary"] {
        push(&mut state, phase, HistoryAction::Start, 0);
        push(&mut state, phase, HistoryAction::Complete, 3);
        log(&mut state, phase, 20_000);
    }
    match run.end {
        Some(PhaseStatus::Completed) => {
            state.current_phase = "completed".into();
            state.current_phase_status = PhaseStatus::Completed;
        }
        Some(PhaseStatus::Abandoned) => {
            state.current_phase_status = PhaseStatus::Abandoned;
            state.history.push(HistoryEntry {
                at: at(minute),
                phase: "final-summary".into(),
                action: HistoryAction::Abandon,
                detail: Some("no longer needed".into()),
                by: None,
            });
        }
        _ => {
            state.current_phase = "phase-5".into();
            state.current_phase_status = PhaseStatus::InProgress;
        }
    }
    state.timestamps.last_updated = at(minute);
    std::fs::write(dir.join("state.json"), state.to_json()).unwrap();
    std::fs::write(
        dir.join("request.md"),
        format!("---\nsource_type: text\n---\n\n{}\n", run.request),
    )
    .unwrap();
    if !run.design.is_empty() {
        std::fs::write(dir.join("design.md"), run.design).unwrap();
    }
    std::fs::write(dir.join("review-design.md"), run.review_design).unwrap();
    for (i, review) in run.review_tasks.iter().enumerate() {
        std::fs::write(dir.join(format!("review-{}.md", i + 1)), review).unwrap();
    }
    if !run.summary.is_empty() {
        std::fs::write(dir.join("summary.md"), run.summary).unwrap();
    }
    dir
}

/// A forge (Go server) version-2 workspace that completed, with a design
/// revision and a task retry, a review with findings and an improvement report.
pub fn write_forge_v2(specs: &Path, name: &str) -> PathBuf {
    let dir = specs.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let state = r#"{"version":2,"forge-state-mcp-version":"2.19.0","specName":"fix-auth","workspace":".specs/20260210-fix-auth",
      "branch":"fix/auth","effort":"M","flowTemplate":"standard","autoApprove":false,"skipPr":false,"useCurrentBranch":false,
      "branchClassified":true,"branchPushed":true,"debug":false,"skippedPhases":["phase-4b","checkpoint-b"],
      "currentPhase":"completed","currentPhaseStatus":"completed",
      "completedPhases":["setup","phase-1","phase-2","phase-3","phase-3b","checkpoint-a","phase-4","phase-5","phase-6","phase-7","final-verification","pr-creation","final-summary","final-commit"],
      "revisions":{"designRevisions":1,"taskRevisions":0,"designInlineRevisions":0,"taskInlineRevisions":0},
      "checkpointRevisionPending":{},"needsBatchCommit":false,
      "tasks":{"1":{"title":"Refresh tokens","executionMode":"sequential","implStatus":"completed","reviewStatus":"completed_pass","implRetries":1,"reviewRetries":0}},
      "phaseLog":[
        {"phase":"phase-1","tokens":1500,"duration_ms":42000,"model":"sonnet","timestamp":"2026-02-10T10:00:00.123456789Z"},
        {"phase":"phase-3","tokens":9000,"duration_ms":120000,"model":"opus","timestamp":"2026-02-10T10:05:00Z"},
        {"phase":"phase-3","tokens":7000,"duration_ms":90000,"model":"opus","timestamp":"2026-02-10T10:15:00Z"},
        {"phase":"phase-5","tokens":30000,"duration_ms":600000,"model":"sonnet","timestamp":"2026-02-10T11:00:00Z"}],
      "timestamps":{"created":"2026-02-10T09:00:00Z","lastUpdated":"2026-02-10T12:00:00Z","phaseStarted":null},
      "error":null}"#;
    std::fs::write(dir.join("state.json"), state).unwrap();
    std::fs::write(
        dir.join("request.md"),
        "---\nsource_type: github\nsource_url: https://github.com/o/r/issues/7\n---\n\n# Refresh expired auth tokens\n\nThe session token expires and the client never refreshes it.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("review-design.md"),
        "## Verdict: APPROVE_WITH_NOTES\n\n**1. [CRITICAL] Missing error handling for refresh timeouts**\n**2. [MINOR] Name the retry constant**\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("review-1.md"),
        "## Verdict: PASS_WITH_NOTES\n**[MINOR] Add a test for the expiry path**\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("summary.md"),
        "# Refresh tokens\n\n## Improvement Report\n### Documentation\n- The auth flow is undocumented — add a sequence diagram to docs/auth.md\n### Code Readability\nNone observed.\n### AI Agent Support\n- None observed.\n### Other\n- None observed.\n",
    )
    .unwrap();
    dir
}
