//! The scope rules as tables: each case is a call and the verdict a phase
//! gives it.

use super::*;

fn rules(writes: WriteScope) -> Rules {
    Rules {
        workspace: ".specs/20260101-x".into(),
        phase: "phase-1".into(),
        phase_label: "Situation Analysis".into(),
        writes,
        protected: [
            ".claude/**",
            ".codex/**",
            ".cursor/**",
            ".mcp.json",
            "baton.toml",
            ".git/**",
            ".baton/**",
            ".specs/*/state.json",
            ".specs/*/.state*",
            ".specs/.history/**",
        ]
        .map(String::from)
        .to_vec(),
        specs_dir: ".specs".into(),
        own_files: vec![".specs/20260101-x/analysis.md".into()],
        scratch_dirs: vec!["/tmp".into()],
        outside_protected: vec!["/home/p/.claude".into(), "/home/p/.bashrc".into()],
        ..Rules::default()
    }
}

fn shell(r: &Rules, command: &str) -> Verdict {
    decide(r, &Call::Shell(command))
}

fn denied(v: &Verdict) -> bool {
    matches!(v, Verdict::Deny(_))
}

#[test]
fn a_reading_phase_writes_only_its_own_artifact() {
    let r = rules(WriteScope::Artifacts);
    let write = |p: &str| decide(&r, &Call::Write(vec![Target::Repo(p.into())]));
    assert_eq!(write(".specs/20260101-x/analysis.md"), Verdict::Allow);
    for path in [
        "src/main.rs",
        ".specs/20260101-x/design.md",
        ".specs/20260101-x/state.json",
        ".specs/other/analysis.md",
        ".claude/settings.json",
        ".mcp.json",
        ".git/hooks/pre-commit",
        ".baton/sessions/s.json",
    ] {
        let v = write(path);
        assert!(denied(&v), "{path}: {v:?}");
    }
    let Verdict::Deny(reason) = write("src/main.rs") else {
        unreachable!()
    };
    assert!(
        reason.contains("analysis.md") && reason.contains("phase-1"),
        "{reason}"
    );
    assert_eq!(
        decide(
            &r,
            &Call::Write(vec![Target::Outside("/tmp/scratch.txt".into())])
        ),
        Verdict::Allow
    );
    assert!(denied(&decide(
        &r,
        &Call::Write(vec![Target::Outside("/home/p/notes".into())])
    )));
    assert!(denied(&decide(
        &r,
        &Call::Write(vec![Target::Outside(
            "/home/p/.claude/settings.json".into()
        )])
    )));
}

#[test]
fn an_implementation_phase_writes_the_repository_but_not_baton_or_protected_files() {
    let r = rules(WriteScope::Repository);
    let write = |p: &str| decide(&r, &Call::Write(vec![Target::Repo(p.into())]));
    assert_eq!(write("src/main.rs"), Verdict::Allow);
    assert_eq!(write("docs/new.md"), Verdict::Allow);
    for path in [
        ".specs/20260101-x/state.json",
        ".specs/20260101-x/design.md",
        ".mcp.json",
        ".claude/settings.local.json",
        "baton.toml",
    ] {
        assert!(denied(&write(path)), "{path}");
    }
    assert_eq!(
        decide(
            &r,
            &Call::Write(vec![Target::Outside("/home/p/notes".into())])
        ),
        Verdict::Allow
    );
    assert!(denied(&decide(
        &r,
        &Call::Write(vec![Target::Outside("/home/p/.bashrc".into())])
    )));
}

#[test]
fn waiting_for_a_person_writes_nothing() {
    let mut r = rules(WriteScope::Repository);
    r.waiting_for = Some("checkpoint-a".into());
    let v = decide(&r, &Call::Write(vec![Target::Repo("src/a.rs".into())]));
    let Verdict::Deny(reason) = v else {
        panic!("{v:?}")
    };
    assert!(reason.contains("waits for a person"), "{reason}");
    assert!(denied(&decide(
        &r,
        &Call::Write(vec![Target::Repo(".specs/20260101-x/analysis.md".into())])
    )));
}

#[test]
fn strict_shell_allows_reading_commands_only() {
    let r = rules(WriteScope::Artifacts);
    for ok in [
        "ls -la",
        "git status --short && git diff HEAD~1 -- src | head -50",
        "cat src/main.rs | grep -n fn",
        "rg -n 'fn main' src",
        "find . -name '*.rs' -not -path './target/*'",
        "wc -l src/*.rs 2>/dev/null",
        "cd src && ls",
        "git log --oneline -5",
        "git branch",
        "git --no-pager show HEAD:README.md",
        "baton show .specs/20260101-x",
        "baton ls",
        "sed -n '1,20p' src/main.rs",
        "for f in a b; do wc -l $f; done",
        "echo $(git rev-parse HEAD)",
        "/usr/bin/git status",
        "env",
        "command -v cargo",
    ] {
        assert_eq!(shell(&r, ok), Verdict::Allow, "{ok}");
    }
    for bad in [
        "git add -A && git commit -m wip",
        "git commit -m x",
        "git push",
        "git checkout -b feature",
        "git branch new-branch",
        "git -c core.pager='sh -c x' log",
        "git -C /elsewhere commit -m x",
        "git diff --output=src/x.rs",
        "echo hi > src/main.rs",
        "cat a >> notes.md",
        "tee src/x.rs",
        "touch src/new.rs",
        "rm -rf src",
        "mv a b",
        "cp a b",
        "python3 -c 'open(\"x\",\"w\")'",
        "node -e 1",
        "sed -i s/a/b/ src/main.rs",
        "sed 's/a/b/w out' src/main.rs",
        "find . -delete",
        "find . -exec rm {} ;",
        "sort -o out in",
        "awk '{print > \"x\"}' f",
        "make",
        "cargo build",
        "./scripts/anything",
        "A=1 ls",
        "PATH=/tmp/x:$PATH ls",
        "$X status",
        "cat <<EOF\n$(touch x)\nEOF",
        "case x in x) ls;; esac",
        "sh script.sh",
        "echo ls | sh",
        "xargs rm < list",
        "nohup ls &",
        "tmux new -d ls",
    ] {
        assert!(denied(&shell(&r, bad)), "{bad}");
    }
}

#[test]
fn a_persons_baton_commands_are_refused_in_every_form() {
    for writes in [
        WriteScope::None,
        WriteScope::Artifacts,
        WriteScope::Repository,
    ] {
        let mut r = rules(writes);
        for waiting in [None, Some("checkpoint-a".to_string())] {
            r.waiting_for = waiting;
            for bad in [
                "baton answer .specs/20260101-x approve",
                "baton run .specs/20260101-x --auto --agent claude",
                "baton dashboard",
                "baton hook pre-tool-use",
                "baton serve --tools recovery",
                "baton --repo . answer ws approve",
                "/work/target/debug/baton answer ws approve",
                "env baton answer ws approve",
                "env -i PATH=/usr/bin baton answer ws approve",
                "nice -n 5 baton answer ws approve",
                "timeout 5 baton answer ws approve",
                "command baton answer ws approve",
                "exec baton answer ws approve",
                "xargs -n1 baton answer < x",
                "sh -c 'baton answer ws approve'",
                "bash -lc \"baton answer ws approve\"",
                "sh -c \"sh -c 'baton answer ws approve'\"",
                "echo $(baton answer ws approve)",
                "echo `baton answer ws approve`",
                "true && baton answer ws approve",
                "ls; baton answer ws approve",
                "ba''ton answer ws approve",
                "\"baton\" answer ws approve",
                "b\\aton answer ws approve",
                "B=baton; $B answer ws approve",
                "$(echo baton) answer ws approve",
                "eval 'baton answer ws approve'",
                "script -qc 'baton answer ws approve' /dev/null",
                "at now <<< 'baton answer ws approve'",
                "f() { baton answer ws approve; }; f",
                "alias b=baton",
            ] {
                let v = shell(&r, bad);
                // `alias b=baton` alone is harmless in open phases (it is
                // not a program baton refuses); strict phases refuse it.
                if bad.starts_with("alias") && !r.strict() {
                    continue;
                }
                assert!(denied(&v), "{writes:?} {:?}: {bad} → {v:?}", r.waiting_for);
            }
        }
    }
}

#[test]
fn open_shell_runs_programs_but_not_history_changes_or_protected_writes() {
    let r = rules(WriteScope::Repository);
    for ok in [
        "cargo build && cargo test",
        "python3 scripts/gen.py > src/gen.rs",
        "npm install",
        "mkdir -p src/x && touch src/x/a.rs",
        "git status",
        "git restore src/a.rs",
        "git checkout -- src/a.rs",
        "echo x > /tmp/scratch",
    ] {
        assert_eq!(shell(&r, ok), Verdict::Allow, "{ok}");
    }
    for bad in [
        "git add -A && git commit -m wip",
        "git commit --amend",
        "git push origin HEAD",
        "git reset --hard HEAD~1",
        "git checkout main",
        "git stash",
        "git rebase main",
        "echo {} > .mcp.json",
        "echo x >> .claude/settings.json",
        "cat x > .specs/20260101-x/state.json",
        "echo x > /home/p/.bashrc",
        "tmux new -d 'make'",
        "crontab -l",
        "eval \"$CMD\"",
        "PATH=/tmp:$PATH make",
        "GIT_DIR=/x git status",
    ] {
        assert!(denied(&shell(&r, bad)), "{bad}");
    }
}

#[test]
fn the_scopes_git_and_commands_and_the_handed_out_command() {
    let mut r = rules(WriteScope::Artifacts);
    r.git = vec!["push".into()];
    r.commands = vec!["gh".into(), "cargo test".into()];
    assert_eq!(shell(&r, "git push -u origin HEAD"), Verdict::Watch);
    assert_eq!(shell(&r, "gh pr view --json url"), Verdict::Watch);
    assert_eq!(shell(&r, "cargo test -p x"), Verdict::Watch);
    assert!(denied(&shell(&r, "cargo build")));
    assert!(denied(&shell(&r, "git commit -m x")));
    r.commands = vec!["*".into()];
    assert_eq!(shell(&r, "make check"), Verdict::Watch);
    assert!(
        denied(&shell(&r, "baton answer ws approve")),
        "`*` never lets a person's command through"
    );
    assert!(
        denied(&shell(&r, "make > src/x")),
        "redirections stay checked"
    );

    let mut r = rules(WriteScope::None);
    r.handed_out = Some(
        ["git", "commit", "-m", "feat: x (baton)"]
            .map(String::from)
            .to_vec(),
    );
    assert_eq!(
        shell(&r, "'git' 'commit' '-m' 'feat: x (baton)'"),
        Verdict::Allow
    );
    assert_eq!(shell(&r, "git commit -m 'feat: x (baton)'"), Verdict::Allow);
    assert!(denied(&shell(&r, "git commit -m other")));
    assert!(denied(&shell(
        &r,
        "git commit -m 'feat: x (baton)' && git push"
    )));
    assert!(denied(&shell(&r, "git commit -m 'feat: x (baton)' > x")));
}

#[test]
fn other_tools() {
    let mut r = rules(WriteScope::Artifacts);
    assert_eq!(
        decide(&r, &Call::Tool("mcp__baton__pipeline_next_action")),
        Verdict::Allow
    );
    assert_eq!(decide(&r, &Call::Tool("Read")), Verdict::Allow);
    assert!(denied(&decide(&r, &Call::Tool("mcp__fs__write_file"))));
    assert!(denied(&decide(&r, &Call::Tool("CronCreate"))));
    r.tools = vec!["mcp__docs__*".into()];
    assert_eq!(decide(&r, &Call::Tool("mcp__docs__search")), Verdict::Allow);
    let open = rules(WriteScope::Repository);
    assert_eq!(
        decide(&open, &Call::Tool("mcp__fs__write_file")),
        Verdict::Allow
    );
}

#[test]
fn a_change_left_outside_the_scope_may_be_reverted_and_nothing_else() {
    let mut r = rules(WriteScope::Artifacts);
    r.revertable = vec!["src/main.rs".into(), "junk.txt".into()];
    for ok in [
        "git restore src/main.rs",
        "git checkout -- src/main.rs",
        "rm junk.txt",
        "rm -f ./junk.txt",
        "git restore --staged --worktree src/main.rs",
    ] {
        assert_eq!(shell(&r, ok), Verdict::Allow, "{ok}");
    }
    for bad in [
        "git restore src/other.rs",
        "rm -rf src",
        "rm junk.txt src/lib.rs",
        "git checkout main",
        "git restore --source=HEAD~3 src/main.rs",
        "rm $X",
    ] {
        assert!(denied(&shell(&r, bad)), "{bad}");
    }
    r.revertable.clear();
    assert!(denied(&shell(&r, "git restore src/main.rs")));
}
