//! The verdict on a git command: its subcommand (global options skipped),
//! which forms only read, and what the phase's scope allows.

use super::programs::GIT_READ_ONLY;
use super::rules::{Rules, Verdict, deny};
use super::shell::Word;
use super::undo;

/// The git subcommand and the words after it (global options skipped);
/// `Err` names a global option baton refuses.
pub(super) fn git_subcommand(args: &[Word]) -> Result<Option<(&Word, &[Word])>, String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w.dynamic {
            return Err(format!("`git {}` (computed at run time)", w.text));
        }
        let t = w.text.as_str();
        match t {
            "--no-pager"
            | "-P"
            | "--paginate"
            | "-p"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--no-replace-objects"
            | "--bare"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs" => i += 1,
            "-c" | "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
            | "--config-env" | "--super-prefix" => {
                return Err(format!("`git {t}`"));
            }
            _ if t.starts_with("--git-dir=")
                || t.starts_with("--work-tree=")
                || t.starts_with("--exec-path")
                || t.starts_with("--config-env")
                || t.starts_with("--namespace=") =>
            {
                return Err(format!("`git {t}`"));
            }
            _ if t.starts_with('-') => return Err(format!("`git {t}`")),
            _ => return Ok(Some((w, &args[i + 1..]))),
        }
    }
    Ok(None)
}

/// Whether `git sub rest` only reads.
pub(super) fn git_read_only(sub: &str, rest: &[Word]) -> bool {
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let positional: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|t| !t.starts_with('-'))
        .collect();
    let any = |opts: &[&str]| {
        texts.iter().any(|t| {
            opts.iter()
                .any(|o| t == o || t.starts_with(&format!("{o}=")))
        })
    };
    if rest.iter().any(|w| w.dynamic)
        && !matches!(
            sub,
            "status" | "log" | "show" | "diff" | "ls-files" | "grep" | "blame"
        )
    {
        return false;
    }
    // Options that write a file or run a program, whatever the subcommand.
    if any(&[
        "--output",
        "--ext-diff",
        "--open-files-in-pager",
        "-O",
        "--textconv",
        "--exec",
        "--upload-pack",
        "--receive-pack",
    ]) {
        return false;
    }
    if GIT_READ_ONLY.contains(&sub) {
        return true;
    }
    match sub {
        "branch" => {
            positional.is_empty()
                && !any(&[
                    "-d",
                    "-D",
                    "--delete",
                    "-m",
                    "-M",
                    "--move",
                    "-c",
                    "-C",
                    "--copy",
                    "-f",
                    "--force",
                    "-u",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                    "-t",
                    "--track",
                ])
        }
        "tag" => {
            positional.is_empty()
                || any(&["-l", "--list"]) && !any(&["-d", "--delete", "-f", "-a", "-s", "-m"])
        }
        "stash" => matches!(positional.first(), Some(&"list") | Some(&"show")),
        "remote" => {
            positional.is_empty() || matches!(positional.first(), Some(&"show") | Some(&"get-url"))
        }
        "config" => {
            any(&[
                "--get",
                "--get-all",
                "--get-regexp",
                "--list",
                "-l",
                "--get-urlmatch",
            ]) || matches!(positional.first(), Some(&"get") | Some(&"list"))
        }
        "worktree" => matches!(positional.first(), Some(&"list")),
        "reflog" => !matches!(positional.first(), Some(&"expire") | Some(&"delete")),
        "notes" => matches!(positional.first(), None | Some(&"list") | Some(&"show")),
        "symbolic-ref" => positional.len() <= 1 && !any(&["-d", "--delete"]),
        _ => false,
    }
}

pub(super) fn git_verdict(rules: &Rules, args: &[Word], strict: bool) -> Verdict {
    let (sub, rest) = match git_subcommand(args) {
        Ok(Some(found)) => found,
        Ok(None) => return Verdict::Allow,
        Err(what) => {
            return deny(
                rules,
                format!(
                    "{what} can change what git runs or where it writes, and is refused while a baton run is bound to this session"
                ),
            );
        }
    };
    if git_read_only(&sub.text, rest) {
        return Verdict::Allow;
    }
    // Undoing a change left outside the scope is always allowed.
    let undo = match sub.text.as_str() {
        "restore" => undo::reverts(
            &rules.revertable,
            rest,
            &["--worktree", "-W", "--staged", "-S", "--"],
        ),
        "checkout" => {
            (rest.first().is_some_and(|w| w.text == "--")
                && undo::reverts(&rules.revertable, rest, &["--"]))
                || undo::moves_head_back(rules.head_before.as_ref(), "switch", rest)
        }
        "reset" | "switch" => undo::moves_head_back(rules.head_before.as_ref(), &sub.text, rest),
        _ => false,
    };
    if undo {
        return Verdict::Allow;
    }
    if rules.git.contains(&sub.text) {
        return if strict {
            Verdict::Watch
        } else {
            Verdict::Allow
        };
    }
    // A phase that changes the repository may restore files.
    if !strict && rules.waiting_for.is_none() {
        let restores = match sub.text.as_str() {
            "restore" => !rest
                .iter()
                .any(|w| w.text == "--source" || w.text.starts_with("--source=") || w.text == "-s"),
            "checkout" => {
                rest.iter().any(|w| w.text == "--") && rest.first().is_some_and(|w| w.text == "--")
            }
            "apply" => !rest
                .iter()
                .any(|w| w.text == "--index" || w.text == "--cached"),
            _ => false,
        };
        if restores {
            return Verdict::Allow;
        }
    }
    deny(
        rules,
        format!(
            "`git {}` changes the repository's history, index or refs; in this phase the agent may run read-only git{} — the run's own command phases commit and push",
            sub.text,
            if rules.git.is_empty() {
                String::new()
            } else {
                format!(" and git {}", rules.git.join(", "))
            }
        ),
    )
}
