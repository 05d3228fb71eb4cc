//! The history index against real folders: recording, catch-up of forge
//! workspaces, similar runs, patterns, friction, Layer 4, estimates, and a
//! damaged file that is rebuilt instead of failing.

mod common;

use baton_engine::completion::verdict::Severity;
use baton_history::layer4::{FRICTION_HEADING, PATTERNS_HEADING, SIMILAR_HEADING};
use baton_history::{Basis, HistoryIndex, Outcome, PatternFilter, PriceTable};
use baton_state::{Effort, PhaseStatus, WorkspaceState};
use common::{Run, write_forge_v2, write_run};

fn state(dir: &std::path::Path) -> WorkspaceState {
    WorkspaceState::from_json(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap()
}

const SUMMARY: &str = "# Done\n\n## Improvement Report\n### Documentation\n- None observed.\n### Code Readability\n- None observed.\n### AI Agent Support\n- The test command was hard to find — add it to CLAUDE.md\n### Other\n- None observed.\n";

/// Three scripted runs with findings and improvement reports.
fn three_runs(specs: &std::path::Path) -> Vec<std::path::PathBuf> {
    vec![
        write_run(
            specs,
            &Run {
                name: "20260301-login-timeout",
                request: "Fix the login session timeout: users are logged out after five minutes",
                design: "## Design\nExtend the session timeout and refresh the session token on activity.",
                design_revisions: 1,
                review_design: "## Verdict: APPROVE_WITH_NOTES\n**1. [CRITICAL] Missing error handling for token refresh failures**\n",
                review_tasks: &[
                    "## Verdict: PASS_WITH_NOTES\n**[MINOR] Add a test for the timeout path**\n",
                ],
                summary: SUMMARY,
                start_minute: 0,
                ..Run::default()
            },
        ),
        write_run(
            specs,
            &Run {
                name: "20260302-csv-export",
                request: "Add CSV export to the report page",
                design: "## Design\nStream rows as CSV from the report query.",
                review_design: "## Verdict: APPROVE\n**1. [CRITICAL] Missing error handling for token refresh failure**\n",
                review_tasks: &["## Verdict: PASS\n"],
                summary: SUMMARY,
                start_minute: 600,
                ..Run::default()
            },
        ),
        write_run(
            specs,
            &Run {
                name: "20260303-ログイン",
                request: "ログイン画面のセッションタイムアウトを延長する",
                design: "",
                effort: Effort::S,
                end: Some(PhaseStatus::Abandoned),
                start_minute: 1200,
                ..Run::default()
            },
        ),
    ]
}

#[test]
fn ended_runs_are_recorded_and_found_with_their_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dirs = three_runs(specs);
    let history = HistoryIndex::open(specs);
    for d in &dirs {
        let rec = history.record_run(d, &state(d)).unwrap().unwrap();
        assert_ne!(rec.outcome, Outcome::Running);
    }
    assert_eq!(history.len(), 3);
    let first = history.get("20260301-login-timeout").unwrap();
    assert_eq!(first.outcome, Outcome::Completed);
    assert_eq!(first.loops, 1, "one REVISE of the design");
    assert_eq!(first.source, "text");
    assert_eq!(first.findings.len(), 2);
    assert_eq!(first.verdicts["review-design.md"], "APPROVE_WITH_NOTES");
    assert_eq!(first.verdicts["review-1.md"], "PASS_WITH_NOTES");
    assert_eq!(first.friction.len(), 1);
    let design_review = first.phases.iter().find(|p| p.phase == "phase-3b").unwrap();
    assert_eq!((design_review.visits, design_review.back), (2, 1));
    assert!(design_review.review);
    assert_eq!(first.tokens, 10_000 * 3 + 5_000 * 2 + 20_000 * 3);

    let hits = history.similar("session timeout after login", 5);
    assert_eq!(hits[0].workspace, "20260301-login-timeout");
    assert!(
        hits[0].matched.contains(&"session".to_string()),
        "{:?}",
        hits[0].matched
    );
    assert!(hits[0].matched.contains(&"timeout".to_string()));
    assert!(hits.iter().all(|h| h.workspace != "20260302-csv-export"));
    // Japanese: the matched stretch, not its bigrams.
    let ja = history.similar("セッションタイムアウトの修正", 5);
    assert_eq!(ja[0].workspace, "20260303-ログイン");
    assert_eq!(ja[0].outcome, Outcome::Abandoned);
    assert!(
        ja[0]
            .matched
            .contains(&"セッションタイムアウト".to_string()),
        "{:?}",
        ja[0].matched
    );
    // A running workspace is not recorded.
    let running = write_run(
        specs,
        &Run {
            name: "20260304-running",
            request: "x",
            end: None,
            ..Run::default()
        },
    );
    assert!(
        history
            .record_run(&running, &state(&running))
            .unwrap()
            .is_none()
    );
    assert!(history.take_warnings().is_empty());
}

#[test]
fn patterns_friction_and_layer4_come_from_past_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    for d in three_runs(specs) {
        HistoryIndex::open(specs)
            .record_run(&d, &state(&d))
            .unwrap();
    }
    let history = HistoryIndex::open(specs);
    let patterns = history.patterns(&PatternFilter::default());
    assert_eq!(patterns.runs_analyzed, 3);
    let top = &patterns.patterns[0];
    assert_eq!(
        top.count, 2,
        "the two token-refresh findings merged: {top:?}"
    );
    assert_eq!(top.count_of(Severity::Critical), 2);
    assert_eq!(top.last_seen, "20260302-csv-export");
    let minor = history.patterns(&PatternFilter {
        severity: Some(Severity::Minor),
        ..PatternFilter::default()
    });
    assert_eq!(minor.patterns.len(), 1);
    assert_eq!(minor.patterns[0].text, "Add a test for the timeout path");

    let friction = history.friction(0);
    assert_eq!(friction.reports_analyzed, 2);
    assert_eq!(friction.points.len(), 1);
    assert_eq!(friction.points[0].count, 2);
    assert_eq!(friction.points[0].improvement, "add it to CLAUDE.md");

    let request = "Users get logged out: fix the session timeout";
    let implementer = history.layer4("implementer", request, None, 1200);
    let headings: Vec<&str> = implementer.iter().map(|b| b.heading.as_str()).collect();
    assert_eq!(
        headings,
        [FRICTION_HEADING, SIMILAR_HEADING, PATTERNS_HEADING]
    );
    assert!(implementer[0].lines[0].contains("test command was hard to find"));
    assert!(implementer[1].lines[0].starts_with("20260301-login-timeout (completed"));
    let reviewer = history.layer4("design-reviewer", request, None, 1200);
    assert_eq!(reviewer.len(), 1);
    assert!(reviewer[0].lines[0].contains("Missing error handling for token refresh"));
    let architect = history.layer4("architect", request, Some("## Design\nsession token"), 1200);
    assert_eq!(architect[0].heading, SIMILAR_HEADING);
    // Nothing similar: no similar block, and nothing at all for an agent without a plan.
    let unrelated = history.layer4("architect", "quantum flux capacitor", None, 1200);
    assert!(unrelated.iter().all(|b| b.heading != SIMILAR_HEADING));
    assert!(history.layer4("verifier", request, None, 1200).is_empty());
    // The budget holds.
    let tiny = history.layer4("implementer", request, None, 40);
    let chars: usize = tiny.iter().map(|b| b.render().chars().count()).sum();
    assert!(chars <= 160);
}

#[test]
fn forge_workspaces_on_disk_are_recorded_lazily_once() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    write_forge_v2(specs, "20260210-fix-auth");
    write_run(
        specs,
        &Run {
            name: "20260304-running",
            request: "still going",
            end: None,
            ..Run::default()
        },
    );
    let history = HistoryIndex::open(specs);
    assert!(
        !history.path().exists() && !specs.join(".history").exists(),
        "opening reads and writes nothing"
    );
    // First use records the ended forge run (and not the running one).
    assert_eq!(history.len(), 1);
    let rec = history.get("20260210-fix-auth").unwrap();
    assert_eq!(rec.workflow, "forge");
    assert_eq!(rec.source, "github");
    assert_eq!(rec.effort, Some(Effort::M));
    assert_eq!(
        rec.request,
        "Refresh expired auth tokens The session token expires and the client never refreshes it."
    );
    assert_eq!(rec.tokens, 47_500);
    let design = rec.phases.iter().find(|p| p.phase == "phase-3").unwrap();
    assert_eq!(
        (design.visits, design.ms, design.model.as_str()),
        (2, 210_000, "opus")
    );
    assert_eq!(rec.loops, 2, "one design revision and one task retry");
    assert_eq!(rec.findings.len(), 3);
    assert_eq!(rec.friction.len(), 1);
    assert_eq!(rec.friction[0].category, "Documentation");
    assert_eq!(rec.skipped, ["phase-4b", "checkpoint-b"]);
    // A second handle (another process) sees the record without recording it again.
    let lines = std::fs::read_to_string(history.path())
        .unwrap()
        .lines()
        .count();
    assert_eq!(lines, 2, "header + one record");
    assert_eq!(HistoryIndex::open(specs).len(), 1);
    let again = std::fs::read_to_string(history.path())
        .unwrap()
        .lines()
        .count();
    assert_eq!(again, 2);
    // record_if_missing skips known runs.
    let dir = specs.join("20260210-fix-auth");
    assert!(!history.record_if_missing(&dir, &state(&dir)).unwrap());
}

#[test]
fn another_process_appends_and_rewrites_are_seen() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dirs = three_runs(specs);
    let a = HistoryIndex::open(specs);
    let b = HistoryIndex::open(specs);
    a.record_run(&dirs[0], &state(&dirs[0])).unwrap();
    // b's first use catches up with everything on disk.
    assert_eq!(b.len(), 3);
    assert_eq!(a.len(), 3);
    let more = write_run(
        specs,
        &Run {
            name: "20260305-more",
            request: "more work",
            start_minute: 2000,
            ..Run::default()
        },
    );
    a.record_run(&more, &state(&more)).unwrap();
    assert_eq!(b.len(), 4, "b reads a's append");
    let report = b.reindex().unwrap();
    assert_eq!((report.runs, report.running), (4, 0));
    assert_eq!(a.len(), 4, "a reloads b's rewrite");
    // Re-recording a run replaces its record.
    a.record_run(&more, &state(&more)).unwrap();
    assert_eq!(b.len(), 4);
}

fn corrupt_then_use(damage: impl Fn(&str) -> String) -> (HistoryIndex, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path().to_path_buf();
    std::mem::forget(tmp);
    for d in three_runs(&specs) {
        HistoryIndex::open(&specs)
            .record_run(&d, &state(&d))
            .unwrap();
    }
    let path = HistoryIndex::open(&specs).path();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, damage(&text)).unwrap();
    let history = HistoryIndex::open(&specs);
    assert_eq!(history.len(), 3, "every run is back");
    let warnings = history.take_warnings();
    // The file is whole again: a fresh reader has no complaint.
    let fresh = HistoryIndex::open(&specs);
    assert_eq!(fresh.len(), 3);
    assert!(fresh.take_warnings().is_empty());
    (history, warnings)
}

#[test]
fn a_truncated_last_line_gives_a_warning_and_a_rebuild() {
    let (history, warnings) = corrupt_then_use(|t| t[..t.len() - 40].to_string());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("partly written last line"),
        "{warnings:?}"
    );
    assert!(!history.similar("timeout", 3).is_empty());
}

#[test]
fn a_garbage_line_gives_a_warning_and_a_rebuild() {
    let (_, warnings) = corrupt_then_use(|t| {
        let mut lines: Vec<&str> = t.lines().collect();
        lines[2] = "{\"workspace\": 42, not json";
        lines.join("\n") + "\n"
    });
    assert!(warnings[0].contains("1 unreadable line"), "{warnings:?}");
}

#[test]
fn a_wrong_version_or_missing_header_gives_a_warning_and_a_rebuild() {
    let (_, warnings) =
        corrupt_then_use(|t| t.replacen("\"baton_history\":1", "\"baton_history\":99", 1));
    assert!(warnings[0].contains("format version 99"), "{warnings:?}");
    let (_, warnings) =
        corrupt_then_use(|t| t.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n");
    assert!(warnings[0].contains("rebuilding"), "{warnings:?}");
    let (_, warnings) = corrupt_then_use(|_| String::new());
    assert!(warnings[0].contains("empty"), "{warnings:?}");
}

#[test]
fn estimates_use_similar_runs_then_the_effort_then_all() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    for i in 0..4 {
        write_run(
            specs,
            &Run {
                name: &format!("2026031{i}-cache"),
                request: "Add a cache for the pricing service lookups",
                effort: Effort::M,
                start_minute: i64::from(i) * 100,
                ..Run::default()
            },
        );
    }
    write_run(
        specs,
        &Run {
            name: "20260320-docs",
            request: "Rewrite the onboarding guide",
            effort: Effort::S,
            start_minute: 1000,
            ..Run::default()
        },
    );
    let history = HistoryIndex::open(specs);
    let prices = PriceTable::default();
    let similar = history.estimate("cache pricing lookups", None, &prices);
    assert_eq!(similar.basis, Basis::Similar);
    assert_eq!(similar.sample, 4);
    assert_eq!(similar.tokens.p50, 85_000.0);
    assert_eq!(similar.cost_usd.p50, 0.51, "85k tokens at $6 per million");
    assert_eq!(similar.similar.len(), 3);
    // A run's own estimate leaves the run out of its sample.
    let own = history.estimate_for(
        Some("20260310-cache"),
        "cache pricing lookups",
        None,
        &prices,
    );
    assert_eq!((own.basis, own.sample), (Basis::Similar, 3));
    assert!(!own.similar.iter().any(|w| w == "20260310-cache"));
    let own_all = history.estimate_for(
        Some("20260320-docs"),
        "something else entirely",
        Some(Effort::S),
        &prices,
    );
    assert_eq!((own_all.basis, own_all.sample), (Basis::All, 4));
    let by_effort = history.estimate("something else entirely", Some(Effort::S), &prices);
    assert_eq!((by_effort.basis, by_effort.sample), (Basis::Effort, 1));
    let all = history.estimate("something else entirely", Some(Effort::L), &prices);
    assert_eq!((all.basis, all.sample), (Basis::All, 5));
    let empty = HistoryIndex::open(&specs.join("nothing-here"));
    assert_eq!(empty.estimate("x", None, &prices).basis, Basis::None);
    let d = history.dashboard(None, &prices);
    assert_eq!((d.runs, d.completed), (5, 5));
    assert_eq!(d.first_pass_rate, Some(1.0));
}

#[test]
fn the_handle_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<HistoryIndex>();
}

#[test]
fn the_history_lives_in_its_own_ignored_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dirs = three_runs(specs);
    let history = HistoryIndex::open(specs);
    history.record_run(&dirs[0], &state(&dirs[0])).unwrap();
    assert_eq!(history.path(), specs.join(".history/history.jsonl"));
    assert!(history.path().is_file());
    assert_eq!(
        std::fs::read_to_string(specs.join(".history/.gitignore")).unwrap(),
        "*\n",
        "the folder baton made ignores everything in it"
    );
    // Nothing of the history is left directly under the specs root.
    let top: Vec<String> = std::fs::read_dir(specs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("2026"))
        .collect();
    assert_eq!(top, [".history"]);
}

#[test]
fn an_existing_folder_keeps_its_files_and_gets_no_ignore_file() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dirs = three_runs(specs);
    std::fs::create_dir(specs.join(".history")).unwrap();
    let history = HistoryIndex::open(specs);
    history.record_run(&dirs[0], &state(&dirs[0])).unwrap();
    assert!(!specs.join(".history/.gitignore").exists());
    assert!(history.path().is_file());
}

#[test]
fn a_linked_folder_or_file_is_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    let dirs = three_runs(&specs);
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, specs.join(".history")).unwrap();
    let history = HistoryIndex::open(&specs);
    let e = history.record_run(&dirs[0], &state(&dirs[0])).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    // Queries answer (empty) with a warning instead of failing.
    assert_eq!(history.similar("timeout", 3).len(), 0);
    assert!(!history.take_warnings().is_empty());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);

    // A linked history file inside a real folder: the target is never written.
    std::fs::remove_file(specs.join(".history")).unwrap();
    std::fs::create_dir(specs.join(".history")).unwrap();
    let target = tmp.path().join("target.txt");
    std::fs::write(&target, "keep\n").unwrap();
    std::os::unix::fs::symlink(&target, specs.join(".history/history.jsonl")).unwrap();
    let history = HistoryIndex::open(&specs);
    assert_eq!(history.len(), 3, "the link is replaced by a rebuilt file");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
    assert!(
        std::fs::symlink_metadata(history.path())
            .unwrap()
            .file_type()
            .is_file()
    );
}

#[test]
fn an_earlier_versions_file_under_the_specs_root_is_moved_once() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dirs = three_runs(specs);
    // Write a file the way the earlier version did, then move it there.
    let history = HistoryIndex::open(specs);
    for d in &dirs {
        history.record_run(d, &state(d)).unwrap();
    }
    let text = std::fs::read_to_string(history.path()).unwrap();
    std::fs::remove_dir_all(specs.join(".history")).unwrap();
    std::fs::write(specs.join("history.jsonl"), &text).unwrap();
    std::fs::write(specs.join(".history.lock"), "").unwrap();
    // The legacy file holds a run whose folder is gone (archived): kept.
    std::fs::remove_dir_all(&dirs[1]).unwrap();
    let history = HistoryIndex::open(specs);
    assert_eq!(history.len(), 3);
    assert!(history.get("20260302-csv-export").is_some());
    assert!(!specs.join("history.jsonl").exists());
    assert!(!specs.join(".history.lock").exists());
    assert_eq!(std::fs::read_to_string(history.path()).unwrap(), text);
    assert!(specs.join(".history/.gitignore").is_file());
    assert!(history.take_warnings().is_empty());
}

#[test]
fn a_sealed_run_is_still_running_for_the_catch_up() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dir = write_run(
        specs,
        &Run {
            name: "20260306-sealed",
            request: "seal me",
            ..Run::default()
        },
    );
    // The final form is in state.json; the live state says it is running.
    let mut live = state(&dir);
    live.current_phase = "final-commit".into();
    live.current_phase_status = PhaseStatus::InProgress;
    std::fs::write(dir.join(".state.live.json"), live.to_json()).unwrap();
    let history = HistoryIndex::open(specs);
    assert_eq!(history.len(), 0, "a sealed run has not ended");
    std::fs::remove_file(dir.join(".state.live.json")).unwrap();
    assert_eq!(HistoryIndex::open(specs).len(), 1);
}

#[test]
fn a_run_is_never_its_own_similar_past_run() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dirs = three_runs(specs);
    let history = HistoryIndex::open(specs);
    for d in &dirs {
        history.record_run(d, &state(d)).unwrap();
    }
    let request = "Fix the login session timeout: users are logged out after five minutes";
    let similar_lines = |blocks: &[baton_history::LearningBlock]| -> Vec<String> {
        blocks
            .iter()
            .filter(|b| b.heading == SIMILAR_HEADING)
            .flat_map(|b| b.lines.clone())
            .collect()
    };
    let all = similar_lines(&history.layer4("architect", request, None, 1200));
    assert!(
        all.iter().any(|l| l.starts_with("20260301-login-timeout")),
        "{all:?}"
    );
    let own = similar_lines(&history.layer4_for(
        Some("20260301-login-timeout"),
        "architect",
        request,
        None,
        1200,
    ));
    assert!(
        own.iter().all(|l| !l.starts_with("20260301-login-timeout")),
        "{own:?}"
    );
}

#[test]
fn a_persons_revise_at_a_checkpoint_is_a_loop() {
    use baton_history::collect::phase_records;
    use baton_state::{HistoryAction, HistoryEntry, WorkspaceState};
    let mut state = WorkspaceState::fresh(
        "forge",
        "phase-1",
        "20260301-run",
        ".specs/20260301-run",
        "test",
        common::at(0),
    );
    let steps = [
        ("phase-3", HistoryAction::Start),
        ("phase-3", HistoryAction::Complete),
        ("phase-3b", HistoryAction::Start),
        ("phase-3b", HistoryAction::Complete),
        ("checkpoint-a", HistoryAction::Checkpoint),
        // revise: back to the design
        ("checkpoint-a", HistoryAction::Complete),
        ("phase-3", HistoryAction::Start),
        ("phase-3", HistoryAction::Complete),
        ("phase-3b", HistoryAction::Start),
        ("phase-3b", HistoryAction::Complete),
        ("checkpoint-a", HistoryAction::Checkpoint),
        // proceed
        ("checkpoint-a", HistoryAction::Complete),
        ("phase-5", HistoryAction::Start),
        // a human gate inside a running phase is no loop
        ("phase-5", HistoryAction::Checkpoint),
        ("phase-5", HistoryAction::Resume),
        ("phase-5", HistoryAction::Complete),
    ];
    for (i, (phase, action)) in steps.into_iter().enumerate() {
        state.history.push(HistoryEntry {
            at: common::at(i as i64),
            phase: phase.into(),
            action,
            detail: None,
            by: None,
        });
    }
    let phases = phase_records(&state, None);
    let back = |p: &str| phases.iter().find(|r| r.phase == p).map(|r| r.back);
    assert_eq!(back("checkpoint-a"), Some(1), "{phases:?}");
    assert_eq!(phases.iter().map(|r| r.back).sum::<u32>(), 1, "{phases:?}");
}

#[test]
fn a_rebuild_keeps_archived_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path();
    let dirs = three_runs(specs);
    let history = HistoryIndex::open(specs);
    assert_eq!(history.reindex().unwrap().runs, 3);
    // `workflow_archive` moves an ended run to <specs>/archive/<name>.
    let archive = specs.join("archive");
    std::fs::create_dir_all(&archive).unwrap();
    let name = dirs[0].file_name().unwrap();
    std::fs::rename(&dirs[0], archive.join(name)).unwrap();
    let rebuilt = history.reindex().unwrap();
    assert_eq!(rebuilt.runs, 3, "{rebuilt:?}");
    assert!(rebuilt.unreadable.is_empty(), "{rebuilt:?}");
    assert!(history.get("20260301-login-timeout").is_some());
}

/// A process killed while it makes the history folder leaves nothing `git
/// status` shows: the folder is staged hidden with its `*` ignore file and
/// renamed into place. A staging folder left by a kill is invisible to git,
/// and the next process makes the folder all the same.
#[test]
fn a_kill_while_the_folder_is_made_leaves_nothing_git_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    let specs = repo.join(".specs");
    std::fs::create_dir_all(specs.join(".history.new-4242-1")).unwrap();
    std::fs::write(specs.join(".history.new-4242-1/.gitignore"), "*\n").unwrap();
    assert_eq!(git(&["status", "--porcelain", "--untracked-files=all"]), "");
    let dirs = three_runs(&specs);
    for d in &dirs {
        git(&["add", "--", d.to_str().unwrap()]);
    }
    let history = HistoryIndex::open(&specs);
    history.record_run(&dirs[0], &state(&dirs[0])).unwrap();
    assert_eq!(
        std::fs::read_to_string(specs.join(".history/.gitignore")).unwrap(),
        "*\n"
    );
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        status.lines().all(|l| l.starts_with("A ")),
        "only the staged runs, nothing of the history: {status}"
    );
}
