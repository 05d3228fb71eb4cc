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
use unicode_normalization::UnicodeNormalization;

use crate::service::state::ManualService;
use crate::wire::error::ManualError;
use crate::wire::types::{FindInput, HitsInput, TocInput};

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

/// One gold query, in either of two formats:
///
/// * section level (this repository's sets and the blind sets):
///   `{"query", "path", "heading", "style"?}` — a candidate answers when it
///   is the expected section or lies under it;
/// * file level (the Python reference's public set):
///   `{"query", "expected_paths": [..], "required_terms"?: [..], "facet"?, "case_id"?, "manual_id"?}`
///   — a candidate answers when it is in one of the expected files.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct GoldQuery {
    /// The query as a user would ask it.
    pub query: String,
    /// Expected file (relative to the manual), section-level format.
    #[serde(default)]
    pub path: Option<String>,
    /// Expected section heading (the file name for JSON files), section-level format.
    #[serde(default)]
    pub heading: Option<String>,
    /// Expected files, file-level format (any section of one of them answers).
    #[serde(default)]
    pub expected_paths: Vec<String>,
    /// Terms the caller passes as `required_terms` (file-level format), used
    /// only when an evaluation runs "with required terms".
    #[serde(default)]
    pub required_terms: Vec<String>,
    /// How the query is phrased, when the set says: `named` (uses the
    /// manual's own terms, like the Python reference's gold set) or
    /// `colloquial` (everyday words of someone who has not read the manual).
    #[serde(default)]
    pub style: Option<String>,
    /// The manual the query was written for, when the set names it (the
    /// reference's set names its own manual directory).
    #[serde(default)]
    pub manual_id: Option<String>,
}

impl GoldQuery {
    /// A section-level gold query (used by tests).
    pub fn section(query: &str, path: &str, heading: &str) -> GoldQuery {
        GoldQuery {
            query: query.to_string(),
            path: Some(path.to_string()),
            heading: Some(heading.to_string()),
            expected_paths: Vec::new(),
            required_terms: Vec::new(),
            style: None,
            manual_id: None,
        }
    }

    /// The expected target for messages: `path#heading` or the expected files.
    pub fn target(&self) -> String {
        match (&self.path, &self.heading) {
            (Some(p), Some(h)) => format!("{p}#{h}"),
            (Some(p), None) => p.clone(),
            _ => self.expected_paths.join(" | "),
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.query.trim().is_empty() {
            return Err("empty query".into());
        }
        match (&self.path, &self.heading, self.expected_paths.is_empty()) {
            (Some(_), Some(_), true) => Ok(()),
            (None, None, false) => Ok(()),
            _ => Err("give either `path` and `heading`, or `expected_paths`".into()),
        }
    }
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
    /// The set's name in reports (the split's label, or a gold file's name).
    pub label: String,
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
                    label: self.label.clone(),
                    results,
                };
                (style, report)
            })
            .collect()
    }

    /// One line: `manual  split  n=..  R@1 ..  R@3 ..  R@5 ..  R@10 ..  MRR ..`.
    pub fn summary_line(&self) -> String {
        let mut line = format!(
            "{:<16} {:<14} n={:<3}",
            self.manual_id,
            self.label,
            self.results.len()
        );
        for k in RECALL_KS {
            line.push_str(&format!("  R@{k} {:.3}", self.recall_at(k)));
        }
        line.push_str(&format!("  MRR {:.3}", self.mrr()));
        line
    }
}

/// Reads a gold JSONL file (blank lines ignored); every line must be one
/// of the two formats of [`GoldQuery`].
pub fn load_gold(path: &Path) -> Result<Vec<GoldQuery>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let g: GoldQuery = serde_json::from_str(l)
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
            g.check()
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
            Ok(g)
        })
        .collect()
}

/// How an evaluation calls `manual_find`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvalOptions {
    /// Pass each query's `required_terms` (when it has some), as callers of
    /// the Python reference do. Off: the query alone.
    pub with_required_terms: bool,
}

/// Loads one gold file and runs it against its manual (cache off, query alone).
pub fn evaluate_set(service: &ManualService, set: &GoldSet) -> Result<EvalReport, String> {
    let gold = load_gold(&set.path)?;
    let mut report = evaluate(service, &set.manual_id, &gold, EvalOptions::default())
        .map_err(|e| format!("{}: {e}", set.path.display()))?;
    report.split = set.split;
    report.label = set.split.label().to_string();
    Ok(report)
}

/// Runs every gold query against one manual (cache off).
pub fn evaluate(
    service: &ManualService,
    manual_id: &str,
    gold: &[GoldQuery],
    options: EvalOptions,
) -> Result<EvalReport, ManualError> {
    let mut headings = HeadingCache::default();
    let mut results = Vec::with_capacity(gold.len());
    for g in gold {
        let mut request = FindInput::new(&g.query);
        request.manual_id = Some(manual_id.to_string());
        request.use_cache = Some(false);
        if options.with_required_terms && !g.required_terms.is_empty() {
            request.required_terms = Some(g.required_terms.clone());
        }
        let found = service.find(request)?;
        let mut page = HitsInput::new(found.trace_id);
        page.limit = Some(EVAL_DEPTH);
        let hits = service.hits(page)?;
        let mut rank = None;
        let mut top = Vec::new();
        for (i, item) in hits.items.iter().enumerate() {
            let path = item["ref"]["path"].as_str().unwrap_or("");
            let line = item["ref"]["start_line"].as_u64().unwrap_or(0) as u32;
            let title = item["title"].as_str().unwrap_or("");
            if top.len() < 3 {
                top.push(format!("{path}#{title}"));
            }
            if rank.is_none() && answers(service, manual_id, &mut headings, g, path, line, title) {
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
        label: GoldSplit::Tuning.label().to_string(),
        results,
    })
}

fn nfc(s: &str) -> String {
    s.nfc().collect()
}

/// A heading of a file as the evaluation sees it.
#[derive(Debug, Clone)]
struct EvalHeading {
    line: u32,
    level: u8,
    /// The heading as `manual_toc` renders it (inline markup removed).
    title: String,
    /// The heading line as written, without its `#` marks (gold headings
    /// are copied from the file, so they keep backticks and the like).
    raw: String,
}

/// The headings of the files met so far (one `manual_toc` per file).
#[derive(Default)]
struct HeadingCache {
    files: std::collections::HashMap<String, Vec<EvalHeading>>,
}

impl HeadingCache {
    fn headings(&mut self, service: &ManualService, manual_id: &str, path: &str) -> &[EvalHeading] {
        self.files.entry(path.to_string()).or_insert_with(|| {
            let file = service.config().root.join(manual_id).join(path);
            let text = std::fs::read(&file)
                .map(|b| String::from_utf8_lossy(&b).replace("\r\n", "\n"))
                .unwrap_or_default();
            let lines: Vec<&str> = text.split('\n').collect();
            service
                .toc(TocInput {
                    manual_id: manual_id.to_string(),
                    path_prefix: Some(path.to_string()),
                    offset: None,
                })
                .ok()
                .and_then(|t| t.items.into_iter().find(|f| f.path == path))
                .map(|f| f.headings)
                .unwrap_or_default()
                .into_iter()
                .map(|h| EvalHeading {
                    line: h.line_start,
                    level: h.level,
                    raw: lines
                        .get(h.line_start.saturating_sub(1) as usize)
                        .map(|l| raw_heading(l))
                        .unwrap_or_default(),
                    title: h.title,
                })
                .collect()
        })
    }
}

/// An ATX heading line's text: without the opening and closing `#` runs
/// and surrounding spaces (other lines are returned trimmed).
fn raw_heading(line: &str) -> String {
    let t = line.trim();
    let Some(rest) = t.strip_prefix('#') else {
        return t.to_string();
    };
    let rest = rest.trim_start_matches('#').trim();
    let closed = rest.trim_end_matches('#');
    if closed.len() < rest.len() && (closed.is_empty() || closed.ends_with(' ')) {
        closed.trim().to_string()
    } else {
        rest.to_string()
    }
}

/// Whether a candidate (path, heading line, title) answers a gold query.
fn answers(
    service: &ManualService,
    manual_id: &str,
    headings: &mut HeadingCache,
    gold: &GoldQuery,
    path: &str,
    line: u32,
    title: &str,
) -> bool {
    let path_nfc = nfc(path);
    let (Some(gold_path), Some(gold_heading)) = (&gold.path, &gold.heading) else {
        // File-level gold: any section of an expected file.
        return gold.expected_paths.iter().any(|p| nfc(p) == path_nfc);
    };
    if path_nfc != nfc(gold_path) {
        return false;
    }
    let wanted = nfc(gold_heading.trim());
    let is_wanted = |h: &EvalHeading| nfc(&h.raw) == wanted || nfc(&h.title) == wanted;
    let file = headings.headings(service, manual_id, path);
    // The candidate's own heading, then its ancestors by heading level.
    let Some(pos) = file.iter().position(|h| h.line == line) else {
        return nfc(title) == wanted;
    };
    if is_wanted(&file[pos]) {
        return true;
    }
    let mut level = file[pos].level;
    for h in file[..pos].iter().rev() {
        if h.level < level {
            if is_wanted(h) {
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
    fn raw_headings_keep_inline_markup_and_drop_hash_runs() {
        assert_eq!(
            raw_heading("## `Rc<T>`は参照カウント"),
            "`Rc<T>`は参照カウント"
        );
        assert_eq!(raw_heading("### Title ###"), "Title");
        assert_eq!(raw_heading("# C#"), "C#");
        assert_eq!(raw_heading("Setext title"), "Setext title");
    }

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
