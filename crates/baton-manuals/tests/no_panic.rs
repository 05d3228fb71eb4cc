//! Property tests: no input makes a tool panic.

mod common;

use common::JsonTools;

use common::Fixture;
use proptest::prelude::*;
use serde_json::{Value, json};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        Just(json!("m1")),
        Just(json!("rules.md")),
        Just(json!("../x")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("id".to_string()),
                    Just("manual_id".to_string()),
                    Just("path".to_string()),
                    Just("query".to_string()),
                    Just("ref".to_string()),
                    Just("cursor".to_string()),
                    Just("start_line".to_string()),
                    Just("char_offset".to_string()),
                    Just("scope".to_string()),
                    Just("budget".to_string()),
                    Just("trace_id".to_string()),
                    Just("limit".to_string()),
                    ".{0,6}".prop_map(|s| s),
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn tools_never_panic_on_arbitrary_arguments(args in arb_json()) {
        let f = Fixture::new();
        let s = f.service();
        let _ = s.ls_json(args.clone());
        let _ = s.toc_json(args.clone());
        let _ = s.find_json(args.clone());
        let _ = s.hits_json(args.clone());
        let _ = s.read_json(args.clone());
        let _ = s.scan_json(args);
    }

    #[test]
    fn find_never_panics_on_arbitrary_queries(query in "\\PC{1,60}") {
        let f = Fixture::new();
        let s = f.service();
        if let Ok(out) = s.find_json(json!({"query": query})) {
            let hits = s.hits_json(json!({"trace_id": out.trace_id, "kind": "gaps"}));
            prop_assert!(hits.is_ok());
        }
    }

    #[test]
    fn scan_chunks_cover_any_file_exactly(text in "(\\PC|\n){0,300}", start in 0u64..400) {
        let f = Fixture::new();
        f.write("m1/any.md", &text);
        let s = f.service();
        let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
        let total = normalized.chars().count() as u64;
        let out = s.scan_json(json!({"manual_id": "m1", "path": "any.md", "cursor": start}));
        if start > total {
            prop_assert!(out.is_err());
        } else {
            let out = out.map_err(|e| TestCaseError::fail(e.message))?;
            let expected: String = normalized.chars().skip(start as usize).take(12_000).collect();
            prop_assert_eq!(out.text, expected);
        }
    }
}
