//! Which sections become candidates: a section must share a content word
//! (or a hiragana word) with the query; sharing only a glue bigram — a
//! particle after a katakana word (`ンを`) — or English stop words is noise.

mod common;

use common::JsonTools;

use baton_manuals::{ManualConfig, ManualService};
use common::write;
use serde_json::json;

fn service(files: &[(&str, &str)]) -> (tempfile::TempDir, ManualService) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        write(&dir.path().join("manuals").join(path), text);
    }
    let mut config = ManualConfig::new(dir.path().join("manuals"));
    config.builtin_thesaurus = false;
    let service = ManualService::open(config).unwrap();
    service.ls_json(json!({})).unwrap();
    (dir, service)
}

fn titles(s: &ManualService, query: &str) -> Vec<String> {
    let found = s
        .find_json(json!({"query": query, "manual_id": "m", "use_cache": false}))
        .unwrap();
    let hits = s.hits_json(json!({"trace_id": found.trace_id})).unwrap();
    hits.items
        .iter()
        .map(|i| i["title"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_shared_particle_after_katakana_is_not_a_match() {
    let (_dir, s) = service(&[(
        "m/device.md",
        "# 端末\n\n## 再起動の手順\n\n電源ボタンを長押しして再起動する。\n\n## パソコンの接続\n\nパソコンをケーブルでつなぐ。\n",
    )]);
    // Only `ンを` (in ボタンを / パソコンを) would link the first section.
    assert_eq!(titles(&s, "テレビンを見る"), Vec::<String>::new());
    // A content word still finds its section, and only it.
    assert_eq!(titles(&s, "パソコンを使う"), ["パソコンの接続"]);
}

#[test]
fn english_stop_words_alone_do_not_make_candidates() {
    let (_dir, s) = service(&[(
        "m/guide.md",
        "# Guide\n\n## Backups\n\nHow the nightly backup is kept for a week.\n\n## Tokens\n\nRotate a token with the CLI.\n",
    )]);
    assert_eq!(titles(&s, "how is the rotation of a token"), ["Tokens"]);
    // A query of stop words only still searches (nothing else to anchor on).
    assert!(!titles(&s, "how is the").is_empty());
}
