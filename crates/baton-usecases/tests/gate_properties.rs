//! Property test: random sequences of what an agent, a person and the
//! machine can do to a seed-pipeline run — loop calls done honestly, lazily
//! (reported without the work) or cut off (never reported, like a killed
//! agent), answers from the agent and from the person, recovery tools with
//! and without force, server restarts, hand edits of the run's flags —
//! never break the gates:
//!
//! * no gated phase completes without its evidence;
//! * no question for a person is answered by the agent;
//! * no phase the run skips is started or dispatched;
//! * no pull-request step is handed out while `skipPr` is set;
//! * no call fails with `internal` (a defect).

use std::collections::BTreeMap;

use baton_state::{Actor, Who};
use baton_usecases::pipeline::action::Action;
use baton_usecases::pipeline::answer::{AnswerArgs, answer_question};
use baton_usecases::pipeline::init::{
    InitWithContextArgs, UserConfirmation, pipeline_init_with_context,
};
use baton_usecases::pipeline::next::{NextArgs, next_action};
use baton_usecases::recovery::{
    FailArgs, PhaseArgs, phase_complete, phase_fail, phase_start, skip_phase,
};
use baton_usecases::{ErrorCode, Services};
use proptest::prelude::*;
use serde_json::Value;

mod common;

const TASKS: &str = "# Tasks\n\n## Task 1: Core\n\nmode: sequential\n\n## Task 2: API\n\nmode: parallel\ndepends_on: [1]\n\n## Task 3: CLI\n\nmode: parallel\ndepends_on: [1]\n";

fn output(file: &str) -> String {
    match file {
        "design.md" => "# Design\n\n## Approach\n\nx\n".into(),
        "review-design.md" | "review-tasks.md" => "# Review\n\n## Verdict: APPROVE\n".into(),
        "tasks.md" => TASKS.into(),
        f if f.starts_with("review-") => "# Review\n\n## Verdict: PASS\n".into(),
        f => format!("# {f}\n\nwork\n"),
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// The agent executes the action and reports it.
    Honest,
    /// The agent reports the action as done without doing it.
    Lazy,
    /// The agent is killed: the action is never reported.
    Cut,
    /// The agent answers the question itself.
    AgentAnswer(usize),
    /// The person answers the question.
    PersonAnswer(usize),
    /// A recovery tool on the current phase, with or without force.
    Recovery(usize, bool),
    /// The server restarts.
    Restart,
    /// Someone edits the run's flags in state.json by hand.
    HandEdit(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Honest),
        1 => Just(Op::Lazy),
        1 => Just(Op::Cut),
        1 => (0..3usize).prop_map(Op::AgentAnswer),
        2 => (0..3usize).prop_map(Op::PersonAnswer),
        1 => (0..4usize, any::<bool>()).prop_map(|(t, f)| Op::Recovery(t, f)),
        1 => Just(Op::Restart),
        1 => (0..3usize).prop_map(Op::HandEdit),
    ]
}

/// The run under test.
struct Run {
    root: tempfile::TempDir,
    svc: Services,
    ws: String,
    /// The action handed out and not reported yet.
    pending: Option<Action>,
}

impl Run {
    fn dir(&self) -> std::path::PathBuf {
        self.root.path().join(&self.ws)
    }

    fn state_path(&self) -> std::path::PathBuf {
        let live = self.dir().join(".state.live.json");
        if live.exists() {
            live
        } else {
            self.dir().join("state.json")
        }
    }

    fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap()
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.root.path().join(".baton/events/events.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn start_run(effort: &str, nopr: bool, auto: bool) -> Run {
    let root = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let svc = common::services(root.path());
    let flags = baton_engine::pipeline::init::Flags {
        auto,
        skip_pr: nopr,
        ..Default::default()
    };
    let done = pipeline_init_with_context(
        &svc,
        InitWithContextArgs {
            workspace: ".specs/20260101-prop".into(),
            task_text: Some("add login rate limiting".into()),
            flags: Some(flags),
            user_confirmation: Some(UserConfirmation {
                effort: effort.into(),
                use_current_branch: Some(true),
                ..UserConfirmation::default()
            }),
            ..InitWithContextArgs::default()
        },
    )
    .unwrap();
    Run {
        root,
        svc,
        ws: done.workspace.unwrap(),
        pending: None,
    }
}

/// Does the work of `action` as an honest agent would; returns the report.
fn perform(run: &Run, action: &Action) -> NextArgs {
    let mut next = NextArgs::for_workspace(&run.ws);
    match action {
        Action::SpawnAgent(s) => {
            let outputs: Vec<String> = match &s.parallel_tasks {
                Some(tasks) => tasks.iter().map(|t| t.output_file.clone()).collect(),
                None => vec![s.output_file.clone()],
            };
            for o in outputs.into_iter().filter(|o| !o.is_empty()) {
                std::fs::write(run.dir().join(&o), output(&o)).unwrap();
            }
            next.previous_action_complete = Some(true);
        }
        Action::Exec(e) => {
            next.previous_action_complete = Some(true);
            // A guarded step's check says "not done"; commands succeed.
            next.previous_exit_code = Some(if e.check_only { 1 } else { 0 });
        }
        Action::WriteFile(w) => {
            std::fs::write(run.root.path().join(&w.path), &w.content).unwrap();
            next.previous_action_complete = Some(true);
        }
        _ => {}
    }
    next
}

fn not_internal<T>(r: Result<T, baton_usecases::Error>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert_ne!(e.code, ErrorCode::Internal, "a defect: {}", e.message);
            None
        }
    }
}

const RECOVERY: [&str; 4] = ["phase_start", "phase_complete", "phase_fail", "skip_phase"];

fn apply(run: &mut Run, op: &Op) -> Vec<Action> {
    let mut handed_out = Vec::new();
    let mut step = |run: &mut Run, args: NextArgs| {
        if let Some(reply) = not_internal(next_action(&run.svc, args)) {
            run.pending = Some(reply.action.clone());
            handed_out.push(reply.action);
        }
    };
    match op {
        Op::Honest => {
            let args = match run.pending.clone() {
                Some(a) => perform(run, &a),
                None => NextArgs::for_workspace(&run.ws),
            };
            step(run, args);
        }
        Op::Lazy => {
            let mut args = NextArgs::for_workspace(&run.ws);
            args.previous_action_complete = Some(true);
            step(run, args);
        }
        Op::Cut => step(run, NextArgs::for_workspace(&run.ws)),
        Op::AgentAnswer(i) | Op::PersonAnswer(i) => {
            let options = match &run.pending {
                Some(Action::Checkpoint(q) | Action::HumanGate(q)) => q.options.clone(),
                _ => vec!["proceed".into()],
            };
            let answer = options[i % options.len()].clone();
            if matches!(op, Op::AgentAnswer(_)) {
                let mut args = NextArgs::for_workspace(&run.ws);
                args.user_response = Some(answer);
                step(run, args);
            } else {
                not_internal(answer_question(
                    &run.svc,
                    AnswerArgs {
                        workspace: run.ws.clone(),
                        answer,
                    },
                    Actor::person("terminal"),
                ));
            }
        }
        Op::Recovery(t, force) => {
            let phase = run.state()["currentPhase"].as_str().unwrap().to_string();
            let args = PhaseArgs {
                workspace: run.ws.clone(),
                phase: phase.clone(),
                force: *force,
                reason: Some("property test".into()),
            };
            let r = match RECOVERY[*t] {
                "phase_start" => phase_start(&run.svc, args),
                "phase_complete" => phase_complete(&run.svc, args),
                "skip_phase" => skip_phase(&run.svc, args),
                _ => phase_fail(
                    &run.svc,
                    FailArgs {
                        workspace: run.ws.clone(),
                        phase,
                        message: Some("x".into()),
                        force: *force,
                        reason: Some("property test".into()),
                    },
                ),
            };
            if let Err(e) = &r {
                assert_ne!(e.code, ErrorCode::Internal, "a defect: {}", e.message);
                if !force {
                    assert!(
                        matches!(e.code, ErrorCode::Blocked | ErrorCode::InvalidState),
                        "{}",
                        e.message
                    );
                }
            } else {
                assert!(force, "a recovery tool acted without force");
            }
        }
        Op::Restart => {
            run.svc = common::services(run.root.path());
        }
        Op::HandEdit(k) => {
            let mut s = run.state();
            match k {
                0 => s["skipPr"] = Value::Bool(!s["skipPr"].as_bool().unwrap_or(false)),
                1 => s["autoApprove"] = Value::Bool(!s["autoApprove"].as_bool().unwrap_or(false)),
                _ => {
                    let current = s["currentPhase"].clone();
                    if s["currentPhaseStatus"] == "pending"
                        && let Some(list) = s["skippedPhases"].as_array_mut()
                        && !list.contains(&current)
                    {
                        list.push(current);
                    }
                }
            }
            std::fs::write(run.state_path(), serde_json::to_string_pretty(&s).unwrap()).unwrap();
        }
    }
    handed_out
}

/// Phases the run skips, as its state says now.
fn skipped(def: &baton_workflow::WorkflowDefinition, s: &Value) -> Vec<String> {
    let mut out: Vec<String> = s["skippedPhases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let template = s["flowTemplate"].as_str().unwrap_or("standard");
    let mut groups = vec![template, "no_source"];
    if s["skipPr"] == true {
        groups.push("nopr");
    }
    let completed: Vec<&str> = s["completedPhases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for g in groups {
        out.extend(
            def.skipped_for(g)
                .into_iter()
                .filter(|p| !completed.contains(&p.as_str())),
        );
    }
    out
}

fn check(run: &Run, history_before: usize, events_before: usize, handed_out: &[Action]) {
    let def = run.svc.workflow("forge").unwrap();
    let s = run.state();
    let history = s["history"].as_array().unwrap();
    let files: BTreeMap<String, u64> = std::fs::read_dir(run.dir())
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().to_string(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    let present = |f: &str| files.get(f).is_some_and(|n| *n > 0);
    for h in history.iter().skip(history_before) {
        if h["action"] != "complete" {
            continue;
        }
        let phase = h["phase"].as_str().unwrap();
        let p = def.phase(phase).unwrap();
        // No gated phase completes without its evidence.
        for a in &p.artifacts {
            assert!(present(a), "{phase} completed without {a}: {h}");
        }
        if phase == "phase-5" && s["tasks"].as_object().is_some_and(|t| !t.is_empty()) {
            for (k, t) in s["tasks"].as_object().unwrap() {
                let human =
                    t["executionMode"] == "human_gate" || t["reviewStatus"] == "skipped_by_human";
                assert!(
                    t["implStatus"] == "completed",
                    "phase-5 completed with task {k} open"
                );
                assert!(
                    human || present(&format!("impl-{k}.md")),
                    "phase-5 completed without impl-{k}.md"
                );
            }
        }
        // A person's question completes only by a person (or their --auto).
        if p.kind.waits_for_human() {
            let by = h["by"].as_str().unwrap_or("");
            assert!(
                by.starts_with("person:") || by.starts_with("auto:"),
                "{phase} completed by {by:?}"
            );
        }
    }
    if let Some(answers) = s["answers"].as_array() {
        for a in answers {
            assert_ne!(
                a["by"]["who"], "agent",
                "an agent answered a person's question: {a}"
            );
        }
    }
    let skips = skipped(&def, &s);
    for e in run.events().iter().skip(events_before) {
        if matches!(e["event"].as_str(), Some("phase-start" | "agent-dispatch")) {
            let phase = e["phase"].as_str().unwrap();
            assert!(
                !skips.iter().any(|p| p == phase),
                "skipped {phase} was {}",
                e["event"]
            );
        }
    }
    if s["skipPr"] == true {
        for a in handed_out {
            if let Action::Exec(e) = a {
                assert!(
                    e.phase != "pr-creation" && e.phase != "final-push",
                    "a PR step with skipPr set: {:?}",
                    e.commands
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn no_sequence_gets_past_the_gates(
        effort in prop_oneof![Just("S"), Just("M"), Just("L")],
        nopr in any::<bool>(),
        auto in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..70),
    ) {
        let mut run = start_run(effort, nopr, auto);
        for op in &ops {
            let history_before = run.state()["history"].as_array().unwrap().len();
            let events_before = run.events().len();
            let handed_out = apply(&mut run, op);
            check(&run, history_before, events_before, &handed_out);
            if run.state()["currentPhaseStatus"] == "abandoned" {
                break;
            }
        }
        // The person never gets an `agent` answer recorded, and the record is theirs.
        let s = run.state();
        for a in s["answers"].as_array().into_iter().flatten() {
            prop_assert!(a["by"]["who"] != serde_json::to_value(Who::Agent).unwrap());
        }
    }
}
