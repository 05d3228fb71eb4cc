//! A person's choice to turn the hooks' enforcement off (or on again) for
//! one run (`baton enforce`), recorded in the run's `state.json`.

use chrono::Utc;
use serde_json::Value;

use baton_state::{Actor, WorkspaceState};

use crate::Services;

/// Whether a person turned enforcement off for this run
/// (`state.json` key `hooks`, written by `baton hooks off`).
pub fn enforcement_off(state: &WorkspaceState) -> bool {
    state
        .extra
        .get(ENFORCEMENT_KEY)
        .and_then(|v| v.get("off"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The `state.json` key that records a person's choice about enforcement.
pub const ENFORCEMENT_KEY: &str = "hooks";

/// What `baton enforce` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// The run.
    pub workspace: String,
    /// Whether the hooks enforce its scope now.
    pub on: bool,
    /// Who chose, e.g. `person:terminal`.
    pub by: String,
}

/// Turns the hooks' enforcement off (or on again) for one run, as `by` (a
/// person's channel; the adapter checks it is one). Recorded in the run's
/// `state.json` (key [`ENFORCEMENT_KEY`]: `off`, `by`, `at`, `reason`), so
/// it is in the run's commit and `baton show`.
pub fn set_enforcement(
    svc: &Services,
    workspace: &str,
    on: bool,
    reason: Option<&str>,
    by: &Actor,
) -> crate::Result<Enforcement> {
    crate::validate::check_text("workspace", workspace, 1024)?;
    if let Some(r) = reason {
        crate::validate::check_text("reason", r, 2000)?;
    }
    let ws = svc.store.resolve(workspace)?;
    let now = Utc::now();
    let label = by.label();
    svc.store.update(&ws, now, |state| {
        let mut record = serde_json::json!({
            "off": !on,
            "by": label,
            "at": now.to_rfc3339(),
        });
        if let Some(r) = reason {
            record["reason"] = Value::String(r.to_string());
        }
        state.extra.insert(ENFORCEMENT_KEY.to_string(), record);
        Ok::<_, crate::Error>(())
    })?;
    Ok(Enforcement {
        workspace: ws.display,
        on,
        by: label,
    })
}
