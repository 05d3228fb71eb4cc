//! Path safety: every file the tools touch is resolved here, and nothing
//! outside the manuals root is ever opened.
//!
//! Two layers:
//! 1. lexical checks on the argument ([`relative_path`], [`manual_id`]):
//!    NUL bytes, absolute paths, drive letters, `..` segments and hidden
//!    segments are refused before the file system is touched;
//! 2. resolution ([`ManualsRoot::resolve_file`]): the joined path is
//!    canonicalised (symlinks followed) and must still lie inside the
//!    canonical manual directory, which must lie inside the canonical root.

use std::path::{Path, PathBuf};

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use crate::args::{self, MAX_ID_BYTES, MAX_PATH_BYTES};
use crate::error::{ManualError, ManualErrorCode};

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

/// A file resolved inside a manual.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedFile {
    /// Canonical absolute path (safe to open).
    pub abs: PathBuf,
    /// The path relative to the manual directory, as it exists on disk.
    pub rel: String,
    /// Markdown or JSON.
    pub file_type: FileType,
}

/// The canonical manuals root and the resolution of ids and paths inside it.
#[derive(Debug, Clone)]
pub(crate) struct ManualsRoot {
    /// The configured root (used for display).
    pub configured: PathBuf,
    /// The canonical root, `None` while the root directory does not exist.
    canonical: Option<PathBuf>,
}

impl ManualsRoot {
    /// Wraps a root path; it may not exist (yet).
    pub(crate) fn new(configured: &Path) -> Self {
        ManualsRoot {
            configured: configured.to_path_buf(),
            canonical: configured.canonicalize().ok(),
        }
    }

    /// The canonical root, re-checked when it did not exist before.
    pub(crate) fn canonical(&self) -> Option<PathBuf> {
        self.canonical
            .clone()
            .or_else(|| self.configured.canonicalize().ok())
    }

    /// The canonical directory of an existing manual.
    pub(crate) fn manual_dir(&self, manual_id: &str) -> Result<PathBuf, ManualError> {
        if manual_id.starts_with('.') {
            return Err(ManualError::new(
                ManualErrorCode::Forbidden,
                format!("manual {manual_id:?} is hidden; hidden directories are not manuals"),
            ));
        }
        let root = self.canonical().ok_or_else(|| {
            ManualError::not_found(format!(
                "manuals root {} does not exist",
                self.configured.display()
            ))
        })?;
        let dir = find_entry(&root, manual_id).ok_or_else(|| unknown_manual(manual_id))?;
        let canonical = dir.canonicalize().map_err(|_| unknown_manual(manual_id))?;
        if !canonical.starts_with(&root) || canonical == root {
            return Err(ManualError::out_of_scope(format!(
                "manual {manual_id:?} resolves outside the manuals root"
            )));
        }
        if !canonical.is_dir() {
            return Err(unknown_manual(manual_id));
        }
        Ok(canonical)
    }

    /// Resolves an existing path (file or directory) inside a manual and
    /// returns its canonical absolute path and on-disk relative path.
    pub(crate) fn resolve_entry(
        &self,
        manual_id: &str,
        rel: &str,
    ) -> Result<(PathBuf, String), ManualError> {
        let dir = self.manual_dir(manual_id)?;
        let mut current = dir.clone();
        let mut on_disk = Vec::new();
        for segment in rel.split('/') {
            let next = find_entry(&current, segment).ok_or_else(|| {
                ManualError::not_found(format!(
                    "{rel:?} does not exist in manual {manual_id:?}; list files with manual_ls(id='{manual_id}')"
                ))
            })?;
            if let Some(name) = next.file_name() {
                on_disk.push(name.to_string_lossy().into_owned());
            }
            current = next;
        }
        let canonical = current.canonicalize().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                // A dangling symlink: the name exists, what it points to does not.
                ManualError::not_found(format!(
                    "{rel:?} in manual {manual_id:?} is a link to nothing; list files with manual_ls(id='{manual_id}')"
                ))
            } else {
                ManualError::io("cannot resolve path", &e)
            }
        })?;
        if !canonical.starts_with(&dir) {
            return Err(ManualError::out_of_scope(format!(
                "{rel:?} resolves outside manual {manual_id:?} (symlink); only files inside the manual can be read"
            )));
        }
        Ok((canonical, on_disk.join("/")))
    }

    /// Resolves an existing manual file (`.md` or `.json`).
    pub(crate) fn resolve_file(
        &self,
        manual_id: &str,
        rel: &str,
    ) -> Result<ResolvedFile, ManualError> {
        let file_type = FileType::of(rel).ok_or_else(|| {
            ManualError::invalid_path(format!(
                "{rel:?} is not a manual file; only .md and .json files can be read"
            ))
        })?;
        let (abs, on_disk) = self.resolve_entry(manual_id, rel)?;
        if !abs.is_file() {
            return Err(ManualError::not_found(format!(
                "{rel:?} is not a file in manual {manual_id:?}"
            )));
        }
        Ok(ResolvedFile {
            abs,
            rel: on_disk,
            file_type,
        })
    }
}

fn unknown_manual(manual_id: &str) -> ManualError {
    ManualError::not_found(format!(
        "manual {manual_id:?} not found; list manuals with manual_ls(id='{ROOT_ID}')"
    ))
    .with_details(serde_json::json!({ "manual_id": manual_id }))
}

/// Finds `name` in `dir`: the exact entry, or else an entry whose name is
/// equal after Unicode NFC normalisation (macOS writes NFD file names).
fn find_entry(dir: &Path, name: &str) -> Option<PathBuf> {
    let direct = dir.join(name);
    if direct.symlink_metadata().is_ok() {
        return Some(direct);
    }
    let wanted: String = name.nfc().collect();
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let file_name = entry.file_name();
        let candidate: String = file_name.to_string_lossy().nfc().collect();
        (candidate == wanted).then(|| entry.path())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<String, ManualError>) -> Option<ManualErrorCode> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn relative_paths_are_normalised() {
        assert_eq!(
            normalize_relative("p", "a\\b/./c.md").ok().as_deref(),
            Some("a/b/c.md")
        );
        assert_eq!(
            normalize_relative("p", "a//b.md").ok().as_deref(),
            Some("a/b.md")
        );
    }

    #[test]
    fn escapes_are_refused_lexically() {
        assert_eq!(
            code(normalize_relative("p", "../x.md")),
            Some(ManualErrorCode::OutOfScope)
        );
        assert_eq!(
            code(normalize_relative("p", "a/../../x.md")),
            Some(ManualErrorCode::OutOfScope)
        );
        assert_eq!(
            code(normalize_relative("p", "/etc/passwd")),
            Some(ManualErrorCode::OutOfScope)
        );
        assert_eq!(
            code(normalize_relative("p", "C:\\x.md")),
            Some(ManualErrorCode::OutOfScope)
        );
        assert_eq!(
            code(normalize_relative("p", "a\0.md")),
            Some(ManualErrorCode::InvalidPath)
        );
        assert_eq!(
            code(normalize_relative("p", "./")),
            Some(ManualErrorCode::InvalidPath)
        );
        assert_eq!(
            code(normalize_relative("p", ".git/config")),
            Some(ManualErrorCode::Forbidden)
        );
    }

    #[test]
    fn manual_ids_are_single_segments() {
        for bad in ["../vault", "a/b", "..", "manuals", "a\\b"] {
            assert_eq!(
                manual_id("manual_id", &Value::String(bad.into()))
                    .err()
                    .map(|e| e.code),
                Some(ManualErrorCode::InvalidParameter),
                "{bad}"
            );
        }
        assert_eq!(
            manual_id("m", &Value::String(" m1 ".into()))
                .ok()
                .as_deref(),
            Some("m1")
        );
    }
}
