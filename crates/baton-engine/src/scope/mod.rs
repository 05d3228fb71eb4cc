//! What the agent may do while a phase of its run is current: pure
//! decisions over the phase's scope (`baton_workflow::PhaseScope`), the
//! workflow's protected paths, baton's control files and the run's
//! situation (a question waiting for a person, a command handed out). The
//! client hooks (`baton hook`) ask it about every tool call of a session
//! bound to a run; `baton run`'s agent presets read the same scope.
//!
//! The rules (docs/clients.md):
//!
//! * **Files**: baton's control files and the protected paths are never
//!   written. `writes: none` (and any moment a person's question is open)
//!   writes nothing; `artifacts` writes only the phase's own files;
//!   `repository` writes anything else outside the specs folder.
//! * **Shell, strict**: while a person's question is open, or the phase
//!   may not change the repository, every command the line runs must be a
//!   known read-only command (read-only git included), a git subcommand the
//!   scope lists, a command the scope's `commands` lists (watched: the
//!   working tree is compared after it), or exactly the command the run
//!   handed out. Anything the reader cannot see through is refused.
//! * **Shell, open** (`writes: repository`, nobody asked): any command but
//!   a person's baton commands, git that changes history (beyond the
//!   scope's list), writes into protected paths by redirection, and the
//!   programs that start work outside the client (`at`, `tmux`, `script`,
//!   …).
//! * **Other tools**: baton's own MCP tools always (baton checks them);
//!   other MCP tools in strict phases only when the scope's `tools` lists
//!   them; the client's tools that schedule prompts or move the session
//!   into another worktree never while a run is bound.

mod commands;
mod git;
mod handed_out;
pub mod paths;
mod programs;
mod rules;
pub mod secrets;
pub mod shell;
mod undo;

pub use commands::{is_handed_out, program_name};
pub use rules::{Call, Rules, Target, Verdict};
pub use undo::HeadBefore;

use baton_workflow::WriteScope;
use commands::shell_verdict;

/// The decision for `call` under `rules`.
pub fn decide(rules: &Rules, call: &Call<'_>) -> Verdict {
    match call {
        Call::Write(targets) => {
            for target in targets {
                if let Some(reason) = write_refusal(rules, target) {
                    return Verdict::Deny(reason);
                }
            }
            Verdict::Allow
        }
        Call::Shell(command) => shell_verdict(rules, command),
        Call::Tool(name) => tool_verdict(rules, name),
    }
}

/// Why writing `target` is refused, if it is.
pub fn write_refusal(rules: &Rules, target: &Target) -> Option<String> {
    match target {
        Target::Repo(path) => {
            if let Some(pattern) = rules.protected.iter().find(|p| paths::matches(p, path)) {
                return Some(format!(
                    "{path} is protected ({pattern}): no agent writes it while a run is bound to this session; {}.",
                    rules.what_the_phase_may_do()
                ));
            }
            let own = rules.own_files.iter().any(|f| f == path);
            let allowed = match (rules.waiting_for.is_some(), rules.writes) {
                (true, _) | (_, WriteScope::None) => false,
                (false, WriteScope::Artifacts) => own,
                (false, WriteScope::Repository) => own || !paths::is_within(path, &rules.specs_dir),
            };
            (!allowed).then(|| {
                format!(
                    "writing {path} is outside the phase's scope: {}.",
                    rules.what_the_phase_may_do()
                )
            })
        }
        Target::Outside(path) => {
            if let Some(dir) = rules
                .outside_protected
                .iter()
                .find(|d| paths::is_within(path, d))
            {
                return Some(format!(
                    "{path} is protected ({dir}: client settings and shell start-up files): no agent writes it while a run is bound to this session."
                ));
            }
            let scratch = rules.scratch_dirs.iter().any(|d| paths::is_within(path, d));
            (!scratch && rules.strict()).then(|| {
                format!(
                    "writing {path} (outside the repository) is outside the phase's scope: {}; scratch files go to {}.",
                    rules.what_the_phase_may_do(),
                    rules.scratch_dirs.join(" or ")
                )
            })
        }
    }
}

fn tool_verdict(rules: &Rules, name: &str) -> Verdict {
    if name.starts_with("mcp__baton__") {
        return Verdict::Allow;
    }
    // Client tools that would act outside this session's view of the run:
    // prompts scheduled for later (they arrive as if a person typed them)
    // and moving the session into another worktree.
    const NEVER: &[&str] = &[
        "CronCreate",
        "ScheduleWakeup",
        "EnterWorktree",
        "ExitWorktree",
    ];
    if NEVER.contains(&name) {
        return Verdict::Deny(format!(
            "{name} is not available while a baton run is bound to this session ({}): it schedules work or moves the session outside the run's view.",
            rules.workspace
        ));
    }
    if name.starts_with("mcp__") && rules.strict() {
        if rules.tools.iter().any(|p| tool_matches(p, name)) {
            return Verdict::Allow;
        }
        return Verdict::Deny(format!(
            "the MCP tool {name} is not in the phase's scope (its `tools` list: {}): {}.",
            if rules.tools.is_empty() {
                "empty".to_string()
            } else {
                rules.tools.join(", ")
            },
            rules.what_the_phase_may_do()
        ));
    }
    Verdict::Allow
}

/// `pattern` (`mcp__docs__*`, a name) against a tool name.
pub fn tool_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

#[cfg(test)]
mod tests;
