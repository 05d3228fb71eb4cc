//! Bounded waiting for tool calls: blocking work (locks, fsync) runs on a
//! bounded pool, at most a few calls per workspace at once, and a call that
//! cannot get a place in time answers `busy` instead of queueing forever.
//! Other workspaces and `tools/list` (which needs no place) keep answering
//! while one workspace is stuck behind a lock held elsewhere.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ErrorCode, ToolError};

/// Calls that may run at once on one workspace (more wait, bounded).
pub const PER_WORKSPACE: usize = 4;
/// Calls that may run at once in the whole server.
pub const TOTAL: usize = 64;

/// The places for running calls.
#[derive(Debug)]
pub struct Admission {
    total: Arc<Semaphore>,
    per_key: Mutex<HashMap<String, Arc<Semaphore>>>,
    wait: Duration,
}

/// A call's places, released when dropped.
#[derive(Debug)]
pub struct Admitted {
    _total: OwnedSemaphorePermit,
    _key: Option<OwnedSemaphorePermit>,
}

impl Admission {
    /// Places for calls that wait at most `wait` for one.
    pub fn new(wait: Duration) -> Admission {
        Admission {
            total: Arc::new(Semaphore::new(TOTAL)),
            per_key: Mutex::new(HashMap::new()),
            wait,
        }
    }

    /// A place for a call on `key` (the workspace or issue it names), or
    /// `busy` after the wait.
    pub async fn admit(&self, key: Option<&str>) -> Result<Admitted, ToolError> {
        let key_permit = match key {
            Some(k) => {
                let semaphore = {
                    let mut map = self.per_key.lock().unwrap_or_else(|p| p.into_inner());
                    if map.len() > 4096 {
                        // Forget idle workspaces (all their places are free).
                        map.retain(|_, s| s.available_permits() < PER_WORKSPACE);
                    }
                    Arc::clone(
                        map.entry(k.to_string())
                            .or_insert_with(|| Arc::new(Semaphore::new(PER_WORKSPACE))),
                    )
                };
                Some(self.acquire(semaphore, Some(k)).await?)
            }
            None => None,
        };
        let total = self.acquire(Arc::clone(&self.total), key).await?;
        Ok(Admitted {
            _total: total,
            _key: key_permit,
        })
    }

    /// Whether the caller's admitted call is the only call running.
    pub fn alone(&self) -> bool {
        self.total.available_permits() == TOTAL - 1
    }

    async fn acquire(
        &self,
        semaphore: Arc<Semaphore>,
        key: Option<&str>,
    ) -> Result<OwnedSemaphorePermit, ToolError> {
        match tokio::time::timeout(self.wait, semaphore.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(ToolError::new(
                ErrorCode::Busy,
                match key {
                    Some(k) => format!(
                        "{k} is busy: {PER_WORKSPACE} calls on it are still running (one may be waiting for a lock another process holds); try again in a moment"
                    ),
                    None => format!(
                        "the server is busy: {TOTAL} calls are running; try again in a moment"
                    ),
                },
            )),
        }
    }
}

/// The key a call is admitted under: the workspace or issue its arguments
/// name, if any.
pub fn key_of(arguments: &serde_json::Value) -> Option<String> {
    if let Some(ws) = arguments.get("workspace").and_then(|v| v.as_str()) {
        let name = ws.trim_end_matches('/').rsplit('/').next().unwrap_or(ws);
        return Some(format!("workspace:{name}"));
    }
    arguments
        .get("issueNumber")
        .and_then(|v| v.as_str())
        .map(|n| {
            format!(
                "issue:{}",
                n.trim().trim_start_matches('#').to_ascii_lowercase()
            )
        })
}
