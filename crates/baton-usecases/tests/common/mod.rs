//! What the use-case tests share: services over a temporary repository,
//! quiet (no fsync, no transcript), with or without an event log on disk.

#![allow(dead_code, reason = "each test binary uses its own part")]

use std::path::Path;
use std::sync::Arc;

use baton_config::{Config, EnvSource, Overrides};
use baton_events::EventBus;
use baton_usecases::Services;

/// The environment of every use-case test: no fsync, no transcript.
struct QuietEnv;

impl EnvSource for QuietEnv {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "BATON_FSYNC" | "BATON_TRANSCRIPT" => Some("off".into()),
            _ => None,
        }
    }
}

fn config(root: &Path) -> Config {
    Config::resolve(
        root,
        &QuietEnv,
        &Overrides {
            repo_root: Some(root.to_path_buf()),
            ..Overrides::default()
        },
    )
    .unwrap()
}

/// Services over the repository `root`, their events in its event log.
pub fn services(root: &Path) -> Services {
    let config = config(root);
    let log = baton_events::EventLog::open(&config.events.log_path, 1 << 30, 1).unwrap();
    Services::new(config, Arc::new(EventBus::with_log(log)), "test")
}

/// Services over the repository `root`, their events kept in memory.
pub fn services_in_memory(root: &Path) -> Services {
    Services::new(config(root), Arc::new(EventBus::in_memory()), "test")
}
