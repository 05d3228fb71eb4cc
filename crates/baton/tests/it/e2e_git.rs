//! Git hygiene of a whole run, in a real git repository with a bare
//! repository on disk as its remote: the run's commit holds exactly the
//! run's files — never files that were untracked or modified before it,
//! never another workspace, never lock or live-state files, and no
//! secret-looking file unless a person allows it — `git status` shows
//! nothing of the run afterwards, and the push reaches the remote.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Command;

use crate::common::pipeline::{Script, create, git_repo, perform};
use crate::common::{person_answer, spawn};
use serde_json::json;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_commit_holds_exactly_its_files_and_reaches_the_remote() {
    let repo = git_repo();
    let root = repo.path();
    let remote = tempfile::tempdir().unwrap();
    git(remote.path(), &["init", "-q", "--bare", "remote.git"]);
    let remote_git = remote.path().join("remote.git");
    std::fs::write(root.join("README.md"), "# Project\n").unwrap();
    git(root, &["add", "README.md"]);
    git(root, &["commit", "-q", "-m", "initial"]);
    git(
        root,
        &["remote", "add", "origin", remote_git.to_str().unwrap()],
    );
    git(root, &["push", "-q", "-u", "origin", "HEAD"]);
    // What the repository holds before the run: an untracked notes file with
    // a key, and a half-done edit of a tracked file.
    std::fs::write(root.join("notes.txt"), "API_KEY=sk-live-123\n").unwrap();
    std::fs::write(root.join("README.md"), "# Project\n\nhalf-done edit\n").unwrap();

    let c = spawn(root, &[], &[]).await;
    let ws = create(&c, "add a health endpoint", "S", "").await;
    // Another pipeline starts meanwhile and stays unfinished.
    let other = create(&c, "rewrite the docs", "M", "").await;
    assert_ne!(ws, other);

    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut asked = Vec::new();
    let mut commit_argv = None;
    for _ in 0..80 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["type"] == "done" {
            break;
        }
        if a["type"] == "spawn_agent" && a["phase"] == "phase-5" {
            // The implementer changes code — and leaves a secret behind.
            std::fs::create_dir_all(root.join("src")).unwrap();
            std::fs::write(root.join("src/health.rs"), "pub fn health() {}\n").unwrap();
            std::fs::write(root.join(".env"), "DATABASE_PASSWORD=hunter2\n").unwrap();
        }
        if a["type"] == "exec" && a["phase"] == "final-commit" && a["commands"][1] == "add" {
            commit_argv = Some(a["commands"].clone());
        }
        if a["type"] == "checkpoint" || a["type"] == "human_gate" {
            let name = a["name"].as_str().unwrap().to_string();
            asked.push(name.clone());
            let answer = match name.as_str() {
                "final-commit-secret-files" => "exclude",
                // No `gh` here: the person goes on without a pull request.
                "pr-creation-failed" => "skip",
                _ => "proceed",
            };
            person_answer(root, &ws, answer);
            args = json!({"workspace": ws});
            continue;
        }
        args = perform(root, &ws, &a, &mut script, &mut answers);
    }
    assert!(
        asked.contains(&"final-commit-secret-files".to_string()),
        "{asked:?}"
    );
    let argv = commit_argv.expect("the commit's add step was handed out");
    let staged: Vec<&str> = argv.as_array().unwrap()[3..]
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(staged.contains(&"src/health.rs"), "{staged:?}");
    for never in ["notes.txt", "README.md", ".env"] {
        assert!(!staged.contains(&never), "{never} staged: {staged:?}");
    }
    assert!(
        staged.iter().all(|f| !f.starts_with(&format!("{other}/"))),
        "{staged:?}"
    );

    // The commit holds the run's files and nothing else.
    let files = git(root, &["show", "--name-only", "--format=", "HEAD"]);
    let mut files: Vec<&str> = files.lines().filter(|l| !l.is_empty()).collect();
    files.sort();
    assert!(files.contains(&"src/health.rs"), "{files:?}");
    for f in &files {
        assert!(
            *f == "src/health.rs" || f.starts_with(&format!("{ws}/")),
            "{f} is not the run's: {files:?}"
        );
        assert!(
            !f.ends_with(".state.lock") && !f.ends_with(".state.live.json") && !f.ends_with(".tmp"),
            "{f}"
        );
    }
    // Its state.json is the run's final form, as on disk now.
    let committed = git(root, &["show", &format!("HEAD:{ws}/state.json")]);
    let committed: serde_json::Value = serde_json::from_str(&committed).unwrap();
    assert_eq!(committed["currentPhaseStatus"], "completed");
    assert!(!repo.ws_dir(&ws).join(".state.live.json").exists());
    assert_eq!(
        std::fs::read_to_string(repo.ws_dir(&ws).join("state.json")).unwrap(),
        git(root, &["show", &format!("HEAD:{ws}/state.json")])
    );
    // `git status` shows nothing of the run: only what was there before, the
    // excluded secret, and the other workspace.
    let status = git(root, &["status", "--porcelain", "--untracked-files=all"]);
    for line in status.lines() {
        let path = &line[3..];
        assert!(
            path == "notes.txt"
                || path == "README.md"
                || path == ".env"
                || path.starts_with(&format!("{other}/")),
            "the run left {line:?} behind:\n{status}"
        );
    }
    // The push reached the remote.
    let head = git(root, &["rev-parse", "HEAD"]);
    let remote_head = git(&remote_git, &["rev-parse", "HEAD"]);
    assert_eq!(head, remote_head);
    assert!(git(&remote_git, &["log", "--format=%s", "-1"]).contains("health endpoint"));
    c.close().await;
}

/// A person can let a secret-looking file in: it is committed then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_can_allow_a_secret_looking_file() {
    let repo = git_repo();
    let root = repo.path();
    std::fs::write(root.join("README.md"), "# Project\n").unwrap();
    git(root, &["add", "README.md"]);
    git(root, &["commit", "-q", "-m", "initial"]);
    let c = spawn(root, &[], &[]).await;
    let ws = create(&c, "add an example environment file", "S", "--nopr").await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    for _ in 0..60 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["type"] == "done" {
            break;
        }
        if a["type"] == "spawn_agent" && a["phase"] == "phase-5" {
            std::fs::write(root.join(".env.example"), "DATABASE_URL=\n").unwrap();
        }
        if a["type"] == "checkpoint" {
            let answer = if a["name"] == "final-commit-secret-files" {
                assert!(
                    a["present_to_user"]
                        .as_str()
                        .unwrap()
                        .contains(".env.example")
                );
                "include"
            } else {
                "proceed"
            };
            person_answer(root, &ws, answer);
            args = json!({"workspace": ws});
            continue;
        }
        args = perform(root, &ws, &a, &mut script, &mut answers);
    }
    let files = git(root, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.lines().any(|l| l == ".env.example"), "{files}");
    assert_eq!(repo.state(&ws)["commitAllowed"], json!([".env.example"]));
    assert!(git(root, &["status", "--porcelain"]).trim().is_empty());
    c.close().await;
}

/// A run's baseline (what the repository held before it) is read off the
/// confirmation's reply path and is in `state.json` before the run hands
/// out its first action, even when the server that confirmed the run died
/// right after writing its state (its read never reached the state): the
/// next server reads it before the first action, and the run's commit
/// leaves out what was dirty before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_baseline_is_read_before_its_first_action_even_when_its_server_died() {
    let repo = git_repo();
    let root = repo.path();
    std::fs::write(root.join("README.md"), "# Project\n").unwrap();
    git(root, &["add", "README.md"]);
    git(root, &["commit", "-q", "-m", "initial"]);
    std::fs::write(root.join("notes.txt"), "mine, before the run\n").unwrap();
    let c = spawn(root, &[], &[]).await;
    let init = c
        .ok(
            "pipeline_init",
            json!({"arguments": "add a health endpoint --nopr"}),
        )
        .await;
    c.close().await;
    // Dies right after the confirmation's second write (request.md, then
    // state.json), before its baseline read is handed over.
    let dying = spawn(
        root,
        &["--no-transcript"],
        &[("BATON_CRASH_AFTER_WRITES", "2")],
    )
    .await;
    dying
        .call_dying(
            "pipeline_init_with_context",
            json!({"workspace": init["workspace"], "task_text": "add a health endpoint",
                   "flags": init["flags"],
                   "user_confirmation": {"effort": "S", "use_current_branch": true}}),
        )
        .await;
    let ws = std::fs::read_dir(repo.specs())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().join("state.json").is_file())
        .map(|e| format!(".specs/{}", e.file_name().to_string_lossy()))
        .expect("the confirmation wrote the run's state");
    assert_eq!(repo.state(&ws)["repoBaseline"]["pending"], true);

    let c = spawn(root, &[], &[]).await;
    let mut script = Script::default();
    let mut answers = VecDeque::new();
    let mut args = json!({"workspace": ws});
    let mut spawned = Vec::new();
    for _ in 0..60 {
        let a = c.ok("pipeline_next_action", args.clone()).await;
        if a["type"] == "done" {
            break;
        }
        if a["type"] == "spawn_agent" {
            spawned.push(a["phase"].as_str().unwrap().to_string());
        }
        if spawned.len() == 1 && a["type"] == "spawn_agent" {
            // The run's first action: its baseline was read before it.
            let baseline = repo.state(&ws)["repoBaseline"].clone();
            assert_eq!(baseline.get("pending"), None, "{baseline}");
            let dirty: Vec<&str> = baseline["dirty"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect();
            assert!(dirty.contains(&"notes.txt"), "{dirty:?}");
            assert!(dirty.iter().all(|p| !p.starts_with(&format!("{ws}/"))));
        }
        if a["type"] == "spawn_agent" && a["phase"] == "phase-5" {
            std::fs::create_dir_all(root.join("src")).unwrap();
            std::fs::write(root.join("src/health.rs"), "pub fn health() {}\n").unwrap();
        }
        if a["type"] == "checkpoint" || a["type"] == "human_gate" {
            person_answer(root, &ws, "proceed");
            args = json!({"workspace": ws});
            continue;
        }
        args = perform(root, &ws, &a, &mut script, &mut answers);
    }
    assert!(spawned.contains(&"phase-5".to_string()), "{spawned:?}");
    let files = git(root, &["show", "--name-only", "--format=", "HEAD"]);
    let files: Vec<&str> = files.lines().filter(|l| !l.is_empty()).collect();
    assert!(files.contains(&"src/health.rs"), "{files:?}");
    assert!(
        !files.contains(&"notes.txt"),
        "notes.txt committed: {files:?}"
    );
    c.close().await;
}
