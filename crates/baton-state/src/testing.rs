//! Set-up shared by this crate's unit tests.

use std::path::Path;

use crate::store::StateStore;
use crate::{WorkspaceRef, WorkspaceState};

/// A store under `dir` (specs folder `.specs`; `server`: it keeps spares,
/// as a server's does) and run `name` created in it, at phase-1.
pub(crate) fn created_run(dir: &Path, name: &str, server: bool) -> (StateStore, WorkspaceRef) {
    let store = StateStore::new(dir, &dir.join(".specs"));
    if server {
        store.start_syncer();
    }
    let ws = store.resolve(name).expect("a valid workspace name");
    store.create(&ws, &fresh_state(&ws)).expect("created");
    (store, ws)
}

/// A fresh state for `ws`, at phase-1.
pub(crate) fn fresh_state(ws: &WorkspaceRef) -> WorkspaceState {
    WorkspaceState::fresh(
        "forge",
        "phase-1",
        "test",
        &ws.display,
        "t",
        chrono::Utc::now(),
    )
}
