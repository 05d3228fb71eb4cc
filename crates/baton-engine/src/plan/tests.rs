//! The planner, phase by phase, on the built-in forge pipeline.

use super::*;
use crate::pipeline::tasks::parse_tasks;
use baton_state::{CommandGuard, DecisionReason};
use baton_state::{Lifecycle, PendingDecision};
use baton_workflow::Registry;
use baton_workflow::{Answerer, WorkflowDefinition};
use commit::RepoStatus;
use std::collections::BTreeMap;

fn t() -> baton_state::Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

fn forge() -> std::sync::Arc<WorkflowDefinition> {
    Registry::builtin().get("forge").unwrap()
}

fn state(template: &str, nopr: bool) -> WorkspaceState {
    let def = forge();
    let mut s = WorkspaceState::fresh("forge", "phase-1", "fix-auth", "x", "t", t());
    let mut skips = def.skipped_for(template);
    if nopr {
        skips.extend(def.skipped_for("nopr"));
    }
    skips.extend(def.skipped_for("no_source"));
    Lifecycle::new(&def, t())
        .apply_skips(&mut s, &skips)
        .unwrap();
    s
}

fn files(entries: &[&str]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|f| (f.to_string(), format!("# {f}\n\n## Section\n")))
        .collect()
}

fn plan_for(s: &WorkspaceState, f: &BTreeMap<String, String>) -> Plan {
    let def = forge();
    plan(
        &PlanInput {
            definition: &def,
            files: f,
            workspace: ".specs/20260101-fix-auth",
            repo: None,
        },
        s,
    )
    .unwrap()
}

#[test]
fn the_first_phase_uses_the_combined_agent_when_investigation_is_skipped() {
    let f = files(&["request.md"]);
    let Plan::Spawn(light) = plan_for(&state("light", true), &f) else {
        panic!()
    };
    assert_eq!(light.agent, "situation-analyst-investigator");
    assert_eq!(light.inputs, ["request.md"]);
    assert_eq!(light.output.as_deref(), Some("analysis.md"));
    assert_eq!(light.model, "sonnet");
    let Plan::Spawn(full) = plan_for(&state("full", true), &f) else {
        panic!()
    };
    assert_eq!(full.agent, "situation-analyst");
}

#[test]
fn inputs_are_the_listed_files_that_exist() {
    let mut s = state("standard", true);
    s.current_phase = "phase-3".into();
    let Plan::Spawn(first) = plan_for(&s, &files(&["request.md", "analysis.md"])) else {
        panic!()
    };
    assert_eq!(first.inputs, ["request.md", "analysis.md"]);
    let Plan::Spawn(again) = plan_for(
        &s,
        &files(&[
            "request.md",
            "analysis.md",
            "investigation.md",
            "review-design.md",
            "design.md",
        ]),
    ) else {
        panic!()
    };
    assert_eq!(
        again.inputs,
        [
            "request.md",
            "analysis.md",
            "investigation.md",
            "review-design.md"
        ]
    );
}

#[test]
fn implementation_registers_tasks_then_fans_out_by_the_dag() {
    let mut s = state("full", true);
    s.current_phase = "phase-5".into();
    let tasks_md = "## Task 1: A\nmode: sequential\n\n## Task 2: B\nmode: parallel\ndepends_on: [1]\n\n## Task 3: C\nmode: parallel\ndepends_on: [1]\n\n## Task 4: Merge PR\nmode: human_gate\ndepends_on: [2, 3]\n";
    let mut f = files(&["tasks.md", "design.md"]);
    f.insert("tasks.md".into(), tasks_md.into());
    assert_eq!(
        plan_for(&s, &f),
        Plan::RegisterTasks {
            phase: "phase-5".into()
        }
    );
    s.tasks = parse_tasks(tasks_md).unwrap().0;
    let Plan::Spawn(one) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(one.task.as_deref(), Some("1"));
    assert_eq!(one.output.as_deref(), Some("impl-1.md"));
    s.tasks.get_mut("1").unwrap().impl_status = "completed".into();
    // Recorded as done without its impl-1.md: implemented again.
    let Plan::Spawn(again) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(again.task.as_deref(), Some("1"));
    f.insert("impl-1.md".into(), "done".into());
    let Plan::Spawn(fan) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(fan.output, None);
    let ids: Vec<_> = fan.parallel.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["2", "3"]);
    assert_eq!(fan.parallel[1].output_file, "impl-3.md");
    for k in ["2", "3"] {
        s.tasks.get_mut(k).unwrap().impl_status = "completed".into();
        f.insert(format!("impl-{k}.md"), "done".into());
    }
    let Plan::Ask(gate) = plan_for(&s, &f) else {
        panic!()
    };
    assert!(gate.is_gate());
    assert_eq!(gate.name, "task-4");
    assert_eq!(gate.options, ["done", "skip", "abandon"]);
    s.tasks.get_mut("4").unwrap().impl_status = "completed".into();
    assert_eq!(
        plan_for(&s, &f),
        Plan::CompletePhase {
            phase: "phase-5".into()
        }
    );
}

#[test]
fn the_light_template_writes_a_single_task_stub() {
    let mut s = state("light", true);
    s.current_phase = "phase-5".into();
    assert_eq!(
        plan_for(&s, &files(&["design.md"])),
        Plan::WriteFile {
            phase: "phase-5".into(),
            file: "tasks.md".into(),
            content: SINGLE_TASK_STUB.into()
        }
    );
    assert!(parse_tasks(SINGLE_TASK_STUB).is_ok());
}

#[test]
fn reviews_fan_out_per_implemented_task_and_retries_read_the_failed_review() {
    let mut s = state("full", true);
    s.current_phase = "phase-6".into();
    s.tasks = parse_tasks("## Task 1: A\n## Task 2: B\n## Task 3: C\nmode: human_gate\n")
        .unwrap()
        .0;
    for t in s.tasks.values_mut() {
        t.impl_status = "completed".into();
    }
    let f = files(&["tasks.md", "impl-1.md", "impl-2.md", "review-1.md"]);
    let Plan::Spawn(fan) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(
        fan.parallel,
        [
            ParallelTask {
                id: "1".into(),
                input_files: vec!["impl-1.md".into()],
                output_file: "review-1.md".into()
            },
            ParallelTask {
                id: "2".into(),
                input_files: vec!["impl-2.md".into()],
                output_file: "review-2.md".into()
            }
        ]
    );
    // Task 1 failed its review: back in phase-5 it is retried with the review.
    s.current_phase = "phase-5".into();
    let t1 = s.tasks.get_mut("1").unwrap();
    t1.impl_status = "pending".into();
    t1.review_status = "completed_fail".into();
    let Plan::Spawn(retry) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(retry.task.as_deref(), Some("1"));
    assert!(retry.inputs.contains(&"review-1.md".to_string()));
    assert!(retry.summary.starts_with("Retry implementation for task 1"));
}

#[test]
fn checkpoints_offer_revise_only_while_the_loop_has_visits_left() {
    let mut s = state("standard", true);
    s.current_phase = "checkpoint-a".into();
    let f = files(&["design.md", "review-design.md"]);
    let Plan::Ask(q) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(q.options, ["proceed", "revise", "abandon"]);
    assert!(
        q.message
            .contains("- .specs/20260101-fix-auth/review-design.md")
    );
    assert!(q.message.contains("Next: Task Decomposition."));
    for _ in 0..6 {
        s.history.push(baton_state::HistoryEntry {
            at: t(),
            phase: "phase-3".into(),
            action: baton_state::HistoryAction::Start,
            detail: None,
            by: None,
        });
    }
    let Plan::Ask(q) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(q.options, ["proceed", "abandon"]);
}

#[test]
fn review_phases_waiting_for_a_person_are_answerable() {
    let mut s = state("standard", true);
    s.current_phase = "phase-3b".into();
    s.current_phase_status = PhaseStatus::AwaitingHuman;
    s.pending_decision = Some(PendingDecision {
        phase: "phase-3b".into(),
        reason: DecisionReason::NoVerdict,
        detail: "no clear verdict (review-design.md: no verdict line found)".into(),
    });
    let Plan::Ask(q) = plan_for(&s, &files(&["design.md", "review-design.md"])) else {
        panic!()
    };
    assert_eq!(q.name, "phase-3b-unknown-verdict");
    // The reason is said once, then why.
    assert!(
        q.message.contains(
            "The review gave no clear verdict. Why: review-design.md: no verdict line found.\n"
        ),
        "{}",
        q.message
    );
    assert_eq!(q.message.matches("no clear verdict").count(), 1);
    assert_eq!(q.options, ["approve", "revise", "abandon"]);
    s.pending_decision.as_mut().unwrap().reason = DecisionReason::RetryLimit;
    let Plan::Ask(q) = plan_for(&s, &files(&[])) else {
        panic!()
    };
    assert_eq!(q.name, "phase-3b-retry-limit");
    assert_eq!(q.options, ["approve", "abandon"]);
}

#[test]
fn commands_are_argv_with_placeholders_inside_single_arguments() {
    let mut s = state("full", false);
    s.branch = Some("fix/auth-timeout".into());
    s.current_phase = "pr-creation".into();
    let mut f = files(&[]);
    f.insert(
        "request.md".into(),
        "---\nsource_type: github_issue\nsource_url: https://github.com/o/r/issues/42\nsource_id: 42\n---\n\n# Fix the auth timeout; rm -rf / $(reboot)\n".into(),
    );
    assert_eq!(
        plan_for(&s, &f),
        Plan::Exec {
            phase: "pr-creation".into(),
            argv: vec![
                "git".into(),
                "push".into(),
                "-u".into(),
                "origin".into(),
                "HEAD".into()
            ],
            check: false,
        }
    );
    // The PR step is guarded: first the "already done" check…
    s.command_step = 1;
    assert_eq!(
        plan_for(&s, &f),
        Plan::Exec {
            phase: "pr-creation".into(),
            argv: vec![
                "gh".into(),
                "pr".into(),
                "view".into(),
                "--json".into(),
                "url".into()
            ],
            check: true,
        }
    );
    // …then, when it said "not done", the command itself.
    s.command_guard = CommandGuard::Run;
    let Plan::Exec { argv, check, .. } = plan_for(&s, &f) else {
        panic!()
    };
    assert!(!check);
    assert_eq!(argv.len(), 7);
    assert_eq!(argv[4], "fix: Fix the auth timeout; rm -rf / $(reboot)");
    assert!(argv[6].ends_with("Closes #42"));
    // Handed out but not reported (an interrupted run): check again.
    s.command_guard = CommandGuard::Running;
    let Plan::Exec { check, .. } = plan_for(&s, &f) else {
        panic!()
    };
    assert!(check);
    s.command_guard = CommandGuard::Check;
    s.command_step = 2;
    assert_eq!(
        plan_for(&s, &f),
        Plan::CompletePhase {
            phase: "pr-creation".into()
        }
    );
    s.command_step = 0;
    s.current_phase_status = PhaseStatus::Failed;
    let Plan::Ask(q) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(q.kind, QuestionKind::CommandFailed);
    assert_eq!(q.options, ["retry", "skip", "abandon"]);
}

#[test]
fn post_to_source_names_the_tracker_and_how_to_post() {
    let meta = request_meta(
        "---\nsource_type: linear_issue\nsource_url: https://linear.app/o/issue/ENG-7\nsource_id: ENG-7\n---\n\nTitle\n",
    );
    assert_eq!(meta.source_id, "ENG-7");
    assert_eq!(meta.title, "Title");
    let m = post_method(&meta, ".specs/x");
    assert_eq!(m["mcp_tool"], "mcp__linear__save_comment");
    assert_eq!(m["mcp_params"]["issueId"], "ENG-7");
    let gh = request_meta(
        "---\nsource_type: github_issue\nsource_url: https://github.com/o/r/issues/1\nsource_id: 1\n---\nT\n",
    );
    assert_eq!(post_method(&gh, ".specs/x")["command"][0], "gh");
}

#[test]
fn finished_and_abandoned_runs_are_done() {
    let mut s = state("light", true);
    s.current_phase_status = PhaseStatus::Abandoned;
    assert_eq!(
        plan_for(&s, &files(&[])),
        Plan::Done {
            summary: "Pipeline abandoned at phase-1".into(),
            abandoned: true
        }
    );
    s.current_phase = COMPLETED.into();
    s.current_phase_status = PhaseStatus::Completed;
    let Plan::Done { abandoned, .. } = plan_for(&s, &files(&[])) else {
        panic!()
    };
    assert!(!abandoned);
}

#[test]
fn the_url_decides_the_source_whatever_the_front_matter_says() {
    let m = request_meta(
        "---\nsource_type: text\nsource_url: https://github.com/o/r/issues/42\nsource_id: 42\n---\nFix it\n",
    );
    assert_eq!(m.source_type, "github_issue");
    let m = request_meta("---\nsource_type: jira_issue\n---\nFix it\n");
    assert_eq!(m.source_type, "text", "no URL: a text request");
    let m = request_meta("no front matter\n");
    assert_eq!(m.source_type, "text");
}

#[test]
fn skips_are_read_from_the_state_at_every_step() {
    let def = forge();
    let text = request_meta("---\nsource_type: text\n---\nx\n");
    let issue = request_meta("---\nsource_url: https://github.com/o/r/issues/1\n---\nx\n");
    let mut s = WorkspaceState::fresh("forge", "phase-1", "x", "x", "t", t());
    s.effort = Some(baton_state::Effort::M);
    let skips = effective_skips(&def, &s, &text);
    for p in ["phase-4b", "checkpoint-b", "post-to-source"] {
        assert!(skips.contains(&p.to_string()), "{p}: {skips:?}");
    }
    assert!(!skips.contains(&"pr-creation".to_string()));
    assert!(!effective_skips(&def, &s, &issue).contains(&"post-to-source".to_string()));
    s.skip_pr = true;
    let skips = effective_skips(&def, &s, &issue);
    assert!(
        skips.contains(&"pr-creation".to_string()) && skips.contains(&"final-push".to_string())
    );
    // A run resting on a skipped phase skips it (no start, no agent).
    s.current_phase = "pr-creation".into();
    assert_eq!(
        plan_for(&s, &files(&["request.md"])),
        Plan::Skip {
            phase: "pr-creation".into()
        }
    );
}

#[test]
fn a_task_that_can_never_start_is_a_question_with_its_reason() {
    let mut s = state("full", true);
    s.current_phase = "phase-5".into();
    s.current_phase_status = PhaseStatus::InProgress;
    s.tasks = parse_tasks("## Task 1: A\nmode: sequential\n").unwrap().0;
    s.tasks.insert(
        "4".into(),
        baton_state::Task {
            title: "Docs".into(),
            execution_mode: "sequential".into(),
            depends_on: Some(vec![9]),
            impl_status: "pending".into(),
            ..Default::default()
        },
    );
    s.tasks.get_mut("1").unwrap().impl_status = "completed".into();
    let mut f = files(&["tasks.md", "design.md"]);
    f.insert("impl-1.md".into(), "done".into());
    let Plan::Ask(q) = plan_for(&s, &f) else {
        panic!()
    };
    assert_eq!(
        q.kind,
        QuestionKind::StuckTasks {
            tasks: vec!["4".into()]
        }
    );
    assert!(
        q.message
            .contains("depends on task 9, which does not exist"),
        "{}",
        q.message
    );
    assert_eq!(q.answered_by, Answerer::Person);
    assert_eq!(blocked_reason(&s.tasks, "1"), None);
}

#[test]
fn the_commit_stage_needs_the_repository_and_asks_about_secrets() {
    let def = forge();
    let mut s = state("light", true);
    s.current_phase = "final-commit".into();
    s.current_phase_status = PhaseStatus::InProgress;
    s.repo_baseline = Some(baton_state::RepoBaseline::default());
    let f = files(&["request.md"]);
    let plan_with = |s: &WorkspaceState, repo: Option<&RepoStatus>| {
        plan(
            &PlanInput {
                definition: &def,
                files: &f,
                workspace: ".specs/20260101-fix-auth",
                repo,
            },
            s,
        )
        .unwrap()
    };
    assert_eq!(
        plan_with(&s, None),
        Plan::ReadRepo {
            phase: "final-commit".into()
        }
    );
    let none = RepoStatus::default();
    assert_eq!(
        plan_with(&s, Some(&none)),
        Plan::SkipStep {
            phase: "final-commit".into()
        },
        "nothing to stage: the add step is skipped"
    );
    let some = RepoStatus {
        changed: vec!["src/a.rs".into(), "secrets.env".into()],
    };
    let Plan::Ask(q) = plan_with(&s, Some(&some)) else {
        panic!()
    };
    assert_eq!(
        q.kind,
        QuestionKind::SecretFiles {
            files: vec!["secrets.env".into()]
        }
    );
    s.commit_excluded = vec!["secrets.env".into()];
    let Plan::Exec { argv, .. } = plan_with(&s, Some(&some)) else {
        panic!()
    };
    assert_eq!(argv, ["git", "add", "--", "src/a.rs"]);
}
