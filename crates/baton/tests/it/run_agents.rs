//! `baton run` with agents that fail, presets whose CLI is missing or
//! prints the wrong thing, and fan-outs: what a person sees and what the
//! run records (issue 20). The real Claude Code and Codex CLIs are driven
//! in `run_clients.rs`.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::baton_bin;
use crate::common::pipeline::git_repo;

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn baton(repo: &Path, args: &[&str], path: Option<&str>) -> Ran {
    let mut c = Command::new(baton_bin());
    c.args(args)
        .current_dir(repo)
        .env("BATON_FSYNC", "off")
        .env_remove("COLUMNS")
        .stdin(Stdio::null());
    if let Some(p) = path {
        c.env("PATH", p);
    }
    let out = c.output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

fn committed_repo() -> crate::common::Repo {
    let repo = git_repo();
    std::fs::write(repo.path().join("README.md"), "x\n").unwrap();
    for args in [&["add", "."][..], &["commit", "-q", "-m", "start"]] {
        assert!(
            Command::new("git")
                .args(args)
                .current_dir(repo.path())
                .status()
                .unwrap()
                .success()
        );
    }
    repo
}

/// The run folders under `.specs/` (not baton's own dot-folders).
fn runs(repo: &Path) -> Vec<String> {
    std::fs::read_dir(repo.join(".specs"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A PATH with the system's folders and `bin` first.
fn path_with(bin: &Path) -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display())
}

#[test]
fn a_failed_agent_leaves_a_failed_run_that_says_how_to_resume() {
    let repo = committed_repo();
    let r = baton(
        repo.path(),
        &[
            "run", "x", "--effort", "S", "--nopr", "--auto", "--agent", "exit 3",
        ],
        None,
    );
    // "x" is too short to be a task; nothing is created.
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("minimum 3 characters"), "{}", r.stderr);
    assert!(runs(repo.path()).is_empty());

    let r = baton(
        repo.path(),
        &[
            "run",
            "fix the typo",
            "--effort",
            "S",
            "--nopr",
            "--auto",
            "--agent",
            "echo the model is down >&2; exit 3",
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    let [id] = &runs(repo.path())[..] else {
        panic!("one run: {:?}", runs(repo.path()))
    };
    let resume = format!("baton run .specs/{id} --agent 'echo the model is down >&2; exit 3'");
    assert!(r.stderr.contains("exited with status 3"), "{}", r.stderr);
    assert!(r.stderr.contains("the model is down"), "{}", r.stderr);
    assert!(r.stderr.contains(&resume), "{}", r.stderr);

    // ls --json: failed.
    let ls = baton(repo.path(), &["ls", "--json"], None);
    let v: Value = serde_json::from_str(&ls.stdout).unwrap();
    let row = &v["workspaces"][0];
    assert_eq!(row["status"], "failed", "{v}");
    assert_eq!(row["currentPhase"], "phase-1", "{v}");

    // show: the failure with the exit status and stderr, and the resume command.
    let show = baton(repo.path(), &["show", id], None);
    assert!(
        show.stdout.starts_with("fix-the-typo  ·  forge"),
        "{}",
        show.stdout
    );
    assert!(show.stdout.contains("·  failed\n"), "{}", show.stdout);
    assert!(
        show.stdout
            .contains("failure    the agent situation-analyst-investigator exited with status 3."),
        "{}",
        show.stdout
    );
    assert!(show.stdout.contains("the model is down"), "{}", show.stdout);
    assert!(
        show.stdout.contains(&format!("`{resume}`")),
        "{}",
        show.stdout
    );
    assert!(
        !show.stdout.contains("pipeline_next_action"),
        "{}",
        show.stdout
    );
    let json: Value =
        serde_json::from_str(&baton(repo.path(), &["show", id, "--json"], None).stdout).unwrap();
    assert_eq!(json["status"], "failed");
    assert!(
        json["error"].as_str().unwrap().contains("status 3"),
        "{json}"
    );
    assert!(
        json["nextStep"].as_str().unwrap().contains(&resume),
        "{json}"
    );

    // Resumed with a working agent, the failed phase runs again and the run completes.
    let r = baton(
        repo.path(),
        &[
            "run",
            &format!(".specs/{id}"),
            "--agent",
            "builtin:scripted",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("Pipeline completed"), "{}", r.stderr);
    let show = baton(repo.path(), &["show", id], None);
    assert!(show.stdout.contains("·  completed\n"), "{}", show.stdout);
}

#[test]
fn bad_agents_and_branches_are_refused_before_anything_is_written() {
    let repo = committed_repo();
    let empty_bin = tempfile::tempdir().unwrap();
    let path = path_with(empty_bin.path());
    for (args, says) in [
        (
            vec!["--agent", "claud"],
            "is not a preset (the presets are claude and codex)",
        ),
        (
            vec!["--agent", "claude"],
            "npm install -g @anthropic-ai/claude-code",
        ),
        (vec!["--agent", "codex"], "npm install -g @openai/codex"),
        (vec!["--agent", " "], "--agent is empty"),
        (
            vec!["--agent", "builtin:scripted", "--branch", "main"],
            "--branch takes `current`",
        ),
    ] {
        let mut all = vec!["run", "fix the login typo", "--effort", "S", "--nopr"];
        all.extend(args.iter().copied());
        let r = baton(repo.path(), &all, Some(&path));
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!repo.path().join(".specs").exists(), "{args:?} wrote a run");
        assert!(r.stdout.is_empty(), "{args:?}");
    }
    // An empty task, and a run to resume that is not there, say what to
    // pass instead (they said "only flags were given" and "looks like a
    // resume candidate").
    for (text, says) in [
        ("", "the task is empty: say what to do"),
        ("  ", "the task is empty: say what to do"),
        (
            ".specs/20260101-gone",
            "To resume, pass a run that `baton ls`",
        ),
    ] {
        let all = ["run", text, "--effort", "S", "--nopr", "--agent", "exit 0"];
        let r = baton(repo.path(), &all, Some(&path));
        assert_eq!(r.code, 2, "{text:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{text:?}: {}", r.stderr);
        assert!(!repo.path().join(".specs").exists(), "{text:?} wrote a run");
    }
}

/// A stand-in `claude` that records its arguments and prompt, writes its
/// artifact when its permissions allow that file, and answers with the JSON
/// result Claude Code documents.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
log="$FAKE_LOG/$BATON_AGENT-${BATON_TASK_ID:-0}"
printf '%s\n' "$@" > "$log.args"
cat > "$log.prompt"
case "$BATON_AGENT" in
  task-decomposer) cat "$FAKE_TASKS" > "$BATON_OUTPUT_FILE" ;;
  *) printf '# %s\n\n## Verdict: APPROVE\n\n## Result: PASS\n\ndone\n' "$BATON_AGENT" > "$BATON_OUTPUT_FILE" ;;
esac
printf '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.5,"usage":{"input_tokens":100,"output_tokens":20},"modelUsage":{"claude-test-1":{"inputTokens":100,"outputTokens":20,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.5}}}\n'
"#;

#[test]
fn the_claude_preset_gets_the_phase_scope_and_its_json_result_is_recorded() {
    let repo = committed_repo();
    let bin = tempfile::tempdir().unwrap();
    let log = tempfile::tempdir().unwrap();
    executable(&bin.path().join("claude"), FAKE_CLAUDE);
    let tasks = log.path().join("tasks.md");
    std::fs::write(&tasks, TASKS).unwrap();
    let mut c = Command::new(baton_bin());
    c.args([
        "run",
        "Add a greeting feature",
        "--effort",
        "M",
        "--nopr",
        "--auto",
        "--agent",
        "claude",
    ])
    .current_dir(repo.path())
    .env("BATON_FSYNC", "off")
    .env("PATH", path_with(bin.path()))
    .env("FAKE_LOG", log.path())
    .env("FAKE_TASKS", &tasks)
    .stdin(Stdio::null());
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let [id] = &runs(repo.path())[..] else {
        panic!()
    };

    // Phase 1 may write only its artifact; the implementers the repository.
    let args =
        |name: &str| std::fs::read_to_string(log.path().join(format!("{name}.args"))).unwrap();
    let analysis = args("situation-analyst-0");
    assert!(
        analysis.contains("--permission-mode\ndontAsk\n"),
        "{analysis}"
    );
    assert!(
        analysis.contains(&format!("Write(./.specs/{id}/analysis.md)\n")),
        "{analysis}"
    );
    assert!(!analysis.contains("\nWrite\n"), "{analysis}");
    assert!(analysis.contains("Bash(git commit:*)"), "{analysis}");
    let implement = args("implementer-2");
    assert!(
        implement.contains("\nWrite\n") && implement.contains("\nEdit\n"),
        "{implement}"
    );
    assert!(implement.contains("Bash(git push:*)"), "{implement}");

    // Every phase's tokens, cost and model come from the result.
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(format!(".specs/{id}/state.json"))).unwrap(),
    )
    .unwrap();
    let log_entries = state["phaseLog"].as_array().unwrap();
    let spawned: Vec<&Value> = log_entries
        .iter()
        .filter(|e| e["model"] != "" && e["tokens"].as_u64().unwrap_or(0) > 0)
        .collect();
    assert!(spawned.len() >= 6, "{log_entries:?}");
    for e in &spawned {
        assert_eq!(e["model"], "claude-test-1", "{e}");
        assert_eq!(e["tokens"].as_u64().unwrap() % 120, 0, "{e}");
    }
    // Recorded per task: the fan-out's report became one entry per task,
    // each with its own tokens, cost and model; every step has its cost.
    for task in ["2", "3"] {
        let e = log_entries
            .iter()
            .find(|e| e["phase"] == "phase-5" && e["tasks"] == json!([task]))
            .unwrap_or_else(|| panic!("task {task}: {log_entries:?}"));
        assert_eq!(e["tokens"], 120, "{e}");
        assert_eq!(e["cost_usd"], 0.5, "{e}");
        assert_eq!(e["model"], "claude-test-1", "{e}");
    }
    assert!(spawned.iter().all(|e| e["cost_usd"] == 0.5), "{spawned:?}");
    // The fan-out of tasks 2 and 3: two agents, each told its own task.
    let p2 = std::fs::read_to_string(log.path().join("implementer-2.prompt")).unwrap();
    let p3 = std::fs::read_to_string(log.path().join("implementer-3.prompt")).unwrap();
    assert_ne!(p2, p3);
    assert!(
        p2.contains("task 2") && !p2.contains("You work on task 3"),
        "{p2}"
    );
    assert!(
        p3.contains("task 3") && !p3.contains("You work on task 2"),
        "{p3}"
    );
    // Each names its task's title and files from tasks.md, not the other's.
    assert!(
        p2.contains("## Task 2: Add tests [parallel]") && p2.contains("- tests/core_test.txt"),
        "{p2}"
    );
    assert!(!p2.contains("## Task 3: Update docs"), "{p2}");
    assert!(
        p3.contains("## Task 3: Update docs [parallel]") && p3.contains("- docs/core.md"),
        "{p3}"
    );
}

#[test]
fn a_cli_that_prints_something_else_stops_the_run_and_records_nothing() {
    for (preset, says, check) in [
        (
            "claude",
            "not Claude Code's JSON result",
            "claude --version",
        ),
        ("codex", "codex printed no JSON events", "codex --version"),
    ] {
        let repo = committed_repo();
        let bin = tempfile::tempdir().unwrap();
        executable(
            &bin.path().join(preset),
            "#!/bin/sh\ncat > /dev/null\necho 'Hello! How can I help?'\n",
        );
        let r = baton(
            repo.path(),
            &[
                "run",
                "fix the login typo",
                "--effort",
                "S",
                "--nopr",
                "--auto",
                "--agent",
                preset,
            ],
            Some(&path_with(bin.path())),
        );
        assert_eq!(r.code, 2, "{preset}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{preset}: {}", r.stderr);
        assert!(r.stderr.contains(check), "{preset}: {}", r.stderr);
        assert!(
            r.stderr.contains("Nothing was recorded for this step"),
            "{preset}: {}",
            r.stderr
        );
        let [id] = &runs(repo.path())[..] else {
            panic!()
        };
        assert!(
            r.stderr
                .contains(&format!("baton run .specs/{id} --agent {preset}")),
            "{preset}: {}",
            r.stderr
        );
        // Nothing recorded: the phase still runs, no failure, no tokens.
        let state: Value = serde_json::from_str(
            &std::fs::read_to_string(repo.path().join(format!(".specs/{id}/state.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(state["currentPhaseStatus"], "in_progress", "{state}");
        assert!(state["error"].is_null(), "{state}");
        assert!(state["phaseLog"].as_array().unwrap().is_empty(), "{state}");
    }
}

const TASKS: &str = "# Tasks\n\n## Task 1: Add the core change\n\nmode: sequential\ndepends_on: []\nfiles:\n- src/core.txt\n\n## Task 2: Add tests [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- tests/core_test.txt\n\n## Task 3: Update docs [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- docs/core.md\n";

/// `--auto` grants answers to the person's questions: a program the agent
/// runs inside its sandbox (here bubblewrap making the witness folder
/// read-only, as Claude Code's and Codex's sandboxes do) cannot start a
/// run with it — refused before anything is written, with the person text
/// that says why. The same command outside the sandbox starts the run.
#[test]
fn an_auto_run_started_inside_an_agent_s_sandbox_is_refused_before_anything_is_written() {
    let repo = committed_repo();
    let witness = tempfile::tempdir().unwrap();
    let w = witness.path().to_str().unwrap();
    let bin = baton_bin();
    let inside = Command::new("bwrap")
        .args([
            "--bind",
            "/",
            "/",
            "--ro-bind",
            w,
            w,
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .arg(&bin)
        .args(["run", "fix the typo", "--auto", "--agent", "true", "--nopr"])
        .current_dir(repo.path())
        .env("BATON_WITNESS_DIR", w)
        .env("BATON_FSYNC", "off")
        .stdin(Stdio::null())
        .output()
        .expect("bwrap (bubblewrap) runs baton in a sandbox");
    let stderr = String::from_utf8_lossy(&inside.stderr);
    assert!(!inside.status.success(), "{stderr}");
    assert!(stderr.contains("inside an agent's sandbox"), "{stderr}");
    assert!(
        runs(repo.path()).is_empty(),
        "nothing written: {:?}",
        runs(repo.path())
    );
    let outside = Command::new(&bin)
        .args(["run", "fix the typo", "--auto", "--agent", "true", "--nopr"])
        .current_dir(repo.path())
        .env("BATON_WITNESS_DIR", w)
        .env("BATON_FSYNC", "off")
        .stdin(Stdio::null())
        .output()
        .expect("baton run");
    assert!(
        !String::from_utf8_lossy(&outside.stderr).contains("inside an agent's sandbox"),
        "{}",
        String::from_utf8_lossy(&outside.stderr)
    );
    assert_eq!(
        runs(repo.path()).len(),
        1,
        "the person's --auto run started"
    );
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn branches_new_from_the_default_branch_current_elsewhere_and_nothing_stray_after_a_switch() {
    let repo = committed_repo();
    let default = git(repo.path(), &["branch", "--show-current"]);
    let run = |text: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            text,
            "--effort",
            "S",
            "--nopr",
            "--auto",
            "--agent",
            "builtin:scripted",
        ];
        args.extend_from_slice(extra);
        let r = baton(repo.path(), &args, None);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r
    };
    // From the default branch: a new branch for the run.
    let r = run("Fix the login typo", &[]);
    let first = git(repo.path(), &["branch", "--show-current"]);
    assert_ne!(first, default);
    assert!(
        r.stderr.contains(&format!("branch {first} (new)")),
        "{}",
        r.stderr
    );
    // From that feature branch: the next run works on it (no stacking).
    let r = run("Fix the logout typo", &[]);
    assert_eq!(git(repo.path(), &["branch", "--show-current"]), first);
    assert!(
        r.stderr.contains(&format!("branch {first} (current)")),
        "{}",
        r.stderr
    );
    // --branch new stacks on purpose.
    run("Fix the signup typo", &["--branch", "new"]);
    let third = git(repo.path(), &["branch", "--show-current"]);
    assert_ne!(third, first);
    // Back on the default branch, the runs' committed files leave with
    // their branch and nothing of them is left in git status.
    git(repo.path(), &["checkout", "-q", &default]);
    assert_eq!(
        git(
            repo.path(),
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        ""
    );
    // The runs stay listed: from the run history, with the branch their
    // files are on.
    let ls = baton(repo.path(), &["ls"], None);
    assert_eq!(ls.code, 0, "{}", ls.stderr);
    assert!(
        ls.stdout
            .contains("Ended runs whose files are on another branch"),
        "{}",
        ls.stdout
    );
    assert!(
        ls.stdout.contains("completed  ") && ls.stdout.contains(&format!("on branch {first}")),
        "{}",
        ls.stdout
    );
    let v: Value =
        serde_json::from_str(&baton(repo.path(), &["ls", "--json"], None).stdout).unwrap();
    let elsewhere = v["elsewhere"].as_array().unwrap();
    assert_eq!(elsewhere.len(), 3, "{v}");
    assert!(elsewhere.iter().all(|r| r["outcome"] == "completed"), "{v}");
    assert_eq!(
        elsewhere
            .iter()
            .filter(|r| r["branch"] == first.as_str())
            .count(),
        2,
        "{v}"
    );
    assert_eq!(
        elsewhere
            .iter()
            .filter(|r| r["branch"] == third.as_str())
            .count(),
        1,
        "{v}"
    );
    // --branch current on the default branch works there.
    run("Fix the help typo", &["--branch", "current"]);
    assert_eq!(git(repo.path(), &["branch", "--show-current"]), default);
}

#[test]
fn a_budget_stops_the_run_for_the_person_and_a_higher_one_resumes_it() {
    let repo = committed_repo();
    let bin = tempfile::tempdir().unwrap();
    let log = tempfile::tempdir().unwrap();
    executable(&bin.path().join("claude"), FAKE_CLAUDE);
    let tasks = log.path().join("tasks.md");
    std::fs::write(&tasks, TASKS).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(baton_bin())
            .args(args)
            .current_dir(repo.path())
            .env("BATON_FSYNC", "off")
            .env("PATH", path_with(bin.path()))
            .env("FAKE_LOG", log.path())
            .env("FAKE_TASKS", &tasks)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // Bad limits are refused before anything is written.
    for (flag, value, says) in [
        (
            "--max-cost",
            "lots",
            "--max-cost takes an amount of US dollars above 0",
        ),
        (
            "--max-cost",
            "0",
            "--max-cost takes an amount of US dollars above 0",
        ),
        (
            "--max-tokens",
            "0",
            "--max-tokens takes a whole number of tokens above 0",
        ),
        (
            "--max-tokens",
            "1.5",
            "--max-tokens takes a whole number of tokens above 0",
        ),
    ] {
        let (code, err) = run(&[
            "run",
            "Fix the login typo",
            "--effort",
            "S",
            "--nopr",
            "--auto",
            "--agent",
            "claude",
            flag,
            value,
        ]);
        assert_eq!(code, 2, "{flag} {value}: {err}");
        assert!(err.contains(says), "{flag} {value}: {err}");
        assert!(runs(repo.path()).is_empty());
    }
    // Each agent reports $0.50: with $1.00 the run stops before its third step.
    let (code, err) = run(&[
        "run",
        "Fix the login typo",
        "--effort",
        "S",
        "--nopr",
        "--auto",
        "--agent",
        "claude",
        "--max-cost",
        "1",
    ]);
    assert_eq!(code, 3, "{err}");
    let [id] = &runs(repo.path())[..] else {
        panic!()
    };
    assert!(
        err.contains("the run has used $1.00 of its $1.00 budget"),
        "{err}"
    );
    assert!(
        err.contains(&format!("baton run .specs/{id} --agent claude --max-cost")),
        "{err}"
    );
    assert!(
        err.contains(&format!("baton answer .specs/{id} abandon")),
        "{err}"
    );
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(format!(".specs/{id}/state.json"))).unwrap(),
    )
    .unwrap();
    let spawned = state["phaseLog"].as_array().unwrap().len();
    assert_eq!(spawned, 2, "{state}");
    let show = baton(repo.path(), &["show", id], None);
    assert!(show.stdout.contains("budget"), "{}", show.stdout);
    // A higher limit resumes it to the end.
    let (code, err) = run(&[
        "run",
        &format!(".specs/{id}"),
        "--agent",
        "claude",
        "--max-cost",
        "100",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Pipeline completed"), "{err}");
}
