//! What a person is told, for a real run driven through the use cases: a
//! checkpoint is "waiting" with the question's text and options, a human
//! gate is "human_gate", nobody is told to answer a question that was
//! answered meanwhile, a failed phase is "failure", the end "completed".

use std::path::Path;

use baton_config::NotifyOn;
use baton_events::{EventKind, EventRecord};
use baton_state::Actor;
use baton_usecases::notifications::notification_for;
use baton_usecases::pipeline::action::Action;
use baton_usecases::pipeline::answer::{AnswerArgs, answer_question};
use baton_usecases::pipeline::init::{
    InitWithContextArgs, UserConfirmation, pipeline_init_with_context,
};
use baton_usecases::pipeline::next::{NextArgs, next_action};
use baton_usecases::recovery::{FailArgs, phase_fail};

mod common;

const TASKS: &str = "# Tasks\n\n## Task 1: Core change\n\nmode: sequential\n\n## Task 2: Flip the flag in production\n\nmode: human_gate\ndepends_on: [1]\n";

fn output(file: &str) -> String {
    match file {
        "design.md" => "# Design\n\n## Approach\n\nx\n".into(),
        "review-design.md" | "review-tasks.md" => "# Review\n\n## Verdict: APPROVE\n".into(),
        "tasks.md" => TASKS.into(),
        f if f.starts_with("review-") => "# Review\n\n## Verdict: PASS\n".into(),
        f => format!("# {f}\n\nwork\n"),
    }
}

fn last_event(root: &Path, kind: &str) -> EventRecord {
    let text = std::fs::read_to_string(root.join(".baton/events/events.jsonl")).unwrap();
    text.lines()
        .rev()
        .map(|l| serde_json::from_str::<EventRecord>(l).unwrap())
        .find(|e| e.event.as_str() == kind)
        .unwrap_or_else(|| panic!("no {kind} event"))
}

#[test]
fn a_person_hears_of_questions_gates_failures_and_the_end() {
    let root = tempfile::tempdir().unwrap();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(root.path())
            .status()
            .unwrap()
            .success()
    );
    let svc = common::services(root.path());
    let ws = pipeline_init_with_context(
        &svc,
        InitWithContextArgs {
            workspace: ".specs/20260101-gate".into(),
            task_text: Some("add a feature flag".into()),
            flags: Some(baton_engine::pipeline::init::Flags {
                skip_pr: true,
                ..Default::default()
            }),
            user_confirmation: Some(UserConfirmation {
                effort: "M".into(),
                use_current_branch: Some(true),
                ..UserConfirmation::default()
            }),
            ..InitWithContextArgs::default()
        },
    )
    .unwrap()
    .workspace
    .unwrap();
    let dir = root.path().join(&ws);
    let mut args = NextArgs::for_workspace(&ws);
    let mut saw_waiting = false;
    let mut saw_gate = false;
    for _ in 0..200 {
        let reply = next_action(&svc, args).unwrap();
        args = NextArgs::for_workspace(&ws);
        match reply.action {
            Action::SpawnAgent(s) => {
                let outputs: Vec<String> = match &s.parallel_tasks {
                    Some(tasks) => tasks.iter().map(|t| t.output_file.clone()).collect(),
                    None => vec![s.output_file.clone()],
                };
                for o in outputs.into_iter().filter(|o| !o.is_empty()) {
                    std::fs::write(dir.join(&o), output(&o)).unwrap();
                }
                args.previous_action_complete = Some(true);
            }
            Action::Exec(e) => {
                args.previous_action_complete = Some(true);
                args.previous_exit_code = Some(if e.check_only { 1 } else { 0 });
            }
            Action::WriteFile(w) => {
                std::fs::write(root.path().join(&w.path), &w.content).unwrap();
                args.previous_action_complete = Some(true);
            }
            Action::Checkpoint(q) => {
                let event = last_event(root.path(), "checkpoint");
                if q.name == "checkpoint-a" && !saw_waiting {
                    let n = notification_for(&svc, &event).expect("a person is told");
                    assert_eq!(n.kind, NotifyOn::Waiting);
                    assert_eq!(n.run, "20260101-gate");
                    assert!(
                        n.title.contains("waits for you at checkpoint-a"),
                        "{}",
                        n.title
                    );
                    let question = n.question.as_ref().unwrap();
                    assert_eq!(question.options, ["proceed", "revise", "abandon"]);
                    assert!(question.text.contains("design.md"), "{}", question.text);
                    assert!(
                        question
                            .how_to_answer
                            .as_deref()
                            .unwrap_or("")
                            .contains("baton answer")
                    );
                    saw_waiting = true;
                }
                let answer = if q.options.iter().any(|o| o == "proceed") {
                    "proceed"
                } else {
                    q.options[0].as_str()
                };
                answer_question(
                    &svc,
                    AnswerArgs {
                        workspace: ws.clone(),
                        answer: answer.into(),
                    },
                    Actor::person("terminal"),
                )
                .unwrap();
                // Answered: nobody is told to answer it any more.
                assert_eq!(notification_for(&svc, &event), None);
            }
            Action::HumanGate(q) => {
                let n =
                    notification_for(&svc, &last_event(root.path(), "checkpoint")).expect("told");
                assert_eq!(n.kind, NotifyOn::HumanGate);
                assert_eq!(n.question.as_ref().unwrap().name, q.name);
                assert!(n.title.contains("human gate"), "{}", n.title);
                saw_gate = true;
                break;
            }
            Action::Done(_) => break,
        }
    }
    assert!(
        saw_waiting && saw_gate,
        "waiting {saw_waiting}, gate {saw_gate}"
    );

    // The person does the gate's work; then the phase fails.
    answer_question(
        &svc,
        AnswerArgs {
            workspace: ws.clone(),
            answer: "done".into(),
        },
        Actor::person("terminal"),
    )
    .unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["currentPhaseStatus"], "in_progress", "{state}");
    let phase = state["currentPhase"].as_str().unwrap().to_string();
    phase_fail(
        &svc,
        FailArgs {
            workspace: ws.clone(),
            phase: phase.clone(),
            message: Some("the deploy failed".into()),
            force: true,
            reason: Some("test".into()),
        },
    )
    .unwrap();
    let n = notification_for(&svc, &last_event(root.path(), "phase-fail")).unwrap();
    assert_eq!(n.kind, NotifyOn::Failure);
    assert_eq!(n.detail.as_deref(), Some("the deploy failed"));
    assert!(n.title.contains(&format!("{phase} failed")), "{}", n.title);
    // The end (classified from the event alone).
    let done = EventRecord::new(EventKind::PipelineComplete, "final-commit", "gate", &ws);
    let n = notification_for(&svc, &done).unwrap();
    assert_eq!(n.kind, NotifyOn::Completed);
    assert_eq!(n.title, "gate completed");
    // Other events are not told.
    let start = EventRecord::new(EventKind::PhaseStart, "phase-1", "gate", &ws);
    assert_eq!(notification_for(&svc, &start), None);
}
