//! Workflow definitions as data.
//!
//! A [`WorkflowDefinition`] is an ordered list of phases with their kind,
//! required artifacts and skip rules. Every workflow baton runs — the seed
//! pipeline (`forge`) included — is such a definition; the engine and the
//! state store read them, nothing hard-codes a phase list.
//!
//! Two phase ids are reserved and never appear in a definition: [`SETUP`]
//! (the implicit first phase, completed when a workspace is created) and
//! [`COMPLETED`] (the terminal position after the last phase).

#![warn(missing_docs)]

pub mod agents;
mod discovery;
mod model;
mod registry;
pub mod rules;
pub mod scope;
pub mod validate;

pub use discovery::{LoadReport, load_registry, read_definition_file};
pub use model::{
    AgentVariant, Answerer, CommandSource, CommandStep, Condition, Driver, GuardedCommand, PerTask,
    PhaseDefinition, PhaseInstruction, PhaseKind, ResultKind, RevisionCounter, TransitionRule,
    WorkflowDefinition,
};
pub use registry::{DefinitionError, Registry, Source, parse};
pub use rules::{ArtifactRule, DEFAULT_TASK_LIST, VERDICT_WORDS};
pub use scope::{
    CONTROL_FILES, DEFAULT_PROTECTED, PhaseScope, PhaseScopeEntry, ScopeTable, WriteScope,
};
pub use validate::{Diagnostic, parse_definition};

/// The implicit first phase, completed at workspace creation.
pub const SETUP: &str = "setup";
/// The terminal position after the last phase.
pub const COMPLETED: &str = "completed";
