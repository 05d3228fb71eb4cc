//! Nothing outside the manuals root is ever read.

mod common;

use common::JsonTools;

use baton_manuals::ManualErrorCode as Code;
use common::{Fixture, code, write};
use serde_json::json;

#[test]
fn dotdot_segments_are_out_of_scope() {
    let f = Fixture::new();
    write(&f.dir.path().join("secret.md"), "# secret\n");
    let s = f.service();
    for path in [
        "../secret.md",
        "../../secret.md",
        "sub/../../secret.md",
        "..\\secret.md",
    ] {
        assert_eq!(
            code(s.scan_json(json!({"manual_id": "m1", "path": path}))),
            Code::OutOfScope,
            "{path}"
        );
        assert_eq!(
            code(s.read_json(json!({"ref": {"manual_id": "m1", "path": path}}))),
            Code::OutOfScope,
            "{path}"
        );
    }
}

#[test]
fn absolute_paths_are_out_of_scope() {
    let f = Fixture::new();
    let s = f.service();
    let abs = f.root.join("m1/rules.md");
    for path in [
        abs.to_string_lossy().to_string(),
        "/etc/passwd".into(),
        "C:\\x.md".into(),
    ] {
        assert_eq!(
            code(s.scan_json(json!({"manual_id": "m1", "path": path}))),
            Code::OutOfScope,
            "{path}"
        );
    }
}

#[test]
fn nul_bytes_are_invalid() {
    let f = Fixture::new();
    let s = f.service();
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1", "path": "rules.md\u{0}.txt"}))),
        Code::InvalidPath
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1\u{0}", "path": "rules.md"}))),
        Code::InvalidParameter
    );
    assert_eq!(
        code(s.find_json(json!({"query": "a\u{0}b"}))),
        Code::InvalidParameter
    );
}

#[cfg(unix)]
#[test]
fn symlinked_file_pointing_outside_is_out_of_scope_and_never_indexed() {
    let f = Fixture::new();
    let outside = f.dir.path().join("outside.md");
    write(&outside, "# 秘密\n社外秘の情報です。\n");
    std::os::unix::fs::symlink(&outside, f.root.join("m1/link.md")).expect("symlink");
    let s = f.service();
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1", "path": "link.md"}))),
        Code::OutOfScope
    );
    assert_eq!(
        code(s.read_json(json!({"ref": {"manual_id": "m1", "path": "link.md"}}))),
        Code::OutOfScope
    );
    let found = s
        .find_json(json!({"query": "社外秘", "expand_scope": false}))
        .expect("find");
    assert_eq!(found.summary.candidates, 0);
    let listing = s.ls_json(json!({"id": "m1"})).expect("ls");
    assert!(listing.items.iter().all(|i| i.name != "link.md"));
}

#[cfg(unix)]
#[test]
fn symlinked_directory_pointing_outside_is_out_of_scope() {
    let f = Fixture::new();
    let outside = f.dir.path().join("elsewhere");
    write(&outside.join("x.md"), "# x\n外部\n");
    std::os::unix::fs::symlink(&outside, f.root.join("m1/escape")).expect("symlink");
    std::os::unix::fs::symlink(&outside, f.root.join("evil")).expect("symlink");
    let s = f.service();
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1", "path": "escape/x.md"}))),
        Code::OutOfScope
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "evil", "path": "x.md"}))),
        Code::OutOfScope
    );
    assert_eq!(
        code(s.ls_json(json!({"id": "m1/escape"}))),
        Code::OutOfScope
    );
    let roots = s.ls_json(json!({})).expect("ls");
    assert!(
        roots.items.iter().all(|i| i.id != "evil"),
        "symlinked manuals are not listed"
    );
}

#[cfg(unix)]
#[test]
fn a_dangling_symlink_is_not_found_not_an_internal_error() {
    let f = Fixture::new();
    std::os::unix::fs::symlink(f.dir.path().join("nothing"), f.root.join("m1/dangling"))
        .expect("symlink");
    std::os::unix::fs::symlink("missing.md", f.root.join("m1/gone.md")).expect("symlink");
    let s = f.service();
    assert_eq!(
        code(s.ls_json(json!({"id": "m1/dangling"}))),
        Code::NotFound
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1", "path": "gone.md"}))),
        Code::NotFound
    );
    // The rest of the manual still works.
    assert!(s.ls_json(json!({"id": "m1"})).is_ok());
}

#[cfg(unix)]
#[test]
fn symlink_inside_the_manual_is_readable() {
    let f = Fixture::new();
    std::os::unix::fs::symlink(f.root.join("m1/rules.md"), f.root.join("m1/alias.md"))
        .expect("symlink");
    let out = f
        .service()
        .scan_json(json!({"manual_id": "m1", "path": "alias.md"}))
        .expect("scan");
    assert!(out.text.starts_with("# 総則"));
}

#[test]
fn hidden_entries_are_forbidden_and_other_files_invalid() {
    let f = Fixture::new();
    f.write("m1/.git/config.md", "# hidden\n");
    f.write(".hidden/a.md", "# hidden manual\n");
    let s = f.service();
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1", "path": ".git/config.md"}))),
        Code::Forbidden
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": ".hidden", "path": "a.md"}))),
        Code::Forbidden
    );
    assert_eq!(
        code(s.scan_json(json!({"manual_id": "m1", "path": "notes.txt"}))),
        Code::InvalidPath
    );
    assert!(
        s.ls_json(json!({}))
            .expect("ls")
            .items
            .iter()
            .all(|i| !i.id.starts_with('.'))
    );
}

#[test]
fn nfd_file_names_resolve_from_nfc_paths() {
    let f = Fixture::new();
    // "が" decomposed (NFD) on disk, requested precomposed (NFC).
    f.write("m1/か\u{3099}いド.md", "# 概要\n本文\n");
    let out = f
        .service()
        .scan_json(json!({"manual_id": "m1", "path": "がいド.md"}))
        .expect("scan");
    assert!(out.text.starts_with("# 概要"));
}
