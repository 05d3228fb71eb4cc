//! What one step of the run reads besides its state: the definition, the
//! workspace's files, the instant, the person's own settings, and the
//! repository's status when a step needs it (read at most once per call).

use chrono::Utc;

use baton_engine::plan::commit::RepoStatus;
use baton_state::WorkspaceRef;
use baton_workflow::WorkflowDefinition;

use crate::error::{Error, ErrorCode, Result};
use crate::files::DiskFiles;
use crate::services::Services;

/// What one step reads besides the state.
pub(crate) struct StepContext<'a> {
    pub(crate) def: &'a WorkflowDefinition,
    pub(crate) files: &'a DiskFiles,
    pub(crate) ws: &'a WorkspaceRef,
    pub(crate) now: chrono::DateTime<Utc>,
    /// The repository root, for `git status` when a step needs it.
    pub(crate) repo_root: &'a std::path::Path,
    /// The person's own settings: who counts as them, where `--auto` is
    /// allowed (`crate::trust`).
    pub(crate) person: &'a baton_config::PersonSettings,
    /// The repository's status, read at most once per call, when a step
    /// needs it (the run's commit).
    pub(crate) repo: std::cell::OnceCell<Option<RepoStatus>>,
}

impl<'a> StepContext<'a> {
    /// The context of a step of the run in `ws` at `now`.
    pub(crate) fn new(
        svc: &'a Services,
        def: &'a WorkflowDefinition,
        files: &'a DiskFiles,
        ws: &'a WorkspaceRef,
        now: chrono::DateTime<Utc>,
    ) -> StepContext<'a> {
        StepContext {
            def,
            files,
            ws,
            now,
            repo_root: &svc.config.repo_root,
            person: svc.person(),
            repo: std::cell::OnceCell::new(),
        }
    }

    pub(crate) fn repo_status(&self) -> Option<&RepoStatus> {
        self.repo.get().and_then(|r| r.as_ref())
    }

    /// Reads the repository's status for a step that needs it.
    /// On a thread that must not wait (`crate::git::Refused`) it fails
    /// instead, having changed nothing.
    pub(crate) fn read_repo(&self, phase: &str) -> Result<()> {
        if self.repo.get().is_none() && baton_state::fs::refuse_to_wait() {
            return Err(crate::git::Refused.into());
        }
        let status = self.repo.get_or_init(|| crate::git::status(self.repo_root));
        if status.is_none() {
            return Err(Error::new(
                ErrorCode::Blocked,
                format!(
                    "{phase} commits the run's files, but `git status` failed in {}: is it a git repository, and is git installed?",
                    self.repo_root.display()
                ),
            ));
        }
        Ok(())
    }
}
