//! What the headless driver (`baton run`) needs beside the pipeline's own
//! use cases: the scope of the phase an agent is started for (so an agent
//! preset can hand it to the client's own controls), a failed agent recorded
//! as a failed phase, and the driver's own record — what runs the run and
//! whether it still does — so a person sees what drives a run and the exact
//! command that resumes it.
//!
//! The driver's record lives in `<specs>/.drivers/<run>.json`, an ignored
//! folder of baton's own (never committed, kept across branch switches): it
//! is this machine's runtime knowledge (a process id), not the run's.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use baton_state::{Lifecycle, PhaseStatus, WorkspaceRef};
use baton_workflow::{PhaseKind, WriteScope};

use crate::events::Happened;
use crate::hooks;
use crate::validate::check_text;
use crate::{Error, ErrorCode, Result, Services};

/// The folder under the specs root that keeps the drivers' records.
pub const DRIVERS_DIR: &str = ".drivers";

/// Largest driver record read (a guard against a file that is not ours).
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// The most of an agent's error output kept with its failure.
pub const MAX_STDERR_TAIL: usize = 2_000;

/// The headless driver of a run: what it runs as the agent and whether it
/// is still at work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverRecord {
    /// The `--agent` value (`claude`, `codex`, or a command line).
    pub agent: String,
    /// The driver's process id.
    pub pid: u32,
    /// When it started (or resumed) the run.
    pub started: DateTime<Utc>,
    /// When and why it stopped; none while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<DriverStop>,
}

/// When and why a driver stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverStop {
    /// When.
    pub at: DateTime<Utc>,
    /// Why, in a few words for a person that follow "`baton run` stopped"
    /// (`at a question for you`, `when the agent failed`, …).
    pub reason: String,
}

impl DriverRecord {
    /// Whether the driver is at work now: it did not say it stopped, and its
    /// process is alive (a killed driver says nothing).
    pub fn is_running(&self) -> bool {
        self.stopped.is_none() && process_alive(self.pid)
    }
}

/// Whether a process with this id exists (Linux: `/proc/<pid>`; elsewhere
/// assumed alive, since the record says it did not stop).
fn process_alive(pid: u32) -> bool {
    let proc_root = Path::new("/proc");
    if proc_root.join("self").exists() {
        proc_root.join(pid.to_string()).exists()
    } else {
        true
    }
}

fn record_path(svc: &Services, ws: &WorkspaceRef) -> PathBuf {
    svc.store
        .specs_root()
        .join(DRIVERS_DIR)
        .join(format!("{}.json", ws.name))
}

/// The driver record of a run, if a headless driver ever drove it here.
/// A record that cannot be read is treated as none.
pub fn driver_of(svc: &Services, ws: &WorkspaceRef) -> Option<DriverRecord> {
    let path = record_path(svc, ws);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_RECORD_BYTES {
        return None;
    }
    serde_json::from_slice(&std::fs::read(&path).ok()?).ok()
}

fn write_record(svc: &Services, ws: &WorkspaceRef, record: &DriverRecord) -> Result<()> {
    let dir = svc.store.specs_root().join(DRIVERS_DIR);
    let io = |op: &str, path: &Path, e: std::io::Error| {
        Error::new(
            ErrorCode::IoError,
            format!("could not {op} {}: {e}", path.display()),
        )
    };
    baton_state::fs::create_ignored_dir(&dir).map_err(|e| io("create", &dir, e))?;
    let path = record_path(svc, ws);
    let text = serde_json::to_vec_pretty(record)
        .map_err(|e| Error::new(ErrorCode::Internal, format!("driver record: {e}")))?;
    // Appears whole: a temporary file in the same (ignored) folder, renamed.
    let tmp = dir.join(format!(".{}.{}.tmp", ws.name, std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| io("write", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io("write", &path, e)
    })
}

/// Records that this process drives `workspace` with `agent` from now on.
pub fn begin_driving(svc: &Services, workspace: &str, agent: &str) -> Result<()> {
    check_text("workspace", workspace, 1024)?;
    check_text("agent", agent, 4096)?;
    let ws = svc.store.resolve(workspace)?;
    write_record(
        svc,
        &ws,
        &DriverRecord {
            agent: agent.to_string(),
            pid: std::process::id(),
            started: Utc::now(),
            stopped: None,
        },
    )
}

/// Records that the driver of `workspace` stopped, and why (for a person).
/// Only this process's own record is changed.
pub fn stop_driving(svc: &Services, workspace: &str, reason: &str) -> Result<()> {
    let ws = svc.store.resolve(workspace)?;
    let Some(mut record) = driver_of(svc, &ws) else {
        return Ok(());
    };
    if record.pid != std::process::id() || record.stopped.is_some() {
        return Ok(());
    }
    record.stopped = Some(DriverStop {
        at: Utc::now(),
        reason: reason.to_string(),
    });
    write_record(svc, &ws, &record)
}

/// The command a person runs to resume a run with the agent it ran with:
/// `baton run .specs/<run> --agent claude`.
pub fn resume_command(workspace_display: &str, agent: &str) -> String {
    format!(
        "baton run {} --agent {}",
        shell_word(workspace_display),
        shell_word(agent)
    )
}

/// `word` as one shell word: as it is when it needs no quoting, else in
/// single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Why an agent the driver started did not do its step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFailure {
    /// The agent's name in the workflow (`architect`, `implementer`, …).
    pub agent: String,
    /// The task it worked on, in a fan-out.
    pub task: Option<String>,
    /// How it ended, for a person: `exited with status 3`, `was killed by
    /// signal 9`, `printed no result` …
    pub how: String,
    /// The last lines of its error output (at most [`MAX_STDERR_TAIL`]
    /// characters are kept).
    pub stderr_tail: String,
    /// It exited but left changes outside its phase's scope
    /// ([`AgentFailure::left_outside`]); its error output is beside the
    /// point.
    pub left_outside: bool,
}

impl AgentFailure {
    /// The agents of a step exited, but changes their watched commands made
    /// outside the phase's scope are still there (the hooks told them to
    /// revert): the step fails, so that nothing outside the scope goes on
    /// into the run's commit unseen.
    pub fn left_outside(agent: &str, phase: &str, left: &[LeftOutside]) -> AgentFailure {
        let what: Vec<String> = left
            .iter()
            .map(|l| format!("{} (changed by `{}`)", l.paths.join(", "), l.command))
            .collect();
        AgentFailure {
            agent: agent.to_string(),
            task: None,
            how: format!(
                "left changes outside the scope of {phase} and did not revert them: {}. Revert them (`git checkout -- <file>` for a tracked file, delete a new one) before the run goes on",
                what.join("; ")
            ),
            stderr_tail: String::new(),
            left_outside: true,
        }
    }

    /// The failure as one message for the run's record and for a person.
    pub fn message(&self) -> String {
        let who = match &self.task {
            Some(task) => format!("the agent {} (task {task})", self.agent),
            None => format!("the agent {}", self.agent),
        };
        if self.left_outside {
            return format!("{who} {}.", self.how);
        }
        let tail = tail_chars(self.stderr_tail.trim(), MAX_STDERR_TAIL);
        if tail.is_empty() {
            format!("{who} {} (it wrote nothing to its error output).", self.how)
        } else {
            format!("{who} {}.\nThe end of its error output:\n{tail}", self.how)
        }
    }
}

fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let skip = count - max;
    format!("…{}", text.chars().skip(skip).collect::<String>())
}

/// Records that the agent of the outstanding action `action_id` failed: the
/// current phase fails with the failure's message (the run shows as failed;
/// resuming starts the phase again). One locked write; events after it.
pub fn agent_failed(
    svc: &Services,
    workspace: &str,
    action_id: &str,
    failure: &AgentFailure,
) -> Result<()> {
    check_text("workspace", workspace, 1024)?;
    check_text("action_id", action_id, 64)?;
    let ws = svc.store.resolve(workspace)?;
    let now = Utc::now();
    let message = failure.message();
    let updated = svc.store.update(&ws, now, |state| -> Result<_, Error> {
        // Ended meanwhile (the person abandoned it while its agent worked):
        // say so, before the action's id, which no longer matters.
        if state.current_phase_status.is_terminal() {
            let status = state.current_phase_status.as_str();
            return Err(Error::new(
                ErrorCode::InvalidState,
                format!(
                    "run {} has ended ({status}) while its agent worked; the agent's failure was not recorded and nothing in the run changes any more",
                    ws.display
                ),
            )
            .with_details(serde_json::json!({ "currentPhaseStatus": status })));
        }
        let outstanding = state.outstanding_action.as_ref().map(|a| a.id.as_str());
        if outstanding != Some(action_id) {
            return Err(Error::new(
                ErrorCode::StaleAction,
                format!(
                    "the failed agent's action {action_id} is not the one the run waits for ({}); nothing was recorded",
                    outstanding.unwrap_or("none")
                ),
            ));
        }
        if state.current_phase_status != PhaseStatus::InProgress {
            return Err(Error::new(
                ErrorCode::InvalidState,
                format!(
                    "{} is {}, not running; the agent's failure was not recorded",
                    state.current_phase,
                    state.current_phase_status.as_str()
                ),
            ));
        }
        let def = svc.workflow(&state.workflow)?;
        let lc = Lifecycle::new(&def, now);
        let phase = state.current_phase.clone();
        Ok(lc.fail(state, &phase, &message)?)
    })?;
    let happened = updated
        .value
        .into_iter()
        .map(Happened::Transition)
        .collect();
    svc.after_write(&ws, &updated.state, happened);
    Ok(())
}

/// What a run has used so far, as its agents reported it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spent {
    /// Tokens, all phases.
    pub tokens: u64,
    /// US dollars reported (phases whose client reported no cost count 0).
    pub cost_usd: f64,
}

/// What the run `workspace` has used so far.
pub fn spent(svc: &Services, workspace: &str) -> Result<Spent> {
    check_text("workspace", workspace, 1024)?;
    let ws = svc.store.resolve(workspace)?;
    let state = svc.store.load(&ws)?;
    let archived = state.history_archived.as_ref().map_or(0, |a| a.tokens);
    Ok(Spent {
        tokens: archived + state.phase_log.iter().map(|e| e.tokens).sum::<u64>(),
        cost_usd: state.phase_log.iter().filter_map(|e| e.cost_usd).sum(),
    })
}

/// What the agent of one phase may touch, as the workflow declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentScope {
    /// The phase.
    pub phase: String,
    /// Where it may write.
    pub writes: WriteScope,
    /// Git subcommands allowed beyond the read-only ones.
    pub git: Vec<String>,
    /// Further client tools allowed.
    pub tools: Vec<String>,
    /// Shell commands allowed beyond the read-only ones, as command
    /// prefixes (`cargo test`), or `*` for any; the hooks watch what they
    /// change.
    pub commands: Vec<String>,
    /// Paths (repository-relative patterns) no agent may write.
    pub protected: Vec<String>,
    /// The specs folder, relative to the repository (`.specs`).
    pub specs_dir: String,
    /// The workspace folder, relative to the repository.
    pub workspace: String,
}

/// The scope of `phase` in the run `workspace`.
pub fn phase_scope(svc: &Services, workspace: &str, phase: &str) -> Result<AgentScope> {
    check_text("workspace", workspace, 1024)?;
    check_text("phase", phase, 64)?;
    let ws = svc.store.resolve(workspace)?;
    let state = svc.store.load(&ws)?;
    let def = svc.workflow(&state.workflow)?;
    let Some(p) = def.phase(phase) else {
        return Err(Error::new(
            ErrorCode::NotFound,
            format!("{phase} is not a phase of the workflow {}", def.id),
        ));
    };
    let scope = p.effective_scope();
    // A phase that hands out an agent always writes at least its artifact.
    let writes = match (scope.writes, p.kind) {
        (WriteScope::None, PhaseKind::Agent | PhaseKind::Review) => WriteScope::Artifacts,
        (w, _) => w,
    };
    let specs_dir = svc
        .store
        .specs_root()
        .strip_prefix(&svc.config.repo_root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| svc.store.specs_root().display().to_string());
    Ok(AgentScope {
        phase: phase.to_string(),
        writes,
        git: scope.git,
        tools: scope.tools,
        commands: scope.commands,
        protected: def.protected_paths(),
        specs_dir,
        workspace: ws.display,
    })
}

/// Binds the client session `session` of an agent that `baton run` started
/// for one step to the run `workspace`: its hooks (`baton hook --run`) call
/// this on their first event, and from then on they enforce the run's
/// phase scope for that session, as for any bound session. A session that
/// is already bound stays as it is. Refused when the run does not exist or
/// has ended.
pub fn bind_step_agent(svc: &Services, client: &str, session: &str, workspace: &str) -> Result<()> {
    check_text("workspace", workspace, 1024)?;
    check_text("client", client, 32)?;
    let ws = svc.store.resolve(workspace)?;
    let state = svc.store.load(&ws)?;
    if state.current_phase_status.is_terminal() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "run {} has ended ({}); no agent works for it any more",
                ws.display,
                state.current_phase_status.as_str()
            ),
        ));
    }
    let root = &svc.config.repo_root;
    hooks::binding::modify(root, session, |s| {
        if s.workspace.is_empty() {
            s.client = client.to_string();
            s.workspace = ws.display.clone();
            s.bound_at = Some(Utc::now());
            s.step_agent = true;
        }
    })
    .map(|_| ())
    .map_err(binding_error)
}

fn binding_error(e: hooks::binding::BindingError) -> Error {
    match e {
        hooks::binding::BindingError::BadSession(_) => {
            Error::new(ErrorCode::InvalidParameter, e.to_string())
        }
        _ => Error::new(ErrorCode::IoError, e.to_string()),
    }
}

/// A change an agent's watched command left outside its phase's scope and
/// did not revert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOutside {
    /// The paths still changed (repository-relative).
    pub paths: Vec<String>,
    /// The command (or tool) that changed them.
    pub command: String,
}

/// Releases the sessions of the agents `baton run` started for the run
/// `workspace` (all of them have exited): their session files go, and the
/// changes their watched commands left outside the phase's scope and did
/// not revert are returned (the step must not count as done while they
/// are there).
pub fn release_step_agents(svc: &Services, workspace: &str) -> Result<Vec<LeftOutside>> {
    check_text("workspace", workspace, 1024)?;
    let ws = svc.store.resolve(workspace)?;
    let root = &svc.config.repo_root;
    let dir = root.join(hooks::binding::SESSIONS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::new(
                ErrorCode::IoError,
                format!("could not read {}: {e}", dir.display()),
            ));
        }
    };
    let mut left = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(session) = name.strip_suffix(".json") else {
            continue;
        };
        let Ok(Some(s)) = hooks::binding::load(root, session) else {
            continue;
        };
        if !s.step_agent || s.workspace != ws.display {
            continue;
        }
        if let Some(v) = &s.violation {
            let paths = hooks::tree::still_changed(root, v);
            if !paths.is_empty() {
                left.push(LeftOutside {
                    paths,
                    command: v.command.clone(),
                });
            }
        }
        hooks::binding::remove(root, session).map_err(binding_error)?;
        let _ = std::fs::remove_file(dir.join(format!("{session}.lock")));
    }
    Ok(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_only_what_needs_it() {
        assert_eq!(shell_word("claude"), "claude");
        assert_eq!(
            shell_word(".specs/20260101-fix-it"),
            ".specs/20260101-fix-it"
        );
        assert_eq!(shell_word("exit 3"), "'exit 3'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(
            resume_command(".specs/x", "my-agent --fast"),
            "baton run .specs/x --agent 'my-agent --fast'"
        );
    }

    #[test]
    fn a_failure_message_names_the_agent_the_status_and_the_end_of_stderr() {
        let f = AgentFailure {
            agent: "implementer".into(),
            task: Some("2".into()),
            how: "exited with status 3".into(),
            stderr_tail: format!("{}\nboom\n", "x".repeat(5000)),
            left_outside: false,
        };
        let m = f.message();
        assert!(m.starts_with("the agent implementer (task 2) exited with status 3"));
        assert!(m.ends_with("boom"));
        assert!(m.chars().count() < MAX_STDERR_TAIL + 200);
        let quiet = AgentFailure {
            stderr_tail: " \n".into(),
            task: None,
            ..f
        };
        assert_eq!(
            quiet.message(),
            "the agent implementer exited with status 3 (it wrote nothing to its error output)."
        );
    }

    #[test]
    fn a_driver_that_said_it_stopped_or_whose_process_is_gone_is_not_running() {
        let mut r = DriverRecord {
            agent: "claude".into(),
            pid: std::process::id(),
            started: Utc::now(),
            stopped: None,
        };
        assert!(r.is_running());
        r.stopped = Some(DriverStop {
            at: Utc::now(),
            reason: "done".into(),
        });
        assert!(!r.is_running());
        r.stopped = None;
        r.pid = u32::MAX - 7;
        assert!(!r.is_running());
    }
}
