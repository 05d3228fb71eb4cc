//! The run history at 10,000 past runs (synthetic, generated here): adding
//! a run, loading the index, Layer 4 for one prompt, patterns after a
//! change, estimate and dashboard — with the empty repository as baseline.
//!
//! Run: `cargo bench -p baton-history --bench history`

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use baton_engine::completion::verdict::Severity;
use baton_history::file::HistoryFile;
use baton_history::record::{FindingRecord, FrictionRecord, Outcome, PhaseRecord, RunRecord};
use baton_history::terms::{MAX_DOC_TERMS, weighted_terms};
use baton_history::{HistoryIndex, PatternFilter, PriceTable};
use baton_state::Effort;
use baton_testkit::history::{Rng, TOPIC_WORDS};

fn main() {
    divan::main();
}

/// Past runs in the large repository.
const RUNS: usize = 10_000;

/// Topic words: 400 generated stems plus common English and Japanese
/// terms, so documents share some vocabulary but not all of it.
fn vocabulary() -> &'static [String] {
    static WORDS: OnceLock<Vec<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut words: Vec<String> = TOPIC_WORDS
            .iter()
            .chain(&[
                "fix",
                "add",
                "refactor",
                "validate",
                "ログイン画面",
                "セッション",
                "タイムアウト",
                "検索機能",
                "請求書",
                "支払い処理",
                "通知設定",
                "エクスポート",
                "権限管理",
                "監査ログ",
            ])
            .map(|s| s.to_string())
            .collect();
        let syllables = [
            "ka", "lo", "mi", "ren", "tor", "vex", "qua", "zil", "pra", "dun",
        ];
        for i in 0..400 {
            words.push(format!(
                "{}{}{}",
                syllables[i % 10],
                syllables[(i / 10) % 10],
                syllables[(i / 100) % 10]
            ));
        }
        words
    })
}

fn words(rng: &mut Rng, n: usize) -> String {
    let vocab = vocabulary();
    (0..n)
        .map(|_| vocab[rng.below(vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn finding(rng: &mut Rng) -> String {
    let templates = [
        "Missing error handling for the {} {}",
        "No test covers the {} {} path",
        "The {} {} is not documented",
        "Inconsistent naming in the {} {} module",
        "{} {} leaks a connection on failure",
        "Unchecked input in {} {}",
    ];
    let vocab = vocabulary();
    let t = templates[rng.below(templates.len())];
    let a = &vocab[rng.below(40)];
    let b = &vocab[rng.below(40)];
    t.replacen("{}", a, 1).replacen("{}", b, 1)
}

const PHASES: [&str; 13] = [
    "phase-1",
    "phase-2",
    "phase-3",
    "phase-3b",
    "checkpoint-a",
    "phase-4",
    "phase-5",
    "phase-6",
    "phase-7",
    "final-verification",
    "pr-creation",
    "final-summary",
    "final-commit",
];

fn synthetic_run(i: usize) -> RunRecord {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((i as u64 + 1) * 0x2545_F491_4F6C_DD1D));
    let n = 12 + rng.below(30);
    let request = words(&mut rng, n);
    let n = 150 + rng.below(250);
    let design = words(&mut rng, n);
    let (terms, len) = weighted_terms(&request, &design, MAX_DOC_TERMS);
    let created: baton_state::Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
    let created = created + chrono::Duration::hours(i as i64 * 2);
    let phases: Vec<PhaseRecord> = PHASES
        .iter()
        .map(|p| PhaseRecord {
            phase: p.to_string(),
            visits: 1 + u32::from(rng.below(5) == 0),
            back: u32::from(rng.below(6) == 0),
            review: p.ends_with('b') || *p == "phase-6",
            fails: 0,
            ms: 30_000 + rng.below(600_000) as u64,
            tokens: 2_000 + rng.below(40_000) as u64,
            model: if *p == "phase-3" { "opus" } else { "sonnet" }.into(),
        })
        .collect();
    let findings = (0..rng.below(7))
        .map(|_| FindingRecord {
            phase: "phase-6".into(),
            agent: if rng.below(2) == 0 {
                "impl-reviewer"
            } else {
                "design-reviewer"
            }
            .into(),
            severity: if rng.below(3) == 0 {
                Severity::Critical
            } else {
                Severity::Minor
            },
            text: finding(&mut rng),
        })
        .collect();
    let friction = (0..rng.below(3))
        .map(|_| FrictionRecord {
            category: "AI Agent Support".into(),
            problem: format!(
                "The {} command was hard to find",
                vocabulary()[rng.below(40)]
            ),
            improvement: "document it in CLAUDE.md".into(),
        })
        .collect();
    RunRecord {
        workspace: format!("2024{:04}-run-{i}", i % 10_000),
        workflow: "forge".into(),
        outcome: if rng.below(10) == 0 {
            Outcome::Abandoned
        } else {
            Outcome::Completed
        },
        created,
        ended: created + chrono::Duration::minutes(30 + rng.below(300) as i64),
        effort: Some([Effort::S, Effort::M, Effort::L][rng.below(3)]),
        flow: None,
        source: "text".into(),
        request: baton_history::text::truncate(&request, 200),
        loops: phases.iter().map(|p| p.back).sum(),
        tokens: phases.iter().map(|p| p.tokens).sum(),
        work_ms: phases.iter().map(|p| p.ms).sum(),
        phases,
        skipped: vec![],
        verdicts: Default::default(),
        findings,
        friction,
        reason: None,
        branch: None,
        terms,
        len,
    }
}

fn records() -> &'static [RunRecord] {
    static RECORDS: OnceLock<Vec<RunRecord>> = OnceLock::new();
    RECORDS.get_or_init(|| (0..RUNS).map(synthetic_run).collect())
}

/// A specs root with `RUNS` recorded runs and as many workspace folders.
fn large() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        for r in records() {
            std::fs::create_dir(dir.join(&r.workspace)).unwrap();
        }
        write_history(&dir);
        let size = std::fs::metadata(HistoryIndex::open(&dir).path())
            .unwrap()
            .len();
        eprintln!("history file: {RUNS} runs, {:.1} MB", size as f64 / 1e6);
        let before = rss_kib();
        let index = warm(&dir);
        eprintln!(
            "memory of the warm index: {:.1} MiB more resident",
            (rss_kib().saturating_sub(before)) as f64 / 1024.0
        );
        drop(index);
        dir
    })
}

/// Resident memory of this process (Linux), KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn write_history(dir: &Path) {
    let file = HistoryFile {
        root: dir.to_path_buf(),
        durable: false,
    };
    let lock = file.exclusive().unwrap();
    file.rewrite(&lock, records()).unwrap();
}

fn empty() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| tempfile::tempdir().unwrap().keep())
}

fn warm(root: &Path) -> HistoryIndex {
    let index = HistoryIndex::open(root);
    let _ = index.len();
    let _ = index.patterns(&PatternFilter::default());
    index
}

const REQUEST: &str = "Fix the login session timeout: users are logged out after five minutes and the token refresh fails";

/// Appending one record to the 10,000-run file (lock, one write).
#[divan::bench]
fn append_one_run(bencher: divan::Bencher) {
    let root = tempfile::tempdir().unwrap();
    write_history(root.path());
    let index = HistoryIndex::open(root.path());
    let record = synthetic_run(RUNS + 1);
    bencher.bench_local(|| index.append(&record).unwrap());
}

/// The same with fsync (`with_durability(true)`).
#[divan::bench]
fn append_one_run_fsync(bencher: divan::Bencher) {
    let root = tempfile::tempdir().unwrap();
    write_history(root.path());
    let index = HistoryIndex::open(root.path()).with_durability(true);
    let record = synthetic_run(RUNS + 1);
    bencher.bench_local(|| index.append(&record).unwrap());
}

/// Building the record of a finished workspace folder (state.json and
/// artifacts) and appending it: what the use-case layer does when a run ends.
#[divan::bench]
fn record_finished_workspace(bencher: divan::Bencher) {
    let root = tempfile::tempdir().unwrap();
    write_history(root.path());
    let ws = root.path().join("20260301-login");
    std::fs::create_dir(&ws).unwrap();
    let mut state = baton_state::WorkspaceState::fresh(
        "forge",
        "phase-1",
        "login",
        ".specs/20260301-login",
        "bench",
        "2026-03-01T00:00:00Z".parse().unwrap(),
    );
    state.current_phase = "completed".into();
    state.current_phase_status = baton_state::PhaseStatus::Completed;
    std::fs::write(ws.join("state.json"), state.to_json()).unwrap();
    let mut rng = Rng(7);
    let request = format!("---\nsource_type: text\n---\n\n{}\n", words(&mut rng, 40));
    std::fs::write(ws.join("request.md"), request).unwrap();
    std::fs::write(ws.join("design.md"), words(&mut rng, 1500)).unwrap();
    std::fs::write(
        ws.join("review-design.md"),
        "## Verdict: APPROVE_WITH_NOTES\n**1. [MINOR] Name the error type**\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("summary.md"),
        "## Improvement Report\n### AI Agent Support\n- The test command was hard to find — document it\n",
    )
    .unwrap();
    let index = HistoryIndex::open(root.path());
    bencher.bench_local(|| index.record_run(&ws, &state).unwrap());
}

/// First use after `open` with 10,000 runs: read the file, keep each
/// record's search part, build BM25, list the specs root once (catch-up).
/// Paid once per process.
#[divan::bench(sample_count = 10)]
fn first_use_10k(bencher: divan::Bencher) {
    let root = large();
    bencher.bench_local(|| {
        let index = HistoryIndex::open(root);
        index.len()
    });
}

/// First use and the first Layer 4 (adds the pattern merge).
#[divan::bench(sample_count = 10)]
fn first_layer4_10k(bencher: divan::Bencher) {
    let root = large();
    bencher.bench_local(|| {
        let index = HistoryIndex::open(root);
        index.layer4("implementer", REQUEST, None, 1200)
    });
}

/// First use on an empty repository (the baseline).
#[divan::bench]
fn first_use_empty(bencher: divan::Bencher) {
    let root = empty();
    bencher.bench_local(|| HistoryIndex::open(root).len());
}

/// After a run ends: read the appended line, then merge the newest 250
/// runs' findings and friction again.
#[divan::bench(sample_count = 20)]
fn patterns_after_a_run_ends_10k(bencher: divan::Bencher) {
    let index = warm(large());
    let mut i = RUNS + 10;
    bencher
        .with_inputs(|| {
            i += 1;
            let mut r = synthetic_run(i);
            r.ended += chrono::Duration::days(3650);
            r
        })
        .bench_local_values(|record| {
            index.append(&record).unwrap();
            index.patterns(&PatternFilter::default())
        });
}

/// Layer 4 for one prompt, index warm (the per-call cost in a server).
#[divan::bench(args = ["implementer", "architect", "impl-reviewer"])]
fn layer4_10k(bencher: divan::Bencher, agent: &str) {
    let index = warm(large());
    bencher.bench_local(|| index.layer4(agent, REQUEST, None, 1200));
}

/// Layer 4 with a 1,500-word design, a new design text every call (no cache).
#[divan::bench]
fn layer4_with_new_design_10k(bencher: divan::Bencher) {
    let index = warm(large());
    let mut rng = Rng(3);
    bencher
        .with_inputs(|| words(&mut rng, 1500))
        .bench_local_refs(|design| index.layer4("implementer", REQUEST, Some(design), 1200));
}

/// Layer 4 on an empty repository (the baseline).
#[divan::bench(args = ["implementer", "impl-reviewer"])]
fn layer4_empty(bencher: divan::Bencher, agent: &str) {
    let index = warm(empty());
    bencher.bench_local(|| index.layer4(agent, REQUEST, None, 1200));
}

/// The estimate shown in the confirmation reply.
#[divan::bench]
fn estimate_10k(bencher: divan::Bencher) {
    let index = warm(large());
    let prices = PriceTable::default();
    bencher.bench_local(|| index.estimate(REQUEST, Some(Effort::M), &prices));
}

/// The repository dashboard (reads every record).
#[divan::bench(sample_count = 10)]
fn dashboard_10k(bencher: divan::Bencher) {
    let index = warm(large());
    let prices = PriceTable::default();
    bencher.bench_local(|| index.dashboard(None, &prices));
}
