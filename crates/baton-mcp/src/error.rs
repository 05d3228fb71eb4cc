//! Tool errors: the use-case layer's closed set of codes (docs/errors.md),
//! returned as `isError` results whose text is `{code, message, details?}`.
//!
//! JSON-RPC errors are reserved for protocol faults (unknown method,
//! malformed request).

pub use baton_usecases::error::{Error as ToolError, ErrorCode};

/// The tool error for a manual-search failure (seed 002 codes).
pub fn manual_error(e: baton_manuals::ManualError) -> ToolError {
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
    let mut error = ToolError::new(code, e.message);
    error.details = e.details;
    error
}
