//! The on-disk index cache: one file per manual holding every file record
//! (fingerprint, sections, and each section's normalised text and term
//! frequencies), so a restart re-tokenises only files that changed.
//!
//! Layout: `<index_dir>/<manual-id-hash>.idx`, written atomically (temporary
//! file + rename). A cache written for another root, another manual or
//! another format version, or one that fails to decode, is ignored.

use std::path::{Path, PathBuf};

use crate::analyze::{DocData, FieldFreq, FileRecord, Fingerprint, fnv1a};
use crate::codec::{CodecError, Reader, Writer};
use crate::paths::FileType;
use crate::sections::SectionInfo;

const MAGIC: &[u8; 8] = b"BTNMIDX\0";
const FORMAT_VERSION: u64 = 2;

/// Path of the cache file of a manual.
pub(crate) fn cache_path(index_dir: &Path, manual_id: &str) -> PathBuf {
    index_dir.join(format!("{:016x}.idx", fnv1a(manual_id.as_bytes())))
}

/// Encodes the records of a manual.
pub(crate) fn encode(root: &Path, manual_id: &str, records: &[FileRecord]) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes(MAGIC);
    w.u64(FORMAT_VERSION);
    w.str(&root.to_string_lossy());
    w.str(manual_id);
    w.u64(records.len() as u64);
    for r in records {
        encode_record(&mut w, r);
    }
    w.buf
}

fn encode_record(w: &mut Writer, r: &FileRecord) {
    w.str(&r.path);
    w.u64(match r.file_type {
        FileType::Md => 0,
        FileType::Json => 1,
    });
    w.u64(r.fingerprint.size);
    w.i64(r.fingerprint.mtime_ns);
    w.u64(r.fingerprint.hash);
    w.u64(u64::from(r.line_count));
    w.u64(r.sections.len() as u64);
    for s in &r.sections {
        w.str(&s.title);
        w.u64(u64::from(s.level));
        w.u64(u64::from(s.start_line));
        w.u64(u64::from(s.heading_end_line));
        w.u64(u64::from(s.body_end_line));
        w.u64(u64::from(s.end_line));
        w.u64(s.parent.map(|p| u64::from(p) + 1).unwrap_or(0));
    }
    w.u64(r.docs.len() as u64);
    for d in &r.docs {
        w.u64(u64::from(d.section));
        w.u64(u64::from(d.body_len));
        w.u64(u64::from(d.exceptions));
        w.str(&d.norm_text);
        w.u64(d.terms.len() as u64);
        for (term, f) in &d.terms {
            w.str(term);
            w.u64(u64::from(f.body));
            w.u64(u64::from(f.title));
            w.u64(u64::from(f.ctx));
        }
    }
}

/// Decodes a cache file; `Ok(None)` when it belongs to another root/manual/version.
pub(crate) fn decode(
    bytes: &[u8],
    root: &Path,
    manual_id: &str,
) -> Result<Option<Vec<FileRecord>>, CodecError> {
    let mut r = Reader::new(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return Ok(None);
    }
    if r.u64()? != FORMAT_VERSION || r.str()? != root.to_string_lossy() || r.str()? != manual_id {
        return Ok(None);
    }
    let n = r.len()?;
    let mut records = Vec::with_capacity(n);
    for _ in 0..n {
        records.push(decode_record(&mut r)?);
    }
    Ok(Some(records))
}

fn small<T: TryFrom<u64>>(r: &mut Reader<'_>) -> Result<T, CodecError> {
    T::try_from(r.u64()?).map_err(|_| CodecError("value out of range"))
}

fn decode_record(r: &mut Reader<'_>) -> Result<FileRecord, CodecError> {
    let path = r.str()?.to_string();
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
    let line_count = r.u32()?;
    let n_sections = r.len()?;
    let mut sections = Vec::with_capacity(n_sections);
    for _ in 0..n_sections {
        let title = r.str()?.to_string();
        let level = small::<u8>(r)?;
        let start_line = r.u32()?;
        let heading_end_line = r.u32()?;
        let body_end_line = r.u32()?;
        let end_line = r.u32()?;
        let parent = match r.u32()? {
            0 => None,
            p => Some(p - 1),
        };
        sections.push(SectionInfo {
            title,
            level,
            start_line,
            heading_end_line,
            body_end_line,
            end_line,
            parent,
        });
    }
    let n_docs = r.len()?;
    let mut docs = Vec::with_capacity(n_docs);
    for _ in 0..n_docs {
        let section = r.u32()?;
        if section as usize >= sections.len() {
            return Err(CodecError("doc section out of range"));
        }
        let body_len = r.u32()?;
        let exceptions = r.u64()? != 0;
        let norm_text = r.str()?.to_string();
        let n_terms = r.len()?;
        let mut terms = Vec::with_capacity(n_terms);
        for _ in 0..n_terms {
            let term = r.str()?.to_string();
            let freq = FieldFreq {
                body: small(r)?,
                title: small(r)?,
                ctx: small(r)?,
            };
            terms.push((term, freq));
        }
        docs.push(DocData {
            section,
            body_len,
            norm_text,
            terms,
            exceptions,
        });
    }
    Ok(FileRecord {
        path,
        file_type,
        fingerprint,
        line_count,
        sections,
        docs,
    })
}

/// Reads the cached records of a manual; any problem means "no cache".
pub(crate) fn load(index_dir: &Path, root: &Path, manual_id: &str) -> Option<Vec<FileRecord>> {
    let bytes = std::fs::read(cache_path(index_dir, manual_id)).ok()?;
    decode(&bytes, root, manual_id).ok().flatten()
}

/// Writes the records of a manual atomically.
pub(crate) fn save(
    index_dir: &Path,
    root: &Path,
    manual_id: &str,
    records: &[FileRecord],
) -> std::io::Result<()> {
    std::fs::create_dir_all(index_dir)?;
    // A derived cache: keep it out of version control without touching the
    // repository's own .gitignore.
    let ignore = index_dir.join(".gitignore");
    if !ignore.exists() {
        let _ = std::fs::write(&ignore, "*\n");
    }
    let target = cache_path(index_dir, manual_id);
    let tmp = target.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, encode(root, manual_id, records))?;
    std::fs::rename(&tmp, &target).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Removes the cache file of a manual that no longer exists.
pub(crate) fn delete(index_dir: &Path, manual_id: &str) {
    let _ = std::fs::remove_file(cache_path(index_dir, manual_id));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::analyze_file;

    #[test]
    fn records_round_trip_and_foreign_caches_are_ignored() {
        let fp = Fingerprint {
            size: 10,
            mtime_ns: -3,
            hash: 7,
        };
        let rec = analyze_file("a/b.md", FileType::Md, "pre\n# 見出し\n本文です。\n", fp);
        let root = Path::new("/r");
        let bytes = encode(root, "m1", std::slice::from_ref(&rec));
        assert_eq!(decode(&bytes, root, "m1"), Ok(Some(vec![rec])));
        assert_eq!(decode(&bytes, root, "m2"), Ok(None));
        assert_eq!(decode(&bytes, Path::new("/other"), "m1"), Ok(None));
        assert!(decode(&bytes[..bytes.len() / 2], root, "m1").is_err());
    }
}
