//! Typed requests from and to JSON arguments.
//!
//! The tools take typed requests (`FindInput` …). An adapter holding raw
//! JSON arguments (the MCP layer, a CLI) turns them into one with
//! `XInput::from_json`, which applies seed 002's argument rules first
//! (`crate::wire::args`: unknown fields, JSON types, convertible integers,
//! sizes, ids and paths — each tool's own parser), so a bad argument gets
//! exactly the error it always got. The service checks every typed
//! request it is given by the same rules again ([`to_args`]), so a request
//! built in code cannot get around them either.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::wire::error::ManualError;

/// A typed request as JSON arguments (absent options omitted).
pub(crate) fn to_args<T: Serialize>(request: &T) -> Value {
    serde_json::to_value(request).unwrap_or(Value::Null)
}

/// Converts arguments the tool's parser accepted into the typed request:
/// integers given in a convertible form (`"5"`, `5.0`) at `integers`
/// (dotted paths) become JSON integers, the strings at `enums` are
/// trimmed; everything else is as given.
pub(crate) fn typed<T: DeserializeOwned>(
    args: &Value,
    integers: &[&str],
    enums: &[&str],
) -> Result<T, ManualError> {
    let mut value = args.clone();
    strip_nulls(&mut value);
    for path in integers {
        if let Some(v) = at(&mut value, path) {
            let n = match v {
                Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
                Value::String(s) => s.trim().parse::<u64>().ok(),
                _ => None,
            };
            if let Some(n) = n {
                *v = Value::from(n);
            }
        }
    }
    for path in enums {
        if let Some(Value::String(s)) = at(&mut value, path) {
            *s = s.trim().to_string();
        }
    }
    serde_json::from_value(value)
        .map_err(|e| ManualError::invalid_parameter("arguments", format!("invalid arguments: {e}")))
}

/// `null` means "not given" everywhere.
fn strip_nulls(value: &mut Value) {
    if let Value::Object(map) = value {
        map.retain(|_, v| !v.is_null());
        for v in map.values_mut() {
            strip_nulls(v);
        }
    }
}

fn at<'a>(value: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut v = value;
    for key in path.split('.') {
        v = v.as_object_mut()?.get_mut(key)?;
    }
    Some(v)
}
