//! The project's manuals (seed 002) as the use cases see them: one manual
//! search service per process, opened on first use with the configuration
//! `baton-config` resolves (`MANUALS_ROOT` …), shared by the MCP manual
//! tools and by the prompts that list manual references.

use std::sync::{Arc, OnceLock};

use baton_config::Config;
use baton_manuals::{ManualConfig, ManualError, ManualService};

/// The manual search service, opened on first use.
#[derive(Debug, Default)]
pub struct Manuals {
    service: OnceLock<Result<Arc<ManualService>, ManualError>>,
}

impl Manuals {
    /// The service for the repository of `config` (opened once; opening
    /// indexes nothing: the index is built on the first search).
    pub fn service(&self, config: &Config) -> Result<Arc<ManualService>, ManualError> {
        self.service
            .get_or_init(|| {
                let service = ManualService::open(ManualConfig::from_env(&config.repo_root))?;
                for warning in service.startup_warnings() {
                    tracing::warn!("manuals: {warning}");
                }
                Ok(Arc::new(service))
            })
            .clone()
    }
}
