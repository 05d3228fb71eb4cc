//! The scan fallback's memory: per manual file, the last `.md` section
//! read and where its text ended (`manual_read` continues there when the
//! same section is asked for again).

use std::collections::HashMap;

/// Files whose section-read progress is remembered for the scan fallback.
const MAX_PROGRESS: usize = 256;

/// Per-file memory of the last `.md` section read, for the scan fallback.
#[derive(Debug, Default)]
pub(crate) struct ReadProgress {
    entries: HashMap<(String, String), Progress>,
    tick: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Progress {
    pub section_start: u32,
    pub content_hash: u64,
    pub next_offset: usize,
    pub tick: u64,
}

impl ReadProgress {
    pub(crate) fn get(&self, key: &(String, String)) -> Option<Progress> {
        self.entries.get(key).copied()
    }

    pub(crate) fn set(
        &mut self,
        key: (String, String),
        section_start: u32,
        content_hash: u64,
        next_offset: usize,
    ) {
        self.tick += 1;
        if !self.entries.contains_key(&key) && self.entries.len() >= MAX_PROGRESS {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, p)| p.tick)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.entries.remove(&k);
            }
        }
        self.entries.insert(
            key,
            Progress {
                section_start,
                content_hash,
                next_offset,
                tick: self.tick,
            },
        );
    }
}
