//! End-to-end manual search at scale, through MCP: the real `baton serve`
//! over stdio on a ~130 MB manuals root generated from the repository's
//! evaluation manuals (`crates/baton-manuals/benches/support/corpus_gen.rs`;
//! `BATON_BENCH_MB` changes the size), then on the ~1.5 MB set of the
//! `e2e` bench (43 editions of the insurance manual in one manual).
//!
//! Measures: spawn → first `manual_find` answered with a cold index and
//! with the index on disk, `manual_find` round trips and server-side time
//! (transcript `duration_ms`), the server's CPU time per call (all threads,
//! from `/proc/<pid>/task/*/schedstat`: on a shared machine wall-clock time
//! includes waiting for a core), peak RSS (`VmHWM`) of the server, and the
//! index's size on disk against the text's.
//!
//! Run: `cargo bench -p baton --bench e2e_manuals` (release build; takes a
//! minute or two and ~0.3 GB of disk in a temporary folder).

#[path = "../../baton-manuals/benches/support/corpus_gen.rs"]
mod corpus_gen;
#[path = "support/stdio_server.rs"]
mod stdio_server;

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use stdio_server::{Server, percentile, server_durations};

fn report(name: &str, mut samples: Vec<f64>) {
    samples.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{name:<48} n={:<4} p50={:>8.2} ms  p95={:>8.2} ms  max={:>8.2} ms",
        samples.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.95),
        samples.last().copied().unwrap_or(f64::NAN)
    );
}

fn find(s: &mut Server, q: &str) -> Value {
    let r = s.call("manual_find", json!({"query": q, "use_cache": false}));
    assert!(r["result"]["isError"] == false, "{r}");
    r
}

fn main() {
    let mb: u64 = std::env::var("BATON_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(130);
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-manuals/eval");
    let qs = corpus_gen::queries(&eval);
    let repo = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(repo.path().join(".git")).expect("git");
    let t = Instant::now();
    let g = corpus_gen::generate(
        &eval.join("manuals"),
        &repo.path().join("manuals"),
        mb * 1_000_000,
    )
    .expect("generate");
    println!(
        "generated {} manuals, {} files, {:.1} MB ({} editions each) in {:.1} s",
        g.manuals,
        g.files,
        g.bytes as f64 / 1e6,
        g.editions,
        t.elapsed().as_secs_f64()
    );

    // 1. Cold: no index on disk.
    let t = Instant::now();
    let mut s = Server::spawn(repo.path(), &[]);
    s.initialize();
    find(&mut s, &qs[0]);
    let cold = t.elapsed().as_secs_f64();
    let cold_peak = s.status_kib("VmHWM:");
    s.stop();
    let index_bytes = corpus_gen::dir_bytes(&repo.path().join(".baton/manual-index"));

    // 2. Warm: the index on disk.
    let t = Instant::now();
    let mut s = Server::spawn(repo.path(), &[]);
    s.initialize();
    find(&mut s, &qs[1]);
    let warm = t.elapsed().as_secs_f64();
    let mut rtt = Vec::new();
    let mut cpu = Vec::new();
    for i in 0..500 {
        let c = s.cpu_ms();
        let t = Instant::now();
        find(&mut s, &qs[i % qs.len()]);
        rtt.push(t.elapsed().as_secs_f64() * 1000.0);
        cpu.push(s.cpu_ms() - c);
    }
    let warm_peak = s.status_kib("VmHWM:");
    let warm_rss = s.status_kib("VmRSS:");
    s.stop();
    let mut server = server_durations(repo.path(), "manual_find");
    // The cold and the warm process's first calls build/open the index.
    let firsts: Vec<f64> = vec![server.remove(0), server.remove(0)];

    println!(
        "text {:.1} MB; index on disk {:.1} MB ({:.2}× the text)",
        g.bytes as f64 / 1e6,
        index_bytes as f64 / 1e6,
        index_bytes as f64 / g.bytes as f64
    );
    println!(
        "spawn -> first manual_find, cold index (builds it): {cold:.2} s (server-side {:.0} ms); peak RSS {:.1} MiB",
        firsts[0],
        cold_peak as f64 / 1024.0
    );
    println!(
        "spawn -> first manual_find, index on disk: {:.0} ms (server-side {:.0} ms)",
        warm * 1000.0,
        firsts[1]
    );
    println!(
        "peak RSS of the serving process (500 finds): {:.1} MiB (RSS at the end {:.1} MiB)",
        warm_peak as f64 / 1024.0,
        warm_rss as f64 / 1024.0
    );
    report("round trip: manual_find (130 MB, all manuals)", rtt);
    report("server-side: manual_find (130 MB, all manuals)", server);
    report("server CPU time per manual_find (130 MB)", cpu);
    drop(repo);
    small_set(&eval, &qs);
}

/// The `e2e` bench's 1.5 MB set: 43 editions of the insurance manual in one manual.
fn small_set(eval: &Path, qs: &[String]) {
    let repo = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(repo.path().join(".git")).expect("git");
    let source = eval.join("manuals/insurance-ja");
    let mut bytes = 0usize;
    for k in 0..43 {
        let dir = repo.path().join(format!("manuals/terms/ed-{k:02}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for entry in std::fs::read_dir(&source).expect("dir").flatten() {
            let text = std::fs::read_to_string(entry.path()).expect("read");
            let text = if entry.path().extension().is_some_and(|e| e == "md") {
                format!("{text}\n（第{k}版の約款）\n")
            } else {
                text
            };
            bytes += text.len();
            std::fs::write(dir.join(entry.file_name()), text).expect("write");
        }
    }
    let mut s = Server::spawn(repo.path(), &[]);
    s.initialize();
    find(&mut s, &qs[0]);
    let mut rtt = Vec::new();
    let mut cpu = Vec::new();
    for i in 0..500 {
        let c = s.cpu_ms();
        let t = Instant::now();
        find(&mut s, &qs[i % qs.len()]);
        rtt.push(t.elapsed().as_secs_f64() * 1000.0);
        cpu.push(s.cpu_ms() - c);
    }
    let peak = s.status_kib("VmHWM:");
    s.stop();
    let mut server = server_durations(repo.path(), "manual_find");
    server.remove(0);
    println!(
        "1.5 MB set: {:.2} MB Japanese, peak RSS {:.1} MiB",
        bytes as f64 / 1e6,
        peak as f64 / 1024.0
    );
    report("round trip: manual_find (1.5 MB set)", rtt);
    report("server-side: manual_find (1.5 MB set)", server);
    report("server CPU time per manual_find (1.5 MB set)", cpu);
}
