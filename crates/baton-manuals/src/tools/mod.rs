//! The six tools, one module each.

pub(crate) mod find;
pub(crate) mod hits;
pub(crate) mod ls;
pub(crate) mod read;
pub(crate) mod scan;
pub(crate) mod toc;

use crate::analyze::decode::decode_text;
use crate::corpus::root::ResolvedFile;
use crate::wire::error::{ManualError, ManualErrorCode};
use baton_text::normalize as text;

/// Reads a resolved manual file as LF-normalised text. Only regular files
/// of at most `max_bytes` are read (a FIFO or device is never opened for
/// reading, so it cannot block the call).
pub(crate) fn read_text(file: &ResolvedFile, max_bytes: u64) -> Result<String, ManualError> {
    let meta = std::fs::metadata(&file.abs).map_err(|e| ManualError::io("cannot stat file", &e))?;
    if !meta.is_file() {
        return Err(ManualError::new(
            ManualErrorCode::Forbidden,
            format!("{:?} is not a regular file and is not served", file.rel),
        ));
    }
    if meta.len() > max_bytes {
        return Err(ManualError::new(
            ManualErrorCode::Forbidden,
            format!(
                "{:?} is larger than {max_bytes} bytes and is not served",
                file.rel
            ),
        ));
    }
    let bytes = crate::corpus::read_bounded(&file.abs, max_bytes)
        .map_err(|e| ManualError::io("cannot read file", &e))?;
    Ok(text::to_lf(&decode_text(&bytes)))
}

/// Rejects `max_chars`, which the seed fixes at 12000.
pub(crate) fn reject_max_chars(args: &serde_json::Value) -> Result<(), ManualError> {
    if args.get("max_chars").is_some() {
        return Err(ManualError::invalid_parameter(
            "max_chars",
            "max_chars is fixed at 12000 and cannot be set; continue with manual_scan and next_cursor",
        ));
    }
    Ok(())
}
