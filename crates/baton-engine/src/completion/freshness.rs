//! Was an artifact written during this visit of its phase? Not before the
//! phase started, and not left unchanged since the previous visit ended
//! (its fingerprint then is kept in the state).

use baton_state::WorkspaceState;

use super::artifacts::ArtifactCheck;
use crate::{FileInfo, WorkspaceFiles};

/// How far a file's modification time may lag the phase start and still count
/// as written during the phase (file systems stamp with a coarse clock).
pub const STALE_TOLERANCE: chrono_delta::Delta = chrono_delta::MILLIS_50;

mod chrono_delta {
    /// A duration type without naming chrono directly (the engine depends on data crates only).
    pub type Delta = <baton_state::Timestamp as std::ops::Sub>::Output;
    /// 50 milliseconds.
    pub const MILLIS_50: Delta = Delta::milliseconds(50);
}

/// Whether `file` was written during the current run of the phase (its
/// modification time is not before the phase started, within
/// [`STALE_TOLERANCE`]). A file from an earlier visit — a
/// design before its revision, a review of an older design — is not fresh.
/// Unknown times count as fresh.
///
/// A file still identical (same modification time and size) to what it was
/// when the phase's previous visit ended is stale whatever the clock says:
/// it is left over from that visit.
pub fn is_fresh(file: &str, state: &WorkspaceState, files: &dyn WorkspaceFiles) -> bool {
    let info = files.file(file);
    if let (Some(info), Some(mark)) = (info, state.artifact_marks.get(file))
        && fingerprint(&info) == *mark
    {
        return false;
    }
    match (
        info.and_then(|f| f.modified),
        state.timestamps.phase_started,
    ) {
        (Some(modified), Some(started)) => modified + STALE_TOLERANCE >= started,
        _ => true,
    }
}

/// A file's fingerprint: modification time (nanoseconds) and size.
pub fn fingerprint(info: &FileInfo) -> String {
    let nanos = info
        .modified
        .and_then(|m| m.timestamp_nanos_opt())
        .unwrap_or(0);
    format!("{nanos}:{}", info.len)
}

/// Records the fingerprints of `names` as they are now, when a visit ends:
/// the next visit must write them again.
pub fn mark(state: &mut WorkspaceState, files: &dyn WorkspaceFiles, names: &[String]) {
    for name in names {
        match files.file(name) {
            Some(info) => {
                state
                    .artifact_marks
                    .insert(name.clone(), fingerprint(&info));
            }
            None => {
                state.artifact_marks.remove(name);
            }
        }
    }
}

/// Marks the checks of files not written during this run of the phase as
/// invalid (`stale`), so an old review can never pass for a new one.
pub fn require_fresh(
    checks: &mut [ArtifactCheck],
    phase: &str,
    state: &WorkspaceState,
    files: &dyn WorkspaceFiles,
) {
    for check in checks.iter_mut() {
        if check.valid && !is_fresh(&check.file, state, files) {
            check.valid = false;
            check.error = Some(format!(
                "{} was written before this run of {phase} started: it belongs to an earlier revision; write it again",
                check.file
            ));
        }
    }
}
