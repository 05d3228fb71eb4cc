//! The `manual_find` result cache: an LRU of finished traces keyed by the
//! corpus generation, the scope and the normalised query. Any manual change
//! bumps the generation, so stale entries can never be hit (and are dropped).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::service::trace::TraceData;

/// Estimated heap the cached results may hold together; least recently
/// used entries are evicted beyond it (the newest is always kept).
pub(crate) const CACHE_MAX_BYTES: usize = 4 * 1024 * 1024;

struct Entry {
    inserted: Instant,
    last_used: u64,
    bytes: usize,
    data: Arc<TraceData>,
}

/// Hit/miss counters of the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that ran a search.
    pub misses: u64,
    /// Cached results rejected by the gap/conflict guard.
    pub guard_revalidations: u64,
    /// Entries currently stored.
    pub entries: usize,
}

/// The cache.
pub(crate) struct ResultCache {
    entries: HashMap<String, Entry>,
    generation: u64,
    tick: u64,
    max_keep: usize,
    max_bytes: usize,
    bytes: usize,
    ttl: Duration,
    pub stats: CacheStats,
}

impl ResultCache {
    pub(crate) fn new(max_keep: usize, ttl: Duration) -> Self {
        ResultCache {
            entries: HashMap::new(),
            generation: 0,
            tick: 0,
            max_keep: max_keep.max(1),
            max_bytes: CACHE_MAX_BYTES,
            bytes: 0,
            ttl,
            stats: CacheStats::default(),
        }
    }

    /// Drops everything when the corpus generation moved.
    pub(crate) fn sync_generation(&mut self, generation: u64) {
        if generation != self.generation {
            self.entries = HashMap::new();
            self.bytes = 0;
            self.generation = generation;
        }
    }

    /// A live entry (refreshing its LRU position).
    pub(crate) fn get(&mut self, key: &str, now: Instant) -> Option<Arc<TraceData>> {
        self.tick += 1;
        let ttl = self.ttl;
        let expired = self
            .entries
            .get(key)
            .is_some_and(|e| now.saturating_duration_since(e.inserted) >= ttl);
        if expired {
            self.remove(key);
            return None;
        }
        let tick = self.tick;
        self.entries.get_mut(key).map(|e| {
            e.last_used = tick;
            Arc::clone(&e.data)
        })
    }

    /// Stores an entry, evicting the least recently used one when full.
    pub(crate) fn put(&mut self, key: String, data: Arc<TraceData>, now: Instant) {
        self.tick += 1;
        self.remove(&key);
        let bytes = data.heap_bytes() + crate::index::memory::buf(key.capacity());
        while !self.entries.is_empty()
            && (self.entries.len() >= self.max_keep || self.bytes + bytes > self.max_bytes)
        {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.remove(&k),
                None => break,
            }
        }
        self.bytes += bytes;
        self.entries.insert(
            key,
            Entry {
                inserted: now,
                last_used: self.tick,
                bytes,
                data,
            },
        );
    }

    fn remove(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.bytes -= e.bytes;
        }
    }

    /// Estimated heap bytes of the stored entries (a result shared with a
    /// trace is counted in both).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes + self.entries.capacity() * (std::mem::size_of::<(String, Entry)>() + 1)
    }

    /// Current counters.
    pub(crate) fn snapshot(&self) -> CacheStats {
        CacheStats {
            entries: self.entries.len(),
            ..self.stats
        }
    }
}
