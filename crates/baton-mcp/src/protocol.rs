//! JSON-RPC at the frame level: what baton answers when a message cannot be
//! handed to the MCP layer as it is (malformed JSON, an id already in use, a
//! `tools/call` whose `arguments` is not an object, an unknown method), for
//! the stdio transport ([`crate::stdio`]) and the HTTP guard ([`crate::http`]).

use rmcp::ErrorData as McpError;
use rmcp::model::ErrorCode;
use serde_json::{Value, json};

use crate::error::ToolError;

/// JSON-RPC: the message is not valid JSON.
pub const PARSE_ERROR: i32 = -32700;
/// JSON-RPC: the message is JSON but not a valid request.
pub const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC: the method does not exist.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// JSON-RPC: invalid method parameters.
pub const INVALID_PARAMS: i32 = -32602;

/// The methods baton answers, for the message of an unknown one.
pub const ANSWERED_METHODS: &str = "initialize, ping, tools/list and tools/call (prompts/list and resources/list answer empty lists)";

/// `-32601` for `method`, saying what baton answers.
pub fn method_not_found(method: &str) -> McpError {
    McpError::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!(
            "baton does not answer the method {method:?}: it is an MCP server with tools only. It answers {ANSWERED_METHODS}."
        ),
        Some(json!({ "method": method })),
    )
}

/// The methods of MCP's schema: a request for one of these that reaches the
/// handler as an unknown ("custom") request had params that did not parse.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "logging/setLevel",
    "completion/complete",
];

/// The error for a request rmcp could not match to a handler: invalid
/// params for a method MCP knows, else [`method_not_found`].
pub fn custom_request_error(method: &str, params: Option<&Value>) -> McpError {
    if !KNOWN_METHODS.contains(&method) {
        return method_not_found(method);
    }
    let hint = match method {
        "tools/call" => {
            " tools/call takes params {\"name\": \"TOOL\", \"arguments\": {…}} with the tool's name as a string"
        }
        _ => "",
    };
    McpError::new(
        ErrorCode::INVALID_PARAMS,
        format!(
            "Invalid params for {method}: they do not have the shape MCP defines (got {}).{hint}",
            params.map_or("none".to_string(), crate::args::describe_value)
        ),
        None,
    )
}

/// rmcp answers an unknown or unsupported method with the bare method name
/// as the message; replace that by [`method_not_found`]. Other errors pass.
pub fn explain_method_not_found(error: McpError, method: &str) -> McpError {
    if error.code == ErrorCode::METHOD_NOT_FOUND && error.message == method {
        method_not_found(method)
    } else {
        error
    }
}

/// A JSON-RPC error response: `{"jsonrpc":"2.0","id":…,"error":{…}}`. A
/// missing id is `null`, as JSON-RPC requires when it cannot be known.
pub fn error_response(id: Option<&Value>, code: i32, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": error,
    })
}

/// A `tools/call` result that is a tool error (`isError`, the error JSON as
/// its one text content), as a JSON-RPC response to `id`.
pub fn tool_error_response(id: &Value, error: &ToolError) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "content": [{ "type": "text", "text": error.to_json_text() }],
            "isError": true,
        },
    })
}

/// Whether a value is a valid JSON-RPC id (a string or a number).
pub fn is_valid_id(id: &Value) -> bool {
    id.is_string() || id.is_number()
}

/// The `id` of a message that could not be parsed, found by scanning the
/// top level of the object it starts, so a client waiting on that id gets
/// its answer. Scans at most `limit` bytes; nesting, strings and escapes
/// are skipped without recursion. `None` when no top-level `"id"` with a
/// string or number value comes before the scan stops.
pub fn sniff_id(bytes: &[u8], limit: usize) -> Option<Value> {
    let bytes = &bytes[..bytes.len().min(limit)];
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(bytes, i);
        match bytes.get(i)? {
            b'}' => return None,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(bytes, i)?;
        let key = &bytes[i + 1..key_end];
        i = skip_ws(bytes, key_end + 1);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(bytes, i + 1);
        let value_end = value_end(bytes, i)?;
        if key == b"id" {
            let value: Value = serde_json::from_slice(&bytes[i..value_end]).ok()?;
            return is_valid_id(&value).then_some(value);
        }
        i = value_end;
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The index of the closing quote of the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
}

/// The end (exclusive) of the JSON value starting at `start`, by counting
/// brackets outside strings.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => string_end(bytes, start).map(|e| e + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = start;
            while bytes
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

/// What was wrong with a frame serde_json could not parse, for a person.
pub fn describe_parse_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let reason = if text.contains("recursion limit exceeded") {
        "it nests arrays or objects deeper than 128 levels"
    } else if text.contains("surrogate") || text.contains("hex escape") {
        "it has a \\u escape that is not valid Unicode (half of a UTF-16 surrogate pair?)"
    } else if text.contains("invalid unicode code point") || text.contains("invalid utf-8") {
        "it is not valid UTF-8"
    } else if text.contains("trailing characters") {
        "it has more after the end of the JSON value"
    } else if text.contains("EOF while parsing") {
        "it ends before the JSON value is complete"
    } else {
        "it is not JSON"
    };
    format!("Parse error: {reason} ({text}). Send one JSON-RPC message: a JSON object.")
}

/// `arguments` of a `tools/call` that is neither an object nor absent/null:
/// the tool error (`invalid_parameter`) to answer with.
pub fn non_object_arguments(arguments: Option<&Value>) -> Option<ToolError> {
    let arguments = arguments?;
    if arguments.is_object() || arguments.is_null() {
        return None;
    }
    Some(ToolError::invalid(
        "arguments",
        format!(
            "the arguments must be a JSON object of named values, got {}",
            crate::args::describe_value(arguments)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_found_before_what_breaks_the_parse() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(sniff_id(deep.as_bytes(), 4096), Some(json!(7)));
        let surrogate = br#"{"jsonrpc":"2.0","id":"a-1","params":{"x":"\ud800"},"method":"ping"}"#;
        assert_eq!(sniff_id(surrogate, 4096), Some(json!("a-1")));
        let mut invalid_utf8 = br#"{"id":3,"method":"ping","params":{"x":""#.to_vec();
        invalid_utf8.extend_from_slice(&[0xff, 0xfe]);
        invalid_utf8.extend_from_slice(br#""}}"#);
        assert_eq!(sniff_id(&invalid_utf8, 4096), Some(json!(3)));
        // The id after something nested, strings with braces and escapes.
        let later = br#"{"params":{"a":"}\"{","b":[1,{"c":2}]},"id":12,"method":"x"}"#;
        assert_eq!(sniff_id(later, 4096), Some(json!(12)));
        // No id, a null id, not an object, or the id beyond the limit.
        assert_eq!(sniff_id(br#"{"method":"x"}"#, 4096), None);
        assert_eq!(sniff_id(br#"{"id":null}"#, 4096), None);
        assert_eq!(sniff_id(b"not json", 4096), None);
        assert_eq!(sniff_id(br#"{"params":"long","id":1}"#, 10), None);
    }

    #[test]
    fn unknown_methods_are_explained() {
        let e = explain_method_not_found(
            McpError::new(ErrorCode::METHOD_NOT_FOUND, "nope/method", None),
            "nope/method",
        );
        assert!(
            e.message
                .contains("does not answer the method \"nope/method\""),
            "{}",
            e.message
        );
        assert!(e.message.contains("tools/call"));
    }
}
