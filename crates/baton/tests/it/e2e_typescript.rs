//! baton through the official TypeScript MCP SDK client and the MCP
//! Inspector CLI (tests/ts, pinned in package.json/package-lock.json): the
//! suites run on the built binary with Node.js.
//!
//! Their dependencies live in the project (`tests/ts/node_modules`, made by
//! `npm ci --prefix tests/ts`, which `./scripts/test` runs); when they are
//! missing these tests fail and say how to install them.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::baton_bin;

fn ts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ts")
}

/// Fails loudly when Node.js or the suite's packages are missing.
fn require_dependencies() {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        _ => panic!(
            "Node.js (20 or later) is required for the TypeScript client suites: install it \
             (e.g. `apt-get install nodejs npm`; .ci/run does), then run ./scripts/test"
        ),
    }
    for package in ["sdk", "inspector"] {
        let manifest = ts_dir().join(format!(
            "node_modules/@modelcontextprotocol/{package}/package.json"
        ));
        assert!(
            manifest.exists(),
            "@modelcontextprotocol/{package} is missing from tests/ts/node_modules: run \
             `npm ci --prefix tests/ts` (./scripts/test does it)"
        );
    }
}

/// Runs `node tests/ts/<script> BATON`, echoes its output, and records its
/// check counts for the test command's summary line.
fn run_suite(script: &str) {
    require_dependencies();
    let out = Command::new("node")
        .arg(ts_dir().join(script))
        .arg(baton_bin())
        .current_dir(ts_dir())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    common::record_suite_counts(script, &stdout);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 passed"),
        "{script}: {last:?}"
    );
}

/// Every tool with good and bad input over stdio and streamable HTTP.
#[test]
fn typescript_sdk_client_calls_every_tool() {
    run_suite("sdk_suite.mjs");
}

/// The Inspector CLI lists the tools without warnings and drives the
/// confirmation call and a completePhase with object and boolean arguments.
#[test]
fn inspector_cli_drives_the_pipeline_and_the_issue_workflow() {
    run_suite("inspector_smoke.mjs");
}
