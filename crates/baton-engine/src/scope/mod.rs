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

mod handed_out;
pub mod paths;
pub mod secrets;
pub mod shell;
mod undo;

pub use undo::HeadBefore;

use baton_workflow::WriteScope;

use shell::{SimpleCommand, Word};

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

    fn what_the_phase_may_do(&self) -> String {
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

/// Read-only programs whose arguments cannot make them write or run
/// anything.
const READ_ONLY: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "ls",
    "stat",
    "du",
    "df",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "which",
    "whereis",
    "type",
    "whoami",
    "id",
    "uname",
    "printenv",
    "cut",
    "tr",
    "nl",
    "od",
    "hexdump",
    "cmp",
    "diff",
    "comm",
    "column",
    "fold",
    "fmt",
    "paste",
    "rev",
    "tac",
    "seq",
    "expr",
    "jq",
    "sha256sum",
    "sha1sum",
    "md5sum",
    "base64",
    "sleep",
    "cd",
    "pushd",
    "popd",
    "dirs",
    ":",
    "wait",
    "strings",
    "look",
    "file",
];

/// Read-only programs with options that write or run something: their
/// arguments are checked, and must be literal.
const CHECKED: &[&str] = &[
    "find", "sort", "uniq", "tree", "rg", "date", "sed", "xxd", "env",
];

/// Wrappers that run the rest of their words as a command.
const WRAPPERS: &[&str] = &[
    "nice", "nohup", "timeout", "time", "command", "builtin", "exec", "stdbuf", "ionice", "xargs",
    "env",
];

/// Programs that start work the client does not see (another terminal, a
/// scheduler, a remote or elevated shell): refused while a run is bound.
const ESCAPES: &[&str] = &[
    "at",
    "batch",
    "crontab",
    "systemd-run",
    "tmux",
    "screen",
    "script",
    "unbuffer",
    "expect",
    "ssh",
    "sudo",
    "doas",
    "su",
    "setsid",
    "disown",
    "socat",
    "nc",
    "ncat",
    "eval",
    "source",
    ".",
];

/// Shells: `-c STRING` is read like the command line itself.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// `baton` subcommands that only read.
const BATON_READ_ONLY: &[&str] = &[
    "ls",
    "show",
    "events",
    "history",
    "workflow",
    "manuals",
    "tools",
    "stats",
    "help",
    "--help",
    "-h",
    "--version",
    "-V",
];

/// git subcommands that only read (see [`git_read_only`] for the ones that
/// read only in some forms).
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "cat-file",
    "blame",
    "describe",
    "shortlog",
    "rev-list",
    "name-rev",
    "whatchanged",
    "for-each-ref",
    "show-ref",
    "diff-tree",
    "diff-files",
    "diff-index",
    "check-ignore",
    "merge-base",
    "var",
    "version",
    "help",
    "count-objects",
    "annotate",
    "grep",
    "show-branch",
    "cherry",
];

/// Variables whose assignment changes what later commands run.
const DANGEROUS_VARIABLES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "PAGER",
    "GIT_PAGER",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "SHELL",
    "PROMPT_COMMAND",
    "IFS",
    "HOME",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_EXEC_PATH",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "BATON_REPO_ROOT",
    "BATON_SPECS_DIR",
];

fn shell_verdict(rules: &Rules, command: &str) -> Verdict {
    let script = shell::parse(command);
    let strict = rules.strict();
    if strict && !script.opaque.is_empty() {
        return Verdict::Deny(format!(
            "this command line holds {}, which baton cannot check; {}. Run simple commands one at a time.",
            script.opaque.join(", "),
            rules.what_the_phase_may_do()
        ));
    }
    if handed_out::as_given(rules.handed_out.as_deref(), &script) {
        return Verdict::Allow;
    }
    let mut verdict = Verdict::Allow;
    for c in &script.commands {
        match command_verdict(rules, c, strict, 0) {
            Verdict::Allow => {}
            Verdict::Watch => verdict = Verdict::Watch,
            deny @ Verdict::Deny(_) => return deny,
        }
    }
    verdict
}

/// Whether `command` is exactly the command the run handed out (one simple
/// command, its argv as given, no assignment, no writing redirection).
pub fn is_handed_out(rules: &Rules, command: &str) -> bool {
    handed_out::as_given(rules.handed_out.as_deref(), &shell::parse(command))
}

fn deny(rules: &Rules, what: String) -> Verdict {
    Verdict::Deny(format!("{what}; {}.", rules.what_the_phase_may_do()))
}

fn command_verdict(rules: &Rules, c: &SimpleCommand, strict: bool, depth: usize) -> Verdict {
    if depth > shell::MAX_DEPTH {
        return deny(rules, "commands nested too deep to check".into());
    }
    for a in &c.assignments {
        let name = a.text.split(['=', '+']).next().unwrap_or_default();
        if strict || DANGEROUS_VARIABLES.contains(&name) {
            return deny(
                rules,
                format!(
                    "setting {name} in the command line is refused while a baton run is bound to this session"
                ),
            );
        }
    }
    for r in &c.redirects {
        if r.op == "<<" || r.op == "<<-" || r.op == "<<<" || !r.writes() {
            continue;
        }
        if let Some(reason) = redirect_refusal(rules, &r.target, strict) {
            return Verdict::Deny(reason);
        }
    }
    if strict && c.background {
        return deny(
            rules,
            "a command left running in the background (`&`) is refused here".into(),
        );
    }
    let words: &[Word] = &c.words;
    let Some(first) = words.first() else {
        return Verdict::Allow;
    };
    if first.dynamic {
        return deny(
            rules,
            format!(
                "the program name {:?} is computed at run time, so baton cannot check it",
                first.text
            ),
        );
    }
    let program = program_name(&first.text);
    if program == "baton" {
        return baton_verdict(rules, &words[1..]);
    }
    if strict && first.text.contains('/') && !is_system_path(&first.text) {
        return deny(
            rules,
            format!(
                "`{}` runs a program from a path; only the system's read-only commands run here",
                first.text
            ),
        );
    }
    // Wrappers: check the command they run.
    if WRAPPERS.contains(&program.as_str()) {
        if let Some(rest) = wrapped(program.as_str(), &words[1..]) {
            if rest.is_empty() {
                // `env`, `command -v x`: they only print.
                return Verdict::Allow;
            }
            let inner = SimpleCommand {
                assignments: Vec::new(),
                words: rest.to_vec(),
                redirects: Vec::new(),
                background: c.background,
            };
            return command_verdict(rules, &inner, strict, depth + 1);
        }
        return deny(
            rules,
            format!("baton cannot tell which command `{program}` runs here"),
        );
    }
    if SHELLS.contains(&program.as_str()) {
        return shell_program_verdict(rules, &program, &words[1..], strict, depth);
    }
    if ESCAPES.contains(&program.as_str()) {
        return deny(
            rules,
            format!(
                "`{program}` is refused while a baton run is bound to this session: it starts work outside what the client shows and baton checks"
            ),
        );
    }
    if program == "git" {
        return git_verdict(rules, &words[1..], strict);
    }
    if !strict {
        return Verdict::Allow;
    }
    if READ_ONLY.contains(&program.as_str()) {
        return Verdict::Allow;
    }
    if program == "rm" && undo::reverts(&rules.revertable, &words[1..], &["-f", "--force", "--"]) {
        return Verdict::Allow;
    }
    if CHECKED.contains(&program.as_str()) {
        if let Some(problem) = checked_refusal(&program, &words[1..]) {
            return deny(rules, problem);
        }
        return Verdict::Allow;
    }
    if let Some(v) = scope_command_verdict(rules, words) {
        return v;
    }
    deny(
        rules,
        format!(
            "`{program}` is not a read-only command{}. The shell may run read-only commands here (ls, cat, grep, rg, find, head, tail, wc, diff, git status/diff/log/show, …){}; read and search files with the client's own tools",
            if rules.commands.is_empty() {
                String::new()
            } else {
                format!(
                    " nor in the phase's `commands` ({})",
                    rules.commands.join(", ")
                )
            },
            if rules.git.is_empty() {
                String::new()
            } else {
                format!(", and git {}", rules.git.join(", "))
            }
        ),
    )
}

/// The command a wrapper runs (`None` when it cannot be told).
fn wrapped<'w>(program: &str, args: &'w [Word]) -> Option<&'w [Word]> {
    let mut i = 0;
    // Options with a value, per wrapper.
    let with_value: &[&str] = match program {
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e"],
        "ionice" => &["-c", "-n", "-p", "-P", "-u"],
        "xargs" => &[
            "-n",
            "-I",
            "-i",
            "-d",
            "-E",
            "-L",
            "-P",
            "-s",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--replace",
        ],
        "env" => &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        _ => &[],
    };
    while let Some(w) = args.get(i) {
        if w.dynamic {
            return None;
        }
        let t = w.text.as_str();
        if program == "env" && (t == "-S" || t.starts_with("--split-string")) {
            // `env -S 'cmd args'` splits a string into a command.
            return None;
        }
        if program == "env" && shell::is_assignment(t) {
            let name = t.split('=').next().unwrap_or_default();
            if DANGEROUS_VARIABLES.contains(&name) {
                return None;
            }
            i += 1;
            continue;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if t.starts_with('-') && t.len() > 1 {
            i += if with_value.contains(&t) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if program == "timeout" {
        // The duration.
        i += 1;
    }
    if program == "command"
        && args
            .first()
            .is_some_and(|w| w.text == "-v" || w.text == "-V")
    {
        return Some(&[]);
    }
    Some(args.get(i..).unwrap_or(&[]))
}

fn shell_program_verdict(
    rules: &Rules,
    program: &str,
    args: &[Word],
    strict: bool,
    depth: usize,
) -> Verdict {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w.dynamic {
            return deny(
                rules,
                format!("`{program}` with an argument computed at run time"),
            );
        }
        let short_with_c =
            w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('c');
        if short_with_c {
            let Some(body) = args.get(i + 1) else {
                return deny(rules, format!("`{program} -c` without a command"));
            };
            if body.dynamic {
                return deny(
                    rules,
                    format!("`{program} -c` with a command computed at run time"),
                );
            }
            let script = shell::parse(&body.text);
            if !script.opaque.is_empty() {
                return deny(
                    rules,
                    format!(
                        "the command given to `{program} -c` holds {}",
                        script.opaque.join(", ")
                    ),
                );
            }
            let mut verdict = Verdict::Allow;
            for c in &script.commands {
                match command_verdict(rules, c, strict, depth + 1) {
                    Verdict::Allow => {}
                    Verdict::Watch => verdict = Verdict::Watch,
                    d @ Verdict::Deny(_) => return d,
                }
            }
            return verdict;
        }
        if w.text.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    if strict {
        return deny(
            rules,
            format!("`{program}` running a script or its input is not a read-only command"),
        );
    }
    // Open phases run scripts: the script's own commands are not checked
    // (docs/clients.md, what the hooks cannot see); its input is refused
    // when it is the command line's own text fed to it.
    Verdict::Allow
}

fn baton_verdict(rules: &Rules, args: &[Word]) -> Verdict {
    // Global options before the subcommand.
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w.dynamic {
            break;
        }
        match w.text.as_str() {
            "--repo" | "--specs-dir" => i += 2,
            t if t.starts_with("--repo=") || t.starts_with("--specs-dir=") => i += 1,
            _ => break,
        }
    }
    let sub = args.get(i);
    let read_only = sub.is_some_and(|w| !w.dynamic && BATON_READ_ONLY.contains(&w.text.as_str()))
        || sub.is_some_and(|w| w.text == "state")
            && args.get(i + 1).is_some_and(|w| w.text == "show");
    if read_only {
        return Verdict::Allow;
    }
    let name = sub.map(|w| w.text.as_str()).unwrap_or("");
    let what = match name {
        "hook" => "`baton hook` is run by the agent's client for its hooks, never by the agent"
            .to_string(),
        "answer" | "dashboard" | "run" | "demo" | "init" => format!(
            "`baton {name}` is a person's command: while run {} is bound to this session the agent does not run it",
            rules.workspace
        ),
        _ => format!(
            "`baton {name}` may change baton's state: while run {} is bound to this session the agent talks to baton through its MCP tools only",
            rules.workspace
        ),
    };
    Verdict::Deny(format!(
        "{what}. If the run waits for a person, show them the question and how to answer it, then stop and wait for them."
    ))
}

/// Why a redirection to `target` is refused, if it is.
fn redirect_refusal(rules: &Rules, target: &Word, strict: bool) -> Option<String> {
    if target.text == "/dev/null" || target.text == "/dev/stdout" || target.text == "/dev/stderr" {
        return None;
    }
    if target.dynamic {
        return Some(format!(
            "the command writes to {:?}, a name computed at run time; {}.",
            target.text,
            rules.what_the_phase_may_do()
        ));
    }
    if strict {
        return Some(format!(
            "the command writes {} by redirection; {}. Write files with the client's Write tool.",
            target.text,
            rules.what_the_phase_may_do()
        ));
    }
    let t = target.text.trim_start_matches("./");
    if t.starts_with('/') {
        return rules
            .outside_protected
            .iter()
            .find(|d| paths::is_within(t, d))
            .map(|d| format!("the command writes {t}, which is protected ({d})."));
    }
    let path = paths::normalise(t)?;
    rules
        .protected
        .iter()
        .find(|p| paths::matches(p, &path))
        .map(|p| {
            format!(
                "the command writes {path}, which is protected ({p}); {}.",
                rules.what_the_phase_may_do()
            )
        })
}

fn checked_refusal(program: &str, args: &[Word]) -> Option<String> {
    if let Some(w) = args.iter().find(|w| w.dynamic) {
        return Some(format!(
            "`{program}` with an argument computed at run time ({:?})",
            w.text
        ));
    }
    let has = |opts: &[&str]| {
        args.iter().find(|w| {
            opts.iter().any(|o| {
                w.text == *o || (o.starts_with("--") && w.text.starts_with(&format!("{o}=")))
            })
        })
    };
    let bad = match program {
        "find" => has(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ]),
        "sort" => has(&["-o", "--output", "--compress-program"]).or_else(|| {
            args.iter()
                .find(|w| w.text.starts_with("-o") && w.text.len() > 2)
        }),
        "tree" => has(&["-o"]),
        "rg" => has(&["--pre"]),
        "date" => has(&["-s", "--set"]),
        "env" => has(&["-S", "--split-string"]),
        "uniq" | "xxd" => {
            let positional = args.iter().filter(|w| !w.text.starts_with('-')).count();
            if positional > 1 {
                return Some(format!("`{program}` with an output file"));
            }
            None
        }
        "sed" => {
            if let Some(w) = has(&["-i", "--in-place", "-f", "--file"]).or_else(|| {
                args.iter()
                    .find(|w| w.text.starts_with("-i") || w.text.starts_with("--in-place"))
            }) {
                return Some(format!("`sed {}` edits or reads a script", w.text));
            }
            // Scripts that only print: `-n 'A,Bp'`, `'Nq'`, `'/re/p'`.
            let scripts: Vec<&Word> = args
                .iter()
                .filter(|w| !w.text.starts_with('-'))
                .take(1)
                .collect();
            for s in scripts {
                let ok = s.text.split(';').all(|part| {
                    let p = part.trim();
                    let body =
                        p.trim_start_matches(|c: char| c.is_ascii_digit() || c == ',' || c == '$');
                    matches!(body, "p" | "q" | "d" | "=" | "")
                });
                if !ok {
                    return Some(format!(
                        "`sed {}`: only printing scripts (like `sed -n '10,20p'`) run here",
                        s.text
                    ));
                }
            }
            None
        }
        _ => None,
    };
    bad.map(|w| format!("`{program} {}` writes files or runs other programs", w.text))
}

fn scope_command_verdict(rules: &Rules, words: &[Word]) -> Option<Verdict> {
    for entry in &rules.commands {
        if entry.trim() == "*" {
            return Some(Verdict::Watch);
        }
        let prefix: Vec<&str> = entry.split_whitespace().collect();
        if prefix.len() <= words.len()
            && prefix.iter().zip(words).enumerate().all(|(k, (p, w))| {
                !w.dynamic
                    && (if k == 0 {
                        program_name(&w.text) == *p
                    } else {
                        w.text == *p
                    })
            })
        {
            return Some(Verdict::Watch);
        }
    }
    None
}

/// The git subcommand and the words after it (global options skipped);
/// `Err` names a global option baton refuses.
fn git_subcommand(args: &[Word]) -> Result<Option<(&Word, &[Word])>, String> {
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
fn git_read_only(sub: &str, rest: &[Word]) -> bool {
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

fn git_verdict(rules: &Rules, args: &[Word], strict: bool) -> Verdict {
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

/// The program's name: the last part of a path (`/usr/bin/git` → `git`).
pub fn program_name(word: &str) -> String {
    word.rsplit('/').next().unwrap_or(word).to_string()
}

fn is_system_path(word: &str) -> bool {
    [
        "/usr/bin/",
        "/bin/",
        "/usr/local/bin/",
        "/usr/sbin/",
        "/sbin/",
    ]
    .iter()
    .any(|d| word.starts_with(d) && !word[d.len()..].contains('/'))
}

#[cfg(test)]
mod tests;
