//! The typed face: a request built in code is held to seed 002's argument
//! rules exactly as raw JSON arguments are (the same codes and fields), and
//! `XInput::from_json` reads convertible forms into typed values.

mod common;

use baton_manuals::{
    FindBudget, FindInput, HitsInput, LsInput, ManualError, ManualErrorCode as Code, ReadInput,
    ScanInput, TocInput,
};
use common::Fixture;
use serde_json::json;

fn field<T: std::fmt::Debug>(r: Result<T, ManualError>) -> (Code, Option<String>) {
    let e = r.expect_err("refused");
    let field = e
        .details
        .as_ref()
        .and_then(|d| d.get("field"))
        .and_then(|f| f.as_str())
        .map(str::to_string);
    (e.code, field)
}

#[test]
fn typed_requests_are_checked_like_json_arguments() {
    let f = Fixture::new();
    let s = f.service();
    assert_eq!(
        field(s.find(FindInput::new("   "))),
        (Code::InvalidParameter, Some("query".into()))
    );
    let mut big = FindInput::new("x".repeat(baton_manuals::MAX_QUERY_BYTES + 1));
    assert_eq!(field(s.find(big.clone())).0, Code::InvalidParameter);
    big.query = "対象".into();
    big.budget = Some(FindBudget {
        max_candidates: Some(0),
        time_ms: None,
    });
    assert_eq!(
        field(s.find(big)),
        (Code::InvalidParameter, Some("budget.max_candidates".into()))
    );
    let mut scoped = FindInput::new("対象");
    scoped.manual_id = Some("../m1".into());
    assert_eq!(
        field(s.find(scoped)),
        (Code::InvalidParameter, Some("manual_id".into()))
    );
    let mut terms = FindInput::new("対象");
    terms.required_terms = Some(vec!["a".into(), "b".into(), "c".into()]);
    assert_eq!(field(s.find(terms)).0, Code::InvalidParameter);
    let mut page = HitsInput::new("0123");
    page.limit = Some(0);
    assert_eq!(
        field(s.hits(page)),
        (Code::InvalidParameter, Some("limit".into()))
    );
    assert_eq!(
        field(s.read(ReadInput::at("../etc", "a.md", None))).0,
        Code::InvalidParameter
    );
    assert_eq!(
        s.read(ReadInput::at("m1", "../m2/appendix.md", None))
            .expect_err("escape")
            .code,
        Code::OutOfScope
    );
    let scan = ScanInput {
        manual_id: "m1".into(),
        path: "/etc/passwd".into(),
        start_line: None,
        cursor: None,
    };
    assert_eq!(s.scan(scan).expect_err("absolute").code, Code::OutOfScope);
    assert_eq!(
        field(s.ls(LsInput {
            id: Some("../vault".into())
        }))
        .0,
        Code::InvalidParameter
    );
    let toc = TocInput {
        manual_id: "manuals".into(),
        path_prefix: None,
        offset: None,
    };
    assert_eq!(field(s.toc(toc)).0, Code::InvalidParameter);
    // Good typed requests work.
    let found = s.find(FindInput::new("対象外")).expect("find");
    assert!(found.summary.candidates >= 1);
    assert!(s.hits(HitsInput::new(found.trace_id)).is_ok());
}

#[test]
fn from_json_reads_convertible_forms_and_keeps_the_errors() {
    let page = HitsInput::from_json(
        &json!({"trace_id": "t", "limit": "5", "offset": 2.0, "kind": " gaps "}),
    )
    .expect("convertible");
    assert_eq!((page.limit, page.offset), (Some(5), Some(2)));
    assert_eq!(page.kind, Some(baton_manuals::HitsKind::Gaps));
    let find = FindInput::from_json(
        &json!({"query": "q", "budget": {"max_candidates": " 7 "}, "manual_id": null}),
    )
    .expect("find");
    assert_eq!(find.budget.and_then(|b| b.max_candidates), Some(7));
    assert_eq!(find.manual_id, None);
    let e = FindInput::from_json(&json!({"query": "q", "use_cache": "true"})).expect_err("bool");
    assert_eq!(e.code, Code::InvalidParameter);
    assert!(
        e.message.contains("use_cache must be a boolean"),
        "{}",
        e.message
    );
    let e = FindInput::from_json(&json!({"query": "q", "colour": 1})).expect_err("unknown");
    assert!(
        e.message.contains("unknown field `colour`"),
        "{}",
        e.message
    );
}

/// A refused value comes back cut short, never whole (a 100 KB `kind` was
/// repeated in full): the message stays small and says how long it was.
#[test]
fn refused_values_are_echoed_cut_short() {
    let f = Fixture::new();
    let s = f.service();
    let huge = "Z".repeat(100_000);
    let short = |e: ManualError| {
        assert!(e.message.len() < 400, "{} bytes", e.message.len());
        assert!(
            e.details.as_ref().is_none_or(|d| d.to_string().len() < 400),
            "{:?}",
            e.details
        );
        e
    };
    let e = short(
        HitsInput::from_json(&json!({"trace_id": "t", "kind": huge.clone()})).expect_err("kind"),
    );
    assert_eq!(e.code, Code::InvalidParameter);
    assert!(e.message.contains("(100000 characters)"), "{}", e.message);
    assert!(
        e.message.contains("use one of: candidates"),
        "{}",
        e.message
    );
    let long_trace = "T".repeat(1000);
    let e = short(
        s.hits(HitsInput::new(long_trace))
            .expect_err("unknown trace"),
    );
    assert_eq!(e.code, Code::NotFound);
    assert!(e.message.contains("(1000 characters)"), "{}", e.message);
    let e = short(
        FindInput::from_json(&json!({"query": "q", huge.clone(): 1})).expect_err("unknown field"),
    );
    assert!(e.message.starts_with("unknown field `ZZZ"), "{}", e.message);
    let read =
        ReadInput::from_json(&json!({"ref": {"manual_id": "m", "path": "a.md"}, "scope": huge}));
    let e = short(match read {
        Ok(read) => s.read(read).expect_err("bad scope"),
        Err(e) => e,
    });
    assert!(e.message.contains("(100000 characters)"), "{}", e.message);
}
