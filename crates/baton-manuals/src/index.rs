//! The in-memory inverted index of one manual, updated file by file.
//!
//! Documents are sections. Each term has a posting list of
//! `(doc, field frequencies)`; document frequency is the list length.
//! Replacing a file removes its documents' postings (using each document's
//! own term list, so only the affected lists are touched) and adds the new
//! ones; nothing else is recomputed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::analyze::{DocData, FieldFreq, FileRecord};
use crate::sections::SectionInfo;

/// Index of a document slot.
pub(crate) type DocId = u32;
/// Index of a term in the vocabulary.
pub(crate) type TermId = u32;

/// One entry of a posting list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posting {
    /// The document.
    pub doc: DocId,
    /// Its field frequencies for the term.
    pub freq: FieldFreq,
}

/// A live document (section) of the index.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    /// Path of its file (shared by the file's documents).
    pub path: Arc<str>,
    /// Index of the section in the file's section list.
    pub section: u32,
    /// The section's heading line.
    pub start_line: u32,
    /// Body length in tokens.
    pub body_len: u32,
    /// Normalised heading + body (phrase checks, late rerank, claims).
    pub norm_text: Box<str>,
    /// Its distinct term ids, ascending, as LEB128 varint deltas (for
    /// removal and persistence; the frequencies live in the postings).
    terms: Box<[u8]>,
    /// Whether the section states exclusions.
    pub exceptions: bool,
}

impl Doc {
    /// Its distinct term ids, ascending.
    fn term_ids(&self) -> impl Iterator<Item = TermId> + '_ {
        let mut bytes = self.terms.iter();
        let mut prev: TermId = 0;
        std::iter::from_fn(move || {
            let mut delta: u32 = 0;
            let mut shift = 0;
            loop {
                let b = *bytes.next()?;
                delta |= u32::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    break;
                }
                shift += 7;
            }
            prev += delta;
            Some(prev)
        })
    }
}

/// Encodes ascending term ids as varint deltas.
fn encode_term_ids(ids: &[TermId]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(ids.len() * 2);
    let mut prev: TermId = 0;
    for &id in ids {
        let mut delta = id - prev;
        prev = id;
        loop {
            let byte = (delta & 0x7f) as u8;
            delta >>= 7;
            if delta == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out.into_boxed_slice()
}

/// A file of the index: its record minus the document data (held in `docs`).
#[derive(Debug, Clone)]
pub(crate) struct FileEntry {
    /// Metadata and sections.
    pub record: FileRecord,
    /// The document slots of its indexable sections.
    pub doc_ids: Vec<DocId>,
    /// The path, shared with its documents.
    pub shared_path: Arc<str>,
}

/// The index of one manual.
#[derive(Debug, Default)]
pub(crate) struct ManualIndex {
    files: BTreeMap<String, FileEntry>,
    docs: Vec<Option<Doc>>,
    /// Body length per slot (0 for free slots): the scoring loop reads only this.
    doc_lens: Vec<u32>,
    free: Vec<DocId>,
    vocab: HashMap<Box<str>, TermId>,
    term_text: Vec<Box<str>>,
    postings: Vec<Vec<Posting>>,
    live_docs: u32,
    total_len: u64,
}

impl ManualIndex {
    /// An empty index.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a file.
    pub(crate) fn upsert(&mut self, mut record: FileRecord) {
        self.remove(&record.path.clone());
        let docs = std::mem::take(&mut record.docs);
        let shared_path: Arc<str> = Arc::from(record.path.as_str());
        let mut doc_ids = Vec::with_capacity(docs.len());
        for data in docs {
            let start_line = record
                .sections
                .get(data.section as usize)
                .map(|s| s.start_line)
                .unwrap_or(1);
            doc_ids.push(self.add_doc(&shared_path, start_line, data));
        }
        record.sections.shrink_to_fit();
        self.files.insert(
            record.path.clone(),
            FileEntry {
                record,
                doc_ids,
                shared_path,
            },
        );
    }

    /// Removes a file and its documents; returns whether it was present.
    pub(crate) fn remove(&mut self, path: &str) -> bool {
        let Some(entry) = self.files.remove(path) else {
            return false;
        };
        for id in entry.doc_ids {
            let Some(doc) = self.docs.get_mut(id as usize).and_then(Option::take) else {
                continue;
            };
            for term in doc.term_ids() {
                if let Some(list) = self.postings.get_mut(term as usize)
                    && let Ok(at) = list.binary_search_by_key(&id, |p| p.doc)
                {
                    list.remove(at);
                }
            }
            self.live_docs -= 1;
            self.total_len -= u64::from(doc.body_len);
            if let Some(len) = self.doc_lens.get_mut(id as usize) {
                *len = 0;
            }
            self.free.push(id);
        }
        true
    }

    /// Updates only the fingerprint of a file whose content is unchanged.
    pub(crate) fn touch(&mut self, path: &str, fingerprint: crate::analyze::Fingerprint) {
        if let Some(entry) = self.files.get_mut(path) {
            entry.record.fingerprint = fingerprint;
        }
    }

    fn add_doc(&mut self, path: &Arc<str>, start_line: u32, data: DocData) -> DocId {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.docs.push(None);
                self.doc_lens.push(0);
                (self.docs.len() - 1) as DocId
            }
        };
        self.doc_lens[id as usize] = data.body_len;
        let mut terms = Vec::with_capacity(data.terms.len());
        for (text, freq) in data.terms {
            let term = self.intern(&text);
            if let Some(list) = self.postings.get_mut(term as usize) {
                // Posting lists stay sorted by document id (a reused slot
                // is inserted in place).
                let posting = Posting { doc: id, freq };
                match list.last() {
                    Some(last) if last.doc >= id => {
                        let at = list.partition_point(|p| p.doc < id);
                        list.insert(at, posting);
                    }
                    _ => list.push(posting),
                }
            }
            terms.push(term);
        }
        terms.sort_unstable();
        terms.dedup();
        self.live_docs += 1;
        self.total_len += u64::from(data.body_len);
        self.docs[id as usize] = Some(Doc {
            path: Arc::clone(path),
            section: data.section,
            start_line,
            body_len: data.body_len,
            norm_text: data.norm_text.into_boxed_str(),
            terms: encode_term_ids(&terms),
            exceptions: data.exceptions,
        });
        id
    }

    fn intern(&mut self, text: &str) -> TermId {
        if let Some(id) = self.vocab.get(text) {
            return *id;
        }
        let id = self.term_text.len() as TermId;
        self.term_text.push(text.into());
        self.vocab.insert(text.into(), id);
        self.postings.push(Vec::new());
        id
    }

    /// The files, sorted by path.
    pub(crate) fn files(&self) -> impl Iterator<Item = &FileEntry> {
        self.files.values()
    }

    /// One file by path.
    pub(crate) fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files.get(path)
    }

    /// Number of files.
    pub(crate) fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Number of live documents.
    pub(crate) fn doc_count(&self) -> u32 {
        self.live_docs
    }

    /// Number of distinct terms ever interned.
    pub(crate) fn term_count(&self) -> usize {
        self.term_text.len()
    }

    /// Size of the document slot table (upper bound of doc ids).
    pub(crate) fn doc_slots(&self) -> usize {
        self.docs.len()
    }

    /// Mean body length in tokens.
    pub(crate) fn avg_len(&self) -> f64 {
        if self.live_docs == 0 {
            1.0
        } else {
            (self.total_len as f64 / f64::from(self.live_docs)).max(1.0)
        }
    }

    /// Body length of a document slot (0 when free).
    pub(crate) fn doc_len(&self, id: DocId) -> u32 {
        self.doc_lens.get(id as usize).copied().unwrap_or(0)
    }

    /// A live document.
    pub(crate) fn doc(&self, id: DocId) -> Option<&Doc> {
        self.docs.get(id as usize).and_then(Option::as_ref)
    }

    /// The section of a live document.
    pub(crate) fn section_of(&self, doc: &Doc) -> Option<&SectionInfo> {
        self.files
            .get(&*doc.path)
            .and_then(|f| f.record.sections.get(doc.section as usize))
    }

    /// The id of a term, if any document ever had it.
    pub(crate) fn term_id(&self, text: &str) -> Option<TermId> {
        self.vocab.get(text).copied()
    }

    /// The text of a term id.
    pub(crate) fn term_text(&self, id: TermId) -> &str {
        self.term_text.get(id as usize).map(|s| &**s).unwrap_or("")
    }

    /// The posting list of a term.
    pub(crate) fn postings(&self, id: TermId) -> &[Posting] {
        self.postings
            .get(id as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Adds this index's estimated heap bytes to `usage`.
    pub(crate) fn add_memory(&self, usage: &mut crate::memory::MemoryUsage) {
        use crate::memory::buf;
        use std::mem::size_of;
        usage.postings += buf(self.postings.capacity() * size_of::<Vec<Posting>>())
            + self
                .postings
                .iter()
                .map(|l| buf(l.capacity() * size_of::<Posting>()))
                .sum::<usize>();
        usage.documents += buf(self.docs.capacity() * size_of::<Option<Doc>>())
            + buf(self.doc_lens.capacity() * 4)
            + buf(self.free.capacity() * 4);
        for doc in self.docs.iter().flatten() {
            usage.documents += buf(doc.terms.len());
            usage.section_texts += buf(doc.norm_text.len());
        }
        usage.terms += buf(self.term_text.capacity() * size_of::<Box<str>>())
            + self.term_text.iter().map(|t| buf(t.len())).sum::<usize>()
            + self.vocab.capacity() * (size_of::<(Box<str>, TermId)>() + 1)
            + self.vocab.keys().map(|t| buf(t.len())).sum::<usize>();
        for (path, entry) in &self.files {
            usage.files += buf(path.capacity())
                + 64
                + size_of::<FileEntry>()
                + buf(entry.record.path.capacity())
                + buf(entry.record.sections.capacity() * size_of::<SectionInfo>())
                + entry
                    .record
                    .sections
                    .iter()
                    .map(|s| buf(s.title.capacity()))
                    .sum::<usize>()
                + buf(entry.doc_ids.capacity() * 4)
                + buf(16 + entry.shared_path.len());
        }
    }

    /// Releases spare capacity (growth slack of the posting lists and
    /// tables); called after a batch of changes.
    pub(crate) fn compact(&mut self) {
        for list in &mut self.postings {
            list.shrink_to_fit();
        }
        self.postings.shrink_to_fit();
        self.docs.shrink_to_fit();
        self.doc_lens.shrink_to_fit();
        self.free.shrink_to_fit();
        self.term_text.shrink_to_fit();
        self.vocab.shrink_to_fit();
    }

    /// The frequencies of a term in a live document.
    fn freq(&self, doc: DocId, term: TermId) -> FieldFreq {
        let list = self.postings(term);
        list.binary_search_by_key(&doc, |p| p.doc)
            .map(|at| list[at].freq)
            .unwrap_or_default()
    }

    /// The terms of a live document with their frequencies, sorted by term
    /// text (the order of [`DocData::terms`]).
    pub(crate) fn doc_terms(&self, id: DocId) -> Vec<(&str, FieldFreq)> {
        let Some(doc) = self.doc(id) else {
            return Vec::new();
        };
        let mut terms: Vec<(&str, FieldFreq)> = doc
            .term_ids()
            .map(|t| (self.term_text(t), self.freq(id, t)))
            .collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(b.0));
        terms
    }

    /// The full record of a file (documents included).
    #[cfg(test)]
    pub(crate) fn export_file(&self, entry: &FileEntry) -> FileRecord {
        let mut record = entry.record.clone();
        record.docs = entry
            .doc_ids
            .iter()
            .filter_map(|id| Some((*id, self.doc(*id)?)))
            .map(|(id, doc)| DocData {
                section: doc.section,
                body_len: doc.body_len,
                norm_text: doc.norm_text.to_string(),
                exceptions: doc.exceptions,
                terms: self
                    .doc_terms(id)
                    .into_iter()
                    .map(|(t, f)| (t.to_string(), f))
                    .collect(),
            })
            .collect();
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{Fingerprint, analyze_file};
    use crate::paths::FileType;

    fn record(path: &str, text: &str) -> FileRecord {
        let fp = Fingerprint {
            size: text.len() as u64,
            mtime_ns: 0,
            hash: 0,
        };
        analyze_file(path, FileType::Md, text, fp)
    }

    #[test]
    fn replacing_a_file_updates_postings_and_lengths() {
        let mut index = ManualIndex::new();
        index.upsert(record("a.md", "# 入院\n入院給付金の説明。\n"));
        index.upsert(record("b.md", "# 通院\n通院給付金の説明。\n"));
        let nyuin = index.term_id("入院").map(|t| index.postings(t).len());
        assert_eq!(nyuin, Some(1));
        index.upsert(record("a.md", "# 手術\n手術給付金の説明。\n"));
        assert_eq!(
            index.term_id("入院").map(|t| index.postings(t).len()),
            Some(0)
        );
        assert_eq!(
            index.term_id("手術").map(|t| index.postings(t).len()),
            Some(1)
        );
        assert_eq!(index.doc_count(), 2);
        assert!(index.remove("b.md"));
        assert_eq!(index.doc_count(), 1);
        assert_eq!(
            index.term_id("通院").map(|t| index.postings(t).len()),
            Some(0)
        );
        // Freed slots are reused.
        index.upsert(record("c.md", "# 死亡\n死亡保険金。\n"));
        assert_eq!(index.doc_slots(), 2);
    }

    #[test]
    fn compact_documents_export_their_original_terms_and_texts() {
        let mut index = ManualIndex::new();
        let a = record(
            "a.md",
            "# 入院\n入院給付金の説明。\n## 手術\n手術 surgery claims\n",
        );
        let b = record("b.md", "# 通院\n通院給付金の説明。\n");
        index.upsert(a.clone());
        index.upsert(b.clone());
        // Replace `a` so its slots are reused out of order.
        index.remove("a.md");
        index.upsert(record("c.md", "# 死亡\n死亡保険金。\n"));
        index.upsert(a.clone());
        index.compact();
        for original in [a, b] {
            let entry = index.file(&original.path).expect("file");
            assert_eq!(index.export_file(entry), original);
        }
        for term in 0..index.term_count() as TermId {
            let list = index.postings(term);
            assert!(list.windows(2).all(|w| w[0].doc < w[1].doc));
        }
    }
}
