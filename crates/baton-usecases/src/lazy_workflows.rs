//! Workflow definitions parsed on first use: answering `initialize` and
//! `tools/list` needs none of them, and parsing YAML is a good part of what
//! a process would otherwise do (and keep mapped) at start.

use std::sync::Arc;

use baton_workflow::{Registry, WorkflowDefinition};

/// The workflow definitions of a process, parsed on first use: answering
/// `initialize` and `tools/list` needs none of them, and parsing YAML is a
/// good part of what a process would otherwise do (and map) at start.
pub(crate) struct LoadedWorkflows {
    dir: std::path::PathBuf,
    cell: std::sync::OnceLock<(Registry, Vec<baton_workflow::Diagnostic>)>,
}

impl LoadedWorkflows {
    /// Loads nothing yet; `dir` is the project's definitions folder.
    pub(crate) fn new(dir: std::path::PathBuf) -> Arc<LoadedWorkflows> {
        Arc::new(LoadedWorkflows {
            dir,
            cell: std::sync::OnceLock::new(),
        })
    }

    fn get(&self) -> &(Registry, Vec<baton_workflow::Diagnostic>) {
        self.cell.get_or_init(|| {
            let (registry, report) = baton_workflow::load_registry(&self.dir);
            for problem in &report.errors {
                tracing::warn!("workflow definition skipped: {problem}");
            }
            (registry, report.errors)
        })
    }
}

/// The known workflow definitions ([`Registry`] through `Deref`), loaded on
/// first use.
#[derive(Clone)]
pub struct Workflows(pub(crate) Arc<LoadedWorkflows>);

impl std::ops::Deref for Workflows {
    type Target = Registry;

    fn deref(&self) -> &Registry {
        &self.0.get().0
    }
}

impl std::fmt::Debug for Workflows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflows")
            .field("loaded", &self.0.cell.get().is_some())
            .finish()
    }
}

/// Problems in the project's definition files (`Vec` through `Deref`),
/// found when the definitions are loaded.
#[derive(Clone)]
pub struct WorkflowErrors(pub(crate) Arc<LoadedWorkflows>);

impl std::ops::Deref for WorkflowErrors {
    type Target = Vec<baton_workflow::Diagnostic>;

    fn deref(&self) -> &Vec<baton_workflow::Diagnostic> {
        &self.0.get().1
    }
}

impl std::fmt::Debug for WorkflowErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl baton_history::DefinitionSource for Workflows {
    fn definition(&self, id: &str) -> Option<Arc<WorkflowDefinition>> {
        self.get(id)
    }
}
