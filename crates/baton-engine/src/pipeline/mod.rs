//! The seed pipeline's inputs (seeds 001/000): initialisation (input parsing
//! and source detection, effort detection, slugs and branch names), the
//! task list (tasks.md) and the 4-layer prompt of a spawned agent.

pub mod init;
pub mod prompt;
pub mod tasks;
