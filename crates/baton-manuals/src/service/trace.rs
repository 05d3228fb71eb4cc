//! Traces: the full result of a `manual_find`, kept for `manual_hits`.
//!
//! Bounded by count (`TRACE_MAX_KEEP`, oldest evicted first) and by age
//! (`TRACE_TTL_SEC`, measured from creation; reads do not extend it).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::wire::types::{ClaimGraph, NextAction, Summary};

use crate::search::rows::{CandidateRow, UnscannedRow};

/// Everything a `manual_find` produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TraceData {
    pub query: String,
    pub candidates: Vec<CandidateRow>,
    pub unscanned: Vec<UnscannedRow>,
    pub conflicts: Vec<Value>,
    pub gaps: Vec<Value>,
    pub integrated_top: Vec<Value>,
    pub claim_graph: ClaimGraph,
    pub summary: Summary,
    pub next_actions: Vec<NextAction>,
    /// Diagnostics (stage, scope, cache mode …).
    pub applied: Value,
    /// Whether the result may be cached (not cut by the time budget).
    pub cacheable: bool,
}

impl TraceData {
    /// Estimated heap bytes (what this trace alone keeps alive: titles and
    /// paths shared with the index or other rows are not counted).
    pub(crate) fn heap_bytes(&self) -> usize {
        use crate::index::memory::buf;
        use std::mem::size_of;
        let mut token_lists: Vec<*const [String]> = Vec::new();
        let mut tokens = 0;
        for c in &self.candidates {
            let ptr = Arc::as_ptr(&c.matched_tokens);
            if !token_lists.contains(&ptr) {
                token_lists.push(ptr);
                tokens += buf(16 + c.matched_tokens.len() * size_of::<String>())
                    + c.matched_tokens
                        .iter()
                        .map(|t| buf(t.capacity()))
                        .sum::<usize>();
            }
        }
        let graph = &self.claim_graph;
        let claims: usize = graph
            .claims
            .iter()
            .map(|c| buf(c.claim_id.capacity()) + buf(c.text.capacity()))
            .sum();
        let evidences: usize = graph
            .evidences
            .iter()
            .map(|e| {
                buf(e.evidence_id.capacity())
                    + buf(e.reference.target.capacity())
                    + buf(e.reference.manual_id.capacity())
                    + buf(e.reference.path.capacity())
                    + buf(e.signals.capacity())
                    + buf(e.snippet_digest.capacity())
            })
            .sum();
        let edges: usize = graph
            .edges
            .iter()
            .map(|e| buf(e.from_claim_id.capacity()) + buf(e.to_evidence_id.capacity()))
            .sum();
        size_of::<Self>()
            + crate::index::memory::ALLOC_OVERHEAD
            + buf(self.query.capacity())
            + buf(self.candidates.capacity() * size_of::<CandidateRow>())
            + tokens
            + buf(self.unscanned.capacity() * size_of::<UnscannedRow>())
            + [&self.conflicts, &self.gaps, &self.integrated_top]
                .into_iter()
                .map(|v| {
                    buf(v.capacity() * size_of::<Value>()) + v.iter().map(value_heap).sum::<usize>()
                })
                .sum::<usize>()
            + buf(graph.claims.capacity() * size_of::<crate::wire::types::Claim>())
            + claims
            + buf(graph.evidences.capacity() * size_of::<crate::wire::types::Evidence>())
            + evidences
            + buf(graph.edges.capacity() * size_of::<crate::wire::types::Edge>())
            + edges
            + buf(graph.facets.capacity() * size_of::<crate::wire::types::FacetRow>())
            + buf(self.next_actions.capacity() * size_of::<NextAction>())
            + self
                .next_actions
                .iter()
                .filter_map(|a| a.params.as_ref())
                .map(value_heap)
                .sum::<usize>()
            + value_heap(&self.applied)
    }
}

/// Estimated heap bytes of a JSON value's children.
fn value_heap(v: &Value) -> usize {
    const VALUE: usize = std::mem::size_of::<Value>();
    match v {
        Value::String(s) => crate::index::memory::buf(s.capacity()),
        Value::Array(items) => {
            crate::index::memory::buf(items.capacity() * VALUE)
                + items.iter().map(value_heap).sum::<usize>()
        }
        // A B-tree node per entry, roughly: key, value and links.
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| crate::index::memory::buf(k.capacity()) + VALUE + 24 + value_heap(v))
            .sum(),
        _ => 0,
    }
}

/// Estimated heap the stored traces may hold together; the oldest are
/// evicted beyond it (the newest trace is always kept).
pub(crate) const TRACE_MAX_BYTES: usize = 4 * 1024 * 1024;

/// One stored trace: id, creation time, estimated bytes, data.
type TraceEntry = (String, Instant, usize, Arc<TraceData>);

/// The bounded store.
pub(crate) struct TraceStore {
    entries: VecDeque<TraceEntry>,
    max_keep: usize,
    max_bytes: usize,
    bytes: usize,
    ttl: Duration,
}

impl TraceStore {
    pub(crate) fn new(max_keep: usize, ttl: Duration) -> Self {
        TraceStore {
            entries: VecDeque::new(),
            max_keep: max_keep.max(1),
            max_bytes: TRACE_MAX_BYTES,
            bytes: 0,
            ttl,
        }
    }

    /// A fresh trace id: 32 lowercase hex digits.
    pub(crate) fn new_id() -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }

    /// Stores a trace under a new id created at `now`; returns the id.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, data: Arc<TraceData>, now: Instant) -> String {
        let id = Self::new_id();
        self.insert_with_id(id.clone(), data, now);
        id
    }

    /// Stores a trace under a given id created at `now`.
    pub(crate) fn insert_with_id(&mut self, id: String, data: Arc<TraceData>, now: Instant) {
        self.evict(now);
        let size = data.heap_bytes() + crate::index::memory::buf(id.capacity());
        while !self.entries.is_empty()
            && (self.entries.len() >= self.max_keep || self.bytes + size > self.max_bytes)
        {
            self.pop_oldest();
        }
        self.bytes += size;
        self.entries.push_back((id, now, size, data));
    }

    fn pop_oldest(&mut self) {
        if let Some((_, _, size, _)) = self.entries.pop_front() {
            self.bytes -= size;
        }
    }

    /// A live trace.
    pub(crate) fn get(&mut self, id: &str, now: Instant) -> Option<Arc<TraceData>> {
        self.evict(now);
        self.entries
            .iter()
            .find(|(i, _, _, _)| i == id)
            .map(|(_, _, _, d)| Arc::clone(d))
    }

    /// Number of live traces (after evicting expired ones).
    pub(crate) fn len(&mut self, now: Instant) -> usize {
        self.evict(now);
        self.entries.len()
    }

    /// Estimated heap bytes of the live traces.
    pub(crate) fn heap_bytes(&mut self, now: Instant) -> usize {
        self.evict(now);
        self.bytes + self.entries.capacity() * std::mem::size_of::<TraceEntry>()
    }

    fn evict(&mut self, now: Instant) {
        while let Some((_, created, _, _)) = self.entries.front() {
            if now.saturating_duration_since(*created) >= self.ttl {
                self.pop_oldest();
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::types::IntegrationStatus;

    fn data() -> Arc<TraceData> {
        Arc::new(TraceData {
            query: "q".into(),
            candidates: vec![],
            unscanned: vec![],
            conflicts: vec![],
            gaps: vec![],
            integrated_top: vec![],
            claim_graph: ClaimGraph {
                claims: vec![],
                evidences: vec![],
                edges: vec![],
                facets: vec![],
            },
            summary: Summary {
                scanned_files: 0,
                scanned_nodes: 0,
                candidates: 0,
                file_bias_ratio: 0.0,
                conflict_count: 0,
                gap_count: 0,
                integration_status: IntegrationStatus::Blocked,
            },
            next_actions: vec![],
            applied: Value::Null,
            cacheable: true,
        })
    }

    #[test]
    fn trace_bound_by_count_evicts_oldest() {
        let mut store = TraceStore::new(2, Duration::from_secs(60));
        let t0 = Instant::now();
        let a = store.insert(data(), t0);
        let b = store.insert(data(), t0);
        let c = store.insert(data(), t0);
        assert!(store.get(&a, t0).is_none());
        assert!(store.get(&b, t0).is_some());
        assert!(store.get(&c, t0).is_some());
        assert_eq!(store.len(t0), 2);
    }

    #[test]
    fn trace_bound_by_bytes_evicts_oldest_but_keeps_the_newest() {
        let mut store = TraceStore::new(100, Duration::from_secs(60));
        let one = data().heap_bytes() + crate::index::memory::buf(32);
        store.max_bytes = one * 2;
        let t0 = Instant::now();
        let a = store.insert(data(), t0);
        let b = store.insert(data(), t0);
        let c = store.insert(data(), t0);
        assert!(store.get(&a, t0).is_none());
        assert!(store.get(&b, t0).is_some() && store.get(&c, t0).is_some());
        store.max_bytes = 1;
        let d = store.insert(data(), t0);
        assert!(store.get(&d, t0).is_some());
        assert_eq!(store.len(t0), 1);
    }

    #[test]
    fn trace_bound_by_age_expires_from_creation() {
        let mut store = TraceStore::new(10, Duration::from_secs(5));
        let t0 = Instant::now();
        let a = store.insert(data(), t0);
        assert!(store.get(&a, t0 + Duration::from_secs(4)).is_some());
        // Reading did not extend the lifetime.
        assert!(store.get(&a, t0 + Duration::from_secs(5)).is_none());
        assert_eq!(store.len(t0 + Duration::from_secs(5)), 0);
    }
}
