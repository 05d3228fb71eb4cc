//! What `tools/list` costs the model, per profile, and whether every client
//! can read the schemas: measured on the real binary over stdio.
//!
//! "What the model sees" is each tool's name, description, inputSchema and
//! outputSchema as compact JSON; the wire size is the whole JSON-RPC
//! `result` (annotations included). Both are printed (run with
//! `--nocapture`) and bounded: the default profile ≤ 13 KB, every tool
//! together ≤ 40 KB.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use crate::common::{Repo, baton_bin};
use serde_json::{Value, json};

/// The bound on the default profile's `tools/list` (bytes).
const DEFAULT_PROFILE_BOUND: usize = 13_000;
/// The bound on `tools/list` with every tool (bytes).
const ALL_TOOLS_BOUND: usize = 40_000;

/// `tools/list` of `baton serve` with `args`, as the JSON-RPC result.
fn list(repo: &Repo, args: &[&str]) -> Value {
    let mut child = Command::new(baton_bin())
        .arg("serve")
        .args(args)
        .arg("--no-transcript")
        .env_remove("BATON_TOOLS")
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"size","version":"0"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut result = Value::Null;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if message["id"] == 2 {
            result = message["result"].clone();
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();
    assert!(result.is_object(), "no tools/list result for {args:?}");
    result
}

fn compact(v: &Value) -> usize {
    serde_json::to_vec(v).unwrap().len()
}

/// (what the model sees, wire bytes, tool count) of one `tools/list` result.
fn sizes(result: &Value) -> (usize, usize, usize) {
    let tools = result["tools"].as_array().unwrap();
    let seen = tools
        .iter()
        .map(|t| {
            compact(&json!({
                "name": t["name"],
                "description": t["description"],
                "inputSchema": t["inputSchema"],
                "outputSchema": t["outputSchema"],
            }))
        })
        .sum();
    (seen, compact(result), tools.len())
}

#[test]
fn tools_list_fits_its_budget_per_profile() {
    let repo = Repo::new();
    let mut table = String::from(
        "| profile | tools | what the model sees (bytes) | tools/list result (bytes) |\n|---|---|---|---|\n",
    );
    let mut measured = Vec::new();
    for (label, args) in [
        ("default (pipeline)", vec![]),
        ("issue", vec!["--tools", "issue"]),
        ("manuals", vec!["--tools", "manuals"]),
        ("recovery", vec!["--tools", "recovery"]),
        ("history", vec!["--tools", "history"]),
        ("all", vec!["--tools", "all"]),
    ] {
        let (seen, wire, count) = sizes(&list(&repo, &args));
        table.push_str(&format!("| {label} | {count} | {seen} | {wire} |\n"));
        measured.push((label, seen, wire));
    }
    println!("{table}");
    let wire = |label: &str| measured.iter().find(|m| m.0 == label).unwrap().2;
    assert!(
        wire("default (pipeline)") <= DEFAULT_PROFILE_BOUND,
        "the default profile's tools/list is over {DEFAULT_PROFILE_BOUND} bytes:\n{table}"
    );
    assert!(
        wire("all") <= ALL_TOOLS_BOUND,
        "tools/list with every tool is over {ALL_TOOLS_BOUND} bytes:\n{table}"
    );
}

/// Keywords a published input schema may use: JSON Schema's standard ones.
const STANDARD_FORMATS: &[&str] = &["date-time", "date", "time", "uri", "email", "uuid"];

/// Walks a schema, calling `f(path, node)` on every object node.
fn walk(path: &str, node: &Value, f: &mut dyn FnMut(&str, &serde_json::Map<String, Value>)) {
    match node {
        Value::Object(map) => {
            f(path, map);
            for (k, v) in map {
                walk(&format!("{path}/{k}"), v, f);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(&format!("{path}/{i}"), v, f);
            }
        }
        _ => {}
    }
}

/// Every input of every tool can be entered from a client that converts
/// typed values by a property's own `type` (the MCP Inspector CLI): plain
/// types, objects inline, no `$ref`, no non-standard `format`; and every
/// array, input or output, says what its items are.
#[test]
fn every_published_schema_is_plain_enough_for_every_client() {
    let repo = Repo::new();
    let result = list(&repo, &["--tools", "all"]);
    let mut problems = Vec::new();
    for tool in result["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        for key in ["inputSchema", "outputSchema"] {
            walk(&format!("{name}.{key}"), &tool[key], &mut |path, node| {
                if node.contains_key("$ref") || node.contains_key("$defs") {
                    problems.push(format!("{path}: $ref/$defs"));
                }
                if let Some(f) = node.get("format").and_then(Value::as_str)
                    && !STANDARD_FORMATS.contains(&f)
                {
                    problems.push(format!("{path}: format {f:?}"));
                }
                // Strict clients (VS Code, OpenAI's tool check, Ajv-based
                // linters) refuse an array schema without `items`.
                let is_array = match node.get("type") {
                    Some(Value::String(t)) => t == "array",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
                    _ => false,
                };
                if is_array && !node.get("items").is_some_and(Value::is_object) {
                    problems.push(format!("{path}: an array without items"));
                }
            });
        }
        let input = &tool["inputSchema"];
        let required: Vec<&str> = input["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let no_properties = serde_json::Map::new();
        let properties = input["properties"].as_object().unwrap_or(&no_properties);
        for (prop, schema) in properties {
            let plain = schema["type"].is_string()
                || (schema["type"].is_array() && required.contains(&prop.as_str()));
            if !plain {
                problems.push(format!("{name}.{prop}: no plain type ({})", schema["type"]));
            }
        }
        assert_eq!(input["type"], "object", "{name}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
