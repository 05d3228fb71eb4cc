//! The reply of `manual_find`: candidate rows, the claim graph, the trace
//! and the suggested next calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::json;

use super::request::{FindRequest, Outcome, Scored};
use crate::analyze::exceptions::EXCEPTION_MARKERS;
use crate::corpus::Corpus;
use crate::index::manual::FileRef;
use crate::search::claims::{self, EVIDENCE_LIMIT, EvidenceInput, Integration, round3};
use crate::search::query::{self, QueryPlan};
use crate::search::rows::{CandidateRef, CandidateRow};
use crate::search::scoring::{self as search};
use crate::service::trace::TraceData;
use crate::wire::types::{FindOutput, IntegrationStatus, NextAction, NextActionType, Summary};
use baton_text::thesaurus::Thesaurus;

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

pub(super) fn integrate(
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

pub(super) fn build_trace(
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
pub(super) fn next_actions(req: &FindRequest, trace_id: &str, data: &TraceData) -> Vec<NextAction> {
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

pub(super) fn output(trace_id: &str, data: &TraceData, include_claim_graph: bool) -> FindOutput {
    FindOutput {
        trace_id: trace_id.to_string(),
        claim_graph: include_claim_graph.then(|| data.claim_graph.clone()),
        summary: data.summary.clone(),
        next_actions: data.next_actions.clone(),
    }
}
