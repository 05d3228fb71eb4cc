//! The engine's decisions, in process: routing a report, checking its
//! evidence, building the next instruction.
//!
//! Run: `cargo bench -p baton-engine --bench engine`

use std::collections::BTreeMap;

use baton_engine::completion::evidence::{ReportEvidence, check_report};
use baton_engine::instruction::{RepoProfile, instruction};
use baton_engine::route::decide;
use baton_engine::{FileInfo, WorkspaceFiles};
use baton_state::WorkspaceState;
use baton_workflow::{Registry, ResultKind};

fn main() {
    divan::main();
}

fn setup() -> (
    std::sync::Arc<baton_workflow::WorkflowDefinition>,
    WorkspaceState,
) {
    let registry = Registry::builtin();
    let issue = registry.get("issue").unwrap();
    let mut state = WorkspaceState::fresh(
        "issue",
        "pr_creation",
        "b",
        ".specs/b",
        "bench",
        "2026-01-01T00:00:00Z".parse().unwrap(),
    );
    state.timestamps.phase_started = Some("2026-01-01T00:00:00Z".parse().unwrap());
    (issue, state)
}

/// Routing a failed CI report to fix (transitions + loop limit from history).
#[divan::bench]
fn decide_failure_route(bencher: divan::Bencher) {
    let (issue, state) = setup();
    bencher
        .bench_local(|| decide(&issue, &state, "pr_creation", ResultKind::Failure, None).unwrap());
}

/// Checking a full report: tasks, criteria by number, fresh artifact.
#[divan::bench]
fn check_full_report(bencher: divan::Bencher) {
    let (issue, state) = setup();
    let tasks: Vec<String> = (1..=5).map(|i| i.to_string()).collect();
    let criteria: Vec<String> = (1..=2).map(|i| i.to_string()).collect();
    let mut files = BTreeMap::new();
    files.insert(
        "pr.md".to_string(),
        FileInfo {
            len: 100,
            modified: Some("2026-01-01T00:05:00Z".parse().unwrap()),
        },
    );
    let files: &dyn WorkspaceFiles = &files;
    bencher.bench_local(|| {
        let evidence = ReportEvidence {
            phase: "pr_creation",
            succeeded: true,
            completed_tasks: &tasks,
            criteria_met: &criteria,
            verdict: None,
            notes: None,
        };
        check_report(&issue, &state, &evidence, files).unwrap()
    });
}

/// Building the next phase's instruction (seed 004 PhaseInstruction).
#[divan::bench]
fn build_instruction(bencher: divan::Bencher) {
    let (issue, _) = setup();
    let profile = RepoProfile::default();
    bencher.bench_local(|| instruction(&issue, "quality_check", 2, &profile).unwrap());
}

/// Planning the next pipeline action: a phase-5 fan-out of the forge
/// pipeline (task DAG, inputs filtered by the files that exist).
#[divan::bench]
fn plan_pipeline_fan_out(bencher: divan::Bencher) {
    use baton_engine::pipeline::tasks::parse_tasks;
    use baton_engine::plan::{PlanInput, plan};
    let registry = Registry::builtin();
    let forge = registry.get("forge").unwrap();
    let mut state = WorkspaceState::fresh(
        "forge",
        "phase-5",
        "b",
        ".specs/b",
        "bench",
        "2026-01-01T00:00:00Z".parse().unwrap(),
    );
    state.tasks = parse_tasks(
        "## Task 1: A\nmode: sequential\n## Task 2: B\nmode: parallel\ndepends_on: [1]\n## Task 3: C\nmode: parallel\ndepends_on: [1]\n",
    )
    .unwrap()
    .0;
    if let Some(t) = state.tasks.get_mut("1") {
        t.impl_status = "completed".into();
    }
    let files: BTreeMap<String, String> = ["tasks.md", "design.md", "impl-1.md"]
        .iter()
        .map(|f| (f.to_string(), "x".to_string()))
        .collect();
    let input = PlanInput {
        definition: &forge,
        files: &files,
        workspace: ".specs/b",
        repo: None,
    };
    bencher.bench_local(|| plan(&input, &state).unwrap());
}
