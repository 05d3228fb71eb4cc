//! After a guarded command of a phase that may change the repository
//! ([`super::guard`]): HEAD and the protected files must be as they were.

use chrono::Utc;

use baton_engine::scope;

use std::path::Path;

use super::binding::{self, Violation, Watch};
use super::guard;

/// After a guarded command (a phase that may change the repository): HEAD
/// and the protected files must be as they were. Forgets the watch,
/// records what changed in `session`'s file, and returns what the agent
/// is told (`None`: nothing changed).
pub(super) fn command_ended(
    root: &Path,
    session: &str,
    workspace: &str,
    rules: &scope::Rules,
    command: &str,
    watch: &Watch,
) -> Option<String> {
    let after = guard::snapshot(root, &rules.protected_user_paths());
    let changed: Vec<String> = guard::changed(&watch.tree, &after)
        .into_iter()
        // A scope that lets the agent commit lets HEAD move.
        .filter(|k| k != guard::HEAD_KEY || rules.git.is_empty())
        .collect();
    let violation = (!changed.is_empty()).then(|| Violation {
        paths: changed.clone(),
        before: watch.tree.clone(),
        command: command.chars().take(300).collect(),
        at: Utc::now(),
        until_clean: false,
        guard: true,
    });
    let found = violation.is_some();
    let _ = binding::modify(root, session, |s| {
        s.watches.retain(|w| w.call != watch.call);
        if let Some(v) = violation {
            s.violation = Some(v);
        }
    });
    if !found {
        return None;
    }
    let mut undo: Vec<String> = Vec::new();
    if changed.iter().any(|k| k == guard::HEAD_KEY)
        && let Some(head) = guard::head_in(&watch.tree)
    {
        undo.push(match (&head.branch, guard::read_head(root)) {
            (Some(branch), Some(now)) if now.branch.as_ref() != Some(branch) => {
                format!("`git switch {branch}` (HEAD left the branch)")
            }
            _ => format!(
                "`git reset --soft {}` (HEAD moved: commits are the run's own command phases')",
                head.commit
            ),
        });
    }
    let files: Vec<&String> = changed.iter().filter(|k| *k != guard::HEAD_KEY).collect();
    if !files.is_empty() {
        undo.push(format!(
            "restore {} as it was (`git checkout -- <file>` for a tracked file, delete a new one)",
            files
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Some(format!(
        "baton: this command changed {} — the history or protected files no agent changes while run {} is bound ({}). Undo it now: {}; run {} does not go on while the change is there.",
        changed.join(", "),
        workspace,
        rules.phase,
        undo.join("; "),
        workspace
    ))
}
