//! Team mode (issue 21, docs/team.md) against a real PostgreSQL: machines
//! are clones of one origin repository (a bare remote), each with its own
//! baton processes (`baton serve` over MCP, the CLI, the dashboard) and
//! `BATON_DATABASE_URL` pointing at one throwaway database.
//!
//! "Within N s" is checked by waiting up to N s for the condition, never
//! by asserting a measured duration.

// The machine helpers serve every team test; not each uses all of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use baton_testkit::postgres::Postgres;
use serde_json::{Value, json};

use crate::common::{self, Client};

/// A team: one database and one origin repository.
pub struct World {
    pub url: String,
    origin: tempfile::TempDir,
}

/// One machine of the team: a clone of the origin.
pub struct Machine {
    pub dir: PathBuf,
    pub url: String,
}

impl World {
    /// A fresh database on the shared cluster.
    pub fn new() -> World {
        World::on(Postgres::shared())
    }

    /// A fresh database on `pg`.
    pub fn on(pg: &Postgres) -> World {
        let url = pg.fresh_database();
        let origin = tempfile::tempdir().expect("origin folder");
        git(
            origin.path(),
            &["init", "-q", "--bare", "-b", "main", "origin.git"],
        );
        // The origin has one commit, as a real project has.
        let seed = origin.path().join("seed");
        git(origin.path(), &["clone", "-q", "origin.git", "seed"]);
        std::fs::write(seed.join("README.md"), "# team project\n").expect("README");
        git(&seed, &["add", "README.md"]);
        git(&seed, &["commit", "-q", "-m", "initial commit"]);
        git(&seed, &["push", "-q", "origin", "main"]);
        World { url, origin }
    }

    /// A new machine: a clone of the origin in its own folder.
    pub fn machine(&self, name: &str) -> Machine {
        git(self.origin.path(), &["clone", "-q", "origin.git", name]);
        Machine {
            dir: self.origin.path().join(name),
            url: self.url.clone(),
        }
    }
}

pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "baton test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "baton test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Machine {
    /// `baton serve` on this machine, connected over MCP (every tool).
    pub async fn serve(&self) -> Client {
        common::spawn(&self.dir, &[], &[("BATON_DATABASE_URL", self.url.as_str())]).await
    }

    /// Runs the CLI on this machine.
    pub fn cli(&self, args: &[&str]) -> Output {
        std::process::Command::new(common::baton_bin())
            .args(args)
            .current_dir(&self.dir)
            .env("BATON_DATABASE_URL", &self.url)
            .env_remove("BATON_TOOLS")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("baton runs")
    }

    /// `baton ls --json` on this machine.
    pub fn ls(&self) -> Value {
        let out = self.cli(&["ls", "--json"]);
        assert!(
            out.status.success(),
            "baton ls --json failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("ls --json prints JSON")
    }
}

/// Waits up to `wait` for `f` to give a value.
pub fn until<T>(wait: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Done-means 3: four processes on A and four on B start the same issue at
/// once, 20 rounds of fresh issue numbers: exactly one run per issue across
/// both machines, and every other start's error names the winning run's
/// folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_starts_on_two_machines_make_one_run_per_issue() {
    let world = World::new();
    let (a, b) = (world.machine("a"), world.machine("b"));
    let mut clients = Vec::new();
    for m in [&a, &a, &a, &a, &b, &b, &b, &b] {
        clients.push(m.serve().await);
    }
    for round in 0..20 {
        let issue = format!("{}", 4100 + round);
        let calls = clients.iter().map(|c| {
            let issue = issue.clone();
            async move {
                c.call("startIssueWorkflow", json!({"issueNumber": issue}))
                    .await
            }
        });
        let outcomes = futures::future::join_all(calls).await;
        let won: Vec<&Value> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
        assert_eq!(
            won.len(),
            1,
            "round {round}: exactly one start wins: {outcomes:?}"
        );
        let folder = won[0]["workspace"].as_str().expect("workspace").to_string();
        for o in &outcomes {
            if let Err(e) = o {
                assert_eq!(e["code"], "conflict", "round {round}: {e}");
                let message = e["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains(&folder),
                    "round {round}: the error names the winning run's folder {folder}: {message}"
                );
            }
        }
        // One run of the issue on disk across both machines.
        let runs_of = |m: &Machine| {
            std::fs::read_dir(m.dir.join(".specs"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| {
                            e.file_name()
                                .to_string_lossy()
                                .ends_with(&format!("-issue-{issue}"))
                        })
                        .count()
                })
                .unwrap_or(0)
        };
        assert_eq!(runs_of(&a) + runs_of(&b), 1, "round {round}");
    }
    for c in clients {
        c.close().await;
    }
}
