//! The in-memory inverted index of one manual, updated file by file.
//!
//! Documents are sections. Each term has a posting list of
//! `(doc, field frequencies)`; document frequency is the list length.
//! Replacing a file removes its documents' postings (using each document's
//! own term list, so only the affected lists are touched) and adds the new
//! ones; nothing else is recomputed.

use std::collections::{BTreeMap, HashMap};

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
    /// Path of its file.
    pub path: String,
    /// Index of the section in the file's section list.
    pub section: u32,
    /// The section's heading line.
    pub start_line: u32,
    /// Body length in tokens.
    pub body_len: u32,
    /// Normalised heading + body.
    pub norm_text: String,
    /// Its distinct terms (for removal and for persistence).
    pub terms: Vec<(TermId, FieldFreq)>,
    /// Whether the section states exclusions.
    pub exceptions: bool,
}

/// A file of the index: its record minus the document data (held in `docs`).
#[derive(Debug, Clone)]
pub(crate) struct FileEntry {
    /// Metadata and sections.
    pub record: FileRecord,
    /// The document slots of its indexable sections.
    pub doc_ids: Vec<DocId>,
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
        let mut doc_ids = Vec::with_capacity(docs.len());
        for data in docs {
            let start_line = record
                .sections
                .get(data.section as usize)
                .map(|s| s.start_line)
                .unwrap_or(1);
            doc_ids.push(self.add_doc(&record.path, start_line, data));
        }
        self.files
            .insert(record.path.clone(), FileEntry { record, doc_ids });
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
            for (term, _) in &doc.terms {
                if let Some(list) = self.postings.get_mut(*term as usize) {
                    list.retain(|p| p.doc != id);
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

    fn add_doc(&mut self, path: &str, start_line: u32, data: DocData) -> DocId {
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
                list.push(Posting { doc: id, freq });
            }
            terms.push((term, freq));
        }
        self.live_docs += 1;
        self.total_len += u64::from(data.body_len);
        self.docs[id as usize] = Some(Doc {
            path: path.to_string(),
            section: data.section,
            start_line,
            body_len: data.body_len,
            norm_text: data.norm_text,
            terms,
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
            .get(&doc.path)
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

    /// The full record of a file (documents included), for persistence.
    pub(crate) fn export_file(&self, entry: &FileEntry) -> FileRecord {
        let mut record = entry.record.clone();
        record.docs = entry
            .doc_ids
            .iter()
            .filter_map(|id| self.doc(*id))
            .map(|doc| DocData {
                section: doc.section,
                body_len: doc.body_len,
                norm_text: doc.norm_text.clone(),
                exceptions: doc.exceptions,
                terms: doc
                    .terms
                    .iter()
                    .map(|(t, f)| (self.term_text(*t).to_string(), *f))
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
}
