//! The Claude Code preset: `claude -p --output-format json`, the prompt on
//! stdin, the phase's scope as Claude Code's own permission controls, and
//! the tokens, cost and model read from its JSON result.
//!
//! The scope becomes (docs/pipeline.md, "Agent presets"):
//! * `--permission-mode dontAsk`: whatever is not allowed below is refused
//!   without a prompt (there is nobody to ask);
//! * `--tools`: the built-in tools the phase may use at all;
//! * `--allowedTools`: reading and searching everywhere, the read-only git
//!   commands, and writing only where the phase may write — its own
//!   artifact for a read-only phase, the repository for an implementation
//!   phase;
//! * `--disallowedTools`: the protected paths, baton's control files and
//!   every git command that changes the repository (baton's own command
//!   steps commit and push), minus the subcommands the phase's scope allows;
//! * `--settings` with baton's hooks (`PreToolUse` for every tool,
//!   `PostToolUse` for Bash), bound to the run: inside the CLI, baton's own
//!   rules (docs/clients.md) refuse what the phase may not do — a commit,
//!   a person's `baton answer`, a write outside the scope — and watch the
//!   commands the scope allows.

use serde_json::Value;

use baton_usecases::headless::AgentScope;
use baton_workflow::WriteScope;

use super::{HOOK_TIMEOUT_SECS, RunHooks, UnreadableOutput, Usage, excerpt};

/// Git subcommands that only read: always allowed.
pub const READ_ONLY_GIT: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "grep",
    "ls-files",
    "rev-parse",
];

/// Git subcommands that change the repository, its history or its remote:
/// refused unless the phase's scope lists them.
pub const CHANGING_GIT: &[&str] = &[
    "add",
    "am",
    "apply",
    "branch",
    "checkout",
    "cherry-pick",
    "clean",
    "commit",
    "config",
    "fetch",
    "gc",
    "init",
    "merge",
    "mv",
    "pull",
    "push",
    "rebase",
    "reset",
    "restore",
    "revert",
    "rm",
    "stash",
    "submodule",
    "switch",
    "tag",
    "update-ref",
    "worktree",
];

/// The `--settings` text that makes Claude Code call baton's hooks for the
/// run — every tool call before it runs, and Bash after it (watched
/// commands) — and run its Bash commands in its sandbox, away from baton's
/// key and control files ([`crate::sandbox`]).
pub fn hook_settings(hooks: &RunHooks) -> String {
    let entry = |event: &str| {
        serde_json::json!([{
            "matcher": if event == "pre-tool-use" { "*" } else { "Bash" },
            "hooks": [{
                "type": "command",
                "command": hooks.command("claude", event),
                "timeout": HOOK_TIMEOUT_SECS,
            }],
        }])
    };
    serde_json::json!({
        "hooks": {
            "PreToolUse": entry("pre-tool-use"),
            "PostToolUse": entry("post-tool-use"),
        },
        "sandbox": crate::sandbox::block(&hooks.sandbox),
    })
    .to_string()
}

/// The command-line arguments (after the program) for one agent run.
/// `outputs` are the repository-relative files the run writes (its
/// artifact); `model` the workflow's model label, passed as `--model`;
/// `hooks` how the CLI calls baton's hooks for the run.
pub fn args(
    scope: &AgentScope,
    outputs: &[String],
    model: Option<&str>,
    hooks: &RunHooks,
) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--output-format",
        "json",
        "--no-session-persistence",
        "--permission-mode",
        "dontAsk",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(m) = model.filter(|m| !m.is_empty()) {
        args.push("--model".into());
        args.push(m.to_string());
    }
    let repository = scope.writes == WriteScope::Repository;
    let mut tools = vec!["Read", "Grep", "Glob", "Bash"];
    if scope.writes != WriteScope::None {
        tools.extend(["Write", "Edit"]);
    }
    args.push("--tools".into());
    args.push(tools.join(","));

    let mut allowed: Vec<String> = ["Read", "Grep", "Glob"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let git_allowed: Vec<&str> = READ_ONLY_GIT
        .iter()
        .copied()
        .chain(scope.git.iter().map(String::as_str))
        .collect();
    if repository {
        // The implementation may build and test: any command but the git
        // commands that change the repository (refused below).
        allowed.extend(["Bash", "Write", "Edit"].iter().map(|s| s.to_string()));
    } else {
        allowed.extend(git_allowed.iter().map(|g| format!("Bash(git {g}:*)")));
        // The commands the scope allows (a verifier's test suite): the
        // hooks watch what they change.
        allowed.extend(scope.commands.iter().map(|c| match c.trim() {
            "*" => "Bash".to_string(),
            prefix => format!("Bash({prefix}:*)"),
        }));
        if scope.writes == WriteScope::Artifacts {
            for out in outputs {
                allowed.push(format!("Write(./{out})"));
                allowed.push(format!("Edit(./{out})"));
            }
        }
    }
    allowed.extend(scope.tools.iter().cloned());
    args.push("--allowedTools".into());
    args.extend(allowed);

    let mut denied: Vec<String> = CHANGING_GIT
        .iter()
        .filter(|g| !scope.git.iter().any(|a| a == *g))
        .map(|g| format!("Bash(git {g}:*)"))
        .collect();
    if repository {
        let control = [
            format!("{}/**/state.json", scope.specs_dir),
            format!("{}/.history/**", scope.specs_dir),
            ".baton/**".to_string(),
        ];
        for path in scope.protected.iter().chain(control.iter()) {
            denied.push(format!("Write(./{path})"));
            denied.push(format!("Edit(./{path})"));
        }
    }
    args.push("--disallowedTools".into());
    args.extend(denied);
    args.push("--settings".into());
    args.push(hook_settings(hooks));
    args
}

/// What one `claude -p --output-format json` run reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaudeResult {
    /// Tokens, cost and model.
    pub usage: Usage,
    /// The final answer's text (`result`), the artifact when the agent did
    /// not write its file.
    pub text: String,
    /// The run ended in an error (`is_error`), with what it said.
    pub error: Option<String>,
    /// Tool calls the permission controls refused (tool names).
    pub denied: Vec<String>,
}

/// Reads Claude Code's JSON result (`--output-format json`: one object with
/// `type: "result"`, `usage`, `total_cost_usd`, `modelUsage`, `result`,
/// `is_error`). Tokens count input (with cache reads and writes) plus
/// output, summed over every model the run used; the model is the one that
/// used the most.
pub fn parse(stdout: &str) -> Result<ClaudeResult, UnreadableOutput> {
    let not_json = || {
        UnreadableOutput(format!(
            "claude printed something that is not Claude Code's JSON result (`--output-format json`): {:?}. Check that `claude` on PATH is Claude Code 2.x (`claude --version`)",
            excerpt(stdout, 200)
        ))
    };
    let value: Value = serde_json::from_str(stdout.trim()).map_err(|_| not_json())?;
    // A stream of messages ends with the result object.
    let result = match &value {
        Value::Array(items) => items
            .iter()
            .rev()
            .find(|v| v.get("type").and_then(Value::as_str) == Some("result"))
            .cloned()
            .ok_or_else(not_json)?,
        Value::Object(_) if value.get("type").and_then(Value::as_str) == Some("result") => value,
        _ => return Err(not_json()),
    };
    let num = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let mut tokens = 0u64;
    let mut model: Option<(String, u64)> = None;
    if let Some(models) = result.get("modelUsage").and_then(Value::as_object) {
        for (name, u) in models {
            let t = num(u.get("inputTokens"))
                + num(u.get("outputTokens"))
                + num(u.get("cacheReadInputTokens"))
                + num(u.get("cacheCreationInputTokens"));
            tokens += t;
            if model.as_ref().is_none_or(|(_, best)| t > *best) {
                model = Some((name.clone(), t));
            }
        }
    }
    if tokens == 0
        && let Some(u) = result.get("usage")
    {
        tokens = num(u.get("input_tokens"))
            + num(u.get("output_tokens"))
            + num(u.get("cache_read_input_tokens"))
            + num(u.get("cache_creation_input_tokens"));
    }
    if result.get("usage").is_none() && result.get("modelUsage").is_none() {
        return Err(UnreadableOutput(format!(
            "claude's JSON result has neither `usage` nor `modelUsage`, so its tokens are unknown: {:?}. Check that `claude` on PATH is Claude Code 2.x (`claude --version`)",
            excerpt(stdout, 200)
        )));
    }
    let text = result
        .get("result")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let is_error = result.get("is_error").and_then(Value::as_bool) == Some(true)
        || result
            .get("subtype")
            .and_then(Value::as_str)
            .is_some_and(|s| s != "success");
    let error = is_error.then(|| {
        let subtype = result
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("error");
        if text.is_empty() {
            subtype.to_string()
        } else {
            format!("{subtype}: {}", excerpt(&text, 500))
        }
    });
    let denied = result
        .get("permission_denials")
        .and_then(Value::as_array)
        .map(|d| {
            d.iter()
                .filter_map(|x| x.get("tool_name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(ClaudeResult {
        usage: Usage {
            tokens,
            cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
            model: model.map(|(m, _)| m),
        },
        text,
        error,
        denied,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks() -> RunHooks {
        RunHooks {
            baton: "/opt/my tools/baton".into(),
            repo: "/r".into(),
            specs_dir: ".specs".into(),
            workspace: ".specs/20260101-x".into(),
            sandbox: crate::sandbox::Protected {
                deny_read: vec!["/home/me/.config/baton".into()],
                deny_write: vec!["/r/.specs".into()],
            },
        }
    }

    fn scope(writes: WriteScope) -> AgentScope {
        AgentScope {
            phase: "phase-1".into(),
            writes,
            git: Vec::new(),
            tools: Vec::new(),
            commands: Vec::new(),
            protected: baton_workflow::DEFAULT_PROTECTED
                .iter()
                .map(|s| s.to_string())
                .collect(),
            specs_dir: ".specs".into(),
            workspace: ".specs/20260101-x".into(),
        }
    }

    fn after<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
        let i = args.iter().position(|a| a == flag).expect(flag);
        args[i + 1..]
            .iter()
            .take_while(|a| !a.starts_with("--"))
            .map(String::as_str)
            .collect()
    }

    #[test]
    fn a_read_only_phase_may_write_only_its_artifact_and_never_commit() {
        let out = vec![".specs/20260101-x/analysis.md".to_string()];
        let a = args(
            &scope(WriteScope::Artifacts),
            &out,
            Some("sonnet"),
            &hooks(),
        );
        assert_eq!(&a[..3], ["-p", "--output-format", "json"]);
        assert_eq!(after(&a, "--permission-mode"), ["dontAsk"]);
        assert_eq!(after(&a, "--model"), ["sonnet"]);
        assert_eq!(after(&a, "--tools"), ["Read,Grep,Glob,Bash,Write,Edit"]);
        let allowed = after(&a, "--allowedTools");
        assert!(allowed.contains(&"Write(./.specs/20260101-x/analysis.md)"));
        assert!(allowed.contains(&"Edit(./.specs/20260101-x/analysis.md)"));
        assert!(allowed.contains(&"Bash(git diff:*)"));
        assert!(!allowed.contains(&"Write"), "{allowed:?}");
        assert!(!allowed.contains(&"Edit"), "{allowed:?}");
        assert!(!allowed.contains(&"Bash"), "{allowed:?}");
        let denied = after(&a, "--disallowedTools");
        assert!(denied.contains(&"Bash(git commit:*)"));
        assert!(denied.contains(&"Bash(git push:*)"));
    }

    #[test]
    fn an_implementation_phase_edits_the_repository_but_not_protected_paths_or_git() {
        let out = vec![".specs/20260101-x/impl-1.md".to_string()];
        let a = args(&scope(WriteScope::Repository), &out, None, &hooks());
        assert!(!a.contains(&"--model".to_string()));
        let allowed = after(&a, "--allowedTools");
        assert!(allowed.contains(&"Write") && allowed.contains(&"Edit"));
        assert!(allowed.contains(&"Bash"));
        let denied = after(&a, "--disallowedTools");
        for d in [
            "Bash(git commit:*)",
            "Bash(git push:*)",
            "Edit(./.claude/**)",
            "Write(./.git/**)",
            "Edit(./.specs/**/state.json)",
            "Write(./.baton/**)",
        ] {
            assert!(denied.contains(&d), "{d} in {denied:?}");
        }
    }

    #[test]
    fn git_subcommands_the_scope_allows_are_not_refused() {
        let mut s = scope(WriteScope::Repository);
        s.git = vec!["add".into(), "commit".into()];
        s.tools = vec!["mcp__docs__*".into()];
        let a = args(&s, &[], None, &hooks());
        let denied = after(&a, "--disallowedTools");
        assert!(!denied.contains(&"Bash(git commit:*)"));
        assert!(!denied.contains(&"Bash(git add:*)"));
        assert!(denied.contains(&"Bash(git push:*)"));
        assert!(after(&a, "--allowedTools").contains(&"mcp__docs__*"));
    }

    #[test]
    fn commands_the_scope_allows_are_allowed_in_a_read_only_phase() {
        let mut s = scope(WriteScope::Artifacts);
        s.commands = vec!["cargo test".into()];
        let a = args(&s, &[], None, &hooks());
        let allowed = after(&a, "--allowedTools");
        assert!(allowed.contains(&"Bash(cargo test:*)"), "{allowed:?}");
        assert!(!allowed.contains(&"Bash"), "{allowed:?}");
        s.commands = vec!["*".into()];
        let a = args(&s, &[], None, &hooks());
        assert!(after(&a, "--allowedTools").contains(&"Bash"));
        // Still no commit.
        assert!(after(&a, "--disallowedTools").contains(&"Bash(git commit:*)"));
    }

    #[test]
    fn every_run_calls_baton_s_hooks_bound_to_the_run() {
        let a = args(&scope(WriteScope::Artifacts), &[], None, &hooks());
        let settings: Value = serde_json::from_str(after(&a, "--settings")[0]).unwrap();
        let pre = &settings["hooks"]["PreToolUse"][0];
        assert_eq!(pre["matcher"], "*");
        assert_eq!(
            pre["hooks"][0]["command"],
            "'/opt/my tools/baton' --repo /r --specs-dir .specs hook --client claude --run .specs/20260101-x pre-tool-use"
        );
        let sandbox = &settings["sandbox"];
        assert_eq!(sandbox["enabled"], true);
        assert_eq!(sandbox["failIfUnavailable"], true);
        assert_eq!(sandbox["allowUnsandboxedCommands"], false);
        assert_eq!(
            sandbox["filesystem"]["denyRead"],
            serde_json::json!(["/home/me/.config/baton"])
        );
        assert_eq!(
            sandbox["filesystem"]["denyWrite"],
            serde_json::json!(["/r/.specs"])
        );
        let post = &settings["hooks"]["PostToolUse"][0];
        assert_eq!(post["matcher"], "Bash");
        assert!(
            post["hooks"][0]["command"]
                .as_str()
                .unwrap()
                .ends_with("--run .specs/20260101-x post-tool-use")
        );
    }

    #[test]
    fn the_documented_result_gives_tokens_cost_and_model() {
        let out = r##"{"type":"result","subtype":"success","is_error":false,"result":"# Analysis\nok","total_cost_usd":0.004,
            "usage":{"input_tokens":500,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":100},
            "modelUsage":{"claude-sonnet-4-5":{"inputTokens":480,"outputTokens":90,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0039},
                          "claude-haiku-4-5":{"inputTokens":20,"outputTokens":10,"cacheReadInputTokens":5,"cacheCreationInputTokens":0,"costUSD":0.0001}},
            "permission_denials":[{"tool_name":"Edit","tool_use_id":"t1","tool_input":{}}]}"##;
        let r = parse(out).unwrap();
        assert_eq!(r.usage.tokens, 480 + 90 + 20 + 10 + 5);
        assert_eq!(r.usage.cost_usd, Some(0.004));
        assert_eq!(r.usage.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(r.text, "# Analysis\nok");
        assert_eq!(r.error, None);
        assert_eq!(r.denied, ["Edit"]);
    }

    #[test]
    fn usage_alone_is_enough_and_an_error_result_is_an_error() {
        let out = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"usage":{"input_tokens":7,"output_tokens":3}}"#;
        let r = parse(out).unwrap();
        assert_eq!(r.usage.tokens, 10);
        assert_eq!(r.usage.model, None);
        assert_eq!(r.usage.cost_usd, None);
        assert_eq!(r.error.as_deref(), Some("error_max_turns"));
    }

    #[test]
    fn output_that_is_not_the_documented_json_is_refused_with_what_to_check() {
        for bad in [
            "",
            "Hello, I am Claude",
            "{\"type\":\"assistant\"}",
            "[1,2]",
            r#"{"type":"result","result":"x"}"#,
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("claude --version"), "{bad:?}: {e}");
        }
    }
}
