//! The workspace folders under the specs root (and its archive folder)
//! and the state read from each.

use std::path::{Path, PathBuf};

use baton_state::WorkspaceState;

/// The folder `workflow_archive` moves ended runs into, under the specs root.
pub const ARCHIVE_DIR: &str = "archive";

/// The workspace folders under `root` (not hidden ones), then those of its
/// archive folder (`archive/<name>`): an archived run stays in the history
/// when it is rebuilt.
pub(super) fn workspace_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = child_dirs(root);
    out.retain(|(name, _)| name != ARCHIVE_DIR);
    out.extend(child_dirs(&root.join(ARCHIVE_DIR)));
    out
}

/// The sub-folders of `dir` (not hidden ones, not links), sorted by name.
fn child_dirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            (!name.starts_with('.')).then(|| (name, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Reads and migrates a workspace's state: `state.json`, or while the run's
/// final form is sealed into it before its commit, the live state beside it
/// (the run is still going then, whatever `state.json` says).
pub(super) fn read_state(dir: &Path) -> Result<WorkspaceState, String> {
    let live = dir.join(baton_state::store::LIVE_STATE_FILE);
    let path = if std::fs::symlink_metadata(&live).is_ok_and(|m| m.file_type().is_file()) {
        live
    } else {
        dir.join(baton_state::store::STATE_FILE)
    };
    // Never through a link, never a FIFO or device, never too large.
    let text = baton_fs::read_string_nofollow(&path, baton_state::store::MAX_STATE_BYTES)
        .map_err(|e| e.to_string())?;
    WorkspaceState::from_json(&text).map_err(|e| e.to_string())
}
