//! Where runs run: this machine in the team's views, the ids other
//! machines' runs have here, and `baton team status`.

use std::time::Duration;

use baton_state::WorkspaceRef;
use baton_team::MachineRef;
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::Result;
use crate::services::Services;

/// Where a run runs, in the team's views.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineView {
    /// The working copy's id in the team.
    pub id: String,
    /// Its readable name (`host:folder`).
    pub name: String,
    /// Whether it is the machine asking.
    pub this_machine: bool,
}

impl MachineView {
    pub(crate) fn of(m: &MachineRef, me: &str) -> MachineView {
        MachineView {
            id: m.id.clone(),
            name: m.name.clone(),
            this_machine: m.id == me,
        }
    }
}

/// This machine, when team mode is on.
pub fn this_machine(svc: &Services) -> Option<MachineView> {
    let team = svc.team.get()?;
    Some(MachineView::of(&team.machine_ref(), &team.machine().id))
}

/// The id other machines' runs have in this machine's views:
/// `<folder>@<first 8 characters of the machine id>`. Local folder names
/// cannot hold `@`, so the two never meet.
pub fn remote_id(workspace: &str, machine_id: &str) -> String {
    format!("{workspace}@{}", machine_id.get(..8).unwrap_or(machine_id))
}

/// Splits a remote id into folder and machine-id prefix.
pub fn split_remote_id(id: &str) -> Option<(&str, &str)> {
    let (folder, machine) = id.rsplit_once('@')?;
    (!folder.is_empty() && !machine.is_empty() && !machine.contains('/'))
        .then_some((folder, machine))
}

/// Whether `id` names a run of another machine (`folder@machine`).
pub fn is_remote_id(id: &str) -> bool {
    split_remote_id(id).is_some()
}

/// How long `baton team status` waits for the database to answer.
pub const STATUS_WAIT: Duration = Duration::from_secs(5);

/// Team mode's state for a person (`baton team status`): this working
/// copy, the database (password hidden), the schema versions, writes
/// waiting, how other machines' events arrive, and the problem if any.
/// `Ok(None)`: team mode is off.
pub fn status(svc: &Services) -> Result<Option<baton_team::TeamStatus>> {
    let Some(team) = svc.team.usable()? else {
        return Ok(None);
    };
    // The first connection attempt decides what there is to say.
    let _ = team.wait_connected(STATUS_WAIT);
    Ok(Some(team.status()))
}

/// This machine's run named `run` (a folder or workspace), when it has one
/// (never for another machine's run id).
pub(crate) fn find_local(svc: &Services, run: &str) -> Result<Option<WorkspaceRef>> {
    if is_remote_id(run) {
        return Ok(None);
    }
    let ws = svc.store.resolve(run)?;
    Ok(ws.state_file().exists().then_some(ws))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_ids_never_meet_local_folders() {
        let id = remote_id("20261126-fix-login", "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809");
        assert_eq!(id, "20261126-fix-login@1a2b3c4d");
        assert_eq!(
            split_remote_id(&id),
            Some(("20261126-fix-login", "1a2b3c4d"))
        );
        assert!(is_remote_id(&id));
        for local in [
            "20261126-fix-login",
            ".specs/20261126-fix-login",
            "/abs/path/x",
        ] {
            assert!(!is_remote_id(local), "{local}");
        }
        assert!(split_remote_id("@abc").is_none());
        assert!(split_remote_id("x@").is_none());
        assert!(split_remote_id("x@a/b").is_none());
    }
}
