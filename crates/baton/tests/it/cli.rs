//! The commands for people: ls, state show, workflow list/show/validate/schema, stats.

use crate::common;

use std::process::Command;

use crate::common::{Repo, baton_bin, spawn};
use serde_json::{Value, json};

fn run(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(baton_bin())
        .args(args)
        .current_dir(repo.path())
        .env_remove("BATON_TOOLS")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ls_state_show_and_stats_read_the_same_files() {
    let repo = Repo::new();
    // No work yet is a normal answer (issue 20: it used to exit 2): a
    // friendly line that says how to start, the same with an empty folder.
    let (code, out, err) = run(&repo, &["ls"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("No runs yet in "), "{out}");
    assert!(
        out.contains("baton run \"what to do\" --agent claude"),
        "{out}"
    );
    let (code, out, _) = run(&repo, &["ls", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["workspaces"],
        json!([])
    );
    assert!(!repo.specs().exists(), "ls creates nothing");
    std::fs::create_dir(repo.specs()).unwrap();
    let (code, out, _) = run(&repo, &["ls"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("No runs yet in "), "{out}");

    let c = spawn(repo.path(), &[], &[]).await;
    c.ok(
        "init",
        json!({"spec_name": "alpha", "workspace": "20260101-alpha", "effort": "M"}),
    )
    .await;
    c.ok(
        "phase_start",
        json!({"force": true, "reason": "test", "workspace": "20260101-alpha", "phase": "phase-1"}),
    )
    .await;
    c.ok("startIssueWorkflow", json!({"issueNumber": "3"}))
        .await;
    c.close().await;

    let (code, out, _) = run(&repo, &["ls"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(".specs/20260101-alpha")
            && out.contains("phase-1")
            && out.contains("in progress"),
        "{out}"
    );
    assert!(out.contains("issue_start"), "{out}");
    // PROGRESS: the two phases effort M skips are skipped, not done.
    let alpha = out
        .lines()
        .find(|l| l.contains(".specs/20260101-alpha"))
        .unwrap_or_default();
    assert!(alpha.contains(" 0/17 (2 skipped) "), "{out}");
    let (_, out, _) = run(&repo, &["ls", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["workspaces"].as_array().unwrap().len(), 2);

    let (code, out, _) = run(&repo, &["state", "show", ".specs/20260101-alpha"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("phase       phase-1 (Situation Analysis) — in_progress"),
        "{out}"
    );
    assert!(out.contains("skipped     phase-4b, checkpoint-b"), "{out}");
    let (_, raw, _) = run(&repo, &["state", "show", "20260101-alpha", "--raw"]);
    assert_eq!(
        serde_json::from_str::<Value>(&raw).unwrap()["currentPhaseStatus"],
        "in_progress"
    );
    let (code, _, err) = run(&repo, &["state", "show", "../etc"]);
    assert_eq!(code, 2);
    assert!(err.contains("outside the specs root"), "{err}");

    let (code, out, _) = run(&repo, &["stats", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["byWorkflow"]["issue"]["active"], 1);
    assert_eq!(v["byWorkflow"]["forge"]["phaseVisits"]["phase-1"], 1);
    let (_, out, _) = run(&repo, &["stats"]);
    // Labelled: a sentence per workflow and a table whose columns say what
    // their numbers are.
    assert!(
        out.contains("Runs of the workflow forge in ")
            && out.contains(" (this branch): 1 — 0 completed, 0 abandoned, 1 active\n"),
        "{out}"
    );
    assert!(
        out.contains("PHASES OF FORGE\nphase    visits  mean time\nphase-1       1"),
        "{out}"
    );
}

#[test]
fn workflow_commands_list_show_validate_and_publish_the_schema() {
    let repo = Repo::new();
    common::install_example_workflow(&repo);
    let (code, out, _) = run(&repo, &["workflow", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("issue") && out.contains("built-in"), "{out}");
    assert!(
        out.contains("release") && out.contains(".baton/workflows/release.yaml"),
        "{out}"
    );

    let (code, out, _) = run(&repo, &["workflow", "show", "issue"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("quality_check    [command]  → pr_creation; result=failure → fix"),
        "{out}"
    );
    let (code, _, err) = run(&repo, &["workflow", "show", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown workflow \"nope\""), "{err}");

    let bad = repo.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    next: zz\n",
    )
    .unwrap();
    let (code, out, _) = run(
        &repo,
        &[
            "workflow",
            "validate",
            "bad.yaml",
            ".baton/workflows/release.yaml",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        out.contains("bad.yaml:7:11: phases[0].next: no phase \"zz\" (known: a, completed)"),
        "{out}"
    );
    assert!(
        out.contains("release.yaml: ok (workflow \"release\", 5 phases)"),
        "{out}"
    );

    let (code, out, _) = run(&repo, &["workflow", "schema"]);
    assert_eq!(code, 0);
    let schema: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schema["title"], "WorkflowDefinition");
    assert!(schema["properties"]["phases"].is_object());
}

#[test]
fn manuals_index_and_find_for_people() {
    let repo = Repo::new();
    let dir = repo.path().join("manuals/guide");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("install.md"), "# Installation\n\n## Linux\n\nRun the installer script with sudo.\n\n## Windows\n\nUse the MSI package.\n").unwrap();
    std::fs::write(
        dir.join("backup.md"),
        "# Backups\n\nSnapshots are taken nightly and kept for 30 days.\n",
    )
    .unwrap();
    let (code, out, err) = run(&repo, &["manuals", "index"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("indexed 1 manuals, 2 files"), "{out}");
    assert!(err.contains("indexed 2/2 files"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".baton/manual-index/.gitignore")).unwrap(),
        "*\n"
    );
    let (code, out, _) = run(
        &repo,
        &[
            "manuals",
            "find",
            "how long are snapshots kept",
            "--manual",
            "guide",
            "--limit",
            "1",
        ],
    );
    assert_eq!(code, 0);
    assert!(out.starts_with(" 1. guide/backup.md:1  Backups"), "{out}");
    // Each hit shows what it says, and the end says what was searched where.
    assert!(
        out.contains("\n    Snapshots are taken nightly and kept for 30 days.\n"),
        "{out}"
    );
    let root = repo.path().join("manuals");
    assert!(
        out.contains(&format!(
            "searched manual guide (2 files, 3 sections) in {}",
            root.display()
        )),
        "{out}"
    );
    let (code, out, _) = run(&repo, &["manuals", "find", "zzyzx quuxly"]);
    assert_eq!(code, 1, "no match is not success: {out}");
    assert!(
        out.contains("no match for \"zzyzx quuxly\": searched 1 manual (2 files"),
        "{out}"
    );
    let (code, out, _) = run(&repo, &["manuals", "find", "windows installer", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "candidates");
    let (code, _, err) = run(&repo, &["manuals", "find", "x", "--manual", "../etc"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("invalid") || err.contains("out_of_scope"),
        "{err}"
    );
}

#[test]
fn manuals_find_says_when_there_is_nothing_to_search() {
    let repo = Repo::new();
    let root = repo.path().join("manuals");
    let (code, out, err) = run(&repo, &["manuals", "find", "backup"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains(&format!("no manuals folder at {}", root.display()))
            && err.contains("MANUALS_ROOT"),
        "{err}"
    );
    // A flat folder of Markdown is not a manual: say so and how to fix it.
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("backup.md"), "# Backups\n\nNightly.\n").unwrap();
    std::fs::write(root.join("install.md"), "# Install\n\nRun it.\n").unwrap();
    let (code, out, err) = run(&repo, &["manuals", "find", "backup"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("holds 2 manual file(s) but no manual") && err.contains("mkdir"),
        "{err}"
    );
    // A manual folder without manual files.
    std::fs::create_dir_all(root.join("empty")).unwrap();
    let (code, _, err) = run(&repo, &["manuals", "find", "backup"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("searched 1 manual (0 files, 0 sections)")
            && err.contains("no .md or .json file"),
        "{err}"
    );
}

#[test]
fn manuals_commands_use_and_report_the_users_thesaurus() {
    let repo = Repo::new();
    let dir = repo.path().join("manuals/plant");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("oven.md"),
        "# Oven\n\n## フラックス炉\n\nフラックス炉は毎週点検する。\n",
    )
    .unwrap();
    std::fs::write(
        repo.path().join("manuals/thesaurus.txt"),
        "かまど = フラックス炉\nnot an entry\n",
    )
    .unwrap();
    let (code, out, err) = run(&repo, &["manuals", "index"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("thesaurus: ") && out.contains("thesaurus.txt"),
        "{out}"
    );
    assert!(
        err.contains("thesaurus line skipped:") && err.contains("thesaurus.txt:2"),
        "{err}"
    );
    let (code, out, _) = run(&repo, &["manuals", "find", "かまど", "--limit", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("plant/oven.md"), "{out}");
}

#[test]
fn serve_ends_quietly_when_stdin_closes_before_a_client_speaks() {
    let repo = Repo::new();
    let out = Command::new(baton_bin())
        .arg("serve")
        .current_dir(repo.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "nothing but protocol on stdout");
}

#[test]
fn init_registers_baton_and_keeps_other_servers() {
    let repo = Repo::new();
    std::fs::write(
        repo.path().join(".mcp.json"),
        r#"{"mcpServers": {"other": {"command": "x"}}, "note": 1}"#,
    )
    .unwrap();
    let (code, out, err) = run(&repo, &["init", "--client", "all"]);
    assert_eq!(code, 0, "{err}");
    // Codex reads the project's own .codex/config.toml (issue 20: init
    // writes it instead of printing a snippet).
    let codex = std::fs::read_to_string(repo.path().join(".codex/config.toml")).unwrap();
    assert!(codex.contains("[mcp_servers.baton]"), "{codex}");
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.path().join(".mcp.json")).unwrap())
            .unwrap();
    assert_eq!(claude["mcpServers"]["other"]["command"], "x");
    assert_eq!(claude["note"], 1);
    assert_eq!(claude["mcpServers"]["baton"]["type"], "stdio");
    // The registered profile is the one the installed command needs.
    assert_eq!(
        claude["mcpServers"]["baton"]["args"],
        json!(["serve", "--tools", "pipeline"])
    );
    assert!(
        codex.contains("args = [\"serve\", \"--tools\", \"pipeline\"]"),
        "{codex}"
    );
    // A command that works on another developer's machine: no absolute
    // path of this one in files meant to be committed.
    assert_eq!(claude["mcpServers"]["baton"]["command"], "baton");
    assert!(out.contains("Next:"), "{out}");
    let cursor: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(".cursor/mcp.json")).unwrap(),
    )
    .unwrap();
    assert!(cursor["mcpServers"]["baton"]["command"].is_string());
    // The orchestrator skill is installed as a command for both clients.
    for dir in [".claude/commands", ".cursor/commands"] {
        let skill = std::fs::read_to_string(repo.path().join(dir).join("baton-pipeline.md"))
            .unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert!(skill.contains("pipeline_next_action"), "{dir}");
    }
    // An edited skill is kept.
    let claude_skill = repo.path().join(".claude/commands/baton-pipeline.md");
    std::fs::write(&claude_skill, "my own loop\n").unwrap();
    let (code, out, _) = run(&repo, &["init", "--client", "claude"]);
    assert_eq!(code, 0);
    assert!(out.contains("kept"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&claude_skill).unwrap(),
        "my own loop\n"
    );
    // A broken file is reported and left alone.
    std::fs::write(repo.path().join(".mcp.json"), "{ broken").unwrap();
    let (code, _, err) = run(&repo, &["init"]);
    assert_eq!(code, 2);
    assert!(err.contains("not valid JSON"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".mcp.json")).unwrap(),
        "{ broken"
    );
}

/// `baton init codex` names the agent as a word, as people type it; the
/// same as `--client codex`, and refused with both spellings at once.
#[test]
fn init_takes_the_agent_as_a_word() {
    let repo = Repo::new();
    let (code, out, err) = run(&repo, &["init", "codex"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(repo.path().join(".codex/hooks.json").is_file(), "{out}");
    assert!(!repo.path().join(".mcp.json").exists(), "{out}");
    let (code, _, err) = run(&repo, &["init", "codex", "--client", "claude"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
    let (code, _, err) = run(&repo, &["init", "clod"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("claude") && err.contains("codex"), "{err}");
}

/// `baton ls` in a folder that does not exist fails and says what to do.
#[test]
fn ls_on_a_missing_repository_fails_and_says_what_to_do() {
    let repo = Repo::new();
    let (code, out, err) = run(&repo, &["ls", "--repo", "/nonexistent/baton-repo"]);
    assert_ne!(code, 0);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("/nonexistent/baton-repo does not exist") && err.contains("--repo PATH"),
        "{err}"
    );
}

/// Help speaks to a person who has not read the design documents: no seed
/// numbers, a place to start, and examples where a command takes a value.
#[test]
fn help_texts_speak_to_people() {
    let repo = Repo::new();
    let (code, top, _) = run(&repo, &["--help"]);
    assert_eq!(code, 0);
    assert!(
        top.contains("Start here:") && top.contains("baton demo"),
        "{top}"
    );
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["manuals", "--help"],
        vec!["manuals", "find", "--help"],
        vec!["run", "--help"],
        vec!["init", "--help"],
        vec!["tools", "--help"],
        vec!["workflow", "--help"],
        vec!["state", "show", "--help"],
    ] {
        let (code, out, _) = run(&repo, &args);
        assert_eq!(code, 0, "{args:?}");
        for jargon in ["seed 0", "Seed 0", "forge"] {
            assert!(
                !out.contains(jargon),
                "{args:?} mentions {jargon:?}:\n{out}"
            );
        }
    }
    let (_, serve, _) = run(&repo, &["serve", "--help"]);
    assert!(
        serve.contains("localhost:8765") && serve.contains("--tools"),
        "{serve}"
    );
    let (code, tools, _) = run(&repo, &["tools"]);
    assert_eq!(code, 0);
    assert!(
        tools.contains("pipeline: ")
            && tools.contains("recovery: ")
            && tools.contains("phase_start"),
        "{tools}"
    );
}

/// A report piped into a reader that stops early (`baton stats --json |
/// head -1`) ends like any terminal tool — quietly, by SIGPIPE — and not
/// with a panic and a backtrace (it used to exit 101, "failed printing to
/// stdout: Broken pipe").
#[test]
fn a_report_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt as _;
    let repo = Repo::new();
    for args in [
        &["stats", "--json"][..],
        &["workflow", "schema"],
        &["tools"],
    ] {
        // The reader is closed before baton writes a byte: every write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(baton_bin())
            .args(args)
            .current_dir(repo.path())
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "baton {args:?}: {err}");
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "baton {args:?} ended with {:?}: {err}",
            out.status
        );
    }
}

/// `baton workflow validate` given a FIFO or a device answers at once that
/// it is not a definition file (it blocked on the FIFO, and read
/// /dev/zero without end); a folder is refused the same way.
#[test]
fn workflow_validate_refuses_a_fifo_a_device_and_a_folder_at_once() {
    let repo = Repo::new();
    let fifo = repo.path().join("def.yaml");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    for file in [fifo.to_str().unwrap(), "/dev/zero", "/"] {
        let mut child = Command::new(baton_bin())
            .args(["workflow", "validate", file])
            .current_dir(repo.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A hang is a failure, not a wait: give up (and kill) after 60 s.
        let mut waited = 0;
        while child.try_wait().unwrap().is_none() {
            assert!(waited < 600, "baton workflow validate {file} hung");
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
            if waited == 600 {
                let _ = child.kill();
            }
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(
            err.contains("not a regular file") && err.contains("name a definition file"),
            "{file}: {err}"
        );
    }
}

/// The person's own configuration that cannot be used (bad TOML, a FIFO, a
/// symbolic link) is said once on stderr, with what to do; the command
/// still works on the defaults. A good one says nothing.
#[test]
fn an_unusable_person_configuration_is_said_once_and_the_command_works() {
    let repo = Repo::new();
    let ls = |config: &std::path::Path| {
        let out = Command::new(baton_bin())
            .arg("ls")
            .current_dir(repo.path())
            .env_remove("BATON_TOOLS")
            .env(baton_testkit::person::ENV, config)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let good = baton_testkit::person::PersonConfig::trusting_elicitation();
    let (code, out, err) = ls(&good.path);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("No runs yet in "), "{out}");
    assert!(
        !err.contains("configuration"),
        "a good file says nothing: {err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[answers\ntrust = 1\n").unwrap();
    let fifo = dir.path().join("fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink(&good.path, &link).unwrap();
    for (config, says) in [
        (&bad, "is not valid (nothing in it is used); fix it"),
        (&fifo, "make it a plain text file of your own"),
        (&link, "make it a plain text file of your own"),
    ] {
        let (code, out, err) = ls(config);
        assert_eq!(code, 0, "{}: {err}", config.display());
        assert!(out.starts_with("No runs yet in "), "{out}");
        assert_eq!(
            err.matches("baton: warning: your own configuration is not used")
                .count(),
            1,
            "once: {err}"
        );
        assert!(err.contains(&config.display().to_string()), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains("baton goes on without it"), "{err}");
    }
}

/// A specs folder outside the repository (a system folder, a sibling), its
/// root or its `.git` is refused, from the flag, the environment and
/// `baton.toml` alike, with a message that says what to pass; nothing is
/// written there.
#[test]
fn a_specs_folder_outside_the_repository_is_refused_from_every_setting() {
    let repo = Repo::new();
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = outside.path().display().to_string();
    let baton_in = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(baton_bin())
            .args(args)
            .current_dir(repo.path())
            .env_remove("BATON_TOOLS")
            .env_remove("BATON_SPECS_DIR")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    for (args, env, setting) in [
        (vec!["--specs-dir", "/etc", "ls"], vec![], "--specs-dir"),
        (
            vec!["--specs-dir", outside_dir.as_str(), "ls"],
            vec![],
            "--specs-dir",
        ),
        (vec!["--specs-dir", "../up", "ls"], vec![], "--specs-dir"),
        (
            vec!["--specs-dir", ".git/runs", "ls"],
            vec![],
            "--specs-dir",
        ),
        (
            vec!["ls"],
            vec![("BATON_SPECS_DIR", "/etc")],
            "BATON_SPECS_DIR",
        ),
    ] {
        let (code, err) = baton_in(&args, &env);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(setting), "{args:?}: {err}");
        assert!(
            err.contains("pass a folder inside") && err.contains("--repo"),
            "{args:?}: {err}"
        );
    }
    std::fs::write(repo.path().join("baton.toml"), "specs_dir = \"/etc\"\n").unwrap();
    let (code, err) = baton_in(&["ls"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("specs_dir in ") && err.contains("baton.toml"),
        "{err}"
    );
    assert!(err.contains("outside the repository"), "{err}");
    std::fs::write(
        repo.path().join("baton.toml"),
        "specs_dir = \"docs/runs\"\n",
    )
    .unwrap();
    let (code, err) = baton_in(&["ls"], &[]);
    assert_eq!(code, 0, "inside the repository is fine: {err}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}
