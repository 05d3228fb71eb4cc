//! Runs whose files are not in this checkout: a run's final commit holds
//! its workspace folder, so after a switch to another branch the folder is
//! gone — but the run history (`.specs/.history/`, an ignored folder that
//! stays across checkouts) still has its record, with its branch. `baton
//! ls` lists these runs beside the ones in the checkout, so a run never
//! vanishes from view (docs/history.md).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use crate::Services;

/// An ended run whose folder is not in this checkout.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElsewhereRun {
    /// Its folder (`.specs/<name>`) on its branch.
    pub workspace: String,
    /// `completed` or `abandoned`.
    pub outcome: String,
    /// When it ended.
    pub ended: DateTime<Utc>,
    /// The branch its files are on, when it recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Its request, in one line.
    pub request: String,
}

/// The ended runs of the run history whose folder (with its `state.json`)
/// is not in this checkout, newest first.
pub fn runs_elsewhere(svc: &Services) -> Vec<ElsewhereRun> {
    let specs = svc.store.specs_root();
    let shown = specs
        .strip_prefix(&svc.config.repo_root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| specs.display().to_string());
    svc.history
        .ended_runs()
        .into_iter()
        .filter(|(name, ..)| !specs.join(name).join("state.json").is_file())
        // Team mode: other machines' runs (`folder@host:folder`) are the
        // team's, listed as such, not runs of another branch.
        .filter(|(name, ..)| !name.contains('@'))
        .map(|(name, outcome, ended)| {
            // The index keeps no request text per run (memory stays flat
            // with history size): the few runs shown are read from the file.
            let record = svc.history.get(&name);
            ElsewhereRun {
                branch: record.as_ref().and_then(|r| r.branch.clone()),
                request: record.map(|r| r.request).unwrap_or_default(),
                workspace: format!("{shown}/{name}"),
                outcome: outcome.as_str().to_string(),
                ended,
            }
        })
        .collect()
}
