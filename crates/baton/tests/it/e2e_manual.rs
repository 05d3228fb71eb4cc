//! End-to-end: seed 002's manual tools through a real MCP client, on manuals
//! written by the test.

use crate::common::{Repo, spawn};
use serde_json::json;

fn write(repo: &Repo, rel: &str, text: &str) {
    let path = repo.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_tools_search_read_and_refuse_escapes() {
    let repo = Repo::new();
    write(
        &repo,
        "manuals/insurance/benefits.md",
        "# 給付\n\n## 入院給付金\n\n入院給付金は、病気やけがで入院したときに入院日数に応じて支払います。\n\n## 手術給付金\n\n所定の手術を受けたときに支払います。\n",
    );
    write(
        &repo,
        "manuals/insurance/exclusions.md",
        "# 免責事由\n\n故意または重大な過失による事故については保険金を支払いません。\n",
    );
    write(
        &repo,
        "manuals/insurance/codes.json",
        "{\"codes\": [{\"id\": \"A1\", \"name\": \"hospital\"}]}\n",
    );
    write(&repo, "secret.md", "# secret\n\nnot a manual\n");
    let c = spawn(repo.path(), &["--tools", "manual"], &[]).await;
    assert_eq!(
        c.tool_names().await,
        [
            "manual_find",
            "manual_hits",
            "manual_ls",
            "manual_read",
            "manual_scan",
            "manual_toc"
        ]
    );

    let ls = c.ok("manual_ls", json!({})).await;
    assert_eq!(ls["id"], "manuals");
    assert_eq!(ls["items"][0]["id"], "insurance");
    assert_eq!(ls["items"][0]["kind"], "dir");
    let toc = c.ok("manual_toc", json!({"manual_id": "insurance"})).await;
    assert!(
        toc["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["path"] == "benefits.md")
    );

    let found = c
        .ok(
            "manual_find",
            json!({"query": "入院したときの給付金はいつ支払われますか", "manual_id": "insurance"}),
        )
        .await;
    assert!(found["trace_id"].is_string());
    assert!(
        found.get("claim_graph").is_none(),
        "claim_graph only when asked"
    );
    let hits = c
        .ok("manual_hits", json!({"trace_id": found["trace_id"]}))
        .await;
    assert_eq!(hits["kind"], "candidates");
    assert_eq!(hits["offset"], 0);
    assert_eq!(hits["limit"], 50);
    let top = &hits["items"][0];
    assert_eq!(top["ref"]["path"], "benefits.md", "{hits}");

    let read = c
        .ok("manual_read", json!({"ref": {"manual_id": "insurance", "path": "benefits.md", "start_line": top["ref"]["start_line"]}}))
        .await;
    assert!(read["text"].as_str().unwrap().contains("入院給付金"));
    assert_eq!(read["applied"]["scope"], "section");
    let scan = c
        .ok(
            "manual_scan",
            json!({"manual_id": "insurance", "path": "exclusions.md"}),
        )
        .await;
    assert_eq!(scan["eof"], true);
    assert_eq!(scan["applied"]["max_chars"], 12000);

    // Seed 002's validation and error codes, as isError results.
    c.err(
        "manual_find",
        json!({"query": "x", "expand_scope": "yes"}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "manual_find",
        json!({"query": "x", "budget": {"max_candidates": 0}}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "manual_hits",
        json!({"trace_id": found["trace_id"], "limit": 0}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "manual_read",
        json!({"ref": {"manual_id": "insurance", "path": "codes.json"}, "scope": "section"}),
        "invalid_scope",
    )
    .await;
    c.err(
        "manual_ls",
        json!({"id": "insurance/benefits.md"}),
        "invalid_parameter",
    )
    .await;
    for escape in ["../secret.md", "/etc/passwd", "../../secret.md"] {
        let e = c
            .call(
                "manual_read",
                json!({"ref": {"manual_id": "insurance", "path": escape}}),
            )
            .await
            .unwrap_err();
        assert!(
            e["code"] == "out_of_scope" || e["code"] == "invalid_path",
            "{escape}: {e}"
        );
    }
    c.close().await;
}
