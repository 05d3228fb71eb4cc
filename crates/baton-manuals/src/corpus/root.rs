//! The manuals root on disk: resolving manual ids and paths (already
//! checked lexically by [`crate::wire::ids`]) to canonical files inside it,
//! never outside.

use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use crate::wire::error::{ManualError, ManualErrorCode};
use crate::wire::ids::{FileType, ROOT_ID};

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
    use crate::wire::ids::{manual_id, normalize_relative};
    use serde_json::Value;

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
