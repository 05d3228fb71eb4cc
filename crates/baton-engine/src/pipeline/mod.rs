//! The seed pipeline's pure decisions (seeds 001/000): input parsing and
//! source detection, effort detection, slugs and branch names.

pub mod artifacts;
pub mod commit;
pub mod init;
pub mod next;
pub mod prompt;
pub mod tasks;
pub mod verdict;
