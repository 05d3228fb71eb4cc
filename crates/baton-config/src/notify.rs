//! Notification settings: webhooks told when a run waits for a person, hits
//! a human gate, fails or completes (`[notify]` in `baton.toml`, or the
//! `BATON_NOTIFY_*` variables). Webhook URLs and tokens are [`Secret`]s:
//! their `Debug` never shows them, and no error message quotes them.

use serde::Deserialize;

use crate::{ConfigError, EnvSource, env};

/// A value that must never appear in logs or error messages (a webhook URL
/// carries its credential in its path; a token is one).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

/// Which happenings a webhook is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyOn {
    /// A run waits for a person's answer (a checkpoint, a decision).
    Waiting,
    /// A run reached a human gate (something a person does outside).
    HumanGate,
    /// A phase failed.
    Failure,
    /// A run completed.
    Completed,
    /// A run was abandoned.
    Abandoned,
}

impl NotifyOn {
    /// What a webhook hears when it names nothing.
    pub const DEFAULT: [NotifyOn; 4] = [
        NotifyOn::Waiting,
        NotifyOn::HumanGate,
        NotifyOn::Failure,
        NotifyOn::Completed,
    ];

    /// The name used in configuration and payloads.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyOn::Waiting => "waiting",
            NotifyOn::HumanGate => "human_gate",
            NotifyOn::Failure => "failure",
            NotifyOn::Completed => "completed",
            NotifyOn::Abandoned => "abandoned",
        }
    }

    fn parse(name: &str) -> Option<NotifyOn> {
        Some(match name.trim() {
            "waiting" => NotifyOn::Waiting,
            "human_gate" => NotifyOn::HumanGate,
            "failure" => NotifyOn::Failure,
            "completed" => NotifyOn::Completed,
            "abandoned" => NotifyOn::Abandoned,
            _ => return None,
        })
    }
}

/// The body a webhook receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookFormat {
    /// baton's own JSON document (docs/configuration.md).
    Json,
    /// Slack's incoming-webhook message (`text` plus `blocks`).
    Slack,
}

/// One webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// A name for logs (never the URL).
    pub name: String,
    /// Where to POST.
    pub url: Secret,
    /// The body's format.
    pub format: WebhookFormat,
    /// Sent as `Authorization: Bearer …` (JSON webhooks).
    pub token: Option<Secret>,
    /// What it is told about.
    pub on: Vec<NotifyOn>,
}

/// Notification settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// The webhooks (none: notifications are off).
    pub webhooks: Vec<Webhook>,
    /// Retries after a failed delivery (network error, timeout, 429, 5xx).
    pub retries: u32,
    /// The first retry's delay; each further one doubles it.
    pub backoff_ms: u64,
    /// The dashboard's address, for links in messages.
    pub dashboard_url: Option<String>,
    /// Settings that were skipped, and why (shown once at start-up; never
    /// quoting a secret).
    pub warnings: Vec<String>,
}

impl Default for NotifyConfig {
    fn default() -> NotifyConfig {
        NotifyConfig {
            webhooks: Vec::new(),
            retries: DEFAULT_RETRIES,
            backoff_ms: DEFAULT_BACKOFF_MS,
            dashboard_url: None,
            warnings: Vec::new(),
        }
    }
}

/// Retries after the first attempt, by default.
pub const DEFAULT_RETRIES: u32 = 4;

/// The first retry's delay, by default.
pub const DEFAULT_BACKOFF_MS: u64 = 500;

/// `[notify]` in `baton.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileNotify {
    retries: Option<u32>,
    backoff_ms: Option<u64>,
    dashboard_url: Option<String>,
    #[serde(default)]
    webhooks: Vec<FileWebhook>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileWebhook {
    name: Option<String>,
    format: Option<WebhookFormat>,
    url: Option<String>,
    url_env: Option<String>,
    token: Option<String>,
    token_env: Option<String>,
    on: Option<Vec<NotifyOn>>,
}

fn check_url(name: &str, url: &str) -> Result<(), ConfigError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') && !url.contains(char::is_whitespace) => {
            Ok(())
        }
        // The value is never quoted: it may carry a credential.
        _ => Err(ConfigError::InvalidValue {
            name: name.into(),
            value: "<hidden>".into(),
            reason: "expected an http:// or https:// URL".into(),
        }),
    }
}

fn parse_on(name: &str, list: &str) -> Result<Vec<NotifyOn>, ConfigError> {
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            NotifyOn::parse(s).ok_or_else(|| ConfigError::InvalidValue {
                name: name.into(),
                value: list.into(),
                reason: "expected a comma-separated list of waiting, human_gate, failure, completed, abandoned".into(),
            })
        })
        .collect()
}

pub(crate) fn resolve(file: FileNotify, env: &dyn EnvSource) -> Result<NotifyConfig, ConfigError> {
    let mut config = NotifyConfig {
        retries: match env.var(env::NOTIFY_RETRIES) {
            Some(v) => v.parse().map_err(|_| ConfigError::InvalidValue {
                name: env::NOTIFY_RETRIES.into(),
                value: v.clone(),
                reason: "expected a whole number".into(),
            })?,
            None => file.retries.unwrap_or(DEFAULT_RETRIES),
        }
        .min(20),
        backoff_ms: match env.var(env::NOTIFY_BACKOFF_MS) {
            Some(v) => v.parse().map_err(|_| ConfigError::InvalidValue {
                name: env::NOTIFY_BACKOFF_MS.into(),
                value: v.clone(),
                reason: "expected milliseconds".into(),
            })?,
            None => file.backoff_ms.unwrap_or(DEFAULT_BACKOFF_MS),
        },
        dashboard_url: env.var(env::DASHBOARD_URL).or(file.dashboard_url),
        ..NotifyConfig::default()
    };
    for (i, hook) in file.webhooks.into_iter().enumerate() {
        let name = hook
            .name
            .clone()
            .unwrap_or_else(|| format!("webhook {}", i + 1));
        let key = format!("[[notify.webhooks]] {name}");
        let url = match (&hook.url, &hook.url_env) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::InvalidValue {
                    name: key,
                    value: "url and url_env".into(),
                    reason: "give the URL or the variable holding it, not both".into(),
                });
            }
            (Some(u), None) => u.clone(),
            (None, Some(var)) => match env.var(var) {
                Some(u) => u,
                None => {
                    config
                        .warnings
                        .push(format!("{name}: {var} is not set; this webhook is off"));
                    continue;
                }
            },
            (None, None) => {
                return Err(ConfigError::InvalidValue {
                    name: key,
                    value: String::new(),
                    reason: "a webhook needs url or url_env".into(),
                });
            }
        };
        check_url(&key, &url)?;
        let token = match (&hook.token, &hook.token_env) {
            (Some(t), _) => Some(Secret::new(t.clone())),
            (None, Some(var)) => match env.var(var) {
                Some(t) => Some(Secret::new(t)),
                None => {
                    config
                        .warnings
                        .push(format!("{name}: {var} is not set; sending without a token"));
                    None
                }
            },
            (None, None) => None,
        };
        config.webhooks.push(Webhook {
            name,
            url: Secret::new(url),
            format: hook.format.unwrap_or(WebhookFormat::Json),
            token,
            on: hook.on.unwrap_or_else(|| NotifyOn::DEFAULT.to_vec()),
        });
    }
    let env_on = match env.var(env::NOTIFY_ON) {
        Some(list) => parse_on(env::NOTIFY_ON, &list)?,
        None => NotifyOn::DEFAULT.to_vec(),
    };
    if let Some(url) = env.var(env::NOTIFY_SLACK_URL) {
        check_url(env::NOTIFY_SLACK_URL, &url)?;
        config.webhooks.push(Webhook {
            name: "slack (BATON_NOTIFY_SLACK_URL)".into(),
            url: Secret::new(url),
            format: WebhookFormat::Slack,
            token: None,
            on: env_on.clone(),
        });
    }
    if let Some(url) = env.var(env::NOTIFY_WEBHOOK_URL) {
        check_url(env::NOTIFY_WEBHOOK_URL, &url)?;
        config.webhooks.push(Webhook {
            name: "webhook (BATON_NOTIFY_WEBHOOK_URL)".into(),
            url: Secret::new(url),
            format: WebhookFormat::Json,
            token: env.var(env::NOTIFY_WEBHOOK_TOKEN).map(Secret::new),
            on: env_on,
        });
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> FileNotify {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn webhooks_come_from_the_file_and_the_environment() {
        let f = file(
            r#"
            retries = 2
            backoff_ms = 10
            dashboard_url = "http://127.0.0.1:8377"
            [[webhooks]]
            name = "team"
            format = "slack"
            url_env = "TEAM_HOOK"
            on = ["waiting", "completed"]
            [[webhooks]]
            url = "https://example.invalid/hook"
            token_env = "HOOK_TOKEN"
            "#,
        );
        let env = [
            (
                "TEAM_HOOK",
                "https://hooks.slack.example/services/T/B/secret",
            ),
            ("HOOK_TOKEN", "tok-123"),
            (env::NOTIFY_WEBHOOK_URL, "http://127.0.0.1:9/x"),
            (env::NOTIFY_ON, "failure"),
        ];
        let c = resolve(f, &env).unwrap();
        assert_eq!(c.retries, 2);
        assert_eq!(c.backoff_ms, 10);
        assert_eq!(c.webhooks.len(), 3);
        assert_eq!(c.webhooks[0].format, WebhookFormat::Slack);
        assert_eq!(c.webhooks[0].on, [NotifyOn::Waiting, NotifyOn::Completed]);
        assert_eq!(c.webhooks[1].name, "webhook 2");
        assert_eq!(c.webhooks[1].token.as_ref().unwrap().expose(), "tok-123");
        assert_eq!(c.webhooks[1].on, NotifyOn::DEFAULT);
        assert_eq!(c.webhooks[2].on, [NotifyOn::Failure]);
        // Debug never shows a secret.
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("secret") && !shown.contains("tok-123"),
            "{shown}"
        );
    }

    #[test]
    fn a_missing_variable_turns_a_webhook_off_with_a_warning() {
        let f = file("[[webhooks]]\nurl_env = \"NOPE\"\n");
        let c = resolve(f, &[]).unwrap();
        assert!(c.webhooks.is_empty());
        assert!(c.warnings[0].contains("NOPE"));
    }

    #[test]
    fn a_bad_url_is_refused_without_quoting_it() {
        let env = [(env::NOTIFY_SLACK_URL, "ftp://secret-path")];
        let err = resolve(FileNotify::default(), &env)
            .unwrap_err()
            .to_string();
        assert!(err.contains(env::NOTIFY_SLACK_URL), "{err}");
        assert!(!err.contains("secret-path"), "{err}");
        let err = resolve(FileNotify::default(), &[(env::NOTIFY_ON, "sometimes")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("human_gate"), "{err}");
    }
}
