//! The one way a use case finishes a state write ([`Services::after_write`]):
//! record the run in the run history when the write ended it, then publish
//! the events of what happened. Every use case that creates or changes a
//! run's `state.json` calls it right after the store's write succeeded (a
//! refused call writes nothing and reaches nothing here), so whatever must
//! follow a write — a database copy of the run in team mode, say — is added
//! here once and reaches every writer.

use baton_events::EventRecord;
use baton_state::{WorkspaceRef, WorkspaceState};

use crate::Services;
use crate::events::{self, Happened};
use crate::history;

impl Services {
    /// Finishes a state write of the run in `ws`: `state` is the state the
    /// store has just written, `happened` what the write did, in order.
    ///
    /// 1. When the write ended the run (completed or abandoned), the run is
    ///    recorded in the run history — before the events, so a subscriber
    ///    that hears `pipeline-complete` or `abandon` finds the record.
    /// 2. Team mode (off: nothing): the write — the run's row as written,
    ///    its events, its history record — is queued for the team database
    ///    (a file in `.baton/team/outbox/`, sent in the background; the run's
    ///    files stay the authority; docs/team.md "Failure rules").
    /// 3. The events of `happened` (seed 003) are published: appended to
    ///    the repository's event log and broadcast.
    ///
    /// No step fails the call (the write has happened): a record, a queued
    /// write or an event that cannot be written is logged. Returns the wire
    /// names of the events published, in order, for replies that list them.
    pub fn after_write(
        &self,
        ws: &WorkspaceRef,
        state: &WorkspaceState,
        happened: Vec<Happened>,
    ) -> Vec<String> {
        let record = if history::ends_run(history::transitions(&happened)) {
            history::record_ended(self, ws, state)
        } else {
            None
        };
        let records = events::records(self, ws, state, &happened);
        crate::team::record_write(self, ws, state, &records, record.as_ref());
        let names = events::names(&records);
        publish(self, records);
        names
    }
}

/// Publishes the events of a successful write, in order, in one append to
/// the event log. A failing event-log write is reported on stderr and never
/// turns a successful call into a failure.
fn publish(svc: &Services, events: Vec<EventRecord>) {
    if let Err(e) = svc.bus.publish_all(events) {
        tracing::warn!("events not logged: {e}");
    }
}
