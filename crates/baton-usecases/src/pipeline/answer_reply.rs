//! What an answer takes and gives back ([`AnswerArgs`], [`AnswerReply`]):
//! shared by the answer use case and team mode, which passes an answer to
//! the run's own machine and its reply back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of an answer given through a person's channel.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerArgs {
    /// The workspace whose question is answered.
    pub workspace: String,
    /// One of the question's options; `revise: <text>` carries the text to
    /// the agent that revises.
    pub answer: String,
}

/// What an answer did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AnswerReply {
    /// The workspace.
    pub workspace: String,
    /// The question answered.
    pub question: String,
    /// The option taken.
    pub answer: String,
    /// Who answered, e.g. `person:terminal`.
    pub by: String,
    /// The phase the run is at now.
    pub current_phase: String,
    /// Its status.
    pub current_phase_status: String,
    /// What happens next.
    pub next_step: String,
}
