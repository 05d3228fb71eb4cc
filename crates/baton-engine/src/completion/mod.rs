//! May this phase complete? Every rule a phase's completion answers to, one
//! question per module, and the one gatekeeper that applies them on every
//! path that completes a phase (the pipeline loop, `pipeline_report_result`,
//! the recovery tools, `completePhase`).
//!
//! * [`gate`] — the one gatekeeper ([`check_completion`]).
//! * [`artifacts`] — does each artifact pass its rule?
//! * [`freshness`] — was it written during this visit?
//! * [`verdict`] — what does a review say (the one verdict parser)?
//! * [`tasks`] — is every task of a phase worked through tasks done?
//! * [`evidence`] — does a phase report (`completePhase`) account for the
//!   phase's tasks, criteria, verdict and artifacts?
//! * [`guards`] — may a standalone lifecycle tool go ahead?

pub mod artifacts;
pub mod evidence;
pub mod freshness;
pub mod gate;
pub mod guards;
pub mod tasks;
pub mod verdict;

pub use gate::check_completion;
pub use guards::GuardViolation;
