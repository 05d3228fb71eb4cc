//! Retrieval evaluation: recall@k and MRR of `manual_find` against a gold
//! set (JSONL, one `{"query", "path", "heading"}` per line).
//!
//! A candidate answers a gold query when its file path equals the expected
//! path (compared after Unicode NFC) and its section is the expected heading
//! or lies under it (the expected heading is an ancestor). The rank is the
//! position of the first such candidate among the top [`EVAL_DEPTH`].

use std::path::Path;

use serde::Deserialize;
use serde_json::json;
use unicode_normalization::UnicodeNormalization;

use crate::{ManualError, ManualService, TocFile};

/// How many candidates are inspected per query.
pub const EVAL_DEPTH: u64 = 10;
/// The cut-offs reported.
pub const RECALL_KS: [usize; 4] = [1, 3, 5, 10];

/// One gold query.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct GoldQuery {
    /// The query as a user would ask it.
    pub query: String,
    /// Expected file (relative to the manual).
    pub path: String,
    /// Expected section heading (the file name for JSON files).
    pub heading: String,
}

/// Outcome of one query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// The gold query.
    pub gold: GoldQuery,
    /// 1-based rank of the first correct candidate, if within the depth.
    pub rank: Option<usize>,
    /// The top three candidates as `path#title`.
    pub top: Vec<String>,
}

/// Metrics of one gold set.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalReport {
    /// Manual evaluated.
    pub manual_id: String,
    /// Per-query outcomes.
    pub results: Vec<QueryResult>,
}

impl EvalReport {
    /// Share of queries answered within the top `k`.
    pub fn recall_at(&self, k: usize) -> f64 {
        if self.results.is_empty() {
            return 0.0;
        }
        let hits = self
            .results
            .iter()
            .filter(|r| r.rank.is_some_and(|x| x <= k))
            .count();
        hits as f64 / self.results.len() as f64
    }

    /// Mean reciprocal rank (0 for queries not answered within the depth).
    pub fn mrr(&self) -> f64 {
        if self.results.is_empty() {
            return 0.0;
        }
        let sum: f64 = self
            .results
            .iter()
            .filter_map(|r| r.rank)
            .map(|r| 1.0 / r as f64)
            .sum();
        sum / self.results.len() as f64
    }

    /// One line: `manual  n=..  R@1 ..  R@3 ..  R@5 ..  R@10 ..  MRR ..`.
    pub fn summary_line(&self) -> String {
        let mut line = format!("{:<16} n={:<3}", self.manual_id, self.results.len());
        for k in RECALL_KS {
            line.push_str(&format!("  R@{k} {:.3}", self.recall_at(k)));
        }
        line.push_str(&format!("  MRR {:.3}", self.mrr()));
        line
    }
}

/// Reads a gold JSONL file (blank lines ignored).
pub fn load_gold(path: &Path) -> Result<Vec<GoldQuery>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// Runs every gold query against one manual (cache off).
pub fn evaluate(
    service: &ManualService,
    manual_id: &str,
    gold: &[GoldQuery],
) -> Result<EvalReport, ManualError> {
    let toc = service.toc(json!({ "manual_id": manual_id }))?;
    let mut results = Vec::with_capacity(gold.len());
    for g in gold {
        let found = service
            .find(json!({ "query": g.query, "manual_id": manual_id, "use_cache": false }))?;
        let hits = service.hits(json!({ "trace_id": found.trace_id, "limit": EVAL_DEPTH }))?;
        let mut rank = None;
        let mut top = Vec::new();
        for (i, item) in hits.items.iter().enumerate() {
            let path = item["ref"]["path"].as_str().unwrap_or("");
            let line = item["ref"]["start_line"].as_u64().unwrap_or(0) as u32;
            let title = item["title"].as_str().unwrap_or("");
            if top.len() < 3 {
                top.push(format!("{path}#{title}"));
            }
            if rank.is_none() && answers(&toc.items, g, path, line, title) {
                rank = Some(i + 1);
            }
        }
        results.push(QueryResult {
            gold: g.clone(),
            rank,
            top,
        });
    }
    Ok(EvalReport {
        manual_id: manual_id.to_string(),
        results,
    })
}

fn nfc(s: &str) -> String {
    s.nfc().collect()
}

/// Whether a candidate (path, heading line, title) answers a gold query.
fn answers(toc: &[TocFile], gold: &GoldQuery, path: &str, line: u32, title: &str) -> bool {
    if nfc(path) != nfc(&gold.path) {
        return false;
    }
    let wanted = nfc(&gold.heading);
    if nfc(title) == wanted {
        return true;
    }
    let Some(file) = toc.iter().find(|f| nfc(&f.path) == nfc(path)) else {
        return false;
    };
    // Walk the candidate's ancestors by heading level.
    let Some(pos) = file.headings.iter().position(|h| h.line_start == line) else {
        return false;
    };
    let mut level = file.headings[pos].level;
    for h in file.headings[..pos].iter().rev() {
        if h.level < level {
            if nfc(&h.title) == wanted {
                return true;
            }
            level = h.level;
        }
    }
    false
}
