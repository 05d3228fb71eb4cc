//! A run without a baseline of the repository gets a safe one.
//!
//! baton records what the repository held when a run started
//! (`repoBaseline`: the commit and every path modified, staged or
//! untracked then), and the run's commit never stages those paths. A run
//! migrated from an older state — the Go server's forge runs, version 1 or
//! 2 — has none, so its commit would stage whatever is untracked when it
//! commits, the person's own files included. Such a run is given a
//! baseline the first time baton steps it: everything dirty or untracked
//! *then* is treated as not the run's (its own workspace excepted), and the
//! baseline says it was taken late. What the run changed before baton met
//! it is left for the person to commit; nothing of theirs is ever staged.

use std::path::Path;

use baton_state::{WorkspaceRef, WorkspaceState};

/// Gives `state` a baseline when it has none (a migrated run), from the
/// repository at `repo` now, leaving the run's own workspace out. Returns
/// whether one was taken. Nothing happens outside a git repository. On a
/// thread that must not wait (a server's protocol thread) the read fails
/// the call instead, having changed nothing ([`crate::git::Refused`]).
pub fn ensure(
    state: &mut WorkspaceState,
    ws: &WorkspaceRef,
    repo: &Path,
) -> Result<bool, crate::git::Refused> {
    if state.repo_baseline.is_some() || state.current_phase_status.is_terminal() {
        return Ok(false);
    }
    if baton_state::fs::refuse_to_wait() {
        return Err(crate::git::Refused);
    }
    let Some(mut baseline) = crate::git::baseline(repo) else {
        return Ok(false);
    };
    let own = format!("{}/", ws.display.trim_end_matches('/'));
    baseline.dirty.retain(|p| !p.starts_with(&own));
    baseline.taken_late = true;
    state.repo_baseline = Some(baseline);
    Ok(true)
}
