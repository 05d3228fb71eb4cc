//! docs/errors.md is the closed set a client may code against: every error
//! code, guard rule (`details.rule` of `blocked`) and team-mode cause
//! (`details.team` of `team_unavailable`) that baton's sources emit is
//! listed there, and everything listed there is emitted somewhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `crates/*/src`, cut at its first `#[cfg(test)]`
/// (unit tests hold sample JSON that is not baton's output). The test kit is
/// left out: its scripted model servers speak other products' error codes.
fn sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let crates = workspace_root().join("crates");
    let mut stack: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n != "baton-testkit"))
        .map(|p| p.join("src"))
        .filter(|p| p.is_dir())
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let text = match text.find("#[cfg(test)]") {
                    Some(at) => text[..at].to_string(),
                    None => text,
                };
                out.push((path, text));
            }
        }
    }
    assert!(out.len() > 100, "found only {} source files", out.len());
    out
}

/// The snake_case word in double quotes right after each occurrence of
/// `marker` (spaces allowed between).
fn quoted_after(text: &str, marker: &str, into: &mut BTreeSet<String>) {
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        rest = &rest[at + marker.len()..];
        let tail = rest.trim_start();
        if let Some(word) = tail.strip_prefix('"')
            && let Some(end) = word.find('"')
        {
            let word = &word[..end];
            if !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                into.insert(word.to_string());
            }
        }
    }
}

/// Match arms `Type::Variant … => "word"` of the enums that name codes.
fn arms_of(text: &str, type_prefix: &str, into: &mut BTreeSet<String>) {
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with(type_prefix)
            && let Some((_, right)) = line.split_once("=> ")
        {
            quoted_after(&format!("@{right}"), "@", into);
        }
    }
}

struct Emitted {
    codes: BTreeSet<String>,
    rules: BTreeSet<String>,
    team: BTreeSet<String>,
}

fn emitted() -> Emitted {
    let mut e = Emitted {
        codes: BTreeSet::new(),
        rules: BTreeSet::new(),
        team: BTreeSet::new(),
    };
    for (_, text) in sources() {
        arms_of(&text, "ErrorCode::", &mut e.codes);
        arms_of(&text, "ManualErrorCode::", &mut e.codes);
        // The dashboard's HTTP status → code mapping.
        arms_of(&text, "StatusCode::", &mut e.codes);
        quoted_after(&text, "\"code\":", &mut e.codes);
        quoted_after(&text, "rule:", &mut e.rules);
        quoted_after(&text, "\"rule\":", &mut e.rules);
        arms_of(&text, "Refusal::", &mut e.rules);
        arms_of(&text, "TeamError::", &mut e.team);
    }
    e
}

/// The first column (`` `word` ``) of the table whose header row starts
/// with `| {first_header} |`.
fn documented(doc: &str, first_header: &str) -> BTreeSet<String> {
    let header = format!("| {first_header} |");
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(&header));
    assert!(
        lines.next().is_some(),
        "docs/errors.md has no table starting {header}"
    );
    lines
        .skip(1) // the |---| row
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cell = l.trim_start_matches('|').split('|').next()?.trim();
            Some(cell.trim_matches('`').to_string())
        })
        .collect()
}

fn assert_same(what: &str, emitted: &BTreeSet<String>, documented: &BTreeSet<String>) {
    let undocumented: Vec<_> = emitted.difference(documented).collect();
    let unused: Vec<_> = documented.difference(emitted).collect();
    assert!(
        undocumented.is_empty() && unused.is_empty(),
        "{what}: emitted but not in docs/errors.md: {undocumented:?}; \
         in docs/errors.md but emitted nowhere: {unused:?}"
    );
}

#[test]
fn every_code_rule_and_team_cause_is_documented_and_every_documented_one_is_emitted() {
    let doc = std::fs::read_to_string(workspace_root().join("docs/errors.md")).unwrap();
    let e = emitted();
    // The scan finds what it must: a few well-known members of each set.
    for (set, known) in [
        (&e.codes, "invalid_parameter"),
        (&e.codes, "needs_narrow_scope"),
        (&e.rules, "artifact_missing"),
        (&e.rules, "person_only"),
        (&e.team, "team_unreachable"),
    ] {
        assert!(set.contains(known), "the source scan lost {known}: {set:?}");
    }
    assert_same("error codes", &e.codes, &documented(&doc, "code"));
    assert_same("guard rules", &e.rules, &documented(&doc, "rule"));
    assert_same("team causes", &e.team, &documented(&doc, "cause"));
}
