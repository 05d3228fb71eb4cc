//! One run per issue across the team: the claim a start takes in the
//! team database, and letting it go.

use baton_state::WorkspaceRef;
use baton_team::{ClaimOutcome, IssueClaim};

use crate::error::{Error, ErrorCode, Result};
use crate::services::Services;

/// Claims issue `number` for the run about to start in `ws` (called under
/// the issue's local lock, after the local checks). `Ok(Some(claim))`:
/// claimed (release it if the start fails); `Ok(None)`: team mode is off,
/// or the database cannot be reached (the start goes on locally, and the
/// run's first write settles the claim when the database is back: a
/// second active run of the issue is then marked a duplicate). Another
/// machine's active run of the issue is a `conflict` naming its folder and
/// machine.
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
