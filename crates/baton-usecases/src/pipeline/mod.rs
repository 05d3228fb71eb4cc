//! The seed pipeline (seeds 001/000/003) as use cases, each over the step
//! loop underneath:
//!
//! * [`init`] — `pipeline_init` and `pipeline_init_with_context`.
//! * [`next`] — `pipeline_next_action`: the loop's call.
//! * [`answer`] — answering the question a run waits at (any channel), and
//!   reading it; [`answer_reply`] — what an answer takes and gives back.
//! * [`report`] — `pipeline_report_result`.
//! * [`action`] — the typed actions the loop hands out.
//! * [`usage`] — what each agent's client reported (`previous_usage`).
//! * [`manual_refs`] — the manual sections a spawned agent's prompt lists.
//! * `stale` — the check a report's action id passes (stale, or the run
//!   ended).
//! * `reply` — shaping a step's plan into the reply (prompts included).
//! * `step` — the step loop itself (internal; imports nothing above it).

pub mod action;
pub mod answer;
pub mod answer_reply;
pub mod init;
pub mod manual_refs;
pub mod next;
mod reply;
pub mod report;
mod stale;
pub(crate) mod step;
pub mod usage;
