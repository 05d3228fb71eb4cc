//! Use-case errors: a closed set of stable codes (docs/errors.md). Every
//! adapter shows them the same way: the MCP server as an `isError` result
//! whose text is `{code, message, details?}`, the CLI as a message and an
//! exit code, HTTP as a JSON body with a status.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use baton_engine::completion::guards::GuardViolation;
use baton_state::{LifecycleError, StoreError, UpdateError};

/// A use case's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The closed set of error codes. Documented in `docs/errors.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// An argument is missing, of the wrong type, out of range, too long, or unknown.
    InvalidParameter,
    /// The named workspace, phase, workflow or file does not exist.
    NotFound,
    /// A path argument points outside the folder it must stay in.
    OutOfScope,
    /// The call is not allowed in the workflow's current state (wrong phase,
    /// wrong status, workflow ended).
    InvalidState,
    /// A guard refused the call (artifact missing, checkpoint not presented, …).
    Blocked,
    /// The thing to create already exists.
    Conflict,
    /// `state.json` is unreadable; it was left untouched.
    CorruptState,
    /// `state.json` was written by a newer baton.
    UnsupportedVersion,
    /// The workspace is locked by another call for longer than the wait
    /// allowed; try again.
    Busy,
    /// A report names an action that is not the one outstanding (an old
    /// report arriving late, or one for another action).
    StaleAction,
    /// The named tool group or tool is not exposed by this server.
    UnknownTool,
    /// A manual read scope is not allowed for the file (seed 002).
    InvalidScope,
    /// A manual path is malformed (seed 002).
    InvalidPath,
    /// The manual operation is not permitted by configuration (seed 002).
    Forbidden,
    /// The request would return too much; narrow it (seed 002).
    NeedsNarrowScope,
    /// A file operation failed.
    IoError,
    /// Team mode's database cannot answer now (down, refused the
    /// password, a newer schema); this machine's own runs still work.
    TeamUnavailable,
    /// A defect in baton; please report it.
    Internal,
}

impl ErrorCode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidParameter => "invalid_parameter",
            ErrorCode::NotFound => "not_found",
            ErrorCode::OutOfScope => "out_of_scope",
            ErrorCode::InvalidState => "invalid_state",
            ErrorCode::Blocked => "blocked",
            ErrorCode::Conflict => "conflict",
            ErrorCode::CorruptState => "corrupt_state",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::Busy => "busy",
            ErrorCode::StaleAction => "stale_action",
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NeedsNarrowScope => "needs_narrow_scope",
            ErrorCode::IoError => "io_error",
            ErrorCode::TeamUnavailable => "team_unavailable",
            ErrorCode::Internal => "internal",
        }
    }
}

/// A refused or failed use case: a stable code, a message that says what
/// to do next, and structured details.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct Error {
    /// Stable code.
    pub code: ErrorCode,
    /// What went wrong and how to fix it.
    pub message: String,
    /// Structured detail (the offending field, valid values, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl Error {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> Error {
        self.details = Some(details);
        self
    }

    /// The JSON text of the error: `{"code", "message", "details"?}`.
    pub fn to_json_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            format!(
                "{{\"code\":\"{}\",\"message\":\"error\"}}",
                self.code.as_str()
            )
        })
    }

    /// `invalid_parameter` naming the field.
    pub fn invalid(field: &str, message: impl Into<String>) -> Error {
        Error::new(ErrorCode::InvalidParameter, message)
            .with_details(serde_json::json!({ "field": field }))
    }
}

/// What a person does about a missing workspace (the CLI, the dashboard).
const NO_WORKSPACE_NEXT_FOR_PERSON: &str = "`baton ls` lists the runs here; pass one of them, or start a run with `baton run \"<task>\"` (or ask your agent to start one)";

/// What an agent does about a missing workspace (the MCP tools).
const NO_WORKSPACE_NEXT_FOR_AGENT: &str = "pass the workspace an earlier reply returned (`baton ls` lists them), or start one (pipeline_init, startIssueWorkflow, workflow_start)";

impl Error {
    /// The error as an agent reads it (the MCP tools call this): a missing
    /// workspace names the tools that start one instead of the person's
    /// commands. Messages are written for a person by default; the code
    /// and details stay the same.
    pub fn for_agent(mut self) -> Error {
        if self.code == ErrorCode::NotFound && self.message.contains(NO_WORKSPACE_NEXT_FOR_PERSON) {
            self.message = self
                .message
                .replace(NO_WORKSPACE_NEXT_FOR_PERSON, NO_WORKSPACE_NEXT_FOR_AGENT);
        }
        self
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        let code = match &e {
            StoreError::InvalidWorkspace { .. } => ErrorCode::InvalidParameter,
            StoreError::OutOfScope { .. } => ErrorCode::OutOfScope,
            StoreError::NotFound { .. } => ErrorCode::NotFound,
            StoreError::AlreadyExists { .. } => ErrorCode::Conflict,
            StoreError::Corrupt { .. } => ErrorCode::CorruptState,
            StoreError::UnsupportedVersion { .. } => ErrorCode::UnsupportedVersion,
            StoreError::Busy { .. } => ErrorCode::Busy,
            StoreError::Io { .. } => ErrorCode::IoError,
        };
        let mut err = match &e {
            StoreError::Corrupt { path, .. } => Error::new(
                code,
                format!(
                    "{e}. baton never overwrites it: restore it (`git checkout -- {}` if it is committed, or from a backup) or repair the JSON by hand, then call again",
                    path.display()
                ),
            )
            .with_details(serde_json::json!({ "file": path.display().to_string() })),
            StoreError::NotFound { .. } => {
                Error::new(code, format!("{e}; {NO_WORKSPACE_NEXT_FOR_PERSON}"))
            }
            StoreError::Busy {
                holder, waited_ms, ..
            } => Error::new(code, e.to_string())
                .with_details(serde_json::json!({ "holder": holder, "waitedMs": waited_ms })),
            _ => Error::new(code, e.to_string()),
        };
        if matches!(
            e,
            StoreError::InvalidWorkspace { .. } | StoreError::OutOfScope { .. }
        ) {
            err = err.with_details(serde_json::json!({ "field": "workspace" }));
        }
        err
    }
}

impl From<LifecycleError> for Error {
    fn from(e: LifecycleError) -> Error {
        match &e {
            LifecycleError::UnknownPhase { valid, .. } => {
                let valid: Vec<&str> = valid.split(", ").collect();
                Error::new(ErrorCode::InvalidParameter, e.to_string())
                    .with_details(serde_json::json!({ "field": "phase", "valid": valid }))
            }
            LifecycleError::NotCurrent { current, .. } => {
                Error::new(ErrorCode::InvalidState, e.to_string())
                    .with_details(serde_json::json!({ "currentPhase": current }))
            }
            LifecycleError::WrongStatus { status, .. } => {
                Error::new(ErrorCode::InvalidState, e.to_string())
                    .with_details(serde_json::json!({ "currentPhaseStatus": status }))
            }
            LifecycleError::Ended { status, .. } => {
                Error::new(ErrorCode::InvalidState, e.to_string())
                    .with_details(serde_json::json!({ "currentPhaseStatus": status }))
            }
        }
    }
}

impl From<GuardViolation> for Error {
    fn from(v: GuardViolation) -> Error {
        Error::new(ErrorCode::Blocked, v.message)
            .with_details(serde_json::json!({ "rule": v.rule }))
    }
}

impl<E: Into<Error>> From<UpdateError<E>> for Error {
    fn from(e: UpdateError<E>) -> Error {
        match e {
            UpdateError::Store(s) => s.into(),
            UpdateError::Rejected(r) => r.into(),
        }
    }
}
