//! # baton-manuals
//!
//! The manual retrieval library behind baton's six `manual_*` MCP tools
//! (seed 002): `manual_ls`, `manual_toc`, `manual_find`, `manual_hits`,
//! `manual_read` and `manual_scan`.
//!
//! A *manual* is a directory under the manuals root (`MANUALS_ROOT`) holding
//! Markdown and JSON files. [`ManualService`] indexes them (sections from
//! Markdown headings, BM25F over CJK bigrams, English words and number
//! expressions), keeps the index in sync with the files (immutable
//! segments, memory-mapped from disk, updated per file), and answers the
//! tools from raw JSON arguments, validating them strictly:
//!
//! ```no_run
//! use baton_manuals::{ManualConfig, ManualService};
//! let service = ManualService::open(ManualConfig::from_env(std::path::Path::new(".")))?;
//! let found = service.find(serde_json::json!({"query": "入院給付金の支払条件"}))?;
//! let hits = service.hits(serde_json::json!({"trace_id": found.trace_id}))?;
//! # Ok::<(), baton_manuals::ManualError>(())
//! ```
//!
//! Module map: `sections` and `analyze` turn a file into sections and terms
//! (`tokenize`, `numbers`, `text`); `segment` is the on-disk layout (built by
//! `segment::builder`, merged by `segment::merge`), `index` a manual's
//! segments with deletions, `store` the manifest and files, `corpus` keeps
//! every manual in sync (`corpus::build` builds segments in parallel);
//! `query` analyses a question (concepts, names, labels, required terms),
//! `synonyms` the thesaurus, `search` scores one manual, `diversify` spreads
//! the head over files, `doc_text` reads a section's text back; `tools` are
//! the six tools, `claims` the claim graph, `trace` and `cache` the stored
//! results; `eval` measures retrieval.
//!
//! `docs/manuals.md` documents the contracts, every decision where the seed
//! is silent, the environment variables, the error codes and the index.

#![warn(missing_docs)]

mod analyze;
mod args;
mod cache;
mod claims;
mod codec;
mod config;
mod corpus;
mod descriptions;
mod diversify;
mod doc_text;
mod error;
pub mod eval;
mod index;
mod memory;
mod numbers;
mod paths;
mod query;
mod search;
mod sections;
mod segment;
mod service;
mod signals;
mod store;
mod synonyms;
mod text;
mod tokenize;
mod tools;
mod trace;
mod types;
mod watch;

pub use args::{MAX_ID_BYTES, MAX_PATH_BYTES, MAX_QUERY_BYTES};
pub use cache::CacheStats;
pub use config::{CorrectiveConfig, ManualConfig, ScoringConfig, env};
pub use corpus::{IndexProgress, IndexStats, MAX_FILE_BYTES};
pub use descriptions::{
    MANUAL_FIND_DESCRIPTION, MANUAL_HITS_DESCRIPTION, MANUAL_LS_DESCRIPTION,
    MANUAL_READ_DESCRIPTION, MANUAL_SCAN_DESCRIPTION, MANUAL_TOC_DESCRIPTION, TOOL_NAMES,
};
pub use error::{ManualError, ManualErrorCode};
pub use memory::MemoryUsage;
pub use paths::{FileType, ROOT_ID};
pub use service::ManualService;
pub use signals::Signal;
pub use tools::read::{MAX_SECTIONS, READ_MAX_CHARS, SNIPPET_CHARS};
pub use tools::scan::SCAN_MAX_CHARS;
pub use tools::toc::{TOC_MAX_FILES, TOC_MAX_HEADINGS, TOC_MAX_TITLE_BYTES};
pub use types::*;

/// The index terms of `text` exactly as manual search derives them: the text
/// in normal form (NFKC, lower case), then CJK character bigrams (plus a
/// unigram per kanji) and lightly stemmed words, in text order, repeats
/// kept. For other crates that rank text the way manual search does (the run
/// history's similar-run search).
pub fn index_terms(text: &str) -> Vec<String> {
    let normal = text::normalize(text);
    let mut terms = Vec::new();
    tokenize::for_each_token(&normal, |term, _| terms.push(term.to_string()));
    terms
}

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
