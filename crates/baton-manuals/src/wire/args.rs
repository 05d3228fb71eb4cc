//! Strict validation of raw JSON tool arguments.
//!
//! Rules applied everywhere (documented in `docs/manuals.md`):
//! * the arguments (and nested objects such as `budget`) must be JSON objects;
//!   unknown fields are rejected so that a misspelt option never silently
//!   does nothing;
//! * `null` means "not given";
//! * booleans must be JSON booleans;
//! * an integer is "convertible" when it is a JSON integer, a JSON number with
//!   no fractional part (`5.0`), or a string holding a base-10 integer
//!   (`"5"`, surrounding spaces allowed); anything else (`5.5`, `"abc"`,
//!   `true`, arrays, objects) is `invalid_parameter`;
//! * strings have length limits (bytes), see the `MAX_*` constants.

use serde_json::{Map, Value};

use crate::wire::error::ManualError;

/// Longest accepted `query`, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// Longest accepted id (`manual_id`, `id`, `trace_id`), in bytes.
pub const MAX_ID_BYTES: usize = 1024;
/// Longest accepted relative file path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// A validated JSON object of arguments.
pub(crate) struct Args<'a> {
    prefix: &'a str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Checks that `value` is an object whose keys are all in `allowed`.
    /// `prefix` is the path of this object (`""` for the top level,
    /// `"budget"` for a nested one) and is used in error messages.
    pub(crate) fn new(
        prefix: &'a str,
        value: &'a Value,
        allowed: &[&str],
    ) -> Result<Self, ManualError> {
        let Some(map) = value.as_object() else {
            let what = if prefix.is_empty() {
                "arguments"
            } else {
                prefix
            };
            return Err(ManualError::invalid_parameter(
                if prefix.is_empty() {
                    "arguments"
                } else {
                    prefix
                },
                format!("{what} must be a JSON object, got {}", type_name(value)),
            ));
        };
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                let mut field = join(prefix, key);
                if let Some((cut, _)) = field.char_indices().nth(ECHO_CHARS) {
                    field.truncate(cut);
                    field.push('…');
                }
                return Err(ManualError::invalid_parameter(
                    &field,
                    format!(
                        "unknown field `{field}`; allowed fields: {}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(Args { prefix, map })
    }

    /// The full dotted name of a field of this object.
    pub(crate) fn field(&self, name: &str) -> String {
        join(self.prefix, name)
    }

    /// The value of a field, `None` when absent or `null`.
    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// An optional boolean (JSON booleans only).
    pub(crate) fn opt_bool(&self, name: &str) -> Result<Option<bool>, ManualError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => {
                let field = self.field(name);
                Err(ManualError::invalid_parameter(
                    &field,
                    format!(
                        "{field} must be a boolean (true or false), got {}",
                        type_name(other)
                    ),
                ))
            }
        }
    }

    /// An optional integer `>= min`.
    pub(crate) fn opt_int(&self, name: &str, min: i64) -> Result<Option<i64>, ManualError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => integer(&self.field(name), v, min).map(Some),
        }
    }

    /// A required, non-blank string of at most `max_bytes`; returned trimmed.
    pub(crate) fn req_str(&self, name: &str, max_bytes: usize) -> Result<&'a str, ManualError> {
        match self.opt_str(name, max_bytes)? {
            Some(s) => Ok(s),
            None => {
                let field = self.field(name);
                Err(ManualError::invalid_parameter(
                    &field,
                    format!("{field} is required (a non-empty string)"),
                ))
            }
        }
    }

    /// An optional string; blank counts as an error (not as absence).
    pub(crate) fn opt_str(
        &self,
        name: &str,
        max_bytes: usize,
    ) -> Result<Option<&'a str>, ManualError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => string(&self.field(name), v, max_bytes).map(Some),
        }
    }
}

/// A non-blank string of at most `max_bytes` bytes, trimmed.
pub(crate) fn string<'v>(
    field: &str,
    value: &'v Value,
    max_bytes: usize,
) -> Result<&'v str, ManualError> {
    let Value::String(s) = value else {
        return Err(ManualError::invalid_parameter(
            field,
            format!("{field} must be a string, got {}", type_name(value)),
        ));
    };
    if s.len() > max_bytes {
        return Err(ManualError::invalid_parameter(
            field,
            format!(
                "{field} is too long ({} bytes; at most {max_bytes})",
                s.len()
            ),
        ));
    }
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return Err(ManualError::invalid_parameter(
            field,
            format!("{field} must not be empty"),
        ));
    }
    if trimmed.contains('\0') {
        return Err(ManualError::invalid_parameter(
            field,
            format!("{field} must not contain NUL characters"),
        ));
    }
    Ok(trimmed)
}

/// Converts a JSON value to an integer `>= min` (see the module rules).
pub(crate) fn integer(field: &str, value: &Value, min: i64) -> Result<i64, ManualError> {
    let parsed = match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    let Some(n) = parsed else {
        return Err(ManualError::invalid_parameter(
            field,
            format!("{field} must be an integer, got {}", describe(value)),
        ));
    };
    if n < min {
        return Err(ManualError::invalid_parameter(
            field,
            format!("{field} must be >= {min}, got {n}"),
        ));
    }
    Ok(n)
}

/// The JSON type name of a value, for error messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The most characters of a caller's value a message repeats.
const ECHO_CHARS: usize = 60;

/// A caller's value as a message repeats it: quoted, and cut short past
/// [`ECHO_CHARS`] characters with how long it was (a 100 KB value never
/// comes back whole).
pub(crate) fn echo(value: &str) -> String {
    let count = value.chars().count();
    if count <= ECHO_CHARS {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(ECHO_CHARS).collect();
    format!("{head:?}… ({count} characters)")
}

fn describe(value: &Value) -> String {
    match value {
        Value::Number(n) => format!("{n}"),
        Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
        other => type_name(other).to_string(),
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_accepts_integral_forms_and_rejects_the_rest() {
        assert_eq!(integer("x", &json!(5), 1).ok(), Some(5));
        assert_eq!(integer("x", &json!(5.0), 1).ok(), Some(5));
        assert_eq!(integer("x", &json!(" 7 "), 1).ok(), Some(7));
        for bad in [
            json!(5.5),
            json!("abc"),
            json!(true),
            json!([1]),
            json!({}),
            json!("1.5"),
        ] {
            let err = integer("x", &bad, 1).err();
            assert_eq!(
                err.map(|e| e.code),
                Some(crate::wire::error::ManualErrorCode::InvalidParameter),
                "{bad}"
            );
        }
        assert!(integer("x", &json!(0), 1).is_err());
        assert_eq!(integer("x", &json!(0), 0).ok(), Some(0));
    }

    #[test]
    fn unknown_fields_are_rejected_with_the_field_name() {
        let v = json!({"a": 1, "zzz": 2});
        let err = Args::new("budget", &v, &["a"]).err().map(|e| e.message);
        assert!(err.is_some_and(|m| m.contains("budget.zzz")));
    }

    #[test]
    fn blank_and_oversized_strings_are_rejected() {
        assert!(string("q", &json!("   "), 10).is_err());
        assert!(string("q", &json!("x".repeat(11)), 10).is_err());
        assert_eq!(string("q", &json!(" ok "), 10).ok(), Some("ok"));
    }
}
