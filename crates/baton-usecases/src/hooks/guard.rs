//! What a program run in a phase that may change the repository must still
//! not change: HEAD (the run's own command phases commit), and the
//! protected files — the clients' settings and hooks, `.mcp.json`,
//! `baton.toml`, git's configuration and hooks — in the repository, plus
//! the clients' settings in `$HOME`. The shell rules read a command line;
//! what a script or a build run from it does is not in the line, so the
//! hooks compare these before and after every such command.
//!
//! Cheap by design (it runs around every command of an implementer): no
//! git process — HEAD is read from git's files — and only the protected
//! files, hashed.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use baton_engine::scope::HeadBefore;

/// The most files of one protected folder that are compared.
const MAX_FILES_PER_FOLDER: usize = 200;

/// Files bigger than this are compared by size and modification time.
const MAX_HASHED: u64 = 1024 * 1024;

/// The key of HEAD's entry.
pub const HEAD_KEY: &str = "HEAD";

/// The guarded things now: `key\tstamp` entries, sorted. HEAD is
/// `HEAD\t<branch or ->\t<commit>`; a file is `<path>\t<sha-256>` (a path
/// in the repository relative to it, one in `$HOME` absolute).
pub fn snapshot(repo_root: &Path, protected: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(head) = read_head(repo_root) {
        out.push(format!(
            "{HEAD_KEY}\t{}\t{}",
            head.branch.as_deref().unwrap_or("-"),
            head.commit
        ));
    }
    for file in protected_files(repo_root, protected) {
        if let Some(stamp) = stamp(&repo_root.join(&file)) {
            out.push(format!("{file}\t{stamp}"));
        }
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from)
        && home.is_absolute()
    {
        for file in [
            ".claude/settings.json",
            ".codex/config.toml",
            ".codex/hooks.json",
            ".cursor/hooks.json",
        ] {
            let path = home.join(file);
            if let Some(stamp) = stamp(&path) {
                out.push(format!("{}\t{stamp}", path.display()));
            }
        }
    }
    out.sort();
    out
}

/// The entries of `keys` now (keys as [`snapshot`] names them): what a
/// guarded change is compared with until it is undone.
pub fn entries_now(repo_root: &Path, keys: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for key in keys {
        if key == HEAD_KEY {
            if let Some(head) = read_head(repo_root) {
                out.push(format!(
                    "{HEAD_KEY}\t{}\t{}",
                    head.branch.as_deref().unwrap_or("-"),
                    head.commit
                ));
            }
            continue;
        }
        let path = Path::new(key);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            repo_root.join(path)
        };
        if let Some(stamp) = stamp(&full) {
            out.push(format!("{key}\t{stamp}"));
        }
    }
    out
}

/// The keys whose entries differ between `before` and `after` (a file
/// that appeared or went away included).
pub fn changed(before: &[String], after: &[String]) -> Vec<String> {
    let key = |e: &String| e.split('\t').next().unwrap_or_default().to_string();
    let mut keys: Vec<String> = before
        .iter()
        .filter(|e| !after.contains(e))
        .chain(after.iter().filter(|e| !before.contains(e)))
        .map(key)
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Of `keys`, those whose entry in `now` is not what it was in `before`.
pub fn still_changed(keys: &[String], before: &[String], now: &[String]) -> Vec<String> {
    let entry = |list: &[String], k: &str| {
        list.iter()
            .find(|e| e.split('\t').next() == Some(k))
            .cloned()
    };
    keys.iter()
        .filter(|k| entry(before, k) != entry(now, k))
        .cloned()
        .collect()
}

/// Where HEAD was in a snapshot.
pub fn head_in(snapshot: &[String]) -> Option<HeadBefore> {
    let entry = snapshot
        .iter()
        .find_map(|e| e.strip_prefix(&format!("{HEAD_KEY}\t")))?;
    let (branch, commit) = entry.split_once('\t')?;
    Some(HeadBefore {
        branch: (branch != "-").then(|| branch.to_string()),
        commit: commit.to_string(),
    })
}

/// HEAD from git's own files: the branch it is on and the commit.
pub fn read_head(repo_root: &Path) -> Option<HeadBefore> {
    let git_dir = git_dir(repo_root)?;
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| {
            let c = PathBuf::from(c.trim());
            if c.is_absolute() { c } else { git_dir.join(c) }
        })
        .unwrap_or_else(|| git_dir.clone());
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    match head.strip_prefix("ref: ") {
        Some(reference) => {
            let branch = reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_string();
            let commit = [&git_dir, &common]
                .iter()
                .find_map(|d| std::fs::read_to_string(d.join(reference)).ok())
                .map(|c| c.trim().to_string())
                .or_else(|| packed_ref(&common, reference))
                // A branch without a commit yet.
                .unwrap_or_default();
            Some(HeadBefore {
                branch: Some(branch),
                commit,
            })
        }
        None => Some(HeadBefore {
            branch: None,
            commit: head.to_string(),
        }),
    }
}

fn packed_ref(common: &Path, reference: &str) -> Option<String> {
    let text = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    text.lines().find_map(|l| {
        let (commit, name) = l.split_once(' ')?;
        (name == reference).then(|| commit.to_string())
    })
}

/// The repository's git folder: `.git`, or where a `.git` file points
/// (a worktree, a submodule).
fn git_dir(repo_root: &Path) -> Option<PathBuf> {
    let dot_git = repo_root.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
    Some(if target.is_absolute() {
        target
    } else {
        repo_root.join(target)
    })
}

/// The repository-relative files the protected patterns name that exist
/// now. Of git's folder only its configuration and hooks (the rest is
/// git's own work, and HEAD is compared by itself).
fn protected_files(repo_root: &Path, protected: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for pattern in protected {
        if pattern.starts_with(".git/") || pattern == ".git" {
            continue;
        }
        let literal: String = pattern
            .split('/')
            .take_while(|part| !part.contains('*'))
            .collect::<Vec<_>>()
            .join("/");
        if literal.is_empty() || literal.starts_with(".baton") {
            continue;
        }
        if literal == *pattern {
            out.push(literal);
            continue;
        }
        let mut found = Vec::new();
        list_files(&repo_root.join(&literal), &literal, &mut found);
        out.extend(
            found
                .into_iter()
                .filter(|f| baton_engine::scope::paths::matches(pattern, f)),
        );
    }
    let git = git_dir(repo_root);
    if let Some(git) = git.filter(|g| g.starts_with(repo_root)) {
        let rel = git
            .strip_prefix(repo_root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| ".git".into());
        out.push(format!("{rel}/config"));
        let mut hooks = Vec::new();
        list_files(&git.join("hooks"), &format!("{rel}/hooks"), &mut hooks);
        out.extend(hooks.into_iter().filter(|h| !h.ends_with(".sample")));
    }
    out.sort();
    out.dedup();
    out
}

/// Up to [`MAX_FILES_PER_FOLDER`] files below `dir` (links not followed),
/// named `prefix/…`.
fn list_files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let mut stack = vec![(dir.to_path_buf(), prefix.to_string())];
    let mut seen = 0;
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let rel = format!("{prefix}/{name}");
            if kind.is_dir() {
                stack.push((entry.path(), rel));
            } else {
                out.push(rel);
                seen += 1;
                if seen >= MAX_FILES_PER_FOLDER {
                    return;
                }
            }
        }
    }
}

/// A file's stamp: the SHA-256 of its bytes (size and modification time
/// for a big one, the target for a link); `None` when it does not exist.
fn stamp(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return Some(format!("link:{}", std::fs::read_link(path).ok()?.display()));
    }
    if !meta.is_file() {
        return Some("not-a-file".into());
    }
    if meta.len() > MAX_HASHED {
        use std::os::unix::fs::MetadataExt;
        return Some(format!(
            "big:{}:{}.{}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        ));
    }
    let bytes = std::fs::read(path).ok()?;
    Some(
        Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .expect("git")
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn head_and_protected_files_are_seen_to_change_and_to_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "one"]);
        let protected: Vec<String> = [".claude/**", ".mcp.json", ".git/**", ".baton/**"]
            .map(String::from)
            .to_vec();
        let before = snapshot(root, &protected);
        let head = head_in(&before).expect("HEAD");
        assert_eq!(head.branch.as_deref(), Some("main"));
        assert_eq!(head.commit.len(), 40);
        assert_eq!(
            changed(&before, &snapshot(root, &protected)),
            Vec::<String>::new()
        );

        // A commit, a changed setting and a new .mcp.json, as a script makes them.
        std::fs::write(root.join("a.txt"), "b").unwrap();
        git(root, &["commit", "-qam", "two"]);
        std::fs::write(root.join(".claude/settings.json"), r#"{"hooks":{}}"#).unwrap();
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        let after = snapshot(root, &protected);
        let keys = changed(&before, &after);
        assert_eq!(
            keys,
            [
                ".claude/settings.json",
                ".git/hooks/pre-commit",
                ".mcp.json",
                "HEAD"
            ]
        );
        // Put back one by one.
        git(root, &["reset", "-q", "--soft", &head.commit]);
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        std::fs::remove_file(root.join(".mcp.json")).unwrap();
        let now = snapshot(root, &protected);
        assert_eq!(
            still_changed(&keys, &before, &now),
            [".git/hooks/pre-commit"]
        );
        // Packed refs and another branch.
        git(root, &["pack-refs", "--all"]);
        assert_eq!(read_head(root), Some(head.clone()));
        git(root, &["switch", "-q", "-c", "other"]);
        let moved = read_head(root).unwrap();
        assert_eq!(moved.branch.as_deref(), Some("other"));
        assert_eq!(moved.commit, head.commit);
    }
}
