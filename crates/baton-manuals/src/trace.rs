//! Traces: the full result of a `manual_find`, kept for `manual_hits`.
//!
//! Bounded by count (`TRACE_MAX_KEEP`, oldest evicted first) and by age
//! (`TRACE_TTL_SEC`, measured from creation; reads do not extend it).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::types::{ClaimGraph, NextAction, Summary};

/// Full reference of a candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CandidateRef {
    pub target: &'static str,
    pub manual_id: String,
    pub path: String,
    pub start_line: u32,
    /// JSON candidates are whole files; kept for schema compatibility.
    pub json_path: Option<String>,
}

/// A ranked section as stored in the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CandidateRow {
    #[serde(rename = "ref")]
    pub reference: CandidateRef,
    pub title: String,
    pub score: f64,
    pub coverage: f64,
    pub signals: Vec<crate::Signal>,
    pub matched_tokens: Vec<String>,
}

/// Files whose matching sections were not returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct UnscannedRow {
    pub manual_id: String,
    pub path: String,
    /// `candidate_cap` or `time_budget`.
    pub reason: &'static str,
    /// Matching sections not returned (0 when the file was not searched at all).
    pub sections: u32,
}

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

/// The bounded store.
pub(crate) struct TraceStore {
    entries: VecDeque<(String, Instant, Arc<TraceData>)>,
    max_keep: usize,
    ttl: Duration,
}

impl TraceStore {
    pub(crate) fn new(max_keep: usize, ttl: Duration) -> Self {
        TraceStore {
            entries: VecDeque::new(),
            max_keep: max_keep.max(1),
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
        while self.entries.len() >= self.max_keep {
            self.entries.pop_front();
        }
        self.entries.push_back((id, now, data));
    }

    /// A live trace.
    pub(crate) fn get(&mut self, id: &str, now: Instant) -> Option<Arc<TraceData>> {
        self.evict(now);
        self.entries
            .iter()
            .find(|(i, _, _)| i == id)
            .map(|(_, _, d)| Arc::clone(d))
    }

    /// Number of live traces (after evicting expired ones).
    pub(crate) fn len(&mut self, now: Instant) -> usize {
        self.evict(now);
        self.entries.len()
    }

    fn evict(&mut self, now: Instant) {
        while let Some((_, created, _)) = self.entries.front() {
            if now.saturating_duration_since(*created) >= self.ttl {
                self.entries.pop_front();
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::IntegrationStatus;

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
