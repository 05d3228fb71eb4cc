//! What every handler needs: configuration, the state store, the workflow
//! registry and the event bus. Built once per process; cheap to share.

use std::sync::Arc;

use baton_config::Config;
use baton_events::{EventBus, EventRecord};
use baton_state::{StateStore, WorkspaceRef, WorkspaceState};
use baton_workflow::{Registry, WorkflowDefinition};

use crate::error::{ErrorCode, ToolError};

/// The workflow definitions of a process, parsed on first use: answering
/// `initialize` and `tools/list` needs none of them, and parsing YAML is a
/// good part of what a process would otherwise do (and map) at start.
struct LoadedWorkflows {
    dir: std::path::PathBuf,
    cell: std::sync::OnceLock<(Registry, Vec<baton_workflow::Diagnostic>)>,
}

impl LoadedWorkflows {
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
pub struct Workflows(Arc<LoadedWorkflows>);

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
pub struct WorkflowErrors(Arc<LoadedWorkflows>);

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

/// Shared handler context.
#[derive(Debug)]
pub struct AppContext {
    /// The resolved configuration.
    pub config: Config,
    /// The state store over the specs root.
    pub store: StateStore,
    /// Known workflow definitions: built-ins plus the project's folder,
    /// loaded on first use (a `Registry` through `Deref`).
    pub workflows: Workflows,
    /// Problems found in project definition files (those files are skipped),
    /// found when the definitions are loaded (a `Vec` through `Deref`).
    pub workflow_errors: WorkflowErrors,
    /// Where events go.
    pub bus: Arc<EventBus>,
    /// This build's version.
    pub version: &'static str,
    /// The manual search service, opened on first use (it may index).
    manuals: std::sync::OnceLock<Result<Arc<baton_manuals::ManualService>, ToolError>>,
}

impl AppContext {
    /// Builds the context for `config` with the built-in workflows.
    pub fn new(config: Config, bus: Arc<EventBus>) -> AppContext {
        let store =
            StateStore::new(&config.repo_root, &config.specs_root).with_durability(config.fsync);
        let loaded = Arc::new(LoadedWorkflows {
            dir: config.workflows_dir.clone(),
            cell: std::sync::OnceLock::new(),
        });
        AppContext {
            config,
            store,
            workflows: Workflows(Arc::clone(&loaded)),
            workflow_errors: WorkflowErrors(loaded),
            bus,
            version: env!("CARGO_PKG_VERSION"),
            manuals: std::sync::OnceLock::new(),
        }
    }

    /// The manual service (seed 002), opened on first use with the
    /// `MANUALS_ROOT`… environment resolved against the repository root.
    pub fn manuals(&self) -> Result<Arc<baton_manuals::ManualService>, ToolError> {
        self.manuals
            .get_or_init(|| {
                let config = baton_manuals::ManualConfig::from_env(&self.config.repo_root);
                let service = baton_manuals::ManualService::open(config)?;
                for warning in service.startup_warnings() {
                    tracing::warn!("manuals: {warning}");
                }
                Ok(Arc::new(service))
            })
            .clone()
    }

    /// The definition with `id`, or `not_found`.
    pub fn workflow(&self, id: &str) -> Result<Arc<WorkflowDefinition>, ToolError> {
        self.workflows.get(id).ok_or_else(|| {
            let known: Vec<String> = self.workflows.iter().map(|(d, _)| d.id.clone()).collect();
            ToolError::new(ErrorCode::NotFound, format!("unknown workflow {id:?}"))
                .with_details(serde_json::json!({ "known": known }))
        })
    }

    /// Publishes events after a successful mutation. A failing event-log write
    /// is reported on stderr and never turns a successful call into a failure.
    pub fn publish(&self, events: Vec<EventRecord>) {
        for event in events {
            if let Err(e) = self.bus.publish(event) {
                tracing::warn!("event not logged: {e}");
            }
        }
    }

    /// Builds an event record for `ws`.
    pub fn event(
        &self,
        kind: baton_events::EventKind,
        phase: &str,
        ws: &WorkspaceRef,
        state: &WorkspaceState,
    ) -> EventRecord {
        EventRecord::new(kind, phase, &state.spec_name, &ws.display)
    }
}
