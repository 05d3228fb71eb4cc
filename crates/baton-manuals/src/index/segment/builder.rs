//! Building a segment in memory from analysed files, and writing segment
//! bytes from their parts (shared with [`super::merge`]).
//!
//! A builder keeps posting lists encoded as they grow (a few bytes per
//! posting) and reports its memory estimate, so a caller can flush it into
//! a segment whenever a budget is reached: building streams, whatever the
//! manual's size.

use std::collections::HashMap;
use std::io::Write;

use super::DocRow;
use super::format::{
    DICT_ENTRY, DOC_ROW, FileRecordOut, HEADER_LEN, Header, encode_dict_entry, encode_doc,
    encode_file, push_posting,
};
use crate::analyze::sections::SectionInfo;
use crate::analyze::terms::FileRecord;
use crate::index::codec::Writer;
use crate::wire::ids::FileType;

/// A file as a segment stores it.
#[derive(Debug, Clone)]
pub(crate) struct FileOut {
    pub path: String,
    pub file_type: FileType,
    pub fingerprint: crate::analyze::terms::Fingerprint,
    pub line_count: u32,
    pub first_doc: u32,
    pub n_docs: u32,
    pub raw_offsets: bool,
    pub sections: Vec<SectionInfo>,
}

struct TermBuf {
    postings: Vec<u8>,
    last_doc: u32,
    df: u32,
}

/// Accumulates files into one segment.
#[derive(Default)]
pub(crate) struct SegmentBuilder {
    files: Vec<FileOut>,
    docs: Vec<DocRow>,
    vocab: HashMap<Box<str>, u32>,
    terms: Vec<TermBuf>,
    total_len: u64,
    postings_bytes: usize,
    section_bytes: usize,
}

impl SegmentBuilder {
    /// An empty builder.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Number of files added.
    pub(crate) fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Estimated heap bytes held (postings, vocabulary, tables).
    pub(crate) fn memory_estimate(&self) -> usize {
        self.postings_bytes
            + self.terms.len() * (std::mem::size_of::<TermBuf>() + 48)
            + self.vocab.keys().map(|k| k.len() + 32).sum::<usize>()
            + self.docs.len() * std::mem::size_of::<DocRow>()
            + self.section_bytes
    }

    /// Adds an analysed file (its documents get the next document numbers).
    pub(crate) fn add(&mut self, record: FileRecord) {
        let first_doc = self.docs.len() as u32;
        let file = self.files.len() as u32;
        let n_docs = record.docs.len() as u32;
        for data in record.docs {
            let doc = self.docs.len() as u32;
            let start_line = record
                .sections
                .get(data.section as usize)
                .map(|s| s.start_line)
                .unwrap_or(1);
            self.docs.push(DocRow {
                file,
                section: data.section,
                start_line,
                body_len: data.body_len,
                exceptions: data.exceptions,
                changelog: data.changelog,
                body: data.body,
            });
            self.total_len += u64::from(data.body_len);
            for (text, freq) in data.terms {
                let id = match self.vocab.get(text.as_str()) {
                    Some(id) => *id,
                    None => {
                        let id = self.terms.len() as u32;
                        self.vocab.insert(text.into_boxed_str(), id);
                        self.terms.push(TermBuf {
                            postings: Vec::new(),
                            last_doc: 0,
                            df: 0,
                        });
                        id
                    }
                };
                let t = &mut self.terms[id as usize];
                let before = t.postings.capacity();
                let delta = if t.df == 0 { doc } else { doc - t.last_doc };
                push_posting(&mut t.postings, delta, freq);
                t.last_doc = doc;
                t.df += 1;
                self.postings_bytes += t.postings.capacity() - before;
            }
        }
        self.section_bytes += record.sections.len() * std::mem::size_of::<SectionInfo>()
            + record.sections.iter().map(|s| s.title.len()).sum::<usize>();
        self.files.push(FileOut {
            path: record.path,
            file_type: record.file_type,
            fingerprint: record.fingerprint,
            line_count: record.line_count,
            first_doc,
            n_docs,
            raw_offsets: record.raw_offsets,
            sections: record.sections,
        });
    }

    /// Writes the segment to `out` and returns its size in bytes.
    pub(crate) fn write(self, out: &mut dyn Write) -> std::io::Result<u64> {
        let SegmentBuilder {
            files,
            docs,
            vocab,
            terms,
            total_len,
            ..
        } = self;
        let mut order: Vec<(Box<str>, u32)> = vocab.into_iter().collect();
        order.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut dict_index = Vec::with_capacity((order.len() + 1) * DICT_ENTRY);
        let mut dict_strs = Vec::new();
        let mut post_off: u64 = 0;
        for (text, id) in &order {
            let t = &terms[*id as usize];
            encode_dict_entry(
                &mut dict_index,
                offset32(dict_strs.len() as u64)?,
                offset32(post_off)?,
                t.df,
            );
            dict_strs.extend_from_slice(text.as_bytes());
            post_off += t.postings.len() as u64;
        }
        encode_dict_entry(
            &mut dict_index,
            offset32(dict_strs.len() as u64)?,
            offset32(post_off)?,
            0,
        );
        let parts = Parts {
            files: &files,
            docs: &docs,
            total_len,
            n_terms: order.len() as u32,
            dict_index: &dict_index,
            dict_strs: &dict_strs,
            postings_len: post_off,
        };
        write_parts(out, &parts, &mut |w| {
            for (_, id) in &order {
                w.write_all(&terms[*id as usize].postings)?;
            }
            Ok(())
        })
    }

    /// Builds the segment bytes in memory.
    #[cfg(test)]
    pub(crate) fn into_bytes(self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write(&mut out)?;
        Ok(out)
    }
}

/// A dictionary offset must fit 32 bits (segments are flushed far below).
pub(crate) fn offset32(v: u64) -> std::io::Result<u32> {
    u32::try_from(v).map_err(|_| std::io::Error::other("segment area exceeds 4 GiB"))
}

/// Everything a segment consists of but the posting bytes.
pub(crate) struct Parts<'a> {
    pub files: &'a [FileOut],
    pub docs: &'a [DocRow],
    pub total_len: u64,
    pub n_terms: u32,
    pub dict_index: &'a [u8],
    pub dict_strs: &'a [u8],
    pub postings_len: u64,
}

/// Writes a segment: the header, the tables, then the postings that
/// `postings` writes (exactly `parts.postings_len` bytes). Files are
/// written sorted by path. Returns the segment's size.
pub(crate) fn write_parts(
    out: &mut dyn Write,
    parts: &Parts<'_>,
    postings: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut order: Vec<usize> = (0..parts.files.len()).collect();
    order.sort_by(|&a, &b| parts.files[a].path.cmp(&parts.files[b].path));
    // Document rows name their file by its index in the sorted table.
    let mut new_index = vec![0u32; parts.files.len()];
    for (i, &original) in order.iter().enumerate() {
        new_index[original] = i as u32;
    }
    let sorted: Vec<&FileOut> = order.iter().map(|&i| &parts.files[i]).collect();
    let mut files_index = Vec::with_capacity(sorted.len() * 8);
    let mut w = Writer::default();
    for f in &sorted {
        files_index.extend_from_slice(&(w.buf.len() as u64).to_le_bytes());
        encode_file(
            &mut w,
            &FileRecordOut {
                path: &f.path,
                file_type: match f.file_type {
                    FileType::Md => 0,
                    FileType::Json => 1,
                },
                size: f.fingerprint.size,
                mtime_ns: f.fingerprint.mtime_ns,
                hash: f.fingerprint.hash,
                line_count: f.line_count,
                first_doc: f.first_doc,
                n_docs: f.n_docs,
                raw_offsets: f.raw_offsets,
                sections: &f.sections,
            },
        );
    }
    let files_data = w.buf;
    let mut docs = Vec::with_capacity(parts.docs.len() * DOC_ROW);
    for row in parts.docs {
        let mut row = *row;
        row.file = new_index.get(row.file as usize).copied().unwrap_or(0);
        encode_doc(&mut docs, &row);
    }
    let files_index_at = HEADER_LEN as u64;
    let files_data_at = files_index_at + files_index.len() as u64;
    let docs_at = files_data_at + files_data.len() as u64;
    let dict_index_at = docs_at + docs.len() as u64;
    let dict_strs_at = dict_index_at + parts.dict_index.len() as u64;
    let postings_at = dict_strs_at + parts.dict_strs.len() as u64;
    let end = postings_at + parts.postings_len;
    let header = Header {
        n_docs: parts.docs.len() as u32,
        n_files: sorted.len() as u32,
        n_terms: parts.n_terms,
        total_len: parts.total_len,
        files_index: files_index_at,
        files_data: files_data_at,
        docs: docs_at,
        dict_index: dict_index_at,
        dict_strs: dict_strs_at,
        postings: postings_at,
        end,
    };
    out.write_all(&header.encode())?;
    out.write_all(&files_index)?;
    out.write_all(&files_data)?;
    out.write_all(&docs)?;
    out.write_all(parts.dict_index)?;
    out.write_all(parts.dict_strs)?;
    postings(out)?;
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::terms::{Fingerprint, analyze_file};
    use crate::index::segment::{Backing, Postings, Segment};

    fn record(path: &str, text: &str) -> FileRecord {
        let fp = Fingerprint {
            size: text.len() as u64,
            mtime_ns: 7,
            hash: 9,
        };
        analyze_file(path, FileType::Md, text, fp)
    }

    #[test]
    fn a_built_segment_reads_back_files_docs_and_postings() {
        let mut b = SegmentBuilder::new();
        // Added out of path order: the file table is sorted on write.
        b.add(record("b.md", "# 通院\n通院給付金の説明。\n"));
        b.add(record(
            "a.md",
            "# 入院\n入院給付金の説明。\n## 手術\n手術 surgery\n",
        ));
        let seg =
            Segment::open(Backing::Owned(b.into_bytes().expect("bytes").into())).expect("open");
        assert_eq!((seg.n_files(), seg.n_docs()), (2, 3));
        assert_eq!(seg.find_file("a.md"), Some(0));
        assert_eq!(seg.find_file("b.md"), Some(1));
        assert_eq!(seg.find_file("c.md"), None);
        let head = seg.file_head(1).expect("head");
        assert_eq!((head.path, head.first_doc, head.n_docs), ("b.md", 0, 1));
        assert_eq!(seg.doc(0).map(|d| d.file), Some(1));
        assert_eq!(seg.sections(0)[1].title, "手術");
        // 入院 heads a.md's first section and is the context of its second.
        let nyuin = seg.term("入院").expect("term");
        assert_eq!(nyuin.df, 2);
        let postings: Vec<_> = Postings::new(nyuin.postings).collect();
        assert_eq!(postings.iter().map(|p| p.0).collect::<Vec<_>>(), [1, 2]);
        assert!(postings[0].1.title >= 1 && postings[0].1.body >= 1);
        assert!(postings[1].1.ctx >= 1 && postings[1].1.title == 0);
        assert!(seg.term("給付").map(|t| t.df) == Some(2));
        assert!(seg.term("存在").is_none());
    }

    #[test]
    fn corrupt_bytes_are_refused() {
        let mut b = SegmentBuilder::new();
        b.add(record("a.md", "# 入院\n入院給付金の説明。\n"));
        let bytes = b.into_bytes().expect("bytes");
        for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
            assert!(Segment::open(Backing::Owned(bytes[..cut].into())).is_err());
        }
        let mut flipped = bytes.clone();
        flipped[40] ^= 0xff;
        assert!(Segment::open(Backing::Owned(flipped.into())).is_err());
    }
}
