//! `manual_find`: search, integrate into a claim graph, store a trace.
//!
//! Stages: stage 3 is the BM25 search of the requested scope. Stage 4 (a
//! loose search — single kanji also match — over every manual when
//! `expand_scope` is true) runs when stage 3 found nothing, or, with
//! `CORRECTIVE_ENABLED=true`, when its quality is weak (gaps, conflicts,
//! low claim coverage, small top-score margin, few candidates).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::analyze::exceptions::EXCEPTION_MARKERS;
use crate::corpus::Corpus;
use crate::index::manual::{DocId, FileRef};
use crate::search::claims::{self, EVIDENCE_LIMIT, EvidenceInput, Integration, round3};
use crate::search::query::{self, QueryPlan};
use crate::search::rows::{CandidateRef, CandidateRow, UnscannedRow};
use crate::search::scoring::{self as search, Hit, SearchOptions};
use crate::service::state::{ManualService, lock};
use crate::service::trace::{TraceData, TraceStore};
use crate::wire::args::{Args, MAX_ID_BYTES, MAX_QUERY_BYTES};
use crate::wire::convert::{to_args, typed};
use crate::wire::error::ManualError;
use crate::wire::ids as paths;
use crate::wire::types::{
    ClaimStatus, Facet, FindInput, FindOutput, IntegrationStatus, NextAction, NextActionType,
    Summary,
};
use baton_text::thesaurus::Thesaurus;

/// Default `budget.time_ms`.
pub const DEFAULT_TIME_MS: u64 = 60_000;
/// Default `budget.max_candidates`.
pub const DEFAULT_MAX_CANDIDATES: u64 = 200;
/// Most files listed as `unscanned` because of the candidate cap (those
/// with the most cut sections); `applied.unscanned_files` gives the total.
pub const MAX_UNSCANNED_FILES: usize = 1000;
/// Score factor of change-log and release-note sections for a question
/// that is not about changes.
const CHANGELOG_WEIGHT: f64 = 0.5;
/// Score factor of stage-4 (loose) candidates.
const LOOSE_PENALTY: f64 = 0.8;
/// Minimum coverage of a stage-4 candidate.
const LOOSE_MIN_COVERAGE: f64 = 0.5;

/// A validated `manual_find` call.
#[derive(Debug, Clone)]
struct FindRequest {
    query: String,
    manual_id: Option<String>,
    expand_scope: bool,
    only_unscanned: Option<String>,
    include_claim_graph: bool,
    use_cache: bool,
    max_candidates: usize,
    time_ms: u64,
    /// The caller's `required_terms` (extension; 0–2 distinct terms).
    required_terms: Vec<String>,
}

/// Most `required_terms` a call may give.
pub const MAX_REQUIRED_TERMS: usize = 2;
/// Longest required term, in bytes.
pub const MAX_REQUIRED_TERM_BYTES: usize = 256;

/// One scored section of some manual.
struct Scored {
    manual_id: Arc<str>,
    hit: Hit,
}

/// Restriction from `only_unscanned_from_trace_id`.
struct Continuation {
    files: HashSet<(String, String)>,
    seen: HashSet<(String, String, u32)>,
}

struct Outcome {
    rows: Vec<Scored>,
    unscanned: Vec<UnscannedRow>,
    scanned_files: u32,
    scanned_nodes: u32,
    stage: u8,
    expanded: bool,
    required_relaxed: bool,
    /// Most required phrases/terms any kept candidate contains.
    required_met: u8,
    time_budget_hit: bool,
    searched: HashSet<String>,
    /// The call's `budget.max_candidates`.
    max_candidates: usize,
    /// Sections that could not reach the head, per file (counted into
    /// `unscanned` with the rows cut by `max_candidates`).
    tail: Vec<(Arc<str>, Vec<Vec<u32>>)>,
    /// Files with cut sections (`unscanned` lists at most
    /// `MAX_UNSCANNED_FILES` of them, most cut first).
    unscanned_files: usize,
}

impl ManualService {
    /// `manual_find({query, manual_id?, expand_scope?, only_unscanned_from_trace_id?, include_claim_graph?, use_cache?, budget?})`.
    pub fn find(&self, request: FindInput) -> Result<FindOutput, ManualError> {
        let started = Instant::now();
        let mut req = parse_find(&to_args(&request))?;
        if req.manual_id.is_none() {
            req.manual_id = self.config.default_manual_id.clone();
        }
        let req = FindRequest {
            use_cache: req.use_cache.unwrap_or(self.config.sem_cache_enabled),
            ..req.resolved()
        };
        if let Some(m) = &req.manual_id {
            self.root.manual_dir(m)?;
            self.ensure_manual(m);
        } else {
            self.ensure_fresh();
        }
        let continuation = match &req.only_unscanned {
            None => None,
            Some(id) => Some(self.continuation(id)?),
        };
        let plan = query::analyze_with(&req.query, &req.required_terms, &self.thesaurus);
        let cache_key = (req.use_cache && continuation.is_none()).then(|| cache_key(&req, &plan));
        let mut cache_mode = if cache_key.is_some() {
            "miss"
        } else {
            "bypass"
        };
        let corpus = self.read_corpus();
        if let Some(key) = &cache_key {
            let mut cache = lock(&self.cache);
            cache.sync_generation(corpus.generation());
            if let Some(hit) = cache.get(key, Instant::now()) {
                if self.guard_accepts(&hit.summary) {
                    cache.stats.hits += 1;
                    drop(cache);
                    drop(corpus);
                    return Ok(self.answer_from_cache(&req, &hit));
                }
                cache.stats.guard_revalidations += 1;
                cache_mode = "guard_revalidate";
            } else {
                cache.stats.misses += 1;
            }
        }
        let trace_id = TraceStore::new_id();
        let deadline = started + Duration::from_millis(req.time_ms);
        let mut outcome = self.run_search(&corpus, &req, &plan, continuation.as_ref(), deadline);
        let mut corpus = corpus;
        if crate::index::segment::guard::is_damaged() {
            // A segment file was truncated under the search: what it read
            // was zeros. Reload (re-indexing what is damaged) and search again.
            drop(corpus);
            self.ensure_fresh();
            corpus = self.read_corpus();
            outcome = self.run_search(&corpus, &req, &plan, continuation.as_ref(), deadline);
        }
        let data = build_trace(
            &corpus,
            &req,
            &plan,
            &trace_id,
            outcome,
            cache_mode,
            &self.thesaurus,
        );
        drop(corpus);
        let data = Arc::new(data);
        if let Some(key) = cache_key
            && data.cacheable
        {
            lock(&self.cache).put(key, Arc::clone(&data), Instant::now());
        }
        lock(&self.traces).insert_with_id(trace_id.clone(), Arc::clone(&data), Instant::now());
        self.trim_memory();
        Ok(output(&trace_id, &data, req.include_claim_graph))
    }
}

impl FindInput {
    /// A `manual_find` request from raw JSON arguments, by seed 002's rules
    /// (unknown fields, types, sizes, ids; see docs/manuals.md §2).
    pub fn from_json(args: &Value) -> Result<FindInput, ManualError> {
        parse_find(args)?;
        typed(args, &["budget.max_candidates", "budget.time_ms"], &[])
    }
}

/// A parsed `manual_find` call before the service's defaults.
struct ParsedFind {
    request: FindRequest,
    manual_id: Option<String>,
    use_cache: Option<bool>,
}

impl ParsedFind {
    fn resolved(self) -> FindRequest {
        FindRequest {
            manual_id: self.manual_id,
            ..self.request
        }
    }
}

fn parse_find(args: &Value) -> Result<ParsedFind, ManualError> {
    {
        let a = Args::new(
            "",
            args,
            &[
                "query",
                "manual_id",
                "expand_scope",
                "only_unscanned_from_trace_id",
                "include_claim_graph",
                "use_cache",
                "budget",
                "required_terms",
            ],
        )?;
        let query = a.req_str("query", MAX_QUERY_BYTES)?.to_string();
        let manual_id = match a.get("manual_id") {
            Some(v) => Some(paths::manual_id("manual_id", v)?),
            None => None,
        };
        let expand_scope = a.opt_bool("expand_scope")?.unwrap_or(true);
        let only_unscanned = a
            .opt_str("only_unscanned_from_trace_id", MAX_ID_BYTES)?
            .map(str::to_string);
        let include_claim_graph = a.opt_bool("include_claim_graph")?.unwrap_or(false);
        let use_cache = a.opt_bool("use_cache")?;
        let (max_candidates, time_ms) = match a.get("budget") {
            None => (DEFAULT_MAX_CANDIDATES as i64, DEFAULT_TIME_MS as i64),
            Some(b) => {
                let b = Args::new("budget", b, &["max_candidates", "time_ms"])?;
                (
                    b.opt_int("max_candidates", 1)?
                        .unwrap_or(DEFAULT_MAX_CANDIDATES as i64),
                    b.opt_int("time_ms", 1)?.unwrap_or(DEFAULT_TIME_MS as i64),
                )
            }
        };
        let required_terms = parse_required_terms(&a)?;
        Ok(ParsedFind {
            request: FindRequest {
                required_terms,
                query,
                manual_id: None,
                expand_scope,
                only_unscanned,
                include_claim_graph,
                use_cache: false,
                max_candidates: usize::try_from(max_candidates).unwrap_or(usize::MAX),
                time_ms: u64::try_from(time_ms).unwrap_or(u64::MAX),
            },
            manual_id,
            use_cache,
        })
    }
}

impl ManualService {
    fn continuation(&self, trace_id: &str) -> Result<Continuation, ManualError> {
        let prior = lock(&self.traces).get(trace_id, Instant::now()).ok_or_else(|| {
            ManualError::not_found(format!(
                "only_unscanned_from_trace_id {trace_id:?} not found (unknown or expired); run manual_find again"
            ))
            .with_details(json!({ "trace_id": trace_id }))
        })?;
        Ok(Continuation {
            files: prior
                .unscanned
                .iter()
                .map(|u| (u.manual_id.to_string(), u.path.to_string()))
                .collect(),
            seen: prior
                .candidates
                .iter()
                .map(|c| {
                    (
                        c.reference.manual_id.to_string(),
                        c.reference.path.to_string(),
                        c.reference.start_line,
                    )
                })
                .collect(),
        })
    }

    fn guard_accepts(&self, summary: &Summary) -> bool {
        let gap_ok = self
            .config
            .sem_cache_max_summary_gap
            .is_none_or(|max| u64::from(summary.gap_count) <= max);
        let conflict_ok = self
            .config
            .sem_cache_max_summary_conflict
            .is_none_or(|max| u64::from(summary.conflict_count) <= max);
        gap_ok && conflict_ok
    }

    fn answer_from_cache(&self, req: &FindRequest, hit: &TraceData) -> FindOutput {
        let trace_id = TraceStore::new_id();
        let mut data = hit.clone();
        data.next_actions = next_actions(req, &trace_id, &data);
        if let Value::Object(map) = &mut data.applied {
            map.insert("cache".into(), json!("hit"));
        }
        let data = Arc::new(data);
        lock(&self.traces).insert_with_id(trace_id.clone(), Arc::clone(&data), Instant::now());
        output(&trace_id, &data, req.include_claim_graph)
    }

    fn run_search(
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

fn cache_key(req: &FindRequest, plan: &QueryPlan) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        req.manual_id.as_deref().unwrap_or("*"),
        req.expand_scope,
        req.max_candidates,
        plan.normalized,
        req.required_terms.join("\u{1e}")
    )
}

/// `required_terms` (an extension of seed 002, as the Python reference
/// accepts it): absent/null, or an array of 1–2 non-blank strings;
/// duplicates (after normalisation) count once.
fn parse_required_terms(a: &Args<'_>) -> Result<Vec<String>, ManualError> {
    let Some(value) = a.get("required_terms") else {
        return Ok(Vec::new());
    };
    let field = a.field("required_terms");
    let Value::Array(items) = value else {
        return Err(ManualError::invalid_parameter(
            &field,
            format!(
                "{field} must be an array of 1 to {MAX_REQUIRED_TERMS} strings, got {}",
                crate::wire::args::type_name(value)
            ),
        ));
    };
    let mut terms: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let term =
            crate::wire::args::string(&format!("{field}[{i}]"), item, MAX_REQUIRED_TERM_BYTES)?;
        let norm = baton_text::normalize::normalize(term);
        if !terms
            .iter()
            .any(|t| baton_text::normalize::normalize(t) == norm)
        {
            terms.push(term.to_string());
        }
    }
    if terms.is_empty() || terms.len() > MAX_REQUIRED_TERMS {
        return Err(ManualError::invalid_parameter(
            &field,
            format!(
                "{field} must hold 1 to {MAX_REQUIRED_TERMS} distinct terms, got {}",
                terms.len()
            ),
        ));
    }
    Ok(terms)
}

/// Turns scored rows into candidate rows (scores rounded to 4 decimals).
/// Manual ids and paths are shared with the index; titles and matched-token
/// lists are interned within the result.
fn candidate_rows(corpus: &Corpus, plan: &QueryPlan, rows: &[Scored]) -> Vec<CandidateRow> {
    let mut titles: HashMap<String, Arc<str>> = HashMap::new();
    let mut paths: HashMap<(*const str, FileRef), Arc<str>> = HashMap::new();
    let mut token_lists: HashMap<u64, Arc<[String]>> = HashMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for s in rows {
        let Some(index) = corpus.manual(&s.manual_id) else {
            continue;
        };
        let Some(doc) = index.doc(s.hit.doc) else {
            continue;
        };
        let path = match paths.get(&(Arc::as_ptr(&s.manual_id), doc.file)) {
            Some(p) => Arc::clone(p),
            None => {
                let p: Arc<str> = Arc::from(index.file_path(doc.file).unwrap_or(""));
                paths.insert((Arc::as_ptr(&s.manual_id), doc.file), Arc::clone(&p));
                p
            }
        };
        let title = index
            .section_of(&doc)
            .map(|sec| sec.title)
            .unwrap_or_default();
        let title = Arc::clone(
            titles
                .entry(title)
                .or_insert_with_key(|t| Arc::from(t.as_str())),
        );
        let matched_tokens = Arc::clone(token_lists.entry(s.hit.terms).or_insert_with(|| {
            search::matched_terms(plan, s.hit.terms)
                .into_iter()
                .take(12)
                .collect()
        }));
        out.push(CandidateRow {
            reference: CandidateRef {
                target: "manual",
                manual_id: Arc::clone(&s.manual_id),
                path,
                start_line: doc.row.start_line,
                json_path: None,
            },
            title,
            score: (s.hit.score * 10_000.0).round() / 10_000.0,
            coverage: round3(s.hit.coverage),
            signals: s.hit.signals,
            matched_tokens,
        });
    }
    out
}

fn integrate(
    corpus: &Corpus,
    req: &FindRequest,
    plan: &QueryPlan,
    rows: &[Scored],
    thesaurus: &Thesaurus,
) -> Integration {
    let top: Vec<&Scored> = rows.iter().take(EVIDENCE_LIMIT).collect();
    let candidate_rows = candidate_rows(corpus, &query::loosen(plan), &rows[..top.len()]);
    let texts: Vec<(Arc<str>, bool)> = top
        .iter()
        .map(|s| {
            let index = corpus.manual(&s.manual_id);
            let doc = index.and_then(|m| m.doc(s.hit.doc));
            let text = corpus.doc_text(&s.manual_id, s.hit.doc);
            let heading = doc
                .and_then(|d| index.and_then(|m| m.section_of(&d)))
                .map(|sec| baton_text::normalize::normalize(&sec.title))
                .unwrap_or_default();
            (text, EXCEPTION_MARKERS.iter().any(|m| heading.contains(m)))
        })
        .collect();
    let inputs: Vec<EvidenceInput<'_>> = candidate_rows
        .iter()
        .zip(&texts)
        .map(|(row, (text, exclusion_heading))| EvidenceInput {
            row,
            text,
            exclusion_heading: *exclusion_heading,
        })
        .collect();
    claims::integrate(&req.query, &plan.normalized, &inputs, thesaurus)
}

fn build_trace(
    corpus: &Corpus,
    req: &FindRequest,
    plan: &QueryPlan,
    trace_id: &str,
    outcome: Outcome,
    cache_mode: &str,
    thesaurus: &Thesaurus,
) -> TraceData {
    let integration = integrate(corpus, req, plan, &outcome.rows, thesaurus);
    let candidates = candidate_rows(corpus, &query::loosen(plan), &outcome.rows);
    let n = candidates.len() as u32;
    let mut per_file: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for c in &candidates {
        *per_file
            .entry((&*c.reference.manual_id, &*c.reference.path))
            .or_insert(0) += 1;
    }
    let file_bias_ratio = if n == 0 {
        0.0
    } else {
        round3(f64::from(per_file.values().copied().max().unwrap_or(0)) / f64::from(n))
    };
    let conflict_count = integration.conflicts.len() as u32;
    let gap_count = integration.gaps.len() as u32;
    let integration_status = if n == 0 {
        IntegrationStatus::Blocked
    } else if conflict_count == 0 && gap_count == 0 {
        IntegrationStatus::Ready
    } else {
        IntegrationStatus::NeedsFollowup
    };
    let summary = Summary {
        scanned_files: outcome.scanned_files,
        scanned_nodes: outcome.scanned_nodes,
        candidates: n,
        file_bias_ratio,
        conflict_count,
        gap_count,
        integration_status,
    };
    let applied = json!({
        "manual_id": req.manual_id,
        "expand_scope": req.expand_scope,
        "stage": outcome.stage,
        "scope_expanded": outcome.expanded,
        "required_phrases": plan.required,
        "required_relaxed": outcome.required_relaxed,
        "required_terms": req.required_terms,
        "required_status": required_status(plan, &outcome),
        "max_candidates": req.max_candidates,
        "time_ms": req.time_ms,
        "time_budget_hit": outcome.time_budget_hit,
        "unscanned_files": outcome.unscanned_files,
        "cache": cache_mode,
    });
    let mut data = TraceData {
        query: req.query.clone(),
        candidates,
        unscanned: outcome.unscanned,
        conflicts: integration.conflicts,
        gaps: integration.gaps,
        integrated_top: integration.integrated_top,
        claim_graph: integration.graph,
        summary,
        next_actions: Vec::new(),
        applied,
        cacheable: !outcome.time_budget_hit,
    };
    data.next_actions = next_actions(req, trace_id, &data);
    data
}

/// How the required phrases and terms constrained the result:
/// `none` (there were none), `effective` (kept candidates contain all),
/// `partial` (the best contain some), `relaxed` (none contains any, so
/// nothing was filtered).
fn required_status(plan: &QueryPlan, outcome: &Outcome) -> &'static str {
    let wanted = plan.required.len();
    if wanted == 0 {
        "none"
    } else if usize::from(outcome.required_met) >= wanted {
        "effective"
    } else if outcome.required_met > 0 {
        "partial"
    } else {
        "relaxed"
    }
}

/// Suggested follow-up calls, most useful first.
fn next_actions(req: &FindRequest, trace_id: &str, data: &TraceData) -> Vec<NextAction> {
    let mut actions = Vec::new();
    if let Some(top) = data.candidates.first() {
        let confidence = data
            .claim_graph
            .claims
            .iter()
            .map(|c| c.confidence)
            .fold(0.0, f64::max);
        actions.push(NextAction {
            action_type: NextActionType::ManualRead,
            confidence: Some(round3(confidence.max(top.coverage * 0.5))),
            params: Some(json!({
                "ref": {
                    "manual_id": top.reference.manual_id,
                    "path": top.reference.path,
                    "start_line": top.reference.start_line,
                }
            })),
        });
        if !data.conflicts.is_empty() {
            actions.push(hits_action(trace_id, "conflicts"));
        }
        if !data.gaps.is_empty() {
            actions.push(hits_action(trace_id, "gaps"));
        }
        actions.push(NextAction {
            action_type: NextActionType::ManualHits,
            confidence: None,
            params: Some(
                json!({ "trace_id": trace_id, "kind": "candidates", "offset": 0, "limit": 10 }),
            ),
        });
        if data.unscanned.iter().any(|u| u.reason == "candidate_cap") {
            actions.push(NextAction {
                action_type: NextActionType::ManualFind,
                confidence: None,
                params: Some(json!({
                    "query": req.query,
                    "manual_id": req.manual_id,
                    "only_unscanned_from_trace_id": trace_id,
                })),
            });
        }
    } else {
        let mut params = json!({ "query": req.query, "use_cache": false });
        if req.manual_id.is_some() && !req.expand_scope {
            params["expand_scope"] = json!(true);
        }
        actions.push(NextAction {
            action_type: NextActionType::ManualFind,
            confidence: None,
            params: Some(params),
        });
    }
    actions
}

fn hits_action(trace_id: &str, kind: &str) -> NextAction {
    NextAction {
        action_type: NextActionType::ManualHits,
        confidence: None,
        params: Some(json!({ "trace_id": trace_id, "kind": kind, "offset": 0, "limit": 50 })),
    }
}

fn output(trace_id: &str, data: &TraceData, include_claim_graph: bool) -> FindOutput {
    FindOutput {
        trace_id: trace_id.to_string(),
        claim_graph: include_claim_graph.then(|| data.claim_graph.clone()),
        summary: data.summary.clone(),
        next_actions: data.next_actions.clone(),
    }
}
