//! The transcript stays bounded on disk: huge messages are recorded as their
//! size, hash and start; files rotate at their size; the folder keeps to its
//! budget.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use crate::common::{Repo, baton_bin};
use serde_json::{Value, json};

/// Every transcript entry in the repository, oldest file first, and the
/// total size of the transcript files.
fn transcript(repo: &Repo) -> (Vec<Value>, u64, usize) {
    let dir = repo.path().join(".baton/logs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut entries = Vec::new();
    let mut total = 0;
    for f in &files {
        total += std::fs::metadata(f).unwrap().len();
        for line in std::fs::read_to_string(f).unwrap().lines() {
            entries.push(serde_json::from_str(line).unwrap());
        }
    }
    (entries, total, files.len())
}

#[test]
fn a_15_mb_request_costs_the_transcript_a_few_hundred_bytes_and_files_rotate() {
    let repo = Repo::new();
    let mut child = Command::new(baton_bin())
        .args(["serve", "--tools", "all"])
        .env("BATON_TRANSCRIPT_MAX_PAYLOAD", "4096")
        .env("BATON_TRANSCRIPT_MAX_BYTES", "8192")
        .env("BATON_TRANSCRIPT_MAX_TOTAL_BYTES", "40000")
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    {
        let mut send = |message: &Value| writeln!(stdin, "{message}").unwrap();
        send(
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
        );
        send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        let huge = "x".repeat(15 * 1024 * 1024);
        send(
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"init","arguments":{"spec_name": huge}}}),
        );
        for id in 3..300 {
            send(&json!({"jsonrpc":"2.0","id":id,"method":"ping"}));
        }
    }
    drop(stdin);
    let mut answered = 0;
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 {
        answered += 1;
        line.clear();
    }
    assert_eq!(answered, 299, "every request answered");
    assert!(child.wait().unwrap().success());

    let (entries, total, files) = transcript(&repo);
    assert!(files >= 3, "rotated: {files} files");
    assert!(total <= 40_000 + 8192 + 1024, "{total} bytes on disk");
    // The oldest files were pruned; the newest entries are there (requests
    // run concurrently, so the last lines are the last few ids in any order).
    let newest = entries
        .iter()
        .filter_map(|e| e["request_id"].as_u64())
        .max()
        .unwrap();
    assert!(newest >= 290, "{newest}");
    assert!(
        !entries.iter().any(|e| e.to_string().len() > 8192),
        "no entry is large"
    );
}

#[test]
fn a_huge_request_keeps_its_identity_size_and_hash() {
    let repo = Repo::new();
    let mut child = Command::new(baton_bin())
        .args(["serve", "--tools", "all"])
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}})).unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"init","arguments":{"spec_name": "y".repeat(3_000_000)}}})
    )
    .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let (entries, total, _) = transcript(&repo);
    assert!(total < 16_384, "{total} bytes for a 3 MB request");
    let request = entries
        .iter()
        .find(|e| e["request_id"] == 7 && e["direction"] == "in")
        .expect("the request is recorded");
    assert_eq!(request["tool"], "init");
    let payload = &request["payload"];
    assert_eq!(payload["truncated"], true);
    assert!(payload["bytes"].as_u64().unwrap() > 3_000_000);
    assert_eq!(payload["sha256"].as_str().unwrap().len(), 64);
    assert!(payload["head"].as_str().unwrap().starts_with('{'));
    // The refusal is recorded whole: it is small.
    let answer = entries
        .iter()
        .find(|e| e["request_id"] == 7 && e["direction"] == "out")
        .expect("the answer is recorded");
    assert_eq!(answer["payload"]["result"]["isError"], true);
}

#[test]
fn transcript_limits_are_checked_at_start() {
    let repo = Repo::new();
    let out = Command::new(baton_bin())
        .arg("serve")
        .env("BATON_TRANSCRIPT_MAX_BYTES", "12")
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("BATON_TRANSCRIPT_MAX_BYTES"), "{stderr}");
}
