//! The verdict on a shell command line: each simple command, the wrappers
//! and shells it runs through, its redirections, and baton's own commands.

use super::git::git_verdict;
use super::programs::{
    BATON_READ_ONLY, CHECKED, DANGEROUS_VARIABLES, ESCAPES, READ_ONLY, SHELLS, WRAPPERS,
};
use super::rules::{Rules, Verdict, deny};
use super::shell::{self, SimpleCommand, Word};
use super::{handed_out, paths, undo};

pub(super) fn shell_verdict(rules: &Rules, command: &str) -> Verdict {
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

pub(super) fn command_verdict(
    rules: &Rules,
    c: &SimpleCommand,
    strict: bool,
    depth: usize,
) -> Verdict {
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

/// The program's name: the last part of a path (`/usr/bin/git` → `git`).
pub fn program_name(word: &str) -> String {
    word.rsplit('/').next().unwrap_or(word).to_string()
}

pub(super) fn is_system_path(word: &str) -> bool {
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
