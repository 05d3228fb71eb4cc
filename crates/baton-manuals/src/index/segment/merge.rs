//! Merging segments into one, leaving out deleted files: the k-way merge
//! of their sorted dictionaries, posting lists concatenated in segment
//! order with renumbered documents. Nothing is re-tokenised, and memory
//! holds only the file tables, the dictionary being written and one term's
//! postings at a time (posting bytes go to a spill file when one is given).

use std::collections::BinaryHeap;
use std::io::{Read, Seek, Write};

use super::builder::{FileOut, Parts, offset32, write_parts};
use super::format::{DICT_ENTRY, encode_dict_entry, push_posting};
use super::{DocRow, Postings, Segment};

/// One input of a merge.
pub(crate) struct MergeInput<'a> {
    /// The segment.
    pub segment: &'a Segment,
    /// Its deleted files (segment-local indices, sorted).
    pub deleted: &'a [u32],
}

/// Where posting bytes wait until the tables are written.
pub(crate) enum Spill {
    /// In memory.
    Memory(Vec<u8>),
    /// A temporary file (bounded memory for large merges).
    File(std::io::BufWriter<std::fs::File>),
}

impl Spill {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Spill::Memory(v) => {
                v.extend_from_slice(bytes);
                Ok(())
            }
            Spill::File(f) => f.write_all(bytes),
        }
    }

    fn drain_into(self, out: &mut dyn Write) -> std::io::Result<()> {
        match self {
            Spill::Memory(v) => out.write_all(&v),
            Spill::File(f) => {
                let mut file = f.into_inner().map_err(|e| e.into_error())?;
                file.rewind()?;
                std::io::copy(&mut (&mut file as &mut dyn Read), out)?;
                Ok(())
            }
        }
    }
}

/// Merges `inputs` into one segment written to `out`; returns its size.
pub(crate) fn merge(
    inputs: &[MergeInput<'_>],
    mut spill: Spill,
    out: &mut dyn Write,
) -> std::io::Result<u64> {
    // Renumber: live documents of input 0, then input 1, …
    let mut remap: Vec<Vec<u32>> = Vec::with_capacity(inputs.len());
    let mut files: Vec<FileOut> = Vec::new();
    let mut docs: Vec<DocRow> = Vec::new();
    let mut total_len = 0u64;
    for input in inputs {
        let seg = input.segment;
        let mut map = vec![u32::MAX; seg.n_docs() as usize];
        // Files in the order of their documents (a segment's documents are
        // grouped by file but not ordered by path): the new numbers then
        // follow the old ones, so every posting list stays ascending.
        let mut live: Vec<(u32, super::FileHead<'_>)> = (0..seg.n_files())
            .filter(|f| input.deleted.binary_search(f).is_err())
            .filter_map(|f| Some((f, seg.file_head(f)?)))
            .collect();
        live.sort_by_key(|(_, head)| head.first_doc);
        for (file, head) in live {
            let new_file = files.len() as u32;
            let first_doc = docs.len() as u32;
            for local in head.first_doc..head.first_doc.saturating_add(head.n_docs) {
                let Some(mut row) = seg.doc(local) else {
                    continue;
                };
                if let Some(slot) = map.get_mut(local as usize) {
                    *slot = docs.len() as u32;
                }
                row.file = new_file;
                total_len += u64::from(row.body_len);
                docs.push(row);
            }
            files.push(FileOut {
                path: head.path.to_string(),
                file_type: head.file_type,
                fingerprint: head.fingerprint,
                line_count: head.line_count,
                first_doc,
                n_docs: docs.len() as u32 - first_doc,
                raw_offsets: head.raw_offsets,
                sections: seg.sections(file),
            });
        }
        remap.push(map);
    }
    // Documents must be ordered by file for `first_doc` ranges: they are,
    // since each file's documents were pushed together.
    let mut heap: BinaryHeap<std::cmp::Reverse<(&[u8], usize, u32)>> = BinaryHeap::new();
    for (i, input) in inputs.iter().enumerate() {
        if input.segment.n_terms() > 0 {
            heap.push(std::cmp::Reverse((input.segment.term_bytes(0), i, 0)));
        }
    }
    let mut dict_index: Vec<u8> = Vec::new();
    let mut dict_strs: Vec<u8> = Vec::new();
    let mut post_len: u64 = 0;
    let mut n_terms = 0u32;
    let mut buf: Vec<u8> = Vec::new();
    while let Some(std::cmp::Reverse((term, _, _))) = heap.peek().copied() {
        buf.clear();
        let mut df = 0u32;
        let mut last = 0u32;
        // Every input holding this term, in input order (the heap orders
        // equal terms by input index).
        while let Some(std::cmp::Reverse((t, i, at))) = heap.peek().copied() {
            if t != term {
                break;
            }
            heap.pop();
            let seg = inputs[i].segment;
            for (local, freq) in Postings::new(seg.term_at(at).postings) {
                let Some(&new) = remap[i].get(local as usize) else {
                    continue;
                };
                if new == u32::MAX {
                    continue;
                }
                // New numbers ascend within an input (files are walked in
                // document order) and across inputs; never decode a list
                // that would not.
                let delta = if df == 0 {
                    new
                } else {
                    match new.checked_sub(last) {
                        Some(d) if d > 0 => d,
                        _ => {
                            debug_assert!(false, "postings out of order in a merge");
                            continue;
                        }
                    }
                };
                push_posting(&mut buf, delta, freq);
                last = new;
                df += 1;
            }
            if at + 1 < seg.n_terms() {
                heap.push(std::cmp::Reverse((seg.term_bytes(at + 1), i, at + 1)));
            }
        }
        if df == 0 {
            continue;
        }
        encode_dict_entry(
            &mut dict_index,
            offset32(dict_strs.len() as u64)?,
            offset32(post_len)?,
            df,
        );
        dict_strs.extend_from_slice(term);
        spill.write(&buf)?;
        post_len += buf.len() as u64;
        n_terms += 1;
    }
    encode_dict_entry(
        &mut dict_index,
        offset32(dict_strs.len() as u64)?,
        offset32(post_len)?,
        0,
    );
    debug_assert_eq!(dict_index.len(), (n_terms as usize + 1) * DICT_ENTRY);
    let parts = Parts {
        files: &files,
        docs: &docs,
        total_len,
        n_terms,
        dict_index: &dict_index,
        dict_strs: &dict_strs,
        postings_len: post_len,
    };
    let mut spill = Some(spill);
    write_parts(out, &parts, &mut |w| match spill.take() {
        Some(s) => s.drain_into(w),
        None => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::terms::{Fingerprint, analyze_file};
    use crate::index::segment::Backing;
    use crate::index::segment::builder::SegmentBuilder;
    use crate::wire::ids::FileType;

    fn segment(files: &[(&str, &str)]) -> Segment {
        let mut b = SegmentBuilder::new();
        for (path, text) in files {
            let fp = Fingerprint {
                size: text.len() as u64,
                mtime_ns: 0,
                hash: 0,
            };
            b.add(analyze_file(path, FileType::Md, text, fp));
        }
        Segment::open(Backing::Owned(b.into_bytes().expect("bytes").into())).expect("open")
    }

    fn df(seg: &Segment, term: &str) -> u32 {
        seg.term(term).map(|t| t.df).unwrap_or(0)
    }

    #[test]
    fn a_merged_segment_merges_again_with_ascending_postings() {
        // Files added out of path order: documents are not in file-table order.
        let a = segment(&[
            ("z.md", "# 入院\n入院の説明。\n"),
            ("a.md", "# 入院\n入院給付金。\n"),
        ]);
        let b = segment(&[("m.md", "# 入院\n入院日数。\n")]);
        let merge_all = |inputs: &[MergeInput<'_>]| {
            let mut out = Vec::new();
            merge(inputs, Spill::Memory(Vec::new()), &mut out).expect("merge");
            Segment::open(Backing::Owned(out.into())).expect("open")
        };
        let once = merge_all(&[
            MergeInput {
                segment: &a,
                deleted: &[],
            },
            MergeInput {
                segment: &b,
                deleted: &[],
            },
        ]);
        let c = segment(&[("b.md", "# 入院\n入院の手続。\n")]);
        // m.md (file 1 of the merged segment: a, m, z) is deleted.
        let twice = merge_all(&[
            MergeInput {
                segment: &once,
                deleted: &[1],
            },
            MergeInput {
                segment: &c,
                deleted: &[],
            },
        ]);
        assert_eq!(twice.n_files(), 3);
        let docs: Vec<u32> = Postings::new(twice.term("入院").expect("term").postings)
            .map(|(d, _)| d)
            .collect();
        assert_eq!(docs.len(), 3);
        assert!(docs.windows(2).all(|w| w[0] < w[1]), "{docs:?}");
        for f in 0..twice.n_files() {
            let head = twice.file_head(f).expect("head");
            let row = twice.doc(head.first_doc).expect("doc");
            assert_eq!(row.file, f, "{}", head.path);
        }
    }

    #[test]
    fn merging_drops_deleted_files_and_equals_a_fresh_build() {
        let a = segment(&[
            ("a.md", "# 入院\n入院給付金の説明。\n"),
            ("b.md", "# 通院\n通院給付金の説明。\n"),
        ]);
        let c = segment(&[("c.md", "# 手術\n手術給付金と入院。\n")]);
        // b.md (file 1 of the first segment) was deleted.
        let inputs = [
            MergeInput {
                segment: &a,
                deleted: &[1],
            },
            MergeInput {
                segment: &c,
                deleted: &[],
            },
        ];
        let mut out = Vec::new();
        merge(&inputs, Spill::Memory(Vec::new()), &mut out).expect("merge");
        let merged = Segment::open(Backing::Owned(out.into())).expect("open");
        let fresh = segment(&[
            ("a.md", "# 入院\n入院給付金の説明。\n"),
            ("c.md", "# 手術\n手術給付金と入院。\n"),
        ]);
        assert_eq!(merged.n_files(), 2);
        assert_eq!(merged.n_docs(), fresh.n_docs());
        assert_eq!(merged.n_terms(), fresh.n_terms());
        assert_eq!(merged.total_len(), fresh.total_len());
        for term in ["入院", "給付", "通院", "手術"] {
            assert_eq!(df(&merged, term), df(&fresh, term), "{term}");
        }
        for i in 0..merged.n_terms() {
            assert_eq!(merged.term_bytes(i), fresh.term_bytes(i));
            let m: Vec<_> = Postings::new(merged.term_at(i).postings).collect();
            let f: Vec<_> = Postings::new(fresh.term_at(i).postings).collect();
            assert_eq!(m, f);
        }
        assert_eq!(merged.find_file("c.md"), Some(1));
        assert_eq!(merged.find_file("b.md"), None);
    }
}
