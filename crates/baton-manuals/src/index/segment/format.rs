//! The byte layout of a segment: header, record encoders and the checks
//! that make reading corrupt bytes safe (every offset is validated once at
//! open; every later read is bounds-checked and yields nothing when out of
//! range).

use crate::analyze::sections::SectionInfo;
use crate::analyze::terms::FieldFreq;
use crate::index::codec::{CodecError, Writer};

/// One document (indexable section) of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DocRow {
    /// The file (index into the segment's files).
    pub file: u32,
    /// Index of the section in the file's section list.
    pub section: u32,
    /// The section's heading line.
    pub start_line: u32,
    /// Body length in tokens.
    pub body_len: u32,
    /// Whether the section states exclusions.
    pub exceptions: bool,
    /// Whether the section is part of a change log or release notes.
    pub changelog: bool,
    /// Byte range of the body in the file's LF-normalised text.
    pub body: (u32, u32),
}

/// File magic.
pub(crate) const MAGIC: &[u8; 8] = b"BTNSEG\x00\x01";
/// Layout version (bump on any change; old segments are then rebuilt).
pub(crate) const VERSION: u32 = 2;
/// Header size in bytes.
pub(crate) const HEADER_LEN: usize = 8 + 4 * 4 + 8 + 7 * 8;
/// Bytes per document row.
pub(crate) const DOC_ROW: usize = 28;
/// Bytes per dictionary entry.
pub(crate) const DICT_ENTRY: usize = 12;

/// The parsed header: counts and absolute section offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Header {
    pub n_docs: u32,
    pub n_files: u32,
    pub n_terms: u32,
    pub total_len: u64,
    pub files_index: u64,
    pub files_data: u64,
    pub docs: u64,
    pub dict_index: u64,
    pub dict_strs: u64,
    pub postings: u64,
    pub end: u64,
}

impl Header {
    /// Encodes the header.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.n_docs.to_le_bytes());
        out.extend_from_slice(&self.n_files.to_le_bytes());
        out.extend_from_slice(&self.n_terms.to_le_bytes());
        out.extend_from_slice(&self.total_len.to_le_bytes());
        for v in [
            self.files_index,
            self.files_data,
            self.docs,
            self.dict_index,
            self.dict_strs,
            self.postings,
            self.end,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Parses and checks a header against the bytes it heads.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Header, CodecError> {
        if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
            return Err(CodecError("not a segment"));
        }
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        if u32_at(8) != VERSION {
            return Err(CodecError("segment version"));
        }
        let h = Header {
            n_docs: u32_at(12),
            n_files: u32_at(16),
            n_terms: u32_at(20),
            total_len: u64_at(24),
            files_index: u64_at(32),
            files_data: u64_at(40),
            docs: u64_at(48),
            dict_index: u64_at(56),
            dict_strs: u64_at(64),
            postings: u64_at(72),
            end: u64_at(80),
        };
        let ordered = [
            HEADER_LEN as u64,
            h.files_index,
            h.files_data,
            h.docs,
            h.dict_index,
            h.dict_strs,
            h.postings,
            h.end,
        ]
        .windows(2)
        .all(|w| w[0] <= w[1]);
        let sizes = h.files_data - h.files_index.min(h.files_data) == u64::from(h.n_files) * 8
            && h.dict_index.saturating_sub(h.docs) == u64::from(h.n_docs) * DOC_ROW as u64
            && h.dict_strs.saturating_sub(h.dict_index)
                == (u64::from(h.n_terms) + 1) * DICT_ENTRY as u64;
        if !ordered || !sizes || h.end != bytes.len() as u64 || h.files_index != HEADER_LEN as u64 {
            return Err(CodecError("segment tables out of range"));
        }
        // The dictionary's last entry must end inside the string and posting areas.
        let last = h.dict_index as usize + h.n_terms as usize * DICT_ENTRY;
        let strs_end = u64::from(u32_at(last));
        let post_end = u64::from(u32_at(last + 4));
        if h.dict_strs + strs_end > h.postings || h.postings + post_end > h.end {
            return Err(CodecError("segment dictionary out of range"));
        }
        Ok(h)
    }
}

/// Appends a posting: document delta, then the frequencies.
pub(crate) fn push_posting(out: &mut Vec<u8>, delta: u32, freq: FieldFreq) {
    push_varint(out, delta);
    let fields = freq.title.min(3) | (freq.ctx.min(7) << 2) | (freq.name.min(7) << 5);
    let v = (u32::from(freq.body) << 1) | u32::from(fields != 0);
    push_varint(out, v);
    if fields != 0 {
        out.push(fields);
    }
}

/// Appends a LEB128 varint.
#[inline]
pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Everything a file record holds.
pub(crate) struct FileRecordOut<'a> {
    pub path: &'a str,
    pub file_type: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub hash: u64,
    pub line_count: u32,
    pub first_doc: u32,
    pub n_docs: u32,
    pub raw_offsets: bool,
    pub sections: &'a [SectionInfo],
}

/// Encodes a file record.
pub(crate) fn encode_file(w: &mut Writer, f: &FileRecordOut<'_>) {
    w.str(f.path);
    w.u64(f.file_type);
    w.u64(f.size);
    w.i64(f.mtime_ns);
    w.u64(f.hash);
    w.u64(u64::from(f.line_count));
    w.u64(u64::from(f.first_doc));
    w.u64(u64::from(f.n_docs));
    w.u64(u64::from(f.raw_offsets));
    w.u64(f.sections.len() as u64);
    for s in f.sections {
        w.str(&s.title);
        w.u64(u64::from(s.level));
        w.u64(u64::from(s.start_line));
        w.u64(u64::from(s.heading_end_line));
        w.u64(u64::from(s.body_end_line));
        w.u64(u64::from(s.end_line));
        w.u64(s.parent.map(|p| u64::from(p) + 1).unwrap_or(0));
    }
}

/// Encodes a document row.
pub(crate) fn encode_doc(out: &mut Vec<u8>, row: &DocRow) {
    for v in [
        row.file,
        row.section,
        row.start_line,
        row.body_len,
        u32::from(row.exceptions) | (u32::from(row.changelog) << 1),
        row.body.0,
        row.body.1,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Encodes a dictionary entry.
pub(crate) fn encode_dict_entry(out: &mut Vec<u8>, str_off: u32, post_off: u32, df: u32) {
    out.extend_from_slice(&str_off.to_le_bytes());
    out.extend_from_slice(&post_off.to_le_bytes());
    out.extend_from_slice(&df.to_le_bytes());
}
