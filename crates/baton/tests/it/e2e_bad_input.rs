//! Bad input to every tool: missing, wrong-typed, oversized and
//! path-traversing arguments give a clean `isError` with the right code and
//! change nothing on disk.

use crate::common;

use crate::common::{Repo, spawn};
use serde_json::{Value, json};

/// Tools that take a workspace, with valid other arguments.
fn workspace_tools() -> Vec<(&'static str, Value)> {
    vec![
        (
            "phase_start",
            json!({"force": true, "reason": "test", "phase": "phase-1"}),
        ),
        (
            "phase_complete",
            json!({"force": true, "reason": "test", "phase": "phase-1"}),
        ),
        (
            "phase_fail",
            json!({"force": true, "reason": "test", "phase": "phase-1", "message": "m"}),
        ),
        (
            "checkpoint",
            json!({"force": true, "reason": "test", "phase": "phase-1"}),
        ),
        (
            "skip_phase",
            json!({"force": true, "reason": "test", "phase": "phase-1"}),
        ),
        ("abandon", json!({"reason": "r"})),
        ("state_get", json!({})),
        ("state_resume_info", json!({})),
        ("run_overview", json!({})),
    ]
}

fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut v = base.clone();
    v[key] = value;
    v
}

fn without(base: &Value, key: &str) -> Value {
    let mut v = base.clone();
    v.as_object_mut().unwrap().remove(key);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_refuses_bad_arguments_and_writes_nothing() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    c.ok(
        "init",
        json!({"spec_name": "target", "workspace": "20260101-target"}),
    )
    .await;
    // A symlink inside .specs leading out of it, and a folder outside with a state file.
    let outside = repo.path().join("outside/ws");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(
        repo.specs().join("20260101-target/state.json"),
        outside.join("state.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(repo.path().join("outside/ws"), repo.specs().join("escape"))
        .unwrap();
    let before = repo.snapshot();
    let outside_before = std::fs::read(outside.join("state.json")).unwrap();
    let paths_before = repo.all_paths();

    let big = "x".repeat(70_000);
    let long = "y".repeat(5_000);
    let abs_outside = outside.display().to_string();
    for (tool, extra) in workspace_tools() {
        let valid = with(&extra, "workspace", json!("20260101-target"));
        // Missing, wrong-typed, unknown and non-object arguments.
        let e = c
            .err(tool, without(&valid, "workspace"), "invalid_parameter")
            .await;
        assert_eq!(e["details"]["field"], "workspace", "{tool}");
        for wrong in [
            json!(7),
            json!(true),
            json!(null),
            json!(["a"]),
            json!({"a": 1}),
        ] {
            let e = c
                .err(
                    tool,
                    with(&valid, "workspace", wrong.clone()),
                    "invalid_parameter",
                )
                .await;
            assert_eq!(e["details"]["field"], "workspace", "{tool} {wrong}");
        }
        let e = c
            .err(
                tool,
                with(&valid, "surprise", json!(1)),
                "invalid_parameter",
            )
            .await;
        assert_eq!(e["details"]["field"], "surprise", "{tool}");
        if valid.get("phase").is_some() {
            c.err(tool, without(&valid, "phase"), "invalid_parameter")
                .await;
            c.err(tool, with(&valid, "phase", json!(1)), "invalid_parameter")
                .await;
            c.err(tool, with(&valid, "phase", json!("")), "invalid_parameter")
                .await;
            c.err(
                tool,
                with(&valid, "phase", json!(long)),
                "invalid_parameter",
            )
            .await;
        }
        // Oversized.
        c.err(
            tool,
            with(&valid, "workspace", json!(big)),
            "invalid_parameter",
        )
        .await;
        // Malformed names.
        for bad in [
            "",
            "   ",
            "-rf",
            "a b",
            "名前",
            "a\u{0}b",
            "$(touch pwned)",
            "a;rm -rf /",
        ] {
            let e = c
                .call(tool, with(&valid, "workspace", json!(bad)))
                .await
                .unwrap_err();
            assert!(
                e["code"] == "invalid_parameter" || e["code"] == "out_of_scope",
                "{tool} {bad:?}: {e}"
            );
        }
        // Escapes: relative traversal, absolute paths, symlinks.
        for escape in [
            "../outside/ws",
            ".specs/../outside/ws",
            "..",
            "/etc",
            abs_outside.as_str(),
            "escape",
            ".specs/escape",
            "20260101-target/../../outside/ws",
        ] {
            c.err(
                tool,
                with(&valid, "workspace", json!(escape)),
                "out_of_scope",
            )
            .await;
        }
    }

    // init's own arguments.
    for (args, field) in [
        (json!({}), "spec_name"),
        (json!({"spec_name": 5}), "spec_name"),
        (json!({"spec_name": ""}), "spec_name"),
        (json!({"spec_name": "日本語だけ"}), "spec_name"),
        (json!({"spec_name": long}), "spec_name"),
        (json!({"spec_name": big}), "arguments"),
        (json!({"spec_name": "x", "effort": "XL"}), "effort"),
        (json!({"spec_name": "x", "effort": 3}), "effort"),
        (json!({"spec_name": "x", "workflow": 1}), "workflow"),
        (json!({"spec_name": "x", "bogus": true}), "bogus"),
    ] {
        let e = c.err("init", args.clone(), "invalid_parameter").await;
        assert_eq!(e["details"]["field"], field, "{}", common::short(&args));
    }
    let e = c
        .err(
            "init",
            json!({"spec_name": "x", "workflow": "nope"}),
            "not_found",
        )
        .await;
    assert_eq!(e["details"]["field"], "workflow");
    for escape in ["../x", "/tmp/x", ".specs/../../x", "escape"] {
        c.err(
            "init",
            json!({"spec_name": "x", "workspace": escape}),
            "out_of_scope",
        )
        .await;
    }
    // Shell metacharacters in free text are data, not commands.
    let e = c.err("phase_fail", json!({"force": true, "reason": "test", "workspace": "20260101-target", "phase": "phase-1", "message": "$(touch /tmp/pwned)"}), "invalid_state").await;
    assert!(e["message"].is_string());
    c.err(
        "phase_fail",
        json!({"force": true, "reason": "test", "workspace": "20260101-target", "phase": "phase-1", "message": long}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "abandon",
        json!({"workspace": "20260101-target", "reason": ""}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "workspace_list",
        json!({"workflow": 3}),
        "invalid_parameter",
    )
    .await;
    c.err(
        "state_get",
        json!({"workspace": "20260101-target", "field": ""}),
        "invalid_parameter",
    )
    .await;

    assert_eq!(repo.snapshot(), before, "no refused call may change .specs");
    assert_eq!(
        std::fs::read(outside.join("state.json")).unwrap(),
        outside_before
    );
    assert_eq!(
        repo.all_paths(),
        paths_before,
        "no file may be created anywhere"
    );
    assert!(!std::path::Path::new("/tmp/pwned").exists());
    c.close().await;
}

/// Every tool, driven from its own advertised inputSchema: each property with
/// a value of the wrong JSON type, and an unknown property, gives an isError
/// result with a stable code (never a protocol error, never `internal`) and
/// writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_refuses_wrong_types_from_its_own_schema() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path().join("manuals/m")).unwrap();
    std::fs::write(repo.path().join("manuals/m/a.md"), "# A\n\ntext\n").unwrap();
    let c = spawn(repo.path(), &[], &[]).await;
    let before = repo.all_paths();
    let tools = c.service.list_all_tools().await.unwrap();
    assert!(tools.len() >= 26);
    let mut checked = 0;
    for tool in &tools {
        let name = tool.name.to_string();
        let e = c
            .err(&name, json!({"__unknown__": 1}), "invalid_parameter")
            .await;
        assert!(
            e["message"].as_str().unwrap().contains("__unknown__"),
            "{name}: {e}"
        );
        let Some(props) = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            continue;
        };
        for (prop, schema) in props {
            let types: Vec<&str> = match &schema["type"] {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let wrongs = if types.contains(&"string") {
                vec![json!({"a": [1]}), json!(12345)]
            } else if types.contains(&"integer") || types.contains(&"number") {
                vec![json!("not a number")]
            } else if types.contains(&"boolean") {
                vec![json!("yes")]
            } else if types.contains(&"array") || types.contains(&"object") {
                vec![json!(12345)]
            } else {
                continue;
            };
            for wrong in wrongs {
                let result = c.call(&name, json!({ prop.as_str(): wrong })).await;
                let e = result.expect_err(&format!("{name}.{prop} accepted a wrong type"));
                let code = e["code"].as_str().unwrap();
                assert!(code == "invalid_parameter", "{name}.{prop}: {e}");
                // The message speaks JSON to the agent and names what is
                // wrong, never serde's or Rust's words ("effort must be
                // string or map" named neither the words nor JSON's types).
                let message = e["message"].as_str().unwrap();
                for rust in [
                    "string or map",
                    "struct ",
                    "sequence",
                    "invalid type",
                    "variant",
                    "`",
                    "Some(",
                    "Error {",
                ] {
                    assert!(!message.contains(rust), "{name}.{prop}: {rust:?} in {e}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "only {checked} properties checked");
    // Lazily created caches aside (.baton/), nothing was written.
    let after: Vec<String> = repo
        .all_paths()
        .into_iter()
        .filter(|p| !p.contains("/.baton/"))
        .collect();
    let before: Vec<String> = before
        .into_iter()
        .filter(|p| !p.contains("/.baton/"))
        .collect();
    assert_eq!(after, before);
    c.close().await;
}

/// A word argument outside its set says which words it takes: in the
/// message, for the agent, not only in `details.valid`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_word_is_answered_with_the_words_allowed() {
    let repo = Repo::new();
    let c = spawn(repo.path(), &[], &[]).await;
    let e = c
        .err(
            "workspace_list",
            json!({"status": "done"}),
            "invalid_parameter",
        )
        .await;
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("in_progress") && message.contains("awaiting_human"),
        "{e}"
    );
    let e = c
        .err(
            "init",
            json!({"spec_name": "x", "effort": 3}),
            "invalid_parameter",
        )
        .await;
    assert_eq!(
        e["message"], "effort must be one of S, M, L; got the number 3",
        "{e}"
    );
    assert!(!repo.specs().exists(), "nothing was written");
    c.close().await;
}
