//! A document's matched text, read back from its file when a query needs
//! it (phrase checks, required terms, late rerank, claims of the top
//! candidates): the index stores where each section's body lies, not the
//! text, so it stays smaller than the manuals and memory follows queries.
//!
//! The text is the file name, then the section's heading and body, all
//! normalised ([`crate::analyze::terms::matched_text`]). A file that changed since
//! it was indexed (size or modification time differ) yields its name and
//! heading only, until the next refresh re-indexes it. Texts are cached
//! (bounded by size) under their segment's identity, which never changes.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::analyze::terms::{self as analyze, file_stem};
use crate::index::segment::{DocRow, FileHead};
use crate::wire::ids::FileType;
use baton_text::normalize as text;

/// Most bytes of a section's body read for its matched text (phrase
/// checks and the late rerank look at the start of a very long section).
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024;
/// Most bytes of cached texts.
pub(crate) const TEXT_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// Cache key: manual, segment id, segment-local document.
type Key = (Arc<str>, u64, u32);

/// A size-bounded cache of matched texts (oldest out first).
#[derive(Debug, Default)]
pub(crate) struct TextCache {
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    map: HashMap<Key, Arc<str>>,
    order: VecDeque<Key>,
    bytes: usize,
}

impl TextCache {
    /// The cached text, or `load()`'s (then cached).
    pub(crate) fn get_or_load(&self, key: Key, load: impl FnOnce() -> String) -> Arc<str> {
        if let Some(t) = self.lock().map.get(&key) {
            return Arc::clone(t);
        }
        let text: Arc<str> = Arc::from(load());
        let mut inner = self.lock();
        if text.len() <= TEXT_CACHE_BYTES / 4 && !inner.map.contains_key(&key) {
            inner.bytes += text.len();
            inner.map.insert(key.clone(), Arc::clone(&text));
            inner.order.push_back(key);
            while inner.bytes > TEXT_CACHE_BYTES {
                let Some(old) = inner.order.pop_front() else {
                    break;
                };
                if let Some(t) = inner.map.remove(&old) {
                    inner.bytes -= t.len();
                }
            }
        }
        text
    }

    /// Bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        let inner = self.lock();
        inner.bytes + inner.map.len() * 64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Reads a document's matched text from `manual_dir`.
pub(crate) fn load(
    manual_dir: &Path,
    head: &FileHead<'_>,
    title: &str,
    level: u8,
    row: &DocRow,
) -> String {
    let stem = text::normalize(file_stem(head.path));
    let title = if level == 0 {
        String::new()
    } else {
        text::normalize(title)
    };
    let mut body = read_body(manual_dir, head, row).unwrap_or_default();
    if body.len() > MAX_BODY_BYTES {
        let mut cut = MAX_BODY_BYTES;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        body.truncate(cut);
    }
    analyze::matched_text(&stem, &title, &text::normalize(&body))
}

/// The body of a document as indexed, or `None` when the file changed.
/// The file is opened beneath the manual's folder with `baton-fs`'s
/// untrusted reader: no link below it is followed and nothing but a regular
/// file is opened (a FIFO put in its place never blocks the search).
fn read_body(manual_dir: &Path, head: &FileHead<'_>, row: &DocRow) -> Option<String> {
    let mut file = baton_fs::open_beneath(manual_dir, Path::new(head.path), u64::MAX).ok()?;
    let meta = file.metadata().ok()?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    if meta.len() != head.fingerprint.size || mtime_ns != head.fingerprint.mtime_ns {
        return None;
    }
    let (start, end) = (row.body.0 as usize, row.body.1 as usize);
    if head.file_type == FileType::Md && head.raw_offsets {
        // A little more than the cap, so the cut can fall on a character.
        let len = end.checked_sub(start)?.min(MAX_BODY_BYTES + 4);
        let mut buf = vec![0u8; len];
        file.seek(SeekFrom::Start(start as u64)).ok()?;
        file.read_exact(&mut buf).ok()?;
        return Some(String::from_utf8_lossy(&buf).into_owned());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).ok()?;
    let text = text::to_lf(&crate::analyze::decode::decode_text(&bytes));
    match head.file_type {
        FileType::Json => Some(crate::analyze::sections::flatten_json(&text)),
        FileType::Md => text.get(start..end).map(str::to_string),
    }
}
