//! The thesaurus is data: the built-in entries can be turned off, and a
//! user's file (`<MANUALS_ROOT>/thesaurus.txt` or `MANUALS_THESAURUS`) adds
//! the vocabulary of their own manuals.

mod common;

use common::JsonTools;

use std::path::Path;

use baton_manuals::{ManualConfig, ManualService};
use common::write;
use serde_json::json;

/// A manual whose formal wording shares no bigram with the everyday query.
fn manuals(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("manuals");
    write(
        &root.join("help/device.md"),
        "# 端末\n\n## 再起動の手順\n\n電源ボタンを長押しして再起動する。\n\n## フラックス炉\n\nフラックス炉は毎週点検する。\n",
    );
    write(
        &root.join("help/health.md"),
        "# 疾病\n\n疾病による入院の取扱い。\n",
    );
    root
}

/// The `path#title` of the best candidate for `query`, if any.
fn top(service: &ManualService, query: &str) -> Option<String> {
    service.ls_json(json!({})).expect("ls");
    let found = service
        .find_json(json!({"query": query, "manual_id": "help", "use_cache": false}))
        .expect("find");
    let hits = service
        .hits_json(json!({"trace_id": found.trace_id, "limit": 1}))
        .expect("hits");
    hits.items.first().map(|i| {
        format!(
            "{}#{}",
            i["ref"]["path"].as_str().unwrap_or(""),
            i["title"].as_str().unwrap_or("")
        )
    })
}

fn config(dir: &Path, vars: &[(&str, &str)]) -> ManualConfig {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut config = ManualConfig::from_lookup(dir, |name| {
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    });
    config.index_dir = None;
    config.watch = false;
    config
}

/// House jargon no built-in entry can know.
const QUERY: &str = "かまど";

#[test]
fn a_user_thesaurus_in_the_manuals_root_bridges_the_vocabulary() {
    let dir = tempfile::tempdir().unwrap();
    let root = manuals(dir.path());
    let without = ManualService::open(config(dir.path(), &[])).unwrap();
    assert_eq!(top(&without, QUERY), None, "no shared term without it");

    write(
        &root.join("thesaurus.txt"),
        "# our words\nかまど = フラックス炉\nとびら = 前面カバー\n",
    );
    let with = ManualService::open(config(dir.path(), &[])).unwrap();
    assert!(with.thesaurus_problems().is_empty());
    assert_eq!(with.thesaurus_len(), without.thesaurus_len() + 2);
    assert_eq!(top(&with, QUERY).as_deref(), Some("device.md#フラックス炉"));
    // The thesaurus file is not a manual file: nothing of it is indexed.
    assert_eq!(top(&with, "our words"), None);

    let off = ManualService::open(config(dir.path(), &[("MANUALS_THESAURUS", "off")])).unwrap();
    assert_eq!(top(&off, QUERY), None);
}

#[test]
fn an_explicit_thesaurus_file_is_read_and_its_problems_reported() {
    let dir = tempfile::tempdir().unwrap();
    manuals(dir.path());
    write(
        &dir.path().join("vocab/words.txt"),
        "かまど = フラックス炉\nbroken line\nとびら = 前面カバー\n",
    );
    let s = ManualService::open(config(
        dir.path(),
        &[("MANUALS_THESAURUS", "vocab/words.txt")],
    ))
    .unwrap();
    let problems = s.thesaurus_problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].ends_with("words.txt:2: expected `KEY = ALT1, ALT2`"),
        "{problems:?}"
    );
    assert_eq!(top(&s, QUERY).as_deref(), Some("device.md#フラックス炉"));

    let missing = ManualService::open(config(
        dir.path(),
        &[("MANUALS_THESAURUS", "vocab/none.txt")],
    ))
    .unwrap();
    assert_eq!(missing.thesaurus_problems().len(), 1);
    assert!(missing.thesaurus_problems()[0].contains("none.txt"));
}

#[test]
fn the_built_in_thesaurus_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    manuals(dir.path());
    // 病気 (everyday) → 疾病 (formal) is a built-in entry.
    let on = ManualService::open(config(dir.path(), &[])).unwrap();
    assert_eq!(top(&on, "病気").as_deref(), Some("health.md#疾病"));
    let off = ManualService::open(config(
        dir.path(),
        &[("MANUALS_THESAURUS_BUILTIN", "false")],
    ))
    .unwrap();
    assert_eq!(off.thesaurus_len(), 0);
    assert_eq!(top(&off, "病気"), None);
}
