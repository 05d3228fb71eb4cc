//! Estimates of the heap held by the service, by structure
//! ([`ManualService::memory_usage`]). Sizes count allocated capacity plus
//! a per-allocation overhead; they are estimates, not allocator statistics.

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

/// Estimated memory held by the manual service, by structure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryUsage {
    /// Bytes of index segments memory-mapped from disk (resident only as
    /// far as queries touch them; the kernel can drop them at any time).
    pub segments_mapped: usize,
    /// Bytes of index segments held in memory (no index directory).
    pub segments_in_memory: usize,
    /// Per-segment bookkeeping (deleted-document bits).
    pub bookkeeping: usize,
    /// Section texts read back from the files and cached.
    pub section_texts: usize,
    /// Stored traces (`manual_hits`).
    pub traces: usize,
    /// The `manual_find` result cache.
    pub cache: usize,
}

impl MemoryUsage {
    /// The index's heap (everything but traces, cache and mapped segments).
    pub fn index_total(&self) -> usize {
        self.segments_in_memory + self.bookkeeping + self.section_texts
    }

    /// Heap in total (mapped segments not counted).
    pub fn total(&self) -> usize {
        self.index_total() + self.traces + self.cache
    }
}
