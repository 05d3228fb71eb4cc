//! The team's events for `baton events` and the dashboard: every
//! machine's, each with where it happened.

use std::sync::Arc;

use baton_events::EventRecord;
use baton_team::{Team, TeamEvent};
use serde::Serialize;

use super::link::team_error;
use super::machine::{MachineView, find_local, remote_id};
use super::remote::find_remote;
use crate::error::{Error, ErrorCode, Result};
use crate::services::Services;

/// An event of the team's log, with where its run runs.
#[derive(Debug, Clone, Serialize)]
pub struct TeamEventView {
    /// The event as its machine logged it.
    #[serde(flatten)]
    pub record: EventRecord,
    /// Where the run runs.
    pub machine: MachineView,
    /// The run's id in this machine's views (`folder` for this machine's
    /// runs, `folder@machine` for others').
    pub run: String,
    /// Its position in the team's log.
    #[serde(skip)]
    pub id: i64,
}

impl TeamEventView {
    /// Its position in the team's log (for following on from it).
    pub fn position(&self) -> i64 {
        self.id
    }
}

pub(crate) fn event_view(e: TeamEvent, me: &str) -> Option<TeamEventView> {
    let record: EventRecord = serde_json::from_value(e.record).ok()?;
    let folder = e
        .run_key
        .split_once('/')
        .map_or(e.run_key.as_str(), |(_, f)| f);
    let run = if e.machine.id == me {
        folder.to_string()
    } else {
        remote_id(folder, &e.machine.id)
    };
    Some(TeamEventView {
        machine: MachineView::of(&e.machine, me),
        run,
        id: e.id,
        record,
    })
}

/// The team's last `limit` events (oldest first), of one run when `run`
/// is given (a folder of this machine, or `folder@machine`). `Ok(None)`
/// when team mode is off.
pub fn last_events(
    svc: &Services,
    limit: usize,
    run: Option<&str>,
) -> Result<Option<Vec<TeamEventView>>> {
    let Some(team) = svc.team.usable()? else {
        return Ok(None);
    };
    let key = run.map(|r| run_key_of(svc, team, r)).transpose()?;
    let me = team.machine().id.clone();
    let events = team
        .last_events(limit, key.as_deref())
        .map_err(team_error)?;
    Ok(Some(
        events
            .into_iter()
            .filter_map(|e| event_view(e, &me))
            .collect(),
    ))
}

/// The position of the newest event of the team's log (0: none), to
/// follow on from now.
pub fn log_position(svc: &Services) -> Result<Option<i64>> {
    Ok(last_events(svc, 1, None)?.map(|e| e.last().map_or(0, TeamEventView::position)))
}

/// The team's events after position `after` (oldest first).
pub fn events_after(
    svc: &Services,
    after: i64,
    limit: usize,
    run: Option<&str>,
) -> Result<Option<Vec<TeamEventView>>> {
    let Some(team) = svc.team.usable()? else {
        return Ok(None);
    };
    let key = run.map(|r| run_key_of(svc, team, r)).transpose()?;
    let me = team.machine().id.clone();
    let events = team
        .events_after(after, limit, key.as_deref())
        .map_err(team_error)?;
    Ok(Some(
        events
            .into_iter()
            .filter_map(|e| event_view(e, &me))
            .collect(),
    ))
}

/// Follows the team's log from position `after`: hands every new event
/// (of `run` only, when given) to `print` as it arrives — `LISTEN` wakes
/// the reader, which reads the table, so nothing is missed — until `print`
/// returns false. Returns at once (`Ok(false)`) when team mode is off.
pub fn follow_events(
    svc: &Services,
    after: i64,
    run: Option<&str>,
    mut print: impl FnMut(&[TeamEventView]) -> bool,
) -> Result<bool> {
    let Some(team) = svc.team.usable()? else {
        return Ok(false);
    };
    let key = run.map(|r| run_key_of(svc, team, r)).transpose()?;
    let me = team.machine().id.clone();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<TeamEvent>>();
    let tx = std::sync::Mutex::new(tx);
    team.on_events(
        after,
        Arc::new(move |batch| {
            let sender = tx.lock().unwrap_or_else(|p| p.into_inner());
            let _ = sender.send(batch);
        }),
    );
    team.listen();
    for batch in rx {
        let views: Vec<TeamEventView> = batch
            .into_iter()
            .filter(|e| key.as_ref().is_none_or(|k| *k == e.run_key))
            .filter_map(|e| event_view(e, &me))
            .collect();
        if !views.is_empty() && !print(&views) {
            break;
        }
    }
    Ok(true)
}

fn run_key_of(svc: &Services, team: &Team, run: &str) -> Result<String> {
    if let Some(r) = find_local(svc, run)? {
        return Ok(team.run_key(&r.name));
    }
    match find_remote(svc, run)? {
        Some(r) => Ok(r.run.key),
        None => Err(Error::new(
            ErrorCode::NotFound,
            format!(
                "no run {run} on this machine or another machine of the team (baton ls lists them)"
            ),
        )),
    }
}
