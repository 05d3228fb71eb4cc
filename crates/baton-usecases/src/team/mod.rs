//! Team mode in the use cases (docs/team.md): what a state write sends to
//! the team database, one run per issue across machines, the team's runs
//! and events for the views, other machines' run history for Layer 4, and
//! a person's answer given on one machine for a run of another.
//!
//! Off unless `BATON_DATABASE_URL` (or `[team] database_url`) is set:
//! then [`TeamLink::get`] is `None` without having done anything, and
//! every function here returns at once. On, the database is opened on
//! first use (never on a process's start path).
//!
//! The run's own machine is the authority on its run: its files are
//! written first, under the run's lock, and the database follows (through
//! the on-disk outbox, so nothing is lost while it is away). Another
//! machine only reads a run, or asks its machine to apply a person's
//! answer there, through the same answer use case.
//!
//! * [`link`] — the handle in `Services` (knows nothing of the use cases).
//! * [`machine`] — this machine in the views, other machines' run ids,
//!   `baton team status`.
//! * [`write`] — the team side of `after_write`.
//! * [`claims`] — one run per issue across the team.
//! * [`remote`] — other machines' runs for the views.
//! * [`events`] — the team's events.
//! * [`history`] — other machines' run history in this machine's.
//! * [`remote_answer`] — a person's answer here for a run elsewhere.
//! * [`apply_answer`] — an answer from elsewhere for a run here.
//! * [`background`] — what a long-lived process listens for.

pub mod apply_answer;
pub mod background;
pub mod claims;
pub mod events;
pub mod history;
pub mod link;
pub mod machine;
pub mod remote;
pub mod remote_answer;
pub mod write;

pub use apply_answer::apply_remote_answer;
pub use background::start_background;
pub use claims::{CONNECT_WAIT, claim_issue, prepare_claim, release_claim};
pub use events::{TeamEventView, events_after, follow_events, last_events, log_position};
pub use history::{resync_history, sync_history, sync_history_for_prompt};
pub use link::TeamLink;
pub use machine::{
    MachineView, STATUS_WAIT, is_remote_id, remote_id, split_remote_id, status, this_machine,
};
pub use remote::{
    OtherRuns, RemoteRun, find_remote, other_runs_page, remote_for, remote_next_step,
    remote_summary,
};
pub use remote_answer::{ANSWER_WAIT, CROSSING_CHANNELS, answer_remote, remote_actor};
pub use write::{record_write, run_write};
