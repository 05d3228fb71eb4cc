//! The published form of the tool schemas: one post-processing step over
//! what schemars derives, so every client can read them and the model pays
//! for as few bytes as possible.
//!
//! Input schemas ([`publish_input`]) — every input of every tool can be
//! entered from the MCP Inspector CLI and the TypeScript SDK:
//!
//! * local `$ref`s are inlined (no `$defs`): clients that convert typed
//!   command-line values look at a property's own `type`;
//! * an optional property is plain (`"type": "boolean"`, an inline object),
//!   not `["boolean", "null"]` or `anyOf [{$ref}, {type: null}]`: leaving it
//!   out means "not given", which is what `null` meant;
//! * no `format` outside JSON Schema's standard vocabulary (Ajv warns
//!   `unknown format "uint64" ignored` for each one): an integer format
//!   becomes its `minimum`/`maximum`;
//! * a `oneOf` of string constants becomes an `enum` (the constants'
//!   descriptions are kept in the property's description);
//! * no `$schema`, `title` or root description (the tool description says it),
//!   no `default` that says what leaving the argument out means anyway
//!   (`null`, `false`, `[]`);
//! * no description that only repeats the property's or the constant's name
//!   (`"tokens": "Tokens."`), and no `Extension: ` prefix (a note for the
//!   code's readers that the seed does not name the field);
//! * no `additionalProperties: false`: every byte is context, and the server
//!   refuses an unknown property anyway (`invalid_parameter` naming it).
//!
//! Output schemas ([`publish_output`]) are lean: the reply's top-level
//! fields with their types and enums; nested objects are typed `object`
//! only, and an array is typed `array` with its items' type only
//! (`"items": {"type": "object"}`: strict clients refuse an array without
//! `items`; the reply itself shows the items' fields, and the docs
//! describe them);
//! no descriptions and no validation-only keywords (`required`, bounds,
//! `format`).
//! Every schema stays valid for what baton returns — it only ever accepts
//! more.

use serde_json::{Map, Value, json};

/// Formats every JSON Schema validator knows (2020-12 format vocabulary).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// How deep `$ref`s are inlined before a recursive type is cut off.
const MAX_INLINE_DEPTH: usize = 16;

/// The published input schema for a derived one (see the module doc).
pub fn publish_input(schema: &Map<String, Value>) -> Map<String, Value> {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut root = schema.clone();
    for key in ["$schema", "$defs", "title", "description"] {
        root.remove(key);
    }
    match input_node(Value::Object(root), &defs, 0) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The published output schema for a derived one (see the module doc).
pub fn publish_output(schema: &Map<String, Value>) -> Map<String, Value> {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let root = resolve(schema.clone(), &defs, 0);
    let mut out = lean_node(root, &defs, 0);
    if !out.contains_key("type") && !has_union(&out) {
        out.insert("type".into(), json!("object"));
    }
    out
}

/// Replaces a `$ref` to `#/$defs/X` by X (the referring node's own keys win).
fn resolve(
    mut node: Map<String, Value>,
    defs: &Map<String, Value>,
    depth: usize,
) -> Map<String, Value> {
    let mut depth = depth;
    while let Some(Value::String(target)) = node.get("$ref").cloned() {
        node.remove("$ref");
        let name = target.rsplit('/').next().unwrap_or_default();
        match defs.get(name).and_then(Value::as_object) {
            Some(def) if depth < MAX_INLINE_DEPTH => {
                let mut merged = def.clone();
                for (k, v) in node {
                    merged.insert(k, v);
                }
                node = merged;
                depth += 1;
            }
            // Unknown or too deep (a recursive type): any object.
            _ => {
                node.insert("type".into(), json!("object"));
                break;
            }
        }
    }
    node.remove("$defs");
    node.remove("$schema");
    node
}

fn has_union(node: &Map<String, Value>) -> bool {
    node.contains_key("oneOf") || node.contains_key("anyOf")
}

/// `anyOf`/`oneOf` `[X, {"type": "null"}]` → X with the outer keys.
fn strip_null_alternative(mut node: Map<String, Value>) -> (Map<String, Value>, bool) {
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = node.get(key) else {
            continue;
        };
        let is_null = |v: &Value| {
            v.get("type") == Some(&json!("null")) && v.as_object().is_some_and(|o| o.len() == 1)
        };
        let others: Vec<&Value> = alternatives.iter().filter(|v| !is_null(v)).collect();
        if others.len() == 1 && others.len() < alternatives.len() {
            let Some(Value::Object(inner)) = others.first().map(|v| (*v).clone()) else {
                continue;
            };
            node.remove(key);
            let mut merged = inner;
            for (k, v) in node {
                merged.insert(k, v);
            }
            return (merged, true);
        }
    }
    (node, false)
}

/// `type: T` → `[T, "null"]` (a node without a single `type` is left alone).
fn allow_null(node: &mut Map<String, Value>) {
    match node.get("type").cloned() {
        Some(Value::String(t)) if t != "null" => {
            node.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(mut types)) if !types.iter().any(|t| t == "null") => {
            types.push(json!("null"));
            node.insert("type".into(), Value::Array(types));
        }
        _ => {}
    }
}

/// `type: [T, "null"]` → `T`; true when null was allowed.
fn strip_null_type(node: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(types)) = node.get("type") else {
        return false;
    };
    if !types.iter().any(|t| t == "null") {
        return false;
    }
    let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    let value = match rest.len() {
        0 => return false,
        1 => rest.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(rest),
    };
    node.insert("type".into(), value);
    true
}

/// A `oneOf`/`anyOf` whose alternatives are all string constants → `enum`.
/// Returns the constants' descriptions ("`a`: …") when there were any.
fn constants_to_enum(node: &mut Map<String, Value>) -> Option<String> {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(alternatives)) = node.get(key) else {
            continue;
        };
        let all_constants = !alternatives.is_empty()
            && alternatives.iter().all(|a| {
                a.as_object().is_some_and(|o| {
                    o.contains_key("const")
                        && o.keys()
                            .all(|k| matches!(k.as_str(), "const" | "type" | "description"))
                })
            });
        if !all_constants {
            continue;
        }
        let values: Vec<Value> = alternatives
            .iter()
            .filter_map(|a| a.get("const").cloned())
            .collect();
        let notes: Vec<String> = alternatives
            .iter()
            .filter_map(|a| {
                let d = a.get("description")?.as_str()?;
                let c = a.get("const")?;
                let c = c
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| c.to_string());
                (!only_names(d, &c)).then(|| format!("`{c}`: {}", d.trim_end_matches('.')))
            })
            .collect();
        let types: Vec<&Value> = alternatives.iter().filter_map(|a| a.get("type")).collect();
        let single_type =
            types.len() == alternatives.len() && types.windows(2).all(|w| w[0] == w[1]);
        let first_type = types.first().map(|t| (*t).clone());
        node.remove(key);
        node.insert("enum".into(), Value::Array(values));
        if single_type
            && let Some(t) = first_type
            && !node.contains_key("type")
        {
            node.insert("type".into(), t);
        }
        return (!notes.is_empty()).then(|| format!("{}.", notes.join("; ")));
    }
    None
}

/// Whether `description` says no more than `name` (`Tokens.` for
/// `tokens`, `Manual id.` for `manual_id`), ignoring case, `_` and the
/// final period.
fn only_names(description: &str, name: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let said = words(description);
    !said.is_empty() && said == words(name)
}

/// The bounds of an integer `format` (schemars: int8 … uint64, int, uint).
/// 64-bit bounds lie beyond what a JSON number carries exactly in most
/// clients (2^53), so those keep only the sign: `minimum: 0` when unsigned.
fn integer_bounds(format: &str) -> Option<(Option<Value>, Option<Value>)> {
    let both = |min: Value, max: Value| (Some(min), Some(max));
    Some(match format {
        "int8" => both(json!(i8::MIN), json!(i8::MAX)),
        "int16" => both(json!(i16::MIN), json!(i16::MAX)),
        "int32" => both(json!(i32::MIN), json!(i32::MAX)),
        "int64" | "int" => (None, None),
        "uint8" => both(json!(0), json!(u8::MAX)),
        "uint16" => both(json!(0), json!(u16::MAX)),
        "uint32" => both(json!(0), json!(u32::MAX)),
        "uint64" | "uint" => (Some(json!(0)), None),
        _ => return None,
    })
}

/// Drops a non-standard `format`; for integers its bounds take its place
/// (an existing, tighter bound is kept).
fn replace_format(node: &mut Map<String, Value>, add_bounds: bool) {
    let Some(Value::String(format)) = node.get("format").cloned() else {
        return;
    };
    if STANDARD_FORMATS.contains(&format.as_str()) {
        return;
    }
    node.remove("format");
    if !add_bounds {
        return;
    }
    let Some((min, max)) = integer_bounds(&format) else {
        return;
    };
    let number = |key: &str| node.get(key).and_then(Value::as_f64);
    if let Some(min) = min
        && number("minimum").is_none_or(|existing| min.as_f64().is_some_and(|m| existing < m))
    {
        node.insert("minimum".into(), min);
    }
    let number = |key: &str| node.get(key).and_then(Value::as_f64);
    if let Some(max) = max
        && number("maximum").is_none_or(|existing| max.as_f64().is_some_and(|m| existing > m))
    {
        node.insert("maximum".into(), max);
    }
}

/// A union of alternatives of different types (an object or its shorthand
/// as a number or string) → its first alternative, the canonical form: one
/// plain type a client can enter. The shorthands are still accepted.
fn canonical_alternative(
    node: Map<String, Value>,
    defs: &Map<String, Value>,
) -> Map<String, Value> {
    let mut node = node;
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = node.get(key) else {
            continue;
        };
        let alternatives: Vec<Value> = alternatives
            .iter()
            .map(|a| match a {
                Value::Object(map) => Value::Object(resolve(map.clone(), defs, 0)),
                other => other.clone(),
            })
            .collect();
        let types: Vec<&str> = alternatives
            .iter()
            .filter(|a| a.get("const").is_none())
            .filter_map(|a| a.get("type").and_then(Value::as_str))
            .collect();
        let distinct = types.len() == alternatives.len()
            && types.len() > 1
            && types
                .iter()
                .enumerate()
                .all(|(i, t)| !types[..i].contains(t));
        if !distinct {
            continue;
        }
        let Some(Value::Object(first)) = alternatives.first().cloned() else {
            continue;
        };
        node.remove(key);
        let mut merged = first;
        for (k, v) in node {
            merged.insert(k, v);
        }
        return merged;
    }
    node
}

fn input_node(node: Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let Value::Object(node) = node else {
        return node;
    };
    let node = resolve(node, defs, depth);
    let (node, nullable) = strip_null_alternative(node);
    let node = canonical_alternative(resolve(node, defs, depth), defs);
    let mut node = resolve(node, defs, depth);
    // `anyOf [X, null]` → X that also allows null (dropped again below for
    // the optional top-level arguments).
    if nullable {
        allow_null(&mut node);
    }
    node.remove("title");
    // A default that says what leaving the argument out means anyway.
    if matches!(node.get("default"), Some(Value::Null | Value::Bool(false)))
        || node.get("default") == Some(&json!([]))
    {
        node.remove("default");
    }
    if let Some(Value::String(d)) = node.get_mut("description")
        && let Some(rest) = d.strip_prefix("Extension: ")
    {
        let mut chars = rest.chars();
        *d = chars
            .next()
            .map(|first| first.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
    }
    replace_format(&mut node, true);
    if let Some(notes) = constants_to_enum(&mut node) {
        let description = match node.get("description").and_then(Value::as_str) {
            Some(d) => format!("{d} {notes}"),
            None => notes,
        };
        node.insert("description".into(), Value::String(description));
    }
    let required: Vec<String> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = node.remove("properties") {
        let mut out = Map::new();
        for (name, schema) in properties {
            let mut schema = input_node(schema, defs, depth + 1);
            if let Value::Object(map) = &mut schema
                && map
                    .get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| only_names(d, &name))
            {
                map.remove("description");
            }
            // An optional argument: leaving it out is how a client says
            // "none", so its type is plain (clients that convert typed
            // command-line values read `type` as one word). Nested fields
            // keep `null`: a reply echoed back as an argument may carry it.
            if depth == 0
                && !required.contains(&name)
                && let Value::Object(map) = &mut schema
            {
                strip_null_type(map);
            }
            out.insert(name, schema);
        }
        node.insert("properties".into(), Value::Object(out));
    }
    for key in ["items", "additionalProperties"] {
        match node.remove(key) {
            Some(child @ Value::Object(_)) => {
                node.insert(key.into(), input_node(child, defs, depth + 1));
            }
            Some(other) => {
                node.insert(key.into(), other);
            }
            None => {}
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(alternatives)) = node.remove(key) {
            let alternatives = alternatives
                .into_iter()
                .map(|a| input_node(a, defs, depth + 1))
                .collect();
            node.insert(key.into(), Value::Array(alternatives));
        }
    }
    if node.get("additionalProperties") == Some(&Value::Bool(false)) {
        node.remove("additionalProperties");
    }
    Value::Object(node)
}

/// A tagged union of objects (every alternative has the same property with
/// a `const`) → one object: the union of the properties, the tag as an
/// enum. Accepts every alternative.
fn merge_tagged_union(node: &mut Map<String, Value>, defs: &Map<String, Value>) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(alternatives)) = node.get(key) else {
            continue;
        };
        let objects: Vec<Map<String, Value>> = alternatives
            .iter()
            .filter_map(|a| a.as_object().cloned().map(|o| resolve(o, defs, 0)))
            .filter(|o| o.get("properties").is_some_and(Value::is_object))
            .collect();
        if objects.len() != alternatives.len() || objects.is_empty() {
            continue;
        }
        let props = |o: &Map<String, Value>| {
            o.get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let first = props(&objects[0]);
        let Some(tag) = first
            .keys()
            .find(|k| {
                objects
                    .iter()
                    .all(|o| props(o).get(*k).is_some_and(|p| p.get("const").is_some()))
            })
            .cloned()
        else {
            continue;
        };
        let mut properties = Map::new();
        let mut tags = Vec::new();
        for o in &objects {
            for (name, schema) in props(o) {
                if name == tag {
                    if let Some(c) = schema.get("const") {
                        tags.push(c.clone());
                    }
                } else {
                    properties.entry(name).or_insert(schema);
                }
            }
        }
        let tag_schema = if tags.iter().all(Value::is_string) {
            json!({"type": "string", "enum": tags})
        } else {
            json!({ "enum": tags })
        };
        properties.insert(tag.clone(), tag_schema);
        node.remove(key);
        node.insert("type".into(), json!("object"));
        node.insert("properties".into(), Value::Object(properties));
        return;
    }
}

fn lean_node(
    node: Map<String, Value>,
    defs: &Map<String, Value>,
    depth: usize,
) -> Map<String, Value> {
    let mut node = resolve(node, defs, 0);
    // Prose and validation-only keywords: the reply itself shows the rest.
    for key in [
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "required",
        "minimum",
        "maximum",
        "format",
    ] {
        node.remove(key);
    }
    constants_to_enum(&mut node);
    merge_tagged_union(&mut node, defs);
    let (node, nullable) = strip_null_alternative(node);
    let mut node = resolve(node, defs, 0);
    for key in [
        "title",
        "description",
        "default",
        "required",
        "minimum",
        "maximum",
        "format",
    ] {
        node.remove(key);
    }
    constants_to_enum(&mut node);
    if nullable && let Some(Value::String(t)) = node.get("type").cloned() {
        node.insert("type".into(), json!([t, "null"]));
    }
    if node.get("additionalProperties") == Some(&Value::Bool(true)) {
        node.remove("additionalProperties");
    }
    let is_object = match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    };
    if depth > 0 && (is_object || has_union(&node)) {
        // Nested structure: its type only (nullability kept).
        return match node.get("type") {
            Some(t) if is_object || !has_union(&node) => {
                let mut out = Map::new();
                out.insert("type".into(), t.clone());
                out
            }
            _ => Map::new(),
        };
    }
    if let Some(Value::Object(properties)) = node.remove("properties") {
        let properties = properties
            .into_iter()
            .map(|(name, schema)| {
                let schema = match schema {
                    Value::Object(map) => Value::Object(lean_node(map, defs, depth + 1)),
                    other => other,
                };
                (name, schema)
            })
            .collect();
        node.insert("properties".into(), Value::Object(properties));
    }
    // An array says what its items are, by type only (strict clients refuse
    // an array schema without `items`; docs/performance.md, tools/list).
    if let Some(items) = node.remove("items") {
        node.insert("items".into(), item_type(items, defs, depth));
    }
    if let Some(Value::Object(values)) = node.remove("additionalProperties") {
        node.insert(
            "additionalProperties".into(),
            Value::Object(lean_node(values, defs, depth + 1)),
        );
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(alternatives)) = node.remove(key) {
            let alternatives = alternatives
                .into_iter()
                .map(|a| match a {
                    Value::Object(map) => Value::Object(lean_node(map, defs, depth)),
                    other => other,
                })
                .collect();
            node.insert(key.into(), Value::Array(alternatives));
        }
    }
    node
}

/// An array's `items` as published: the type of its items and nothing
/// else (`{"type": "object"}`, `{"type": "string"}`); `{}` (anything) for
/// items of several types.
fn item_type(items: Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let Value::Object(items) = items else {
        return json!({});
    };
    let lean = lean_node(items, defs, depth + 1);
    let mut out = Map::new();
    if let Some(t) = lean.get("type") {
        out.insert("type".into(), t.clone());
    } else if let Some(Value::Array(alternatives)) = lean.get("oneOf").or(lean.get("anyOf")) {
        // A union of one type (a tagged union of objects): that type.
        let types: Vec<&Value> = alternatives.iter().filter_map(|a| a.get("type")).collect();
        if let Some(first) = types.first()
            && types.len() == alternatives.len()
            && types.iter().all(|t| t == first)
        {
            out.insert("type".into(), (*first).clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn input_refs_are_inlined_and_optionals_are_plain() {
        let derived = obj(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "description": "Arguments of x.",
            "type": "object",
            "additionalProperties": false,
            "$defs": {"Flags": {"type": "object", "properties": {"auto": {"type": "boolean", "default": false}, "branch": {"type": ["string", "null"], "default": null}}}},
            "properties": {
                "workspace": {"type": "string"},
                "flags": {"anyOf": [{"$ref": "#/$defs/Flags"}, {"type": "null"}], "default": null, "description": "The flags."},
                "done": {"type": ["boolean", "null"], "default": null},
                "must": {"type": ["string", "null"]},
                "count": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
                "level": {"type": "integer", "format": "uint8", "minimum": 1},
                "when": {"type": "string", "format": "date-time"},
                "cursor": {"anyOf": [
                    {"type": "object", "properties": {"line": {"type": "integer"}}},
                    {"type": "integer"},
                    {"type": "string"}
                ], "description": "Where to go on."},
                "status": {"oneOf": [
                    {"const": "completed", "type": "string", "description": "Done."},
                    {"const": "failed", "type": "string", "description": "Not done."}
                ], "description": "The outcome."}
            },
            "required": ["workspace", "must"]
        }));
        let published = Value::Object(publish_input(&derived));
        assert_eq!(
            published,
            json!({
                "type": "object",
                "properties": {
                    "workspace": {"type": "string"},
                    "flags": {"type": "object", "description": "The flags.", "properties": {"auto": {"type": "boolean"}, "branch": {"type": ["string", "null"]}}},
                    "done": {"type": "boolean"},
                    "must": {"type": ["string", "null"]},
                    "count": {"type": "integer", "minimum": 0},
                    "level": {"type": "integer", "minimum": 1, "maximum": 255},
                    "when": {"type": "string", "format": "date-time"},
                    "cursor": {"type": "object", "description": "Where to go on.", "properties": {"line": {"type": "integer"}}},
                    "status": {"type": "string", "enum": ["completed", "failed"], "description": "The outcome. `completed`: Done; `failed`: Not done."}
                },
                "required": ["workspace", "must"]
            })
        );
    }

    #[test]
    fn inputs_say_nothing_twice() {
        let derived = obj(json!({
            "type": "object",
            "properties": {
                "tokens": {"type": "integer", "description": "Tokens."},
                "manual_id": {"type": "string", "description": "Manual id."},
                "cost_usd": {"type": "number", "description": "USD."},
                "files": {"type": "array", "items": {"type": "string"}, "default": []},
                "force": {"type": "boolean", "default": false, "description": "Must be true."},
                "cache": {"type": "boolean", "default": true},
                "action_id": {"type": "string", "description": "Extension: the action's id."},
                "kind": {"oneOf": [
                    {"const": "claims", "type": "string", "description": "Claims."},
                    {"const": "gaps", "type": "string", "description": "Unsupported claims."}
                ], "description": "Which rows."}
            }
        }));
        assert_eq!(
            Value::Object(publish_input(&derived)),
            json!({
                "type": "object",
                "properties": {
                    "tokens": {"type": "integer"},
                    "manual_id": {"type": "string"},
                    "cost_usd": {"type": "number", "description": "USD."},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "force": {"type": "boolean", "description": "Must be true."},
                    "cache": {"type": "boolean", "default": true},
                    "action_id": {"type": "string", "description": "The action's id."},
                    "kind": {"type": "string", "enum": ["claims", "gaps"], "description": "Which rows. `gaps`: Unsupported claims."}
                }
            })
        );
    }

    #[test]
    fn recursive_refs_stop() {
        let derived = obj(json!({
            "type": "object",
            "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
            "properties": {"root": {"$ref": "#/$defs/Node"}}
        }));
        let text = Value::Object(publish_input(&derived)).to_string();
        assert!(!text.contains("$ref"), "{text}");
    }

    #[test]
    fn outputs_keep_the_top_level_and_type_nested_objects() {
        let derived = obj(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Reply",
            "type": "object",
            "$defs": {
                "Transition": {"oneOf": [
                    {"type": "object", "properties": {"transition": {"const": "started", "type": "string"}, "phase": {"type": "string"}}, "required": ["transition", "phase"]},
                    {"type": "object", "properties": {"transition": {"const": "done", "type": "string"}, "last": {"type": "string"}}, "required": ["transition", "last"]}
                ]},
                "Stats": {"type": "object", "description": "Stats.", "properties": {"n": {"type": "integer", "format": "uint32"}}}
            },
            "properties": {
                "workspace": {"type": "string", "description": "The workspace."},
                "transitions": {"type": "array", "items": {"$ref": "#/$defs/Transition"}},
                "stats": {"$ref": "#/$defs/Stats"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Stats"}, {"type": "null"}]},
                "kind": {"oneOf": [{"const": "a", "type": "string"}, {"const": "b", "type": "string"}]},
                "count": {"type": "integer", "format": "uint64", "minimum": 0},
                "names": {"type": "array", "items": {"type": "string"}},
                "created": {"type": "string", "format": "date-time"}
            },
            "required": ["workspace", "transitions", "stats"]
        }));
        assert_eq!(
            Value::Object(publish_output(&derived)),
            json!({
                "type": "object",
                "properties": {
                    "workspace": {"type": "string"},
                    "transitions": {"type": "array", "items": {"type": "object"}},
                    "stats": {"type": "object"},
                    "maybe": {"type": ["object", "null"]},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                    "count": {"type": "integer"},
                    "names": {"type": "array", "items": {"type": "string"}},
                    "created": {"type": "string"}
                }
            })
        );
    }

    #[test]
    fn a_tagged_union_at_the_root_becomes_one_object() {
        let derived = obj(json!({
            "oneOf": [
                {"type": "object", "properties": {"type": {"const": "a"}, "x": {"type": "string"}}, "required": ["type", "x"]},
                {"type": "object", "properties": {"type": {"const": "b"}, "y": {"type": "integer"}}, "required": ["type"]}
            ]
        }));
        assert_eq!(
            Value::Object(publish_output(&derived)),
            json!({
                "type": "object",
                "properties": {"type": {"type": "string", "enum": ["a", "b"]}, "x": {"type": "string"}, "y": {"type": "integer"}}
            })
        );
    }
}
