//! `baton demo`: a complete pipeline in a fresh temporary git repository,
//! driven headless with the built-in scripted agent — no LLM, no network.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};

use baton_config::{Config, Overrides};

use crate::driver::{Agent, RunOptions};

fn git(repo: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn demo_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("baton-demo-{}-{nanos}", std::process::id()))
}

/// Creates the demo repository: a tiny project with one commit.
fn make_repo(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(
        dir.join("README.md"),
        "# demo\n\nA tiny project for baton's demo.\n",
    )?;
    std::fs::write(dir.join("src/lib.txt"), "hello\n")?;
    git(dir, &["init", "-q"])?;
    git(dir, &["config", "user.name", "baton demo"])?;
    git(dir, &["config", "user.email", "demo@baton.invalid"])?;
    git(dir, &["config", "commit.gpgsign", "false"])?;
    git(dir, &["add", "--all"])?;
    git(dir, &["commit", "-q", "-m", "initial project"])?;
    Ok(())
}

/// Runs the demo at `effort` (S, M or L).
pub fn run(effort: &str, keep: bool) -> anyhow::Result<ExitCode> {
    let dir = demo_dir();
    make_repo(&dir)?;
    eprintln!("demo repository: {}", dir.display());
    let result = drive(&dir, effort);
    match &result {
        Ok(()) if keep => eprintln!("kept {}", dir.display()),
        _ if keep => eprintln!("kept {} (the run failed)", dir.display()),
        _ => {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    result.map(|()| ExitCode::SUCCESS)
}

fn drive(dir: &Path, effort: &str) -> anyhow::Result<()> {
    let config = Config::load(&Overrides {
        repo_root: Some(dir.to_path_buf()),
        ..Overrides::default()
    })?;
    let svc = baton_usecases::Services::open(config, env!("CARGO_PKG_VERSION"))
        .map_err(|e| anyhow::anyhow!(e.message))?;
    let outcome = crate::driver::run(
        &svc,
        dir,
        &RunOptions {
            text: "Add a greeting feature to the demo project".into(),
            effort: Some(effort.to_string()),
            auto: true,
            nopr: true,
            agent: Agent::Scripted,
            branch: crate::driver::BranchChoice::New,
            budget: baton_config::Budget::default(),
        },
    )?;
    // The repository is removed when this returns: the syncer finishes
    // with it first (a folder sync of a removed folder warned on stderr).
    svc.finish_background();
    println!("{} ({} actions)", outcome.summary, outcome.actions);
    println!("workspace: {}", outcome.workspace);
    let mut artifacts: Vec<String> = std::fs::read_dir(dir.join(&outcome.workspace))?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".md"))
        .collect();
    artifacts.sort();
    println!("artifacts: {}", artifacts.join(", "));
    print!("{}", git(dir, &["log", "--oneline"])?);
    Ok(())
}
