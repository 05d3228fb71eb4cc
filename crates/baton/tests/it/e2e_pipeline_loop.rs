//! Whole pipelines through a real MCP client: `pipeline_next_action` +
//! scripted agent outputs, for every effort, review loops, checkpoints,
//! parallel tasks, human gates, failed commands and server restarts.

use crate::common;

use std::collections::VecDeque;
use std::path::Path;

use crate::common::pipeline::{
    Script, create, default_output, describe, drive, drive_until, git_repo, perform,
};
use crate::common::{Client, Repo, spawn};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effort_s_runs_the_light_template_to_done() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "fix typo in the login page", "S", "--nopr").await;
    let trace = drive(&c, &repo, &ws, &mut Script::default(), &[], 60).await;
    assert_eq!(
        trace.steps,
        [
            "spawn_agent phase-1 situation-analyst-investigator",
            "spawn_agent phase-3 architect",
            "spawn_agent phase-3b design-reviewer",
            "checkpoint checkpoint-a",
            "write_file phase-5",
            "spawn_agent phase-5 implementer",
            "spawn_agent phase-7 comprehensive-reviewer",
            "spawn_agent final-verification verifier",
            "spawn_agent final-summary verifier",
            "exec final-commit",
            "check final-commit",
            "exec final-commit",
            "done",
        ],
        "{:#?}",
        trace.steps
    );
    assert_eq!(
        trace.last["summary_path"],
        format!("{ws}/summary.md"),
        "{}",
        trace.last
    );
    let state = repo.state(&ws);
    assert_eq!(state["currentPhaseStatus"], "completed");
    // The final commit really ran (the repository has a commit with the summary).
    let log = std::process::Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&log.stdout).contains("fix"),
        "{}",
        String::from_utf8_lossy(&log.stdout)
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effort_m_and_l_walk_their_templates_with_parallel_tasks() {
    for (effort, expect_task_review) in [("M", false), ("L", true)] {
        let repo = git_repo();
        let c = spawn(repo.path(), &[], &[]).await;
        let ws = create(&c, "add login rate limiting", effort, "--nopr").await;
        let trace = drive(&c, &repo, &ws, &mut Script::default(), &[], 80).await;
        assert_eq!(trace.last["type"], "done", "{effort}: {:#?}", trace.steps);
        let phases = trace.spawned_phases();
        assert!(phases.contains(&"phase-2".to_string()), "{effort}");
        assert_eq!(
            phases.contains(&"phase-4b".to_string()),
            expect_task_review,
            "{effort}"
        );
        let steps = trace.steps.join("\n");
        assert_eq!(
            steps.contains("checkpoint checkpoint-b"),
            expect_task_review,
            "{steps}"
        );
        // Task 1 alone, then 2 and 3 fanned out; reviews fanned out too.
        let impl_steps: Vec<&String> = trace
            .steps
            .iter()
            .filter(|s| s.contains("phase-5 implementer"))
            .collect();
        assert_eq!(impl_steps.len(), 2, "{steps}");
        let state = repo.state(&ws);
        for k in ["1", "2", "3"] {
            assert_eq!(state["tasks"][k]["implStatus"], "completed");
            assert_eq!(state["tasks"][k]["reviewStatus"], "completed_pass");
        }
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_outs_name_each_task_and_follow_the_dependency_graph() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut fan_outs = Vec::new();
    for _ in 0..60 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["type"] == "done" {
            break;
        }
        if a["parallel_task_ids"].is_array() {
            fan_outs.push(a.clone());
        } else if a["type"] == "spawn_agent" {
            assert_eq!(a["parallel_task_ids"], Value::Null, "{a}");
        }
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    }
    assert_eq!(fan_outs.len(), 2, "implementation and review fan-outs");
    let implement = &fan_outs[0];
    assert_eq!(implement["phase"], "phase-5");
    assert_eq!(implement["parallel_task_ids"], json!(["2", "3"]));
    assert_eq!(implement["output_file"], "");
    assert_eq!(
        implement["parallel_tasks"][0],
        json!({"id": "2", "input_files": [], "output_file": "impl-2.md"})
    );
    assert!(
        implement["display_message"]
            .as_str()
            .unwrap()
            .contains("(parallel · 2 tasks)")
    );
    let review = &fan_outs[1];
    assert_eq!(review["phase"], "phase-6");
    assert_eq!(review["parallel_task_ids"], json!(["1", "2", "3"]));
    assert_eq!(
        review["parallel_tasks"][2],
        json!({"id": "3", "input_files": ["impl-3.md"], "output_file": "review-3.md"})
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn design_revise_then_approve_and_a_stale_review_is_refused() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let revise = "# Review\n\n## Verdict: REVISE\n\n**1. [CRITICAL] No limit per IP**\n";
    let approve = "# Review\n\n## Verdict: APPROVE\n";
    let mut script = Script::default().with("review-design.md", &[revise, approve]);
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut seen = Vec::new();
    let mut revision_reply = Value::Null;
    loop {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["report_result"]["next_action_hint"] == "revision_required" {
            revision_reply = a.clone();
        }
        seen.push(describe(&a));
        if a["type"] == "checkpoint" {
            break;
        }
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    }
    assert_eq!(
        seen[2..],
        [
            "spawn_agent phase-3 architect",
            "spawn_agent phase-3b design-reviewer",
            "spawn_agent phase-3 architect",
            "spawn_agent phase-3b design-reviewer",
            "checkpoint checkpoint-a",
        ]
    );
    // The REVISE came back embedded, with findings, and the next action is the revision.
    assert_eq!(revision_reply["report_result"]["verdict_parsed"], "REVISE");
    assert_eq!(
        revision_reply["report_result"]["findings"],
        json!([{"severity": "CRITICAL", "description": "No limit per IP"}])
    );
    assert_eq!(revision_reply["type"], "spawn_agent");
    assert_eq!(revision_reply["phase"], "phase-3");
    assert!(
        revision_reply["input_files"]
            .as_array()
            .unwrap()
            .contains(&json!("review-design.md"))
    );
    let state = repo.state(&ws);
    assert_eq!(state["revisions"]["designRevisions"], 1);
    let kinds: Vec<String> = repo
        .events()
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(kinds.contains(&"revision-required".to_string()));

    // Stale review: send the design back at the checkpoint, let the reviewer
    // "forget" to write; the old review cannot pass for the new design.
    let a = person_then_next(&c, repo.path(), &ws, "revise: use a sliding window").await;
    assert_eq!(a["phase"], "phase-3");
    assert!(
        a["prompt"]
            .as_str()
            .unwrap()
            .contains("## Human Feedback\n\nA person reviewed the work at checkpoint-a")
    );
    assert!(
        a["prompt"]
            .as_str()
            .unwrap()
            .contains("use a sliding window")
    );
    // Time passes: the old review is clearly older than the next review phase.
    std::thread::sleep(std::time::Duration::from_millis(120));
    std::fs::write(
        repo.ws_dir(&ws).join("design.md"),
        default_output("design.md"),
    )
    .unwrap();
    let a = c
        .ok(
            "pipeline_next_action",
            json!({"workspace": ws, "previous_action_complete": true}),
        )
        .await;
    assert_eq!(a["phase"], "phase-3b");
    let before = repo.snapshot();
    let e = c
        .err(
            "pipeline_next_action",
            json!({"workspace": ws, "previous_action_complete": true}),
            "blocked",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("review-design.md was written before this run of phase-3b"),
        "{e}"
    );
    assert_eq!(repo.snapshot(), before, "a refused report changes nothing");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_abandon_ends_the_run_and_bad_answers_are_refused() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let mut script = Script::default();
    let checkpoint = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    assert_eq!(checkpoint["name"], "checkpoint-a");
    assert_eq!(
        checkpoint["options"],
        json!(["proceed", "revise", "abandon"])
    );
    let before = repo.snapshot();
    // The agent may not answer a person's question, not even with a valid option.
    for answer in ["proceed", "maybe"] {
        let e = c
            .err(
                "pipeline_next_action",
                json!({"workspace": ws, "user_response": answer}),
                "blocked",
            )
            .await;
        assert_eq!(e["details"]["rule"], "person_only");
        assert!(
            e["message"].as_str().unwrap().contains("baton answer"),
            "the refusal says how the person answers: {e}"
        );
    }
    assert_eq!(repo.snapshot(), before);
    // A person's answer that is not an option is refused with the options.
    let bad = common::person_answers(repo.path(), &ws, "maybe");
    assert!(!bad.ok);
    assert!(
        bad.output.contains("proceed, revise, abandon"),
        "{}",
        bad.output
    );
    assert_eq!(repo.snapshot(), before);
    let done = person_then_next(&c, repo.path(), &ws, "abandon").await;
    assert_eq!(done["type"], "done");
    assert_eq!(done["summary"], "Pipeline abandoned at checkpoint-a");
    assert_eq!(repo.state(&ws)["currentPhaseStatus"], "abandoned");
    // Asking again keeps answering done.
    let again = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(again["type"], "done");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fail_review_retries_the_task_with_its_review() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let fail = "# Review\n\n## Verdict: FAIL\n\n**1. [CRITICAL] Off by one**\n";
    let pass = "# Review\n\n## Verdict: PASS\n";
    let mut script = Script::default().with("review-2.md", &[fail, pass]);
    let trace = drive(&c, &repo, &ws, &mut script, &[], 80).await;
    assert_eq!(trace.last["type"], "done", "{:#?}", trace.steps);
    let retry_prompt = trace
        .prompts
        .iter()
        .find(|p| p.contains("review-2.md") && p.contains("impl-2.md") && p.contains("Task 2"))
        .expect("a retry prompt for task 2 naming its review");
    assert!(retry_prompt.contains("## Output File"));
    let state = repo.state(&ws);
    assert_eq!(state["tasks"]["2"]["implRetries"], 1);
    assert_eq!(state["tasks"]["2"]["reviewStatus"], "completed_pass");
    let phase5_starts = state["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["phase"] == "phase-5" && h["action"] == "start")
        .count();
    assert_eq!(phase5_starts, 2);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_gate_closes_only_on_an_explicit_answer() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let gated = "# Tasks\n\n## Task 1: Core\n\nmode: sequential\n\n## Task 2: Merge the proto PR in repo-b\n\nmode: human_gate\ndepends_on: [1]\n";
    let mut script = Script::default().with("tasks.md", &[gated]);
    let gate = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "human_gate").await;
    assert_eq!(gate["name"], "task-2");
    assert_eq!(gate["phase"], "phase-5");
    assert_eq!(gate["options"], json!(["done", "skip", "abandon"]));
    assert!(
        gate["present_to_user"]
            .as_str()
            .unwrap()
            .contains("Merge the proto PR")
    );
    // Calls without an answer (a resume, a reconnect) present it again.
    for _ in 0..2 {
        let again = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
        assert_eq!(again["type"], "human_gate");
        assert_eq!(again["current_phase_status"], "awaiting_human");
    }
    let next = person_then_next(&c, repo.path(), &ws, "done").await;
    assert_eq!(next["phase"], "phase-6", "{next}");
    let state = repo.state(&ws);
    assert_eq!(state["tasks"]["2"]["reviewStatus"], "done_by_human");
    let phase5: Vec<&str> = state["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["phase"] == "phase-5")
        .map(|h| h["action"].as_str().unwrap())
        .collect();
    assert_eq!(phase5, ["start", "checkpoint", "resume", "complete"]);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_without_a_verdict_asks_a_person_who_can_approve() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let unclear = "# Review\n\nLooks fine I guess.\n";
    let mut script = Script::default().with("review-design.md", &[unclear]);
    let q = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "checkpoint").await;
    assert_eq!(q["name"], "phase-3b-unknown-verdict");
    assert_eq!(q["options"], json!(["approve", "revise", "abandon"]));
    assert!(q["warning"].as_str().unwrap().contains("no clear verdict"));
    let next = person_then_next(&c, repo.path(), &ws, "approve").await;
    assert_eq!(next["name"], "checkpoint-a", "{next}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approves_checkpoints_but_never_a_human_gate() {
    let repo = git_repo();
    // --auto from a tool argument counts only where the person allows it
    // in their own configuration (issue 19).
    let allow = baton_testkit::person::PersonConfig::allowing_auto_in(repo.path());
    let (k, v) = allow.env();
    let c = spawn(repo.path(), &[], &[(k, &v)]).await;
    let ws = create(&c, "add login rate limiting", "L", "--nopr --auto").await;
    let trace = drive(&c, &repo, &ws, &mut Script::default(), &[], 80).await;
    assert_eq!(trace.last["type"], "done");
    assert!(
        !trace.steps.iter().any(|s| s.starts_with("checkpoint")),
        "{:#?}",
        trace.steps
    );
    let history = repo.state(&ws)["history"].clone();
    let cp: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["phase"] == "checkpoint-a")
        .map(|h| h["action"].as_str().unwrap())
        .collect();
    assert_eq!(cp, ["checkpoint", "complete"]);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_command_asks_retry_skip_or_abandon() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    // With a PR: `git push` fails (no remote) → a person decides.
    let ws = create(&c, "fix typo in the login page", "S", "").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let q = loop {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["name"] == "pr-creation-failed" {
            break a;
        }
        assert_ne!(a["type"], "done", "{a}");
        if a["type"] == "checkpoint" {
            common::person_answer(repo.path(), &ws, "proceed");
            args = json!({"workspace": ws});
            continue;
        }
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    };
    assert_eq!(q["options"], json!(["retry", "skip", "abandon"]));
    assert!(
        q["present_to_user"]
            .as_str()
            .unwrap()
            .contains("git push -u origin HEAD"),
        "{q}"
    );
    assert_eq!(q["current_phase_status"], "failed");
    let retry = person_then_next(&c, repo.path(), &ws, "retry").await;
    assert_eq!(retry["type"], "exec");
    assert_eq!(
        retry["commands"],
        json!(["git", "push", "-u", "origin", "HEAD"])
    );
    let failed = c
        .ok(
            "pipeline_next_action",
            json!({"workspace": ws, "previous_action_complete": true, "previous_exit_code": 128}),
        )
        .await;
    assert_eq!(failed["name"], "pr-creation-failed");
    let next = person_then_next(&c, repo.path(), &ws, "skip").await;
    assert_eq!(next["phase"], "final-summary", "{next}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_phase_emits_the_seed_003_event_sequence() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let trace = drive(&c, &repo, &ws, &mut Script::default(), &[], 80).await;
    assert_eq!(trace.last["type"], "done");
    let events = repo.events();
    let of = |phase: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["phase"] == phase)
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect()
    };
    for phase in [
        "phase-1",
        "phase-2",
        "phase-3",
        "phase-7",
        "final-verification",
    ] {
        assert_eq!(
            of(phase),
            [
                "phase-start",
                "agent-dispatch",
                "action-complete",
                "phase-complete"
            ],
            "{phase}"
        );
    }
    // Three batches in phase-5 (task 1, then 2+3): one start, one complete.
    assert_eq!(
        of("phase-5"),
        [
            "phase-start",
            "agent-dispatch",
            "action-complete",
            "agent-dispatch",
            "action-complete",
            "phase-complete"
        ]
    );
    // git add, the "anything staged?" check, git commit.
    assert_eq!(
        of("final-commit"),
        [
            "phase-start",
            "action-complete",
            "action-complete",
            "action-complete",
            "phase-complete",
            "pipeline-complete"
        ]
    );
    // Skipped phases have no events; every started phase completes exactly
    // once per start; checkpoints wait and complete without a start.
    assert!(of("phase-4b").is_empty());
    let mut phases: Vec<String> = events
        .iter()
        .filter_map(|e| e["phase"].as_str().map(str::to_string))
        .collect();
    phases.sort();
    phases.dedup();
    for phase in phases {
        let seq = of(&phase);
        let count = |k: &str| seq.iter().filter(|e| *e == k).count();
        if phase.starts_with("checkpoint") {
            assert_eq!(count("phase-start"), 0, "{phase}: {seq:?}");
            assert_eq!(seq, ["checkpoint", "phase-complete"], "{phase}");
        } else {
            assert_eq!(
                count("phase-start"),
                count("phase-complete"),
                "{phase}: {seq:?}"
            );
        }
    }
    assert_eq!(
        events.last().unwrap()["event"],
        "pipeline-complete",
        "{:?}",
        events.last()
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_at_every_step_resumes_the_run() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    c.close().await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut steps = Vec::new();
    for _ in 0..80 {
        // A new server process for every call.
        let c = spawn(repo.path(), &[], &[]).await;
        let a = c.ok("pipeline_next_action", args.clone()).await;
        // And the same question asked again after a restart gets the same
        // action — except a guarded command (its check came just before),
        // which may have run before the interruption: it is checked again.
        c.close().await;
        let c = spawn(repo.path(), &[], &[]).await;
        let again = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
        c.close().await;
        let phase = a["phase"].as_str().unwrap_or("");
        let guarded = steps.last() == Some(&format!("check {phase}"))
            && describe(&a) == format!("exec {phase}");
        let expected = if guarded {
            format!("check {phase}")
        } else {
            describe(&a)
        };
        assert_eq!(describe(&again), expected, "resume after {}", describe(&a));
        steps.push(describe(&a));
        if a["type"] == "done" {
            break;
        }
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    }
    assert_eq!(steps.last().map(String::as_str), Some("done"), "{steps:#?}");
    let state = repo.state(&ws);
    assert_eq!(state["currentPhaseStatus"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_to_the_loop_is_refused_and_writes_nothing() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(
        &c,
        "add login rate limiting; rm -rf / $(reboot)",
        "S",
        "--nopr",
    )
    .await;
    let before = repo.snapshot();
    let cases = [
        (json!({}), "invalid_parameter"),
        (json!({"workspace": 7}), "invalid_parameter"),
        (json!({"workspace": "../../etc"}), "out_of_scope"),
        (json!({"workspace": "/etc"}), "out_of_scope"),
        (json!({"workspace": ".specs/../../x"}), "out_of_scope"),
        (json!({"workspace": "x".repeat(5000)}), "invalid_parameter"),
        (
            json!({"workspace": ws, "previous_tokens": -1}),
            "invalid_parameter",
        ),
        (
            json!({"workspace": ws, "previous_tokens": "many"}),
            "invalid_parameter",
        ),
        (
            json!({"workspace": ws, "previous_action_complete": "yes"}),
            "invalid_parameter",
        ),
        (
            json!({"workspace": ws, "previous_exit_code": 1.5}),
            "invalid_parameter",
        ),
        (
            json!({"workspace": ws, "user_response": 3}),
            "invalid_parameter",
        ),
        (
            json!({"workspace": ws, "user_response": "y".repeat(20000)}),
            "invalid_parameter",
        ),
        (
            json!({"workspace": ws, "previous_model": "m".repeat(500)}),
            "invalid_parameter",
        ),
        (
            json!({"workspace": ws, "surprise": true}),
            "invalid_parameter",
        ),
    ];
    for (args, code) in cases {
        c.err("pipeline_next_action", args, code).await;
    }
    assert_eq!(repo.snapshot(), before);
    // Reporting before anything was dispatched is ignored with a warning.
    let a = c
        .ok(
            "pipeline_next_action",
            json!({"workspace": ws, "previous_action_complete": true}),
        )
        .await;
    assert!(
        a["warning"]
            .as_str()
            .unwrap()
            .contains("nothing was in progress")
    );
    assert_eq!(a["type"], "spawn_agent");
    // Reporting an agent that wrote nothing is refused and leaves the phase running.
    let before = repo.snapshot();
    c.err(
        "pipeline_next_action",
        json!({"workspace": ws, "previous_action_complete": true}),
        "blocked",
    )
    .await;
    assert_eq!(repo.snapshot(), before);
    // Shell metacharacters in the task text stay data: the request keeps them verbatim.
    let request = std::fs::read_to_string(repo.ws_dir(&ws).join("request.md")).unwrap();
    assert!(request.contains("rm -rf / $(reboot)"));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_revisions_then_a_person_decides_at_the_retry_limit() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let revise = "# Review\n\n## Verdict: REVISE\n\n**1. [CRITICAL] Still wrong**\n";
    let mut script = Script::default().with("review-design.md", &[revise]);
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut designs = 0;
    let q = loop {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["type"] == "checkpoint" {
            break a;
        }
        if a["phase"] == "phase-3" {
            designs += 1;
        }
        args = perform(repo.path(), &ws, &a, &mut script, &mut answers);
    };
    assert_eq!(designs, 6, "the first design and five revisions");
    assert_eq!(q["name"], "phase-3b-retry-limit");
    assert_eq!(q["options"], json!(["approve", "abandon"]));
    let next = person_then_next(&c, repo.path(), &ws, "approve").await;
    assert_eq!(next["name"], "checkpoint-a", "{next}");
    assert_eq!(repo.state(&ws)["revisions"]["designRevisions"], 5);
    c.close().await;
}

/// A person answers at their terminal, then the agent asks for the next action.
async fn person_then_next(c: &Client, repo: &Path, ws: &str, answer: &str) -> Value {
    common::person_answer(repo, ws, answer);
    c.ok("pipeline_next_action", json!({"workspace": ws})).await
}

/// Counts the commits of the repository.
fn commit_count(repo: &Path) -> usize {
    let out = std::process::Command::new("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(repo)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_final_commit_is_not_made_twice() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "fix typo in the login page", "S", "--nopr").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    // Drive to the commit itself (after `git add` and the check).
    let commit = drive_until(&c, &repo, &ws, &mut script, |a| {
        a["type"] == "exec" && a["commands"][1] == "commit"
    })
    .await;
    assert_eq!(commit["check_only"], false);
    c.close().await;
    // The orchestrator commits, then dies before it reports.
    let before = commit_count(repo.path());
    perform(repo.path(), &ws, &commit, &mut script, &mut answers);
    assert_eq!(commit_count(repo.path()), before + 1);

    // A new session resumes: baton checks whether the commit is already there…
    let c = spawn(repo.path(), &[], &[]).await;
    let check = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(check["type"], "exec");
    assert_eq!(check["check_only"], true);
    assert_eq!(
        check["commands"],
        json!(["git", "diff", "--cached", "--quiet"])
    );
    // …it is (nothing staged), so the step is skipped and the run ends.
    let next = perform(repo.path(), &ws, &check, &mut script, &mut answers);
    assert_eq!(next["previous_exit_code"], 0);
    let done = c.ok("pipeline_next_action", next).await;
    assert_eq!(done["type"], "done", "{done}");
    assert!(
        done["report_result"]["warning"]
            .as_str()
            .unwrap()
            .contains("already done and is skipped"),
        "{done}"
    );
    assert_eq!(commit_count(repo.path()), before + 1, "one commit, not two");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_says_not_done_runs_the_command_even_after_a_restart() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "fix typo in the login page", "S", "--nopr").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let check = drive_until(&c, &repo, &ws, &mut script, |a| a["check_only"] == true).await;
    // Something is staged: the check exits 1, which is no failure.
    let next = perform(repo.path(), &ws, &check, &mut script, &mut answers);
    assert_eq!(next["previous_exit_code"], 1);
    let commit = c.ok("pipeline_next_action", next).await;
    assert_eq!(commit["check_only"], false);
    assert_eq!(commit["commands"][1], "commit");
    assert_eq!(
        commit["report_result"]["next_action_hint"],
        "setup_continue"
    );
    assert_eq!(repo.state(&ws)["currentPhaseStatus"], "in_progress");
    // Before running it the session dies; the resumed session checks again,
    // still finds the work undone, and then commits.
    c.close().await;
    let c = spawn(repo.path(), &[], &[]).await;
    let before = commit_count(repo.path());
    let trace = drive(&c, &repo, &ws, &mut script, &[], 10).await;
    assert_eq!(
        trace.steps,
        ["check final-commit", "exec final-commit", "done"]
    );
    assert_eq!(commit_count(repo.path()), before + 1);
    c.close().await;
}

/// The events of one phase as `event[:detail][/outcome]` strings.
fn phase_events(repo: &Repo, phase: &str) -> Vec<String> {
    repo.events()
        .iter()
        .filter(|e| e["phase"] == phase)
        .map(|e| {
            let mut s = e["event"].as_str().unwrap().to_string();
            if let Some(d) = e["detail"].as_str() {
                s = format!("{s}:{d}");
            }
            if e["outcome"] == "failed" && e["event"] == "action-complete" {
                s.push_str("/failed");
            }
            s
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_003_sequence_holds_on_every_path() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "--nopr").await;
    let dir = repo.ws_dir(&ws);
    // A repeated call (a reconnect) hands phase-1 out again, announced once.
    let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    let again = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(describe(&a), describe(&again));
    std::fs::write(dir.join("analysis.md"), "# Analysis\n\ntext\n").unwrap();
    // Reported through the standalone tool, with the model that really ran.
    c.ok(
        "pipeline_report_result",
        json!({"workspace": ws, "phase": "phase-1", "model": "opus", "tokens_used": 5}),
    )
    .await;
    assert_eq!(
        phase_events(&repo, "phase-1"),
        [
            "phase-start",
            "agent-dispatch:situation-analyst",
            "action-complete:opus",
            "phase-complete"
        ]
    );
    // The embedded path gives the same sequence.
    let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(a["phase"], "phase-2");
    std::fs::write(dir.join("investigation.md"), "# Investigation\n\ntext\n").unwrap();
    c.ok(
        "pipeline_next_action",
        json!({"workspace": ws, "previous_action_complete": true, "previous_model": "haiku"}),
    )
    .await;
    assert_eq!(
        phase_events(&repo, "phase-2"),
        [
            "phase-start",
            "agent-dispatch:investigator",
            "action-complete:haiku",
            "phase-complete"
        ]
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_and_failed_commands_name_their_phase_in_events() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = create(&c, "add login rate limiting", "M", "").await;
    let gated = "# Tasks\n\n## Task 1: Core\n\nmode: human_gate\n";
    let mut script = Script::default().with("tasks.md", &[gated]);
    let gate = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "human_gate").await;
    assert_eq!(gate["name"], "task-1");
    let checkpoints: Vec<String> = phase_events(&repo, "phase-5")
        .into_iter()
        .filter(|e| e.starts_with("checkpoint"))
        .collect();
    assert_eq!(checkpoints, ["checkpoint:task-1"]);
    assert!(phase_events(&repo, "task-1").is_empty());
    // With a PR and no remote, `git push` fails: the command's
    // action-complete is `failed`, then phase-fail.
    person_then_next(&c, repo.path(), &ws, "done").await;
    let failed = drive_until(&c, &repo, &ws, &mut script, |a| {
        a["name"] == "pr-creation-failed"
    })
    .await;
    assert_eq!(failed["options"], json!(["retry", "skip", "abandon"]));
    let pr = phase_events(&repo, "pr-creation");
    assert_eq!(pr[..2], ["phase-start", "action-complete/failed"], "{pr:?}");
    assert!(pr[2].starts_with("phase-fail"), "{pr:?}");
    c.close().await;
}
