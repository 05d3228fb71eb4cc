//! The on-disk index against other programs: a segment file truncated while
//! it is mapped never kills the process (its pages read as zeros and the
//! manual is indexed again), and a linked index folder is never followed.

mod common;

use common::JsonTools;

use baton_manuals::{ManualConfig, ManualService};
use common::write;
use serde_json::json;

fn top_path(s: &ManualService, query: &str) -> Option<String> {
    let out = s
        .find_json(json!({"query": query, "manual_id": "big", "use_cache": false}))
        .ok()?;
    let hits = s.hits_json(json!({"trace_id": out.trace_id})).ok()?;
    hits.items
        .first()
        .and_then(|i| i["ref"]["path"].as_str().map(str::to_string))
}

/// A number written in letters (`ba`), so that it stays one word.
fn letters(mut n: usize) -> String {
    let mut out = String::new();
    loop {
        out.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
        if n == 0 {
            return out;
        }
    }
}

/// A manual whose segment spans many pages (distinct words in many files).
fn big_manual(root: &std::path::Path) {
    for f in 0..60 {
        let mut text = String::new();
        for s in 0..20 {
            text.push_str(&format!("# topic {} {}\n", letters(f), letters(s)));
            for w in 0..30 {
                text.push_str(&format!("w{}q{}z{} ", letters(f), letters(s), letters(w)));
            }
            text.push('\n');
        }
        write(&root.join(format!("big/file{f:02}.md")), &text);
    }
    write(
        &root.join("big/target.md"),
        "# Retention\nThe zanzibarian retention window lasts ninety days.\n",
    );
}

fn segment_files(index_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(index_dir).expect("index dir").flatten() {
        if let Ok(entries) = std::fs::read_dir(dir.path()) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("seg-") {
                    out.push(e.path());
                }
            }
        }
    }
    out
}

#[test]
fn a_segment_truncated_while_mapped_is_reindexed_not_fatal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    big_manual(&root);
    let index_dir = dir.path().join("index");
    let mut config = ManualConfig::new(&root);
    config.index_dir = Some(index_dir.clone());
    let service = ManualService::open(config).expect("open");
    assert_eq!(
        top_path(&service, "zanzibarian retention").as_deref(),
        Some("target.md")
    );
    assert_eq!(top_path(&service, "whqdzf").as_deref(), Some("file07.md"));
    let segments = segment_files(&index_dir);
    assert!(!segments.is_empty());
    for seg in &segments {
        let len = std::fs::metadata(seg).expect("meta").len();
        assert!(len > 64 * 1024, "the segment spans many pages ({len})");
        // Another program cuts the file the service has mapped.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(seg)
            .expect("open");
        file.set_len(4096).expect("truncate");
    }
    // Every call sweeps and hands mapped pages back, so the search reads
    // the cut pages again: the process lives and the answer is right.
    for _ in 0..3 {
        assert_eq!(
            top_path(&service, "zanzibarian retention").as_deref(),
            Some("target.md")
        );
        assert_eq!(top_path(&service, "whqdzf").as_deref(), Some("file07.md"));
    }
    // The damaged segments were replaced by whole ones.
    for seg in segment_files(&index_dir) {
        assert!(std::fs::metadata(&seg).expect("meta").len() > 64 * 1024);
    }
    let found = service
        .find_json(json!({"query": "whqdzf", "manual_id": "big", "use_cache": false}))
        .expect("find");
    assert_eq!(found.summary.scanned_files, 61, "no file counted twice");
}

#[cfg(unix)]
#[test]
fn a_linked_index_folder_is_never_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    write(&root.join("m1/a.md"), "# Alpha\nalpha text here\n");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("keep.txt"), "not baton's").expect("write");
    let baton = dir.path().join(".baton");
    std::fs::create_dir_all(&baton).expect("mkdir");
    let index_dir = baton.join("manual-index");
    std::os::unix::fs::symlink(&elsewhere, &index_dir).expect("link");
    let mut config = ManualConfig::new(&root);
    config.index_dir = Some(index_dir.clone());
    let service = ManualService::open(config).expect("open");
    service.build_index(&mut |_| {}).expect("build");
    let found = service
        .find_json(json!({"query": "alpha", "use_cache": false}))
        .expect("find");
    assert_eq!(found.summary.candidates, 1, "search works from memory");
    let names: Vec<String> = std::fs::read_dir(&elsewhere)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, vec!["keep.txt".to_string()], "nothing written there");
    let warnings = service.take_index_warnings();
    assert!(
        warnings.iter().any(|w| w.contains("symbolic link")),
        "{warnings:?}"
    );

    // A link in place of one manual's folder inside a real index folder is
    // replaced, and what it pointed at is left alone.
    std::fs::remove_file(&index_dir).expect("unlink");
    let mut config = ManualConfig::new(&root);
    config.index_dir = Some(index_dir.clone());
    ManualService::open(config.clone())
        .expect("open")
        .build_index(&mut |_| {})
        .expect("build");
    let manual_dirs: Vec<_> = std::fs::read_dir(&index_dir)
        .expect("dir")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.path())
        .collect();
    assert_eq!(manual_dirs.len(), 1);
    std::fs::remove_dir_all(&manual_dirs[0]).expect("rm");
    std::fs::write(elsewhere.join("manifest"), "garbage").expect("write");
    std::os::unix::fs::symlink(&elsewhere, &manual_dirs[0]).expect("link");
    let service = ManualService::open(config).expect("open");
    service.build_index(&mut |_| {}).expect("build");
    assert!(elsewhere.join("keep.txt").exists());
    assert!(elsewhere.join("manifest").exists());
    assert!(
        !std::fs::symlink_metadata(&manual_dirs[0])
            .expect("meta")
            .file_type()
            .is_symlink(),
        "the link was replaced by baton's own folder"
    );
    let found = service
        .find_json(json!({"query": "alpha", "use_cache": false}))
        .expect("find");
    assert_eq!(found.summary.candidates, 1);
}

#[cfg(unix)]
#[test]
fn a_fifo_put_in_place_of_an_indexed_file_never_blocks_a_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    write(&root.join("m1/a.md"), "# Alpha\nalpha beta gamma\n");
    write(&root.join("m1/b.md"), "# Other\nalpha only\n");
    let mut config = ManualConfig::new(&root);
    // No sweep before the search: the index still names a.md as a file.
    config.stat_interval = std::time::Duration::from_secs(3600);
    let service = std::sync::Arc::new(ManualService::open(config).expect("open"));
    service.build_index(&mut |_| {}).expect("build");
    std::fs::remove_file(root.join("m1/a.md")).expect("rm");
    let fifo =
        std::ffi::CString::new(root.join("m1/a.md").to_string_lossy().as_bytes()).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let s = std::sync::Arc::clone(&service);
    std::thread::spawn(move || {
        let found = s.find(baton_manuals::FindInput::new("alpha beta gamma"));
        let _ = tx.send(found.map(|f| f.summary.candidates));
    });
    let answered = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the search answered instead of blocking on the FIFO");
    assert!(answered.is_ok(), "{answered:?}");
}
