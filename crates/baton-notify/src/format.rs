//! The bodies webhooks receive.
//!
//! * `json`: baton's document — `source`, `kind`, `title`, `run`,
//!   `workspace`, `specName`, `phase`, `detail`, `question` (`name`,
//!   `text`, `options`, `how_to_answer`), `link` (with a dashboard URL
//!   configured) and the seed-003 `event` it is about.
//! * `slack`: an incoming-webhook message — `text` (the notification's
//!   fallback line) and `blocks` (title, the question's text, its options
//!   and how to answer, a link), escaped as Slack's `mrkdwn` requires.

use baton_config::WebhookFormat;
use baton_usecases::notifications::Notification;
use serde_json::{Value, json};

/// The most characters of a question's text put into a Slack block (Slack
/// refuses a section longer than 3,000).
pub const SLACK_TEXT_LIMIT: usize = 2500;

/// The request body for `format`.
pub fn body(format: WebhookFormat, n: &Notification, dashboard_url: Option<&str>) -> Vec<u8> {
    let value = match format {
        WebhookFormat::Json => json_body(n, dashboard_url),
        WebhookFormat::Slack => slack_body(n, dashboard_url),
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

/// The dashboard link of a run.
pub fn link(dashboard_url: Option<&str>, run: &str) -> Option<String> {
    dashboard_url.map(|base| format!("{}/runs/{run}", base.trim_end_matches('/')))
}

/// baton's JSON document.
pub fn json_body(n: &Notification, dashboard_url: Option<&str>) -> Value {
    let mut v = serde_json::to_value(n).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("source".into(), json!("baton"));
        if let Some(l) = link(dashboard_url, &n.run) {
            obj.insert("link".into(), json!(l));
        }
    }
    v
}

/// Escapes `&`, `<` and `>` as Slack's `mrkdwn` requires.
pub fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Slack's incoming-webhook message.
pub fn slack_body(n: &Notification, dashboard_url: Option<&str>) -> Value {
    let icon = match n.kind {
        baton_config::NotifyOn::Waiting => ":raised_hand:",
        baton_config::NotifyOn::HumanGate => ":construction:",
        baton_config::NotifyOn::Failure => ":x:",
        baton_config::NotifyOn::Completed => ":white_check_mark:",
        baton_config::NotifyOn::Abandoned => ":wastebasket:",
    };
    let mut head = format!("{icon} *{}*", slack_escape(&n.title));
    head.push_str(&format!(
        "\n`{}` · phase `{}`",
        slack_escape(&n.workspace),
        slack_escape(&n.phase)
    ));
    if let Some(d) = &n.detail
        && n.question.is_none()
    {
        head.push_str(&format!("\n{}", slack_escape(&cut(d, 500))));
    }
    let mut blocks = vec![json!({"type": "section", "text": {"type": "mrkdwn", "text": head}})];
    if let Some(q) = &n.question {
        let quoted: Vec<String> = cut(&q.text, SLACK_TEXT_LIMIT)
            .lines()
            .map(|l| format!("> {}", slack_escape(l)))
            .collect();
        blocks.push(
            json!({"type": "section", "text": {"type": "mrkdwn", "text": quoted.join("\n")}}),
        );
        let options: Vec<String> = q
            .options
            .iter()
            .map(|o| format!("`{}`", slack_escape(o)))
            .collect();
        let mut how = format!(
            "Answer: {} — `baton answer {} <option>` in your terminal",
            options.join(" · "),
            slack_escape(&n.run)
        );
        if let Some(l) = link(dashboard_url, &n.run) {
            how.push_str(&format!(" or <{}|the dashboard>", slack_escape(&l)));
        }
        blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": how}]}));
    } else if let Some(l) = link(dashboard_url, &n.run) {
        blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": format!("<{}|Open the run>", slack_escape(&l))}]}));
    }
    json!({
        "text": format!("baton: {}", n.title),
        "blocks": blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_config::NotifyOn;
    use baton_events::{EventKind, EventRecord};
    use baton_usecases::notifications::NotifiedQuestion;

    fn waiting() -> Notification {
        Notification {
            kind: NotifyOn::Waiting,
            run: "20260401-fix".into(),
            workspace: ".specs/20260401-fix".into(),
            spec_name: "fix".into(),
            phase: "checkpoint-a".into(),
            title: "fix waits for you at checkpoint-a".into(),
            detail: Some("checkpoint-a".into()),
            question: Some(NotifiedQuestion {
                name: "checkpoint-a".into(),
                text: "## Design ready\n\nReview <design.md> & answer".into(),
                options: vec!["proceed".into(), "revise".into(), "abandon".into()],
                how_to_answer: None,
            }),
            event: EventRecord::new(
                EventKind::Checkpoint,
                "checkpoint-a",
                "fix",
                ".specs/20260401-fix",
            ),
        }
    }

    #[test]
    fn json_carries_the_question_the_event_and_a_link() {
        let v = json_body(&waiting(), Some("http://127.0.0.1:8377/"));
        assert_eq!(v["source"], "baton");
        assert_eq!(v["kind"], "waiting");
        assert_eq!(v["run"], "20260401-fix");
        assert_eq!(v["question"]["options"][1], "revise");
        assert_eq!(v["event"]["event"], "checkpoint");
        assert_eq!(v["link"], "http://127.0.0.1:8377/runs/20260401-fix");
    }

    #[test]
    fn slack_escapes_and_shows_options() {
        let v = slack_body(&waiting(), None);
        assert!(v["text"].as_str().unwrap().contains("waits for you"));
        let quoted = v["blocks"][1]["text"]["text"].as_str().unwrap();
        assert!(
            quoted.contains("&lt;design.md&gt; &amp; answer"),
            "{quoted}"
        );
        let how = v["blocks"][2]["elements"][0]["text"].as_str().unwrap();
        assert!(how.contains("`proceed` · `revise` · `abandon`"), "{how}");
        assert!(!how.contains("dashboard"), "no link without a URL");
    }
}
