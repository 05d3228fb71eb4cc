//! Tool errors: a closed set of stable codes, returned as `isError` results.
//!
//! JSON-RPC errors are reserved for protocol faults (unknown method, malformed
//! request); every domain failure is a tool result with `isError: true` and
//! the structured content `{code, message, details?}`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use baton_engine::guards::GuardViolation;
use baton_state::{LifecycleError, StoreError, UpdateError};

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
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NeedsNarrowScope => "needs_narrow_scope",
            ErrorCode::IoError => "io_error",
            ErrorCode::Internal => "internal",
        }
    }
}

/// A tool failure.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ToolError {
    /// Stable code.
    pub code: ErrorCode,
    /// What went wrong and how to fix it.
    pub message: String,
    /// Structured detail (the offending field, valid values, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ToolError {
        ToolError {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> ToolError {
        self.details = Some(details);
        self
    }

    /// The JSON text of an error result: `{"code", "message", "details"?}`.
    pub fn to_json_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            format!(
                "{{\"code\":\"{}\",\"message\":\"error\"}}",
                self.code.as_str()
            )
        })
    }

    /// `invalid_parameter` naming the field.
    pub fn invalid(field: &str, message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorCode::InvalidParameter, message)
            .with_details(serde_json::json!({ "field": field }))
    }
}

impl From<StoreError> for ToolError {
    fn from(e: StoreError) -> ToolError {
        let code = match &e {
            StoreError::InvalidWorkspace { .. } => ErrorCode::InvalidParameter,
            StoreError::OutOfScope { .. } => ErrorCode::OutOfScope,
            StoreError::NotFound { .. } => ErrorCode::NotFound,
            StoreError::AlreadyExists { .. } => ErrorCode::Conflict,
            StoreError::Corrupt { .. } => ErrorCode::CorruptState,
            StoreError::UnsupportedVersion { .. } => ErrorCode::UnsupportedVersion,
            StoreError::Io { .. } => ErrorCode::IoError,
        };
        let mut err = ToolError::new(code, e.to_string());
        if matches!(
            e,
            StoreError::InvalidWorkspace { .. } | StoreError::OutOfScope { .. }
        ) {
            err = err.with_details(serde_json::json!({ "field": "workspace" }));
        }
        err
    }
}

impl From<LifecycleError> for ToolError {
    fn from(e: LifecycleError) -> ToolError {
        match &e {
            LifecycleError::UnknownPhase { valid, .. } => {
                let valid: Vec<&str> = valid.split(", ").collect();
                ToolError::new(ErrorCode::InvalidParameter, e.to_string())
                    .with_details(serde_json::json!({ "field": "phase", "valid": valid }))
            }
            LifecycleError::NotCurrent { current, .. } => {
                ToolError::new(ErrorCode::InvalidState, e.to_string())
                    .with_details(serde_json::json!({ "currentPhase": current }))
            }
            LifecycleError::WrongStatus { status, .. } => {
                ToolError::new(ErrorCode::InvalidState, e.to_string())
                    .with_details(serde_json::json!({ "currentPhaseStatus": status }))
            }
            LifecycleError::Ended { status, .. } => {
                ToolError::new(ErrorCode::InvalidState, e.to_string())
                    .with_details(serde_json::json!({ "currentPhaseStatus": status }))
            }
        }
    }
}

impl From<GuardViolation> for ToolError {
    fn from(v: GuardViolation) -> ToolError {
        ToolError::new(ErrorCode::Blocked, v.message)
            .with_details(serde_json::json!({ "rule": v.rule }))
    }
}

impl<E: Into<ToolError>> From<UpdateError<E>> for ToolError {
    fn from(e: UpdateError<E>) -> ToolError {
        match e {
            UpdateError::Store(s) => s.into(),
            UpdateError::Rejected(r) => r.into(),
        }
    }
}

impl From<baton_manuals::ManualError> for ToolError {
    fn from(e: baton_manuals::ManualError) -> ToolError {
        use baton_manuals::ManualErrorCode as M;
        let code = match e.code {
            M::InvalidParameter => ErrorCode::InvalidParameter,
            M::InvalidPath => ErrorCode::InvalidPath,
            M::OutOfScope => ErrorCode::OutOfScope,
            M::Forbidden => ErrorCode::Forbidden,
            M::InvalidScope => ErrorCode::InvalidScope,
            M::NotFound => ErrorCode::NotFound,
            M::NeedsNarrowScope => ErrorCode::NeedsNarrowScope,
            M::Internal => ErrorCode::Internal,
        };
        ToolError {
            code,
            message: e.message,
            details: e.details,
        }
    }
}
