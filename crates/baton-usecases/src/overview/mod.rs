//! Runs at a glance, for people: a paginated list of every run of the
//! repository and one run's whole picture — its workflow's phase graph with
//! where it stands, the task DAG, a timeline, artifacts, durations, tokens
//! and the question it waits at, with the question's full text and options.
//!
//! Read-only: nothing here writes a file or publishes an event. The
//! dashboard (`/api/runs…`), `baton show` and `baton ls` all shape these
//! typed values for their medium.
//!
//! * [`list`] — the paginated list of runs.
//! * [`row`] — one row of it, and the filters over rows.
//! * [`run`] — one run's phases, timeline and question.
//! * [`tasks`] — its tasks.
//! * [`artifacts`] — its artifacts and their text.

pub mod artifacts;
pub mod list;
pub mod row;
pub mod run;
pub mod tasks;

pub use artifacts::{ArtifactRef, ArtifactText, MAX_ARTIFACT_BYTES, artifact};
pub use list::{
    MAX_PAGE, PageArgs, RunCounts, RunIndex, RunPage, UnreadableRun, run_page, run_page_with,
    summary,
};
pub use row::{RunFilter, RunSummary};
pub use run::{
    Integrity, PhaseEdge, PhaseNode, PhaseState, QuestionView, RunActions, RunOverview, RunTotals,
    TimelineEntry, integrity, run_overview,
};
pub use tasks::TaskView;
