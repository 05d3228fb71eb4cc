//! The rows a search produces: ranked sections and files left unscanned,
//! as stored in a trace and paged by `manual_hits`.

use std::sync::Arc;

use serde::Serialize;

/// Full reference of a candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CandidateRef {
    pub target: &'static str,
    /// Shared with the search (one allocation per manual).
    pub manual_id: Arc<str>,
    /// Shared with the index (one allocation per file).
    pub path: Arc<str>,
    pub start_line: u32,
    /// JSON candidates are whole files; kept for schema compatibility.
    pub json_path: Option<String>,
}

/// A ranked section as stored in the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CandidateRow {
    #[serde(rename = "ref")]
    pub reference: CandidateRef,
    /// Interned per trace (editions of a manual repeat their headings).
    pub title: Arc<str>,
    pub score: f64,
    pub coverage: f64,
    pub signals: crate::wire::signals::Signals,
    /// Interned per trace (many rows match the same terms).
    pub matched_tokens: Arc<[String]>,
}

/// Files whose matching sections were not returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct UnscannedRow {
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    /// `candidate_cap` or `time_budget`.
    pub reason: &'static str,
    /// Matching sections not returned (0 when the file was not searched at all).
    pub sections: u32,
}
