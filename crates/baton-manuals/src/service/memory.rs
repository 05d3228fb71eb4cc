//! [`ManualService::memory_usage`]: the heap held by the index, the traces
//! and the result cache, by structure.

use std::time::Instant;

use crate::index::memory::MemoryUsage;
use crate::service::state::{ManualService, lock};

impl ManualService {
    /// Estimated memory held by the index, the traces and the result cache.
    pub fn memory_usage(&self) -> MemoryUsage {
        let mut usage = MemoryUsage::default();
        {
            let corpus = self.read_corpus();
            for id in corpus.manual_ids() {
                if let Some(index) = corpus.manual(id) {
                    index.add_memory(&mut usage);
                }
            }
            usage.section_texts = corpus.text_cache_bytes();
        }
        usage.traces = lock(&self.traces).heap_bytes(Instant::now());
        usage.cache = lock(&self.cache).heap_bytes();
        usage
    }
}
