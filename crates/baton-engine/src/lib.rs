//! The engine: pure decisions over (state, workflow definition, a read-only
//! view of the workspace's files). No I/O, no clock, deterministic; the use
//! cases (`baton-usecases`) read the files and the time and apply what the
//! engine decides in one locked write.
//!
//! * [`plan`] — what does the run do next (the pipeline loop's planner)?
//! * [`completion`] — may this phase complete? (the one gatekeeper, artifact
//!   rules, freshness, the one verdict parser, report evidence, the
//!   lifecycle tools' guards)
//! * [`route`] — where does a run go when a phase reports, within its loop
//!   limits?
//! * [`pipeline`] — the seed pipeline's inputs: initialisation rules,
//!   tasks.md, the 4-layer prompt of a spawned agent.
//! * [`instruction`] — the instruction an agent receives for a phase.
//! * [`summary`] — read-only views of a workspace: resume info, list rows.
//! * [`stats`] — run analytics from the workspaces' history.
//! * [`scope`] — may the agent touch this file, run this command line or
//!   use this tool while a phase runs (the hooks' pure decisions)?

#![warn(missing_docs)]

pub mod completion;
pub mod instruction;
pub mod pipeline;
pub mod plan;
pub mod route;
pub mod scope;
pub mod stats;
pub mod summary;

use baton_state::Timestamp;

/// What the engine may know about one file: its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    /// Size in bytes.
    pub len: u64,
    /// Last modification, when known.
    pub modified: Option<Timestamp>,
}

/// A read-only view of the files in one workspace folder.
///
/// The handler implements it over the real folder; tests use a map.
pub trait WorkspaceFiles {
    /// The regular file at `relative` (a path inside the workspace), if any.
    fn file(&self, relative: &str) -> Option<FileInfo>;

    /// Whether `relative` is a regular, non-empty file.
    fn is_nonempty_file(&self, relative: &str) -> bool {
        self.file(relative).is_some_and(|f| f.len > 0)
    }

    /// The text of `relative`, when readable (views that only know names return `None`).
    fn read(&self, relative: &str) -> Option<String> {
        let _ = relative;
        None
    }
}

impl WorkspaceFiles for std::collections::BTreeMap<String, String> {
    fn file(&self, relative: &str) -> Option<FileInfo> {
        self.get(relative).map(|text| FileInfo {
            len: text.len() as u64,
            modified: None,
        })
    }

    fn read(&self, relative: &str) -> Option<String> {
        self.get(relative).cloned()
    }
}

impl WorkspaceFiles for std::collections::BTreeSet<String> {
    fn file(&self, relative: &str) -> Option<FileInfo> {
        self.contains(relative).then_some(FileInfo {
            len: 1,
            modified: None,
        })
    }
}

impl WorkspaceFiles for std::collections::BTreeMap<String, FileInfo> {
    fn file(&self, relative: &str) -> Option<FileInfo> {
        self.get(relative).copied()
    }
}
