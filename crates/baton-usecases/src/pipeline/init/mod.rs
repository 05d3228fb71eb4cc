//! Starting a seed pipeline (seeds 001/000): `pipeline_init` and
//! `pipeline_init_with_context`. `pipeline_init` is pure detection (nothing
//! written); the confirmation flow's last call creates the workspace. Field
//! names follow seed 001 exactly.
//!
//! * [`types`] — the arguments and replies.
//! * `detect` — `pipeline_init`.
//! * `confirm` — `pipeline_init_with_context`.

mod confirm;
mod detect;
pub mod types;

pub use confirm::pipeline_init_with_context;
pub use detect::pipeline_init;
pub use types::{
    EffortOption, FetchNeeded, InitArgs, InitReply, InitWithContextArgs, InitWithContextReply,
    NeedsConfirmation, NeedsDiscussion, SkippedPhase, UserConfirmation,
};
