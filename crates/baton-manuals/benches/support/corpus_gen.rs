//! Generates a large manuals root from the repository's own evaluation
//! manuals (no third-party text): each of `eval/manuals/*` becomes one
//! manual holding numbered editions (`ed-0001/…`) of its files, each
//! Markdown file marked with its edition so no two sections are identical,
//! until the root holds about `target_bytes`. Shared by the divan bench
//! (`benches/manuals.rs`), the `scale` example and the end-to-end bench of the `baton` crate
//! (included with `#[path]`).

#![allow(
    dead_code,
    reason = "shared by several test or bench targets; each uses part of it"
)]

use std::path::Path;

/// A manual's files: relative path and bytes.
type Files = Vec<(String, Vec<u8>)>;

/// What was generated.
#[derive(Debug, Clone, Copy, Default)]
pub struct Generated {
    /// Manuals written.
    pub manuals: usize,
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Editions of each manual.
    pub editions: usize,
}

/// Writes editions of every manual of `source` (the eval manuals) into
/// `dest` (a manuals root) until about `target_bytes` are written.
pub fn generate(source: &Path, dest: &Path, target_bytes: u64) -> std::io::Result<Generated> {
    let mut manuals: Vec<(String, Files)> = Vec::new();
    let mut one_edition: u64 = 0;
    let mut ids: Vec<_> = std::fs::read_dir(source)?.flatten().collect();
    ids.sort_by_key(|e| e.file_name());
    for manual in ids {
        if !manual.path().is_dir() {
            continue;
        }
        let mut files = Vec::new();
        collect(&manual.path(), "", &mut files)?;
        one_edition += files.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
        manuals.push((manual.file_name().to_string_lossy().into_owned(), files));
    }
    let editions = target_bytes.div_ceil(one_edition.max(1)).max(1) as usize;
    let mut out = Generated {
        manuals: manuals.len(),
        editions,
        ..Generated::default()
    };
    for (id, files) in &manuals {
        for k in 1..=editions {
            for (rel, bytes) in files {
                let path = dest.join(id).join(format!("ed-{k:04}")).join(rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let mut data = bytes.clone();
                if rel.ends_with(".md") {
                    data.extend_from_slice(format!("\n（第{k}版）\n").as_bytes());
                }
                out.bytes += data.len() as u64;
                out.files += 1;
                std::fs::write(path, data)?;
            }
        }
    }
    Ok(out)
}

fn collect(dir: &Path, prefix: &str, out: &mut Files) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if e.path().is_dir() {
            collect(&e.path(), &rel, out)?;
        } else {
            out.push((rel, std::fs::read(e.path())?));
        }
    }
    Ok(())
}

/// Bytes of every file under `dir` (the index's size on disk).
#[allow(
    dead_code,
    reason = "not every bench that includes this module measures it"
)]
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                total += dir_bytes(&p);
            } else if let Ok(m) = e.metadata() {
                total += m.len();
            }
        }
    }
    total
}

/// The queries of the evaluation sets under `eval/gold` that the scale
/// measurements run (Japanese and English).
#[allow(
    dead_code,
    reason = "not every bench that includes this module searches"
)]
pub fn queries(eval: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for name in [
        "insurance-ja.jsonl",
        "kasai-ja.blind2.jsonl",
        "lumen-en.jsonl",
    ] {
        let text = std::fs::read_to_string(eval.join("gold").join(name)).unwrap_or_default();
        out.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|v| v["query"].as_str().map(str::to_string)),
        );
    }
    out
}
