//! The agents `baton run` starts for each step: the real agent CLIs
//! (`--agent claude`, `--agent codex`) in their non-interactive modes with
//! the phase's tool scope, any other command line (run with `sh -c`, the
//! prompt on stdin), or the built-in scripted agent of the demo.
//!
//! A preset turns the phase's scope (`baton_usecases::headless::AgentScope`,
//! from the workflow definition) into the CLI's own controls and reads the
//! tokens, cost and model from the CLI's own JSON result
//! ([`claude`], [`codex`]).

pub mod claude;
pub mod codex;
pub mod step;

use std::path::{Path, PathBuf};

/// Where agents come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agent {
    /// The built-in deterministic scripted agent (no LLM).
    Scripted,
    /// Claude Code (`claude -p --output-format json`), found on PATH.
    Claude(PathBuf),
    /// Codex (`codex exec --json`), found on PATH.
    Codex(PathBuf),
    /// A command run with `sh -c`, the prompt on stdin.
    Command(String),
}

/// `--agent` could not be used; nothing was started or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentError {
    /// Nothing was given.
    Empty,
    /// A preset whose CLI is not on PATH: the preset, the product, how to
    /// install it.
    MissingCli(&'static str, &'static str, &'static str),
    /// One word that is neither a preset nor a command.
    Unknown(String),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Empty => write!(
                f,
                "--agent is empty: pass a preset (claude or codex) or the command that runs your agent, e.g. --agent claude"
            ),
            AgentError::MissingCli(preset, product, install) => write!(
                f,
                "--agent {preset} starts the {product} CLI `{preset}`, which is not on PATH. Install it ({install}) or put it on PATH, or pass the command that runs your agent with --agent 'COMMAND'"
            ),
            AgentError::Unknown(word) => write!(
                f,
                "--agent {word:?} is not a preset (the presets are claude and codex) and not a command on PATH; pass a preset, or the command that runs your agent, e.g. --agent 'my-agent --flag'"
            ),
        }
    }
}

impl std::error::Error for AgentError {}

impl Agent {
    /// Parses `--agent` against `path` (the PATH variable): `claude` and
    /// `codex` start those CLIs and must be on PATH; `builtin:scripted` is
    /// the demo's agent; anything else is a command line, and a single word
    /// must name a program that exists.
    pub fn parse(text: &str, path: Option<&std::ffi::OsStr>) -> Result<Agent, AgentError> {
        let text = text.trim();
        match text {
            "" => Err(AgentError::Empty),
            "builtin:scripted" => Ok(Agent::Scripted),
            "claude" => which("claude", path)
                .map(Agent::Claude)
                .ok_or(AgentError::MissingCli(
                    "claude",
                    "Claude Code",
                    "npm install -g @anthropic-ai/claude-code",
                )),
            "codex" => which("codex", path)
                .map(Agent::Codex)
                .ok_or(AgentError::MissingCli(
                    "codex",
                    "Codex",
                    "npm install -g @openai/codex",
                )),
            word if is_one_word(word) => {
                let exists = if word.contains('/') {
                    Path::new(word).is_file()
                } else {
                    which(word, path).is_some() || is_shell_builtin(word)
                };
                if exists {
                    Ok(Agent::Command(word.to_string()))
                } else {
                    Err(AgentError::Unknown(word.to_string()))
                }
            }
            line => Ok(Agent::Command(line.to_string())),
        }
    }

    /// What `--agent` was: the preset's name, the command line, or
    /// `builtin:scripted` (for the resume command and the run's record).
    pub fn label(&self) -> String {
        match self {
            Agent::Scripted => "builtin:scripted".into(),
            Agent::Claude(_) => "claude".into(),
            Agent::Codex(_) => "codex".into(),
            Agent::Command(c) => c.clone(),
        }
    }
}

fn is_one_word(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_whitespace() || "|&;<>()$`\\\"'*?[]#~=%".contains(c))
}

/// Words `sh -c` runs without a program on PATH.
fn is_shell_builtin(word: &str) -> bool {
    matches!(word, "true" | "false" | ":" | "exit")
}

/// The first executable file named `program` in `path`'s folders.
pub fn which(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::split_paths(path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// How an agent's client calls `baton hook` for the run `baton run` drives:
/// this baton's own program (never whatever `baton` is on PATH), the
/// repository and specs folder it works in, and the run — so that the
/// session is bound to the run at its first event and the hooks enforce
/// the phase's scope inside the CLI itself (docs/clients.md, "Inside `baton
/// run`").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunHooks {
    /// The baton program (`std::env::current_exe`).
    pub baton: PathBuf,
    /// The repository.
    pub repo: PathBuf,
    /// The specs folder (absolute or relative to the repository).
    pub specs_dir: PathBuf,
    /// The run's workspace as shown (`.specs/<run>`).
    pub workspace: String,
    /// What the agent's sandboxed commands may not read or write (Claude
    /// Code's Bash sandbox, [`crate::sandbox`]).
    pub sandbox: crate::sandbox::Protected,
}

impl RunHooks {
    /// The shell command of one hook event (`pre-tool-use`, `post-tool-use`)
    /// in the contract of `client` (`claude`, `codex`).
    pub fn command(&self, client: &str, event: &str) -> String {
        use baton_usecases::headless::shell_word;
        format!(
            "{} --repo {} --specs-dir {} hook --client {client} --run {} {event}",
            shell_word(&self.baton.to_string_lossy()),
            shell_word(&self.repo.to_string_lossy()),
            shell_word(&self.specs_dir.to_string_lossy()),
            shell_word(&self.workspace),
        )
    }
}

/// The longest a hook may take before the client gives up on it (seconds).
pub const HOOK_TIMEOUT_SECS: u64 = 30;

/// What one agent run cost, as its client reported it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Tokens: input (cached or not) plus output.
    pub tokens: u64,
    /// US dollars, when the client reported a cost.
    pub cost_usd: Option<f64>,
    /// The model, when the client said which.
    pub model: Option<String>,
}

impl Usage {
    /// The sum of several runs (a fan-out): tokens and costs add up; the
    /// model is the one they share, or all of them joined with `+`.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Usage>) -> Usage {
        let mut total = Usage::default();
        let mut models: Vec<String> = Vec::new();
        let mut any_cost = false;
        let mut cost = 0.0;
        for u in parts {
            total.tokens += u.tokens;
            if let Some(c) = u.cost_usd {
                any_cost = true;
                cost += c;
            }
            if let Some(m) = &u.model
                && !models.contains(m)
            {
                models.push(m.clone());
            }
        }
        total.cost_usd = any_cost.then_some(cost);
        total.model = (!models.is_empty()).then(|| models.join("+"));
        total
    }
}

/// The client's output was not the JSON its documentation describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableOutput(pub String);

impl std::fmt::Display for UnreadableOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The start of `text` for a message: at most `max` characters, one line.
pub fn excerpt(text: &str, max: usize) -> String {
    let flat: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin_dir(programs: &[&str]) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        for p in programs {
            let f = dir.path().join(p);
            std::fs::write(&f, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    #[test]
    fn presets_resolve_on_path_and_say_how_to_install_when_missing() {
        let bins = bin_dir(&["claude"]);
        let path = bins.path().as_os_str();
        assert_eq!(
            Agent::parse("claude", Some(path)),
            Ok(Agent::Claude(bins.path().join("claude")))
        );
        let missing = Agent::parse("codex", Some(path)).unwrap_err();
        let text = missing.to_string();
        assert!(text.contains("`codex`, which is not on PATH"), "{text}");
        assert!(text.contains("npm install -g @openai/codex"), "{text}");
        assert!(text.contains("--agent 'COMMAND'"), "{text}");
    }

    #[test]
    fn an_unknown_single_word_is_refused_and_command_lines_pass() {
        let bins = bin_dir(&["my-agent"]);
        let path = bins.path().as_os_str();
        let err = Agent::parse("claud", Some(path)).unwrap_err();
        assert_eq!(err, AgentError::Unknown("claud".into()));
        assert!(err.to_string().contains("the presets are claude and codex"));
        assert_eq!(
            Agent::parse("my-agent", Some(path)),
            Ok(Agent::Command("my-agent".into()))
        );
        assert_eq!(
            Agent::parse("exit 3", Some(path)),
            Ok(Agent::Command("exit 3".into()))
        );
        assert_eq!(
            Agent::parse("true", Some(path)),
            Ok(Agent::Command("true".into()))
        );
        assert_eq!(
            Agent::parse("./nope.sh", Some(path)),
            Err(AgentError::Unknown("./nope.sh".into()))
        );
        assert_eq!(Agent::parse("  ", Some(path)), Err(AgentError::Empty));
        assert_eq!(
            Agent::parse("builtin:scripted", Some(path)),
            Ok(Agent::Scripted)
        );
    }

    #[test]
    fn usage_of_a_fan_out_adds_up() {
        let a = Usage {
            tokens: 10,
            cost_usd: Some(0.5),
            model: Some("m1".into()),
        };
        let b = Usage {
            tokens: 5,
            cost_usd: None,
            model: Some("m1".into()),
        };
        let c = Usage {
            tokens: 1,
            cost_usd: Some(0.25),
            model: Some("m2".into()),
        };
        let s = Usage::sum([&a, &b, &c]);
        assert_eq!(s.tokens, 16);
        assert_eq!(s.cost_usd, Some(0.75));
        assert_eq!(s.model.as_deref(), Some("m1+m2"));
        assert_eq!(Usage::sum([&b]).cost_usd, None);
        assert_eq!(Usage::sum(std::iter::empty()).model, None);
    }
}
