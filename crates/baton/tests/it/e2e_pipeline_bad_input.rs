//! Bad input to the four pipeline tools (seed 001), field by field: missing,
//! wrong-typed, oversized and malicious values (path traversal, line
//! injection into request.md's front matter, shell metacharacters) give a
//! clean `isError` with a stable code and change nothing: no file under the
//! repository, no byte of state.json, no event. (Wrong types for every
//! property of every tool are also driven from the tools' own schemas in
//! `e2e_bad_input.rs`.)

use crate::common::{Client, Repo, spawn};
use serde_json::{Value, json};

/// Everything a refused call must leave untouched: every file under the
/// specs root with its bytes, every path in the repository, the event count.
type Footprint = (Vec<(String, Vec<u8>)>, Vec<String>, usize);

/// Takes the [`Footprint`] of the repository.
fn footprint(repo: &Repo) -> Footprint {
    (repo.snapshot(), repo.all_paths(), repo.events().len())
}

/// Calls `tool` with each case and checks the code and that nothing changed.
async fn refuse_all(c: &Client, repo: &Repo, tool: &str, cases: Vec<(&str, Value, &str)>) {
    let before = footprint(repo);
    for (what, args, code) in cases {
        let e = c.err(tool, args, code).await;
        assert!(
            e["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{tool} {what}: {e}"
        );
        assert_eq!(footprint(repo), before, "{tool} {what} changed something");
    }
}

/// A workspace created through the two init tools, phase-1 not started.
async fn confirmed_workspace(c: &Client) -> String {
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": "add login rate limiting --nopr"}),
        )
        .await;
    let done = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
                   "user_confirmation": {"effort": "S", "use_current_branch": true}}),
        )
        .await;
    done["workspace"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_init_refuses_bad_fields_and_never_writes() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    refuse_all(
        &c,
        &repo,
        "pipeline_init",
        vec![
            ("missing arguments", json!({}), "invalid_parameter"),
            (
                "null arguments",
                json!({"arguments": null}),
                "invalid_parameter",
            ),
            (
                "wrong-typed arguments",
                json!({"arguments": ["fix", "it"]}),
                "invalid_parameter",
            ),
            (
                "oversized arguments",
                json!({"arguments": "a ".repeat(40_000)}),
                "invalid_parameter",
            ),
            (
                "oversized current_branch",
                json!({"arguments": "fix the login", "current_branch": "b".repeat(300)}),
                "invalid_parameter",
            ),
            (
                "current_branch with a newline",
                json!({"arguments": "fix the login", "current_branch": "main\nrm -rf /"}),
                "invalid_parameter",
            ),
            (
                "unknown field",
                json!({"arguments": "fix the login", "shell": "sh"}),
                "invalid_parameter",
            ),
        ],
    )
    .await;
    // Malicious values that are valid input stay data, and nothing is written.
    let before = footprint(&repo);
    // A path into the specs root that leaves it is refused (seed error path)…
    let r = c
        .ok("pipeline_init", json!({"arguments": ".specs/../../etc"}))
        .await;
    assert!(r["errors"].as_array().is_some_and(|e| !e.is_empty()), "{r}");
    assert!(r.get("workspace").is_none(), "{r}");
    // …any other path-looking text is a task text whose workspace name is a
    // slug inside the specs root.
    for traversal in ["../../etc/passwd", "/etc/passwd"] {
        let r = c.ok("pipeline_init", json!({"arguments": traversal})).await;
        assert_eq!(r["spec_name"], "etc-passwd", "{traversal}: {r}");
        assert!(
            r["workspace"]
                .as_str()
                .is_some_and(|w| w.starts_with(".specs/") && w.ends_with("-etc-passwd")),
            "{traversal}: {r}"
        );
    }
    let r = c
        .ok(
            "pipeline_init",
            json!({"arguments": "fix `id` $(touch pwned) ; rm -rf ~ && echo | tee /etc/x"}),
        )
        .await;
    let ws = r["workspace"].as_str().unwrap();
    assert!(ws.starts_with(".specs/"), "{ws}");
    let folder = ws.trim_start_matches(".specs/");
    assert!(
        folder
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
        "{folder}"
    );
    assert!(r["core_text"].as_str().unwrap().contains("$(touch pwned)"));
    assert_eq!(footprint(&repo), before, "pipeline_init writes nothing");
    assert!(!repo.path().join("pwned").exists());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_init_with_context_refuses_bad_fields_and_never_writes() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let existing = confirmed_workspace(&c).await;
    let ws = ".specs/20260401-new-work";
    let confirm = json!({"effort": "M"});
    let with = |extra: Value| {
        let mut v = json!({"workspace": ws, "user_confirmation": confirm});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    refuse_all(
        &c,
        &repo,
        "pipeline_init_with_context",
        vec![
            // workspace
            (
                "missing workspace",
                json!({"user_confirmation": confirm}),
                "invalid_parameter",
            ),
            ("empty workspace", with(json!({"workspace": ""})), "invalid_parameter"),
            (
                "oversized workspace",
                with(json!({"workspace": "w".repeat(2000)})),
                "invalid_parameter",
            ),
            ("workspace ../", with(json!({"workspace": "../../x"})), "out_of_scope"),
            ("absolute workspace", with(json!({"workspace": "/tmp/x"})), "out_of_scope"),
            (
                "workspace escaping through .specs",
                with(json!({"workspace": ".specs/../../x"})),
                "out_of_scope",
            ),
            (
                "workspace with a NUL byte",
                with(json!({"workspace": ".specs/2026\u{0}x"})),
                "invalid_parameter",
            ),
            // source_id / source_url
            (
                "source_id with a newline",
                with(json!({"source_id": "42\nsource_type: github_issue"})),
                "invalid_parameter",
            ),
            (
                "source_id with a path",
                with(json!({"source_id": "../../etc"})),
                "invalid_parameter",
            ),
            (
                "oversized source_id",
                with(json!({"source_id": "9".repeat(100)})),
                "invalid_parameter",
            ),
            (
                "source_url injecting front matter",
                with(json!({"source_url": "https://github.com/o/r/issues/1\nsource_type: text"})),
                "invalid_parameter",
            ),
            (
                "source_url of another kind",
                with(json!({"source_url": "file:///etc/passwd"})),
                "invalid_parameter",
            ),
            (
                "oversized source_url",
                with(json!({"source_url": format!("https://github.com/o/r/issues/1{}", "1".repeat(3000))})),
                "invalid_parameter",
            ),
            // external_context
            (
                "external_context not an object",
                with(json!({"external_context": "github_title: x"})),
                "invalid_parameter",
            ),
            (
                "external_context.source_id not a string",
                with(json!({"external_context": {"source_id": 42}})),
                "invalid_parameter",
            ),
            (
                "external_context.source_id injecting a line",
                with(json!({"external_context": {"source_id": "1\n---"}})),
                "invalid_parameter",
            ),
            // flags
            (
                "flags.effort_override outside S/M/L",
                with(json!({"flags": {"auto": false, "skip_pr": false, "debug": false, "discuss": false, "effort_override": "Q"}})),
                "invalid_parameter",
            ),
            (
                "flags.current_branch with a newline",
                with(json!({"flags": {"auto": false, "skip_pr": false, "debug": false, "discuss": false, "current_branch": "main\nx"}})),
                "invalid_parameter",
            ),
            (
                "flags with an unknown flag",
                with(json!({"flags": {"auto": false, "skip_pr": false, "debug": false, "discuss": false, "yolo": true}})),
                "invalid_parameter",
            ),
            (
                "flags wrong-typed",
                with(json!({"flags": {"auto": "yes", "skip_pr": false, "debug": false, "discuss": false}})),
                "invalid_parameter",
            ),
            // task_text / discussion_answers
            (
                "oversized task_text",
                with(json!({"task_text": "t".repeat(33 * 1024)})),
                "invalid_parameter",
            ),
            (
                "oversized discussion_answers",
                json!({"workspace": ws, "discussion_answers": "d".repeat(33 * 1024)}),
                "invalid_parameter",
            ),
            (
                "answers and confirmation together",
                with(json!({"discussion_answers": "yes"})),
                "invalid_parameter",
            ),
            // user_confirmation
            (
                "confirmation without effort",
                json!({"workspace": ws, "user_confirmation": {}}),
                "invalid_parameter",
            ),
            (
                "effort outside S/M/L",
                json!({"workspace": ws, "user_confirmation": {"effort": "XL"}}),
                "invalid_parameter",
            ),
            (
                "lower-case effort",
                json!({"workspace": ws, "user_confirmation": {"effort": "m"}}),
                "invalid_parameter",
            ),
            (
                "oversized workspace_slug",
                json!({"workspace": ws, "user_confirmation": {"effort": "M", "workspace_slug": "s".repeat(300)}}),
                "invalid_parameter",
            ),
            (
                "use_current_branch wrong-typed",
                json!({"workspace": ws, "user_confirmation": {"effort": "M", "use_current_branch": "true"}}),
                "invalid_parameter",
            ),
            (
                "a request with no text at all",
                json!({"workspace": ws, "task_text": "  ", "user_confirmation": {"effort": "M"}}),
                "invalid_parameter",
            ),
            (
                "unknown confirmation field",
                json!({"workspace": ws, "user_confirmation": {"effort": "M", "force": true}}),
                "invalid_parameter",
            ),
            // An existing workspace is never overwritten.
            (
                "confirming an existing workspace",
                json!({"workspace": existing, "task_text": "add login rate limiting", "user_confirmation": {"effort": "L"}}),
                "conflict",
            ),
        ],
    )
    .await;
    let state = repo.state(&existing);
    assert_eq!(
        state["effort"], "S",
        "the existing workspace kept its effort"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malicious_slugs_and_texts_stay_inside_the_specs_root_as_data() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let done = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": ".specs/20260401-x", "task_text": "fix $(touch pwned) `id`\n---\nsource_type: github_issue",
                   "user_confirmation": {"effort": "S", "workspace_slug": "../../../etc/passwd", "use_current_branch": false}}),
        )
        .await;
    let ws = done["workspace"].as_str().unwrap();
    assert_eq!(ws, ".specs/20260401-etc-passwd");
    assert!(repo.path().join(ws).join("state.json").is_file());
    assert_eq!(done["branch"], "fix/etc-passwd");
    // The text is the body, after the front matter: it cannot change it.
    let request = std::fs::read_to_string(repo.path().join(ws).join("request.md")).unwrap();
    assert!(
        request.starts_with("---\nsource_type: text\n---\n\nfix $(touch pwned)"),
        "{request}"
    );
    assert!(!repo.path().join("pwned").exists());
    let outside: Vec<String> = repo
        .all_paths()
        .into_iter()
        .filter(|p| !p.contains("/.specs/") && !p.contains("/.git"))
        .collect();
    assert!(outside.is_empty(), "written outside .specs: {outside:?}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_next_action_and_report_result_refuse_bad_fields() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let ws = confirmed_workspace(&c).await;
    // Start phase-1 so a report has something to complete.
    let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
    assert_eq!(a["phase"], "phase-1");
    refuse_all(
        &c,
        &repo,
        "pipeline_next_action",
        vec![
            ("missing workspace", json!({}), "invalid_parameter"),
            (
                "unknown workspace",
                json!({"workspace": ".specs/20990101-none"}),
                "not_found",
            ),
            (
                "workspace with a NUL byte",
                json!({"workspace": "a\u{0}b"}),
                "invalid_parameter",
            ),
            (
                "negative previous_duration_ms",
                json!({"workspace": ws, "previous_duration_ms": -5}),
                "invalid_parameter",
            ),
            (
                "fractional previous_tokens",
                json!({"workspace": ws, "previous_tokens": 1.5}),
                "invalid_parameter",
            ),
            (
                "previous_setup_only wrong-typed",
                json!({"workspace": ws, "previous_setup_only": 1}),
                "invalid_parameter",
            ),
            (
                "previous_model with a NUL byte",
                json!({"workspace": ws, "previous_model": "son\u{0}net"}),
                "invalid_parameter",
            ),
            (
                "user_response with a NUL byte",
                json!({"workspace": ws, "user_response": "proceed\u{0}"}),
                "invalid_parameter",
            ),
            (
                "oversized user_response",
                json!({"workspace": ws, "previous_action_complete": true, "user_response": "x".repeat(17 * 1024)}),
                "invalid_parameter",
            ),
        ],
    )
    .await;
    refuse_all(
        &c,
        &repo,
        "pipeline_report_result",
        vec![
            (
                "missing workspace",
                json!({"phase": "phase-1"}),
                "invalid_parameter",
            ),
            (
                "missing phase",
                json!({"workspace": ws}),
                "invalid_parameter",
            ),
            (
                "workspace ../",
                json!({"workspace": "../../etc", "phase": "phase-1"}),
                "out_of_scope",
            ),
            (
                "oversized phase",
                json!({"workspace": ws, "phase": "p".repeat(100)}),
                "invalid_parameter",
            ),
            (
                "phase with a path",
                json!({"workspace": ws, "phase": "../../etc/passwd"}),
                "invalid_parameter",
            ),
            (
                "a phase that is not current",
                json!({"workspace": ws, "phase": "phase-3"}),
                "invalid_state",
            ),
            (
                "negative tokens_used",
                json!({"workspace": ws, "phase": "phase-1", "tokens_used": -1}),
                "invalid_parameter",
            ),
            (
                "duration_ms wrong-typed",
                json!({"workspace": ws, "phase": "phase-1", "duration_ms": "3s"}),
                "invalid_parameter",
            ),
            (
                "oversized model",
                json!({"workspace": ws, "phase": "phase-1", "model": "m".repeat(200)}),
                "invalid_parameter",
            ),
            (
                "setup_only wrong-typed",
                json!({"workspace": ws, "phase": "phase-1", "setup_only": "no"}),
                "invalid_parameter",
            ),
            (
                "exit_code wrong-typed",
                json!({"workspace": ws, "phase": "phase-1", "exit_code": "0"}),
                "invalid_parameter",
            ),
            (
                "unknown field",
                json!({"workspace": ws, "phase": "phase-1", "verdict": "APPROVE"}),
                "invalid_parameter",
            ),
            // The agent wrote nothing: the report is refused before logging.
            (
                "a report without its artifact",
                json!({"workspace": ws, "phase": "phase-1", "tokens_used": 10}),
                "blocked",
            ),
        ],
    )
    .await;
    assert_eq!(repo.state(&ws)["currentPhaseStatus"], "in_progress");
    let e = c
        .err(
            "pipeline_report_result",
            json!({"workspace": ws, "phase": "phase-3"}),
            "invalid_state",
        )
        .await;
    assert_eq!(
        e["message"],
        "report of \"phase-3\" refused: the run is at \"phase-1\", not \"phase-3\""
    );
    c.close().await;
}

/// A missing workspace, read by the agent: the message names the tools that
/// start one (the person's commands say `baton run` instead; see
/// `cli_people::a_missing_run_is_explained_to_the_person_in_their_commands`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_workspace_tells_the_agent_which_tools_start_one() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    for tool in ["pipeline_next_action"] {
        let e = c
            .err(
                tool,
                json!({"workspace": ".specs/20990101-none"}),
                "not_found",
            )
            .await;
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("or start one (pipeline_init, startIssueWorkflow, workflow_start)"),
            "{tool}: {message}"
        );
        assert!(!message.contains("baton run"), "{tool}: {message}");
    }
    c.close().await;
}
