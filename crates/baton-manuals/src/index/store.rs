//! The on-disk index: per manual a folder with immutable segment files and
//! a small manifest naming them, their deleted files and the files whose
//! modification time changed without their content changing.
//!
//! Layout: `<index_dir>/<manual-id-hash>/manifest` and
//! `<index_dir>/<manual-id-hash>/seg-<n>.bin`. Every file is written to a
//! temporary name and renamed into place; a segment file is never written
//! again after that (so it can be memory-mapped), and the manifest is
//! replaced only after the segments it names exist. A manifest written for
//! another root, manual or format, or one that fails to decode, means "no
//! index": the manual is indexed again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::analyze::terms::fnv1a;
use crate::index::codec::{CodecError, Reader, Writer};
use crate::index::segment::{Backing, Segment};

const MAGIC: &[u8; 8] = b"BTNMAN\x00\x01";
const FORMAT_VERSION: u64 = 1;

/// What a manifest records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// Next segment number.
    pub next_id: u64,
    /// Segments in order, with their deleted files.
    pub slots: Vec<(u64, Vec<u32>)>,
    /// Files whose size or modification time changed but not their content:
    /// `(path, size, mtime_ns)`.
    pub touched: Vec<(String, u64, i64)>,
}

/// Where segments of one manual are kept.
#[derive(Debug, Clone)]
pub(crate) enum SegmentStore {
    /// In a folder on disk (memory-mapped).
    Disk(PathBuf),
    /// In memory only.
    Memory,
}

impl SegmentStore {
    /// The store of a manual: its folder under `index_dir`, or memory.
    pub(crate) fn for_manual(index_dir: Option<&Path>, manual_id: &str) -> SegmentStore {
        match index_dir {
            Some(dir) if !is_linked(dir) => SegmentStore::Disk(manual_dir(dir, manual_id)),
            _ => SegmentStore::Memory,
        }
    }

    /// Writes a segment with `write` and opens it.
    pub(crate) fn write_segment(
        &self,
        id: u64,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<u64>,
    ) -> std::io::Result<Arc<Segment>> {
        match self {
            SegmentStore::Memory => {
                let mut bytes = Vec::new();
                write(&mut bytes)?;
                open_bytes(Backing::Owned(bytes.into()))
            }
            SegmentStore::Disk(dir) => {
                prepare_dir(dir)?;
                let target = segment_path(dir, id);
                let tmp = target.with_extension(format!("tmp{}", std::process::id()));
                let result = (|| {
                    let file = std::fs::File::create(&tmp)?;
                    let mut out = std::io::BufWriter::with_capacity(256 * 1024, file);
                    write(&mut out)?;
                    let file = out.into_inner().map_err(|e| e.into_error())?;
                    file.sync_all()?;
                    std::fs::rename(&tmp, &target)
                })();
                if result.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                result?;
                open_bytes(Backing::map(&target)?)
            }
        }
    }

    /// A spill target for a merge: a temporary file on disk, or memory.
    pub(crate) fn spill(&self) -> crate::index::segment::merge::Spill {
        use crate::index::segment::merge::Spill;
        match self {
            SegmentStore::Memory => Spill::Memory(Vec::new()),
            SegmentStore::Disk(dir) => {
                let path = dir.join(format!("merge.tmp{}", std::process::id()));
                match std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&path)
                {
                    Ok(file) => {
                        // Unlinked at once: the space is freed when closed.
                        let _ = std::fs::remove_file(&path);
                        Spill::File(std::io::BufWriter::new(file))
                    }
                    Err(_) => Spill::Memory(Vec::new()),
                }
            }
        }
    }

    /// Loads a manifest and opens its segments; `None` when there is no
    /// usable index (missing, foreign, corrupt or a segment unreadable).
    pub(crate) fn load(
        &self,
        root: &Path,
        manual_id: &str,
    ) -> Option<(Manifest, Vec<Arc<Segment>>)> {
        let SegmentStore::Disk(dir) = self else {
            return None;
        };
        if is_linked(dir) {
            return None;
        }
        let bytes = std::fs::read(dir.join("manifest")).ok()?;
        let manifest = decode_manifest(&bytes, root, manual_id).ok()??;
        let mut segments = Vec::with_capacity(manifest.slots.len());
        for (id, _) in &manifest.slots {
            segments.push(open_bytes(Backing::map(&segment_path(dir, *id)).ok()?).ok()?);
        }
        Some((manifest, segments))
    }

    /// Saves the manifest (atomically), then removes segment files it does
    /// not name.
    pub(crate) fn save(
        &self,
        root: &Path,
        manual_id: &str,
        manifest: &Manifest,
    ) -> std::io::Result<()> {
        let SegmentStore::Disk(dir) = self else {
            return Ok(());
        };
        prepare_dir(dir)?;
        let bytes = encode_manifest(root, manual_id, manifest);
        let target = dir.join("manifest");
        let tmp = dir.join(format!("manifest.tmp{}", std::process::id()));
        let result = (|| {
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &target)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
            return result;
        }
        let keep: Vec<PathBuf> = manifest
            .slots
            .iter()
            .map(|(id, _)| segment_path(dir, *id))
            .collect();
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let stale_segment = name.starts_with("seg-") && !keep.contains(&path);
                let stale_tmp = name.contains(".tmp");
                if stale_segment || stale_tmp {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok(())
    }

    /// Removes everything stored for the manual.
    pub(crate) fn delete(&self) {
        if let SegmentStore::Disk(dir) = self {
            match dir.parent() {
                // Never through a link: only the link itself would go.
                Some(parent) if is_linked(parent) => {}
                _ if is_link(dir) => {
                    let _ = std::fs::remove_file(dir);
                }
                _ => {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
        }
    }
}

fn open_bytes(bytes: Backing) -> std::io::Result<Arc<Segment>> {
    Segment::open(bytes)
        .map(Arc::new)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The folder of a manual's index.
pub(crate) fn manual_dir(index_dir: &Path, manual_id: &str) -> PathBuf {
    index_dir.join(format!("{:016x}", fnv1a(manual_id.as_bytes())))
}

fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("seg-{id}.bin"))
}

/// Whether `path` is a symbolic link (not followed).
fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Whether the index folder `dir` or the folder holding it is a symbolic
/// link: the index is then never written or read there (a link could lead
/// baton's writes and deletions anywhere), it stays in memory.
pub(crate) fn is_linked(dir: &Path) -> bool {
    is_link(dir) || dir.parent().is_some_and(is_link)
}

fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent() {
        if is_linked(parent) {
            return Err(std::io::Error::other(format!(
                "{} is a symbolic link; the index is not written through links",
                parent.display()
            )));
        }
        // A link in place of a manual's folder is replaced by a folder.
        if is_link(dir) {
            std::fs::remove_file(dir)?;
        }
        // A derived index: keep it out of version control without touching
        // the repository's own .gitignore — only in a folder baton makes for
        // it, which appears with its ignore file or not at all (never
        // through a link).
        if !parent.exists() {
            baton_fs::create_ignored_dir(parent)?;
        }
        // The single-file cache of earlier versions is replaced by this folder.
        let _ = std::fs::remove_file(dir.with_extension("idx"));
    }
    std::fs::create_dir_all(dir)
}

fn encode_manifest(root: &Path, manual_id: &str, m: &Manifest) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes(MAGIC);
    w.u64(FORMAT_VERSION);
    w.str(&root.to_string_lossy());
    w.str(manual_id);
    w.u64(m.next_id);
    w.u64(m.slots.len() as u64);
    for (id, deleted) in &m.slots {
        w.u64(*id);
        w.u64(deleted.len() as u64);
        for d in deleted {
            w.u64(u64::from(*d));
        }
    }
    w.u64(m.touched.len() as u64);
    for (path, size, mtime) in &m.touched {
        w.str(path);
        w.u64(*size);
        w.i64(*mtime);
    }
    w.buf
}

fn decode_manifest(
    bytes: &[u8],
    root: &Path,
    manual_id: &str,
) -> Result<Option<Manifest>, CodecError> {
    let mut r = Reader::new(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return Ok(None);
    }
    if r.u64()? != FORMAT_VERSION || r.str()? != root.to_string_lossy() || r.str()? != manual_id {
        return Ok(None);
    }
    let next_id = r.u64()?;
    let n = r.len()?;
    let mut slots = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.u64()?;
        let k = r.len()?;
        let mut deleted = Vec::with_capacity(k);
        for _ in 0..k {
            deleted.push(r.u32()?);
        }
        slots.push((id, deleted));
    }
    let n = r.len()?;
    let mut touched = Vec::with_capacity(n);
    for _ in 0..n {
        touched.push((r.str()?.to_string(), r.u64()?, r.i64()?));
    }
    Ok(Some(Manifest {
        next_id,
        slots,
        touched,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip_and_foreign_ones_are_ignored() {
        let m = Manifest {
            next_id: 9,
            slots: vec![(3, vec![1, 4]), (8, vec![])],
            touched: vec![("a/b.md".into(), 10, -3)],
        };
        let root = Path::new("/r");
        let bytes = encode_manifest(root, "m1", &m);
        assert_eq!(decode_manifest(&bytes, root, "m1"), Ok(Some(m)));
        assert_eq!(decode_manifest(&bytes, root, "m2"), Ok(None));
        assert_eq!(decode_manifest(&bytes, Path::new("/o"), "m1"), Ok(None));
        assert!(decode_manifest(&bytes[..bytes.len() - 2], root, "m1").is_err());
    }
}
