//! The store's errors: each maps to one stable tool error code.

use std::path::PathBuf;

use crate::store::STATE_FILE;

/// Errors of the store. Each maps to one stable tool error code.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The workspace argument is malformed (empty, too long, bad characters).
    #[error("invalid workspace {input:?}: {reason}")]
    InvalidWorkspace {
        /// What was given.
        input: String,
        /// Why it was refused.
        reason: String,
    },
    /// The workspace argument points outside the specs root.
    #[error("workspace {input:?} is outside the specs root {root}")]
    OutOfScope {
        /// What was given.
        input: String,
        /// The specs root.
        root: PathBuf,
    },
    /// No such workspace. What to do next depends on who reads it (an
    /// agent or a person): the use-case layer adds it.
    #[error("no workspace at {path} (no {STATE_FILE})")]
    NotFound {
        /// The folder looked at.
        path: PathBuf,
    },
    /// The workspace already has a state file.
    #[error("workspace {path} already exists")]
    AlreadyExists {
        /// The folder.
        path: PathBuf,
    },
    /// `state.json` does not parse.
    #[error("corrupt state file {path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// Another call holds the workspace lock longer than the wait allowed.
    #[error("{path} is busy: another call has held its lock for over {waited_ms} ms{}; try again in a moment", holder.as_deref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Busy {
        /// The workspace folder.
        path: PathBuf,
        /// Who holds the lock, as the holder recorded it.
        holder: Option<String>,
        /// How long this call waited.
        waited_ms: u64,
    },
    /// `state.json` was written by a newer baton.
    #[error("unsupported state file {path}: {reason}")]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Details.
        reason: String,
    },
    /// A file operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was attempted.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The result of [`StateStore::update`] when the change itself was refused.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError<E> {
    /// Loading or writing failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The change function refused; nothing was written.
    #[error("{0}")]
    Rejected(E),
}
