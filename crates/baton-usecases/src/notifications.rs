//! Which events a person is told about, and what they are told: a run waits
//! for them (a checkpoint or a decision), reached a human gate, failed, or
//! completed (or was abandoned). Transport-free: the webhook sender
//! (`baton-notify`) formats and delivers what [`notification_for`] returns.
//!
//! A notification about a question is built from the run as it is when the
//! notifier looks: if the question was answered in the meantime (`--auto`,
//! or a person at the terminal was quicker), nobody is told to answer it.

use schemars::JsonSchema;
use serde::Serialize;

use baton_config::NotifyOn;
use baton_events::{EventKind, EventRecord};

use crate::Services;

/// The question a notification is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NotifiedQuestion {
    /// Its name (`checkpoint-a`, `task-2`, …).
    pub name: String,
    /// Its full text (Markdown).
    pub text: String,
    /// The accepted answers.
    pub options: Vec<String>,
    /// The terminal commands that answer it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub how_to_answer: Option<String>,
}

/// Something a person is told about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    /// What happened (`waiting`, `human_gate`, `failure`, `completed`, `abandoned`).
    #[serde(serialize_with = "kind_name")]
    #[schemars(with = "String")]
    pub kind: NotifyOn,
    /// The run's folder name (its id in dashboard links).
    pub run: String,
    /// The workspace (`.specs/…`).
    pub workspace: String,
    /// The spec name.
    pub spec_name: String,
    /// The phase.
    pub phase: String,
    /// One line for a person.
    pub title: String,
    /// The failure message or other detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The question, when the run waits for an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<NotifiedQuestion>,
    /// The event it is about.
    pub event: EventRecord,
}

fn kind_name<S: serde::Serializer>(kind: &NotifyOn, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.as_str())
}

/// The run's folder name from an event's workspace (`.specs/20260401-x` → `20260401-x`).
pub fn run_id(workspace: &str) -> String {
    workspace
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(workspace)
        .to_string()
}

/// The notification for `event`, if a person should hear of it.
pub fn notification_for(svc: &Services, event: &EventRecord) -> Option<Notification> {
    let run = run_id(&event.workspace);
    let name = if event.spec_name.is_empty() {
        run.clone()
    } else {
        event.spec_name.clone()
    };
    let base = |kind: NotifyOn, title: String| Notification {
        kind,
        run: run.clone(),
        workspace: event.workspace.clone(),
        spec_name: event.spec_name.clone(),
        phase: event.phase.clone(),
        title,
        detail: event.detail.clone(),
        question: None,
        event: event.clone(),
    };
    match event.event {
        EventKind::Checkpoint => {
            // Only while the run still waits at it.
            let q = crate::pipeline::answer::pending_question(svc, &event.workspace)
                .ok()
                .flatten()?;
            let same = match event.detail.as_deref() {
                Some(d) => d == q.name,
                None => q.phase == event.phase,
            };
            if !same {
                return None;
            }
            let gate = q.options.iter().any(|o| o == "done");
            let (kind, title) = if gate {
                (
                    NotifyOn::HumanGate,
                    format!("{name}: human gate {} — something for you to do", q.name),
                )
            } else {
                (
                    NotifyOn::Waiting,
                    format!("{name} waits for you at {}", q.name),
                )
            };
            let mut n = base(kind, title);
            n.question = Some(NotifiedQuestion {
                name: q.name,
                text: q.present_to_user,
                options: q.options,
                how_to_answer: q.how_to_answer,
            });
            Some(n)
        }
        EventKind::PhaseFail => Some(base(
            NotifyOn::Failure,
            format!("{name}: {} failed", event.phase),
        )),
        EventKind::PipelineComplete => Some(base(NotifyOn::Completed, format!("{name} completed"))),
        EventKind::Abandon => Some(base(
            NotifyOn::Abandoned,
            format!("{name} was abandoned at {}", event.phase),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_folder_names() {
        assert_eq!(run_id(".specs/20260401-fix"), "20260401-fix");
        assert_eq!(run_id("/abs/.specs/20260401-fix/"), "20260401-fix");
        assert_eq!(run_id("plain"), "plain");
    }
}
