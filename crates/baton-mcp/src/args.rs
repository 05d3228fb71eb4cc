//! Argument parsing at the MCP boundary: strict types, named fields, limits.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;

/// Largest accepted `arguments` object, serialised.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;

/// Parses `arguments` into `T`, refusing unknown fields, wrong types and
/// oversized input with `invalid_parameter` naming the field. The message
/// speaks JSON, never Rust: which field, which JSON type it must be, what
/// came instead (see [`describe_error`]).
pub fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, ToolError> {
    let arguments = match arguments {
        Value::Null => Value::Object(Default::default()),
        Value::Object(_) => arguments,
        other => {
            return Err(ToolError::invalid(
                "arguments",
                format!(
                    "the arguments must be a JSON object of named values, got {}",
                    describe_value(&other)
                ),
            ));
        }
    };
    let size = serde_json::to_vec(&arguments).map(|v| v.len()).unwrap_or(0);
    if size > MAX_ARGUMENTS_BYTES {
        return Err(ToolError::invalid(
            "arguments",
            format!(
                "the arguments are {size} bytes; the limit is {MAX_ARGUMENTS_BYTES}: send less text"
            ),
        ));
    }
    serde_path_to_error::deserialize(&arguments).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if let Some(allowed) = allowed_words::<T>(&path, &inner, &arguments) {
            let field = if path == "." || path.is_empty() {
                "arguments".to_string()
            } else {
                path.clone()
            };
            let got = value_at(&arguments, &path).map_or_else(String::new, describe_value);
            return ToolError::invalid(
                &field,
                format!("{field} must be one of {}; got {got}", allowed.join(", ")),
            );
        }
        let (field, message) = describe_error(&path, &inner, &arguments);
        ToolError::invalid(&field, message)
    })
}

/// The allowed values of a one-of-these-words field (an effort, a
/// severity) that got a value of the wrong JSON type. serde says only
/// "expected string or map" then; asked again with a word that is none of
/// them, it lists the words.
fn allowed_words<T: DeserializeOwned>(
    path: &str,
    inner: &str,
    arguments: &Value,
) -> Option<Vec<String>> {
    if !inner.ends_with("expected string or map") {
        return None;
    }
    let mut probe = arguments.clone();
    *value_at_mut(&mut probe, path)? = Value::String("\u{1}".into());
    let again = serde_path_to_error::deserialize::<_, T>(&probe).err()?;
    if again.path().to_string() != path {
        return None;
    }
    let inner = again.into_inner().to_string();
    let rest = inner.strip_prefix("unknown variant ")?;
    let allowed = all_backticked(rest.split_once(',').map_or("", |(_, tail)| tail));
    (!allowed.is_empty()).then_some(allowed)
}

/// [`value_at`], for writing.
fn value_at_mut<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    path_steps(path)?
        .into_iter()
        .try_fold(root, |node, step| match step {
            PathStep::Key(key) => node.get_mut(key),
            PathStep::Index(i) => node.get_mut(i),
        })
}

/// The field and a message for a person (or an agent) for serde's error
/// `inner` at `path` (`.` for the root) in `arguments`:
///
/// * `missing field `x`` → "x is missing: it is required";
/// * `unknown field `x`, expected one of …` → "x is not an argument here; …";
/// * `invalid type: …, expected struct Flags` → "flags must be a JSON
///   object, got a string (…)" — with a hint when the string holds JSON;
/// * `invalid value: integer `-1`, expected u64` → "… must be a whole
///   number ≥ 0, got -1";
/// * `unknown variant `X`, expected one of …` → "… must be one of …".
///
/// Anything else (a check written for people already) is kept as it is.
pub fn describe_error(path: &str, inner: &str, arguments: &Value) -> (String, String) {
    let at = |name: &str| {
        if path == "." || path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        }
    };
    if let Some(rest) = inner.strip_prefix("missing field ") {
        let field = at(&backticked(rest).unwrap_or_else(|| "arguments".into()));
        return (field.clone(), format!("{field} is missing: it is required"));
    }
    if let Some(rest) = inner.strip_prefix("unknown field ") {
        let name = backticked(rest).unwrap_or_else(|| "arguments".into());
        // The path already ends with the unknown field's name.
        let field = if path == "." || path.is_empty() {
            name
        } else {
            path.to_string()
        };
        let known = all_backticked(rest.split_once(',').map_or("", |(_, tail)| tail));
        let message = if known.is_empty() {
            format!("{field} is not an argument here: this takes no arguments")
        } else {
            format!(
                "{field} is not an argument here; the arguments are: {}",
                known.join(", ")
            )
        };
        return (field, message);
    }
    let field = if path == "." || path.is_empty() {
        "arguments".to_string()
    } else {
        path.to_string()
    };
    let got = value_at(arguments, path);
    if let Some(rest) = inner.strip_prefix("unknown variant ") {
        let value = backticked(rest).unwrap_or_default();
        let allowed = all_backticked(rest.split_once(',').map_or("", |(_, tail)| tail));
        return (
            field.clone(),
            format!(
                "{field} must be one of {}; got {value:?}",
                allowed.join(", ")
            ),
        );
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        let Some(rest) = inner.strip_prefix(prefix) else {
            continue;
        };
        let Some((unexpected, expected)) = rest.rsplit_once(", expected ") else {
            continue;
        };
        let wanted = json_type(expected);
        let came = match got {
            Some(v) => describe_value(v),
            None => unexpected.replace('`', ""),
        };
        let mut message = format!("{field} must be {wanted}, got {came}");
        if let Some(Value::String(text)) = got
            && matches!(
                serde_json::from_str::<Value>(text),
                Ok(Value::Object(_) | Value::Array(_))
            )
        {
            message.push_str(": send the JSON value itself, not a string that contains it");
        }
        return (field, message);
    }
    (field.clone(), format!("invalid argument {field}: {inner}"))
}

/// serde's "expected …" in JSON terms.
fn json_type(expected: &str) -> String {
    let e = expected.trim();
    let unsigned = ["u8", "u16", "u32", "u64", "u128", "usize"];
    let signed = ["i8", "i16", "i32", "i64", "i128", "isize"];
    if e.starts_with("struct ") || e == "a map" || e == "map" {
        "a JSON object".into()
    } else if e == "a sequence" || e.starts_with("a tuple") || e.starts_with("tuple") {
        "a JSON array".into()
    } else if e == "a string" || e == "a borrowed string" || e == "a string or path" {
        "a JSON string".into()
    } else if e == "a boolean" {
        "true or false".into()
    } else if e == "a character" {
        "a one-character string".into()
    } else if unsigned.contains(&e) {
        match e {
            "u8" => format!("a whole number from 0 to {}", u8::MAX),
            "u16" => format!("a whole number from 0 to {}", u16::MAX),
            "u32" => format!("a whole number from 0 to {}", u32::MAX),
            _ => "a whole number ≥ 0".into(),
        }
    } else if signed.contains(&e) {
        "a whole number".into()
    } else if e == "f32" || e == "f64" {
        "a number".into()
    } else if e == "unit" {
        "null".into()
    } else if e.starts_with("enum ") || e == "variant identifier" {
        "one of its allowed values (a string)".into()
    } else {
        e.to_string()
    }
}

/// A JSON value as a person reads it: its kind and a short preview.
pub fn describe_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let preview: String = s.chars().take(40).collect();
            let more = if s.chars().count() > 40 { "…" } else { "" };
            format!("a string ({preview:?}{more})")
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// The value at a serde_path_to_error path (`a.b[0].c`), if there is one.
fn value_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    path_steps(path)?
        .into_iter()
        .try_fold(root, |node, step| match step {
            PathStep::Key(key) => node.get(key),
            PathStep::Index(i) => node.get(i),
        })
}

/// One step of a serde_path_to_error path: an object key or an array index.
enum PathStep<'p> {
    /// `.key`
    Key(&'p str),
    /// `[i]`
    Index(usize),
}

/// The steps of a serde_path_to_error path (`a.b[0].c`; `.` or empty: the
/// root, no step); `None` when an index is not a number.
fn path_steps(path: &str) -> Option<Vec<PathStep<'_>>> {
    let mut steps = Vec::new();
    if path == "." || path.is_empty() {
        return Some(steps);
    }
    for part in path.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(PathStep::Key(key));
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            steps.push(PathStep::Index(index.trim_end_matches(']').parse().ok()?));
        }
    }
    Some(steps)
}

/// Checks an optional one-line value (a URL, an id, a branch name): at most
/// `max` bytes and no control characters (a newline would let it inject
/// lines into the files it is written to).
pub fn check_line(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    if value.len() > max {
        return Err(ToolError::invalid(
            field,
            format!("{field} is {} bytes; the limit is {max}", value.len()),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(ToolError::invalid(
            field,
            format!("{field} must be one line without control characters"),
        ));
    }
    Ok(())
}

/// Checks a string argument's length (in bytes) and that it is not blank.
pub fn check_text(field: &str, value: &str, max: usize) -> Result<(), ToolError> {
    if value.trim().is_empty() {
        return Err(ToolError::invalid(
            field,
            format!("{field} must not be empty"),
        ));
    }
    if value.len() > max {
        return Err(ToolError::invalid(
            field,
            format!("{field} is {} bytes; the limit is {max}", value.len()),
        ));
    }
    if value.contains('\0') {
        return Err(ToolError::invalid(
            field,
            format!("{field} contains a NUL byte"),
        ));
    }
    Ok(())
}

/// The first `backticked` word of `message`.
fn backticked(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(message[start..end].to_string())
}

/// Every `backticked` word of `message`, in order.
fn all_backticked(message: &str) -> Vec<String> {
    message
        .split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, w)| w.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_out_of_a_small_range_names_the_range() {
        assert_eq!(json_type("u32"), "a whole number from 0 to 4294967295");
        assert_eq!(json_type("u64"), "a whole number ≥ 0");
    }
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "test inputs: only how they parse matters")]
    struct A {
        workspace: String,
        #[serde(default)]
        n: Option<u32>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code, reason = "test inputs: only how they parse matters")]
    enum Size {
        S,
        M,
        L,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "test inputs: only how they parse matters")]
    struct WithEnum {
        effort: Option<Size>,
    }

    /// A word field given a number says which words it takes (it said
    /// "effort must be string or map", serde's words, not JSON's).
    #[test]
    fn a_word_field_of_the_wrong_type_lists_its_words() {
        let e = parse::<WithEnum>(json!({"effort": 12345})).unwrap_err();
        assert_eq!(e.details.unwrap()["field"], "effort");
        assert_eq!(
            e.message,
            "effort must be one of S, M, L; got the number 12345"
        );
        let e = parse::<WithEnum>(json!({"effort": ["S"]})).unwrap_err();
        assert_eq!(e.message, "effort must be one of S, M, L; got an array");
        let e = parse::<WithEnum>(json!({"effort": "XL"})).unwrap_err();
        assert_eq!(e.message, "effort must be one of S, M, L; got \"XL\"");
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<A>(json!({})).unwrap_err();
        assert_eq!(e.details.unwrap()["field"], "workspace");
        let e = parse::<A>(json!({"workspace": 5})).unwrap_err();
        assert_eq!(e.details.unwrap()["field"], "workspace");
        let e = parse::<A>(json!({"workspace": "w", "n": -1})).unwrap_err();
        assert_eq!(e.details.unwrap()["field"], "n");
        let e = parse::<A>(json!({"workspace": "w", "bogus": 1})).unwrap_err();
        assert_eq!(e.details.unwrap()["field"], "bogus");
        let e = parse::<A>(json!([1])).unwrap_err();
        assert_eq!(e.details.unwrap()["field"], "arguments");
        let e = parse::<A>(json!({"workspace": "x".repeat(70_000)})).unwrap_err();
        assert!(e.message.contains("limit"));
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "test inputs: only how they parse matters")]
    struct Flags {
        #[serde(default)]
        auto: bool,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "lowercase")]
    #[allow(dead_code, reason = "test inputs: only how they parse matters")]
    enum Effort {
        S,
        M,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "test inputs: only how they parse matters")]
    struct B {
        #[serde(default)]
        flags: Option<Flags>,
        #[serde(default)]
        tokens: Option<u64>,
        #[serde(default)]
        effort: Option<Effort>,
        #[serde(default)]
        files: Vec<String>,
    }

    /// Messages name the field and the JSON type, never a Rust type.
    #[test]
    fn messages_speak_json_not_rust() {
        let message = |args: Value| {
            let e = parse::<B>(args).unwrap_err();
            (
                e.details.unwrap()["field"].as_str().unwrap().to_string(),
                e.message,
            )
        };
        let (field, m) = message(json!({"flags": "{\"auto\":false}"}));
        assert_eq!(field, "flags");
        assert_eq!(
            m,
            "flags must be a JSON object, got a string (\"{\\\"auto\\\":false}\"): send the JSON value itself, not a string that contains it"
        );
        assert!(!m.contains("struct") && !m.contains("Flags"), "{m}");
        let (field, m) = message(json!({"tokens": -1}));
        assert_eq!(
            (field.as_str(), m.as_str()),
            (
                "tokens",
                "tokens must be a whole number ≥ 0, got the number -1"
            )
        );
        let (_, m) = message(json!({"tokens": "ten"}));
        assert_eq!(
            m,
            "tokens must be a whole number ≥ 0, got a string (\"ten\")"
        );
        let (field, m) = message(json!({"flags": {"auto": "yes"}}));
        assert_eq!(
            (field.as_str(), m.as_str()),
            (
                "flags.auto",
                "flags.auto must be true or false, got a string (\"yes\")"
            )
        );
        let (field, m) = message(json!({"flags": {"bogus": true}}));
        assert_eq!(
            (field.as_str(), m.as_str()),
            (
                "flags.bogus",
                "flags.bogus is not an argument here; the arguments are: auto"
            )
        );
        let (field, m) = message(json!({"effort": "x"}));
        assert_eq!(
            (field.as_str(), m.as_str()),
            ("effort", "effort must be one of s, m; got \"x\"")
        );
        let (field, m) = message(json!({"files": ["a", 2]}));
        assert_eq!(
            (field.as_str(), m.as_str()),
            (
                "files[1]",
                "files[1] must be a JSON string, got the number 2"
            )
        );
        let (_, m) = message(json!({"files": "a"}));
        assert_eq!(m, "files must be a JSON array, got a string (\"a\")");
        let (field, m) = message(json!({"nope": 1}));
        assert_eq!(field, "nope");
        assert_eq!(
            m,
            "nope is not an argument here; the arguments are: flags, tokens, effort, files"
        );
        let e = parse::<A>(json!({})).unwrap_err();
        assert_eq!(e.message, "workspace is missing: it is required");
        let e = parse::<A>(json!([1])).unwrap_err();
        assert_eq!(
            e.message,
            "the arguments must be a JSON object of named values, got an array"
        );
    }
}
