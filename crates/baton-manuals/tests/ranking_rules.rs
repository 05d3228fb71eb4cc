//! The ranking rules of issue 14, each on a small manual written for it:
//! expansions never outrank the literal, mixed-script names are concepts,
//! section numbers are searchable, files are diversified, label words are
//! intent, the file name joins the matched text, and `required_terms` is a
//! soft filter.

mod common;

use common::JsonTools;

use baton_manuals::{ManualConfig, ManualErrorCode, ManualService};
use common::{code, write};
use serde_json::{Value, json};

/// A manuals root with one manual `m` holding `files`.
fn service(files: &[(&str, &str)]) -> (tempfile::TempDir, ManualService) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manuals");
    for (path, text) in files {
        write(&root.join("m").join(path), text);
    }
    let service = ManualService::open(ManualConfig::new(&root)).expect("open");
    (dir, service)
}

/// `path#start_line` of the ranked candidates.
fn ranked(service: &ManualService, args: Value) -> Vec<String> {
    let found = service.find_json(args).expect("find");
    let hits = service
        .hits_json(json!({"trace_id": found.trace_id, "limit": 100}))
        .expect("hits");
    hits.items
        .iter()
        .map(|i| {
            format!(
                "{}#{}",
                i["ref"]["path"].as_str().unwrap_or(""),
                i["ref"]["start_line"]
            )
        })
        .collect()
}

fn paths(service: &ManualService, query: &str) -> Vec<String> {
    ranked(
        service,
        json!({"query": query, "manual_id": "m", "use_cache": false}),
    )
    .into_iter()
    .map(|r| r.split('#').next().unwrap_or("").to_string())
    .collect()
}

fn position(list: &[String], path: &str) -> usize {
    list.iter()
        .position(|p| p == path)
        .unwrap_or_else(|| panic!("{path} not in {list:?}"))
}

#[test]
fn an_expansion_never_outranks_the_literal_the_user_typed() {
    // 病気 → 疾病 (built-in thesaurus). The expansion is repeated and in the
    // heading of its section; the literal occurs once in plain text.
    let (_d, s) = service(&[
        (
            "literal.md",
            "# 入院について\n病気で入院したときの取扱いを定めます。\n",
        ),
        (
            "expansion.md",
            "# 疾病による入院\n疾病で入院したとき。疾病の種類。疾病の定義。\n",
        ),
    ]);
    let list = paths(&s, "病気で入院");
    assert!(
        position(&list, "literal.md") < position(&list, "expansion.md"),
        "{list:?}"
    );
}

#[test]
fn an_expansion_counts_fully_where_the_literal_is_absent() {
    // Nobody writes 病気 here: the expansion finds the section.
    let (_d, s) = service(&[
        ("a.md", "# 疾病\n疾病で入院したときは給付金を支払います。\n"),
        ("b.md", "# 手続\n請求の手続を定めます。\n"),
    ]);
    assert_eq!(paths(&s, "病気で入院")[0], "a.md");
}

#[test]
fn a_mixed_script_name_beats_the_generic_word_it_ends_with() {
    // がん保険 must not decay to 保険, which every file shares.
    let (_d, s) = service(&[
        (
            "general.md",
            "# 保険の基本\n保険とは保険料を払い保険金を受け取る仕組みです。保険契約の保険期間。\n",
        ),
        (
            "cancer.md",
            "# 保障内容\nがん保険は、がんと診断されたときに支払います。\n",
        ),
    ]);
    assert_eq!(paths(&s, "がん保険の保障")[0], "cancer.md");
}

#[test]
fn section_numbers_tell_chapters_apart() {
    let (_d, s) = service(&[
        (
            "給付金編（第２章-1）入院.md",
            "# 概要\n入院給付金の支払について。\n",
        ),
        (
            "給付金編（第２章-2）入院.md",
            "# 概要\n入院給付金の支払について。\n",
        ),
    ]);
    assert_eq!(
        paths(&s, "入院給付金 第2章-2")[0],
        "給付金編（第２章-2）入院.md"
    );
    assert_eq!(
        paths(&s, "入院給付金 第2章-1")[0],
        "給付金編（第２章-1）入院.md"
    );
    // Articles too, with kanji numerals in the text.
    let (_d, s) = service(&[(
        "rules.md",
        "# 第三条 告知\n告知の義務。\n# 第十三条 解除\n契約の解除。\n",
    )]);
    let list = ranked(&s, json!({"query": "第13条", "manual_id": "m"}));
    assert_eq!(list[0], "rules.md#3");
}

#[test]
fn sections_of_one_file_make_room_for_a_close_second_file() {
    let body = "免責事由に該当するときは保険金を支払いません。";
    let (_d, s) = service(&[
        (
            "a.md",
            &format!("# 免責事由\n{body}\n## 故意\n{body}\n## 重過失\n{body}\n## 戦争\n{body}\n"),
        ),
        ("b.md", &format!("# 特約の免責事由\n{body}\n")),
    ]);
    let list = paths(&s, "免責事由");
    assert!(position(&list, "b.md") < 2, "{list:?}");
    // Every section of a.md is still among the candidates.
    assert_eq!(list.iter().filter(|p| *p == "a.md").count(), 4);
}

#[test]
fn label_words_are_intent_not_content() {
    // 定義 appears everywhere in b.md; the question is about 解約返戻金.
    let (_d, s) = service(&[
        ("a.md", "# 解約返戻金\n解約したときに払い戻すお金です。\n"),
        ("b.md", "# 用語の定義\n定義。定義の一覧。定義を定める。\n"),
    ]);
    assert_eq!(paths(&s, "定義 解約返戻金")[0], "a.md");
    // A label word alone is still searched.
    assert_eq!(paths(&s, "定義")[0], "b.md");
}

#[test]
fn the_file_name_joins_the_matched_text() {
    // The phrase is only in the file name; the quoted-phrase filter sees it.
    let (_d, s) = service(&[
        (
            "約款編 がん保険.md",
            "## page1\n給付金の支払について定めます。\n",
        ),
        (
            "約款編 医療保険.md",
            "## page1\n給付金の支払について定めます。\n",
        ),
    ]);
    let list = paths(&s, "「がん保険」 給付金の支払");
    assert_eq!(list, ["約款編 がん保険.md"]);
}

#[test]
fn required_terms_are_a_soft_filter_with_okurigana_variants() {
    let (_d, s) = service(&[
        ("a.md", "# 申込\n申込の手続と書類。\n"),
        ("b.md", "# 手続\n請求の手続と書類。\n"),
    ]);
    let args =
        |terms: Value| json!({"query": "手続と書類", "manual_id": "m", "required_terms": terms});
    // 申し込み matches the text's 申込.
    let found = ranked(&s, args(json!(["申し込み"])));
    assert_eq!(found, ["a.md#1"]);
    // A term found nowhere filters nothing.
    let found = ranked(&s, args(json!(["存在しない語"])));
    assert_eq!(found.len(), 2);
    let f = s.find_json(args(json!(["存在しない語"]))).expect("find");
    let trace = s
        .hits_json(json!({"trace_id": f.trace_id, "kind": "candidates"}))
        .expect("hits");
    assert_eq!(trace.total, 2);
}

#[test]
fn required_terms_are_validated() {
    let (_d, s) = service(&[("a.md", "# a\ntext\n")]);
    let call = |terms: Value| s.find_json(json!({"query": "text", "required_terms": terms}));
    assert_eq!(code(call(json!([]))), ManualErrorCode::InvalidParameter);
    assert_eq!(
        code(call(json!(["a", "b", "c"]))),
        ManualErrorCode::InvalidParameter
    );
    assert_eq!(code(call(json!("text"))), ManualErrorCode::InvalidParameter);
    assert_eq!(code(call(json!([1]))), ManualErrorCode::InvalidParameter);
    assert_eq!(code(call(json!(["  "]))), ManualErrorCode::InvalidParameter);
    // Duplicates count once.
    assert!(call(json!(["text", "TEXT", "ｔｅｘｔ"])).is_ok());
    assert!(call(Value::Null).is_ok());
}
