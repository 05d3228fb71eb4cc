//! Memory on hostile manual files: writes ~16 MB of files built to cost an
//! indexer memory (random CJK text with millions of distinct bigrams, a
//! file of headings only, random words, deeply nested JSON, one enormous
//! heading), then builds the index, asks `manual_toc` and `manual_find`,
//! and prints the peak RSS after each step and the size of the replies.
//!
//! Run: `cargo run -p baton-manuals --release --example hostile [-- --memory]`
//! (`--memory` keeps the index in memory instead of on disk).

use std::path::Path;
use std::time::Instant;

use baton_manuals::{ManualConfig, ManualService};
use serde_json::json;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn peak(label: &str) {
    println!(
        "{label:<36} RSS {:>7.1} MiB  peak {:>7.1} MiB",
        status_kib("VmRSS:") as f64 / 1024.0,
        status_kib("VmHWM:") as f64 / 1024.0
    );
}

fn write_hostile(dir: &Path) -> std::io::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut total = 0u64;
    // Random kanji and kana: every bigram distinct, one section.
    let mut text = String::from("# ランダム\n");
    while text.len() < 4_000_000 {
        let c = char::from_u32(0x4e00 + (rng.next() % 20_000) as u32).unwrap_or('字');
        text.push(c);
        if rng.next().is_multiple_of(97) {
            text.push('\n');
        }
    }
    total += text.len() as u64;
    std::fs::write(dir.join("random_cjk.md"), &text)?;
    // Headings only.
    let mut text = String::new();
    let mut i = 0u64;
    while text.len() < 4_000_000 {
        text.push_str(&format!("{} 見出し{i}\n", "#".repeat(1 + (i % 6) as usize)));
        i += 1;
    }
    total += text.len() as u64;
    std::fs::write(dir.join("headings.md"), &text)?;
    // Random words.
    let mut text = String::from("# words\n");
    while text.len() < 4_000_000 {
        let len = 3 + rng.next() % 9;
        for _ in 0..len {
            text.push(char::from(b'a' + (rng.next() % 26) as u8));
        }
        text.push(' ');
    }
    total += text.len() as u64;
    std::fs::write(dir.join("words.md"), &text)?;
    // Deeply nested JSON.
    let depth = 1_000_000;
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    total += text.len() as u64;
    std::fs::write(dir.join("nested.json"), &text)?;
    // One enormous heading.
    let text = format!("# {}\nbody\n", "長い見出し".repeat(100_000));
    total += text.len() as u64;
    std::fs::write(dir.join("long_heading.md"), &text)?;
    Ok(total)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let in_memory = std::env::args().any(|a| a == "--memory");
    let temp = tempfile::tempdir()?;
    let root = temp.path().join("manuals");
    let bytes = write_hostile(&root.join("hostile"))?;
    std::fs::create_dir_all(root.join("normal"))?;
    std::fs::write(root.join("normal/a.md"), "# 入院\n入院給付金の説明。\n")?;
    println!("hostile files: {:.1} MB", bytes as f64 / 1e6);
    peak("start");
    let mut config = ManualConfig::new(&root);
    if !in_memory {
        config.index_dir = Some(temp.path().join("index"));
    }
    let service = ManualService::open(config)?;
    let t = Instant::now();
    let stats = service.build_index(&mut |_| {})?;
    println!(
        "build: {:.2} s, {} files, {} sections, index {:.1} MB",
        t.elapsed().as_secs_f64(),
        stats.files,
        stats.sections,
        stats.index_bytes as f64 / 1e6
    );
    for w in service.take_index_warnings() {
        println!("  warning: {w}");
    }
    peak("after build");
    let mut offset = Some(0usize);
    let mut pages = 0;
    let mut largest = 0usize;
    while let Some(o) = offset {
        let toc = service.toc(baton_manuals::TocInput::from_json(
            &json!({"manual_id": "hostile", "offset": o}),
        )?)?;
        largest = largest.max(serde_json::to_string(&toc)?.len());
        offset = toc.next_offset;
        pages += 1;
    }
    println!(
        "manual_toc: {pages} pages, largest reply {:.1} KB",
        largest as f64 / 1e3
    );
    peak("after toc");
    for q in [
        "見出し123",
        "ランダム 字",
        "words abc",
        "長い見出し",
        "入院給付金",
    ] {
        let t = Instant::now();
        let found = service.find(baton_manuals::FindInput::from_json(
            &json!({"query": q, "use_cache": false}),
        )?)?;
        println!(
            "manual_find {q:?}: {} candidates in {:.1} ms",
            found.summary.candidates,
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
    peak("after finds");
    Ok(())
}
