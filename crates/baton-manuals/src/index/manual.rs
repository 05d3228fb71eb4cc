//! The index of one manual: a list of immutable segments plus the files
//! deleted from them since they were written.
//!
//! Documents are numbered across the manual: a segment's documents follow
//! the previous segment's (`base + local`). A changed or removed file is
//! *deleted* from its segment (its documents stop counting and never come
//! back from a search); a changed or new file goes into a new segment.
//! Segments are merged when they become many or small ([`crate::corpus`]).
//! Statistics (document count, average length) count live documents only;
//! a term's document frequency counts the postings of deleted documents
//! too until their segment is merged (as in Lucene).

use std::sync::Arc;

use crate::analyze::sections::SectionInfo;
use crate::analyze::terms::FieldFreq;
use crate::index::segment::{DocRow, FileHead, Postings, Segment};

/// A document number within a manual.
pub(crate) type DocId = u32;

/// One segment of a manual with its deletions.
#[derive(Debug, Clone)]
pub(crate) struct SegmentSlot {
    /// Number naming the segment's file (unique within the manual).
    pub id: u64,
    /// The segment.
    pub segment: Arc<Segment>,
    /// Deleted files (segment-local indices, sorted).
    pub deleted: Vec<u32>,
    /// First manual-wide document number of the segment.
    base: u32,
    /// Deleted documents (segment-local), one bit each.
    dead: Vec<u64>,
}

impl SegmentSlot {
    /// A slot for a segment with deleted files.
    pub(crate) fn new(id: u64, segment: Arc<Segment>, mut deleted: Vec<u32>) -> Self {
        deleted.sort_unstable();
        deleted.dedup();
        SegmentSlot {
            id,
            segment,
            deleted,
            base: 0,
            dead: Vec::new(),
        }
    }

    fn is_dead(&self, local: u32) -> bool {
        self.dead
            .get(local as usize / 64)
            .is_some_and(|w| w & (1 << (local % 64)) != 0)
    }

    fn is_deleted_file(&self, file: u32) -> bool {
        self.deleted.binary_search(&file).is_ok()
    }
}

/// A live file of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileRef {
    /// Index of its segment slot.
    pub slot: usize,
    /// Its index in the segment.
    pub file: u32,
}

/// A live document with where it lives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DocRef {
    /// Its segment slot and file.
    pub file: FileRef,
    /// Its row.
    pub row: DocRow,
    /// Its segment-local number.
    pub local: u32,
}

/// The index of one manual.
#[derive(Debug, Default, Clone)]
pub(crate) struct ManualIndex {
    slots: Vec<SegmentSlot>,
    live_docs: u32,
    live_files: usize,
    total_len: u64,
    doc_slots: u32,
    /// BM25 length normalisation per document, computed on first use.
    norms: std::sync::OnceLock<Vec<f32>>,
    /// The file (segment-local index) of every document, computed on first use.
    doc_files: std::sync::OnceLock<Vec<u32>>,
    /// Rank of every file's path among all the manual's files (per slot),
    /// for cheap, deterministic tie-breaking; computed on first use.
    path_ranks: std::sync::OnceLock<Vec<Vec<u32>>>,
}

impl ManualIndex {
    /// An index over these segments.
    pub(crate) fn from_slots(slots: Vec<SegmentSlot>) -> Self {
        let mut index = ManualIndex {
            slots,
            ..ManualIndex::default()
        };
        index.recount();
        index
    }

    /// The segment slots.
    pub(crate) fn slots(&self) -> &[SegmentSlot] {
        &self.slots
    }

    /// Takes the slots out (to change them and build a new index).
    pub(crate) fn into_slots(self) -> Vec<SegmentSlot> {
        self.slots
    }

    /// Recomputes document numbering, deletion bits and statistics.
    fn recount(&mut self) {
        let mut base = 0u32;
        self.live_docs = 0;
        self.live_files = 0;
        self.total_len = 0;
        for slot in &mut self.slots {
            slot.base = base;
            let seg = &slot.segment;
            slot.dead = vec![0u64; (seg.n_docs() as usize).div_ceil(64)];
            let mut dead_docs = 0u32;
            let mut dead_len = 0u64;
            for &file in &slot.deleted {
                let Some(head) = seg.file_head(file) else {
                    continue;
                };
                for local in head.first_doc..head.first_doc.saturating_add(head.n_docs) {
                    if let Some(w) = slot.dead.get_mut(local as usize / 64) {
                        *w |= 1 << (local % 64);
                        dead_docs += 1;
                        dead_len += u64::from(seg.doc_len(local));
                    }
                }
            }
            self.live_docs += seg.n_docs().saturating_sub(dead_docs);
            self.live_files += (seg.n_files() as usize).saturating_sub(slot.deleted.len());
            self.total_len += seg.total_len().saturating_sub(dead_len);
            base = base.saturating_add(seg.n_docs());
        }
        self.doc_slots = base;
    }

    /// Number of live files.
    pub(crate) fn file_count(&self) -> usize {
        self.live_files
    }

    /// Number of live documents.
    pub(crate) fn doc_count(&self) -> u32 {
        self.live_docs
    }

    /// Distinct terms (summed over segments: an upper bound).
    pub(crate) fn term_count(&self) -> usize {
        self.slots
            .iter()
            .map(|s| s.segment.n_terms() as usize)
            .sum()
    }

    /// Upper bound of document numbers (deleted ones included).
    pub(crate) fn doc_slots(&self) -> usize {
        self.doc_slots as usize
    }

    /// Bytes of all segments.
    pub(crate) fn byte_len(&self) -> usize {
        self.slots.iter().map(|s| s.segment.byte_len()).sum()
    }

    /// Mean body length in tokens.
    pub(crate) fn avg_len(&self) -> f64 {
        if self.live_docs == 0 {
            1.0
        } else {
            (self.total_len as f64 / f64::from(self.live_docs)).max(1.0)
        }
    }

    fn locate(&self, doc: DocId) -> Option<(usize, u32)> {
        let i = self
            .slots
            .partition_point(|s| s.base <= doc)
            .checked_sub(1)?;
        let slot = &self.slots[i];
        let local = doc - slot.base;
        (local < slot.segment.n_docs()).then_some((i, local))
    }

    /// `k1 × (1 − b + b × length / average)` of every document (BM25's
    /// length normalisation), indexed by document number.
    pub(crate) fn norms(&self, k1: f64, b: f64) -> &[f32] {
        self.norms.get_or_init(|| {
            let avg = self.avg_len();
            let mut out = Vec::with_capacity(self.doc_slots as usize);
            for slot in &self.slots {
                for local in 0..slot.segment.n_docs() {
                    let len = f64::from(slot.segment.doc_len(local));
                    out.push((k1 * (1.0 - b + b * len / avg)) as f32);
                }
            }
            out
        })
    }

    /// The file of a document (live or not), from a table built on first use.
    pub(crate) fn file_of(&self, doc: DocId) -> Option<FileRef> {
        let files = self.doc_files.get_or_init(|| {
            let mut out = Vec::with_capacity(self.doc_slots as usize);
            for slot in &self.slots {
                for local in 0..slot.segment.n_docs() {
                    out.push(slot.segment.doc(local).map(|d| d.file).unwrap_or(u32::MAX));
                }
            }
            out
        });
        let file = *files.get(doc as usize)?;
        let slot = self
            .slots
            .partition_point(|s| s.base <= doc)
            .checked_sub(1)?;
        (file != u32::MAX).then_some(FileRef { slot, file })
    }

    /// Files per segment slot (to size per-file counters).
    pub(crate) fn slot_file_counts(&self) -> Vec<usize> {
        self.slots
            .iter()
            .map(|s| s.segment.n_files() as usize)
            .collect()
    }

    /// The rank of a file's path among all files of the manual.
    pub(crate) fn path_rank(&self, file: FileRef) -> u32 {
        let ranks = self.path_ranks.get_or_init(|| {
            let mut all: Vec<(&str, usize, u32)> = Vec::new();
            for (i, slot) in self.slots.iter().enumerate() {
                for f in 0..slot.segment.n_files() {
                    all.push((slot.segment.file_path(f).unwrap_or(""), i, f));
                }
            }
            all.sort_unstable();
            let mut ranks: Vec<Vec<u32>> = self
                .slots
                .iter()
                .map(|s| vec![0; s.segment.n_files() as usize])
                .collect();
            for (rank, (_, i, f)) in all.into_iter().enumerate() {
                if let Some(r) = ranks.get_mut(i).and_then(|v| v.get_mut(f as usize)) {
                    *r = rank as u32;
                }
            }
            ranks
        });
        ranks
            .get(file.slot)
            .and_then(|v| v.get(file.file as usize))
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// Whether a document number is live.
    pub(crate) fn is_live(&self, doc: DocId) -> bool {
        self.locate(doc)
            .is_some_and(|(i, local)| !self.slots[i].is_dead(local))
    }

    /// A live document.
    pub(crate) fn doc(&self, doc: DocId) -> Option<DocRef> {
        let (i, local) = self.locate(doc)?;
        let slot = &self.slots[i];
        if slot.is_dead(local) {
            return None;
        }
        let row = slot.segment.doc(local)?;
        Some(DocRef {
            file: FileRef {
                slot: i,
                file: row.file,
            },
            row,
            local,
        })
    }

    /// Document frequency of a term (deleted documents included until
    /// their segment is merged).
    pub(crate) fn df(&self, term: &str) -> u32 {
        self.slots
            .iter()
            .filter_map(|s| s.segment.term(term))
            .map(|t| t.df)
            .sum()
    }

    /// Calls `each(doc, frequencies)` for every posting of a term, deleted
    /// documents included (callers drop them when they read the document).
    pub(crate) fn for_each_posting(&self, term: &str, mut each: impl FnMut(DocId, FieldFreq)) {
        for slot in &self.slots {
            if let Some(entry) = slot.segment.term(term) {
                for (local, freq) in Postings::new(entry.postings) {
                    each(slot.base + local, freq);
                }
            }
        }
    }

    /// The fixed part of a file's record.
    pub(crate) fn file_head(&self, file: FileRef) -> Option<FileHead<'_>> {
        self.slots.get(file.slot)?.segment.file_head(file.file)
    }

    /// A file's path.
    pub(crate) fn file_path(&self, file: FileRef) -> Option<&str> {
        self.slots.get(file.slot)?.segment.file_path(file.file)
    }

    /// A file's sections.
    pub(crate) fn sections(&self, file: FileRef) -> Vec<SectionInfo> {
        self.slots
            .get(file.slot)
            .map(|s| s.segment.sections(file.file))
            .unwrap_or_default()
    }

    /// The section of a live document.
    pub(crate) fn section_of(&self, doc: &DocRef) -> Option<SectionInfo> {
        self.slots
            .get(doc.file.slot)?
            .segment
            .section(doc.row.file, doc.row.section)
    }

    /// The live file with this path.
    #[cfg(test)]
    pub(crate) fn find_file(&self, path: &str) -> Option<FileRef> {
        self.slots.iter().enumerate().rev().find_map(|(i, slot)| {
            let file = slot.segment.find_file(path)?;
            (!slot.is_deleted_file(file)).then_some(FileRef { slot: i, file })
        })
    }

    /// Adds this index's memory to `usage`.
    pub(crate) fn add_memory(&self, usage: &mut crate::index::memory::MemoryUsage) {
        for slot in &self.slots {
            if slot.segment.is_mapped() {
                usage.segments_mapped += slot.segment.byte_len();
            } else {
                usage.segments_in_memory += slot.segment.byte_len();
            }
            usage.bookkeeping += slot.dead.len() * 8 + slot.deleted.len() * 4 + 64;
        }
    }

    /// Every live file, sorted by path.
    pub(crate) fn files(&self) -> Vec<(FileRef, &str)> {
        let mut out: Vec<(FileRef, &str)> = Vec::with_capacity(self.live_files);
        for (i, slot) in self.slots.iter().enumerate() {
            for file in 0..slot.segment.n_files() {
                if slot.is_deleted_file(file) {
                    continue;
                }
                if let Some(path) = slot.segment.file_path(file) {
                    out.push((FileRef { slot: i, file }, path));
                }
            }
        }
        out.sort_by(|a, b| a.1.cmp(b.1));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::terms::{Fingerprint, analyze_file};
    use crate::index::segment::Backing;
    use crate::index::segment::builder::SegmentBuilder;
    use crate::wire::ids::FileType;

    fn segment(files: &[(&str, &str)]) -> Arc<Segment> {
        let mut b = SegmentBuilder::new();
        for (path, text) in files {
            let fp = Fingerprint {
                size: text.len() as u64,
                mtime_ns: 0,
                hash: 0,
            };
            b.add(analyze_file(path, FileType::Md, text, fp));
        }
        Arc::new(
            Segment::open(Backing::Owned(b.into_bytes().expect("bytes").into())).expect("open"),
        )
    }

    #[test]
    fn deleted_files_leave_statistics_and_lookups_and_newer_segments_win() {
        let a = segment(&[
            ("a.md", "# 入院\n入院給付金の説明。\n"),
            ("b.md", "# 通院\n通院給付金の説明。\n"),
        ]);
        let b = segment(&[("a.md", "# 手術\n手術給付金の説明。\n")]);
        // a.md was replaced: deleted from the first segment (file 0).
        let index = ManualIndex::from_slots(vec![
            SegmentSlot::new(1, a, vec![0]),
            SegmentSlot::new(2, b, vec![]),
        ]);
        assert_eq!(
            (index.file_count(), index.doc_count(), index.doc_slots()),
            (2, 2, 3)
        );
        let found = index.find_file("a.md").expect("a.md");
        assert_eq!(found.slot, 1);
        assert_eq!(
            index.files().iter().map(|f| f.1).collect::<Vec<_>>(),
            ["a.md", "b.md"]
        );
        let mut docs = Vec::new();
        index.for_each_posting("給付", |d, _| docs.push(d));
        assert_eq!(docs, [0, 1, 2]);
        assert!(index.doc(0).is_none(), "the old a.md is deleted");
        assert!(index.doc(1).is_some() && index.doc(2).is_some());
        assert_eq!(index.doc(2).map(|d| d.file.slot), Some(1));
    }
}
