//! The crate graph is the architecture (ARCHITECTURE.md): this test fails when
//! a crate gains a dependency that breaks the layering, before any code uses it.

use std::collections::BTreeSet;

fn deps(krate: &str) -> BTreeSet<String> {
    let path = format!("{}/../{krate}/Cargo.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: toml::Table = toml::from_str(&text).unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

fn internal(krate: &str) -> BTreeSet<String> {
    deps(krate)
        .into_iter()
        .filter(|d| d.starts_with("baton"))
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn leaf_crates_depend_on_no_other_baton_crate() {
    for leaf in ["baton-fs", "baton-workflow", "baton-text"] {
        assert_eq!(internal(leaf), set(&[]), "{leaf}");
    }
    // The event log and the transcript know only how to make baton's own
    // folders safely; the configuration only how to read the person's
    // file safely (no link, no FIFO, bounded).
    for leaf in ["baton-events", "baton-transcript", "baton-config"] {
        assert_eq!(internal(leaf), set(&["baton-fs"]), "{leaf}");
    }
    assert_eq!(
        deps("baton-fs"),
        set(&["libc"]),
        "baton-fs is the file system and nothing else"
    );
}

#[test]
fn the_state_store_knows_only_workflow_definitions_and_no_events() {
    assert_eq!(
        internal("baton-state"),
        set(&["baton-fs", "baton-workflow"])
    );
    let external = deps("baton-state");
    for forbidden in ["tokio", "rmcp", "axum", "baton-events"] {
        assert!(
            !external.contains(forbidden),
            "baton-state must not depend on {forbidden}"
        );
    }
}

#[test]
fn the_engine_is_pure() {
    assert_eq!(
        internal("baton-engine"),
        set(&["baton-state", "baton-workflow"])
    );
    let external: BTreeSet<String> = deps("baton-engine")
        .into_iter()
        .filter(|d| !d.starts_with("baton"))
        .collect();
    // Data crates only: no runtime, no clock, no file system helpers.
    assert_eq!(external, set(&["schemars", "serde", "serde_json"]));
}

#[test]
fn the_history_reads_state_definitions_reviews_and_the_tokenizer_only() {
    // The tokenizer is the text crate's: the history never pulls in the
    // manual search.
    assert_eq!(
        internal("baton-history"),
        set(&[
            "baton-engine",
            "baton-fs",
            "baton-state",
            "baton-text",
            "baton-workflow"
        ])
    );
    let external = deps("baton-history");
    for forbidden in [
        "tokio",
        "rmcp",
        "axum",
        "baton-mcp",
        "baton-events",
        "baton-config",
    ] {
        assert!(
            !external.contains(forbidden),
            "baton-history must not depend on {forbidden}"
        );
    }
}

#[test]
fn manual_search_sits_on_text_configuration_and_files_only() {
    // Manual search knows text, its configuration (resolved by
    // baton-config; it reads no environment itself) and safe files — no
    // state, engine, use case or transport.
    assert_eq!(
        internal("baton-manuals"),
        set(&["baton-config", "baton-fs", "baton-text"])
    );
    let external = deps("baton-manuals");
    for forbidden in ["tokio", "rmcp", "axum"] {
        assert!(
            !external.contains(forbidden),
            "baton-manuals must not depend on {forbidden}"
        );
    }
}

#[test]
fn use_cases_sit_between_adapters_and_the_engine() {
    // Transport-free: no MCP SDK, no HTTP framework, no async runtime.
    let external = deps("baton-usecases");
    for forbidden in ["rmcp", "axum", "tokio", "baton-mcp", "baton-transcript"] {
        assert!(
            !external.contains(forbidden),
            "baton-usecases must not depend on {forbidden}"
        );
    }
    let internal = internal("baton-usecases");
    for needed in [
        "baton-engine",
        "baton-state",
        "baton-events",
        "baton-workflow",
        "baton-config",
        "baton-history",
        // Typed manual search: the prompt's manual references.
        "baton-manuals",
    ] {
        assert!(internal.contains(needed), "baton-usecases uses {needed}");
    }
}

#[test]
fn handlers_sit_on_top() {
    let mcp = internal("baton-mcp");
    for needed in [
        "baton-usecases",
        "baton-engine",
        "baton-state",
        "baton-events",
        "baton-transcript",
    ] {
        assert!(mcp.contains(needed), "baton-mcp uses {needed}");
    }
    assert!(!mcp.contains("baton"), "nothing depends on the binary");
}

#[test]
fn the_binary_has_one_door_to_the_layers_below() {
    // The CLI calls use cases; it never opens the state store, the event
    // log or the run history itself, nor recomputes what the engine
    // decides. Besides the use cases and the MCP adapter it knows the
    // configuration, the workflow data (definitions, agent texts and scope
    // that `init` installs and the agent presets translate), the
    // notification adapter it starts beside `answer` and `run`, and the
    // manual search library, which is seed 002's own typed service.
    assert_eq!(
        internal("baton"),
        set(&[
            "baton-config",
            "baton-manuals",
            "baton-mcp",
            "baton-notify",
            "baton-usecases",
            "baton-workflow",
        ])
    );
}

#[test]
fn notifications_are_an_adapter_beside_mcp() {
    // Webhooks sit on the use cases (which say what a person hears) and the
    // event bus; they know no MCP and no HTTP server, and nothing below
    // the adapters knows them.
    let notify = deps("baton-notify");
    for needed in ["baton-usecases", "baton-events", "baton-config"] {
        assert!(notify.contains(needed), "baton-notify uses {needed}");
    }
    for forbidden in ["rmcp", "axum", "baton-mcp", "baton"] {
        assert!(
            !notify.contains(forbidden),
            "baton-notify must not depend on {forbidden}"
        );
    }
    for lower in [
        "baton-usecases",
        "baton-engine",
        "baton-state",
        "baton-events",
        "baton-config",
    ] {
        assert!(
            !internal(lower).contains("baton-notify"),
            "{lower} must not depend on baton-notify"
        );
    }
    // The dashboard lives in the HTTP adapter and starts notifiers there.
    assert!(internal("baton-mcp").contains("baton-notify"));
}

#[test]
fn the_team_store_sits_beside_the_stores_and_only_use_cases_call_it() {
    // Team mode's database store knows the file helpers only: no state,
    // no events, no use cases, no transport.
    assert_eq!(internal("baton-team"), set(&["baton-fs"]));
    let external = deps("baton-team");
    for forbidden in ["rmcp", "axum", "hyper", "baton-mcp", "baton-usecases"] {
        assert!(
            !external.contains(forbidden),
            "baton-team must not depend on {forbidden}"
        );
    }
    // Adapters reach it through the use cases only.
    for adapter in ["baton", "baton-mcp", "baton-notify"] {
        assert!(
            !internal(adapter).contains("baton-team"),
            "{adapter} must call the use cases, not baton-team"
        );
    }
    // Nothing below the use cases knows it.
    for lower in [
        "baton-engine",
        "baton-state",
        "baton-events",
        "baton-history",
        "baton-workflow",
        "baton-config",
    ] {
        assert!(
            !internal(lower).contains("baton-team"),
            "{lower} must not depend on baton-team"
        );
    }
}

#[test]
fn the_test_kit_is_for_tests_only() {
    let crates = std::fs::read_dir(format!("{}/..", env!("CARGO_MANIFEST_DIR"))).unwrap();
    for entry in crates {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.starts_with("baton") && name != "baton-testkit" {
            assert!(
                !deps(&name).contains("baton-testkit"),
                "{name} must take baton-testkit as a dev-dependency only"
            );
        }
    }
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    out
}

#[test]
fn only_the_cli_grants_auto() {
    // `--auto` is the person's (issue 19): an `AutoGrant` is made by
    // `baton run` alone — for a run it started itself, or at a terminal.
    // No MCP tool, HTTP route or hook ever makes one.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["baton-mcp", "baton-notify", "baton-history", "baton-engine"] {
        for (path, text) in sources(&root.join(krate).join("src")) {
            assert!(
                !text.contains("AutoGrant") && !text.contains("grant_auto"),
                "{} must not grant --auto",
                path.display()
            );
        }
    }
    let granting: Vec<String> = sources(&root.join("baton").join("src"))
        .into_iter()
        .filter(|(_, text)| text.contains("AutoGrant::") || text.contains("grant_auto("))
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(granting, ["driver.rs"], "only baton run grants --auto");
}
