//! What a person does next with a run, in words for a person: the line
//! under `baton show`, on the dashboard's run page, after `baton answer`,
//! and in `baton ls --json`. It names real commands — the resume command
//! with the agent the run ran with, `baton answer` with the run's own
//! options — never a placeholder and never a tool call meant for an agent.

use baton_state::{PhaseStatus, WorkspaceRef, WorkspaceState};

use crate::Services;
use crate::headless::{DriverRecord, driver_of, resume_command, shell_word};

/// Who moves a run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Driving {
    /// `baton run` is at work on it now.
    Driver(DriverRecord),
    /// `baton run` drove it and stopped (or was killed).
    StoppedDriver(DriverRecord),
    /// No headless driver ever drove it here: an agent through MCP does.
    Agent,
}

/// Who moves the run `ws` on.
pub fn driving(svc: &Services, ws: &WorkspaceRef) -> Driving {
    match driver_of(svc, ws) {
        Some(d) if d.is_running() => Driving::Driver(d),
        Some(d) => Driving::StoppedDriver(d),
        None => Driving::Agent,
    }
}

/// How a person resumes the run: the `baton run` command with the agent it
/// ran with, or their agent's `/baton-pipeline` command.
pub fn how_to_resume(workspace: &str, driving: &Driving) -> String {
    match driving {
        Driving::Driver(d) | Driving::StoppedDriver(d) => {
            format!("`{}`", resume_command(workspace, &d.agent))
        }
        Driving::Agent => format!(
            "`/baton-pipeline {}` in your agent's chat (or `{}`)",
            workspace,
            resume_command(workspace, "claude")
        ),
    }
}

/// A question a run waits at, as far as the next step needs it.
#[derive(Debug, Clone, Copy)]
pub struct Waiting<'a> {
    /// The question's name.
    pub name: &'a str,
    /// Its options.
    pub options: &'a [String],
}

/// One or two sentences: what the person does next with the run.
pub fn next_for_person(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
    question: Option<Waiting<'_>>,
) -> String {
    let driving = driving(svc, ws);
    next_with(&ws.display, state, question, &driving)
}

/// [`next_for_person`] for a run named by its folder: loads its state and
/// the question it waits at.
pub fn next_for_run(svc: &Services, workspace: &str) -> crate::Result<String> {
    crate::validate::check_text("workspace", workspace, 1024)?;
    let ws = svc.store.resolve(workspace)?;
    let state = svc.store.load(&ws)?;
    let question = if state.current_phase_status.is_terminal() {
        None
    } else {
        crate::pipeline::answer::pending_question(svc, &ws.display)?
    };
    Ok(next_for_person(
        svc,
        &ws,
        &state,
        question.as_ref().map(|q| Waiting {
            name: &q.name,
            options: &q.options,
        }),
    ))
}

fn next_with(
    workspace: &str,
    state: &WorkspaceState,
    question: Option<Waiting<'_>>,
    driving: &Driving,
) -> String {
    let resume = how_to_resume(workspace, driving);
    let then = match driving {
        Driving::Driver(d) => format!(
            "`baton run` (process {}, agent {}) goes on by itself once it is answered.",
            d.pid,
            shell_word(&d.agent)
        ),
        _ => format!("Then resume the run: {resume}."),
    };
    match state.current_phase_status {
        PhaseStatus::Completed => {
            return match &state.branch {
                Some(b) => format!("Nothing: the run is complete (its commit is on branch {b})."),
                None => "Nothing: the run is complete.".into(),
            };
        }
        PhaseStatus::Abandoned => return "Nothing: the run was abandoned.".into(),
        _ => {}
    }
    if let Some(q) = question {
        let first = q.options.first().map(String::as_str).unwrap_or("…");
        return format!(
            "It waits for your answer to {}: `baton answer {} {}` in a terminal (options: {}), or answer on the dashboard (`baton dashboard`). {then}",
            q.name,
            shell_word(workspace),
            shell_word(first),
            q.options.join(", ")
        );
    }
    if state.current_phase_status == PhaseStatus::Failed {
        let why = state
            .error
            .as_ref()
            .and_then(|e| e.message.lines().next())
            .map(|l| l.trim_end_matches('.'))
            .unwrap_or("no reason was recorded");
        return format!(
            "It failed at {}: {why}. Fix the cause, then resume the run: {resume}.",
            state.current_phase
        );
    }
    match driving {
        Driving::Driver(d) => format!(
            "Nothing: `baton run` (process {}, agent {}) is driving it.",
            d.pid,
            shell_word(&d.agent)
        ),
        Driving::StoppedDriver(d) => {
            let why = d
                .stopped
                .as_ref()
                .map(|s| format!("`baton run` stopped {}", s.reason))
                .unwrap_or_else(|| "`baton run` ended without a word: its process is gone".into());
            format!("Nothing is driving it now ({why}). Resume it: {resume}.")
        }
        Driving::Agent => format!(
            "Your agent drives it through baton's tools; if its session ended, resume it with {resume}."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headless::DriverStop;
    use chrono::Utc;

    fn state(status: PhaseStatus) -> WorkspaceState {
        let mut s = WorkspaceState::fresh("forge", "phase-1", "x", ".specs/x", "t", Utc::now());
        s.current_phase_status = status;
        s
    }

    fn driver(running: bool) -> DriverRecord {
        DriverRecord {
            agent: "exit 3".into(),
            pid: 42,
            started: Utc::now(),
            stopped: (!running).then(|| DriverStop {
                at: Utc::now(),
                reason: "when the agent failed".into(),
            }),
        }
    }

    #[test]
    fn a_failed_run_names_the_failure_and_the_exact_resume_command() {
        let mut s = state(PhaseStatus::Failed);
        s.error = Some(baton_state::schema::PhaseError {
            phase: "phase-1".into(),
            message: "the agent analyst exited with status 3.\nThe end of its error output:\nboom"
                .into(),
            timestamp: Utc::now(),
        });
        let text = next_with(".specs/x", &s, None, &Driving::StoppedDriver(driver(false)));
        assert_eq!(
            text,
            "It failed at phase-1: the agent analyst exited with status 3. Fix the cause, then resume the run: `baton run .specs/x --agent 'exit 3'`."
        );
    }

    #[test]
    fn a_question_names_the_answer_command_and_what_happens_after_it() {
        let s = state(PhaseStatus::AwaitingHuman);
        let options = vec!["approve".to_string(), "revise".into(), "abandon".into()];
        let q = Waiting {
            name: "checkpoint-a",
            options: &options,
        };
        let stopped = next_with(
            ".specs/x",
            &s,
            Some(q),
            &Driving::StoppedDriver(driver(false)),
        );
        assert!(
            stopped.contains("`baton answer .specs/x approve`"),
            "{stopped}"
        );
        assert!(
            stopped.contains("options: approve, revise, abandon"),
            "{stopped}"
        );
        assert!(
            stopped.ends_with("Then resume the run: `baton run .specs/x --agent 'exit 3'`."),
            "{stopped}"
        );
        let running = next_with(".specs/x", &s, Some(q), &Driving::Driver(driver(true)));
        assert!(
            running.ends_with("goes on by itself once it is answered."),
            "{running}"
        );
        let agent = next_with(".specs/x", &s, Some(q), &Driving::Agent);
        assert!(
            agent.contains("`/baton-pipeline .specs/x` in your agent's chat"),
            "{agent}"
        );
        assert!(!agent.contains("pipeline_next_action"), "{agent}");
    }

    #[test]
    fn a_run_nobody_drives_says_so_and_how_to_resume() {
        let s = state(PhaseStatus::Pending);
        let text = next_with(".specs/x", &s, None, &Driving::StoppedDriver(driver(false)));
        assert_eq!(
            text,
            "Nothing is driving it now (`baton run` stopped when the agent failed). Resume it: `baton run .specs/x --agent 'exit 3'`."
        );
        assert_eq!(
            next_with(
                ".specs/x",
                &state(PhaseStatus::Completed),
                None,
                &Driving::Agent
            ),
            "Nothing: the run is complete."
        );
    }
}
