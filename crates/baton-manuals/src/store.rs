//! The on-disk index cache: one file per manual holding every file record
//! (fingerprint, sections, and each section's normalised text and term
//! frequencies), so a restart re-tokenises only files that changed.
//!
//! Layout: `<index_dir>/<manual-id-hash>.idx`, written atomically (temporary
//! file + rename). A cache written for another root, another manual or
//! another format version, or one that fails to decode, is ignored.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::analyze::{DocData, FieldFreq, FileRecord, Fingerprint, fnv1a};
use crate::codec::{CodecError, Reader, Writer};
use crate::index::ManualIndex;
use crate::paths::FileType;
use crate::sections::SectionInfo;

const MAGIC: &[u8; 8] = b"BTNMIDX\0";
const FORMAT_VERSION: u64 = 3;

/// Path of the cache file of a manual.
pub(crate) fn cache_path(index_dir: &Path, manual_id: &str) -> PathBuf {
    index_dir.join(format!("{:016x}.idx", fnv1a(manual_id.as_bytes())))
}

/// Encodes the records of a manual.
#[cfg(test)]
pub(crate) fn encode(root: &Path, manual_id: &str, records: &[FileRecord]) -> Vec<u8> {
    let mut w = Writer::default();
    encode_header(&mut w, root, manual_id, records.len());
    for r in records {
        encode_file(&mut w, r, r.docs.len());
        for d in &r.docs {
            encode_doc(
                &mut w,
                DocHead {
                    section: d.section,
                    body_len: d.body_len,
                    exceptions: d.exceptions,
                    norm_text: &d.norm_text,
                },
                d.terms.iter().map(|(t, f)| (t.as_str(), *f)),
            );
        }
    }
    w.buf
}

fn encode_header(w: &mut Writer, root: &Path, manual_id: &str, records: usize) {
    w.bytes(MAGIC);
    w.u64(FORMAT_VERSION);
    w.str(&root.to_string_lossy());
    w.str(manual_id);
    w.u64(records as u64);
}

/// Everything of a record but its documents (`n_docs` of them follow).
fn encode_file(w: &mut Writer, r: &FileRecord, n_docs: usize) {
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
    w.u64(n_docs as u64);
}

/// The scalar fields of a document.
struct DocHead<'a> {
    section: u32,
    body_len: u32,
    exceptions: bool,
    norm_text: &'a str,
}

fn encode_doc<'a>(
    w: &mut Writer,
    d: DocHead<'_>,
    terms: impl ExactSizeIterator<Item = (&'a str, FieldFreq)>,
) {
    w.u64(u64::from(d.section));
    w.u64(u64::from(d.body_len));
    w.u64(u64::from(d.exceptions));
    w.str(d.norm_text);
    w.u64(terms.len() as u64);
    for (term, f) in terms {
        w.str(term);
        w.u64(u64::from(f.body));
        w.u64(u64::from(f.title));
        w.u64(u64::from(f.ctx));
        w.u64(u64::from(f.name));
    }
}

/// Writes a manual's index straight from memory (no intermediate records),
/// streaming to the file in small chunks, atomically (temporary file + rename).
pub(crate) fn save_index(
    index_dir: &Path,
    root: &Path,
    manual_id: &str,
    index: &ManualIndex,
) -> std::io::Result<()> {
    const CHUNK: usize = 64 * 1024;
    prepare_dir(index_dir)?;
    let target = cache_path(index_dir, manual_id);
    let tmp = target.with_extension(format!("tmp{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        let mut w = Writer::default();
        encode_header(&mut w, root, manual_id, index.file_count());
        for entry in index.files() {
            let docs: Vec<_> = entry
                .doc_ids
                .iter()
                .filter_map(|id| Some((*id, index.doc(*id)?)))
                .collect();
            encode_file(&mut w, &entry.record, docs.len());
            for (id, doc) in docs {
                let terms = index.doc_terms(id);
                encode_doc(
                    &mut w,
                    DocHead {
                        section: doc.section,
                        body_len: doc.body_len,
                        exceptions: doc.exceptions,
                        norm_text: &doc.norm_text,
                    },
                    terms.into_iter(),
                );
            }
            if w.buf.len() >= CHUNK {
                file.write_all(&w.buf)?;
                w.buf.clear();
            }
        }
        file.write_all(&w.buf)?;
        Ok(())
    };
    write()
        .and_then(|()| std::fs::rename(&tmp, &target))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Decodes a cache file; `Ok(None)` when it belongs to another root/manual/version.
#[cfg(test)]
pub(crate) fn decode(
    bytes: &[u8],
    root: &Path,
    manual_id: &str,
) -> Result<Option<Vec<FileRecord>>, CodecError> {
    let mut records = Vec::new();
    Ok(decode_each(bytes, root, manual_id, |r| records.push(r))?.then_some(records))
}

/// Decodes a cache file record by record, handing each to `each`;
/// `Ok(false)` when it belongs to another root/manual/version (nothing is
/// handed over). On an error some records may already have been handed over.
fn decode_each(
    bytes: &[u8],
    root: &Path,
    manual_id: &str,
    mut each: impl FnMut(FileRecord),
) -> Result<bool, CodecError> {
    let mut r = Reader::new(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return Ok(false);
    }
    if r.u64()? != FORMAT_VERSION || r.str()? != root.to_string_lossy() || r.str()? != manual_id {
        return Ok(false);
    }
    let n = r.len()?;
    for _ in 0..n {
        each(decode_record(&mut r)?);
    }
    Ok(true)
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
                name: small(r)?,
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

/// Loads the cached records of a manual into an empty index, one record
/// at a time. Any problem means "no cache": the index is left empty and
/// `false` is returned.
pub(crate) fn load_into(
    index_dir: &Path,
    root: &Path,
    manual_id: &str,
    index: &mut ManualIndex,
) -> bool {
    let Ok(bytes) = std::fs::read(cache_path(index_dir, manual_id)) else {
        return false;
    };
    match decode_each(&bytes, root, manual_id, |record| index.upsert(record)) {
        Ok(true) => true,
        _ => {
            *index = ManualIndex::new();
            false
        }
    }
}

fn prepare_dir(index_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(index_dir)?;
    // A derived cache: keep it out of version control without touching the
    // repository's own .gitignore.
    let ignore = index_dir.join(".gitignore");
    if !ignore.exists() {
        let _ = std::fs::write(&ignore, "*\n");
    }
    Ok(())
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
