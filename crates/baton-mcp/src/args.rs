//! Argument parsing at the MCP boundary: strict types, named fields, limits.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;

/// Largest accepted `arguments` object, serialised.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;

/// Parses `arguments` into `T`, refusing unknown fields, wrong types and
/// oversized input with `invalid_parameter` naming the field.
pub fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, ToolError> {
    let arguments = match arguments {
        Value::Null => Value::Object(Default::default()),
        Value::Object(_) => arguments,
        other => {
            return Err(ToolError::invalid(
                "arguments",
                format!("arguments must be a JSON object, got {}", kind(&other)),
            ));
        }
    };
    let size = serde_json::to_vec(&arguments).map(|v| v.len()).unwrap_or(0);
    if size > MAX_ARGUMENTS_BYTES {
        return Err(ToolError::invalid(
            "arguments",
            format!("arguments are {size} bytes; the limit is {MAX_ARGUMENTS_BYTES}"),
        ));
    }
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let field = if path == "." {
            // Missing/unknown field errors carry the name in the message.
            extract_backticked(&inner).unwrap_or_else(|| "arguments".to_string())
        } else {
            path
        };
        ToolError::invalid(&field, format!("invalid argument {field}: {inner}"))
    })
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

fn extract_backticked(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(message[start..end].to_string())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct A {
        workspace: String,
        #[serde(default)]
        n: Option<u32>,
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
}
