//! Webhook notifications: a person hears when a run waits for them, hits a
//! human gate, fails or completes — as baton's JSON document or as a Slack
//! incoming-webhook message.
//!
//! * Fed from the process's **own** events ([`baton_events::EventBus::subscribe_local`]):
//!   every event is notified once, by the process that caused it, however
//!   many baton processes follow the log.
//! * **Never delays a state change.** Publishing an event is a non-blocking
//!   channel send; classification (which reads the run) and delivery happen
//!   on the notifier's own thread and runtime. A notifier that falls behind
//!   drops events (and says so) rather than slowing anything down.
//! * **Retried with backoff** on network errors, timeouts, 408, 429 (its
//!   `Retry-After` honoured up to a minute) and 5xx: [`NotifyConfig::retries`]
//!   more attempts, the first after [`NotifyConfig::backoff_ms`], doubling,
//!   with jitter. Each webhook has its own queue, so a dead one never holds
//!   up another, and one webhook's notifications arrive in order.
//! * **Failures are logged; secrets never are.** Logs name a webhook by its
//!   configured name; error texts are stripped of URLs and scrubbed of the
//!   URL, its path and the token.
//!
//! [`NotifyConfig::retries`]: baton_config::NotifyConfig::retries
//! [`NotifyConfig::backoff_ms`]: baton_config::NotifyConfig::backoff_ms

#![warn(missing_docs)]

pub mod format;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};

use baton_config::{NotifyConfig, Webhook};
use baton_events::EventRecord;
use baton_usecases::notifications::Notification;

/// Notifications queued per webhook before new ones are dropped.
pub const QUEUE: usize = 256;

/// The longest a delivery attempt may take.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Why a notifier could not start.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The notifier's thread or runtime could not be created.
    #[error("notifications: {0}")]
    Start(String),
}

/// Decides what a person hears of an event (see
/// [`baton_usecases::notifications::notification_for`]).
pub type Classify = dyn Fn(&EventRecord) -> Option<Notification> + Send + Sync;

/// A running notifier. [`Notifier::finish`] lets deliveries in flight end
/// before the process exits; dropping it stops at once.
#[derive(Debug)]
pub struct Notifier {
    stop: Option<oneshot::Sender<Duration>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Notifier {
    /// Stops taking events, then waits up to `grace` for the notifications
    /// already taken to be delivered (or to fail); those still pending then
    /// are logged as not delivered.
    pub fn finish(mut self, grace: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(grace);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Duration::ZERO);
        }
    }
}

/// Starts notifying the webhooks of `config` about `events` (the process's
/// own events), or returns `None` when no webhook is configured.
pub fn start(
    config: &NotifyConfig,
    events: broadcast::Receiver<EventRecord>,
    classify: Arc<Classify>,
) -> Result<Option<Notifier>, NotifyError> {
    for warning in &config.warnings {
        tracing::warn!("notifications: {warning}");
    }
    if config.webhooks.is_empty() {
        return Ok(None);
    }
    let config = config.clone();
    let (stop_tx, stop_rx) = oneshot::channel();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| NotifyError::Start(e.to_string()))?;
    let client = client().map_err(|e| NotifyError::Start(describe(e, &[])))?;
    let thread = std::thread::Builder::new()
        .name("baton-notify".into())
        .spawn(move || runtime.block_on(run(config, client, events, classify, stop_rx)))
        .map_err(|e| NotifyError::Start(e.to_string()))?;
    Ok(Some(Notifier {
        stop: Some(stop_tx),
        thread: Some(thread),
    }))
}

/// Starts notifying about the events `svc` publishes (see [`start`]); a
/// notifier that cannot start is logged, never fatal. For processes that
/// own their [`Services`](baton_usecases::Services) (`baton run`, `baton answer`).
pub fn start_for_services(svc: Arc<baton_usecases::Services>) -> Option<Notifier> {
    let events = svc.bus.subscribe_local();
    let config = svc.config.notify.clone();
    let classify = move |e: &EventRecord| baton_usecases::notifications::notification_for(&svc, e);
    match start(&config, events, Arc::new(classify)) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!("{e}");
            None
        }
    }
}

/// The HTTP client: rustls with the ring provider, platform roots.
fn client() -> Result<reqwest::Client, reqwest::Error> {
    // Installing twice is refused harmlessly; the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .user_agent(concat!("baton/", env!("CARGO_PKG_VERSION")))
        // A redirect would be logged with its URL by the client; a webhook
        // that redirects is answered as a failure instead.
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

struct Route {
    hook: Arc<Webhook>,
    queue: mpsc::Sender<Notification>,
}

async fn run(
    config: NotifyConfig,
    client: reqwest::Client,
    mut events: broadcast::Receiver<EventRecord>,
    classify: Arc<Classify>,
    mut stop: oneshot::Receiver<Duration>,
) {
    let policy = Policy {
        retries: config.retries,
        backoff: Duration::from_millis(config.backoff_ms),
        dashboard_url: config.dashboard_url.clone(),
    };
    let mut workers = tokio::task::JoinSet::new();
    let mut routes = Vec::new();
    for hook in &config.webhooks {
        let hook = Arc::new(hook.clone());
        let (tx, mut rx) = mpsc::channel::<Notification>(QUEUE);
        let (client, policy, worker_hook) = (client.clone(), policy.clone(), Arc::clone(&hook));
        workers.spawn(async move {
            while let Some(n) = rx.recv().await {
                deliver(&client, &worker_hook, &n, &policy).await;
            }
        });
        routes.push(Route { hook, queue: tx });
    }
    let grace = loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(event) => route(&routes, &classify, event).await,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("notifications: {n} events were dropped (the notifier fell behind)");
                }
                Err(broadcast::error::RecvError::Closed) => break Duration::from_secs(5),
            },
            grace = &mut stop => {
                // Events published before the stop are still told.
                while let Ok(event) = events.try_recv() {
                    route(&routes, &classify, event).await;
                }
                break grace.unwrap_or(Duration::ZERO);
            }
        }
    };
    drop(routes);
    let all_done = async { while workers.join_next().await.is_some() {} };
    if tokio::time::timeout(grace, all_done).await.is_err() {
        tracing::warn!(
            "notifications: some were not delivered before baton exited (waited {} ms)",
            grace.as_millis()
        );
    }
}

async fn route(routes: &[Route], classify: &Arc<Classify>, event: EventRecord) {
    let c = Arc::clone(classify);
    // Classifying reads the run from disk: off the async thread.
    let Ok(Some(n)) = tokio::task::spawn_blocking(move || c(&event)).await else {
        return;
    };
    for r in routes {
        if !r.hook.on.contains(&n.kind) {
            continue;
        }
        if r.queue.try_send(n.clone()).is_err() {
            tracing::warn!(
                "notifications: {} dropped for {} (its queue is full)",
                n.kind.as_str(),
                r.hook.name
            );
        }
    }
}

#[derive(Debug, Clone)]
struct Policy {
    retries: u32,
    backoff: Duration,
    dashboard_url: Option<String>,
}

/// The delay before retry number `attempt` (0 = the first retry): the base
/// doubled per attempt, capped, with up to 20 % jitter either way.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX));
    let capped = exp.min(MAX_BACKOFF);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = (nanos % 41) as f64 / 100.0 - 0.2; // -0.20 ..= +0.20
    capped.mul_f64(1.0 + jitter)
}

/// One notification to one webhook, with retries. Never panics, never
/// returns an error: failures are logged.
async fn deliver(client: &reqwest::Client, hook: &Webhook, n: &Notification, policy: &Policy) {
    let body = format::body(hook.format, n, policy.dashboard_url.as_deref());
    let secrets: Vec<&str> = std::iter::once(hook.url.expose())
        .chain(hook.token.as_ref().map(|t| t.expose()))
        .collect();
    let what = format!("{} for {}", n.kind.as_str(), n.run);
    for attempt in 0..=policy.retries {
        let mut request = client
            .post(hook.url.expose())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        if let Some(token) = &hook.token {
            request = request.bearer_auth(token.expose());
        }
        let (reason, retry, wait) = match request.send().await {
            Ok(response) if response.status().is_success() => {
                tracing::debug!("notification {what} delivered to {}", hook.name);
                return;
            }
            Ok(response) => {
                let status = response.status();
                let retry = status.is_server_error()
                    || status == reqwest::StatusCode::TOO_MANY_REQUESTS
                    || status == reqwest::StatusCode::REQUEST_TIMEOUT;
                let wait = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(|s| Duration::from_secs(s).min(MAX_BACKOFF));
                (format!("HTTP {status}"), retry, wait)
            }
            Err(e) => (describe(e, &secrets), true, None),
        };
        if !retry || attempt == policy.retries {
            tracing::warn!(
                "notification {what} not delivered to {} after {} attempt(s): {reason}",
                hook.name,
                attempt + 1
            );
            return;
        }
        let delay = wait.unwrap_or_else(|| backoff(policy.backoff, attempt));
        tracing::info!(
            "notification {what} to {}: attempt {} failed ({reason}); retrying in {} ms",
            hook.name,
            attempt + 1,
            delay.as_millis()
        );
        tokio::time::sleep(delay).await;
    }
}

/// An error's text without any URL, and with `secrets` (and their paths)
/// scrubbed from whatever the lower layers said.
fn describe(e: reqwest::Error, secrets: &[&str]) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    redact(&text, secrets)
}

/// `text` with every secret, the secret without its scheme, and a URL's
/// path and query replaced by `<hidden>`.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        let mut pieces = vec![secret.to_string()];
        if let Some(rest) = secret.split_once("://").map(|(_, r)| r) {
            pieces.push(rest.to_string());
            if let Some((_, path)) = rest.split_once('/')
                && path.len() >= 4
            {
                pieces.push(format!("/{path}"));
            }
        }
        for piece in pieces {
            out = out.replace(&piece, "<hidden>");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_a_cap() {
        let base = Duration::from_millis(100);
        for attempt in 0..5 {
            let d = backoff(base, attempt).as_millis() as f64;
            let want = 100.0 * f64::from(1u32 << attempt);
            assert!(d >= want * 0.79 && d <= want * 1.21, "{attempt}: {d}");
        }
        assert!(backoff(base, 40) <= MAX_BACKOFF.mul_f64(1.21));
    }

    #[test]
    fn redact_hides_urls_paths_and_tokens() {
        let url = "https://hooks.slack.com/services/T000/B000/XXXXSECRET";
        let text = format!(
            "connect to {url} failed; POST /services/T000/B000/XXXXSECRET; token abc123token"
        );
        let clean = redact(&text, &[url, "abc123token"]);
        assert!(!clean.contains("XXXXSECRET"), "{clean}");
        assert!(!clean.contains("abc123token"), "{clean}");
        assert!(clean.contains("<hidden>"));
    }
}
