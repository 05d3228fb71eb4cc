//! The team's background work in a long-lived process (a server, the
//! dashboard, the headless driver): other machines' events, history and
//! answers for this machine's runs.

use std::sync::{Arc, Weak};

use baton_events::EventRecord;
use baton_team::{RemoteAnswer, TeamEvent, TeamHistory};

use super::apply_answer::apply_remote_answer;
use super::events::event_view;
use super::history::mirror_history;
use crate::services::Services;

/// How far before its start a process begins to follow the team's events:
/// room for the difference between this machine's clock and the
/// database's (an event is rather shown twice than missed).
const CLOCK_MARGIN_SECS: i64 = 2;

/// Starts the team's background work for a long-lived process (a server,
/// the dashboard, the headless driver): other machines' events reach this
/// process's subscribers (the dashboard's live view), their history
/// records reach the local run history (Layer 4, estimates, stats), and
/// answers given elsewhere for this machine's runs are applied here. Does
/// nothing when team mode is off.
pub fn start_background<S>(shared: &Arc<S>)
where
    S: std::borrow::Borrow<Services> + Send + Sync + 'static,
{
    let svc: &Services = (**shared).borrow();
    let Some(team) = svc.team.get() else {
        return;
    };
    let me = team.machine().id.clone();
    let weak: Weak<S> = Arc::downgrade(shared);
    // Events from now on — from the moment this process starts following,
    // by the database's write time, so an event written while the first
    // query waits for the connection is not skipped (a dashboard open by
    // then shows it). Events written up to two seconds before the start
    // are shown too: room for the clocks of this machine and the database
    // to differ. A
    // subscriber replays recent ones from the log it follows; the team's
    // past is in `baton events`.
    let started = chrono::Utc::now() - chrono::Duration::seconds(CLOCK_MARGIN_SECS);
    let after = team.last_event_id_before(started).unwrap_or(0);
    let bus = Arc::downgrade(&svc.bus);
    let mine = me.clone();
    team.on_events(
        after,
        Arc::new(move |batch: Vec<TeamEvent>| {
            let Some(bus) = bus.upgrade() else { return };
            let records: Vec<EventRecord> = batch
                .into_iter()
                .filter(|e| e.machine.id != mine)
                .filter_map(|e| event_view(e, &mine))
                .map(|v| {
                    let mut r = v.record;
                    r.workspace = v.run;
                    r
                })
                .collect();
            bus.deliver_remote(records);
        }),
    );
    let history_svc = weak.clone();
    team.on_history(Arc::new(move |batch: Vec<TeamHistory>| {
        if let Some(svc) = history_svc.upgrade() {
            mirror_history((*svc).borrow(), batch);
        }
    }));
    team.on_answers(Arc::new(move |a: &RemoteAnswer| match weak.upgrade() {
        Some(svc) => apply_remote_answer((*svc).borrow(), a),
        None => Err("this baton process is ending".into()),
    }));
    team.listen();
}
