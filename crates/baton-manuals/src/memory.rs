//! Estimates of the heap held by the service, by structure
//! ([`ManualService::memory_usage`]). Sizes count allocated capacity plus
//! a per-allocation overhead; they are estimates, not allocator statistics.

use std::time::Instant;

use crate::service::{ManualService, lock};

/// Per-allocation bookkeeping assumed by the estimates (glibc malloc: 16 bytes).
pub(crate) const ALLOC_OVERHEAD: usize = 16;

/// Heap bytes of a `String`/`Vec<u8>`-like buffer of `capacity` bytes.
pub(crate) fn buf(capacity: usize) -> usize {
    if capacity == 0 {
        0
    } else {
        capacity + ALLOC_OVERHEAD
    }
}

/// Estimated heap bytes held by the manual service, by structure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryUsage {
    /// Posting lists (document ids and field frequencies).
    pub postings: usize,
    /// Per-document data (paths, lines, lengths, term lists).
    pub documents: usize,
    /// Section texts kept for phrase checks and late rerank.
    pub section_texts: usize,
    /// The term dictionary (term strings and the lookup table).
    pub terms: usize,
    /// File records (paths, fingerprints, section lists and titles).
    pub files: usize,
    /// Stored traces (`manual_hits`).
    pub traces: usize,
    /// The `manual_find` result cache.
    pub cache: usize,
}

impl MemoryUsage {
    /// The index structures (everything but traces and cache).
    pub fn index_total(&self) -> usize {
        self.postings + self.documents + self.section_texts + self.terms + self.files
    }

    /// Everything.
    pub fn total(&self) -> usize {
        self.index_total() + self.traces + self.cache
    }
}

impl ManualService {
    /// Estimated heap held by the index, the traces and the result cache.
    pub fn memory_usage(&self) -> MemoryUsage {
        let mut usage = MemoryUsage::default();
        {
            let corpus = self.read_corpus();
            for id in corpus.manual_ids() {
                if let Some(index) = corpus.manual(id) {
                    index.add_memory(&mut usage);
                }
            }
        }
        usage.traces = lock(&self.traces).heap_bytes(Instant::now());
        usage.cache = lock(&self.cache).heap_bytes();
        usage
    }
}
