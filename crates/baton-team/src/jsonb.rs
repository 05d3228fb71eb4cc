//! What PostgreSQL's `jsonb` cannot hold: the NUL character (`\u0000`).
//! A run's state, its events and its history carry text an agent or a
//! person wrote (answers, reports, details), and one NUL in them would make
//! the database refuse every write of that run from then on. So before a
//! write goes to the database each NUL becomes U+FFFD (the replacement
//! character); the outbox file and the working copy's own files keep the
//! text as it was written.

use std::borrow::Cow;

use serde_json::Value;

/// `json` (a JSON text) with every `\u0000` escape replaced by `\ufffd`;
/// borrowed when it has none.
pub fn text(json: &str) -> Cow<'_, str> {
    if !json.contains("\\u0000") {
        return Cow::Borrowed(json);
    }
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        // A backslash always starts a two-character escape (or `\uXXXX`):
        // `\\u0000` is an escaped backslash followed by text, left alone.
        if bytes[i + 1..].starts_with(b"u0000") {
            out.push_str(&json[start..i]);
            out.push_str("\\ufffd");
            i += 6;
            start = i;
        } else {
            i += 2;
        }
    }
    if start == 0 {
        // Only escaped backslashes followed by `u0000`: nothing replaced.
        return Cow::Borrowed(json);
    }
    out.push_str(&json[start.min(json.len())..]);
    Cow::Owned(out)
}

/// `value` with every NUL in its strings and keys replaced by U+FFFD;
/// borrowed when it has none.
pub fn value(value: &Value) -> Cow<'_, Value> {
    if has_nul(value) {
        Cow::Owned(replaced(value.clone()))
    } else {
        Cow::Borrowed(value)
    }
}

/// [`value`] for a list.
pub fn values(values: &[Value]) -> Cow<'_, [Value]> {
    if values.iter().any(has_nul) {
        Cow::Owned(values.iter().cloned().map(replaced).collect())
    } else {
        Cow::Borrowed(values)
    }
}

fn has_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(has_nul),
        Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

fn replaced(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace('\0', "\u{fffd}")),
        Value::Array(a) => Value::Array(a.into_iter().map(replaced).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k.replace('\0', "\u{fffd}"), replaced(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_escapes_become_the_replacement_character_and_nothing_else_changes() {
        let v = json!({"a\u{0}": ["x\u{0}y", {"k": "\u{0}"}], "b": "\\u0000 stays text", "n": 1});
        let t = serde_json::to_string(&v).unwrap();
        let cleaned = text(&t);
        assert!(matches!(cleaned, Cow::Owned(_)));
        let back: Value = serde_json::from_str(&cleaned).unwrap();
        assert_eq!(
            back,
            json!({"a\u{fffd}": ["x\u{fffd}y", {"k": "\u{fffd}"}], "b": "\\u0000 stays text", "n": 1})
        );
        assert_eq!(*value(&v), back);
        assert_eq!(values(std::slice::from_ref(&v))[0], back);
        // Text without a NUL is passed through as it is.
        let plain = json!({"b": "\\u0000 stays text"}).to_string();
        assert!(matches!(text(&plain), Cow::Borrowed(_)));
        assert!(matches!(value(&json!({"b": "x"})), Cow::Borrowed(_)));
    }
}
