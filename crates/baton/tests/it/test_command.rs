//! The test command (`./scripts/test`) ends on one line, `N passed, N
//! failed`, summed over every cargo test binary and the client suites.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn scripts() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts"))
}

/// Runs scripts/summarize-tests on `cargo_output` with suite counts in `dir`.
fn summarize(cargo_output: &str, dir: &Path, failed_steps: u32) -> String {
    let mut child = Command::new(scripts().join("summarize-tests"))
        .arg(dir)
        .arg(failed_steps.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run scripts/summarize-tests");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cargo_output.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_closing_line_sums_cargo_tests_and_client_suites() {
    let dir = tempfile::tempdir().unwrap();
    let cargo = "\
running 3 tests
test a ... ok
test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

running 12 tests
test result: FAILED. 10 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.2s
   Doc-tests baton_state
test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
    assert_eq!(summarize(cargo, dir.path(), 0), "13 passed, 2 failed\n");
    std::fs::write(dir.path().join("sdk_suite.mjs"), "120 0\n").unwrap();
    std::fs::write(dir.path().join("python-smoke"), "2 1\n").unwrap();
    assert_eq!(summarize(cargo, dir.path(), 0), "135 passed, 3 failed\n");
    // A failed fmt or clippy step counts as a failure.
    assert_eq!(summarize(cargo, dir.path(), 2), "135 passed, 5 failed\n");
    assert_eq!(summarize("", dir.path(), 0), "122 passed, 1 failed\n");
}

#[test]
fn a_suite_closing_line_is_read_from_its_output() {
    assert_eq!(
        common::suite_counts("FAIL x\npython mcp client smoke: 2 passed, 0 failed\n"),
        Some((2, 0))
    );
    assert_eq!(
        common::suite_counts("116 passed, 4 failed\n"),
        Some((116, 4))
    );
    assert_eq!(common::suite_counts("crashed\n"), None);
}

/// The test command prints the summary last and fails when it is not `… 0 failed`.
#[test]
fn the_test_command_ends_on_the_summary() {
    let script = std::fs::read_to_string(scripts().join("test")).unwrap();
    let tail: Vec<&str> = script
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(6)
        .collect();
    assert!(
        tail.iter().any(|l| l.trim() == "echo \"$summary\""),
        "{tail:?}"
    );
    assert!(script.contains("summarize-tests"));
    // Test packages go into the project, never into the machine.
    for line in script.lines().filter(|l| l.contains("pip install")) {
        assert!(line.contains(".venv/bin/python3 -m pip install"), "{line}");
    }
    for line in script
        .lines()
        .filter(|l| l.contains("npm ") && !l.trim_start().starts_with('#'))
    {
        assert!(
            !line.contains(" -g") && !line.contains("--global"),
            "{line}"
        );
    }
}
