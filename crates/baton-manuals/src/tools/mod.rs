//! The six tools, one module each.

pub(crate) mod find;
pub(crate) mod hits;
pub(crate) mod ls;
pub(crate) mod read;
pub(crate) mod scan;
pub(crate) mod toc;

use crate::corpus::{MAX_FILE_BYTES, decode_text};
use crate::error::{ManualError, ManualErrorCode};
use crate::paths::ResolvedFile;
use crate::text;

/// Reads a resolved manual file as LF-normalised text.
pub(crate) fn read_text(file: &ResolvedFile) -> Result<String, ManualError> {
    let meta = std::fs::metadata(&file.abs).map_err(|e| ManualError::io("cannot stat file", &e))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(ManualError::new(
            ManualErrorCode::Forbidden,
            format!(
                "{:?} is larger than {MAX_FILE_BYTES} bytes and is not served",
                file.rel
            ),
        ));
    }
    let bytes = std::fs::read(&file.abs).map_err(|e| ManualError::io("cannot read file", &e))?;
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
