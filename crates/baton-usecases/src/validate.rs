//! Validation of typed inputs shared by every adapter: lengths, one-line
//! values, identifiers, repository-relative paths. Each failure is an
//! `invalid_parameter` (or `out_of_scope`) error naming the field.

use crate::error::{Error, ErrorCode};

/// Longest list of files or tasks accepted in a report.
pub const MAX_ITEMS: usize = 500;
/// Longest single path or task text in a list.
pub const MAX_ITEM: usize = 1024;

/// Checks an optional one-line value (a URL, an id, a branch name): at most
/// `max` bytes and no control characters (a newline would let it inject
/// lines into the files it is written to).
pub fn check_line(field: &str, value: &str, max: usize) -> Result<(), Error> {
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format!("{field} is {} bytes; the limit is {max}", value.len()),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(
            field,
            format!("{field} must be one line without control characters"),
        ));
    }
    Ok(())
}

/// Checks a string argument's length (in bytes) and that it is not blank.
pub fn check_text(field: &str, value: &str, max: usize) -> Result<(), Error> {
    if value.trim().is_empty() {
        return Err(Error::invalid(field, format!("{field} must not be empty")));
    }
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format!("{field} is {} bytes; the limit is {max}", value.len()),
        ));
    }
    if value.contains('\0') {
        return Err(Error::invalid(
            field,
            format!("{field} contains a NUL byte"),
        ));
    }
    Ok(())
}

/// Checks a list argument: at most [`MAX_ITEMS`] entries of at most [`MAX_ITEM`] bytes.
pub fn check_list(field: &str, items: &[String]) -> Result<(), Error> {
    if items.len() > MAX_ITEMS {
        return Err(Error::invalid(
            field,
            format!("{field} has more than {MAX_ITEMS} entries"),
        ));
    }
    for item in items {
        check_text(field, item, MAX_ITEM)?;
    }
    Ok(())
}

/// A working-file path: relative, inside the repository, no `..`.
pub fn check_path(path: &str) -> Result<String, Error> {
    let p = std::path::Path::new(path.trim());
    let ok = !p.is_absolute()
        && p.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
    if !ok {
        return Err(Error::new(
            ErrorCode::OutOfScope,
            format!("working file {path:?} must be a relative path inside the repository"),
        )
        .with_details(serde_json::json!({"field": "phaseResult.workingFiles"})));
    }
    Ok(p.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect::<Vec<_>>()
        .join("/"))
}

/// Issue numbers: 1–64 characters of `[A-Za-z0-9._-]`, a leading `#` dropped
/// ("42", "#42", "PROJ-123").
pub fn normalize_issue(raw: &str) -> Result<String, Error> {
    let n = raw.trim();
    let n = n.strip_prefix('#').unwrap_or(n);
    if n.is_empty() || n.len() > 64 {
        return Err(Error::invalid(
            "issueNumber",
            "issueNumber must be 1 to 64 characters",
        ));
    }
    if !n
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        || !n.starts_with(|c: char| c.is_ascii_alphanumeric())
    {
        return Err(Error::invalid(
            "issueNumber",
            format!(
                "issueNumber {n:?} must start with an ASCII letter or digit and contain only letters, digits, '.', '_' and '-' (e.g. \"42\" or \"PROJ-123\")"
            ),
        ));
    }
    Ok(n.to_string())
}

/// Lower-case ASCII letters and digits joined by single hyphens, cut at a hyphen before `max`.
pub fn slugify(text: &str, max: usize) -> String {
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.len() <= max {
        return slug.to_string();
    }
    let cut = &slug[..max];
    match cut.rfind('-') {
        Some(i) if i > 0 => cut[..i].to_string(),
        _ => cut.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_ascii_hyphenated_and_bounded() {
        assert_eq!(slugify("Fix Auth  Timeout!", 60), "fix-auth-timeout");
        assert_eq!(slugify("  --x--  ", 60), "x");
        assert_eq!(slugify("日本語", 60), "");
        assert_eq!(slugify("aaa bbb ccc", 9), "aaa-bbb");
        assert_eq!(slugify("$(rm -rf /); echo", 60), "rm-rf-echo");
    }

    #[test]
    fn issue_numbers_are_normalised_or_refused() {
        assert_eq!(normalize_issue(" #42 ").unwrap(), "42");
        assert_eq!(normalize_issue("PROJ-123").unwrap(), "PROJ-123");
        for bad in [
            "",
            "#",
            "4 2",
            "a/b",
            "x;y",
            "..",
            ".hidden",
            "-1",
            &"9".repeat(65),
        ] {
            assert!(normalize_issue(bad).is_err(), "{bad:?}");
        }
    }
}
