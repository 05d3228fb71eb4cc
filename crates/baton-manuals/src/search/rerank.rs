//! The late-interaction rerank hook: a caller's own relevance model may
//! rescore the merged head of a search.

/// One candidate handed to a [`LateReranker`].
#[derive(Debug, Clone, Copy)]
pub struct LateRerankCandidate<'a> {
    /// Manual id.
    pub manual_id: &'a str,
    /// File path inside the manual.
    pub path: &'a str,
    /// Section heading line.
    pub start_line: u32,
    /// The section's normalised text (heading and body).
    pub text: &'a str,
    /// Score before the late rerank (first stage and refinement).
    pub score: f64,
}

/// A pluggable late-interaction reranker (the seed's `late_reranker` hook).
///
/// It receives the best candidates of all searched manuals together (the
/// merged head, `LATE_RERANK_TOP_N` of them, once per search stage) and
/// returns one
/// relevance value in `0..=1` per candidate (same order and length; any
/// other length is ignored). A value `v` multiplies the candidate's score by
/// `1 + LATE_RERANK_WEIGHT * v` (combined with the built-in sentence
/// rerank by taking the larger value). Installing a hook enables late
/// rerank even when `LATE_RERANK_ENABLED` is false.
pub trait LateReranker: Send + Sync {
    /// Scores the candidates for a query.
    fn rerank(&self, query: &str, candidates: &[LateRerankCandidate<'_>]) -> Vec<f64>;
}
