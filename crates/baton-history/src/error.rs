//! Errors at the crate's edge. Queries never fail (a problem becomes a
//! warning and an empty answer); writing a record can.

use std::path::{Path, PathBuf};

/// Why the history could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
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
    /// A record could not be encoded.
    #[error("cannot encode a history record: {0}")]
    Encode(String),
}

impl HistoryError {
    pub(crate) fn io(op: &'static str, path: &Path, source: std::io::Error) -> HistoryError {
        HistoryError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}
