//! The headless driver: `baton demo` and `baton run` end to end (the real
//! binary, a real git repository, agents as commands).

use std::process::Command;

use crate::common::{Repo, baton_bin};

fn git_repo() -> Repo {
    let repo = Repo::new();
    std::fs::remove_dir(repo.path().join(".git")).unwrap();
    for args in [
        &["init", "-q"][..],
        &["config", "user.name", "baton test"],
        &["config", "user.email", "test@example.invalid"],
        &["config", "commit.gpgsign", "false"],
        &["commit", "-q", "--allow-empty", "-m", "start"],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    repo
}

#[test]
fn the_demo_completes_a_pipeline_at_every_effort() {
    for (effort, skipped) in [("S", 8), ("M", 5), ("L", 3)] {
        let out = Command::new(baton_bin())
            .args(["demo", "--effort", effort])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{effort}: {stderr}");
        assert!(
            stdout.contains("Pipeline completed: ")
                && stdout.contains(&format!("{skipped} skipped")),
            "{effort}: {stdout}"
        );
        assert!(stdout.contains("summary.md"), "{stdout}");
        // The final commit names the run.
        assert!(stdout.contains("feat: Add a greeting feature"), "{stdout}");
        assert!(stderr.contains("▶ Phase 1"), "{stderr}");
        // A first look shows no warning: the syncer is done with the
        // throwaway repository before it is removed.
        assert!(!stderr.contains(" WARN "), "{effort}: {stderr}");
    }
}

#[test]
fn run_with_the_scripted_agent_writes_every_artifact_and_commits() {
    let repo = git_repo();
    let out = Command::new(baton_bin())
        .args([
            "run",
            "Add a health endpoint",
            "--effort",
            "M",
            "--auto",
            "--nopr",
            "--agent",
            "builtin:scripted",
        ])
        .current_dir(repo.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("(parallel · 2 tasks)"), "{stderr}");
    let specs = repo.specs();
    let ws = run_folder(&specs);
    for f in [
        "analysis.md",
        "design.md",
        "tasks.md",
        "impl-3.md",
        "review-2.md",
        "summary.md",
    ] {
        assert!(ws.join(f).is_file(), "{f}");
    }
    // The implementers changed the repository and the final commit holds it.
    let files = Command::new("git")
        .args(["show", "--name-only", "--format=", "HEAD"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&files.stdout);
    assert!(
        files.contains("src/core.txt") && files.contains("docs/core.md"),
        "{files}"
    );
}

#[test]
fn run_with_an_agent_command_uses_its_reply_when_it_writes_no_file() {
    let repo = git_repo();
    let agent = repo.path().join("agent.sh");
    // Reads the prompt, checks the environment, answers on stdout only.
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat > /dev/null\ntest -n \"$BATON_OUTPUT_FILE\" || exit 3\ntest -n \"$BATON_PHASE\" || exit 4\nprintf '# Output of %s\\n\\n## Verdict: APPROVE\\n\\n## Section\\n\\ndone\\n' \"$BATON_AGENT\"\n",
    )
    .unwrap();
    let out = Command::new(baton_bin())
        .args([
            "run",
            "Fix typo in the help text",
            "--effort",
            "S",
            "--auto",
            "--nopr",
            "--agent",
        ])
        .arg(format!("sh {}", agent.display()))
        .current_dir(repo.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let ws = run_folder(&repo.specs());
    let design = std::fs::read_to_string(ws.join("design.md")).unwrap();
    assert!(design.starts_with("# Output of architect"), "{design}");
    assert!(ws.join("impl-1.md").is_file());

    // A failing agent stops the run with its stderr, and the run resumes later.
    let repo = git_repo();
    let out = Command::new(baton_bin())
        .args([
            "run",
            "Fix typo in the help text",
            "--effort",
            "S",
            "--nopr",
            "--agent",
            "echo broken >&2; exit 9",
        ])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken"));
}

/// The run's workspace folder: the one folder under the specs root that is
/// not baton's own (`.history/`, where ended runs are recorded).
fn run_folder(specs: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(specs)
        .unwrap()
        .flatten()
        .find(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .unwrap()
        .path()
}
