//! One run per issue across the team: the claim a start takes in the
//! team database, and letting it go.

use std::time::Duration;

use baton_state::WorkspaceRef;
use baton_team::{ClaimOutcome, IssueClaim, TeamError};

use crate::error::{Error, ErrorCode, Result};
use crate::services::Services;

/// How long a start waits, before it takes the issue's local lock, for
/// the team database to be connected: a process's first call opens it,
/// and the claim must not spend the lock's time connecting (the other
/// starts of the issue wait for that lock).
pub const CONNECT_WAIT: Duration = Duration::from_secs(15);

/// Called before the issue's local lock is taken: waits up to
/// [`CONNECT_WAIT`] for the team database to be connected (at once when
/// team mode is off, the database is connected, or it is known to be
/// away).
pub fn prepare_claim(svc: &Services) {
    if let Some(team) = svc.team.get() {
        let _ = team.wait_connected(CONNECT_WAIT);
    }
}

/// Claims issue `number` for the run about to start in `ws` (called under
/// the issue's local lock, after the local checks). `Ok(Some(claim))`:
/// claimed (release it if the start fails); `Ok(None)`: team mode is off,
/// or the database cannot be reached (the start goes on locally, and the
/// run's first write settles the claim when the database is back: a
/// second active run of the issue is then marked a duplicate). Another
/// machine's active run of the issue is a `conflict` naming its folder and
/// machine. A connected database that does not answer in time is `busy`:
/// nothing starts (going on alone could start a second run of the issue
/// on a team whose database is only slow), and a retry takes the claim if
/// it was stored meanwhile.
pub fn claim_issue(svc: &Services, number: &str, ws: &WorkspaceRef) -> Result<Option<IssueClaim>> {
    let Some(team) = svc.team.get() else {
        return Ok(None);
    };
    let claim = IssueClaim {
        issue: number.to_string(),
        workspace: ws.name.clone(),
        display: ws.display.clone(),
    };
    match team.claim_issue(&claim) {
        Ok(ClaimOutcome::Claimed) => Ok(Some(claim)),
        Ok(ClaimOutcome::Taken { display, machine }) => Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "issue {number} already has an active workflow in {display} on {} (another machine of the team); continue it there, or abandon it before starting again",
                machine.name
            ),
        )
        .with_details(serde_json::json!({
            "workspace": display,
            "machine": {"id": machine.id, "name": machine.name},
        }))),
        Err(e @ TeamError::Timeout { .. }) if team.is_connected() => Err(Error::new(
            ErrorCode::Busy,
            format!(
                "issue {number} was not started: the team database did not confirm that no other machine runs it ({e}); try again in a moment"
            ),
        )),
        Err(e) => {
            tracing::warn!(
                "team: issue {number} starts on this machine without the team's check: {e}"
            );
            Ok(None)
        }
    }
}

/// Lets go of a claim whose run did not start after all.
pub fn release_claim(svc: &Services, claim: &IssueClaim) {
    if let Some(team) = svc.team.get()
        && let Err(e) = team.release_claim(claim)
    {
        tracing::warn!("team: the claim on issue {} stays: {e}", claim.issue);
    }
}
