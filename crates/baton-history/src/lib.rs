//! The run history: what past runs teach the next one (seed 001 Layer 4,
//! the "data flywheel"), and the analytics over them.
//!
//! * [`record`] — one record per ended run (done or abandoned): request,
//!   source, effort, workflow, phases run and skipped, verdicts, findings,
//!   loops, durations, tokens, models, outcome, friction items.
//! * [`collect`] — building a record from a workspace folder (baton's
//!   `state.json` and forge's versions 1/2 alike, plus the artifacts).
//! * [`entry`] — the part of a record kept in memory (search terms, totals,
//!   its place in the file); the rest is read when a query needs it.
//! * [`file`] — `<specs root>/.history/history.jsonl`: a versioned header
//!   line, then one record per line; appended under an OS lock, rewritten
//!   atomically; the folder ignored by git.
//! * [`index`] — [`HistoryIndex`], the handle: lazy load, incremental
//!   refresh, catch-up of unrecorded ended runs, repair of a damaged file
//!   (`index/load.rs`), what it keeps in memory (`index/loaded.rs`), the
//!   workspace folders it scans (`index/folders.rs`), and every query below
//!   (`index/queries.rs`).
//! * [`similar`] / [`bm25`] / [`terms`] — similar past runs: BM25 over
//!   request and design terms (the manual search's tokenizer), with the
//!   words that matched.
//! * [`merge`] — review findings merged into patterns by Levenshtein
//!   similarity; order-independent and idempotent.
//! * [`friction`] — the friction map from the improvement reports.
//! * [`layer4`] — per-agent Layer-4 prompt blocks within a budget.
//! * [`analytics`] — run summary, dashboard, estimate, cost.
//!
//! ```no_run
//! use baton_history::{HistoryIndex, PriceTable};
//! let history = HistoryIndex::open(std::path::Path::new("/repo/.specs"));
//! let blocks = history.layer4("implementer", "Fix the login timeout", None, 1200);
//! let estimate = history.estimate("Fix the login timeout", None, &PriceTable::default());
//! # let _ = (blocks, estimate);
//! ```
//!
//! docs/history.md documents the format, ranking, merge rules and budget.

#![warn(missing_docs)]

pub mod analytics;
pub mod bm25;
pub mod collect;
pub mod entry;
pub mod error;
pub mod file;
pub mod friction;
pub mod index;
pub mod layer4;
pub mod merge;
pub mod record;
pub mod similar;
pub mod terms;
pub mod text;

pub use analytics::{Basis, Dashboard, Estimate, PriceTable, RunSummary, Spread};
pub use baton_engine::pipeline::prompt::LearningBlock;
pub use error::HistoryError;
pub use friction::FrictionPoint;
pub use index::{DefinitionSource, Friction, HistoryIndex, PatternFilter, Patterns, Reindexed};
pub use layer4::{DEFAULT_LAYER4_BUDGET_TOKENS, ReviewerPatterns};
pub use merge::Pattern;
pub use record::{Outcome, RunRecord};
pub use similar::SimilarRun;

/// Recency weights are integers in millionths, so merged sums are exact and
/// independent of order; this is a weight of 1.
pub const WEIGHT_UNIT: u64 = 1_000_000;
