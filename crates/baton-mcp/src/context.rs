//! What every handler needs: the use-case [`Services`] (configuration, state
//! store, workflow registry, event bus, run history, manual search).
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
        }
    }

    /// A context over already built services.
    pub fn with_services(services: Services) -> AppContext {
        AppContext { services }
    }

    /// The manual service (seed 002), opened on first use with the
    /// `MANUALS_ROOT`… configuration resolved against the repository root;
    /// the same one the use cases search for prompt references.
    pub fn manuals(&self) -> Result<Arc<baton_manuals::ManualService>, ToolError> {
        self.services
            .manuals
            .service(&self.services.config)
            .map_err(manual_error)
    }
}
