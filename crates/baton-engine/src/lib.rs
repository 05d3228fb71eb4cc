//! The engine: pure decisions over (state, workflow definition, a read-only
//! view of the workspace's files). No I/O, no clock, deterministic.
//!
//! * [`guards`] — may this lifecycle call go ahead (seed 003 path 2 guards)?
//! * [`summary`] — read-only views of a workspace: resume info, list rows.

pub mod guards;
pub mod summary;

/// A read-only view of the files in one workspace folder.
///
/// The handler implements it over the real folder; tests use a set of names.
pub trait WorkspaceFiles {
    /// Whether `relative` (a path inside the workspace) is a regular, non-empty file.
    fn is_nonempty_file(&self, relative: &str) -> bool;
}

impl WorkspaceFiles for std::collections::BTreeSet<String> {
    fn is_nonempty_file(&self, relative: &str) -> bool {
        self.contains(relative)
    }
}
