//! `manual_find`: search, integrate into a claim graph, store a trace.
//!
//! Stages: stage 3 is the BM25 search of the requested scope. Stage 4 (a
//! loose search — single kanji also match — over every manual when
//! `expand_scope` is true) runs when stage 3 found nothing, or, with
//! `CORRECTIVE_ENABLED=true`, when its quality is weak (gaps, conflicts,
//! low claim coverage, small top-score margin, few candidates).
//!
//! Here: the call's flow, its types and the cache. `parse` validates the
//! arguments, `stages` runs the search stages and orders the rows, `reply`
//! builds the candidate rows, claim graph, trace and next calls.

mod parse;
mod reply;
mod request;
mod stages;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::search::query;
use crate::service::state::{ManualService, lock};
use crate::service::trace::{TraceData, TraceStore};
use crate::wire::convert::to_args;
use crate::wire::error::ManualError;
use crate::wire::types::{FindInput, FindOutput, Summary};
use parse::parse_find;
use reply::{build_trace, next_actions, output};
use request::{Continuation, FindRequest};
use stages::cache_key;

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

impl ManualService {
    fn continuation(&self, trace_id: &str) -> Result<Continuation, ManualError> {
        let prior = lock(&self.traces).get(trace_id, Instant::now()).ok_or_else(|| {
            ManualError::not_found(format!(
                "only_unscanned_from_trace_id {} not found (unknown or expired); run manual_find again",
                crate::wire::args::echo(trace_id)
            ))
            .with_details(json!({ "trace_id": crate::wire::args::echo(trace_id) }))
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
}
