//! Webhooks against a local receiver: retries with backoff until delivered,
//! giving up with a logged failure, a hanging receiver never holding up a
//! state change, and no URL or token in any log line.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use baton_config::{
    Config, EnvSource, NotifyConfig, NotifyOn, Overrides, Secret, Webhook, WebhookFormat,
};
use baton_events::EventBus;
use baton_state::Actor;
use baton_usecases::Services;
use baton_usecases::notifications::notification_for;
use baton_usecases::recovery::{AbandonArgs, InitArgs, abandon_by, init};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// Every log line of this test binary, every level of every crate (the
/// notifier logs from its own thread).
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buf);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        buf
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_text() -> String {
    String::from_utf8_lossy(&logs().lock().unwrap()).into_owned()
}

struct TestEnv;

impl EnvSource for TestEnv {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "BATON_FSYNC" | "BATON_TRANSCRIPT" => Some("off".into()),
            _ => None,
        }
    }
}

fn services(root: &Path) -> Arc<Services> {
    let config = Config::resolve(
        root,
        &TestEnv,
        &Overrides {
            repo_root: Some(root.to_path_buf()),
            ..Overrides::default()
        },
    )
    .unwrap();
    let log = baton_events::EventLog::open(&config.events.log_path, 1 << 30, 1).unwrap();
    Arc::new(Services::new(
        config,
        Arc::new(EventBus::with_log(log)),
        "test",
    ))
}

/// One request the receiver got.
#[derive(Debug)]
struct Received {
    head: String,
    body: Value,
}

/// A local HTTP receiver answering with `statuses` in turn (then 200).
/// With `hold`, it keeps the first request waiting until `hold` fires.
async fn receiver(
    statuses: Vec<u16>,
    hold: Option<tokio::sync::oneshot::Receiver<()>>,
) -> (String, mpsc::UnboundedReceiver<Received>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut statuses = statuses.into_iter();
        let mut hold = hold;
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head, body) = loop {
                let n = socket.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse().ok())?
                        })
                        .unwrap_or(0);
                    while buf.len() < end + 4 + len {
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    break (head, buf[end + 4..].to_vec());
                }
            };
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let _ = tx.send(Received { head, body });
            if let Some(h) = hold.take() {
                let _ = h.await;
            }
            let status = statuses.next().unwrap_or(200);
            let reply =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    (format!("http://{addr}"), rx)
}

fn config(url: String, token: Option<&str>, format: WebhookFormat, retries: u32) -> NotifyConfig {
    NotifyConfig {
        webhooks: vec![Webhook {
            name: "test-hook".into(),
            url: Secret::new(url),
            format,
            token: token.map(Secret::new),
            on: vec![NotifyOn::Abandoned, NotifyOn::Failure, NotifyOn::Completed],
        }],
        retries,
        backoff_ms: 20,
        dashboard_url: Some("http://127.0.0.1:8377".into()),
        warnings: Vec::new(),
    }
}

fn start(svc: &Arc<Services>, config: &NotifyConfig) -> baton_notify::Notifier {
    let s = Arc::clone(svc);
    baton_notify::start(
        config,
        svc.bus.subscribe_local(),
        Arc::new(move |e| notification_for(&s, e)),
    )
    .unwrap()
    .expect("a webhook is configured")
}

fn new_run(svc: &Services, name: &str) -> String {
    init(
        svc,
        InitArgs {
            spec_name: name.into(),
            workflow: None,
            workspace: None,
            effort: None,
        },
    )
    .unwrap()
    .workspace
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("a request within 30 s")
        .expect("receiver alive")
}

#[tokio::test]
async fn a_failing_webhook_is_retried_until_it_takes_the_notification() {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let svc = services(dir.path());
    let (url, mut rx) = receiver(vec![500, 503], None).await;
    let secret_url = format!("{url}/hooks/RETRYSECRETPATH");
    let notifier = start(
        &svc,
        &config(
            secret_url,
            Some("RETRY-TOKEN-0123456789"),
            WebhookFormat::Json,
            4,
        ),
    );
    let ws = new_run(&svc, "retry me");
    abandon_by(
        &svc,
        AbandonArgs {
            workspace: ws.clone(),
            reason: Some("test".into()),
        },
        &Actor::person("dashboard"),
    )
    .unwrap();
    let first = next(&mut rx).await;
    let second = next(&mut rx).await;
    let third = next(&mut rx).await;
    for r in [&first, &second, &third] {
        assert!(
            r.head.starts_with("POST /hooks/RETRYSECRETPATH"),
            "{}",
            r.head
        );
        assert!(
            r.head
                .to_ascii_lowercase()
                .contains("authorization: bearer retry-token-0123456789")
        );
        assert_eq!(r.body["kind"], "abandoned");
        assert_eq!(r.body["workspace"], ws.as_str());
        assert_eq!(r.body["event"]["detail"], "person:dashboard");
    }
    notifier.finish(Duration::from_secs(5));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "delivered once, not more"
    );
    let text = log_text();
    assert!(text.contains("attempt 1 failed (HTTP 500"), "{text}");
    assert!(text.contains("attempt 2 failed (HTTP 503"), "{text}");
    assert!(
        !text.contains("RETRYSECRETPATH") && !text.contains("RETRY-TOKEN"),
        "{text}"
    );
}

#[tokio::test]
async fn a_webhook_that_keeps_failing_is_given_up_and_logged_without_secrets() {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let svc = services(dir.path());
    let (url, mut rx) = receiver(vec![500; 10], None).await;
    // A second webhook nobody listens on: connection refused, every time.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut cfg = config(
        format!("{url}/x/GIVEUPSECRETPATH"),
        Some("GIVEUP-TOKEN-0123456789"),
        WebhookFormat::Slack,
        2,
    );
    cfg.webhooks.push(Webhook {
        name: "refused-hook".into(),
        url: Secret::new(format!("http://{closed}/y/REFUSEDSECRETPATH")),
        format: WebhookFormat::Json,
        token: Some(Secret::new("REFUSED-TOKEN-0123456789")),
        on: vec![NotifyOn::Abandoned],
    });
    let notifier = start(&svc, &cfg);
    let ws = new_run(&svc, "give up");
    abandon_by(
        &svc,
        AbandonArgs {
            workspace: ws,
            reason: None,
        },
        &Actor::person("terminal"),
    )
    .unwrap();
    for _ in 0..3 {
        let r = next(&mut rx).await;
        // Slack's format.
        assert!(
            r.body["text"].as_str().unwrap().starts_with("baton: "),
            "{:?}",
            r.body
        );
        assert!(r.body["blocks"].is_array());
    }
    notifier.finish(Duration::from_secs(10));
    let text = log_text();
    assert!(
        text.contains("not delivered to test-hook after 3 attempt(s): HTTP 500"),
        "{text}"
    );
    assert!(
        text.contains("not delivered to refused-hook after 3 attempt(s)"),
        "{text}"
    );
    // At every level, from every crate: no path, no token (a host and port
    // are not secrets; the HTTP client names them when it connects).
    for secret in [
        "GIVEUPSECRETPATH",
        "GIVEUP-TOKEN",
        "REFUSEDSECRETPATH",
        "REFUSED-TOKEN",
    ] {
        assert!(!text.contains(secret), "{secret} in the logs:\n{text}");
    }
}

#[tokio::test]
async fn a_hanging_webhook_never_holds_up_a_state_change() {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let svc = services(dir.path());
    let (release, hold) = tokio::sync::oneshot::channel();
    let (url, mut rx) = receiver(vec![], Some(hold)).await;
    let notifier = start(&svc, &config(url, None, WebhookFormat::Json, 0));
    let first = new_run(&svc, "first");
    let second = new_run(&svc, "second");
    let svc2 = Arc::clone(&svc);
    let first2 = first.clone();
    tokio::task::spawn_blocking(move || {
        abandon_by(
            &svc2,
            AbandonArgs {
                workspace: first2,
                reason: None,
            },
            &Actor::person("dashboard"),
        )
        .unwrap()
    })
    .await
    .unwrap();
    // The receiver holds the first notification's request open…
    let held = next(&mut rx).await;
    assert_eq!(held.body["workspace"], first.as_str());
    // …and meanwhile the next state change completes and is on disk.
    let svc3 = Arc::clone(&svc);
    let second2 = second.clone();
    let reply = tokio::task::spawn_blocking(move || {
        abandon_by(
            &svc3,
            AbandonArgs {
                workspace: second2,
                reason: None,
            },
            &Actor::person("dashboard"),
        )
        .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(reply.current_phase_status, "abandoned");
    let state = svc
        .store
        .load(&svc.store.resolve(&second).unwrap())
        .unwrap();
    assert_eq!(state.current_phase_status.as_str(), "abandoned");
    // Released, the queue moves on in order.
    release.send(()).unwrap();
    let after = next(&mut rx).await;
    assert_eq!(after.body["workspace"], second.as_str());
    notifier.finish(Duration::from_secs(5));
}

#[tokio::test]
async fn no_webhook_means_no_notifier_and_events_a_hook_did_not_ask_for_are_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let svc = services(dir.path());
    let s = Arc::clone(&svc);
    let none = baton_notify::start(
        &NotifyConfig::default(),
        svc.bus.subscribe_local(),
        Arc::new(move |e| notification_for(&s, e)),
    )
    .unwrap();
    assert!(none.is_none());
    let (url, mut rx) = receiver(vec![], None).await;
    let mut cfg = config(url, None, WebhookFormat::Json, 0);
    cfg.webhooks[0].on = vec![NotifyOn::Completed];
    let notifier = start(&svc, &cfg);
    let ws = new_run(&svc, "quiet");
    abandon_by(
        &svc,
        AbandonArgs {
            workspace: ws,
            reason: None,
        },
        &Actor::person("dashboard"),
    )
    .unwrap();
    notifier.finish(Duration::from_secs(5));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err()
    );
}
