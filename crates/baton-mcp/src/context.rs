//! What every handler needs: the use-case [`Services`] (configuration, state
//! store, workflow registry, event bus) plus the manual search service.
//! Built once per process; cheap to share. Derefs to [`Services`], so a
//! handler passes `ctx` straight to a use case.

use std::sync::Arc;

use baton_config::Config;
use baton_events::EventBus;
use baton_usecases::Services;

use crate::error::{ToolError, manual_error};

/// Shared handler context.
#[derive(Debug)]
pub struct AppContext {
    /// The use cases' services.
    pub services: Services,
    /// The manual search service, opened on first use (it may index).
    manuals: std::sync::OnceLock<Result<Arc<baton_manuals::ManualService>, ToolError>>,
}

impl std::ops::Deref for AppContext {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

impl std::borrow::Borrow<Services> for AppContext {
    fn borrow(&self) -> &Services {
        &self.services
    }
}

impl AppContext {
    /// Builds the context for `config` with the built-in workflows.
    pub fn new(config: Config, bus: Arc<EventBus>) -> AppContext {
        AppContext {
            services: Services::new(config, bus, env!("CARGO_PKG_VERSION")),
            manuals: std::sync::OnceLock::new(),
        }
    }

    /// A context over already built services.
    pub fn with_services(services: Services) -> AppContext {
        AppContext {
            services,
            manuals: std::sync::OnceLock::new(),
        }
    }

    /// The manual service (seed 002), opened on first use with the
    /// `MANUALS_ROOT`… environment resolved against the repository root.
    pub fn manuals(&self) -> Result<Arc<baton_manuals::ManualService>, ToolError> {
        self.manuals
            .get_or_init(|| {
                let config = baton_manuals::ManualConfig::from_env(&self.config.repo_root);
                let service = baton_manuals::ManualService::open(config).map_err(manual_error)?;
                for warning in service.startup_warnings() {
                    tracing::warn!("manuals: {warning}");
                }
                Ok(Arc::new(service))
            })
            .clone()
    }
}
