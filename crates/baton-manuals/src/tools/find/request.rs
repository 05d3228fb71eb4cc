//! The types of a `manual_find` call: the validated request, scored rows,
//! a continuation's restriction, the search's outcome, and the limits.

use std::collections::HashSet;
use std::sync::Arc;

use crate::search::rows::UnscannedRow;
use crate::search::scoring::Hit;

/// Default `budget.time_ms`.
pub(super) const DEFAULT_TIME_MS: u64 = 60_000;
/// Default `budget.max_candidates`.
pub(super) const DEFAULT_MAX_CANDIDATES: u64 = 200;
/// Most files listed as `unscanned` because of the candidate cap (those
/// with the most cut sections); `applied.unscanned_files` gives the total.
pub(super) const MAX_UNSCANNED_FILES: usize = 1000;
/// Score factor of change-log and release-note sections for a question
/// that is not about changes.
pub(super) const CHANGELOG_WEIGHT: f64 = 0.5;
/// Score factor of stage-4 (loose) candidates.
pub(super) const LOOSE_PENALTY: f64 = 0.8;
/// Minimum coverage of a stage-4 candidate.
pub(super) const LOOSE_MIN_COVERAGE: f64 = 0.5;

/// A validated `manual_find` call.
#[derive(Debug, Clone)]
pub(super) struct FindRequest {
    pub(super) query: String,
    pub(super) manual_id: Option<String>,
    pub(super) expand_scope: bool,
    pub(super) only_unscanned: Option<String>,
    pub(super) include_claim_graph: bool,
    pub(super) use_cache: bool,
    pub(super) max_candidates: usize,
    pub(super) time_ms: u64,
    /// The caller's `required_terms` (extension; 0–2 distinct terms).
    pub(super) required_terms: Vec<String>,
}

/// Most `required_terms` a call may give.
pub(super) const MAX_REQUIRED_TERMS: usize = 2;
/// Longest required term, in bytes.
pub(super) const MAX_REQUIRED_TERM_BYTES: usize = 256;

/// One scored section of some manual.
pub(super) struct Scored {
    pub(super) manual_id: Arc<str>,
    pub(super) hit: Hit,
}

/// Restriction from `only_unscanned_from_trace_id`.
pub(super) struct Continuation {
    pub(super) files: HashSet<(String, String)>,
    pub(super) seen: HashSet<(String, String, u32)>,
}

pub(super) struct Outcome {
    pub(super) rows: Vec<Scored>,
    pub(super) unscanned: Vec<UnscannedRow>,
    pub(super) scanned_files: u32,
    pub(super) scanned_nodes: u32,
    pub(super) stage: u8,
    pub(super) expanded: bool,
    pub(super) required_relaxed: bool,
    /// Most required phrases/terms any kept candidate contains.
    pub(super) required_met: u8,
    pub(super) time_budget_hit: bool,
    pub(super) searched: HashSet<String>,
    /// The call's `budget.max_candidates`.
    pub(super) max_candidates: usize,
    /// Sections that could not reach the head, per file (counted into
    /// `unscanned` with the rows cut by `max_candidates`).
    pub(super) tail: Vec<(Arc<str>, Vec<Vec<u32>>)>,
    /// Files with cut sections (`unscanned` lists at most
    /// `MAX_UNSCANNED_FILES` of them, most cut first).
    pub(super) unscanned_files: usize,
}
