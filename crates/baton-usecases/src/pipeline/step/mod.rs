//! The step loop under the pipeline's use cases: what one call does to a
//! run inside its locked write. Nothing here imports the use cases above it
//! (`next`, `answer`, `report`) or shapes a reply.
//!
//! * [`run`] — the loop: internal steps until the next action.
//! * [`context`] — what a step reads besides the state.
//! * [`answers`] — applying an answer, whoever gives it.
//! * [`report`] — applying a report of the current phase.
//! * [`ids`] — action ids (a resent report is applied once).
//! * [`seal`] — the run's final form before its commit.

pub(crate) mod answers;
pub(crate) mod context;
pub(crate) mod ids;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod seal;
