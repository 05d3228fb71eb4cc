//! The real agent CLIs, pinned in `tests/clients` (package.json and its
//! lock; `./scripts/test` installs them with `npm ci` into
//! `tests/clients/node_modules`), run headless against a scripted model
//! server on loopback ([`crate::model`]).
//!
//! Every run gets a clean environment: nothing of the developer's (no real
//! API key, no coding client's variables, no `~/.claude`), `HOME` set to
//! a scratch folder the caller owns, the model server's address, a dummy
//! key, and `PATH` = the caller's folders (the baton under test) + the
//! pinned CLIs + the system's.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The folder of the pinned clients: `<repository>/tests/clients`.
pub fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients")
}

/// The folder of the clients' commands (`claude`, `codex`).
pub fn bin_dir() -> PathBuf {
    clients_dir().join("node_modules/.bin")
}

/// The pinned CLI `name` (`claude` or `codex`); panics with how to install
/// it when it is missing.
pub fn require(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{name} is missing from tests/clients/node_modules: run \
         `npm ci --prefix tests/clients` (./scripts/test does it)"
    );
    path
}

/// The system folders on `PATH` for a client: where git, sh and node live.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `PATH` for a client: `first` folders, then the pinned CLIs, then the
/// system's.
pub fn client_path(first: &[PathBuf]) -> OsString {
    let mut dirs: Vec<PathBuf> = first.to_vec();
    dirs.push(bin_dir());
    let mut path = std::env::join_paths(dirs).expect("PATH folders without ':'");
    path.push(":");
    path.push(SYSTEM_PATH);
    path
}

/// The environment Claude Code runs in against `base_url`: `HOME`, the
/// model server, a dummy key, `IS_SANDBOX=1` (so
/// `--dangerously-skip-permissions` is accepted as root; hook decisions
/// still apply), no auto-update or other traffic, and `PATH` (see
/// [`client_path`]).
pub fn claude_env(
    home: &Path,
    base_url: &str,
    path_first: &[PathBuf],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![
        ("HOME".into(), home.into()),
        ("PATH".into(), client_path(path_first)),
        ("ANTHROPIC_BASE_URL".into(), base_url.into()),
        ("ANTHROPIC_API_KEY".into(), "sk-ant-scripted".into()),
        ("IS_SANDBOX".into(), "1".into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
        ("DISABLE_TELEMETRY".into(), "1".into()),
        ("DISABLE_ERROR_REPORTING".into(), "1".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    if let Some(tmp) = std::env::var_os("TMPDIR") {
        env.push(("TMPDIR".into(), tmp));
    }
    env
}

/// The environment `codex exec` runs in: `HOME`, `CODEX_HOME` (which must
/// hold the provider's `config.toml`), the provider's key variable
/// `SCRIPTED_MODEL_KEY`, `PATH`, and `TMPDIR` inside `CODEX_HOME`.
pub fn codex_env(
    home: &Path,
    codex_home: &Path,
    path_first: &[PathBuf],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![
        ("HOME".into(), home.into()),
        ("CODEX_HOME".into(), codex_home.into()),
        ("PATH".into(), client_path(path_first)),
        ("SCRIPTED_MODEL_KEY".into(), "sk-scripted".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    // Codex 0.169.0 refuses to create its sandbox helper
    // (`codex-linux-sandbox`, which its bubblewrap sandbox runs) when
    // `CODEX_HOME` is inside the temporary folder — as every test's is —
    // and its sandboxed commands then fail wherever bubblewrap is
    // installed. Its temporary folder is therefore one inside CODEX_HOME.
    let tmp = codex_home.join("tmp");
    if std::fs::create_dir_all(&tmp).is_ok() {
        env.push(("TMPDIR".into(), tmp.into()));
    } else if let Some(tmp) = std::env::var_os("TMPDIR") {
        env.push(("TMPDIR".into(), tmp));
    }
    env
}

/// What one CLI run left.
#[derive(Debug)]
pub struct CliOutput {
    /// The exit status (`None` when it was killed at the time limit).
    pub status: Option<ExitStatus>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl CliOutput {
    /// Standard output parsed as one JSON value (`claude -p --output-format
    /// json`), or `Value::Null`.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or(Value::Null)
    }

    /// Standard output parsed as JSON lines (`codex exec --json`,
    /// `--output-format stream-json`); lines that are not JSON are skipped.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// True when the CLI exited with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// Runs `command` (stdin closed) until it exits or `limit` passes (then it
/// is killed, and its process group with it).
pub fn run_with_limit(mut command: Command, limit: Duration) -> CliOutput {
    use std::os::unix::process::CommandExt as _;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn().expect("start the client CLI");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= limit => {
                // SAFETY: kill(2) on the child's own process group.
                unsafe {
                    libc::kill(-(child.id() as i32), libc::SIGKILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for the client CLI: {e}"),
        }
    };
    // The client may leave children (an MCP server) holding the pipes:
    // end the group so the readers see the end of the streams.
    // SAFETY: as above.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    CliOutput {
        status,
        stdout,
        stderr,
        elapsed: started.elapsed(),
    }
}

/// Claude Code run headless in one folder against one model server.
pub struct ClaudeCode {
    /// The folder it runs in (the repository).
    pub cwd: PathBuf,
    /// Its environment (see [`claude_env`]).
    pub env: Vec<(OsString, OsString)>,
    /// Arguments before the prompt (default: `--output-format json
    /// --dangerously-skip-permissions`).
    pub args: Vec<String>,
    /// How long one run may take.
    pub limit: Duration,
}

impl ClaudeCode {
    /// Claude Code in `cwd` with `HOME` = `home`, talking to `base_url`,
    /// with `path_first` (the baton under test) first on `PATH`.
    pub fn new(cwd: &Path, home: &Path, base_url: &str, path_first: &[PathBuf]) -> ClaudeCode {
        require("claude");
        ClaudeCode {
            cwd: cwd.to_path_buf(),
            env: claude_env(home, base_url, path_first),
            args: vec![
                "--output-format".into(),
                "json".into(),
                "--dangerously-skip-permissions".into(),
            ],
            limit: Duration::from_secs(180),
        }
    }

    /// Sets (or adds) an environment variable.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    /// The command for `claude` with `args`, its environment and folder.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(require("claude"));
        command
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// `claude -p PROMPT` with the default arguments.
    pub fn prompt(&self, prompt: &str) -> CliOutput {
        let mut args: Vec<&str> = vec!["-p", prompt];
        args.extend(self.args.iter().map(String::as_str));
        run_with_limit(self.command(&args), self.limit)
    }

    /// `claude -p PROMPT --resume SESSION`: the person's next message in
    /// the same session.
    pub fn resume(&self, session: &str, prompt: &str) -> CliOutput {
        let mut args: Vec<&str> = vec!["-p", prompt, "--resume", session];
        args.extend(self.args.iter().map(String::as_str));
        run_with_limit(self.command(&args), self.limit)
    }
}

/// `codex exec` run headless in one folder against one model server.
pub struct Codex {
    /// The folder it runs in (the repository).
    pub cwd: PathBuf,
    /// Its environment (see [`codex_env`]).
    pub env: Vec<(OsString, OsString)>,
    /// Arguments after `exec` and before the prompt (default: `--json`).
    pub args: Vec<String>,
    /// How long one run may take.
    pub limit: Duration,
}

impl Codex {
    /// Codex in `cwd` with `HOME` = `home` and `CODEX_HOME` = `codex_home`
    /// (whose `config.toml` the caller writes, e.g. with
    /// [`crate::model::openai::OpenAiServer::codex_provider`]).
    pub fn new(cwd: &Path, home: &Path, codex_home: &Path, path_first: &[PathBuf]) -> Codex {
        require("codex");
        Codex {
            cwd: cwd.to_path_buf(),
            env: codex_env(home, codex_home, path_first),
            args: vec!["--json".into()],
            limit: Duration::from_secs(180),
        }
    }

    /// The command for `codex` with `args`, its environment and folder.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(require("codex"));
        command
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// `codex exec [args] PROMPT`.
    pub fn exec(&self, prompt: &str) -> CliOutput {
        let mut args: Vec<&str> = vec!["exec"];
        args.extend(self.args.iter().map(String::as_str));
        args.push(prompt);
        run_with_limit(self.command(&args), self.limit)
    }
}
