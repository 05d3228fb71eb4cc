//! What the rules are about: the run's current phase ([`Rules`]), one tool
//! call ([`Call`], [`Target`]) and the decision on it ([`Verdict`]).

use baton_workflow::WriteScope;

use super::undo::HeadBefore;

/// Everything the rules need about the run's current phase.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// The run's workspace as shown (`.specs/20260101-x`).
    pub workspace: String,
    /// The current phase's id and label.
    pub phase: String,
    /// Its label.
    pub phase_label: String,
    /// Where the agent may write.
    pub writes: WriteScope,
    /// Git subcommands allowed beyond the read-only ones.
    pub git: Vec<String>,
    /// Further tools allowed (names or `*` patterns).
    pub tools: Vec<String>,
    /// Shell command prefixes allowed beyond the read-only ones (`*`: any).
    pub commands: Vec<String>,
    /// Protected paths and baton's control files: repository-relative
    /// patterns (`*`, `**`).
    pub protected: Vec<String>,
    /// The specs folder, repository-relative (`.specs`).
    pub specs_dir: String,
    /// Repository-relative files the phase may write (its artifacts).
    pub own_files: Vec<String>,
    /// Absolute folders outside the repository the agent may write in any
    /// phase (the temporary folder).
    pub scratch_dirs: Vec<String>,
    /// Absolute folders outside the repository the agent never writes
    /// (the clients' settings, the shell's start-up files).
    pub outside_protected: Vec<String>,
    /// The question a person must answer now, if any.
    pub waiting_for: Option<String>,
    /// The argv of the command the run handed out and that is not reported
    /// yet: allowed exactly as given.
    pub handed_out: Option<Vec<String>>,
    /// Repository-relative paths a command changed outside the scope: the
    /// agent may revert them (`git restore`, `git checkout -- …`, `rm`)
    /// whatever the phase.
    pub revertable: Vec<String>,
    /// Where HEAD was before a command moved it outside the scope: the
    /// agent may move it back (`git reset --soft <commit>`, `git switch
    /// <branch>`) whatever the phase.
    pub head_before: Option<HeadBefore>,
}

impl Rules {
    /// Strict: a person's question is open, or the phase may not change
    /// the repository.
    pub fn strict(&self) -> bool {
        self.waiting_for.is_some() || self.writes != WriteScope::Repository
    }

    pub(super) fn what_the_phase_may_do(&self) -> String {
        if let Some(q) = &self.waiting_for {
            return format!(
                "run {} waits for a person to answer {q}: nothing may change until they do. Show them the question and how to answer it, then stop and wait",
                self.workspace
            );
        }
        let phase = format!("{} ({})", self.phase, self.phase_label);
        match self.writes {
            WriteScope::None => format!(
                "while {phase} of run {} runs, the agent changes no file",
                self.workspace
            ),
            WriteScope::Artifacts => {
                if self.own_files.is_empty() {
                    format!(
                        "while {phase} of run {} runs, the agent writes only the phase's own artifacts",
                        self.workspace
                    )
                } else {
                    format!(
                        "while {phase} of run {} runs, the agent writes only {}",
                        self.workspace,
                        self.own_files.join(", ")
                    )
                }
            }
            WriteScope::Repository => format!(
                "while {phase} of run {} runs, the agent may change the repository but not baton's files, the protected paths ({}) or the history",
                self.workspace,
                self.protected_user_paths().join(", ")
            ),
        }
    }

    /// The protected paths that are not baton's own control files (the
    /// clients' settings and hooks, `.mcp.json`, `baton.toml`, `.git/**`).
    pub fn protected_user_paths(&self) -> Vec<String> {
        self.protected
            .iter()
            .filter(|p| !p.starts_with(".baton") && !p.starts_with(&self.specs_dir))
            .cloned()
            .collect()
    }
}

/// Where a file tool writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Inside the repository: the normalised relative path.
    Repo(String),
    /// Outside it: the absolute path.
    Outside(String),
}

/// One tool call, as the rules see it.
#[derive(Debug, Clone)]
pub enum Call<'a> {
    /// A file tool writing these paths.
    Write(Vec<Target>),
    /// A shell command line.
    Shell(&'a str),
    /// Any other tool, by its name as the client calls it.
    Tool(&'a str),
}

/// The decision about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Go ahead, and compare the working tree afterwards (a command the
    /// scope's `commands` allows in a phase that may not change the
    /// repository).
    Watch,
    /// Refused, with the reason for the agent.
    Deny(String),
}

/// A refusal of `what`, saying what the phase may do instead.
pub(super) fn deny(rules: &Rules, what: String) -> Verdict {
    Verdict::Deny(format!("{what}; {}.", rules.what_the_phase_may_do()))
}
