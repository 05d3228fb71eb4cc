//! What a run held because its state changed outside baton records: the
//! tamper note and the hold itself ([`hold_found`]), written by the store's
//! change that found it (`baton_state::witness`) and by the compare after
//! an agent's command (`hooks::outside`). A module of its own so that the
//! services can hand it to the store without importing the hooks.

use chrono::Utc;

use baton_state::witness::OutsideChange;
use baton_state::{Hold, TamperNote, WorkspaceRef, WorkspaceState};

/// The stable code of a run held because its state changed outside baton.
pub const CODE: &str = "state_changed_outside_baton";

/// What any change of baton's does first when it finds the state changed
/// outside baton (`StateStore::with_on_outside`; the store has put back
/// what baton last wrote when its journal had it): the run is held, with
/// a tamper note. A hold already there stays.
pub fn hold_found(
    ws: &WorkspaceRef,
    state: &mut WorkspaceState,
    found: &OutsideChange,
    now: chrono::DateTime<Utc>,
) {
    let message = format!(
        "{} of run {} changed outside baton; {}. The run is held until a person checks it and runs `baton enforce release {}` in their terminal.",
        found.files.join(" and "),
        ws.display,
        if found.put_back {
            "baton put back the state it last wrote (what was written is not counted)"
        } else {
            "baton could not put back the state it last wrote (its journal does not have it): check the run's answers and phase"
        },
        ws.display
    );
    state.tampering.push(TamperNote {
        at: now,
        phase: state.current_phase.clone(),
        message: message.clone(),
    });
    if state.hold.is_none() {
        state.hold = Some(Hold {
            code: CODE.to_string(),
            at: now,
            command: String::new(),
            message,
        });
    }
}
