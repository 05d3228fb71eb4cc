//! Heap the run history holds, by number of past runs: the peak of live
//! heap bytes (a counting allocator: the same figure on a busy or a quiet
//! machine) while a process
//!
//! 1. meets N ended runs it has no record of and records them (the one-time
//!    catch-up of a repository whose runs no baton has recorded),
//! 2. loads the N recorded runs (a new process, history file on disk), and
//! 3. answers a Layer-4 query and an estimate,
//!
//! and what stays live after each step. Run: `cargo bench -p baton-history
//! --bench memory` (`BATON_BENCH_RUNS=0,1000,10000` by default).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use baton_history::{HistoryIndex, PriceTable};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f`; returns its value, the peak of live heap above the level at
/// its start, what stays live after it, and its time.
fn measure<T>(f: impl FnOnce() -> T) -> (T, f64, f64, f64) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let t = Instant::now();
    let v = f();
    let secs = t.elapsed().as_secs_f64();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    let kept = LIVE.load(Ordering::Relaxed).saturating_sub(base);
    (v, peak as f64 / 1e6, kept as f64 / 1e6, secs)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("BATON_BENCH_RUNS")
        .unwrap_or_else(|_| "0,1000,10000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    println!(
        "{:>7}  {:>26}  {:>26}  {:>26}",
        "runs", "catch-up: peak / kept / s", "load: peak / kept / s", "query: peak / kept"
    );
    for n in sizes {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let specs = dir.path().join(".specs");
        std::fs::create_dir_all(&specs).unwrap();
        if n > 0 {
            baton_testkit::history::write_past_runs(&specs, n);
        }
        // 1. A process meets N unrecorded runs.
        let (_, c_peak, c_kept, c_secs) = measure(|| {
            let h = HistoryIndex::open(&specs);
            h.warm();
            h
        });
        // 2. A new process loads them from the history file.
        let (h, l_peak, l_kept, l_secs) = measure(|| {
            let h = HistoryIndex::open(&specs);
            h.warm();
            h
        });
        // 3. What a run asks of it.
        let (_, q_peak, q_kept, _) = measure(|| {
            let blocks = h.layer4(
                "implementer",
                "rewrite the session store token cache",
                None,
                1200,
            );
            let est = h.estimate(
                "rewrite the session store token cache",
                None,
                &PriceTable::default(),
            );
            (blocks, est)
        });
        println!(
            "{n:>7}  {:>26}  {:>26}  {:>26}",
            format!("{c_peak:.1} MB / {c_kept:.1} MB / {c_secs:.2}"),
            format!("{l_peak:.1} MB / {l_kept:.1} MB / {l_secs:.2}"),
            format!("{q_peak:.2} MB / {q_kept:.2} MB"),
        );
        // What the index covers: terms per run and distinct terms.
        if n > 0 {
            let text = std::fs::read_to_string(h.path()).unwrap_or_default();
            let mut postings = 0usize;
            let mut vocabulary = std::collections::HashSet::new();
            for line in text.lines().skip(1) {
                let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
                for pair in v["terms"].as_str().unwrap_or("").split(' ') {
                    postings += 1;
                    vocabulary.insert(pair.rsplit_once(':').map_or(pair, |p| p.0).to_string());
                }
            }
            println!(
                "         history file {:.1} MB; {:.0} terms per run, {} distinct",
                text.len() as f64 / 1e6,
                postings as f64 / n as f64,
                vocabulary.len()
            );
        }
        drop(h);
    }
}
