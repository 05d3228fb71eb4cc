//! One test per fixed rule (固定ルール) of seed 002, named after the rule,
//! plus the bad inputs of each rule.

mod common;

use common::JsonTools;

use baton_manuals::{
    HitsKind, IntegrationStatus, LsKind, ManualErrorCode as Code, ReadMode, ReadScope,
    TruncatedReason,
};
use common::{Fixture, code, json};
use serde_json::json;

// ------------------------------------------------------------ manual_ls

#[test]
fn ls_without_id_applies_manuals() {
    let f = Fixture::new();
    let s = f.service();
    let a = s.ls_json(json!({})).expect("ls");
    let b = s.ls_json(json!({"id": null})).expect("ls");
    let c = s.ls_json(json!({"id": "manuals"})).expect("ls");
    assert_eq!(a.id, "manuals");
    assert_eq!(a, b);
    assert_eq!(a, c);
}

#[test]
fn ls_manuals_lists_only_manual_dirs_one_level() {
    let f = Fixture::new();
    f.write("toplevel.md", "# stray file at the root\n");
    let out = f.service().ls_json(json!({"id": "manuals"})).expect("ls");
    let ids: Vec<&str> = out.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2"]);
    assert!(
        out.items
            .iter()
            .all(|i| i.kind == LsKind::Dir && i.path.is_none())
    );
}

#[test]
fn ls_manual_id_lists_direct_children_only() {
    let f = Fixture::new();
    let out = f.service().ls_json(json!({"id": "m1"})).expect("ls");
    let names: Vec<&str> = out.items.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["policy.json", "rules.md", "sub"]);
    assert!(!names.contains(&"more.md"), "not recursive");
    let sub = out.items.iter().find(|i| i.name == "sub").expect("sub");
    let inner = f.service().ls_json(json!({"id": sub.id})).expect("ls sub");
    let inner_names: Vec<&str> = inner.items.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(inner_names, ["more.md"]);
    assert_eq!(inner.items[0].path.as_deref(), Some("sub/more.md"));
}

#[test]
fn ls_dirs_are_kind_dir_and_md_json_files_are_kind_file() {
    let f = Fixture::new();
    let out = json(&f.service().ls_json(json!({"id": "m1"})).expect("ls"));
    let items = out["items"].as_array().expect("items");
    let by_name = |n: &str| items.iter().find(|i| i["name"] == n).cloned();
    assert_eq!(
        by_name("sub").map(|i| i["kind"].clone()),
        Some(json!("dir"))
    );
    assert_eq!(
        by_name("rules.md"),
        Some(
            json!({"id": "m1/rules.md", "name": "rules.md", "kind": "file", "path": "rules.md", "file_type": "md"})
        )
    );
    assert_eq!(
        by_name("policy.json").map(|i| i["file_type"].clone()),
        Some(json!("json"))
    );
    assert_eq!(by_name("notes.txt"), None, "non-manual files are omitted");
}

#[test]
fn ls_file_id_cannot_be_expanded() {
    let f = Fixture::new();
    let s = f.service();
    assert_eq!(
        code(s.ls_json(json!({"id": "m1/rules.md"}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.ls_json(json!({"id": "m1/policy.json"}))),
        Code::InvalidParameter
    );
}

#[test]
fn ls_bad_inputs() {
    let f = Fixture::new();
    let s = f.service();
    assert_eq!(code(s.ls_json(json!({"id": 5}))), Code::InvalidParameter);
    assert_eq!(
        code(s.ls_json(json!({"id": "   "}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.ls_json(json!({"id": "../vault"}))),
        Code::InvalidParameter
    );
    assert_eq!(code(s.ls_json(json!({"id": "nope"}))), Code::NotFound);
    assert_eq!(code(s.ls_json(json!({"id": "m1/missing"}))), Code::NotFound);
    assert_eq!(
        code(s.ls_json(json!({"id": "m1/../../etc"}))),
        Code::OutOfScope
    );
    assert_eq!(
        code(s.ls_json(json!({"ids": "m1"}))),
        Code::InvalidParameter
    );
    assert_eq!(code(s.ls_json(json!(["m1"]))), Code::InvalidParameter);
}

// ------------------------------------------------------------ manual_toc

#[test]
fn toc_lists_files_with_headings_and_line_start() {
    let f = Fixture::new();
    let out = json(
        &f.service()
            .toc_json(json!({"manual_id": "m1"}))
            .expect("toc"),
    );
    let rules = out["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["path"] == "rules.md").cloned())
        .expect("rules.md");
    assert_eq!(
        rules["headings"],
        json!([
            {"title": "総則", "line_start": 1, "level": 1},
            {"title": "例外", "line_start": 3, "level": 2},
            {"title": "参照", "line_start": 5, "level": 3},
        ])
    );
    let paths: Vec<&str> = out["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["path"].as_str())
        .collect();
    assert_eq!(paths, ["policy.json", "rules.md", "sub/more.md"]);
}

#[test]
fn toc_bad_inputs() {
    let f = Fixture::new();
    let s = f.service();
    assert_eq!(code(s.toc_json(json!({}))), Code::InvalidParameter);
    assert_eq!(
        code(s.toc_json(json!({"manual_id": "manuals"}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.toc_json(json!({"manual_id": "zzz"}))),
        Code::NotFound
    );
    assert_eq!(
        code(s.toc_json(json!({"manual_id": 1}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.toc_json(json!({"manual_id": "m1", "path_prefix": "../x"}))),
        Code::OutOfScope
    );
}

#[test]
fn toc_over_200_files_needs_narrow_scope_and_path_prefix_narrows() {
    let f = Fixture::new();
    for i in 0..201 {
        f.write(&format!("m1/wide/f{i:03}.md"), "# 見出し\n本文\n");
    }
    let s = f.service();
    assert_eq!(
        code(s.toc_json(json!({"manual_id": "m1", "path_prefix": "wide"}))),
        Code::NeedsNarrowScope
    );
    let narrow = s
        .toc_json(json!({"manual_id": "m1", "path_prefix": "sub"}))
        .expect("toc");
    assert_eq!(narrow.items.len(), 1);
}

// ------------------------------------------------------------ manual_find

#[test]
fn find_returns_a_trace_id() {
    let f = Fixture::new();
    let out = f
        .service()
        .find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find");
    assert_eq!(out.trace_id.len(), 32);
    assert!(out.trace_id.chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn find_claim_graph_only_when_include_claim_graph_true() {
    let f = Fixture::new();
    let s = f.service();
    let without = json(
        &s.find_json(json!({"query": "対象外", "manual_id": "m1"}))
            .expect("find"),
    );
    assert!(without.get("claim_graph").is_none());
    let false_ = json(
        &s.find_json(json!({"query": "対象外", "manual_id": "m1", "include_claim_graph": false}))
            .expect("find"),
    );
    assert!(false_.get("claim_graph").is_none());
    let with = json(
        &s.find_json(json!({"query": "対象外", "manual_id": "m1", "include_claim_graph": true}))
            .expect("find"),
    );
    let graph = &with["claim_graph"];
    for key in ["claims", "evidences", "edges", "facets"] {
        assert!(graph[key].is_array(), "{key}");
    }
    assert_eq!(graph["evidences"][0]["ref"]["target"], "manual");
}

#[test]
fn find_summary_counts_equal_hits_conflicts_and_gaps_totals() {
    let f = Fixture::new();
    f.write(
        "m3/benefit.md",
        "# 入院給付金\n## 支払条件\n入院給付金は入院したときに支払います。\n## 免責事由\n故意による入院は支払いません。免責とします。\n",
    );
    let s = f.service();
    for (query, manual) in [
        ("対象外", json!("m1")),
        ("入院給付金の支払条件", json!("m3")),
        ("免責事由", json!(null)),
        ("存在しない語彙", json!("m2")),
        ("入院と通院の違い", json!("m3")),
    ] {
        let out = s
            .find_json(json!({"query": query, "manual_id": manual}))
            .expect("find");
        let conflicts = s
            .hits_json(json!({"trace_id": out.trace_id, "kind": "conflicts"}))
            .expect("hits");
        let gaps = s
            .hits_json(json!({"trace_id": out.trace_id, "kind": "gaps"}))
            .expect("hits");
        assert_eq!(
            u64::from(out.summary.conflict_count),
            conflicts.total,
            "{query}"
        );
        assert_eq!(u64::from(out.summary.gap_count), gaps.total, "{query}");
    }
    // A query with no match at all is blocked and has a gap per claim.
    let none = s
        .find_json(json!({"query": "zzzz", "manual_id": "m2", "expand_scope": false}))
        .expect("find");
    assert_eq!(none.summary.integration_status, IntegrationStatus::Blocked);
    assert!(none.summary.gap_count >= 1);
}

#[test]
fn find_budget_defaults_time_ms_60000_and_max_candidates_200() {
    let f = Fixture::new();
    for i in 0..210 {
        f.write(
            &format!("m4/f{i:03}.md"),
            "# 共通条件\n共通条件の説明です。\n",
        );
    }
    let s = f.service();
    let out = s
        .find_json(json!({"query": "共通条件", "manual_id": "m4"}))
        .expect("find");
    assert_eq!(out.summary.candidates, 200, "default max_candidates is 200");
    let unscanned = s
        .hits_json(json!({"trace_id": out.trace_id, "kind": "unscanned"}))
        .expect("hits");
    assert_eq!(unscanned.total, 10);
    assert_eq!(unscanned.items[0]["reason"], "candidate_cap");
    let small = s
        .find_json(json!({"query": "共通条件", "manual_id": "m4", "budget": {"max_candidates": 5}}))
        .expect("find");
    assert_eq!(small.summary.candidates, 5);
    assert_eq!(baton_manuals::MAX_QUERY_BYTES, 4096);
}

#[test]
fn find_budget_values_must_be_integers_at_least_1() {
    let f = Fixture::new();
    let s = f.service();
    for budget in [
        json!({"time_ms": "abc"}),
        json!({"time_ms": 0}),
        json!({"time_ms": -5}),
        json!({"time_ms": 1.5}),
        json!({"time_ms": true}),
        json!({"max_candidates": -1}),
        json!({"max_candidates": 0}),
        json!({"max_candidates": [3]}),
        json!({"max_candidates": {}}),
        json!({"unknown": 1}),
        json!("fast"),
    ] {
        let r = s.find_json(json!({"query": "対象外", "manual_id": "m1", "budget": budget}));
        assert_eq!(code(r), Code::InvalidParameter, "{budget}");
    }
    // Convertible integers are accepted.
    for budget in [
        json!({"time_ms": "500"}),
        json!({"max_candidates": 5.0}),
        json!({"time_ms": null}),
    ] {
        assert!(
            s.find_json(json!({"query": "対象外", "manual_id": "m1", "budget": budget}))
                .is_ok()
        );
    }
}

#[test]
fn find_expand_scope_defaults_to_true() {
    let f = Fixture::new();
    let s = f.service();
    // フロー exists only in m2: with the default the search widens to other manuals.
    let widened = s
        .find_json(json!({"query": "フローを実施", "manual_id": "m1"}))
        .expect("find");
    assert!(widened.summary.candidates >= 1);
    let hits = s
        .hits_json(json!({"trace_id": widened.trace_id}))
        .expect("hits");
    assert_eq!(hits.manual_id.as_deref(), Some("m2"));
    assert!(
        hits.items[0]["signals"]
            .as_array()
            .is_some_and(|s| s.contains(&json!("loose")))
    );
    let narrow = s
        .find_json(json!({"query": "フローを実施", "manual_id": "m1", "expand_scope": false}))
        .expect("find");
    assert_eq!(narrow.summary.candidates, 0);
}

#[test]
fn find_booleans_only_for_expand_scope_include_claim_graph_use_cache() {
    let f = Fixture::new();
    let s = f.service();
    for field in ["expand_scope", "include_claim_graph", "use_cache"] {
        for bad in [json!("yes"), json!(1), json!("true"), json!([true])] {
            let mut args = json!({"query": "対象外", "manual_id": "m1"});
            args[field] = bad.clone();
            assert_eq!(
                code(s.find_json(args)),
                Code::InvalidParameter,
                "{field}={bad}"
            );
        }
    }
}

#[test]
fn find_default_manual_id_applies_when_manual_id_is_omitted() {
    let f = Fixture::new();
    let s = f.service_with(|c| c.default_manual_id = Some("m2".into()));
    let out = s.find_json(json!({"query": "実施する"})).expect("find");
    let hits = s
        .hits_json(json!({"trace_id": out.trace_id}))
        .expect("hits");
    assert_eq!(hits.manual_id.as_deref(), Some("m2"));
    // Without a default, every manual is searched.
    let all = f
        .service()
        .find_json(json!({"query": "説明"}))
        .expect("find");
    assert_eq!(
        all.summary.scanned_files, 4,
        "3 manual files in m1 (notes.txt is not one) + 1 in m2"
    );
}

#[test]
fn find_use_cache_defaults_to_sem_cache_enabled() {
    let f = Fixture::new();
    let on = f.service();
    on.find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find");
    on.find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find");
    assert_eq!(on.cache_stats().hits, 1);
    let off = f.service_with(|c| c.sem_cache_enabled = false);
    off.find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find");
    off.find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find");
    assert_eq!(off.cache_stats().hits, 0);
    // An explicit use_cache=true overrides the default.
    off.find_json(json!({"query": "対象外", "manual_id": "m1", "use_cache": true}))
        .expect("find");
    off.find_json(json!({"query": "対象外", "manual_id": "m1", "use_cache": true}))
        .expect("find");
    assert_eq!(off.cache_stats().hits, 1);
}

#[test]
fn find_cache_hit_is_searched_again_when_gap_or_conflict_exceeds_threshold() {
    let f = Fixture::new();
    let guarded = f.service_with(|c| c.sem_cache_max_summary_gap = Some(0));
    let args = json!({"query": "zzzz", "manual_id": "m2", "expand_scope": false});
    let first = guarded.find_json(args.clone()).expect("find");
    assert!(first.summary.gap_count > 0);
    guarded.find_json(args.clone()).expect("find");
    let stats = guarded.cache_stats();
    assert_eq!((stats.hits, stats.guard_revalidations), (0, 1));
    // Without the guard the same cached result is a hit.
    let plain = f.service();
    plain.find_json(args.clone()).expect("find");
    plain.find_json(args).expect("find");
    assert_eq!(plain.cache_stats().hits, 1);
}

#[test]
fn find_query_validation() {
    let f = Fixture::new();
    let s = f.service();
    assert_eq!(code(s.find_json(json!({}))), Code::InvalidParameter);
    assert_eq!(
        code(s.find_json(json!({"query": ""}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.find_json(json!({"query": 12}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.find_json(json!({"query": "あ".repeat(2000)}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.find_json(json!({"query": "x", "manual_id": "manuals"}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.find_json(json!({"query": "x", "manual_id": "../vault"}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.find_json(json!({"query": "x", "manual_id": "zzz"}))),
        Code::NotFound
    );
    assert_eq!(
        code(s.find_json(json!({"query": "x", "only_unscanned_from_trace_id": "0".repeat(32)}))),
        Code::NotFound
    );
    assert_eq!(
        code(s.find_json(json!({"query": "x", "max_chars": 5}))),
        Code::InvalidParameter
    );
    assert_eq!(code(s.find_json(json!("x"))), Code::InvalidParameter);
}

#[test]
fn find_next_actions_point_to_read_and_hits() {
    let f = Fixture::new();
    let s = f.service();
    let out = json(
        &s.find_json(json!({"query": "対象外", "manual_id": "m1"}))
            .expect("find"),
    );
    let actions = out["next_actions"].as_array().expect("actions");
    assert_eq!(actions[0]["type"], "manual_read");
    assert_eq!(actions[0]["params"]["ref"]["path"], "rules.md");
    assert!(
        actions
            .iter()
            .any(|a| a["type"] == "manual_hits" && a["params"]["trace_id"] == out["trace_id"])
    );
    // The suggested read works as given.
    assert!(s.read_json(actions[0]["params"].clone()).is_ok());
}

/// Six one-section files in manual `m5` that all match 共通規定.
fn write_six_rule_files(f: &Fixture) {
    for i in 0..6 {
        f.write(
            &format!("m5/f{i}.md"),
            &format!("# 規定{i}\n共通規定の本文{i}。\n"),
        );
    }
}

#[test]
fn find_only_unscanned_from_trace_id_continues_after_the_cap() {
    let f = Fixture::new();
    write_six_rule_files(&f);
    let s = f.service();
    let first = s
        .find_json(json!({"query": "共通規定", "manual_id": "m5", "budget": {"max_candidates": 2}}))
        .expect("find");
    let first_hits = s
        .hits_json(json!({"trace_id": first.trace_id}))
        .expect("hits");
    let next = s
        .find_json(json!({"query": "共通規定", "manual_id": "m5", "only_unscanned_from_trace_id": first.trace_id}))
        .expect("find");
    let next_hits = s
        .hits_json(json!({"trace_id": next.trace_id}))
        .expect("hits");
    assert_eq!(next_hits.total, 4);
    let seen: Vec<&serde_json::Value> =
        first_hits.items.iter().map(|i| &i["ref"]["path"]).collect();
    assert!(
        next_hits
            .items
            .iter()
            .all(|i| !seen.contains(&&i["ref"]["path"]))
    );
}

#[test]
fn a_continuation_follows_the_cut_into_the_manual_the_search_widened_to() {
    let f = Fixture::new();
    f.write("en/guide.md", "# Guide\nNothing about it here.\n");
    write_six_rule_files(&f);
    let s = f.service();
    // `en` has no match: the search widens to m5, where the cap cuts 4.
    let first = s
        .find_json(json!({"query": "共通規定", "manual_id": "en", "budget": {"max_candidates": 2}}))
        .expect("find");
    let unscanned = s
        .hits_json(json!({"trace_id": first.trace_id, "kind": "unscanned"}))
        .expect("hits");
    assert!(unscanned.items.iter().all(|u| u["manual_id"] == "m5"));
    // The suggested continuation, passed back as given, returns the rest.
    let value = serde_json::to_value(&first).unwrap();
    let action = value["next_actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["params"]["only_unscanned_from_trace_id"] == first.trace_id.as_str())
        .expect("a continuation is suggested")
        .clone();
    let next = s.find_json(action["params"].clone()).expect("find");
    let next_hits = s
        .hits_json(json!({"trace_id": next.trace_id}))
        .expect("hits");
    assert_eq!(next_hits.total, 4, "{:?}", next_hits.items);
}

// ------------------------------------------------------------ manual_hits

#[test]
fn hits_defaults_kind_candidates_offset_0_limit_50() {
    let f = Fixture::new();
    let s = f.service();
    let out = s
        .find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find");
    let hits = s
        .hits_json(json!({"trace_id": out.trace_id}))
        .expect("hits");
    assert_eq!(
        (hits.kind, hits.offset, hits.limit),
        (HitsKind::Candidates, 0, 50)
    );
    assert_eq!(hits.total, u64::from(out.summary.candidates));
}

#[test]
fn hits_offset_is_integer_at_least_0_and_limit_at_least_1() {
    let f = Fixture::new();
    let s = f.service();
    let id = s
        .find_json(json!({"query": "対象", "manual_id": "m1"}))
        .expect("find")
        .trace_id;
    for bad in [
        json!({"offset": -1}),
        json!({"offset": "abc"}),
        json!({"offset": 1.5}),
        json!({"limit": 0}),
        json!({"limit": -1}),
        json!({"limit": true}),
        json!({"kind": ["candidates"]}),
        json!({"kind": "everything"}),
    ] {
        let mut args = bad.clone();
        args["trace_id"] = json!(id);
        assert_eq!(code(s.hits_json(args)), Code::InvalidParameter, "{bad}");
    }
    let page = s
        .hits_json(json!({"trace_id": id, "offset": "1", "limit": 1}))
        .expect("hits");
    assert_eq!((page.offset, page.limit, page.items.len()), (1, 1, 1));
    assert!(page.total >= 2);
    assert_eq!(
        code(s.hits_json(json!({"trace_id": "f".repeat(32)}))),
        Code::NotFound
    );
    assert_eq!(code(s.hits_json(json!({}))), Code::InvalidParameter);
}

#[test]
fn hits_candidates_are_compressed_without_target_or_json_path() {
    let f = Fixture::new();
    let s = f.service();
    let id = s
        .find_json(json!({"query": "支払い 不適用", "manual_id": "m1"}))
        .expect("find")
        .trace_id;
    let hits = s.hits_json(json!({"trace_id": id})).expect("hits");
    assert!(hits.total >= 1);
    for item in &hits.items {
        let reference = item["ref"].as_object().expect("ref");
        assert!(!reference.contains_key("target"));
        assert!(!reference.contains_key("json_path"));
        assert!(item.get("target").is_none() && item.get("json_path").is_none());
    }
}

#[test]
fn hits_candidates_hoist_manual_id_when_all_rows_share_it() {
    let f = Fixture::new();
    let s = f.service();
    let one = s
        .find_json(json!({"query": "対象外", "manual_id": "m1"}))
        .expect("find");
    let hits = json(
        &s.hits_json(json!({"trace_id": one.trace_id}))
            .expect("hits"),
    );
    assert_eq!(hits["manual_id"], "m1");
    assert!(
        hits["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|i| i["ref"].get("manual_id").is_none())
    );
    // Rows from two manuals keep ref.manual_id and have no top-level manual_id.
    let mixed = s.find_json(json!({"query": "説明 実施"})).expect("find");
    let hits = json(
        &s.hits_json(json!({"trace_id": mixed.trace_id}))
            .expect("hits"),
    );
    assert!(hits.get("manual_id").is_none());
    let manuals: std::collections::BTreeSet<&str> = hits["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["ref"]["manual_id"].as_str())
        .collect();
    assert_eq!(manuals.into_iter().collect::<Vec<_>>(), ["m1", "m2"]);
}

#[test]
fn hits_every_kind_pages() {
    let f = Fixture::new();
    let s = f.service();
    let out = s
        .find_json(json!({"query": "対象外", "manual_id": "m1", "include_claim_graph": true}))
        .expect("find");
    let graph = out.claim_graph.expect("graph");
    for kind in HitsKind::ALL {
        let page = s
            .hits_json(json!({"trace_id": out.trace_id, "kind": kind.as_str()}))
            .expect("hits");
        assert_eq!(page.kind, kind);
        let expected = match kind {
            HitsKind::Claims => Some(graph.claims.len()),
            HitsKind::Evidences => Some(graph.evidences.len()),
            HitsKind::Edges => Some(graph.edges.len()),
            _ => None,
        };
        if let Some(n) = expected {
            assert_eq!(page.total, n as u64, "{}", kind.as_str());
        }
    }
}

// ------------------------------------------------------------ manual_read

#[test]
fn read_md_defaults_to_section_and_json_to_file() {
    let f = Fixture::new();
    let s = f.service();
    let md = s
        .read_json(json!({"ref": {"manual_id": "m1", "path": "rules.md", "start_line": 3}}))
        .expect("read");
    assert_eq!(
        md.text,
        "## 例外\nこの場合は対象外です。\n### 参照\n別表を参照。\n"
    );
    assert_eq!(
        json(&md.applied),
        json!({"scope": "section", "max_sections": null, "max_chars": 12000, "mode": "read"})
    );
    let js = s
        .read_json(json!({"ref": {"manual_id": "m1", "path": "policy.json"}}))
        .expect("read");
    assert_eq!(js.applied.scope, ReadScope::File);
    assert!(js.text.contains("不適用あり"));
}

#[test]
fn read_md_file_scope_needs_allow_file_scope_and_allow_file() {
    let f = Fixture::new();
    let args = json!({"ref": {"manual_id": "m1", "path": "rules.md"}, "scope": "file", "allow_file": true});
    let no_allow = json!({"ref": {"manual_id": "m1", "path": "rules.md"}, "scope": "file"});
    let server_off = f.service();
    assert_eq!(code(server_off.read_json(args.clone())), Code::InvalidScope);
    let server_on = f.service_with(|c| c.allow_file_scope = true);
    assert_eq!(code(server_on.read_json(no_allow)), Code::InvalidScope);
    let whole = server_on.read_json(args).expect("read");
    assert_eq!(whole.applied.scope, ReadScope::File);
    assert!(whole.text.starts_with("# 総則") && whole.text.contains("別表を参照"));
}

#[test]
fn read_allow_file_must_be_boolean() {
    let f = Fixture::new();
    let s = f.service_with(|c| c.allow_file_scope = true);
    for bad in [json!("true"), json!(1), json!({})] {
        let args = json!({"ref": {"manual_id": "m1", "path": "rules.md"}, "scope": "file", "allow_file": bad});
        assert_eq!(code(s.read_json(args)), Code::InvalidParameter);
    }
}

#[test]
fn read_json_section_or_sections_is_invalid_scope() {
    let f = Fixture::new();
    let s = f.service();
    for scope in ["section", "sections"] {
        let args = json!({"ref": {"manual_id": "m1", "path": "policy.json"}, "scope": scope});
        assert_eq!(code(s.read_json(args)), Code::InvalidScope);
    }
    let snippet =
        s.read_json(json!({"ref": {"manual_id": "m1", "path": "policy.json"}, "scope": "snippet"}));
    assert!(snippet.is_ok());
}

#[test]
fn read_max_sections_is_20_and_max_chars_is_12000() {
    let f = Fixture::new();
    let mut many = String::from("# 章\n");
    for i in 1..=30 {
        many.push_str(&format!("## 節{i}\n本文{i}\n"));
    }
    f.write("m1/many.md", &many);
    f.write("m1/long.md", &format!("# 長い\n{}\n", "あ".repeat(20_000)));
    let s = f.service();
    let sections = s
        .read_json(json!({"ref": {"manual_id": "m1", "path": "many.md", "start_line": 2}, "scope": "sections"}))
        .expect("read");
    assert_eq!(sections.applied.max_sections, Some(20));
    assert!(sections.text.contains("## 節20\n") && !sections.text.contains("## 節21"));
    let long = s
        .read_json(json!({"ref": {"manual_id": "m1", "path": "long.md"}}))
        .expect("read");
    assert!(long.truncated);
    assert_eq!(long.text.chars().count(), 12_000);
    assert_eq!(long.applied.max_chars, 12_000);
    assert_eq!(
        code(s.read_json(json!({"ref": {"manual_id": "m1", "path": "long.md"}, "max_chars": 100}))),
        Code::InvalidParameter
    );
}

#[test]
fn read_expand_before_and_after_chars_are_integers_at_least_0() {
    let f = Fixture::new();
    let s = f.service();
    let base = json!({"ref": {"manual_id": "m1", "path": "rules.md", "start_line": 3}, "scope": "snippet"});
    let plain = s.read_json(base.clone()).expect("read");
    let mut expanded = base.clone();
    expanded["expand"] = json!({"before_chars": 6, "after_chars": 0});
    let wider = s.read_json(expanded).expect("read");
    assert_eq!(wider.text, format!("対象です。\n{}", plain.text));
    for bad in [
        json!({"before_chars": -1}),
        json!({"after_chars": "x"}),
        json!({"after_chars": 0.5}),
        json!(3),
    ] {
        let mut args = base.clone();
        args["expand"] = bad.clone();
        assert_eq!(code(s.read_json(args)), Code::InvalidParameter, "{bad}");
    }
}

#[test]
fn read_same_md_section_again_falls_back_to_scan_from_the_next_line() {
    let f = Fixture::new();
    f.write("m1/multi.md", "# 章\n## ①\nA\n## ②\nB\n## ③\nC\n");
    let s = f.service();
    let args = json!({"ref": {"manual_id": "m1", "path": "multi.md", "start_line": 2}});
    let first = s.read_json(args.clone()).expect("read");
    assert_eq!(
        (first.applied.mode, first.text.as_str()),
        (ReadMode::Read, "## ①\nA\n")
    );
    let second = s.read_json(args.clone()).expect("read");
    assert_eq!(second.applied.mode, ReadMode::ScanFallback);
    assert!(second.text.starts_with("## ②"));
    assert_eq!(second.applied_range.start_line, 4);
    assert_eq!(second.next_cursor.map(|c| c.char_offset), Some(None));
    assert_eq!(second.eof, Some(true));
    // Nothing left: the section is returned normally again.
    let third = s.read_json(args).expect("read");
    assert_eq!(third.applied.mode, ReadMode::Read);
}

#[test]
fn read_bad_inputs() {
    let f = Fixture::new();
    let s = f.service();
    let r = |v| s.read_json(v);
    assert_eq!(code(r(json!({}))), Code::InvalidParameter);
    assert_eq!(code(r(json!({"ref": "rules.md"}))), Code::InvalidParameter);
    assert_eq!(
        code(r(json!({"ref": {"manual_id": "m1", "path": 123}}))),
        Code::InvalidPath
    );
    assert_eq!(
        code(r(
            json!({"ref": {"manual_id": "m1", "path": "rules.md", "start_line": 999}})
        )),
        Code::NotFound
    );
    assert_eq!(
        code(r(
            json!({"ref": {"manual_id": "m1", "path": "rules.md", "start_line": "abc"}})
        )),
        Code::InvalidParameter
    );
    assert_eq!(
        code(r(
            json!({"ref": {"manual_id": "m1", "path": "rules.md", "start_line": 0}})
        )),
        Code::InvalidParameter
    );
    assert_eq!(
        code(r(
            json!({"ref": {"manual_id": "m1", "path": "rules.md"}, "scope": "all"})
        )),
        Code::InvalidParameter
    );
    assert_eq!(
        code(r(json!({"ref": {"manual_id": "m1", "path": "missing.md"}}))),
        Code::NotFound
    );
    assert_eq!(
        code(r(json!({"ref": {"manual_id": "m1", "path": "notes.txt"}}))),
        Code::InvalidPath
    );
    assert_eq!(
        code(r(
            json!({"ref": {"manual_id": "manuals", "path": "rules.md"}})
        )),
        Code::InvalidParameter
    );
}

// ------------------------------------------------------------ manual_scan

#[test]
fn scan_start_line_wins_over_cursor_and_defaults_to_1() {
    let f = Fixture::new();
    let s = f.service();
    let both = s
        .scan_json(json!({"manual_id": "m1", "path": "rules.md", "start_line": 3, "cursor": {"char_offset": 0, "start_line": 1}}))
        .expect("scan");
    assert_eq!(
        (both.applied_range.start_line, both.applied_range.end_line),
        (3, 6)
    );
    let cursor_line = s
        .scan_json(json!({"manual_id": "m1", "path": "rules.md", "cursor": {"start_line": 5}}))
        .expect("scan");
    assert_eq!(cursor_line.applied_range.start_line, 5);
    let default = s
        .scan_json(json!({"manual_id": "m1", "path": "rules.md"}))
        .expect("scan");
    assert_eq!(default.applied_range.start_line, 1);
    assert!(default.text.starts_with("# 総則"));
}

#[test]
fn scan_cursor_accepts_object_number_and_string_shorthand() {
    let f = Fixture::new();
    f.write("m1/long.md", &format!("{}\nend\n", "a".repeat(12_050)));
    let s = f.service();
    let first = s
        .scan_json(json!({"manual_id": "m1", "path": "long.md"}))
        .expect("scan");
    assert_eq!(
        (first.eof, first.truncated, first.truncated_reason),
        (false, true, TruncatedReason::MaxChars)
    );
    assert_eq!(first.next_cursor.char_offset, Some(12_000));
    assert_eq!(
        (first.applied_range.start_line, first.applied_range.end_line),
        (1, 1)
    );
    let by_object = s
        .scan_json(json!({"manual_id": "m1", "path": "long.md", "cursor": first.next_cursor}))
        .expect("scan");
    let by_number = s
        .scan_json(json!({"manual_id": "m1", "path": "long.md", "cursor": 12_000}))
        .expect("scan");
    let by_string = s
        .scan_json(json!({"manual_id": "m1", "path": "long.md", "cursor": "12000"}))
        .expect("scan");
    assert_eq!(by_object, by_number);
    assert_eq!(by_object, by_string);
    assert!(by_object.eof && !by_object.truncated);
    assert_eq!(by_object.truncated_reason, TruncatedReason::None);
    assert_eq!(by_object.next_cursor.char_offset, None);
    assert_eq!(by_object.applied_range.start_line, 1);
    assert_eq!(
        first.text.chars().count() + by_object.text.chars().count(),
        12_050 + 5
    );
    for bad in [
        json!(true),
        json!([1]),
        json!("abc"),
        json!(-1),
        json!({"char_offset": "x"}),
        json!({"line": 1}),
    ] {
        let r = s.scan_json(json!({"manual_id": "m1", "path": "long.md", "cursor": bad}));
        assert_eq!(code(r), Code::InvalidParameter, "{bad}");
    }
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1", "path": "long.md", "cursor": 99_999}))),
        Code::InvalidParameter
    );
}

#[test]
fn scan_start_line_must_be_an_integer_within_the_file() {
    let f = Fixture::new();
    let s = f.service();
    for bad in [json!(0), json!(7), json!("abc"), json!(2.5), json!(true)] {
        let r = s.scan_json(json!({"manual_id": "m1", "path": "rules.md", "start_line": bad}));
        assert_eq!(code(r), Code::InvalidParameter, "{bad}");
    }
    let r =
        s.scan_json(json!({"manual_id": "m1", "path": "rules.md", "cursor": {"start_line": 7}}));
    assert_eq!(code(r), Code::InvalidParameter);
    assert!(
        s.scan_json(json!({"manual_id": "m1", "path": "rules.md", "start_line": 6}))
            .is_ok()
    );
    assert!(
        s.scan_json(json!({"manual_id": "m1", "path": "rules.md", "start_line": "6"}))
            .is_ok()
    );
}

#[test]
fn scan_max_chars_is_fixed_at_12000() {
    let f = Fixture::new();
    let s = f.service();
    let out = s
        .scan_json(json!({"manual_id": "m1", "path": "rules.md"}))
        .expect("scan");
    assert_eq!(out.applied.max_chars, 12_000);
    assert_eq!(baton_manuals::SCAN_MAX_CHARS, 12_000);
    let r = s.scan_json(json!({"manual_id": "m1", "path": "rules.md", "max_chars": 500}));
    assert_eq!(code(r), Code::InvalidParameter);
}

#[test]
fn scan_bad_inputs() {
    let f = Fixture::new();
    let s = f.service();
    assert_eq!(
        code(s.scan_json(json!({"path": "rules.md"}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "manuals", "path": "rules.md"}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1"}))),
        Code::InvalidPath
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "zzz", "path": "a.md"}))),
        Code::NotFound
    );
    assert_eq!(code(s.scan_json(json!(null))), Code::InvalidParameter);
}
