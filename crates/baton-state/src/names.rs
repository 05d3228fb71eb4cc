//! Workspace names and paths as the store checks them: folder-name rules,
//! lexical path normalisation, and inputs shortened for error messages.

use std::path::{Path, PathBuf};

use crate::store::MAX_NAME_LEN;

/// Folder names: ASCII letters, digits, `.`, `_`, `-`; starting with a letter or digit.
pub(crate) fn validate_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_NAME_LEN {
        return Err(format!("name longer than {MAX_NAME_LEN} characters"));
    }
    let bytes = name.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_alphanumeric) {
        return Err("name must start with an ASCII letter or digit".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "name may contain only ASCII letters, digits, '.', '_' and '-' (found {bad:?})"
        ));
    }
    Ok(())
}

/// Lexical normalisation: join onto `base` when relative, drop `.`, apply `..`.
pub(crate) fn normalize(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `s` cut to at most `max` bytes at a character boundary, `…` marking a cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
