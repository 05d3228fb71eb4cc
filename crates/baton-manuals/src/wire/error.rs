//! The typed error every tool returns, with its closed set of stable codes.

use serde::Serialize;
use serde_json::Value;

/// The closed set of error codes a manual tool can return.
///
/// The string form ([`ManualErrorCode::as_str`]) is part of the public
/// contract: agents branch on it, so it never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManualErrorCode {
    /// An argument is missing, has the wrong JSON type, is out of range, is
    /// too long, is an unknown field or names an unknown enum value.
    InvalidParameter,
    /// A file path argument is not a usable relative path (not a string,
    /// empty, contains NUL, names a non-manual file type).
    InvalidPath,
    /// A path tries to leave the manuals root (`..`, absolute path, or a
    /// symlink whose target lies outside the root).
    OutOfScope,
    /// The path exists inside the root but may not be used (hidden entries).
    Forbidden,
    /// The requested `manual_read` scope is not allowed for this file.
    InvalidScope,
    /// The manual, file, section, line or trace does not exist (or expired).
    NotFound,
    /// The request would return too much; narrow it (e.g. `path_prefix`).
    NeedsNarrowScope,
    /// An unexpected failure (I/O error while reading a manual file).
    Internal,
}

impl ManualErrorCode {
    /// Every code, in documentation order.
    pub const ALL: [ManualErrorCode; 8] = [
        ManualErrorCode::InvalidParameter,
        ManualErrorCode::InvalidPath,
        ManualErrorCode::OutOfScope,
        ManualErrorCode::Forbidden,
        ManualErrorCode::InvalidScope,
        ManualErrorCode::NotFound,
        ManualErrorCode::NeedsNarrowScope,
        ManualErrorCode::Internal,
    ];

    /// The stable wire form of the code, e.g. `"invalid_parameter"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ManualErrorCode::InvalidParameter => "invalid_parameter",
            ManualErrorCode::InvalidPath => "invalid_path",
            ManualErrorCode::OutOfScope => "out_of_scope",
            ManualErrorCode::Forbidden => "forbidden",
            ManualErrorCode::InvalidScope => "invalid_scope",
            ManualErrorCode::NotFound => "not_found",
            ManualErrorCode::NeedsNarrowScope => "needs_narrow_scope",
            ManualErrorCode::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ManualErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error returned by a manual tool: a stable code, a message written for
/// the agent (it says what to do next), and optional structured details.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[error("{code}: {message}")]
pub struct ManualError {
    /// The stable error code.
    pub code: ManualErrorCode,
    /// A human/agent readable explanation, naming the offending argument.
    pub message: String,
    /// Structured extra information (e.g. `{"field": "budget.time_ms"}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ManualError {
    /// Builds an error without details.
    pub fn new(code: ManualErrorCode, message: impl Into<String>) -> Self {
        ManualError {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Attaches structured details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `invalid_parameter` naming the offending field in `details.field`.
    pub fn invalid_parameter(field: &str, message: impl Into<String>) -> Self {
        ManualError::new(ManualErrorCode::InvalidParameter, message)
            .with_details(serde_json::json!({ "field": field }))
    }

    /// `invalid_path` for a path argument.
    pub fn invalid_path(message: impl Into<String>) -> Self {
        ManualError::new(ManualErrorCode::InvalidPath, message)
    }

    /// `out_of_scope` for an attempt to leave the manuals root.
    pub fn out_of_scope(message: impl Into<String>) -> Self {
        ManualError::new(ManualErrorCode::OutOfScope, message)
    }

    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        ManualError::new(ManualErrorCode::NotFound, message)
    }

    /// `internal` wrapping an I/O error; the message never contains file contents.
    pub fn io(context: &str, err: &std::io::Error) -> Self {
        ManualError::new(ManualErrorCode::Internal, format!("{context}: {err}"))
    }

    /// The error as the JSON payload a tool returns: `{code, message, details?}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(
            |_| serde_json::json!({ "code": self.code.as_str(), "message": self.message }),
        )
    }
}
