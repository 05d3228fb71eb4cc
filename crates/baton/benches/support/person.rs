//! The person a benchmark's pipeline asks: baton takes a checkpoint's
//! answer from the person only (docs/pipeline.md), so a bench answers as
//! one, with `baton answer` at a terminal (`script` gives it one).

#![allow(
    dead_code,
    reason = "shared by several bench targets; each uses part of it"
)]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The option a bench picks from a question's `options`: `approve`,
/// `proceed` or `done` when offered, else the first.
pub fn pick(options: &Value) -> &str {
    let options: Vec<&str> = options
        .as_array()
        .map(|o| o.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    ["approve", "proceed", "done"]
        .into_iter()
        .find(|p| options.contains(p))
        .or(options.first().copied())
        .unwrap_or("approve")
}

/// The person answers the run `ws` with `pick` by `bin answer` at a
/// terminal, in `repo`.
pub fn answer_at_terminal(bin: &Path, repo: &Path, ws: &str, pick: &str) {
    let command = format!("'{}' answer '{ws}' '{pick}'", bin.display());
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(repo)
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux) runs `baton answer` at a terminal");
    assert!(
        out.status.success(),
        "baton answer {ws} {pick}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
