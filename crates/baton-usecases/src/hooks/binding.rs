//! Which run a client session works on: one file per session,
//! `.baton/sessions/<session>.json`, written by the hooks only (baton's
//! folder is protected from the agent's tools). A session is bound when a
//! baton tool names a run to it; it stays bound to that run until the run
//! ends, whatever other workspace a later call names.
//!
//! The file also keeps what the hooks need between two calls of the same
//! session: the stop guard's consecutive blocks, the person's answer typed
//! in the chat (until baton applies it), the working tree before a watched
//! command, and a change left outside the scope.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use baton_workflow::ScopeTable;

/// The folder of session files, relative to the repository.
pub const SESSIONS_DIR: &str = ".baton/sessions";

/// The longest session id accepted.
pub const MAX_SESSION_LEN: usize = 128;

/// What baton keeps about one client session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The client's session id.
    pub session: String,
    /// The client (`claude`, `codex`, `cursor`).
    #[serde(default)]
    pub client: String,
    /// The bound run's workspace as shown (`.specs/…`).
    pub workspace: String,
    /// When the run was bound.
    pub bound_at: Option<DateTime<Utc>>,
    /// The session is an agent `baton run` started for one step of the run
    /// (bound by its hooks' `--run`): it ends its turn when its step's work
    /// is written (the driver, not the agent, takes the next step), and the
    /// driver releases the session when the agent exits.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub step_agent: bool,
    /// Consecutive stop blocks for one outstanding step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_blocks: Option<StopBlocks>,
    /// A person's answer typed in the chat, not yet applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_answer: Option<ChatAnswer>,
    /// The working tree before each watched command still running, by the
    /// call's id (parallel calls each have theirs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watches: Vec<Watch>,
    /// Changes a command left outside the phase's scope, not yet reverted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<Violation>,
    /// The bound run's scope data, compiled from its pinned definition, so
    /// a hook judges a call without parsing the definition again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<CachedScope>,
}

/// A run definition's [`ScopeTable`], with the key of the definition it
/// was compiled from (`super::rules::definition_key`): used only while the
/// key still matches the run's pinned definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedScope {
    /// The definition's key.
    pub key: String,
    /// Its scope data.
    pub table: ScopeTable,
}

/// The stop guard's count for one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopBlocks {
    /// The step (action id, or phase) the blocks were about.
    pub step: String,
    /// How many times in a row the stop was blocked.
    pub count: u32,
}

/// A person's answer, as typed in the chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatAnswer {
    /// The question it answers.
    pub question: String,
    /// The answer as baton records it (`approve`, `revise: text`).
    pub answer: String,
    /// The prompt exactly as the client passed it.
    pub prompt: String,
    /// The client's id of the prompt, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The client's transcript, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<PathBuf>,
    /// When it was typed.
    pub at: DateTime<Utc>,
}

/// The working tree before a watched command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    /// The tool call's id.
    pub call: String,
    /// `git status` entries with the file's size and modification time;
    /// for a guard, HEAD and the protected files (`super::guard`).
    pub tree: Vec<String>,
    /// A guard of a command in a phase that may change the repository:
    /// only HEAD and the protected files are compared.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guard: bool,
    /// The fingerprint of the run's state files before the command
    /// (`super::outside`): compared after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Only the state is compared (a command neither watched nor guarded).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub state_only: bool,
}

/// Changes outside the phase's scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The paths changed (repository-relative).
    pub paths: Vec<String>,
    /// The tree as it was before (to tell when it is back).
    pub before: Vec<String>,
    /// What did it.
    pub command: String,
    /// Reverted once the paths are clean in `git status` (an edit the
    /// client reported after making it: there is no tree from before).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub until_clean: bool,
    /// Found by a guard (`super::guard`): `paths` are HEAD and protected
    /// files, `before` their entries then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guard: bool,
    /// When.
    pub at: DateTime<Utc>,
}

/// Why a session file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    /// The session id is not one baton stores.
    #[error("session id {0:?} is not usable (1–128 ASCII letters, digits, '-', '_', '.')")]
    BadSession(String),
    /// The file exists but cannot be read or parsed.
    #[error("the session file {path} cannot be read ({reason})")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Writing failed.
    #[error("the session file {path} cannot be written ({reason})")]
    Unwritable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Checks a client's session id.
pub fn check_session_id(session: &str) -> Result<(), BindingError> {
    let ok = !session.is_empty()
        && session.len() <= MAX_SESSION_LEN
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !session.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(BindingError::BadSession(
            session.chars().take(160).collect(),
        ))
    }
}

/// The session file of `session` in repository `repo_root`.
pub fn path(repo_root: &Path, session: &str) -> PathBuf {
    repo_root.join(SESSIONS_DIR).join(format!("{session}.json"))
}

/// The session's file, if the session was ever bound. One `stat` and one
/// read: the fast path of every hook call.
pub fn load(repo_root: &Path, session: &str) -> Result<Option<Session>, BindingError> {
    check_session_id(session)?;
    let file = path(repo_root, session);
    match std::fs::symlink_metadata(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(BindingError::Unreadable {
                path: file,
                reason: e.to_string(),
            });
        }
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(BindingError::Unreadable {
                path: file,
                reason: "not a regular file".into(),
            });
        }
        Ok(_) => {}
    }
    let text = std::fs::read_to_string(&file).map_err(|e| BindingError::Unreadable {
        path: file.clone(),
        reason: e.to_string(),
    })?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| BindingError::Unreadable {
            path: file,
            reason: e.to_string(),
        })
}

/// Whether any session of the repository is bound (bad input with no
/// session id fails closed when one is).
pub fn any_bound(repo_root: &Path) -> bool {
    std::fs::read_dir(repo_root.join(SESSIONS_DIR))
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".json"))
        })
        .unwrap_or(false)
}

/// Writes the session's file whole (temporary file, then rename), creating
/// the sessions folder with its ignore file when needed.
pub fn save(repo_root: &Path, session: &Session) -> Result<(), BindingError> {
    check_session_id(&session.session)?;
    let file = path(repo_root, &session.session);
    let dir = repo_root.join(SESSIONS_DIR);
    let unwritable = |reason: String| BindingError::Unwritable {
        path: file.clone(),
        reason,
    };
    // The sessions folder appears with its own `*` ignore file (baton's
    // other folders under `.baton/` carry theirs), so `git status` never
    // lists it.
    baton_state::fs::create_ignored_dir(&dir).map_err(|e| unwritable(e.to_string()))?;
    let text = serde_json::to_vec_pretty(session).map_err(|e| unwritable(e.to_string()))?;
    baton_state::store::write_atomic(&dir, &file, &text, false)
        .map_err(|e| unwritable(e.to_string()))
}

/// Removes the session's file (the run ended or a person released it).
pub fn remove(repo_root: &Path, session: &str) -> Result<(), BindingError> {
    check_session_id(session)?;
    let file = path(repo_root, session);
    match std::fs::remove_file(&file) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BindingError::Unwritable {
            path: file,
            reason: e.to_string(),
        }),
    }
}

/// Changes the session's file under its lock (`<session>.lock` beside it):
/// reads the file as it is now (a fresh session when there is none), lets
/// `change` edit it, writes it whole. The client runs hooks of parallel
/// tool calls at once; each change is applied to the latest file.
pub fn modify(
    repo_root: &Path,
    session: &str,
    change: impl FnOnce(&mut Session),
) -> Result<Session, BindingError> {
    check_session_id(session)?;
    let dir = repo_root.join(SESSIONS_DIR);
    let lock_path = dir.join(format!("{session}.lock"));
    let unwritable = |reason: String| BindingError::Unwritable {
        path: lock_path.clone(),
        reason,
    };
    baton_state::fs::create_ignored_dir(&dir).map_err(|e| unwritable(e.to_string()))?;
    let file =
        baton_state::fs::open_regular(&lock_path, false).map_err(|e| unwritable(e.to_string()))?;
    let _held =
        baton_state::fs::lock_within(file, std::time::Duration::from_secs(5), "session update")
            .map_err(|busy| {
                unwritable(format!(
                    "busy (held by {})",
                    busy.holder.unwrap_or_default()
                ))
            })?;
    let mut current = load(repo_root, session)?.unwrap_or_else(|| Session {
        session: session.to_string(),
        ..Session::default()
    });
    change(&mut current);
    save(repo_root, &current)?;
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_checked() {
        for ok in ["f4870679-7f71-41a7-9868-5c4df30acd88", "abc_1.2"] {
            assert!(check_session_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "../x", "a/b", ".hidden", &"x".repeat(200), "a b"] {
            assert!(check_session_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_session_file_round_trips_and_its_folder_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path(), "s1").unwrap(), None);
        assert!(!any_bound(dir.path()));
        let s = Session {
            session: "s1".into(),
            client: "claude".into(),
            workspace: ".specs/x".into(),
            bound_at: Some(Utc::now()),
            ..Session::default()
        };
        save(dir.path(), &s).unwrap();
        assert_eq!(load(dir.path(), "s1").unwrap(), Some(s));
        assert!(any_bound(dir.path()));
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".baton/sessions/.gitignore")).unwrap(),
            "*\n"
        );
        std::fs::write(path(dir.path(), "s1"), "{not json").unwrap();
        assert!(load(dir.path(), "s1").is_err());
        remove(dir.path(), "s1").unwrap();
        assert_eq!(load(dir.path(), "s1").unwrap(), None);
    }

    #[test]
    fn changes_from_parallel_hooks_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let root = root.clone();
                std::thread::spawn(move || {
                    for i in 0..25 {
                        modify(&root, "s1", |s| {
                            s.watches.push(Watch {
                                call: format!("{t}-{i}"),
                                tree: Vec::new(),
                                guard: false,
                                state: None,
                                state_only: false,
                            })
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(load(&root, "s1").unwrap().unwrap().watches.len(), 100);
    }
}
