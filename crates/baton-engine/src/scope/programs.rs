//! The programs the shell rules know by name: read-only commands, commands
//! whose options are checked, wrappers, escapes, shells, baton's and git's
//! read-only subcommands, and variables that change what later commands run.

/// Read-only programs whose arguments cannot make them write or run
/// anything.
pub(super) const READ_ONLY: &[&str] = &[
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
pub(super) const CHECKED: &[&str] = &[
    "find", "sort", "uniq", "tree", "rg", "date", "sed", "xxd", "env",
];

/// Wrappers that run the rest of their words as a command.
pub(super) const WRAPPERS: &[&str] = &[
    "nice", "nohup", "timeout", "time", "command", "builtin", "exec", "stdbuf", "ionice", "xargs",
    "env",
];

/// Programs that start work the client does not see (another terminal, a
/// scheduler, a remote or elevated shell): refused while a run is bound.
pub(super) const ESCAPES: &[&str] = &[
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
pub(super) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// `baton` subcommands that only read.
pub(super) const BATON_READ_ONLY: &[&str] = &[
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

/// git subcommands that only read (see [`git_read_only`](super::git::git_read_only) for the ones that
/// read only in some forms).
pub(super) const GIT_READ_ONLY: &[&str] = &[
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
pub(super) const DANGEROUS_VARIABLES: &[&str] = &[
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
