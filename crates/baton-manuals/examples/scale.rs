//! Scale check: generates a large manuals root from the eval manuals
//! (`benches/support/corpus_gen.rs`), builds the on-disk index cold, opens it again
//! in a new service, and times `manual_find` (cache off) with the gold
//! queries. Prints peak RSS (`VmHWM`) after each phase.
//!
//! Run: `cargo run -p baton-manuals --release --example scale -- [MB] [DIR]`
//! (default 130 MB in a temporary folder; an existing DIR is reused).

#[path = "../benches/support/corpus_gen.rs"]
mod corpus_gen;

use std::path::{Path, PathBuf};
use std::time::Instant;

use baton_manuals::{ManualConfig, ManualService};
use serde_json::json;

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// CPU time of this thread in ms (on a shared machine, wall-clock time
/// includes waiting for a core; this does not).
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
}

fn peak(label: &str) {
    println!(
        "{label:<40} RSS {:>7.1} MiB (anon {:.1}, file {:.1})  peak {:>7.1} MiB",
        status_kib("VmRSS:") as f64 / 1024.0,
        status_kib("RssAnon:") as f64 / 1024.0,
        status_kib("RssFile:") as f64 / 1024.0,
        status_kib("VmHWM:") as f64 / 1024.0
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mb: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(130);
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let temp;
    let base: PathBuf = match args.get(2) {
        Some(d) => PathBuf::from(d),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let root = base.join("manuals");
    let index_dir = base.join("index");
    if !root.exists() {
        let t = Instant::now();
        let g = corpus_gen::generate(&eval.join("manuals"), &root, mb * 1_000_000)?;
        println!(
            "generated {} manuals, {} files, {:.1} MB ({} editions) in {:.1} s",
            g.manuals,
            g.files,
            g.bytes as f64 / 1e6,
            g.editions,
            t.elapsed().as_secs_f64()
        );
    }
    let text_bytes = corpus_gen::dir_bytes(&root);
    // As the server runs: a watcher, and a full stat sweep at most every 30 s.
    let config = || {
        let mut c = ManualConfig::new(&root);
        c.index_dir = Some(index_dir.clone());
        c.watch = true;
        c.stat_interval = std::time::Duration::from_secs(30);
        c
    };
    peak("start");
    if !index_dir.exists() {
        let t = Instant::now();
        let stats = ManualService::open(config())?.build_index(&mut |_| {})?;
        println!(
            "cold build: {:.2} s, {} files, {} sections, {} segments",
            t.elapsed().as_secs_f64(),
            stats.files,
            stats.sections,
            stats.segments
        );
        peak("after cold build");
    }
    println!(
        "text {:.1} MB, index on disk {:.1} MB ({:.2}× the text)",
        text_bytes as f64 / 1e6,
        corpus_gen::dir_bytes(&index_dir) as f64 / 1e6,
        corpus_gen::dir_bytes(&index_dir) as f64 / text_bytes as f64
    );
    let qs = corpus_gen::queries(&eval);
    let t = Instant::now();
    let service = ManualService::open(config())?;
    let first = service.find(baton_manuals::FindInput::from_json(
        &json!({"query": qs[0], "use_cache": false}),
    )?)?;
    println!(
        "open + first manual_find (index on disk): {:.1} ms ({} candidates)",
        t.elapsed().as_secs_f64() * 1000.0,
        first.summary.candidates
    );
    peak("after first find");
    if std::env::var_os("SCALE_FIRST_ONLY").is_some() {
        return Ok(());
    }
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut slowest: Vec<(f64, &str)> = Vec::new();
    for q in qs.iter().cycle().take(qs.len() * 2) {
        let t = Instant::now();
        let c = thread_cpu_ms();
        service.find(baton_manuals::FindInput::from_json(
            &json!({"query": q, "use_cache": false}),
        )?)?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        cpu.push(thread_cpu_ms() - c);
        times.push(ms);
        slowest.push((cpu[cpu.len() - 1], q));
    }
    cpu.sort_by(|a, b| a.total_cmp(b));
    println!(
        "manual_find CPU time: p50 {:.2} ms  p95 {:.2} ms  max {:.2} ms",
        cpu[cpu.len() / 2],
        cpu[((cpu.len() - 1) as f64 * 0.95).round() as usize],
        cpu[cpu.len() - 1]
    );
    if std::env::var_os("SCALE_SLOWEST").is_some() {
        slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (ms, q) in slowest.iter().take(12) {
            println!("  {ms:>7.2} ms  {q}");
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    println!(
        "manual_find x{} (all manuals): p50 {:.2} ms  p95 {:.2} ms  max {:.2} ms",
        times.len(),
        pct(0.5),
        pct(0.95),
        times[times.len() - 1]
    );
    peak("after finds");
    let u = service.memory_usage();
    println!(
        "estimate: mapped {:.1} MiB, texts {:.1} MiB, traces {:.1} MiB, cache {:.1} MiB, bookkeeping {:.1} MiB",
        u.segments_mapped as f64 / 1048576.0,
        u.section_texts as f64 / 1048576.0,
        u.traces as f64 / 1048576.0,
        u.cache as f64 / 1048576.0,
        u.bookkeeping as f64 / 1048576.0
    );
    Ok(())
}
