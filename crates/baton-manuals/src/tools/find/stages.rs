//! The search stages of `manual_find`: stage 3 and 4, the head refinement,
//! the late rerank and the diversification across files.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use super::reply::integrate;
use super::request::{
    CHANGELOG_WEIGHT, Continuation, FindRequest, LOOSE_MIN_COVERAGE, LOOSE_PENALTY,
    MAX_UNSCANNED_FILES, Outcome, Scored,
};
use crate::corpus::Corpus;
use crate::index::manual::{DocId, FileRef};
use crate::search::claims;
use crate::search::query::{self, QueryPlan};
use crate::search::rows::UnscannedRow;
use crate::search::scoring::{self as search, SearchOptions};
use crate::service::state::ManualService;
use crate::wire::types::{ClaimStatus, Facet};

impl ManualService {
    pub(super) fn run_search(
        &self,
        corpus: &Corpus,
        req: &FindRequest,
        plan: &QueryPlan,
        continuation: Option<&Continuation>,
        deadline: Instant,
    ) -> Outcome {
        let all: Vec<String> = corpus.manual_ids().map(str::to_string).collect();
        // A continuation searches exactly the files its trace left unscanned,
        // in whichever manuals they are — also when the first search had
        // widened beyond `manual_id` (or the default manual).
        let scope: Vec<String> = match (continuation, &req.manual_id) {
            (Some(c), _) => all
                .iter()
                .filter(|m| c.files.iter().any(|(cm, _)| cm == *m))
                .cloned()
                .collect(),
            (None, Some(m)) => vec![m.clone()],
            (None, None) => all.clone(),
        };
        let exceptions_intent =
            claims::detect_facets(&plan.normalized).contains(&Facet::Exceptions);
        let mut outcome = Outcome {
            rows: Vec::new(),
            unscanned: Vec::new(),
            scanned_files: 0,
            scanned_nodes: 0,
            stage: 3,
            expanded: false,
            required_relaxed: false,
            required_met: 0,
            time_budget_hit: false,
            searched: HashSet::new(),
            max_candidates: req.max_candidates,
            tail: Vec::new(),
            unscanned_files: 0,
        };
        let mut rows = self.search_manuals(
            corpus,
            &scope,
            plan,
            false,
            exceptions_intent,
            continuation,
            deadline,
            &mut outcome,
        );
        if !plan.required.is_empty() {
            // A soft filter: keep the sections that contain the most of the
            // required phrases and terms; when none contains any, nothing
            // is filtered (relaxed).
            let best = rows.iter().map(|s| s.hit.required_met).max().unwrap_or(0);
            outcome.required_met = best;
            if best > 0 {
                rows.retain(|s| s.hit.required_met == best);
            } else {
                outcome.required_relaxed = !rows.is_empty();
            }
        }
        order_scored(&mut rows, req.max_candidates);
        if self.needs_stage4(corpus, req, plan, &rows) {
            outcome.stage = 4;
            let loose_scope: Vec<String> = if req.expand_scope && continuation.is_none() {
                all
            } else {
                scope.clone()
            };
            outcome.expanded = loose_scope.len() > scope.len();
            let known: HashSet<(Arc<str>, DocId)> = rows
                .iter()
                .map(|s| (Arc::clone(&s.manual_id), s.hit.doc))
                .collect();
            let loose_plan = query::loosen(plan);
            let extra = self.search_manuals(
                corpus,
                &loose_scope,
                &loose_plan,
                true,
                exceptions_intent,
                continuation,
                deadline,
                &mut outcome,
            );
            rows.extend(
                extra
                    .into_iter()
                    .filter(|s| {
                        s.hit.coverage >= LOOSE_MIN_COVERAGE
                            && !known.contains(&(Arc::clone(&s.manual_id), s.hit.doc))
                    })
                    .map(|mut s| {
                        s.hit.score *= LOOSE_PENALTY;
                        s
                    }),
            );
            order_scored(&mut rows, req.max_candidates);
        }
        diversify_files(corpus, &mut rows);
        // Sections cut by `max_candidates` and those that could never
        // reach the head are reported per file as `unscanned`.
        let cut = if rows.len() > req.max_candidates {
            rows.split_off(req.max_candidates)
        } else {
            Vec::new()
        };
        // Per manual, per segment, per file: sections cut.
        let mut counts: Vec<(Arc<str>, Vec<Vec<u32>>)> = std::mem::take(&mut outcome.tail);
        for s in &cut {
            let Some(file) = corpus
                .manual(&s.manual_id)
                .and_then(|m| m.file_of(s.hit.doc))
            else {
                continue;
            };
            let at = match counts
                .iter()
                .position(|(m, _)| Arc::ptr_eq(m, &s.manual_id))
            {
                Some(at) => at,
                None => {
                    let slots = corpus
                        .manual(&s.manual_id)
                        .map(|m| m.slot_file_counts())
                        .unwrap_or_default();
                    counts.push((
                        Arc::clone(&s.manual_id),
                        slots.into_iter().map(|n| vec![0; n]).collect(),
                    ));
                    counts.len() - 1
                }
            };
            if let Some(c) = counts[at]
                .1
                .get_mut(file.slot)
                .and_then(|v| v.get_mut(file.file as usize))
            {
                *c += 1;
            }
        }
        let mut per_file: Vec<(u32, Arc<str>, FileRef)> = Vec::new();
        for (manual_id, slots) in counts {
            for (slot, files) in slots.into_iter().enumerate() {
                for (file, n) in files.into_iter().enumerate() {
                    if n > 0 {
                        let file = FileRef {
                            slot,
                            file: file as u32,
                        };
                        per_file.push((n, Arc::clone(&manual_id), file));
                    }
                }
            }
        }
        outcome.unscanned_files = per_file.len();
        if per_file.len() > MAX_UNSCANNED_FILES {
            per_file.select_nth_unstable_by(MAX_UNSCANNED_FILES - 1, |a, b| b.0.cmp(&a.0));
            per_file.truncate(MAX_UNSCANNED_FILES);
        }
        let mut unscanned: Vec<UnscannedRow> = per_file
            .into_iter()
            .filter_map(|(n, manual_id, file)| {
                let path = corpus.manual(&manual_id)?.file_path(file)?;
                Some(UnscannedRow {
                    path: Arc::from(path),
                    manual_id,
                    reason: "candidate_cap",
                    sections: n,
                })
            })
            .collect();
        unscanned.sort_unstable_by(|a, b| (&a.manual_id, &a.path).cmp(&(&b.manual_id, &b.path)));
        outcome.unscanned.extend(unscanned);
        outcome.rows = rows;
        outcome
    }

    fn needs_stage4(
        &self,
        corpus: &Corpus,
        req: &FindRequest,
        plan: &QueryPlan,
        rows: &[Scored],
    ) -> bool {
        if plan.is_empty() {
            return false;
        }
        if rows.is_empty() {
            return true;
        }
        let c = &self.config.corrective;
        if !c.enabled {
            return false;
        }
        let integration = integrate(corpus, req, plan, rows, &self.thesaurus);
        let claims = &integration.graph.claims;
        let supported = claims
            .iter()
            .filter(|x| x.status == ClaimStatus::Supported)
            .count();
        let coverage = if claims.is_empty() {
            1.0
        } else {
            supported as f64 / claims.len() as f64
        };
        let top = rows[0].hit.score;
        let rest: Vec<f64> = rows.iter().skip(1).take(4).map(|s| s.hit.score).collect();
        let margin = if rest.is_empty() || top <= 0.0 {
            1.0
        } else {
            (top - rest.iter().sum::<f64>() / rest.len() as f64) / top
        };
        !integration.gaps.is_empty()
            || !integration.conflicts.is_empty()
            || rows.len() < c.min_candidates
            || coverage < c.coverage_min
            || margin < c.margin_min
    }

    #[allow(clippy::too_many_arguments, reason = "each part named at the call")]
    fn search_manuals(
        &self,
        corpus: &Corpus,
        scope: &[String],
        plan: &QueryPlan,
        loose: bool,
        exceptions_intent: bool,
        continuation: Option<&Continuation>,
        deadline: Instant,
        outcome: &mut Outcome,
    ) -> Vec<Scored> {
        let mut rows = Vec::new();
        for (i, manual_id) in scope.iter().enumerate() {
            let Some(index) = corpus.manual(manual_id) else {
                continue;
            };
            if i > 0 && Instant::now() >= deadline {
                outcome.time_budget_hit = true;
                let shared: Arc<str> = Arc::from(manual_id.as_str());
                outcome
                    .unscanned
                    .extend(index.files().into_iter().map(|(_, path)| UnscannedRow {
                        manual_id: Arc::clone(&shared),
                        path: Arc::from(path),
                        reason: "time_budget",
                        sections: 0,
                    }));
                continue;
            }
            let filter_fn = |doc: DocId| -> bool {
                continuation.is_none_or(|c| {
                    let Some(d) = index.doc(doc) else {
                        return false;
                    };
                    let path = index.file_path(d.file).unwrap_or("").to_string();
                    c.files.contains(&(manual_id.clone(), path.clone()))
                        && !c
                            .seen
                            .contains(&(manual_id.clone(), path, d.row.start_line))
                })
            };
            let opts = SearchOptions {
                scoring: &self.config.scoring,
                loose,
                filter: continuation.map(|_| &filter_fn as &dyn Fn(DocId) -> bool),
            };
            if outcome.searched.insert(manual_id.clone()) {
                outcome.scanned_files += index.file_count() as u32;
                outcome.scanned_nodes += index.doc_count();
            }
            let shared: Arc<str> = Arc::from(manual_id.as_str());
            let keep = outcome
                .max_candidates
                .max(search::REFINE_TOP)
                .max(self.config.scoring.late_rerank_top_n);
            let found = search::search(index, plan, &opts, keep);
            if !found.tail.is_empty() {
                outcome.tail.push((Arc::clone(&shared), found.tail));
            }
            rows.extend(found.hits.into_iter().map(|hit| Scored {
                manual_id: Arc::clone(&shared),
                hit,
            }));
        }
        // Refinement and late rerank work on the merged head: the best rows
        // of every manual searched together. Both only raise scores inside
        // the head, so the tail never needs looking at again.
        let head = rows
            .len()
            .min(search::REFINE_TOP.max(self.config.scoring.late_rerank_top_n));
        if head > 0 {
            order_scored(&mut rows, head);
            let phrases = search::phrase_groups(plan);
            for row in rows.iter_mut().take(search::REFINE_TOP) {
                if let Some(doc) = corpus
                    .manual(&row.manual_id)
                    .and_then(|m| m.doc(row.hit.doc))
                {
                    let text = corpus.doc_text(&row.manual_id, row.hit.doc);
                    search::refine(
                        &mut row.hit,
                        &text,
                        doc.row.exceptions,
                        plan,
                        &phrases,
                        exceptions_intent,
                    );
                    // Change logs name every feature; they answer a question
                    // only when it asks about changes or releases.
                    if doc.row.changelog && !crate::analyze::terms::is_changelog(&plan.normalized) {
                        row.hit.score *= CHANGELOG_WEIGHT;
                    }
                }
            }
            self.late_rerank(corpus, plan, &mut rows[..head]);
        }
        rows
    }

    /// The late rerank of the merged head (`rows` is that head, best first
    /// up to refinement): the `LATE_RERANK_TOP_N` best rows of every manual
    /// searched together (not each manual's own top,
    /// which with many manuals would rerank many times the sections that
    /// can reach the answer, and boost rows that never compete).
    fn late_rerank(&self, corpus: &Corpus, plan: &QueryPlan, rows: &mut [Scored]) {
        let scoring = &self.config.scoring;
        if !(scoring.late_rerank_enabled || self.late_reranker.is_some()) || plan.groups.is_empty()
        {
            return;
        }
        let top = rows.len().min(scoring.late_rerank_top_n);
        if top == 0 {
            return;
        }
        order_scored(rows, top);
        let head = &mut rows[..top];
        let mut concepts: HashMap<&str, Vec<search::Concept>> = HashMap::new();
        let mut scores = vec![0.0f64; top];
        let texts: Vec<Arc<str>> = head
            .iter()
            .map(|r| corpus.doc_text(&r.manual_id, r.hit.doc))
            .collect();
        if scoring.late_rerank_enabled {
            for ((row, score), text) in head.iter().zip(scores.iter_mut()).zip(&texts) {
                let Some(index) = corpus.manual(&row.manual_id) else {
                    continue;
                };
                let c = concepts
                    .entry(&row.manual_id)
                    .or_insert_with(|| search::concepts_for(index, plan));
                *score = search::late_similarity(text, plan, c);
            }
        }
        if let Some(reranker) = self.late_reranker.as_deref() {
            let located: Vec<Option<(&str, u32)>> = head
                .iter()
                .map(|r| {
                    let index = corpus.manual(&r.manual_id)?;
                    let doc = index.doc(r.hit.doc)?;
                    Some((index.file_path(doc.file)?, doc.row.start_line))
                })
                .collect();
            let inputs: Vec<crate::search::rerank::LateRerankCandidate<'_>> = head
                .iter()
                .zip(&located)
                .zip(&texts)
                .filter_map(|((r, at), text)| {
                    let (path, start_line) = (*at)?;
                    Some(crate::search::rerank::LateRerankCandidate {
                        manual_id: &r.manual_id,
                        path,
                        start_line,
                        text,
                        score: r.hit.score,
                    })
                })
                .collect();
            let external = reranker.rerank(&plan.normalized, &inputs);
            if external.len() == inputs.len() && inputs.len() == top {
                for (s, e) in scores.iter_mut().zip(external) {
                    if e.is_finite() {
                        *s = s.max(e.clamp(0.0, 1.0));
                    }
                }
            }
        }
        for (row, late) in head.iter_mut().zip(scores) {
            search::apply_late(&mut row.hit, late, scoring.late_rerank_weight);
        }
    }
}

/// Reorders the head across files ([`crate::search::diversify`]); `rows` is
/// ordered best first.
fn diversify_files(corpus: &Corpus, rows: &mut Vec<Scored>) {
    let top = rows.len().min(crate::search::diversify::DIVERSIFY_TOP);

    let keyed: Vec<((&str, Option<FileRef>), f64)> = rows[..top]
        .iter()
        .map(|s| {
            let file = corpus
                .manual(&s.manual_id)
                .and_then(|m| m.doc(s.hit.doc))
                .map(|d| d.file);
            ((&*s.manual_id, file), s.hit.score)
        })
        .collect();
    let order = crate::search::diversify::order(&keyed);
    let mut head: Vec<Option<Scored>> = rows.drain(..top).map(Some).collect();
    let reordered: Vec<Scored> = order
        .into_iter()
        .filter_map(|(i, score)| {
            let mut row = head.get_mut(i)?.take()?;
            row.hit.score = score;
            Some(row)
        })
        .collect();
    rows.splice(0..0, reordered);
}

/// Moves the `head` best rows to the front in their exact order: score
/// desc, then manual, path and line asc. The tail stays unordered.
fn order_scored(rows: &mut [Scored], head: usize) {
    let head = head.clamp(1, rows.len().max(1)).min(rows.len());
    if head == 0 {
        return;
    }
    // Ties are broken the same way inside and at the edge of the head, so
    // which rows make the head never depends on the input order.
    let order = |a: &Scored, b: &Scored| {
        b.hit
            .score
            .total_cmp(&a.hit.score)
            .then_with(|| a.manual_id.cmp(&b.manual_id))
            .then_with(|| a.hit.tie.cmp(&b.hit.tie))
    };
    if head < rows.len() {
        rows.select_nth_unstable_by(head - 1, order);
    }
    rows[..head].sort_by(order);
}

pub(super) fn cache_key(req: &FindRequest, plan: &QueryPlan) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        req.manual_id.as_deref().unwrap_or("*"),
        req.expand_scope,
        req.max_candidates,
        plan.normalized,
        req.required_terms.join("\u{1e}")
    )
}
