//! An immutable index segment: a set of files of one manual with their
//! sections, documents, term dictionary and posting lists, in one
//! contiguous byte layout that is read in place (memory-mapped from disk,
//! or held in memory when there is no index directory).
//!
//! Opening a segment checks its header and table sizes and does nothing
//! else: no table is decoded up front, so opening takes microseconds and
//! memory follows what queries touch.
//!
//! Layout (little-endian; see [`format`]):
//!
//! ```text
//! header      magic, version, counts, total body length, section offsets
//! files_index n_files × u64: offset of each file record (files sorted by path)
//! files_data  file records (varints): path, type, fingerprint, lines,
//!             first document, document count, sections
//! docs        n_docs × 28 bytes: file, section, start line, body length,
//!             flags, body byte range in the file's text
//! dict_index  (n_terms + 1) × 12 bytes: string offset, postings offset,
//!             document frequency (terms sorted by bytes; last entry = ends)
//! dict_strs   the term bytes
//! postings    per term: (doc delta varint, frequency varint[, fields byte])*
//! ```

pub(crate) mod builder;
pub(crate) mod format;
pub(crate) mod guard;
pub(crate) mod merge;

use std::ops::Deref;
use std::path::Path;

use crate::analyze::sections::SectionInfo;
use crate::analyze::terms::{FieldFreq, Fingerprint};
use crate::index::codec::{CodecError, Reader};
use crate::wire::ids::FileType;
pub(crate) use format::DocRow;
use format::{DICT_ENTRY, DOC_ROW, Header};

/// The bytes of a segment: a read-only memory map of its file, or memory.
pub(crate) enum Backing {
    /// Mapped from a segment file that is never written after it is renamed
    /// into place (guarded against another program truncating it).
    Mapped(GuardedMap),
    /// Built in memory (no index directory).
    Owned(Box<[u8]>),
}

impl Deref for Backing {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Backing::Mapped(m) => &m.map,
            Backing::Owned(b) => b,
        }
    }
}

impl Backing {
    /// Bytes of this mapping resident in memory (0 when not mapped or
    /// unknown).
    pub(crate) fn resident_bytes(&self) -> usize {
        #[cfg(unix)]
        if let Backing::Mapped(GuardedMap { map: m, .. }) = self {
            // SAFETY: sysconf has no preconditions.
            let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                .unwrap_or(4096)
                .max(1);
            let pages = m.len().div_ceil(page);
            if pages == 0 {
                return 0;
            }
            let mut vec = vec![0u8; pages];
            // SAFETY: the address and length are those of a live mapping
            // (page-aligned by mmap) and `vec` has one byte per page.
            let rc = unsafe {
                libc::mincore(
                    m.as_ptr() as *mut libc::c_void,
                    m.len(),
                    vec.as_mut_ptr().cast(),
                )
            };
            if rc == 0 {
                return vec.iter().filter(|b| **b & 1 != 0).count() * page;
            }
        }
        0
    }

    /// Lets the kernel drop this mapping's pages from the process (they
    /// stay in the page cache and come back on the next access).
    pub(crate) fn release(&self) {
        if let Backing::Mapped(GuardedMap { map: m, .. }) = self {
            // SAFETY: DONTNEED on a read-only mapping of a file that is never
            // written discards nothing: later reads see the same bytes.
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    /// Maps a segment file read-only.
    pub(crate) fn map(path: &Path) -> std::io::Result<Backing> {
        let file = std::fs::File::open(path)?;
        // SAFETY: segment files are written to a temporary name, synced and
        // renamed into place; baton never writes to a segment file after
        // that (a changed manual gets a new segment file), so the mapped
        // bytes do not change while mapped. Another program truncating the
        // file makes reads past its new end fault: the range is guarded
        // (`guard`), such pages read as zeros and the index is reloaded.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let slot = guard::register(map.as_ptr() as usize, map.len());
        Ok(Backing::Mapped(GuardedMap { map, slot }))
    }
}

/// A memory map whose range is registered with the `SIGBUS` guard while
/// it lives.
pub(crate) struct GuardedMap {
    map: memmap2::Mmap,
    slot: Option<usize>,
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        // Before the mapping goes (the field drops after this).
        if let Some(slot) = self.slot {
            guard::release(slot);
        }
    }
}

/// The fixed part of a file record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileHead<'a> {
    /// Path relative to the manual.
    pub path: &'a str,
    /// Markdown or JSON.
    pub file_type: FileType,
    /// Content identity when indexed.
    pub fingerprint: Fingerprint,
    /// Number of lines.
    pub line_count: u32,
    /// First document (segment-local) of the file.
    pub first_doc: u32,
    /// Number of documents.
    pub n_docs: u32,
    /// Whether byte offsets in the LF-normalised text equal offsets in the
    /// file (valid UTF-8, no BOM, no CR): bodies can then be read in place.
    pub raw_offsets: bool,
}

/// A term of a segment's dictionary.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TermEntry<'a> {
    /// Documents holding the term.
    pub df: u32,
    /// Its encoded posting list.
    pub postings: &'a [u8],
}

/// An open segment.
pub(crate) struct Segment {
    bytes: Backing,
    header: Header,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("bytes", &self.bytes.len())
            .field("docs", &self.header.n_docs)
            .field("files", &self.header.n_files)
            .field("terms", &self.header.n_terms)
            .finish()
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
        .unwrap_or(0)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .unwrap_or(0)
}

impl Segment {
    /// Opens a segment over its bytes, checking the header and table sizes.
    pub(crate) fn open(bytes: Backing) -> Result<Segment, CodecError> {
        let header = Header::parse(&bytes)?;
        Ok(Segment { bytes, header })
    }

    /// Size in bytes.
    pub(crate) fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Number of documents.
    pub(crate) fn n_docs(&self) -> u32 {
        self.header.n_docs
    }

    /// Number of files.
    pub(crate) fn n_files(&self) -> u32 {
        self.header.n_files
    }

    /// Number of distinct terms.
    pub(crate) fn n_terms(&self) -> u32 {
        self.header.n_terms
    }

    /// Sum of the documents' body lengths.
    pub(crate) fn total_len(&self) -> u64 {
        self.header.total_len
    }

    /// Bytes of the segment resident in the process (mapped segments).
    pub(crate) fn resident_bytes(&self) -> usize {
        self.bytes.resident_bytes()
    }

    /// Drops the segment's resident pages (mapped segments only).
    pub(crate) fn release(&self) {
        self.bytes.release();
    }

    /// Whether the bytes are a memory map.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.bytes, Backing::Mapped(_))
    }

    /// A document row (`None` past the end).
    pub(crate) fn doc(&self, doc: u32) -> Option<DocRow> {
        if doc >= self.header.n_docs {
            return None;
        }
        let at = self.header.docs as usize + doc as usize * DOC_ROW;
        let b = &self.bytes;
        Some(DocRow {
            file: le_u32(b, at),
            section: le_u32(b, at + 4),
            start_line: le_u32(b, at + 8),
            body_len: le_u32(b, at + 12),
            exceptions: le_u32(b, at + 16) & 1 != 0,
            changelog: le_u32(b, at + 16) & 2 != 0,
            body: (le_u32(b, at + 20), le_u32(b, at + 24)),
        })
    }

    /// Body length of a document (0 past the end).
    pub(crate) fn doc_len(&self, doc: u32) -> u32 {
        if doc >= self.header.n_docs {
            return 0;
        }
        le_u32(
            &self.bytes,
            self.header.docs as usize + doc as usize * DOC_ROW + 12,
        )
    }

    fn file_reader(&self, file: u32) -> Option<Reader<'_>> {
        if file >= self.header.n_files {
            return None;
        }
        let at = le_u64(
            &self.bytes,
            self.header.files_index as usize + file as usize * 8,
        ) as usize;
        let start = self.header.files_data as usize + at;
        let end = self.header.docs as usize;
        self.bytes.get(start..end).map(Reader::new)
    }

    /// The path of a file (`None` when out of range or corrupt).
    pub(crate) fn file_path(&self, file: u32) -> Option<&str> {
        self.file_reader(file)?.str().ok()
    }

    /// The fixed part of a file record.
    pub(crate) fn file_head(&self, file: u32) -> Option<FileHead<'_>> {
        let mut r = self.file_reader(file)?;
        read_head(&mut r).ok()
    }

    /// The sections of a file.
    pub(crate) fn sections(&self, file: u32) -> Vec<SectionInfo> {
        let Some(mut r) = self.file_reader(file) else {
            return Vec::new();
        };
        (|| -> Result<Vec<SectionInfo>, CodecError> {
            read_head(&mut r)?;
            let n = r.len()?;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                out.push(read_section(&mut r)?);
            }
            Ok(out)
        })()
        .unwrap_or_default()
    }

    /// One section of a file.
    pub(crate) fn section(&self, file: u32, index: u32) -> Option<SectionInfo> {
        let mut r = self.file_reader(file)?;
        read_head(&mut r).ok()?;
        let n = r.len().ok()?;
        if index as usize >= n {
            return None;
        }
        for _ in 0..index {
            read_section(&mut r).ok()?;
        }
        read_section(&mut r).ok()
    }

    /// The file with this path (binary search over the sorted file table).
    pub(crate) fn find_file(&self, path: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, self.header.n_files);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.file_path(mid)?.cmp(path) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    fn dict_entry(&self, i: u32) -> (u32, u32, u32) {
        let at = self.header.dict_index as usize + i as usize * DICT_ENTRY;
        let b = &self.bytes;
        (le_u32(b, at), le_u32(b, at + 4), le_u32(b, at + 8))
    }

    /// The bytes of term `i` of the dictionary.
    pub(crate) fn term_bytes(&self, i: u32) -> &[u8] {
        let (start, _, _) = self.dict_entry(i);
        let (end, _, _) = self.dict_entry(i + 1);
        let base = self.header.dict_strs as usize;
        self.bytes
            .get(base + start as usize..base + end as usize)
            .unwrap_or(&[])
    }

    /// Term `i` of the dictionary with its postings.
    pub(crate) fn term_at(&self, i: u32) -> TermEntry<'_> {
        let (_, post, df) = self.dict_entry(i);
        let (_, post_end, _) = self.dict_entry(i + 1);
        let base = self.header.postings as usize;
        TermEntry {
            df,
            postings: self
                .bytes
                .get(base + post as usize..base + post_end as usize)
                .unwrap_or(&[]),
        }
    }

    /// Looks a term up (binary search over the sorted dictionary).
    pub(crate) fn term(&self, text: &str) -> Option<TermEntry<'_>> {
        let key = text.as_bytes();
        let (mut lo, mut hi) = (0u32, self.header.n_terms);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.term_bytes(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.term_at(mid)),
            }
        }
        None
    }
}

/// Decodes a posting list: `(segment-local document, frequencies)`.
pub(crate) struct Postings<'a> {
    bytes: &'a [u8],
    pos: usize,
    doc: u32,
}

impl<'a> Postings<'a> {
    /// Iterates an encoded posting list.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Postings {
            bytes,
            pos: 0,
            doc: 0,
        }
    }

    #[inline]
    fn varint(&mut self) -> Option<u32> {
        let mut value: u32 = 0;
        let mut shift = 0;
        loop {
            let b = *self.bytes.get(self.pos)?;
            self.pos += 1;
            value |= u32::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(value);
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
    }
}

impl Iterator for Postings<'_> {
    type Item = (u32, FieldFreq);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let delta = self.varint()?;
        self.doc = self.doc.checked_add(delta)?;
        let v = self.varint()?;
        let mut freq = FieldFreq {
            body: u16::try_from(v >> 1).unwrap_or(u16::MAX),
            ..FieldFreq::default()
        };
        if v & 1 == 1 {
            let fields = *self.bytes.get(self.pos)?;
            self.pos += 1;
            freq.title = fields & 0b11;
            freq.ctx = (fields >> 2) & 0b111;
            freq.name = fields >> 5;
        }
        Some((self.doc, freq))
    }
}

fn read_head<'a>(r: &mut Reader<'a>) -> Result<FileHead<'a>, CodecError> {
    let path = r.str()?;
    let file_type = match r.u64()? {
        0 => FileType::Md,
        1 => FileType::Json,
        _ => return Err(CodecError("unknown file type")),
    };
    let fingerprint = Fingerprint {
        size: r.u64()?,
        mtime_ns: r.i64()?,
        hash: r.u64()?,
    };
    Ok(FileHead {
        path,
        file_type,
        fingerprint,
        line_count: r.u32()?,
        first_doc: r.u32()?,
        n_docs: r.u32()?,
        raw_offsets: r.u64()? != 0,
    })
}

fn read_section(r: &mut Reader<'_>) -> Result<SectionInfo, CodecError> {
    let title = r.str()?.to_string();
    let level = u8::try_from(r.u64()?).map_err(|_| CodecError("level out of range"))?;
    Ok(SectionInfo {
        title,
        level,
        start_line: r.u32()?,
        heading_end_line: r.u32()?,
        body_end_line: r.u32()?,
        end_line: r.u32()?,
        parent: match r.u32()? {
            0 => None,
            p => Some(p - 1),
        },
    })
}
