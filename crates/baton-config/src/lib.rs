//! Configuration for baton, resolved once at start-up.
//!
//! Precedence, highest first: command-line flags (applied by the binary through
//! [`Overrides`]), environment variables, `baton.toml` at the repository root,
//! built-in defaults. Every path in the resolved [`Config`] is absolute, so no
//! later code ever depends on the process's current directory.
//!
//! The environment variables are listed in [`env`]; `docs/configuration.md` is
//! the user-facing reference.

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Names of the environment variables baton reads.
pub mod env {
    /// Repository root (default: nearest ancestor of the working directory holding `.git` or `baton.toml`).
    pub const REPO_ROOT: &str = "BATON_REPO_ROOT";
    /// Specs root holding one folder per workspace (default `<repo>/.specs`).
    pub const SPECS_DIR: &str = "BATON_SPECS_DIR";
    /// `on`/`off`: write the JSON-RPC transcript (default on).
    pub const TRANSCRIPT: &str = "BATON_TRANSCRIPT";
    /// Folder for transcript files (default `<repo>/.baton/logs`).
    pub const LOG_DIR: &str = "BATON_LOG_DIR";
    /// `1`/`true`: development mode, echo every JSON-RPC message pretty-printed to stderr.
    pub const DEV: &str = "BATON_DEV";
    /// Event log file (default `<repo>/.baton/events/events.jsonl`).
    pub const EVENTS_LOG: &str = "BATON_EVENTS_LOG";
    /// Size in bytes at which the event log is rotated (default 8 MiB).
    pub const EVENTS_MAX_BYTES: &str = "BATON_EVENTS_MAX_BYTES";
    /// Comma-separated tool profiles or groups to expose (default: the `pipeline` profile).
    pub const TOOLS: &str = "BATON_TOOLS";
    /// Size in bytes at which a transcript file is closed and a new one begun (default 8 MiB).
    pub const TRANSCRIPT_MAX_BYTES: &str = "BATON_TRANSCRIPT_MAX_BYTES";
    /// Bytes all transcript files together may take; the oldest go first (default 64 MiB).
    pub const TRANSCRIPT_MAX_TOTAL_BYTES: &str = "BATON_TRANSCRIPT_MAX_TOTAL_BYTES";
    /// A message larger than this many bytes is recorded as its size, hash and start (default 64 KiB).
    pub const TRANSCRIPT_MAX_PAYLOAD: &str = "BATON_TRANSCRIPT_MAX_PAYLOAD";
    /// Folder of project workflow definitions (default `<repo>/.baton/workflows`).
    pub const WORKFLOWS_DIR: &str = "BATON_WORKFLOWS_DIR";
    /// `on`/`off`/`strict`: make state changes survive power loss, synced
    /// right after the reply (`on`, the default) or before it (`strict`).
    pub const FSYNC: &str = "BATON_FSYNC";
    /// How long a call waits for a workspace lock held by another call, in
    /// milliseconds, before it answers `busy` (default 5000).
    pub const LOCK_TIMEOUT_MS: &str = "BATON_LOCK_TIMEOUT_MS";
    /// Default token price for cost figures, US dollars per million tokens (default 6).
    pub const PRICE_USD_PER_MTOK: &str = "BATON_PRICE_USD_PER_MTOK";
    /// A Slack incoming-webhook URL told about runs (see [`crate::notify`]).
    pub const NOTIFY_SLACK_URL: &str = "BATON_NOTIFY_SLACK_URL";
    /// A webhook URL that receives baton's JSON notifications.
    pub const NOTIFY_WEBHOOK_URL: &str = "BATON_NOTIFY_WEBHOOK_URL";
    /// Bearer token sent to `BATON_NOTIFY_WEBHOOK_URL`.
    pub const NOTIFY_WEBHOOK_TOKEN: &str = "BATON_NOTIFY_WEBHOOK_TOKEN";
    /// What the two webhooks above are told about (comma-separated).
    pub const NOTIFY_ON: &str = "BATON_NOTIFY_ON";
    /// Retries after a failed delivery (default 4).
    pub const NOTIFY_RETRIES: &str = "BATON_NOTIFY_RETRIES";
    /// The first retry's delay in milliseconds (default 500, doubling).
    pub const NOTIFY_BACKOFF_MS: &str = "BATON_NOTIFY_BACKOFF_MS";
    /// The dashboard's address, for links in notifications.
    pub const DASHBOARD_URL: &str = "BATON_DASHBOARD_URL";
    /// No longer read: a secret in the environment is inherited by every
    /// process started from it (the agent too) and readable in
    /// `/proc/<pid>/environ`. Set, it is an error naming
    /// [`DASHBOARD_TOKEN_FILE`].
    pub const DASHBOARD_TOKEN: &str = "BATON_DASHBOARD_TOKEN";
    /// A file holding the dashboard's access token (required beyond
    /// loopback; it reads and reaches `/mcp`, it never acts).
    pub const DASHBOARD_TOKEN_FILE: &str = "BATON_DASHBOARD_TOKEN_FILE";
    /// The port `baton dashboard` listens on (default 8377).
    pub const DASHBOARD_PORT: &str = "BATON_DASHBOARD_PORT";
    /// Extra host names the dashboard answers to (comma-separated).
    pub const DASHBOARD_HOSTS: &str = "BATON_DASHBOARD_HOSTS";
    /// The team database (PostgreSQL URL): team mode is on when set (docs/team.md).
    pub const DATABASE_URL: &str = "BATON_DATABASE_URL";
}

pub mod budget;
pub mod dashboard;
pub mod manuals;
pub mod notify;
pub mod person;
mod specs_dir;
pub mod team;

pub use budget::Budget;
pub use dashboard::DashboardConfig;
pub use notify::{NotifyConfig, NotifyOn, Secret, Webhook, WebhookFormat};
pub use person::PersonSettings;
pub use team::TeamConfig;

/// Name of the optional configuration file at the repository root.
pub const CONFIG_FILE: &str = "baton.toml";

/// Default rotation size of the event log: 8 MiB.
pub const DEFAULT_EVENTS_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Default size at which a transcript file is closed and a new one begun: 8 MiB.
pub const DEFAULT_TRANSCRIPT_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Default budget of all transcript files in the folder: 64 MiB.
pub const DEFAULT_TRANSCRIPT_MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Default size above which a message is recorded truncated: 64 KiB.
pub const DEFAULT_TRANSCRIPT_MAX_PAYLOAD: u64 = 64 * 1024;

/// Number of rotated event-log files kept beside the live one.
pub const DEFAULT_EVENTS_KEEP: usize = 3;

/// Default token price for cost figures: US dollars per million tokens.
pub const DEFAULT_USD_PER_MTOK: f64 = 6.0;

/// Errors while resolving the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `baton.toml` exists but could not be read. (The I/O error is part
    /// of the message, not a `source`: shown as a chain it would be said
    /// twice.)
    #[error("cannot read {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The repository given (`--repo`, `BATON_REPO_ROOT`) is not a folder.
    #[error(
        "{path} is not a folder: pass --repo (or BATON_REPO_ROOT) the folder of your repository"
    )]
    RepoNotAFolder {
        /// The path given.
        path: PathBuf,
    },
    /// `baton.toml` is not valid TOML or has unknown keys.
    #[error("invalid {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said, with line and column.
        message: String,
    },
    /// An environment variable or setting has a value that cannot be used.
    #[error("invalid value {value:?} for {name}: {reason}")]
    InvalidValue {
        /// The variable or key.
        name: String,
        /// The value given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// The working directory could not be determined.
    #[error("cannot determine the working directory: {0}")]
    Cwd(std::io::Error),
}

/// The resolved configuration. All paths are absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The repository root.
    pub repo_root: PathBuf,
    /// The specs root: one folder per workspace lives here.
    pub specs_root: PathBuf,
    /// Folder of project workflow definitions (`*.yaml`, `*.yml`, `*.json`).
    pub workflows_dir: PathBuf,
    /// JSON-RPC transcript settings.
    pub transcript: TranscriptConfig,
    /// Event log settings.
    pub events: EventsConfig,
    /// Tool profiles or groups to expose; `None` (or empty) exposes the
    /// default profile (`pipeline`).
    pub tool_groups: Option<Vec<String>>,
    /// Make every state change survive power loss (journaled, synced by a
    /// background thread within a bounded window; docs/lifecycle.md).
    pub fsync: bool,
    /// With `fsync`: sync each change before its call returns (`strict`)
    /// instead of right after.
    pub fsync_before_reply: bool,
    /// How long a call waits for a held workspace lock (milliseconds).
    pub lock_timeout_ms: u64,
    /// Token prices for the cost figures of analytics and estimates.
    pub prices: Prices,
    /// Webhooks told about runs.
    pub notify: NotifyConfig,
    /// The dashboard.
    pub dashboard: DashboardConfig,
    /// What one headless run may spend (`[budget]`).
    pub budget: Budget,
    /// Team mode (one PostgreSQL for every machine of a team); off by default.
    pub team: TeamConfig,
}

/// Token prices in US dollars per million tokens (`[prices]` in `baton.toml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    /// The price of a model without an entry (`default`).
    pub default_usd_per_mtok: f64,
    /// Per model label (every other key of `[prices]`, lower case).
    pub models: BTreeMap<String, f64>,
}

// Prices are validated finite, so equality is reflexive.
impl Eq for Prices {}

impl Default for Prices {
    fn default() -> Prices {
        Prices {
            default_usd_per_mtok: DEFAULT_USD_PER_MTOK,
            models: BTreeMap::new(),
        }
    }
}

/// Where and whether the JSON-RPC transcript is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptConfig {
    /// Write transcript files at all.
    pub enabled: bool,
    /// Folder holding `mcp-{sessionId}-{timestamp}.jsonl` files.
    pub dir: PathBuf,
    /// Echo each message pretty-printed to stderr (development mode).
    pub echo_stderr: bool,
    /// A transcript file that reaches this size is closed and a new one begun.
    pub max_bytes: u64,
    /// All transcript files in `dir` together stay under this; the oldest go first.
    pub max_total_bytes: u64,
    /// Messages larger than this are recorded as their size, SHA-256 and start.
    pub max_payload_bytes: u64,
}

/// The append-only event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsConfig {
    /// The live log file.
    pub log_path: PathBuf,
    /// Rotate when the live file reaches this many bytes.
    pub max_bytes: u64,
    /// Rotated files kept (`events.1.jsonl` … `events.N.jsonl`).
    pub keep: usize,
}

/// Values given on the command line; they win over everything else.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--repo`.
    pub repo_root: Option<PathBuf>,
    /// `--specs-dir`.
    pub specs_dir: Option<PathBuf>,
    /// `--tools`.
    pub tool_groups: Option<String>,
    /// `--dev`.
    pub dev: bool,
    /// `--no-transcript`.
    pub no_transcript: bool,
}

/// `fsync` in baton.toml: `true`/`false`, or `"strict"` (also `"on"`/`"off"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum FileFsync {
    Switch(bool),
    Word(String),
}

/// The shape of `baton.toml`. Unknown keys are errors so typos surface.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    specs_dir: Option<PathBuf>,
    workflows_dir: Option<PathBuf>,
    fsync: Option<FileFsync>,
    lock_timeout_ms: Option<u64>,
    #[serde(default)]
    transcript: FileTranscript,
    #[serde(default)]
    events: FileEvents,
    #[serde(default)]
    tools: FileTools,
    #[serde(default)]
    prices: BTreeMap<String, f64>,
    #[serde(default)]
    notify: notify::FileNotify,
    #[serde(default)]
    dashboard: dashboard::FileDashboard,
    #[serde(default)]
    budget: budget::FileBudget,
    #[serde(default)]
    team: team::FileTeam,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTranscript {
    enabled: Option<bool>,
    dir: Option<PathBuf>,
    echo: Option<bool>,
    max_bytes: Option<u64>,
    max_total_bytes: Option<u64>,
    max_payload_bytes: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEvents {
    log: Option<PathBuf>,
    max_bytes: Option<u64>,
    keep: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTools {
    groups: Option<Vec<String>>,
}

/// A source of environment variables (the process environment in production, a map in tests).
pub trait EnvSource {
    /// The value of `name`, if set and non-empty.
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl<const N: usize> EnvSource for [(&str, &str); N] {
    fn var(&self, name: &str) -> Option<String> {
        self.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_string())
            .filter(|v| !v.is_empty())
    }
}

impl Config {
    /// Resolves the configuration from the process environment and working directory.
    pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
        let cwd = std::env::current_dir().map_err(ConfigError::Cwd)?;
        Self::resolve(&cwd, &ProcessEnv, overrides)
    }

    /// Resolves the configuration against an explicit working directory and environment.
    pub fn resolve(
        cwd: &Path,
        env: &dyn EnvSource,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        let repo_root = match overrides
            .repo_root
            .clone()
            .or_else(|| env.var(env::REPO_ROOT).map(PathBuf::from))
        {
            Some(p) => absolutize(cwd, &p),
            None => discover_repo_root(cwd),
        };
        let file = read_file_config(&repo_root)?;

        let (specs_dir, specs_setting) = if let Some(flag) = overrides.specs_dir.clone() {
            (flag, "--specs-dir".to_string())
        } else if let Some(var) = env.var(env::SPECS_DIR) {
            (PathBuf::from(var), env::SPECS_DIR.to_string())
        } else if let Some(key) = file.specs_dir {
            (
                key,
                format!("specs_dir in {}", repo_root.join(CONFIG_FILE).display()),
            )
        } else {
            (PathBuf::from(".specs"), "the default specs folder".into())
        };
        let specs_root = absolutize(&repo_root, &specs_dir);
        specs_dir::check(&repo_root, &specs_root, &specs_setting)?;
        let workflows_dir = absolutize(
            &repo_root,
            &env.var(env::WORKFLOWS_DIR)
                .map(PathBuf::from)
                .or(file.workflows_dir)
                .unwrap_or_else(|| PathBuf::from(".baton/workflows")),
        );

        let transcript_enabled = if overrides.no_transcript {
            false
        } else if let Some(v) = env.var(env::TRANSCRIPT) {
            parse_switch(env::TRANSCRIPT, &v)?
        } else {
            file.transcript.enabled.unwrap_or(true)
        };
        let echo_stderr = overrides.dev
            || match env.var(env::DEV) {
                Some(v) => parse_switch(env::DEV, &v)?,
                None => file.transcript.echo.unwrap_or(false),
            };
        let transcript = TranscriptConfig {
            enabled: transcript_enabled,
            dir: absolutize(
                &repo_root,
                &env.var(env::LOG_DIR)
                    .map(PathBuf::from)
                    .or(file.transcript.dir)
                    .unwrap_or_else(|| PathBuf::from(".baton/logs")),
            ),
            echo_stderr,
            max_bytes: bytes_setting(
                env,
                env::TRANSCRIPT_MAX_BYTES,
                file.transcript.max_bytes,
                DEFAULT_TRANSCRIPT_MAX_BYTES,
                4096,
            )?,
            max_total_bytes: bytes_setting(
                env,
                env::TRANSCRIPT_MAX_TOTAL_BYTES,
                file.transcript.max_total_bytes,
                DEFAULT_TRANSCRIPT_MAX_TOTAL_BYTES,
                4096,
            )?,
            max_payload_bytes: bytes_setting(
                env,
                env::TRANSCRIPT_MAX_PAYLOAD,
                file.transcript.max_payload_bytes,
                DEFAULT_TRANSCRIPT_MAX_PAYLOAD,
                1024,
            )?,
        };

        let max_bytes = match env.var(env::EVENTS_MAX_BYTES) {
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|n| *n >= 1024)
                .ok_or_else(|| ConfigError::InvalidValue {
                    name: env::EVENTS_MAX_BYTES.into(),
                    value: v.clone(),
                    reason: "expected an integer number of bytes >= 1024".into(),
                })?,
            None => file.events.max_bytes.unwrap_or(DEFAULT_EVENTS_MAX_BYTES),
        };
        let events = EventsConfig {
            log_path: absolutize(
                &repo_root,
                &env.var(env::EVENTS_LOG)
                    .map(PathBuf::from)
                    .or(file.events.log)
                    .unwrap_or_else(|| PathBuf::from(".baton/events/events.jsonl")),
            ),
            max_bytes,
            keep: file.events.keep.unwrap_or(DEFAULT_EVENTS_KEEP).max(1),
        };

        let tool_groups = match overrides
            .tool_groups
            .clone()
            .or_else(|| env.var(env::TOOLS))
        {
            Some(list) => Some(parse_groups(&list)),
            None => file.tools.groups,
        };

        let (fsync, fsync_before_reply) = match env.var(env::FSYNC) {
            Some(v) if v.eq_ignore_ascii_case("strict") => (true, true),
            Some(v) => (
                parse_switch(env::FSYNC, &v).map_err(|e| match e {
                    ConfigError::InvalidValue { name, value, .. } => ConfigError::InvalidValue {
                        name,
                        value,
                        reason: "expected on, off or strict".into(),
                    },
                    other => other,
                })?,
                false,
            ),
            None => match file.fsync {
                None => (true, false),
                Some(FileFsync::Switch(on)) => (on, false),
                Some(FileFsync::Word(w)) if w.eq_ignore_ascii_case("strict") => (true, true),
                Some(FileFsync::Word(w)) => (parse_switch("fsync", &w)?, false),
            },
        };

        let lock_timeout_ms = match env.var(env::LOCK_TIMEOUT_MS) {
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=600_000).contains(n))
                .ok_or_else(|| ConfigError::InvalidValue {
                    name: env::LOCK_TIMEOUT_MS.into(),
                    value: v.clone(),
                    reason: "expected milliseconds between 1 and 600000".into(),
                })?,
            None => file.lock_timeout_ms.unwrap_or(5000),
        };
        // A runtime folder that holds the repository (its root or a parent)
        // would put baton's logs among the user's files: refused.
        for (name, dir) in [
            (
                env::EVENTS_LOG,
                events.log_path.parent().map(Path::to_path_buf),
            ),
            (env::LOG_DIR, Some(transcript.dir.clone())),
        ] {
            if let Some(dir) = dir
                && repo_root.starts_with(&dir)
            {
                return Err(ConfigError::InvalidValue {
                    name: name.into(),
                    value: dir.display().to_string(),
                    reason: format!(
                        "this folder contains the repository ({}); give baton's logs a folder of their own, e.g. .baton/events or .baton/logs",
                        repo_root.display()
                    ),
                });
            }
        }
        // Folders baton writes into must be what they claim: a symbolic link
        // in the repository must not lead baton's writes somewhere else.
        for (name, path) in [
            (env::SPECS_DIR, Some(specs_root.clone())),
            (
                env::EVENTS_LOG,
                events.log_path.parent().map(Path::to_path_buf),
            ),
            (env::LOG_DIR, Some(transcript.dir.clone())),
            (env::WORKFLOWS_DIR, Some(workflows_dir.clone())),
        ] {
            if let Some(path) = path
                && let Some(link) = symlink_below(&repo_root, &path)
            {
                return Err(ConfigError::InvalidValue {
                    name: name.into(),
                    value: path.display().to_string(),
                    reason: format!(
                        "{} is a symbolic link; baton writes only into real folders of the repository (replace the link with a folder)",
                        link.display()
                    ),
                });
            }
        }
        let prices = resolve_prices(env, file.prices)?;
        let dashboard = dashboard::resolve(file.dashboard, env, &repo_root)?;

        Ok(Config {
            repo_root,
            specs_root,
            workflows_dir,
            transcript,
            events,
            tool_groups,
            fsync,
            fsync_before_reply,
            lock_timeout_ms,
            prices,
            notify: notify::resolve(file.notify, env)?,
            dashboard,
            budget: budget::resolve(file.budget)?,
            team: team::resolve(file.team, env)?,
        })
    }
}

/// The first existing symbolic link on the way from `root` down to `path`
/// (`path` itself included), when `path` lies inside `root`.
pub fn symlink_below(root: &Path, path: &Path) -> Option<PathBuf> {
    let relative = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for component in relative.components() {
        at.push(component);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// `[prices]` from the file (`default` and one key per model label), the
/// default price overridden by the environment.
fn resolve_prices(
    env: &dyn EnvSource,
    table: BTreeMap<String, f64>,
) -> Result<Prices, ConfigError> {
    let check = |name: String, value: f64| {
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(ConfigError::InvalidValue {
                name,
                value: value.to_string(),
                reason: "expected a price >= 0 in US dollars per million tokens".into(),
            })
        }
    };
    let mut prices = Prices::default();
    for (key, value) in table {
        let value = check(format!("prices.{key}"), value)?;
        if key == "default" {
            prices.default_usd_per_mtok = value;
        } else {
            prices.models.insert(key.to_lowercase(), value);
        }
    }
    if let Some(v) = env.var(env::PRICE_USD_PER_MTOK) {
        let parsed = v.parse::<f64>().map_err(|_| ConfigError::InvalidValue {
            name: env::PRICE_USD_PER_MTOK.into(),
            value: v.clone(),
            reason: "expected a number of US dollars per million tokens".into(),
        })?;
        prices.default_usd_per_mtok = check(env::PRICE_USD_PER_MTOK.into(), parsed)?;
    }
    Ok(prices)
}

/// A size in bytes from the environment, `baton.toml` or the default; at
/// least `min`.
fn bytes_setting(
    env: &dyn EnvSource,
    name: &str,
    from_file: Option<u64>,
    default: u64,
    min: u64,
) -> Result<u64, ConfigError> {
    let (value, text) = match env.var(name) {
        Some(text) => (text.trim().parse::<u64>().ok(), text),
        None => match from_file {
            Some(v) => (Some(v), v.to_string()),
            None => return Ok(default),
        },
    };
    value
        .filter(|n| *n >= min)
        .ok_or_else(|| ConfigError::InvalidValue {
            name: name.into(),
            value: text,
            reason: format!("expected an integer number of bytes >= {min}"),
        })
}

/// Splits a comma-separated group list, trimming blanks and dropping empty entries.
pub fn parse_groups(list: &str) -> Vec<String> {
    list.split(',')
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect()
}

fn parse_switch(name: &str, value: &str) -> Result<bool, ConfigError> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(ConfigError::InvalidValue {
            name: name.into(),
            value: value.into(),
            reason: "expected on/off, true/false, 1/0 or yes/no".into(),
        }),
    }
}

fn read_file_config(repo_root: &Path) -> Result<FileConfig, ConfigError> {
    let path = repo_root.join(CONFIG_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path,
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(ConfigError::RepoNotAFolder {
                path: repo_root.to_path_buf(),
            })
        }
        Err(error) => Err(ConfigError::Read { path, error }),
    }
}

/// The nearest ancestor of `start` (itself included) holding `.git` or `baton.toml`; `start` if none.
pub fn discover_repo_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists() || dir.join(CONFIG_FILE).is_file())
        .unwrap_or(start)
        .to_path_buf()
}

/// Joins a relative path onto `base` and removes `.` and `..` components lexically.
pub fn absolutize(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--repo` naming a file or a FIFO says so and what to pass instead;
    /// an unreadable `baton.toml` names its cause once (a chained display,
    /// as the CLI prints, used to repeat it: "Is a directory (os error 21):
    /// Is a directory (os error 21)").
    #[test]
    fn a_repo_that_is_not_a_folder_and_an_unreadable_file_read_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-folder");
        std::fs::write(&file, "x").unwrap();
        let overrides = Overrides {
            repo_root: Some(file.clone()),
            ..Overrides::default()
        };
        let e = Config::resolve(dir.path(), &[], &overrides).unwrap_err();
        assert!(matches!(e, ConfigError::RepoNotAFolder { .. }), "{e:?}");
        assert!(e.to_string().contains("pass --repo"), "{e}");

        std::fs::create_dir(dir.path().join(CONFIG_FILE)).unwrap();
        let e = Config::resolve(dir.path(), &[], &Overrides::default()).unwrap_err();
        assert!(matches!(e, ConfigError::Read { .. }), "{e:?}");
        assert!(std::error::Error::source(&e).is_none(), "{e:?}");
        assert!(e.to_string().contains("(os error"), "{e}");
    }

    #[test]
    fn defaults_are_absolute_and_under_the_repo_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let sub = dir.path().join("src/deep");
        std::fs::create_dir_all(&sub).unwrap();
        let cfg = Config::resolve(&sub, &[], &Overrides::default()).unwrap();
        assert_eq!(cfg.repo_root, dir.path());
        assert_eq!(cfg.specs_root, dir.path().join(".specs"));
        assert_eq!(cfg.transcript.dir, dir.path().join(".baton/logs"));
        assert!(cfg.transcript.enabled);
        assert!(!cfg.transcript.echo_stderr);
        assert_eq!(
            cfg.events.log_path,
            dir.path().join(".baton/events/events.jsonl")
        );
        assert_eq!(cfg.tool_groups, None);
        assert!(cfg.fsync);
        assert!(!cfg.fsync_before_reply);
    }

    #[test]
    fn fsync_is_on_off_or_strict_from_the_environment_or_the_file() {
        let dir = tempfile::tempdir().unwrap();
        struct Env<'a>(&'a [(&'a str, &'a str)]);
        impl EnvSource for Env<'_> {
            fn var(&self, name: &str) -> Option<String> {
                self.0
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        }
        let modes = |env: &[(&str, &str)]| {
            Config::resolve(dir.path(), &Env(env), &Overrides::default())
                .map(|c| (c.fsync, c.fsync_before_reply))
        };
        assert_eq!(modes(&[]).unwrap(), (true, false));
        assert_eq!(modes(&[("BATON_FSYNC", "off")]).unwrap(), (false, false));
        assert_eq!(modes(&[("BATON_FSYNC", "on")]).unwrap(), (true, false));
        assert_eq!(modes(&[("BATON_FSYNC", "STRICT")]).unwrap(), (true, true));
        let e = modes(&[("BATON_FSYNC", "sometimes")]).unwrap_err();
        assert!(e.to_string().contains("on, off or strict"), "{e}");
        for (text, want) in [
            ("fsync = false\n", (false, false)),
            ("fsync = \"strict\"\n", (true, true)),
            ("fsync = \"off\"\n", (false, false)),
        ] {
            std::fs::write(dir.path().join(CONFIG_FILE), text).unwrap();
            assert_eq!(modes(&[]).unwrap(), want, "{text}");
        }
        std::fs::write(dir.path().join(CONFIG_FILE), "fsync = \"maybe\"\n").unwrap();
        assert!(modes(&[]).is_err());
    }

    #[test]
    fn env_beats_file_and_flags_beat_env() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "specs_dir = \"file-specs\"\n[tools]\ngroups = [\"state\"]\n[transcript]\nenabled = false\n",
        )
        .unwrap();
        let from_file = Config::resolve(dir.path(), &[], &Overrides::default()).unwrap();
        assert_eq!(from_file.specs_root, dir.path().join("file-specs"));
        assert_eq!(from_file.tool_groups, Some(vec!["state".to_string()]));
        assert!(!from_file.transcript.enabled);

        let env = [
            (env::SPECS_DIR, "env-specs"),
            (env::TOOLS, "lifecycle, state"),
            (env::TRANSCRIPT, "on"),
        ];
        let from_env = Config::resolve(dir.path(), &env, &Overrides::default()).unwrap();
        assert_eq!(from_env.specs_root, dir.path().join("env-specs"));
        assert_eq!(
            from_env.tool_groups,
            Some(vec!["lifecycle".to_string(), "state".to_string()])
        );
        assert!(from_env.transcript.enabled);

        let flags = Overrides {
            specs_dir: Some("sub/../flag-specs".into()),
            tool_groups: Some("manual".into()),
            no_transcript: true,
            ..Overrides::default()
        };
        let from_flags = Config::resolve(dir.path(), &env, &flags).unwrap();
        assert_eq!(from_flags.specs_root, dir.path().join("flag-specs"));
        assert_eq!(from_flags.tool_groups, Some(vec!["manual".to_string()]));
        assert!(!from_flags.transcript.enabled);
    }

    #[test]
    fn unknown_keys_in_baton_toml_are_reported_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "spec_dir = \"x\"\n").unwrap();
        let err = Config::resolve(dir.path(), &[], &Overrides::default()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("baton.toml"), "{text}");
        assert!(text.contains("spec_dir"), "{text}");
    }

    #[test]
    fn bad_switch_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = Config::resolve(
            dir.path(),
            &[(env::TRANSCRIPT, "maybe")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ConfigError::InvalidValue { .. }));
        let err = Config::resolve(
            dir.path(),
            &[(env::EVENTS_MAX_BYTES, "12")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains(env::EVENTS_MAX_BYTES));
    }

    #[test]
    fn prices_come_from_baton_toml_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Config::resolve(dir.path(), &[], &Overrides::default())
                .unwrap()
                .prices,
            Prices::default()
        );
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[prices]\ndefault = 5.5\nOpus = 30\nsonnet = 6.0\n",
        )
        .unwrap();
        let cfg = Config::resolve(dir.path(), &[], &Overrides::default()).unwrap();
        assert_eq!(cfg.prices.default_usd_per_mtok, 5.5);
        assert_eq!(cfg.prices.models["opus"], 30.0);
        assert_eq!(cfg.prices.models["sonnet"], 6.0);
        let env = [(env::PRICE_USD_PER_MTOK, "2.5")];
        let cfg = Config::resolve(dir.path(), &env, &Overrides::default()).unwrap();
        assert_eq!(cfg.prices.default_usd_per_mtok, 2.5);
        assert_eq!(cfg.prices.models["opus"], 30.0);
        let bad = [(env::PRICE_USD_PER_MTOK, "-1")];
        assert!(Config::resolve(dir.path(), &bad, &Overrides::default()).is_err());
        let bad = [(env::PRICE_USD_PER_MTOK, "cheap")];
        let err = Config::resolve(dir.path(), &bad, &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains(env::PRICE_USD_PER_MTOK));
        std::fs::write(dir.path().join(CONFIG_FILE), "[prices]\nopus = \"x\"\n").unwrap();
        assert!(Config::resolve(dir.path(), &[], &Overrides::default()).is_err());
    }

    #[test]
    fn a_budget_is_read_from_baton_toml_and_bad_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let cfg = Config::resolve(dir.path(), &[], &Overrides::default()).unwrap();
        assert_eq!(cfg.budget, Budget::default());
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[budget]\nmax_cost_usd = 2.5\nmax_tokens = 400000\n",
        )
        .unwrap();
        let cfg = Config::resolve(dir.path(), &[], &Overrides::default()).unwrap();
        assert_eq!(cfg.budget.max_cost_usd, Some(2.5));
        assert_eq!(cfg.budget.max_tokens, Some(400_000));
        for (bad, says) in [
            ("[budget]\nmax_cost_usd = -1\n", "budget.max_cost_usd"),
            ("[budget]\nmax_cost_usd = 0\n", "budget.max_cost_usd"),
            ("[budget]\nmax_tokens = 0\n", "budget.max_tokens"),
            ("[budget]\nmax_cost_usd = \"lots\"\n", "max_cost_usd"),
            ("[budget]\nmax_costs = 1\n", "max_costs"),
        ] {
            std::fs::write(dir.path().join(CONFIG_FILE), bad).unwrap();
            let err = Config::resolve(dir.path(), &[], &Overrides::default()).unwrap_err();
            assert!(err.to_string().contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn absolutize_removes_dot_segments() {
        assert_eq!(
            absolutize(Path::new("/a/b"), Path::new("./c/../d")),
            PathBuf::from("/a/b/d")
        );
        assert_eq!(
            absolutize(Path::new("/a/b"), Path::new("/x/./y")),
            PathBuf::from("/x/y")
        );
    }
}
