//! Memory profile of the manual index on the end-to-end benchmark's manual
//! set: 43 editions (`ed-00` … `ed-42`) of the evaluation's insurance terms
//! in one manual (each Markdown file marked with its edition), ~1.5 MB of
//! Japanese in 1,032 files. Builds the index (with a disk cache, as the
//! server does), runs 50 `manual_find` calls with `use_cache=false`, then
//! prints the peak RSS and the index's own estimate of its size.
//!
//! Run: `cargo run -p baton-manuals --release --example memory`
//! (`-- --load` also reopens the service from the disk cache;
//! `-- --finds N` runs N queries instead of 50).

use std::path::Path;
use std::time::Instant;

use baton_manuals::{ManualConfig, ManualService, MemoryUsage};
use serde_json::{Value, json};

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn rss(label: &str) {
    println!(
        "{label:<32} RSS {:>7.1} MiB   peak (VmHWM) {:>7.1} MiB",
        status_kib("VmRSS:") as f64 / 1024.0,
        status_kib("VmHWM:") as f64 / 1024.0
    );
}

fn print_usage(u: &MemoryUsage) {
    println!("index estimate by structure:");
    println!("  segments mapped {}", mib(u.segments_mapped));
    println!("  segments in RAM {}", mib(u.segments_in_memory));
    println!("  bookkeeping     {}", mib(u.bookkeeping));
    println!("  section texts   {}", mib(u.section_texts));
    println!("  = index heap    {}", mib(u.index_total()));
    println!("  traces          {}", mib(u.traces));
    println!("  result cache    {}", mib(u.cache));
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let load = args.iter().any(|a| a == "--load");
    let finds: usize = args
        .iter()
        .position(|a| a == "--finds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    rss("start");
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let source = eval.join("manuals/insurance-ja");
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("manuals");
    let (mut bytes, mut files) = (0usize, 0usize);
    for k in 0..43 {
        let ed = root.join(format!("terms/ed-{k:02}"));
        std::fs::create_dir_all(&ed)?;
        for entry in std::fs::read_dir(&source)?.flatten() {
            let text = std::fs::read_to_string(entry.path())?;
            let text = if entry.path().extension().is_some_and(|e| e == "md") {
                format!("{text}\n（第{k}版の約款）\n")
            } else {
                text
            };
            bytes += text.len();
            files += 1;
            std::fs::write(ed.join(entry.file_name()), text)?;
        }
    }
    println!(
        "manual set: {:.2} MB Japanese in {files} files",
        bytes as f64 / 1e6
    );
    let gold = std::fs::read_to_string(eval.join("gold/insurance-ja.jsonl"))?;
    let queries: Vec<String> = gold
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(str::to_string))
        .collect();
    // As the server: disk cache on, watcher on.
    let config = || {
        let mut c = ManualConfig::new(&root);
        c.index_dir = Some(dir.path().join(".baton/manual-index"));
        c.watch = true;
        c.stat_interval = std::time::Duration::from_secs(30);
        c
    };
    let started = Instant::now();
    let mut service = ManualService::open(config())?;
    let stats = service.build_index(&mut |_| {})?;
    println!(
        "index build: {:.1} ms ({} sections, {} terms)",
        started.elapsed().as_secs_f64() * 1000.0,
        stats.sections,
        stats.terms
    );
    rss("after build");
    if load {
        drop(service);
        let started = Instant::now();
        service = ManualService::open(config())?;
        let stats = service.build_index(&mut |_| {})?;
        println!(
            "index load from disk cache: {:.1} ms (reused {} files)",
            started.elapsed().as_secs_f64() * 1000.0,
            stats.reused_files
        );
        rss("after load");
    }
    let mut times = Vec::new();
    for i in 0..finds {
        let q = &queries[i % queries.len()];
        let t = Instant::now();
        service.find(baton_manuals::FindInput::from_json(
            &json!({"query": q, "use_cache": false}),
        )?)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{finds} x manual_find: median {:.2} ms, p95 {:.2} ms",
        times[times.len() / 2],
        times[times.len() * 95 / 100]
    );
    rss("after the finds");
    print_usage(&service.memory_usage());
    Ok(())
}
