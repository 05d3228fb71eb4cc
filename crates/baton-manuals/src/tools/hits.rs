//! `manual_hits`: page through a trace.

use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::search::rows::CandidateRow;
use crate::service::state::{ManualService, lock};
use crate::service::trace::TraceData;
use crate::wire::args::{self, Args, MAX_ID_BYTES};
use crate::wire::convert::{to_args, typed};
use crate::wire::error::ManualError;
use crate::wire::types::{HitsInput, HitsKind, HitsOutput};

/// Default `limit`.
pub const DEFAULT_LIMIT: u64 = 50;

impl ManualService {
    /// `manual_hits({trace_id, kind?, offset?, limit?})`.
    pub fn hits(&self, request: HitsInput) -> Result<HitsOutput, ManualError> {
        let args = to_args(&request);
        let (trace_id, kind, offset, limit) = parse_hits(&args)?;
        let trace = lock(&self.traces)
            .get(trace_id, Instant::now())
            .ok_or_else(|| {
                ManualError::not_found(format!(
                    "trace_id {} not found (unknown or expired); run manual_find again",
                    args::echo(trace_id)
                ))
                .with_details(json!({ "trace_id": args::echo(trace_id) }))
            })?;
        let (total, items, manual_id) = rows(&trace, kind, offset, limit);
        Ok(HitsOutput {
            trace_id: trace_id.to_string(),
            kind,
            offset,
            limit,
            total,
            manual_id,
            items,
        })
    }
}

impl HitsInput {
    /// A `manual_hits` request from raw JSON arguments, by seed 002's rules.
    pub fn from_json(args: &Value) -> Result<HitsInput, ManualError> {
        parse_hits(args)?;
        typed(args, &["offset", "limit"], &["kind"])
    }
}

fn parse_hits(args: &Value) -> Result<(&str, HitsKind, u64, u64), ManualError> {
    let a = Args::new("", args, &["trace_id", "kind", "offset", "limit"])?;
    let trace_id = a.req_str("trace_id", MAX_ID_BYTES)?;
    let kind = match a.get("kind") {
        None => HitsKind::Candidates,
        Some(v) => parse_kind(v)?,
    };
    let offset = a.opt_int("offset", 0)?.unwrap_or(0) as u64;
    let limit = a
        .opt_int("limit", 1)?
        .map(|l| l as u64)
        .unwrap_or(DEFAULT_LIMIT);
    Ok((trace_id, kind, offset, limit))
}

fn parse_kind(v: &Value) -> Result<HitsKind, ManualError> {
    let Value::String(s) = v else {
        return Err(ManualError::invalid_parameter(
            "kind",
            format!("kind must be a string, got {}", args::type_name(v)),
        ));
    };
    HitsKind::ALL
        .into_iter()
        .find(|k| k.as_str() == s.trim())
        .ok_or_else(|| {
            let names: Vec<&str> = HitsKind::ALL.iter().map(|k| k.as_str()).collect();
            ManualError::invalid_parameter(
                "kind",
                format!(
                    "unknown kind {}; use one of: {}",
                    args::echo(s),
                    names.join(", ")
                ),
            )
        })
}

fn page<T: serde::Serialize>(all: &[T], offset: u64, limit: u64) -> (u64, Vec<Value>) {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(all.len());
    let end = start
        .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
        .min(all.len());
    let items = all[start..end]
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    (all.len() as u64, items)
}

fn rows(
    trace: &TraceData,
    kind: HitsKind,
    offset: u64,
    limit: u64,
) -> (u64, Vec<Value>, Option<String>) {
    match kind {
        HitsKind::Candidates => {
            let first = trace
                .candidates
                .first()
                .map(|c| c.reference.manual_id.clone());
            let hoisted = first
                .filter(|m| trace.candidates.iter().all(|c| &c.reference.manual_id == m))
                .map(|m| m.to_string());
            let compact: Vec<Value> = trace
                .candidates
                .iter()
                .map(|c| compact_candidate(c, hoisted.is_none()))
                .collect();
            let (total, items) = page(&compact, offset, limit);
            (total, items, hoisted)
        }
        HitsKind::Unscanned => with_none(page(&trace.unscanned, offset, limit)),
        HitsKind::Conflicts => with_none(page(&trace.conflicts, offset, limit)),
        HitsKind::Gaps => with_none(page(&trace.gaps, offset, limit)),
        HitsKind::IntegratedTop => with_none(page(&trace.integrated_top, offset, limit)),
        HitsKind::Claims => with_none(page(&trace.claim_graph.claims, offset, limit)),
        HitsKind::Evidences => with_none(page(&trace.claim_graph.evidences, offset, limit)),
        HitsKind::Edges => with_none(page(&trace.claim_graph.edges, offset, limit)),
    }
}

fn with_none((total, items): (u64, Vec<Value>)) -> (u64, Vec<Value>, Option<String>) {
    (total, items, None)
}

/// The compressed candidate row: no `target`/`json_path`; `ref.manual_id`
/// only when the rows span several manuals.
fn compact_candidate(c: &CandidateRow, with_manual: bool) -> Value {
    let mut reference = Map::new();
    if with_manual {
        reference.insert("manual_id".into(), json!(c.reference.manual_id));
    }
    reference.insert("path".into(), json!(c.reference.path));
    reference.insert("start_line".into(), json!(c.reference.start_line));
    json!({
        "ref": reference,
        "title": c.title,
        "score": c.score,
        "signals": c.signals,
        "matched_tokens": c.matched_tokens,
    })
}
