//! The working tree as the watch of a command sees it: every path `git
//! status` lists (changed, staged, untracked; ignored files are not), with
//! its size and modification time, so a command that changes an already
//! dirty file is noticed too.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The tree now: `path\tsize\tmtime_ns` per listed path (`-` when gone),
/// plus `HEAD\t<commit>`.
pub fn snapshot(repo_root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(status) = crate::git::status(repo_root) {
        for path in status.changed {
            let meta = std::fs::symlink_metadata(repo_root.join(&path));
            let stamp = match meta {
                Ok(m) => format!(
                    "{}\t{}",
                    m.len(),
                    m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128
                ),
                Err(_) => "-".to_string(),
            };
            out.push(format!("{path}\t{stamp}"));
        }
    }
    if let Some(head) = crate::git::baseline(repo_root).and_then(|b| b.head) {
        out.push(format!("HEAD\t{head}"));
    }
    out.sort();
    out
}

/// The paths whose entry differs between `before` and `after` (`HEAD`
/// when the commit moved).
pub fn changed(before: &[String], after: &[String]) -> Vec<String> {
    let b: BTreeSet<&String> = before.iter().collect();
    let a: BTreeSet<&String> = after.iter().collect();
    let mut paths: Vec<String> = a
        .symmetric_difference(&b)
        .map(|e| e.split('\t').next().unwrap_or_default().to_string())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The paths of `violation` that are still changed in the working tree of
/// `repo_root` (not reverted yet).
pub fn still_changed(repo_root: &Path, violation: &super::binding::Violation) -> Vec<String> {
    let now = snapshot(repo_root);
    if violation.until_clean {
        let dirty: Vec<String> = now
            .iter()
            .map(|e| e.split('\t').next().unwrap_or_default().to_string())
            .collect();
        violation
            .paths
            .iter()
            .filter(|p| dirty.contains(p))
            .cloned()
            .collect()
    } else {
        changed(&violation.before, &now)
            .into_iter()
            .filter(|p| violation.paths.contains(p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_their_paths() {
        let before = vec!["a.rs\t1\t5".to_string(), "HEAD\tabc".to_string()];
        let after = vec![
            "a.rs\t2\t6".to_string(),
            "b.rs\t1\t1".to_string(),
            "HEAD\tabc".to_string(),
        ];
        assert_eq!(changed(&before, &after), ["a.rs", "b.rs"]);
        assert_eq!(changed(&before, &before), Vec::<String>::new());
        assert_eq!(changed(&["HEAD\ta".into()], &["HEAD\tb".into()]), ["HEAD"]);
    }
}
