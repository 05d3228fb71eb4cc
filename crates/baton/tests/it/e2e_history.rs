//! The run history end to end, through a real MCP client (issue 15): runs
//! are recorded when they end (completed by the loop, abandoned by a
//! person's answer at their terminal), a new pipeline's `spawn_agent`
//! prompts carry similar runs, merged review patterns and friction points in
//! Layer 4, the `history` tools return them, the confirmation reply carries
//! the estimate, `git status` stays clean, and a damaged history file never
//! fails a pipeline call.

use crate::common;

use crate::common::pipeline::{Script, create, drive, git_repo};
use crate::common::{Client, Repo, spawn};
use serde_json::{Value, json};

const SUMMARY: &str = "# Summary\n\nDone.\n\n## Improvement Report\n\n### Documentation\n- None observed.\n\n### Code Readability\n- None observed.\n\n### AI Agent Support\n- The test command was hard to find — add it to CLAUDE.md\n\n### Other\n- None observed.\n";

/// A design review that approves with one CRITICAL finding, worded a
/// little differently in each run (the merge puts them together).
fn review(wording: &str) -> String {
    format!(
        "# Review\n\n## Verdict: APPROVE\n\n**1. [CRITICAL] {wording}**\n\n**2. [MINOR] Naming**\n"
    )
}

fn script(wording: &str) -> Script {
    Script::default()
        .with("review-design.md", &[&review(wording)])
        .with("summary.md", &[SUMMARY])
}

/// Runs one effort-S pipeline to `done` (answers: a person's, in order).
async fn run(c: &Client, repo: &Repo, text: &str, wording: &str, answers: &[&str]) -> String {
    let ws = create(c, text, "S", "--nopr").await;
    let trace = drive(c, repo, &ws, &mut script(wording), answers, 60).await;
    assert_eq!(trace.last["type"], "done", "{:#?}", trace.steps);
    ws
}

fn name(ws: &str) -> &str {
    ws.rsplit('/').next().unwrap()
}

/// `git status` lines, but those of `abandoned` (an abandoned run is not
/// committed; its files are the person's to keep or delete).
fn git_status(repo: &Repo, abandoned: &str) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains(&format!("{abandoned}/")))
        .map(str::to_string)
        .collect()
}

fn records(repo: &Repo) -> Vec<Value> {
    std::fs::read_to_string(repo.specs().join(".history/history.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The Layer-4 block `heading` of a prompt: its bullet lines.
/// The lines of a Layer-4 block, unquoted (`- text`); the block must sit
/// in the section labelled untrusted, each line a quoted string.
fn block(prompt: &str, heading: &str) -> Vec<String> {
    let Some(start) = prompt.find(&format!("\n### {heading}\n")) else {
        return Vec::new();
    };
    let label = prompt
        .find(baton_engine::pipeline::prompt::UNTRUSTED_HEADING)
        .expect("Layer 4 sits under its untrusted label");
    assert!(label < start, "{prompt}");
    prompt[start + 1..]
        .lines()
        .skip(1)
        .skip_while(|l| l.is_empty())
        .take_while(|l| l.starts_with("- "))
        .map(|l| {
            let quoted = &l[2..];
            let text: String = serde_json::from_str(quoted)
                .unwrap_or_else(|_| panic!("a Layer-4 line is one quoted string: {l}"));
            format!("- {text}")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_runs_teach_the_next_pipeline_and_the_history_tools_show_them() {
    let repo = git_repo();
    let c = spawn(repo.path(), &["--tools", "pipeline,history"], &[]).await;
    // Three similar runs and one about something else, all completed; one
    // more abandoned by a person at the design checkpoint.
    let login = [
        run(
            &c,
            &repo,
            "fix the login session timeout on the web app",
            "Missing error handling for session refresh failures",
            &[],
        )
        .await,
        run(
            &c,
            &repo,
            "extend the login session timeout for admin users",
            "Missing error handling for the session refresh failure",
            &[],
        )
        .await,
        run(
            &c,
            &repo,
            "login session timeout is too short on mobile",
            "Missing error handling for session refresh failures!",
            &[],
        )
        .await,
    ];
    let csv = run(
        &c,
        &repo,
        "add csv export to the billing report",
        "Large exports are not streamed",
        &[],
    )
    .await;
    let dropped = create(&c, "rename the login session cookie", "S", "--nopr").await;
    let trace = drive(
        &c,
        &repo,
        &dropped,
        &mut Script::default(),
        &["abandon"],
        30,
    )
    .await;
    assert_eq!(trace.last["summary"], "Pipeline abandoned at checkpoint-a");

    // One record per ended run, written when it ended (the abandon by
    // `baton answer`, another process), in a folder git ignores.
    let recs = records(&repo);
    let outcomes: Vec<(String, String)> = recs
        .iter()
        .map(|r| {
            (
                r["workspace"].as_str().unwrap().to_string(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut expected: Vec<(String, String)> = login
        .iter()
        .chain([&csv])
        .map(|w| (name(w).to_string(), "completed".to_string()))
        .collect();
    expected.push((name(&dropped).to_string(), "abandoned".to_string()));
    assert_eq!(outcomes, expected);
    let first = &recs[0];
    assert_eq!(first["findings"][0]["severity"], "CRITICAL", "{first}");
    assert_eq!(first["friction"][0]["category"], "AI Agent Support");
    assert!(first["tokens"].as_u64().unwrap() > 0, "{first}");
    assert_eq!(
        std::fs::read_to_string(repo.specs().join(".history/.gitignore")).unwrap(),
        "*\n"
    );
    assert_eq!(
        git_status(&repo, &dropped),
        Vec::<String>::new(),
        "the history never dirties git status"
    );

    // A new pipeline: the confirmation reply carries the estimate.
    let text = "make the login session timeout configurable";
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": format!("{text} --nopr")}),
        )
        .await;
    let ask = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"]}),
        )
        .await;
    let confirm = &ask["needs_user_confirmation"];
    let display = confirm["estimate_display"].as_str().unwrap_or_default();
    assert!(
        display.starts_with("Estimate from 3 similar past runs"),
        "{confirm}"
    );
    assert_eq!(confirm["estimate"]["basis"], "similar");
    assert_eq!(confirm["estimate"]["sample"], 3);
    assert!(confirm["estimate"]["tokens"]["p50"].as_f64().unwrap() > 0.0);
    let done = c
        .ok(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"],
                   "user_confirmation": {"effort": "S", "use_current_branch": true}}),
        )
        .await;
    let ws = done["workspace"].as_str().unwrap().to_string();
    let trace = drive(&c, &repo, &ws, &mut script("y"), &[], 60).await;
    assert_eq!(trace.last["type"], "done");
    let prompt_of = |agent: &str| -> String {
        trace
            .steps
            .iter()
            .filter(|s| s.starts_with("spawn_agent "))
            .zip(&trace.prompts)
            .find(|(s, _)| s.ends_with(&format!(" {agent}")))
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| panic!("no {agent} prompt: {:#?}", trace.steps))
    };

    // Layer 4, per agent: the architect gets similar runs and the design
    // reviewer's CRITICAL patterns; the design reviewer its patterns; the
    // implementer friction points, similar runs and CRITICAL patterns.
    let architect = prompt_of("architect");
    let similar = block(&architect, "Similar Past Pipelines");
    assert!(!similar.is_empty(), "{architect}");
    for line in &similar {
        assert!(
            login
                .iter()
                .any(|w| line.starts_with(&format!("- {}", name(w)))),
            "only the login runs are similar: {line}"
        );
        assert!(line.contains("[matched: "), "{line}");
        assert!(!line.contains(name(&ws)), "a run is never its own past run");
    }
    assert!(similar.iter().all(|l| !l.contains(name(&csv))));
    let patterns = block(&architect, "Past Review Patterns");
    assert_eq!(patterns.len(), 2, "CRITICAL only: {architect}");
    assert!(patterns[1].contains("Large exports are not streamed"));
    assert!(
        patterns[0].contains("Missing error handling for session refresh failures")
            && patterns[0].contains("3×")
            && patterns[0].contains("CRITICAL; design-reviewer"),
        "three wordings merged into one pattern: {}",
        patterns[0]
    );
    let reviewer = prompt_of("design-reviewer");
    let reviewer_patterns = block(&reviewer, "Past Review Patterns");
    assert!(
        reviewer_patterns.iter().any(|l| l.contains("3×")),
        "{reviewer}"
    );
    assert!(
        reviewer_patterns.iter().any(|l| l.contains("Naming")),
        "the reviewer sees MINOR patterns too: {reviewer}"
    );
    assert!(block(&reviewer, "Similar Past Pipelines").is_empty());
    let implementer = prompt_of("implementer");
    let friction = block(&implementer, "AI Friction Points");
    assert_eq!(
        friction,
        ["- AI Agent Support: The test command was hard to find — add it to CLAUDE.md (4 runs)"],
        "{implementer}"
    );
    assert!(!block(&implementer, "Similar Past Pipelines").is_empty());
    // Layer 4 comes last, after the layers it must never displace.
    let l4 = architect.find("### Similar Past Pipelines").unwrap();
    assert!(architect.find("## Output File").unwrap() < l4);
    // The verifier gets nothing.
    assert!(!prompt_of("verifier").contains("## Similar Past Pipelines"));

    // The history tools return the same knowledge.
    let found = c
        .ok("history_search", json!({"query": "login session timeout"}))
        .await;
    assert_eq!(found["recorded"], 6);
    let hits: Vec<&str> = found["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workspace"].as_str().unwrap())
        .collect();
    assert!(hits.len() >= 4, "{found}");
    for w in login.iter().chain([&ws]) {
        assert!(hits.contains(&name(w)), "{w}: {found}");
    }
    assert!(!hits.contains(&name(&csv)));
    let pats = c
        .ok(
            "history_patterns",
            json!({"agent": "design-reviewer", "severity": "CRITICAL"}),
        )
        .await;
    assert_eq!(pats["patterns"][0]["count"], 3, "{pats}");
    assert_eq!(pats["runs_analyzed"], 6);
    let fr = c.ok("history_friction", json!({})).await;
    assert_eq!(fr["points"][0]["count"], 5, "{fr}");
    assert_eq!(fr["reports_analyzed"], 5);
    let dash = c.ok("analytics_dashboard", json!({})).await;
    assert_eq!(
        (&dash["runs"], &dash["completed"], &dash["abandoned"]),
        (&json!(6), &json!(5), &json!(1)),
        "{dash}"
    );
    assert_eq!(dash["first_pass_rate"], 1.0);
    assert!(dash["tokens"].as_u64().unwrap() > 0);
    let summary = c.ok("analytics_summary", json!({"workspace": ws})).await;
    assert_eq!(summary["outcome"], "completed");
    assert_eq!(summary["findings"]["critical"], 1);
    assert!(summary["cost_usd"].as_f64().unwrap() > 0.0);
    let est = c
        .ok(
            "analytics_estimate",
            json!({"request": "login session timeout", "effort": "S"}),
        )
        .await;
    assert_eq!(est["basis"], "similar");
    assert!(
        est["display"]
            .as_str()
            .unwrap()
            .starts_with("Estimate from 4 similar past runs"),
        "{est}"
    );
    let re = c.ok("history_reindex", json!({})).await;
    assert_eq!((&re["runs"], &re["running"]), (&json!(6), &json!(0)));
    // The same numbers on the command line.
    let out = std::process::Command::new(common::baton_bin())
        .args(["stats", "--json"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["dashboard"], dash);
    assert_eq!(git_status(&repo, &dropped), Vec::<String>::new());
    c.close().await;

    // The history tools are not in the default tools.
    let plain = spawn(repo.path(), &[], &[("BATON_TOOLS", "")]).await;
    let names = plain.tool_names().await;
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("history_") && !n.starts_with("analytics_"))
    );
    plain.close().await;

    // Errors are the closed set's.
    let c = spawn(repo.path(), &["--tools", "history"], &[]).await;
    c.err("history_search", json!({"query": ""}), "invalid_parameter")
        .await;
    c.err(
        "history_friction",
        json!({"limit": 500}),
        "invalid_parameter",
    )
    .await;
    // A wrong type names the real range, not the integer's (0 to 4294967295).
    for tool in ["history_search", "history_patterns", "history_friction"] {
        for limit in [json!("5"), json!(-1), json!(2.5), json!(1u64 << 40)] {
            let mut args = json!({"limit": limit});
            if tool == "history_search" {
                args["query"] = json!("login");
            }
            let e = c.err(tool, args, "invalid_parameter").await;
            let m = e["message"].as_str().unwrap();
            assert!(
                m.starts_with("limit must be a whole number from 1 to 50"),
                "{tool}: {m}"
            );
            assert!(!m.contains("4294967295"), "{tool}: {m}");
            assert_eq!(e["details"]["field"], "limit");
        }
    }
    c.err(
        "analytics_estimate",
        json!({"request": "x", "effort": "XL"}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "analytics_summary",
        json!({"workspace": "20990101-nothing"}),
        "not_found",
    )
    .await;
    c.err(
        "history_patterns",
        json!({"severity": "BLOCKER"}),
        "invalid_parameter",
    )
    .await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_history_file_never_fails_a_pipeline() {
    let repo = git_repo();
    let c = spawn(repo.path(), &[], &[]).await;
    let first = run(
        &c,
        &repo,
        "fix the login session timeout",
        "Missing error handling for session refresh failures",
        &[],
    )
    .await;
    let path = repo.specs().join(".history/history.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let damages = [
        // A partly written last line; garbage in place of a record; no
        // header at all.
        text[..text.len() - 25].to_string(),
        format!(
            "{}\n{{\"workspace\": 42, not json\n",
            text.lines().next().unwrap()
        ),
        "garbage\n".to_string(),
    ];
    let text_now = "make the login session timeout configurable";
    let ws = create(&c, text_now, "S", "--nopr").await;
    let recorded_again = |why: &str| {
        let recs = records(&repo);
        assert!(
            recs.iter().any(|r| r["workspace"] == name(&first)),
            "{why}: the file is rebuilt from the workspaces: {recs:?}"
        );
    };
    // Damaged while the server runs: the next prompt and the next estimate
    // read the file again.
    for damage in &damages {
        std::fs::write(&path, damage).unwrap();
        let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
        assert_eq!(a["type"], "spawn_agent", "{a}");
        recorded_again(damage);
        std::fs::write(&path, damage).unwrap();
        let init = c
            .ok(
                "pipeline_init",
                json!({"arguments": format!("{text_now} --nopr")}),
            )
            .await;
        let ask = c
            .ok(
                "pipeline_init_with_context",
                json!({"workspace": init["workspace"], "task_text": init["core_text"], "flags": init["flags"]}),
            )
            .await;
        assert!(
            ask["needs_user_confirmation"]["estimate_display"].is_string(),
            "{ask}"
        );
        recorded_again(damage);
    }
    c.close().await;
    // Damaged before a server starts (its background load meets it).
    for damage in &damages {
        std::fs::write(&path, damage).unwrap();
        let c = spawn(repo.path(), &[], &[]).await;
        let a = c.ok("pipeline_next_action", json!({"workspace": ws})).await;
        assert_eq!(a["type"], "spawn_agent", "{a}");
        c.close().await;
        recorded_again(damage);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_runs_and_abandoned_runs_are_recorded_when_they_end() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    // An issue run walked to its end with completePhase.
    let mut current = c
        .ok("startIssueWorkflow", json!({"issueNumber": "7"}))
        .await;
    let ws = current["workspace"].as_str().unwrap().to_string();
    while current["currentPhase"] != "completed" {
        let phase = current["currentPhase"].as_str().unwrap().to_string();
        let instruction = current["instruction"].clone();
        for artifact in instruction["artifacts"].as_array().unwrap() {
            common::write_artifact(&repo, &ws, artifact.as_str().unwrap());
        }
        let count = |k: &str| -> Vec<String> {
            (1..=instruction[k].as_array().unwrap().len())
                .map(|i| i.to_string())
                .collect()
        };
        assert!(
            !repo.specs().join(".history/history.jsonl").exists(),
            "a running run is not recorded"
        );
        current = c
            .ok(
                "completePhase",
                json!({"issueNumber": "7", "phaseResult": {"phaseName": phase, "status": "completed",
                    "workingFiles": ["src/lib.rs"], "completedTasks": count("tasks"),
                    "acceptanceCriteriaMet": count("acceptanceCriteria")}}),
            )
            .await;
    }
    let recs = records(&repo);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["workspace"], name(&ws));
    assert_eq!(recs[0]["workflow"], "issue");
    assert_eq!(recs[0]["outcome"], "completed");
    assert_eq!(recs[0]["source"], "issue");
    // A run abandoned with the recovery tool.
    let other = c
        .ok("startIssueWorkflow", json!({"issueNumber": "8"}))
        .await;
    c.ok(
        "abandon",
        json!({"workspace": other["workspace"], "reason": "duplicate of #7"}),
    )
    .await;
    let recs = records(&repo);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1]["outcome"], "abandoned");
    assert_eq!(recs[1]["reason"], "duplicate of #7");
    // A refused call on an ended run records nothing again.
    c.err(
        "abandon",
        json!({"workspace": other["workspace"]}),
        "invalid_state",
    )
    .await;
    assert_eq!(records(&repo).len(), 2);
    c.close().await;
}

/// Every history tool, driven from its own advertised inputSchema: an
/// unknown property and each property with a value of the wrong JSON type
/// give `invalid_parameter`, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_history_tool_refuses_wrong_types_from_its_own_schema() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &["--tools", "history"], &[]).await;
    let tools = c.service.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 7);
    let mut checked = 0;
    for tool in &tools {
        let name = tool.name.to_string();
        assert!(tool.annotations.is_some(), "{name}");
        let e = c
            .err(&name, json!({"__unknown__": 1}), "invalid_parameter")
            .await;
        assert!(
            e["message"].as_str().unwrap().contains("__unknown__"),
            "{name}: {e}"
        );
        let Some(props) = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            continue;
        };
        for (prop, schema) in props {
            let types: Vec<&str> = match &schema["type"] {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let wrong = if types.contains(&"string") {
                json!({"a": [1]})
            } else if types.contains(&"integer") || types.contains(&"number") {
                json!("not a number")
            } else {
                continue;
            };
            c.err(&name, json!({ prop.as_str(): wrong }), "invalid_parameter")
                .await;
            checked += 1;
        }
    }
    assert!(checked >= 9, "only {checked} properties checked");
    assert!(!repo.specs().exists(), "a refused call writes nothing");
    c.close().await;
}
