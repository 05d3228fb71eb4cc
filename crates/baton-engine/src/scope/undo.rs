//! Undoing a change a command left outside the phase's scope: the paths
//! the agent may revert, and moving HEAD back to where it was.

use super::paths;
use super::shell::Word;

/// HEAD as it was before a command moved it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadBefore {
    /// The branch HEAD was on (`None`: detached).
    pub branch: Option<String>,
    /// The commit.
    pub commit: String,
}

/// Whether `git <sub> <args>` only moves HEAD back to where it was before
/// a command moved it: `reset --soft <commit>` (the commit, or at least 7
/// of its first digits) or `switch`/`checkout <branch>`.
pub(crate) fn moves_head_back(head_before: Option<&HeadBefore>, sub: &str, args: &[Word]) -> bool {
    let Some(before) = head_before else {
        return false;
    };
    if args.iter().any(|w| w.dynamic) {
        return false;
    }
    let words: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    match (sub, words.as_slice()) {
        ("reset", ["--soft", commit]) => {
            commit.len() >= 7
                && before.commit.starts_with(commit)
                && commit.bytes().all(|b| b.is_ascii_hexdigit())
        }
        ("switch", [branch]) => before.branch.as_deref() == Some(*branch),
        _ => false,
    }
}

/// Whether `args` name only paths the agent may revert (options in
/// `options` aside; no option beyond them, nothing computed).
pub(crate) fn reverts(revertable: &[String], args: &[Word], options: &[&str]) -> bool {
    let mut paths = 0;
    for w in args {
        if w.dynamic {
            return false;
        }
        if options.contains(&w.text.as_str()) {
            continue;
        }
        if w.text.starts_with('-') {
            return false;
        }
        let path = paths::normalise(w.text.trim_start_matches("./")).unwrap_or_default();
        if !revertable.contains(&path) {
            return false;
        }
        paths += 1;
    }
    paths > 0
}
