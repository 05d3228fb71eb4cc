//! Benchmarks (divan): index build for 1,000 generated files, and
//! `manual_find` (cache off) on a ~1.5 MB generated Japanese manual; and at
//! scale, on a ~130 MB root generated from the repository's evaluation
//! manuals (`support/corpus_gen.rs`; `BATON_BENCH_MB` changes the size):
//! cold build of the on-disk index, open + first `manual_find` with the
//! index on disk, and `manual_find` over all manuals.
//!
//! Run: `cargo bench -p baton-manuals --bench manuals` (or filter, e.g.
//! `-- 130_mb`).

#[path = "support/corpus_gen.rs"]
mod corpus_gen;

use std::path::Path;
use std::sync::OnceLock;

use baton_manuals::{ManualConfig, ManualService};
use divan::Bencher;
use serde_json::json;

fn main() {
    divan::main();
}

/// Deterministic xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const NOUNS: &[&str] = &[
    "保険金",
    "給付金",
    "入院",
    "手術",
    "通院",
    "被保険者",
    "保険契約者",
    "受取人",
    "解約返戻金",
    "保険料",
    "告知義務",
    "責任開始日",
    "猶予期間",
    "失効",
    "復活",
    "免責事由",
    "疾病",
    "傷害",
    "診断書",
    "請求書",
    "支払限度",
    "先進医療",
    "がん",
    "上皮内新生物",
    "高度障害",
    "死亡保険金",
    "契約者貸付",
    "特約",
    "更新",
    "払込期月",
    "口座振替",
    "指定代理請求人",
    "時効",
    "訴訟",
    "準拠法",
    "年齢",
    "詐欺",
    "重大事由",
    "消滅",
];
const PARTS: &[&str] = &[
    "の",
    "は",
    "を",
    "に",
    "が",
    "と",
    "について",
    "による",
    "に関する",
];
const ENDINGS: &[&str] = &[
    "支払います。",
    "定めます。",
    "取り扱います。",
    "適用しません。",
    "請求できます。",
    "限度とします。",
];

fn sentence(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..(3 + rng.next() % 5) {
        s.push_str(rng.pick(NOUNS));
        s.push_str(rng.pick(PARTS));
    }
    s.push_str(rng.pick(ENDINGS));
    s
}

/// Writes `files` Markdown files of about `bytes_per_file` bytes under `root/<manual>/`.
fn generate(root: &Path, manual: &str, files: usize, bytes_per_file: usize, seed: u64) -> usize {
    let mut rng = Rng(seed);
    let mut total = 0;
    for f in 0..files {
        let mut text = format!("# 第{}章 {}{}\n\n", f + 1, rng.pick(NOUNS), rng.pick(NOUNS));
        let mut article = 1;
        while text.len() < bytes_per_file {
            text.push_str(&format!(
                "## 第{article}条 {}の{}\n\n",
                rng.pick(NOUNS),
                rng.pick(NOUNS)
            ));
            for _ in 0..(2 + rng.next() % 4) {
                text.push_str(&sentence(&mut rng));
                text.push('\n');
            }
            text.push('\n');
            article += 1;
        }
        let dir = root.join(manual).join(format!("part{}", f / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(format!("f{f:04}.md")), &text).expect("write");
        total += text.len();
    }
    total
}

struct Corpus {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

fn thousand_files() -> &'static Corpus {
    static C: OnceLock<Corpus> = OnceLock::new();
    C.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("manuals");
        generate(&root, "big", 1000, 1500, 7);
        Corpus { _dir: dir, root }
    })
}

fn japanese_1_5_mb() -> &'static ManualService {
    static S: OnceLock<(tempfile::TempDir, ManualService)> = OnceLock::new();
    &S.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("manuals");
        let bytes = generate(&root, "ja", 300, 5000, 42);
        eprintln!("generated Japanese manual: {bytes} bytes in 300 files");
        // As in production: change detection by watcher, no per-call stat sweep.
        let mut config = ManualConfig::new(&root);
        config.watch = true;
        config.stat_interval = std::time::Duration::from_secs(3600);
        let service = ManualService::open(config).expect("open");
        let stats = service.build_index(&mut |_| {}).expect("build");
        eprintln!("indexed {} sections, {} terms", stats.sections, stats.terms);
        (dir, service)
    })
    .1
}

/// The same amount of Japanese text split over 30 manuals of 10 files.
fn japanese_1_5_mb_in_30_manuals() -> &'static ManualService {
    static S: OnceLock<(tempfile::TempDir, ManualService)> = OnceLock::new();
    &S.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("manuals");
        let bytes: usize = (0..30)
            .map(|m| generate(&root, &format!("ja{m:02}"), 10, 5000, 42 + m))
            .sum();
        eprintln!("generated 30 Japanese manuals: {bytes} bytes in 300 files");
        let mut config = ManualConfig::new(&root);
        config.watch = true;
        config.stat_interval = std::time::Duration::from_secs(3600);
        let service = ManualService::open(config).expect("open");
        service.build_index(&mut |_| {}).expect("build");
        (dir, service)
    })
    .1
}

/// Full index build (parse + tokenise + postings) of 1,000 files, no disk cache.
#[divan::bench(sample_count = 10)]
fn index_build_1000_files(bencher: Bencher) {
    let corpus = thousand_files();
    bencher.bench(|| {
        let service = ManualService::open(ManualConfig::new(&corpus.root)).expect("open");
        service.build_index(&mut |_| {}).expect("build")
    });
}

/// Index load of 1,000 files from the disk cache (nothing re-tokenised).
#[divan::bench(sample_count = 10)]
fn index_load_1000_files_from_disk_cache(bencher: Bencher) {
    let corpus = thousand_files();
    let index_dir = corpus.root.with_file_name("index");
    let config = || {
        let mut c = ManualConfig::new(&corpus.root);
        c.index_dir = Some(index_dir.clone());
        c
    };
    ManualService::open(config())
        .expect("open")
        .build_index(&mut |_| {})
        .expect("warm");
    bencher.bench(|| {
        let service = ManualService::open(config()).expect("open");
        service.build_index(&mut |_| {}).expect("build")
    });
}

/// Re-index after editing one file of 1,000 (stat all, re-tokenise one).
#[divan::bench(sample_count = 20)]
fn refresh_after_one_edit_1000_files(bencher: Bencher) {
    let corpus = thousand_files();
    let service = ManualService::open(ManualConfig::new(&corpus.root)).expect("open");
    service.build_index(&mut |_| {}).expect("build");
    let file = corpus.root.join("big/part0/f0000.md");
    let original = std::fs::read_to_string(&file).expect("read");
    let mut n = 0u64;
    bencher.bench_local(|| {
        n += 1;
        std::fs::write(&file, format!("{original}\n追記{n}\n")).expect("write");
        service.build_index(&mut |_| {}).expect("refresh")
    });
}

const QUERIES: &[&str] = &[
    "入院給付金の支払限度",
    "告知義務違反で契約が解除されるのはどんなとき",
    "解約返戻金",
    "がんと診断されたらいくらもらえますか",
    "保険料の払込猶予期間が過ぎたら失効しますか",
    "指定代理請求人",
];

/// `manual_find` with `use_cache=false` on the ~1.5 MB Japanese manual.
#[divan::bench(args = QUERIES, sample_count = 200)]
fn find_japanese_1_5_mb(bencher: Bencher, query: &str) {
    let service = japanese_1_5_mb();
    bencher.bench(|| {
        service
            .find(
                baton_manuals::FindInput::from_json(
                    &json!({"query": query, "manual_id": "ja", "use_cache": false}),
                )
                .expect("request"),
            )
            .expect("find")
    });
}

/// `manual_find` over every manual (no `manual_id`) when the same amount of
/// text is spread over 30 manuals.
#[divan::bench(args = QUERIES, sample_count = 100)]
fn find_japanese_1_5_mb_in_30_manuals(bencher: Bencher, query: &str) {
    let service = japanese_1_5_mb_in_30_manuals();
    bencher.bench(|| {
        service
            .find(
                baton_manuals::FindInput::from_json(&json!({"query": query, "use_cache": false}))
                    .expect("request"),
            )
            .expect("find")
    });
}

/// `manual_find` with the result cache on (a hit after the first call).
#[divan::bench(sample_count = 200)]
fn find_japanese_1_5_mb_cached(bencher: Bencher) {
    let service = japanese_1_5_mb();
    bencher.bench(|| {
        service
            .find(
                baton_manuals::FindInput::from_json(
                    &json!({"query": QUERIES[0], "manual_id": "ja"}),
                )
                .expect("request"),
            )
            .expect("find")
    });
}

/// The large root: generated once, its index built once (cold).
struct Large {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    index_dir: std::path::PathBuf,
}

fn large_config(root: &Path, index_dir: &Path) -> ManualConfig {
    // As the server runs: a watcher, and a full stat sweep at most every 30 s.
    let mut c = ManualConfig::new(root);
    c.index_dir = Some(index_dir.to_path_buf());
    c.watch = true;
    c.stat_interval = std::time::Duration::from_secs(30);
    c
}

fn large() -> &'static Large {
    static L: OnceLock<Large> = OnceLock::new();
    L.get_or_init(|| {
        let mb: u64 = std::env::var("BATON_BENCH_MB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(130);
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("manuals");
        let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/manuals");
        let g = corpus_gen::generate(&eval, &root, mb * 1_000_000).expect("generate");
        eprintln!(
            "generated {} manuals, {} files, {:.1} MB",
            g.manuals,
            g.files,
            g.bytes as f64 / 1e6
        );
        let index_dir = dir.path().join("index");
        let stats = ManualService::open(large_config(&root, &index_dir))
            .expect("open")
            .build_index(&mut |_| {})
            .expect("build");
        eprintln!(
            "index: {} sections, {} segments, {:.1} MB on disk",
            stats.sections,
            stats.segments,
            stats.index_bytes as f64 / 1e6
        );
        Large {
            _dir: dir,
            root,
            index_dir,
        }
    })
}

/// Cold build of the large root's on-disk index (a fresh index folder).
#[divan::bench(sample_count = 2, sample_size = 1)]
fn cold_build_130_mb(bencher: Bencher) {
    let l = large();
    let mut n = 0;
    bencher
        .with_inputs(|| {
            n += 1;
            let dir = l.index_dir.with_file_name(format!("cold-{n}"));
            let _ = std::fs::remove_dir_all(&dir);
            dir
        })
        .bench_local_values(|dir| {
            let stats = ManualService::open(large_config(&l.root, &dir))
                .expect("open")
                .build_index(&mut |_| {})
                .expect("build");
            let _ = std::fs::remove_dir_all(&dir);
            stats
        });
}

/// A new service on the large root with its index on disk, and its first
/// `manual_find` (the stat sweep of every file included).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn open_and_first_find_130_mb(bencher: Bencher) {
    let l = large();
    bencher.bench_local(|| {
        let service = ManualService::open(large_config(&l.root, &l.index_dir)).expect("open");
        service
            .find(
                baton_manuals::FindInput::from_json(
                    &json!({"query": QUERIES[1], "use_cache": false}),
                )
                .expect("request"),
            )
            .expect("find")
    });
}

fn large_service() -> &'static ManualService {
    static S: OnceLock<ManualService> = OnceLock::new();
    S.get_or_init(|| {
        let l = large();
        let service = ManualService::open(large_config(&l.root, &l.index_dir)).expect("open");
        service.build_index(&mut |_| {}).expect("open index");
        service
    })
}

/// `manual_find` (cache off, every manual) on the large root.
#[divan::bench(args = QUERIES, sample_count = 50)]
fn find_130_mb(bencher: Bencher, query: &str) {
    let service = large_service();
    bencher.bench(|| {
        service
            .find(
                baton_manuals::FindInput::from_json(&json!({"query": query, "use_cache": false}))
                    .expect("request"),
            )
            .expect("find")
    });
}
