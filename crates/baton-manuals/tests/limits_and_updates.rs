//! Bounded work on any manual (issue 12 item 7) and incremental updates of
//! the on-disk index: oversized and non-regular files are skipped with a
//! warning, `manual_toc` replies are paged, and edits reach the index
//! without rebuilding it.

mod common;

use common::JsonTools;

use baton_manuals::{ManualConfig, ManualErrorCode, ManualService, TOC_MAX_HEADINGS};
use common::{code, write};
use serde_json::json;

fn top_path(s: &ManualService, query: &str) -> Option<String> {
    let found = s
        .find_json(json!({"query": query, "manual_id": "m", "use_cache": false}))
        .expect("find");
    let hits = s
        .hits_json(json!({"trace_id": found.trace_id, "limit": 1}))
        .expect("hits");
    hits.items
        .first()
        .and_then(|i| i["ref"]["path"].as_str().map(str::to_string))
}

#[test]
fn files_over_the_size_limit_are_skipped_with_a_warning_and_not_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    write(&root.join("m/small.md"), "# 入院\n入院給付金の説明。\n");
    write(
        &root.join("m/big.md"),
        &format!("# 手術\n{}\n", "手術給付金の説明。".repeat(200)),
    );
    let mut config = ManualConfig::new(&root);
    config.max_file_bytes = 1000;
    let s = ManualService::open(config).expect("open");
    let stats = s.build_index(&mut |_| {}).expect("build");
    assert_eq!(stats.files, 1);
    let warnings = s.take_index_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("m/big.md: skipped") && w.contains("1000")),
        "{warnings:?}"
    );
    // Each warning is reported once.
    s.build_index(&mut |_| {}).expect("build");
    assert!(s.take_index_warnings().is_empty());
    let found = s
        .find_json(json!({"query": "手術給付金", "manual_id": "m", "use_cache": false}))
        .expect("find");
    let hits = s
        .hits_json(json!({"trace_id": found.trace_id}))
        .expect("hits");
    assert!(hits.items.iter().all(|i| i["ref"]["path"] != "big.md"));
    let read = s.read_json(json!({"ref": {"manual_id": "m", "path": "big.md"}}));
    assert_eq!(code(read), ManualErrorCode::Forbidden);
}

#[cfg(unix)]
#[test]
fn a_fifo_is_skipped_with_a_warning_and_never_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    write(&root.join("m/a.md"), "# 入院\n入院給付金の説明。\n");
    let fifo = root.join("m/pipe.md");
    let c_path = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: mkfifo only reads the NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    let s = ManualService::open(ManualConfig::new(&root)).expect("open");
    let stats = s.build_index(&mut |_| {}).expect("build");
    assert_eq!(stats.files, 1);
    let warnings = s.take_index_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w == "m/pipe.md: skipped, not a regular file"),
        "{warnings:?}"
    );
    // Reading it answers at once: it is no manual file.
    let read = s.read_json(json!({"ref": {"manual_id": "m", "path": "pipe.md"}}));
    assert_eq!(code(read), ManualErrorCode::NotFound);
    let scan = s.scan_json(json!({"manual_id": "m", "path": "pipe.md"}));
    assert_eq!(code(scan), ManualErrorCode::NotFound);
}

#[test]
fn manual_toc_is_paged_by_headings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    let per_file = TOC_MAX_HEADINGS / 3 + 1;
    for f in 0..5 {
        let text: String = (0..per_file)
            .map(|i| format!("## 見出し{f}-{i}\n本文{i}\n"))
            .collect();
        write(&root.join(format!("m/f{f}.md")), &text);
    }
    let s = ManualService::open(ManualConfig::new(&root)).expect("open");
    let mut offset = 0;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let toc = s
            .toc_json(json!({"manual_id": "m", "offset": offset}))
            .expect("toc");
        assert_eq!(toc.total_files, 5);
        let headings: usize = toc.items.iter().map(|i| i.headings.len()).sum();
        assert!(headings <= TOC_MAX_HEADINGS, "{headings}");
        assert!(toc.items.iter().all(|i| !i.headings_truncated));
        seen.extend(toc.items.iter().map(|i| i.path.clone()));
        pages += 1;
        match toc.next_offset {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(seen, ["f0.md", "f1.md", "f2.md", "f3.md", "f4.md"]);
    assert!(pages >= 3);
    // One file with more headings than a page: cut and flagged.
    let text: String = (0..TOC_MAX_HEADINGS + 10)
        .map(|i| format!("## h{i}\nbody\n"))
        .collect();
    write(&root.join("big/one.md"), &text);
    let toc = s.toc_json(json!({"manual_id": "big"})).expect("toc");
    assert_eq!(toc.items[0].headings.len(), TOC_MAX_HEADINGS);
    assert!(toc.items[0].headings_truncated);
    assert_eq!(toc.next_offset, None);
}

#[test]
fn edits_reach_the_on_disk_index_incrementally() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    let index_dir = dir.path().join("index");
    for i in 0..30 {
        write(
            &root.join(format!("m/f{i:02}.md")),
            &format!("# 章{i}\n通常の説明です{i}。\n"),
        );
    }
    let open = || {
        let mut c = ManualConfig::new(&root);
        c.index_dir = Some(index_dir.clone());
        ManualService::open(c).expect("open")
    };
    let s = open();
    let first = s.build_index(&mut |_| {}).expect("build");
    assert_eq!((first.parsed_files, first.files), (30, 30));
    // Edit one file, remove one, add one: only those are tokenised.
    write(&root.join("m/f03.md"), "# 章3\n解約返戻金の説明です。\n");
    std::fs::remove_file(root.join("m/f04.md")).expect("rm");
    write(&root.join("m/new.md"), "# 新規\n契約者貸付の説明です。\n");
    let second = s.build_index(&mut |_| {}).expect("build");
    assert_eq!(
        (second.parsed_files, second.removed_files, second.files),
        (2, 1, 30)
    );
    // A small manual stays one segment (merged after the change).
    assert_eq!(second.segments, 1);
    assert_eq!(top_path(&s, "解約返戻金").as_deref(), Some("f03.md"));
    assert_eq!(top_path(&s, "契約者貸付").as_deref(), Some("new.md"));
    assert_eq!(
        top_path(&s, "通常の説明です4"),
        top_path(&s, "通常の説明です5")
    );
    // A new service opens the same state from disk without tokenising.
    let t = open();
    let third = t.build_index(&mut |_| {}).expect("build");
    assert_eq!((third.parsed_files, third.loaded_manuals), (0, 1));
    assert_eq!(top_path(&t, "解約返戻金").as_deref(), Some("f03.md"));
    // Touching a file without changing it re-reads, but does not re-index it.
    let text = std::fs::read(root.join("m/f05.md")).expect("read");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(root.join("m/f05.md"), text).expect("write");
    let fourth = t.build_index(&mut |_| {}).expect("build");
    assert_eq!(fourth.parsed_files, 0);
    let fifth = open().build_index(&mut |_| {}).expect("build");
    assert_eq!((fifth.parsed_files, fifth.reused_files), (0, 30));
}

#[test]
fn an_incrementally_updated_index_ranks_like_a_fresh_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    let index_dir = dir.path().join("index");
    let words = [
        "入院",
        "手術",
        "通院",
        "解約",
        "保険料",
        "給付金",
        "告知",
        "免責",
    ];
    let text = |i: usize, round: usize| {
        format!(
            "# {}の{}\n{}と{}について定めます。第{}条。\n## 補足\n{}の扱い。\n",
            words[i % 8],
            words[(i + round) % 8],
            words[(i * 3 + round) % 8],
            words[(i + 5) % 8],
            i + round,
            words[(i + 2 * round) % 8],
        )
    };
    // Written out of path order, so segments list files out of order too.
    for i in (0..40).rev() {
        write(&root.join(format!("m/d{}/f{i:02}.md", i % 3)), &text(i, 0));
    }
    let disk = || {
        let mut c = ManualConfig::new(&root);
        c.index_dir = Some(index_dir.clone());
        c.index_threads = 2;
        ManualService::open(c).expect("open")
    };
    let s = disk();
    s.build_index(&mut |_| {}).expect("build");
    for round in 1..4 {
        for i in (0..40).filter(|i| i % (round + 2) == 0) {
            write(
                &root.join(format!("m/d{}/f{i:02}.md", i % 3)),
                &text(i, round),
            );
        }
        let _ = std::fs::remove_file(root.join(format!("m/d{}/f{:02}.md", round % 3, round * 7)));
        s.build_index(&mut |_| {}).expect("refresh");
        let fresh = ManualService::open(ManualConfig::new(&root)).expect("open");
        for q in [
            "入院の手術",
            "解約 給付金",
            "告知と免責",
            "第12条",
            "保険料の扱い",
        ] {
            let ranked = |svc: &ManualService| -> Vec<(String, u64, f64)> {
                let f = svc
                    .find_json(json!({"query": q, "manual_id": "m", "use_cache": false}))
                    .expect("find");
                svc.hits_json(json!({"trace_id": f.trace_id, "limit": 20}))
                    .expect("hits")
                    .items
                    .iter()
                    .map(|i| {
                        (
                            i["ref"]["path"].as_str().unwrap_or("").to_string(),
                            i["ref"]["start_line"].as_u64().unwrap_or(0),
                            i["score"].as_f64().unwrap_or(0.0),
                        )
                    })
                    .collect()
            };
            assert_eq!(ranked(&s), ranked(&fresh), "round {round}, query {q}");
        }
    }
}
