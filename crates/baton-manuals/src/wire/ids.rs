//! Path safety, first half: lexical checks on ids and paths given as
//! arguments ([`relative_path`], [`manual_id`]): NUL bytes, absolute paths,
//! drive letters, `..` segments and hidden segments are refused before the
//! file system is touched. The second half, resolving what passed inside
//! the canonical manuals root, is `crate::corpus::root`.

use serde_json::Value;

use crate::wire::args::{self, MAX_ID_BYTES, MAX_PATH_BYTES};
use crate::wire::error::{ManualError, ManualErrorCode};

/// The id of the manuals root in `manual_ls`.
pub const ROOT_ID: &str = "manuals";

/// The kind of a manual file, decided by its extension (case-insensitive).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum FileType {
    /// A Markdown file (`.md`): indexed per heading section.
    Md,
    /// A JSON file (`.json`): indexed as one unit.
    Json,
}

impl FileType {
    /// The file type of a path, `None` for non-manual files.
    pub fn of(path: &str) -> Option<FileType> {
        let ext = path.rsplit_once('.')?.1;
        if ext.eq_ignore_ascii_case("md") {
            Some(FileType::Md)
        } else if ext.eq_ignore_ascii_case("json") {
            Some(FileType::Json)
        } else {
            None
        }
    }

    /// `"md"` or `"json"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileType::Md => "md",
            FileType::Json => "json",
        }
    }
}

/// Validates a manual id argument: a non-empty string naming exactly one
/// directory (no `/`, `\`, `.`/`..`, NUL), not the root id `manuals`.
pub(crate) fn manual_id(field: &str, value: &Value) -> Result<String, ManualError> {
    let id = args::string(field, value, MAX_ID_BYTES)?;
    check_manual_id(field, id)?;
    if id == ROOT_ID {
        return Err(ManualError::invalid_parameter(
            field,
            format!(
                "{field}='{ROOT_ID}' is the root id; use a manual id from manual_ls(id='{ROOT_ID}').items[].id"
            ),
        ));
    }
    Ok(id.to_string())
}

/// Lexical checks shared by manual ids and the first segment of `manual_ls` ids.
pub(crate) fn check_manual_id(field: &str, id: &str) -> Result<(), ManualError> {
    if id.contains(['/', '\\', '\0']) || id == "." || id == ".." {
        return Err(ManualError::invalid_parameter(
            field,
            format!(
                "{field} must be a single manual directory name (no '/', '\\' or '..'), got {id:?}"
            ),
        ));
    }
    Ok(())
}

/// Validates a relative file path argument and returns it in normal form
/// (`a/b/c.md`: `\` turned into `/`, `.` and empty segments dropped).
pub(crate) fn relative_path(field: &str, value: &Value) -> Result<String, ManualError> {
    let Value::String(raw) = value else {
        return Err(ManualError::invalid_path(format!(
            "{field} must be a string path relative to the manual directory, got {}",
            args::type_name(value)
        )));
    };
    normalize_relative(field, raw)
}

/// The string form of [`relative_path`].
pub(crate) fn normalize_relative(field: &str, raw: &str) -> Result<String, ManualError> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(ManualError::invalid_path(format!(
            "{field} is too long ({} bytes; at most {MAX_PATH_BYTES})",
            raw.len()
        )));
    }
    if raw.contains('\0') {
        return Err(ManualError::invalid_path(format!(
            "{field} must not contain NUL bytes"
        )));
    }
    let unified = raw.replace('\\', "/");
    let bytes = unified.as_bytes();
    let has_drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
    if unified.starts_with('/') || has_drive {
        return Err(ManualError::out_of_scope(format!(
            "{field} must be relative to the manual directory; absolute paths are not allowed"
        )));
    }
    let mut segments = Vec::new();
    for segment in unified.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                return Err(ManualError::out_of_scope(format!(
                    "{field} must stay inside the manual directory; '..' is not allowed"
                )));
            }
            s if s.starts_with('.') => {
                return Err(ManualError::new(
                    ManualErrorCode::Forbidden,
                    format!(
                        "{field} names a hidden entry ({s:?}); hidden files are not part of a manual"
                    ),
                ));
            }
            s => segments.push(s),
        }
    }
    if segments.is_empty() {
        return Err(ManualError::invalid_path(format!(
            "{field} must name a file inside the manual"
        )));
    }
    Ok(segments.join("/"))
}
