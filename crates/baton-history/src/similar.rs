//! Similar past runs: BM25 over the request and design terms, with the
//! words that matched (docs/history.md §4).

use baton_state::Effort;
use schemars::JsonSchema;
use serde::Serialize;

use crate::bm25::{Bm25, query_weight};
use std::collections::HashMap;

use crate::entry::Entry;
use crate::record::Outcome;
use crate::terms::{MAX_QUERY_TERMS, reason_words, weighted_terms};

/// Design text read for the words of a reason, in bytes.
pub const REASON_DESIGN_BYTES: usize = 2048;

/// Words listed as the reason of a match, at most.
pub const MAX_REASONS: usize = 5;

/// For Layer 4 a run must share at least this many terms with the request…
pub const LAYER4_MIN_MATCHED: usize = 2;
/// …and score at least this share of the best run's score.
pub const LAYER4_MIN_RELATIVE: f64 = 0.3;

/// A past run like the query.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SimilarRun {
    /// Workspace folder name.
    pub workspace: String,
    /// BM25 score (two decimals; comparable within one answer only).
    pub score: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// Effort S, M or L.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Its request in one line.
    pub request: String,
    /// Why it matched: the query's words it shares, strongest first.
    pub matched: Vec<String>,
    /// Times its work went back to an earlier phase.
    pub loops: u32,
    /// Tokens it used.
    pub tokens: u64,
    /// Its work minutes.
    pub minutes: f64,
}

/// The weighted query terms of a request (and design).
pub fn query_terms(request: &str, design: &str) -> Vec<(String, u32)> {
    weighted_terms(request, design, MAX_QUERY_TERMS * 4).0
}

/// A run's terms (the file's form) and request, read for a search result.
pub type Details<'a> = &'a dyn Fn(usize) -> Option<(String, String)>;

/// What a search runs over: the index, the runs' in-memory parts, and how
/// to read a hit's terms and request (from the file: they are not kept in
/// memory).
#[derive(Clone, Copy)]
pub struct Corpus<'a> {
    /// The index of the runs' terms.
    pub bm25: &'a Bm25,
    /// The runs, by document number.
    pub entries: &'a [Entry],
    /// A hit's terms and request.
    pub details: Details<'a>,
}

/// Ranks the runs of `corpus` for a query: the `k` best that share at
/// least `min_matched` terms with it and pass `keep` (a hit whose details
/// cannot be read is left out).
pub fn rank(
    corpus: Corpus<'_>,
    request: &str,
    design: &str,
    k: usize,
    min_matched: usize,
    keep: &dyn Fn(usize) -> bool,
) -> Vec<SimilarRun> {
    // A request.md passed whole: its front matter is not the request.
    let request = crate::text::front_matter(request).1;
    let Corpus {
        bm25,
        entries,
        details,
    } = corpus;
    let query = query_terms(request, design);
    let hits = bm25.search(&query, k, min_matched, keep);
    let query_tf: HashMap<&str, u32> = query.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    // Reasons are read from the request and the start of the design.
    let text = format!(
        "{request}\n{}",
        crate::terms::head(design, REASON_DESIGN_BYTES)
    );
    hits.into_iter()
        .filter_map(|hit| {
            let r = entries.get(hit.doc)?;
            let (terms, run_request) = details(hit.doc)?;
            // A term's share of this run's score explains the match.
            let doc: HashMap<&str, u32> = crate::entry::terms(&terms).collect();
            let weight = |term: &str| -> f64 {
                match (doc.get(term), query_tf.get(term)) {
                    (Some(tf), Some(qtf)) => bm25.term_score(term, *tf, r.len, query_weight(*qtf)),
                    _ => 0.0,
                }
            };
            Some(SimilarRun {
                workspace: r.workspace.clone(),
                score: (hit.score * 100.0).round() / 100.0,
                outcome: r.outcome,
                effort: r.effort,
                request: run_request,
                matched: reason_words(&text, &weight, MAX_REASONS),
                loops: r.loops,
                tokens: r.tokens,
                minutes: (r.work_ms as f64 / 6_000.0).round() / 10.0,
            })
        })
        .collect()
}

/// The hits worth putting in a prompt (ranked with
/// [`LAYER4_MIN_MATCHED`]): those scoring at least [`LAYER4_MIN_RELATIVE`]
/// of the best.
pub fn strong(hits: Vec<SimilarRun>) -> Vec<SimilarRun> {
    let best = hits.first().map_or(0.0, |h| h.score);
    hits.into_iter()
        .filter(|h| h.score >= best * LAYER4_MIN_RELATIVE)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::format_terms;

    /// Entries, their details and their index.
    struct Runs {
        entries: Vec<Entry>,
        details: Vec<(String, String)>,
        bm25: Bm25,
    }

    impl Runs {
        fn rank(&self, request: &str, design: &str, k: usize, min: usize) -> Vec<SimilarRun> {
            rank(
                Corpus {
                    bm25: &self.bm25,
                    entries: &self.entries,
                    details: &|d| self.details.get(d).cloned(),
                },
                request,
                design,
                k,
                min,
                &|_| true,
            )
        }
    }

    fn runs(list: &[(&str, &str, &str)]) -> Runs {
        let mut out = Runs {
            entries: Vec::new(),
            details: Vec::new(),
            bm25: Bm25::default(),
        };
        for (ws, request, design) in list {
            let (terms, len) = weighted_terms(request, design, crate::terms::MAX_DOC_TERMS);
            let terms = format_terms(&terms);
            out.bm25.add(crate::entry::terms(&terms), len);
            out.entries.push(Entry {
                workspace: (*ws).into(),
                outcome: Outcome::Completed,
                effort: None,
                ended: "2026-01-01T00:00:00Z".parse().unwrap(),
                tokens: 0,
                work_ms: 0,
                loops: 0,
                terms_hash: crate::entry::hash_terms(&terms),
                len,
                reviewed: false,
                reported: false,
                offset: 0,
                line_len: 0,
            });
            out.details.push((terms, (*request).to_string()));
        }
        out
    }

    #[test]
    fn the_request_outweighs_the_design_and_design_text_still_matches() {
        let r = runs(&[
            ("a", "Cache the pricing lookups", "Uses a map."),
            (
                "b",
                "Rewrite the onboarding guide",
                "Mentions the pricing cache once.",
            ),
            ("c", "Speed up search", "Nothing shared."),
        ]);
        let hits = r.rank("pricing cache", "", 5, 1);
        assert_eq!(hits[0].request, "Cache the pricing lookups");
        let order: Vec<&str> = hits.iter().map(|h| h.workspace.as_str()).collect();
        assert_eq!(order, ["a", "b"]);
        assert_eq!(
            hits[0].matched,
            ["cache", "pricing"],
            "equal shares: by word"
        );
        // The query's design counts too: "onboarding" only occurs in b's request.
        let hits = r.rank("pricing", "onboarding guide", 5, 1);
        assert_eq!(hits[0].workspace, "b");
    }

    #[test]
    fn front_matter_in_the_query_is_ignored() {
        let r = runs(&[("a", "Fix github webhooks", "")]);
        let q = "---\nsource_type: github\n---\n\nRotate the logs";
        assert!(r.rank(q, "", 5, 1).is_empty());
    }

    #[test]
    fn prompts_need_two_shared_terms_and_a_score_near_the_best() {
        let r = runs(&[
            ("a", "Fix the login session timeout", ""),
            ("b", "Login page colours", ""),
        ]);
        let hits = r.rank("login session timeout", "", 5, LAYER4_MIN_MATCHED);
        assert_eq!(hits.len(), 1, "b shares one term only");
        let loose = r.rank("login session timeout", "", 5, 1);
        assert_eq!(loose.len(), 2);
        let mut weak = loose.clone();
        weak[1].score = weak[0].score * 0.1;
        assert_eq!(strong(weak).len(), 1);
    }
}
