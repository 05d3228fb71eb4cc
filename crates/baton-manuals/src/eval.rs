//! Retrieval evaluation: recall@k and MRR of `manual_find` against a gold
//! set (JSONL, one `{"query", "path", "heading"}` per line).
//!
//! Gold files live in one folder and are named after the manual they query:
//! `<manual>.jsonl` is a **tuning** set (the engine was adjusted while
//! looking at its misses, so its numbers are in-sample) and
//! `<manual>.heldout.jsonl` is a **held-out** set (written blind, never used
//! to adjust the engine). [`discover_gold_sets`] finds both kinds.
//!
//! A candidate answers a gold query when its file path equals the expected
//! path (compared after Unicode NFC) and its section is the expected heading
//! or lies under it (the expected heading is an ancestor). The rank is the
//! position of the first such candidate among the top [`EVAL_DEPTH`].

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use unicode_normalization::UnicodeNormalization;

use crate::{ManualError, ManualService, TocFile};

/// How many candidates are inspected per query.
pub const EVAL_DEPTH: u64 = 10;
/// The cut-offs reported.
pub const RECALL_KS: [usize; 4] = [1, 3, 5, 10];

/// File-name suffix (before `.jsonl`) of a held-out gold set.
pub const HELDOUT_SUFFIX: &str = ".heldout";
/// File-name suffix (before `.jsonl`) of the second blind set, written by
/// someone who saw neither the engine nor the other sets.
pub const BLIND2_SUFFIX: &str = ".blind2";

/// The role of a gold set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GoldSplit {
    /// The engine was tuned on these queries (in-sample numbers).
    Tuning,
    /// Written blind and never used for tuning (out-of-sample numbers).
    HeldOut,
    /// A second blind set by another author who saw neither the engine, its
    /// thesaurus nor the other sets (out-of-sample numbers).
    Blind2,
}

impl GoldSplit {
    /// `tuning` or `held-out`.
    pub fn label(self) -> &'static str {
        match self {
            GoldSplit::Tuning => "tuning",
            GoldSplit::HeldOut => "held-out",
            GoldSplit::Blind2 => "blind-2",
        }
    }
}

/// One gold file: which manual it queries and its role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldSet {
    /// Manual the queries are run against.
    pub manual_id: String,
    /// Tuning or held-out.
    pub split: GoldSplit,
    /// The JSONL file.
    pub path: PathBuf,
}

/// Splits a gold file name into manual id and role
/// (`x.jsonl` → (`x`, tuning), `x.heldout.jsonl` → (`x`, held-out)).
pub fn parse_gold_file_name(name: &str) -> Option<(String, GoldSplit)> {
    let stem = name.strip_suffix(".jsonl")?;
    let (id, split) = if let Some(id) = stem.strip_suffix(HELDOUT_SUFFIX) {
        (id, GoldSplit::HeldOut)
    } else if let Some(id) = stem.strip_suffix(BLIND2_SUFFIX) {
        (id, GoldSplit::Blind2)
    } else {
        (stem, GoldSplit::Tuning)
    };
    (!id.is_empty()).then(|| (id.to_string(), split))
}

/// The gold file of `manual_id` with the given role inside `gold_dir`.
pub fn gold_file(gold_dir: &Path, manual_id: &str, split: GoldSplit) -> PathBuf {
    match split {
        GoldSplit::Tuning => gold_dir.join(format!("{manual_id}.jsonl")),
        GoldSplit::HeldOut => gold_dir.join(format!("{manual_id}{HELDOUT_SUFFIX}.jsonl")),
        GoldSplit::Blind2 => gold_dir.join(format!("{manual_id}{BLIND2_SUFFIX}.jsonl")),
    }
}

/// Every gold file in `gold_dir`, tuning sets first, then by manual id.
pub fn discover_gold_sets(gold_dir: &Path) -> Result<Vec<GoldSet>, String> {
    let entries =
        std::fs::read_dir(gold_dir).map_err(|e| format!("{}: {e}", gold_dir.display()))?;
    let mut sets: Vec<GoldSet> = entries
        .flatten()
        .map(|e| e.path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let (manual_id, split) = parse_gold_file_name(name)?;
            Some(GoldSet {
                manual_id,
                split,
                path,
            })
        })
        .collect();
    sets.sort_by(|a, b| (a.split, &a.manual_id).cmp(&(b.split, &b.manual_id)));
    Ok(sets)
}

/// One gold query.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct GoldQuery {
    /// The query as a user would ask it.
    pub query: String,
    /// Expected file (relative to the manual).
    pub path: String,
    /// Expected section heading (the file name for JSON files).
    pub heading: String,
    /// How the query is phrased, when the set says: `named` (uses the
    /// manual's own terms, like the Python reference's gold set) or
    /// `colloquial` (everyday words of someone who has not read the manual).
    #[serde(default)]
    pub style: Option<String>,
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
    /// Role of the gold set ([`evaluate`] reports [`GoldSplit::Tuning`]).
    pub split: GoldSplit,
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

    /// The same results split by [`GoldQuery::style`] (sets without styles
    /// give nothing), styles in name order.
    pub fn by_style(&self) -> Vec<(String, EvalReport)> {
        let mut styles: Vec<String> = self
            .results
            .iter()
            .filter_map(|r| r.gold.style.clone())
            .collect();
        styles.sort();
        styles.dedup();
        styles
            .into_iter()
            .map(|style| {
                let results = self
                    .results
                    .iter()
                    .filter(|r| r.gold.style.as_deref() == Some(style.as_str()))
                    .cloned()
                    .collect();
                let report = EvalReport {
                    manual_id: self.manual_id.clone(),
                    split: self.split,
                    results,
                };
                (style, report)
            })
            .collect()
    }

    /// One line: `manual  split  n=..  R@1 ..  R@3 ..  R@5 ..  R@10 ..  MRR ..`.
    pub fn summary_line(&self) -> String {
        let mut line = format!(
            "{:<16} {:<8} n={:<3}",
            self.manual_id,
            self.split.label(),
            self.results.len()
        );
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

/// Loads one gold file and runs it against its manual (cache off).
pub fn evaluate_set(service: &ManualService, set: &GoldSet) -> Result<EvalReport, String> {
    let gold = load_gold(&set.path)?;
    let mut report = evaluate(service, &set.manual_id, &gold)
        .map_err(|e| format!("{}: {e}", set.path.display()))?;
    report.split = set.split;
    Ok(report)
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
        split: GoldSplit::Tuning,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_file_names_map_to_manual_and_split() {
        assert_eq!(
            parse_gold_file_name("insurance-ja.jsonl"),
            Some(("insurance-ja".into(), GoldSplit::Tuning))
        );
        assert_eq!(
            parse_gold_file_name("insurance-ja.heldout.jsonl"),
            Some(("insurance-ja".into(), GoldSplit::HeldOut))
        );
        assert_eq!(parse_gold_file_name(".heldout.jsonl"), None);
        assert_eq!(parse_gold_file_name("notes.md"), None);
        let dir = Path::new("g");
        for split in [GoldSplit::Tuning, GoldSplit::HeldOut] {
            let f = gold_file(dir, "m", split);
            let name = f.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse_gold_file_name(name), Some(("m".into(), split)));
        }
    }
}
