//! The wire: what callers send and receive — typed requests and replies
//! (with their JSON Schema), the strict JSON argument rules of seed 002,
//! lexical checks of ids and paths, signals, errors and the tools'
//! descriptions. The bottom layer: it knows nothing of indexes or files.

pub(crate) mod args;
pub(crate) mod convert;
pub(crate) mod descriptions;
pub(crate) mod error;
pub(crate) mod ids;
pub(crate) mod signals;
pub(crate) mod types;
