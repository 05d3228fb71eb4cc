//! The seed pipeline (seeds 001/000/003): initialisation, the step loop
//! (`pipeline_next_action`) and phase reports (`pipeline_report_result`).

pub mod action;
pub mod answer;
pub mod init;
pub mod manual_refs;
pub mod report;
pub mod step;
pub mod usage;
