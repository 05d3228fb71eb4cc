//! What baton reads from git (never writes: commits and pushes are actions
//! the agent executes): the repository's status, for the run's commit and
//! for the baseline recorded when a run starts.

use std::path::Path;
use std::process::{Command, Stdio};

use baton_engine::pipeline::commit::{RepoStatus, parse_porcelain};
use baton_state::RepoBaseline;

/// Most paths a baseline keeps (a repository with a huge untracked tree
/// keeps the first ones; the rest are treated as the run's).
pub const MAX_BASELINE_PATHS: usize = 10_000;

fn git(repo: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The paths changed or untracked now (`None` outside a git repository or
/// without git).
pub fn status(repo: &Path) -> Option<RepoStatus> {
    let out = git(
        repo,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    Some(RepoStatus {
        changed: parse_porcelain(&out),
    })
}

/// What the repository holds when a run starts: HEAD and the dirty paths.
pub fn baseline(repo: &Path) -> Option<RepoBaseline> {
    let status = status(repo)?;
    let head = git(repo, &["rev-parse", "--verify", "-q", "HEAD"])
        .map(|o| String::from_utf8_lossy(&o).trim().to_string())
        .filter(|h| !h.is_empty());
    let mut dirty = status.changed;
    dirty.sort();
    dirty.dedup();
    dirty.truncate(MAX_BASELINE_PATHS);
    Some(RepoBaseline {
        head,
        dirty,
        taken_late: false,
    })
}
