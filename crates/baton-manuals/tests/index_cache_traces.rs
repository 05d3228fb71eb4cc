//! Incremental index updates, the disk cache, the result cache and trace bounds.

mod common;

use common::JsonTools;

use std::sync::Arc;

use baton_manuals::{
    LateRerankCandidate, LateReranker, ManualConfig, ManualErrorCode as Code, ManualService, Signal,
};
use common::{Fixture, code, json};
use serde_json::json;

fn top_path(s: &ManualService, query: &str, manual: &str) -> Option<String> {
    let out = s
        .find_json(
            json!({"query": query, "manual_id": manual, "use_cache": false, "expand_scope": false}),
        )
        .ok()?;
    let hits = s.hits_json(json!({"trace_id": out.trace_id})).ok()?;
    hits.items
        .first()
        .and_then(|i| i["ref"]["path"].as_str().map(str::to_string))
}

#[test]
fn incremental_index_update_after_a_file_edit() {
    let f = Fixture::new();
    let s = f.service();
    let stats = s.build_index(&mut |_| {}).expect("build");
    assert_eq!((stats.files, stats.parsed_files), (4, 4));
    assert_eq!(top_path(&s, "解約返戻金", "m1"), None);
    f.write("m1/sub/more.md", "# 追加\n解約返戻金の説明です。\n");
    assert_eq!(
        top_path(&s, "解約返戻金", "m1").as_deref(),
        Some("sub/more.md")
    );
    // Only the edited file was re-tokenised; a rebuild now parses nothing.
    f.write("m1/rules.md", "# 総則\n対象です。\n");
    let stats = s.build_index(&mut |_| {}).expect("build");
    assert_eq!((stats.parsed_files, stats.reused_files), (1, 3));
    std::fs::remove_file(f.root.join("m1/sub/more.md")).expect("rm");
    assert_eq!(top_path(&s, "解約返戻金", "m1"), None);
}

#[test]
fn build_index_reports_progress_for_every_file() {
    let f = Fixture::new();
    let mut seen = Vec::new();
    f.service()
        .build_index(&mut |p| seen.push((p.files_done, p.files_total, p.manual_id, p.path)))
        .expect("build");
    assert_eq!(seen.len(), 4);
    assert_eq!(seen.last().map(|s| (s.0, s.1)), Some((4, 4)));
    assert!(seen.iter().any(|s| s.2 == "m2" && s.3 == "appendix.md"));
}

#[test]
fn disk_cache_is_reused_by_a_new_service() {
    let f = Fixture::new();
    let index_dir = f.dir.path().join("index");
    let open = || {
        let mut c = f.config();
        c.index_dir = Some(index_dir.clone());
        ManualService::open(c).expect("open")
    };
    let first = open().build_index(&mut |_| {}).expect("build");
    assert_eq!(first.parsed_files, 4);
    let second_service = open();
    let second = second_service.build_index(&mut |_| {}).expect("build");
    assert_eq!(
        (second.parsed_files, second.reused_files, second.files),
        (0, 4, 4)
    );
    assert_eq!(
        top_path(&second_service, "対象外", "m1").as_deref(),
        Some("rules.md")
    );
    // Corrupt index files are ignored, not fatal: a manifest …
    let manual_dirs: Vec<_> = std::fs::read_dir(&index_dir)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(manual_dirs.len(), 2, "one folder per manual");
    for dir in &manual_dirs {
        std::fs::write(dir.join("manifest"), b"garbage").expect("write");
    }
    let third = open().build_index(&mut |_| {}).expect("build");
    assert_eq!(third.parsed_files, 4);
    // … or a segment.
    for dir in &manual_dirs {
        for entry in std::fs::read_dir(dir).expect("dir").flatten() {
            if entry.file_name().to_string_lossy().starts_with("seg-") {
                std::fs::write(entry.path(), b"garbage").expect("write");
            }
        }
    }
    let fourth = open();
    assert_eq!(
        fourth.build_index(&mut |_| {}).expect("build").parsed_files,
        4
    );
    assert_eq!(
        top_path(&fourth, "対象外", "m1").as_deref(),
        Some("rules.md")
    );
}

#[test]
fn result_cache_hits_and_any_manual_change_invalidates_it() {
    let f = Fixture::new();
    let s = f.service();
    let args = json!({"query": "対象外", "manual_id": "m1"});
    let a = s.find_json(args.clone()).expect("find");
    let b = s.find_json(args.clone()).expect("find");
    assert_eq!(s.cache_stats().hits, 1);
    assert_ne!(a.trace_id, b.trace_id, "a cache hit gets its own trace");
    assert_eq!(a.summary, b.summary);
    let hits_b = s.hits_json(json!({"trace_id": b.trace_id})).expect("hits");
    assert_eq!(hits_b.total, u64::from(a.summary.candidates));
    // An edit in another manual invalidates as well.
    f.write("m2/new.md", "# 新規\n新しい手順。\n");
    s.find_json(args.clone()).expect("find");
    let stats = s.cache_stats();
    assert_eq!((stats.hits, stats.misses), (1, 2));
    s.find_json(args).expect("find");
    assert_eq!(s.cache_stats().hits, 2);
}

#[test]
fn trace_count_is_bounded_by_trace_max_keep() {
    let f = Fixture::new();
    let s = f.service_with(|c| c.trace_max_keep = 2);
    let first = s
        .find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find")
        .trace_id;
    for q in ["総則", "参照"] {
        s.find_json(json!({"query": q, "manual_id": "m1"}))
            .expect("find");
    }
    assert_eq!(s.trace_count(), 2);
    assert_eq!(
        code(s.hits_json(json!({"trace_id": first}))),
        Code::NotFound
    );
}

#[test]
fn trace_age_is_bounded_by_trace_ttl() {
    let f = Fixture::new();
    let s = f.service_with(|c| c.trace_ttl = std::time::Duration::ZERO);
    let id = s
        .find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find")
        .trace_id;
    assert_eq!(code(s.hits_json(json!({"trace_id": id}))), Code::NotFound);
}

struct PreferAppendix;

impl LateReranker for PreferAppendix {
    fn rerank(&self, _query: &str, candidates: &[LateRerankCandidate<'_>]) -> Vec<f64> {
        candidates
            .iter()
            .map(|c| if c.path.contains("more") { 1.0 } else { 0.0 })
            .collect()
    }
}

#[test]
fn late_reranker_hook_is_applied_when_set() {
    let f = Fixture::new();
    // "対象" outside the page's lead sentence: plain ranking prefers
    // rules.md, whose lead says it; the hook must turn that round.
    f.write("m1/more.md", "# 説明\n説明の補足です。なお対象です。\n");
    let mut config = f.config();
    config.scoring.late_rerank_enabled = false;
    config.scoring.late_rerank_weight = 5.0;
    let plain = ManualService::open(config.clone()).expect("open");
    let hooked = ManualService::open(config)
        .expect("open")
        .with_late_reranker(Arc::new(PreferAppendix));
    let q = json!({"query": "対象", "manual_id": "m1", "use_cache": false});
    let top = |s: &ManualService| {
        let out = s.find_json(q.clone()).expect("find");
        let hits = json(
            &s.hits_json(json!({"trace_id": out.trace_id}))
                .expect("hits"),
        );
        hits["items"][0].clone()
    };
    assert_eq!(top(&plain)["ref"]["path"], "rules.md");
    let hooked_top = top(&hooked);
    assert_eq!(hooked_top["ref"]["path"], "more.md");
    assert!(
        hooked_top["signals"]
            .as_array()
            .is_some_and(|s| s.contains(&json!(Signal::LateRerank.as_str())))
    );
}

/// Records which manuals each call's candidates came from.
#[derive(Default)]
struct RecordManuals(std::sync::Mutex<Vec<Vec<String>>>);

impl LateReranker for RecordManuals {
    fn rerank(&self, _query: &str, candidates: &[LateRerankCandidate<'_>]) -> Vec<f64> {
        let mut ids: Vec<String> = candidates.iter().map(|c| c.manual_id.to_string()).collect();
        ids.sort();
        ids.dedup();
        self.0.lock().unwrap().push(ids);
        vec![0.0; candidates.len()]
    }
}

#[test]
fn the_late_rerank_sees_the_merged_head_of_all_manuals_once() {
    let f = Fixture::new();
    f.write("m2/terms.md", "# 対象\n対象となる場合です。\n");
    let recorder = Arc::new(RecordManuals::default());
    let s = f.service().with_late_reranker(recorder.clone());
    s.find_json(json!({"query": "対象", "use_cache": false}))
        .expect("find");
    let calls = recorder.0.lock().unwrap().clone();
    assert_eq!(calls, [vec!["m1".to_string(), "m2".to_string()]]);
}

#[test]
fn corrective_enabled_promotes_weak_results_to_stage4() {
    let f = Fixture::new();
    f.write("m6/a.md", "# 入院\n入院給付金について。\n");
    f.write("m7/b.md", "# 入院給付\n入院給付金の支払条件と給付金額。\n");
    let args = json!({"query": "入院給付金の支払条件", "manual_id": "m6", "use_cache": false});
    let plain = f.service();
    let out = plain.find_json(args.clone()).expect("find");
    let hits = plain
        .hits_json(json!({"trace_id": out.trace_id}))
        .expect("hits");
    assert_eq!(
        hits.manual_id.as_deref(),
        Some("m6"),
        "stage 3 found something: no expansion"
    );
    let corrective = f.service_with(|c| c.corrective.enabled = true);
    let out = corrective.find_json(args).expect("find");
    let hits = corrective
        .hits_json(json!({"trace_id": out.trace_id}))
        .expect("hits");
    assert!(
        hits.manual_id.is_none(),
        "stage 4 added candidates from another manual"
    );
    assert!(hits.items.iter().any(|i| i["ref"]["manual_id"] == "m7"));
}

#[test]
fn config_from_env_reads_the_seed_variables() {
    let base = std::path::Path::new("/work/base");
    let vars = |name: &str| -> Option<String> {
        match name {
            "MANUALS_ROOT" => Some("docs/manuals".into()),
            "DEFAULT_MANUAL_ID" => Some("m1".into()),
            "ALLOW_FILE_SCOPE" => Some("true".into()),
            "SEM_CACHE_ENABLED" => Some("0".into()),
            "SEM_CACHE_MAX_SUMMARY_GAP" => Some("2".into()),
            "SEM_CACHE_MAX_SUMMARY_CONFLICT" => Some("-1".into()),
            "LATE_RERANK_ENABLED" => Some("off".into()),
            "SPARSE_QUERY_COVERAGE_WEIGHT" => Some("abc".into()),
            "TRACE_MAX_KEEP" => Some("7".into()),
            _ => None,
        }
    };
    let c = ManualConfig::from_lookup(base, vars);
    assert_eq!(c.root, base.join("docs/manuals"));
    assert_eq!(c.default_manual_id.as_deref(), Some("m1"));
    assert!(c.allow_file_scope && !c.sem_cache_enabled);
    assert_eq!(
        (
            c.sem_cache_max_summary_gap,
            c.sem_cache_max_summary_conflict
        ),
        (Some(2), None)
    );
    assert!(!c.scoring.late_rerank_enabled);
    assert_eq!(
        c.scoring.query_coverage_weight, 0.35,
        "unparsable value falls back"
    );
    assert_eq!(c.warnings.len(), 1);
    assert_eq!(c.trace_max_keep, 7);
    let defaults = ManualConfig::from_lookup(base, |_| None);
    assert_eq!(defaults.root, base.join("manuals"));
    assert!(defaults.sem_cache_enabled && !defaults.allow_file_scope && defaults.watch);
}
