//! What the index keeps in memory: the entries, the BM25 index over their
//! terms, and the patterns and friction merged from them on first need.

use std::collections::HashMap;
use std::sync::Arc;

use super::{WINDOW_RUNS, recency_weight};
use crate::bm25::Bm25;
use crate::entry::Entry;
use crate::file::HistoryFile;
use crate::friction::{FrictionObservation, FrictionPoint};
use crate::merge::{Observation, Pattern, merge_findings};
use crate::record::RunRecord;
use crate::similar::SimilarRun;

#[derive(Debug, Default)]
pub(super) struct Loaded {
    pub(super) generation: String,
    pub(super) offset: u64,
    pub(super) identity: Option<(u64, Option<std::time::SystemTime>)>,
    pub(super) entries: Vec<Entry>,
    pub(super) alive: Vec<bool>,
    pub(super) by_workspace: HashMap<String, usize>,
    pub(super) bm25: Bm25,
    pub(super) derived: Option<Arc<Derived>>,
    /// The last Layer-4 similar-run query (hash of request and design) and
    /// its answer: the prompts of one run share them.
    pub(super) similar_cache: Option<(u64, Vec<SimilarRun>)>,
    pub(super) caught_up: bool,
}

#[derive(Debug)]
pub(super) struct Derived {
    pub(super) patterns: Vec<Pattern>,
    pub(super) friction: Vec<FrictionPoint>,
    pub(super) runs_with_reviews: u32,
    pub(super) reports: u32,
}

impl Loaded {
    /// Adds a record's entry with its search terms (the file's form);
    /// a newer record of the same workspace replaces the older one (whose
    /// terms are read back from `file`: they are not kept in memory).
    pub(super) fn add(&mut self, entry: Entry, terms: &str, file: &HistoryFile) {
        if let Some(old) = self.by_workspace.get(&entry.workspace).copied() {
            let same = {
                let o = &self.entries[old];
                o.ended == entry.ended
                    && o.terms_hash == entry.terms_hash
                    && o.tokens == entry.tokens
                    && o.outcome == entry.outcome
                    && o.line_len == entry.line_len
            };
            if same {
                // The same record again: point at the newer line.
                self.entries[old].offset = entry.offset;
                return;
            }
            self.alive[old] = false;
            let (o_offset, o_len) = (self.entries[old].offset, self.entries[old].line_len);
            let old_terms = file
                .read_details(o_offset, o_len)
                .map(|(t, _)| t)
                .unwrap_or_default();
            self.bm25.remove(old, crate::entry::terms(&old_terms));
        }
        let doc = self.bm25.add(crate::entry::terms(terms), entry.len);
        debug_assert_eq!(doc, self.entries.len());
        self.by_workspace.insert(entry.workspace.clone(), doc);
        self.entries.push(entry);
        self.alive.push(true);
        self.derived = None;
        self.similar_cache = None;
    }

    /// Gives back the room a whole load grew the index into.
    pub(super) fn shrink(&mut self) {
        self.entries.shrink_to_fit();
        self.alive.shrink_to_fit();
        self.by_workspace.shrink_to_fit();
        self.bm25.shrink();
    }

    /// Live documents, newest first (by end time, then workspace name).
    pub(super) fn newest_first(&self) -> Vec<usize> {
        let mut docs: Vec<usize> = (0..self.entries.len()).filter(|d| self.alive[*d]).collect();
        docs.sort_by(|a, b| {
            let (ea, eb) = (&self.entries[*a], &self.entries[*b]);
            eb.ended
                .cmp(&ea.ended)
                .then_with(|| eb.workspace.cmp(&ea.workspace))
        });
        docs
    }

    /// A document's terms (the file's form) and request, read from the file.
    pub(super) fn details(&self, file: &HistoryFile, doc: usize) -> Option<(String, String)> {
        let e = self.entries.get(doc)?;
        file.read_details(e.offset, e.line_len)
    }

    /// Full records of documents, read from the file (unreadable ones left out).
    pub(super) fn records(&self, file: &HistoryFile, docs: &[usize]) -> Vec<RunRecord> {
        let lines: Vec<(u64, u32)> = docs
            .iter()
            .map(|d| (self.entries[*d].offset, self.entries[*d].line_len))
            .collect();
        file.read_records(&lines)
            .into_iter()
            .zip(docs)
            .filter_map(|(r, d)| r.filter(|r| r.workspace == self.entries[*d].workspace))
            .collect()
    }

    pub(super) fn derived(&mut self, file: &HistoryFile) -> Arc<Derived> {
        if let Some(d) = &self.derived {
            return Arc::clone(d);
        }
        let newest = self.newest_first();
        let window: Vec<usize> = newest.into_iter().take(WINDOW_RUNS).collect();
        // Only runs with findings or friction need reading.
        let wanted: Vec<(usize, usize)> = window
            .iter()
            .enumerate()
            .filter(|(_, d)| self.entries[**d].reviewed || self.entries[**d].reported)
            .map(|(age, d)| (age, *d))
            .collect();
        let docs: Vec<usize> = wanted.iter().map(|(_, d)| *d).collect();
        let records = self.records(file, &docs);
        let ages: HashMap<&str, usize> = wanted
            .iter()
            .map(|(age, d)| (self.entries[*d].workspace.as_str(), *age))
            .collect();
        let mut findings = Vec::new();
        let mut friction = Vec::new();
        let (mut runs_with_reviews, mut reports) = (0u32, 0u32);
        for r in &records {
            let Some(age) = ages.get(r.workspace.as_str()).copied() else {
                continue;
            };
            let weight = recency_weight(age);
            let seen = (WINDOW_RUNS - age) as u64;
            if !r.findings.is_empty() || !r.verdicts.is_empty() {
                runs_with_reviews += 1;
            }
            if !r.friction.is_empty() {
                reports += 1;
            }
            for f in &r.findings {
                findings.push(Observation {
                    text: f.text.clone(),
                    phase: f.phase.clone(),
                    agent: f.agent.clone(),
                    severity: f.severity,
                    count: 1,
                    weight,
                    seen,
                    run: r.workspace.clone(),
                });
            }
            for item in &r.friction {
                friction.push(FrictionObservation {
                    item: item.clone(),
                    weight,
                    seen,
                    run: r.workspace.clone(),
                });
            }
        }
        let d = Arc::new(Derived {
            patterns: merge_findings(&findings),
            friction: crate::friction::merge(&friction),
            runs_with_reviews,
            reports,
        });
        self.derived = Some(Arc::clone(&d));
        d
    }
}
