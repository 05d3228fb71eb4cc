//! The service: the state shared by the tools — the corpus behind a lock,
//! freshness (watcher, sweeps, damaged segments), traces, the result
//! cache, the scan fallback's memory, the thesaurus and the configuration
//! (`baton-config`). The tools are methods on it, one layer up.

pub(crate) mod cache;
pub(crate) mod memory;
pub(crate) mod read_progress;
pub(crate) mod state;
pub(crate) mod trace;
