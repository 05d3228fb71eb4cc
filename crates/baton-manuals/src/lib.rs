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
//! tools from typed requests (`FindInput` …). The configuration is
//! resolved by `baton-config` (this crate reads no environment). An
//! adapter holding raw JSON arguments turns them into a request with
//! `XInput::from_json`, which applies seed 002's argument rules; the
//! service checks every request by the same rules again:
//!
//! ```no_run
//! use baton_manuals::{FindInput, HitsInput, ManualConfig, ManualService};
//! let service = ManualService::open(ManualConfig::from_env(std::path::Path::new(".")))?;
//! let found = service.find(FindInput::new("入院給付金の支払条件"))?;
//! let hits = service.hits(HitsInput::new(found.trace_id))?;
//! let same = FindInput::from_json(&serde_json::json!({"query": "入院給付金の支払条件"}))?;
//! # Ok::<(), baton_manuals::ManualError>(())
//! ```
//!
//! Layers, bottom to top (a file imports only from its own layer or
//! below, and no files import each other in a circle; `tests/layers.rs`
//! refuses both): `wire` (requests, replies, argument rules, errors) →
//! `analyze` (sections, terms) → `index` (codec, segments, store, one
//! manual's index) → `corpus` (every manual, kept in sync; the root on
//! disk; section texts) → `search` (query, scoring, diversity, claims) →
//! `service` (shared state: cache, traces, freshness, configuration) →
//! `tools` (the six tools) → `eval`. Text itself (normal form, tokens,
//! numbers, thesaurus) is the `baton-text` crate.
//!
//! `docs/manuals.md` documents the contracts, every decision where the seed
//! is silent, the environment variables, the error codes and the index.

#![warn(missing_docs)]

mod analyze;
mod corpus;
mod index;
mod search;
mod service;
mod tools;
mod wire;

pub mod eval;

pub use baton_config::manuals::{CorrectiveConfig, ManualConfig, ScoringConfig, env};
pub use corpus::{IndexProgress, IndexStats};
pub use index::memory::MemoryUsage;
pub use search::rerank::{LateRerankCandidate, LateReranker};
pub use service::cache::CacheStats;
pub use service::state::ManualService;
pub use tools::read::{MAX_SECTIONS, READ_MAX_CHARS, SNIPPET_CHARS};
pub use tools::scan::SCAN_MAX_CHARS;
pub use tools::toc::{TOC_MAX_FILES, TOC_MAX_HEADINGS, TOC_MAX_TITLE_BYTES};
pub use wire::args::{MAX_ID_BYTES, MAX_PATH_BYTES, MAX_QUERY_BYTES};
pub use wire::descriptions::{
    MANUAL_FIND_DESCRIPTION, MANUAL_HITS_DESCRIPTION, MANUAL_LS_DESCRIPTION,
    MANUAL_READ_DESCRIPTION, MANUAL_SCAN_DESCRIPTION, MANUAL_TOC_DESCRIPTION, TOOL_NAMES,
};
pub use wire::error::{ManualError, ManualErrorCode};
pub use wire::ids::{FileType, ROOT_ID};
pub use wire::signals::Signal;
pub use wire::types::*;

/// The index terms of `text` as manual search derives them (see
/// [`baton_text::index_terms`]).
pub use baton_text::index_terms;

/// The most a file may weigh to be indexed or served by default (8 MiB;
/// `MANUALS_MAX_FILE_BYTES`).
pub use baton_config::manuals::DEFAULT_MAX_FILE_BYTES as MAX_FILE_BYTES;
