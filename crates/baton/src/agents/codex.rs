//! The Codex preset: `codex exec --json`, the prompt on stdin, the phase's
//! scope as Codex's sandbox — `read-only` where the phase may write only its
//! artifact (baton writes the artifact from the agent's last message),
//! `workspace-write` where it may change the repository or run the
//! commands its scope lists (a verifier's test suite builds), never
//! `danger-full-access` — baton's hooks bound to the run (`-c hooks.…`,
//! with `--dangerously-bypass-hook-trust`: Codex 0.169.0 runs hooks that no
//! person trusted in its TUI only with it), and the tokens read from its
//! JSON events.

use std::path::Path;

use serde_json::Value;

use baton_usecases::headless::AgentScope;
use baton_workflow::WriteScope;

use super::{HOOK_TIMEOUT_SECS, RunHooks, UnreadableOutput, Usage, excerpt};

/// Codex's sandbox for a phase: an implementation phase may write, and so
/// may a phase whose scope lists commands (a test suite writes its build
/// output; baton's hooks compare the working tree after each such command
/// and the run does not go on while a change outside the scope is left).
/// Every other phase reads only.
pub fn sandbox(scope: &AgentScope) -> &'static str {
    match scope.writes {
        WriteScope::Repository => "workspace-write",
        WriteScope::Artifacts | WriteScope::None if !scope.commands.is_empty() => "workspace-write",
        WriteScope::Artifacts | WriteScope::None => "read-only",
    }
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `-c` overrides that make Codex call baton's hooks for the run:
/// every tool call before it runs, and shell commands after (watched
/// commands).
pub fn hook_overrides(hooks: &RunHooks) -> Vec<String> {
    [
        ("PreToolUse", "*", "pre-tool-use"),
        ("PostToolUse", "Bash", "post-tool-use"),
    ]
    .iter()
    .flat_map(|(event, matcher, name)| {
        [
            "-c".to_string(),
            format!(
                "hooks.{event}=[{{matcher={},hooks=[{{type=\"command\",command={},timeout={HOOK_TIMEOUT_SECS}}}]}}]",
                toml_string(matcher),
                toml_string(&hooks.command("codex", name)),
            ),
        ]
    })
    .collect()
}

/// The command-line arguments (after the program) for one agent run in
/// `repo`; the agent's last message goes to `last_message`; `hooks` how
/// the CLI calls baton's hooks for the run.
pub fn args(scope: &AgentScope, repo: &Path, last_message: &Path, hooks: &RunHooks) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "exec".into(),
        "--json".into(),
        "--sandbox".into(),
        sandbox(scope).into(),
        "--skip-git-repo-check".into(),
        "--cd".into(),
        repo.display().to_string(),
        "--output-last-message".into(),
        last_message.display().to_string(),
    ];
    args.extend(hook_overrides(hooks));
    args.push("--dangerously-bypass-hook-trust".into());
    args.push("-".into());
    args
}

/// The model Codex runs with: `model` of its configuration file
/// (`$CODEX_HOME/config.toml`, else `~/.codex/config.toml`), when set there.
pub fn configured_model(codex_home: Option<&Path>, home: Option<&Path>) -> Option<String> {
    let file = match codex_home {
        Some(dir) => dir.join("config.toml"),
        None => home?.join(".codex").join("config.toml"),
    };
    let meta = std::fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.len() > 1024 * 1024 {
        return None;
    }
    model_of(&std::fs::read_to_string(file).ok()?)
}

/// `model = "…"` before the first table of a TOML text.
fn model_of(toml: &str) -> Option<String> {
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            return None;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() == "model" {
            let v = value.trim();
            let v = v.split(" #").next().unwrap_or(v).trim();
            let unquoted = v
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))?;
            return (!unquoted.is_empty()).then(|| unquoted.to_string());
        }
    }
    None
}

/// What one `codex exec --json` run reported.
#[derive(Debug, Clone, PartialEq)]
pub struct CodexResult {
    /// Tokens (Codex reports no cost; the model is its configuration's).
    pub usage: Usage,
    /// The agent's last message.
    pub text: String,
    /// The turn failed, with what Codex said.
    pub error: Option<String>,
}

/// Reads the JSON events of `codex exec --json` (one object per line:
/// `thread.started`, `turn.started`, `item.*`, `turn.completed` with
/// `usage`, `turn.failed`, `error`). Tokens are input (cached included)
/// plus output, summed over the turns.
pub fn parse(stdout: &str) -> Result<CodexResult, UnreadableOutput> {
    let mut tokens = 0u64;
    let mut text = String::new();
    let mut error = None;
    let mut ended = false;
    let mut events = 0usize;
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            continue;
        };
        events += 1;
        match kind {
            "turn.completed" => {
                ended = true;
                let usage = event.get("usage");
                let n = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_u64);
                tokens += n("input_tokens").unwrap_or(0) + n("output_tokens").unwrap_or(0);
            }
            "turn.failed" => {
                ended = true;
                error = Some(
                    event
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("the turn failed")
                        .to_string(),
                );
            }
            "error" => {
                error = Some(
                    event
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string(),
                );
            }
            "item.completed" => {
                if event.pointer("/item/type").and_then(Value::as_str) == Some("agent_message")
                    && let Some(t) = event.pointer("/item/text").and_then(Value::as_str)
                {
                    text = t.to_string();
                }
            }
            _ => {}
        }
    }
    if events == 0 {
        return Err(UnreadableOutput(format!(
            "codex printed no JSON events (`codex exec --json`): {:?}. Check that `codex` on PATH is Codex 0.1xx or later (`codex --version`)",
            excerpt(stdout, 200)
        )));
    }
    if !ended && error.is_none() {
        return Err(UnreadableOutput(format!(
            "codex's events end without `turn.completed` or `turn.failed`, so its tokens are unknown: {:?}. Check that `codex` on PATH is Codex 0.1xx or later (`codex --version`)",
            excerpt(stdout, 200)
        )));
    }
    Ok(CodexResult {
        usage: Usage {
            tokens,
            cost_usd: None,
            model: None,
        },
        text,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks() -> RunHooks {
        RunHooks {
            baton: "/usr/bin/baton".into(),
            repo: "/r".into(),
            specs_dir: ".specs".into(),
            workspace: ".specs/x".into(),
            sandbox: crate::sandbox::Protected {
                deny_read: vec!["/home/me/.config/baton".into()],
                deny_write: vec!["/r/.specs".into()],
            },
        }
    }

    fn scope(writes: WriteScope) -> AgentScope {
        AgentScope {
            phase: "p".into(),
            writes,
            git: Vec::new(),
            tools: Vec::new(),
            commands: Vec::new(),
            protected: Vec::new(),
            specs_dir: ".specs".into(),
            workspace: ".specs/x".into(),
        }
    }

    #[test]
    fn read_only_phases_get_the_read_only_sandbox_and_never_full_access() {
        let a = args(
            &scope(WriteScope::Artifacts),
            Path::new("/r"),
            Path::new("/t/last"),
            &hooks(),
        );
        assert_eq!(
            a[..9],
            [
                "exec",
                "--json",
                "--sandbox",
                "read-only",
                "--skip-git-repo-check",
                "--cd",
                "/r",
                "--output-last-message",
                "/t/last",
            ]
        );
        assert_eq!(a.last().map(String::as_str), Some("-"));
        assert_eq!(sandbox(&scope(WriteScope::None)), "read-only");
        assert_eq!(sandbox(&scope(WriteScope::Repository)), "workspace-write");
        let mut verifier = scope(WriteScope::Artifacts);
        verifier.commands = vec!["*".into()];
        assert_eq!(sandbox(&verifier), "workspace-write");
        for w in [
            WriteScope::None,
            WriteScope::Artifacts,
            WriteScope::Repository,
        ] {
            let a = args(&scope(w), Path::new("/r"), Path::new("/l"), &hooks());
            assert!(
                !a.iter()
                    .any(|x| x.contains("danger") && x != "--dangerously-bypass-hook-trust"),
                "{a:?}"
            );
        }
    }

    #[test]
    fn every_run_calls_baton_s_hooks_bound_to_the_run() {
        let a = args(
            &scope(WriteScope::Artifacts),
            Path::new("/r"),
            Path::new("/l"),
            &hooks(),
        );
        let overrides: Vec<&String> = a
            .iter()
            .zip(a.iter().skip(1))
            .filter(|(flag, _)| *flag == "-c")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(overrides.len(), 2, "{a:?}");
        let pre: toml::Value = toml::from_str(overrides[0]).unwrap();
        let entry = &pre["hooks"]["PreToolUse"][0];
        assert_eq!(entry["matcher"].as_str(), Some("*"));
        assert_eq!(
            entry["hooks"][0]["command"].as_str(),
            Some(
                "/usr/bin/baton --repo /r --specs-dir .specs hook --client codex --run .specs/x pre-tool-use"
            )
        );
        let post: toml::Value = toml::from_str(overrides[1]).unwrap();
        assert_eq!(
            post["hooks"]["PostToolUse"][0]["matcher"].as_str(),
            Some("Bash")
        );
        assert!(a.contains(&"--dangerously-bypass-hook-trust".to_string()));
        assert_eq!(
            toml_string("a \"q\" \\ b\n"),
            "\"a \\\"q\\\" \\\\ b\\u000A\""
        );
    }

    #[test]
    fn the_documented_events_give_tokens_and_the_last_message() {
        let out = r##"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"ls","exit_code":0}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"draft"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"# Analysis\nfinal"}}
{"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":50,"output_tokens":40,"reasoning_output_tokens":10}}
"##;
        let r = parse(out).unwrap();
        assert_eq!(r.usage.tokens, 240);
        assert_eq!(r.usage.cost_usd, None);
        assert_eq!(r.text, "# Analysis\nfinal");
        assert_eq!(r.error, None);
    }

    #[test]
    fn a_failed_turn_is_an_error_with_codex_s_words() {
        let out = r#"{"type":"thread.started","thread_id":"t"}
{"type":"error","message":"stream disconnected"}
{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}"#;
        let r = parse(out).unwrap();
        assert_eq!(
            r.error.as_deref(),
            Some("stream disconnected before completion")
        );
        assert_eq!(r.usage.tokens, 0);
    }

    #[test]
    fn output_that_is_not_the_documented_events_is_refused() {
        for bad in [
            "",
            "codex 0.1",
            "{\"no\":\"type\"}",
            "{\"type\":\"thread.started\"}",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("codex --version"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_configured_model_is_read_from_the_top_of_config_toml() {
        assert_eq!(
            model_of("# c\nmodel = \"gpt-5-codex\"\n[x]\nmodel = \"no\"\n").as_deref(),
            Some("gpt-5-codex")
        );
        assert_eq!(model_of("[profiles.a]\nmodel = \"no\"\n"), None);
        assert_eq!(model_of("model = 'o4' # comment\n").as_deref(), Some("o4"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "model = \"m\"\n").unwrap();
        assert_eq!(
            configured_model(Some(dir.path()), None).as_deref(),
            Some("m")
        );
        assert_eq!(configured_model(None, Some(dir.path())), None);
    }
}
