//! The `manual_find` result cache: an LRU of finished traces keyed by the
//! corpus generation, the scope and the normalised query. Any manual change
//! bumps the generation, so stale entries can never be hit (and are dropped).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::trace::TraceData;

struct Entry {
    inserted: Instant,
    last_used: u64,
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
            ttl,
            stats: CacheStats::default(),
        }
    }

    /// Drops everything when the corpus generation moved.
    pub(crate) fn sync_generation(&mut self, generation: u64) {
        if generation != self.generation {
            self.entries.clear();
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
            self.entries.remove(key);
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
        if !self.entries.contains_key(&key) && self.entries.len() >= self.max_keep {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.entries.remove(&k);
            }
        }
        self.entries.insert(
            key,
            Entry {
                inserted: now,
                last_used: self.tick,
                data,
            },
        );
    }

    /// Current counters.
    pub(crate) fn snapshot(&self) -> CacheStats {
        CacheStats {
            entries: self.entries.len(),
            ..self.stats
        }
    }
}
