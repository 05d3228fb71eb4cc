//! The set of workflow definitions known to a process: built-ins embedded in
//! the binary, overridden or extended by project files.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::WorkflowDefinition;

/// Built-in definitions, embedded at compile time: (file name, YAML text).
const BUILTIN: &[(&str, &str)] = &[
    ("forge.yaml", include_str!("../workflows/forge.yaml")),
    ("issue.yaml", include_str!("../workflows/issue.yaml")),
];

/// The same definitions as compact JSON (build.rs reads the YAML into a
/// JSON value), in [`BUILTIN`]'s order: what the process parses, a small
/// fraction of the YAML parser's work. Equal definitions: a unit test.
const BUILTIN_JSON: &[&str] = &[
    include_str!(concat!(env!("OUT_DIR"), "/forge.json")),
    include_str!(concat!(env!("OUT_DIR"), "/issue.json")),
];

/// Where a definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Embedded in the binary.
    Builtin {
        /// The embedded file's name.
        file: String,
    },
    /// Loaded from a project file.
    File {
        /// Absolute path of the file.
        path: String,
    },
}

/// A definition that cannot be used, with the place it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct DefinitionError {
    /// File name or path.
    pub file: String,
    /// What is wrong (with line and column when the parser knows them).
    pub message: String,
}

/// Known workflow definitions by id.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    entries: BTreeMap<String, (Arc<WorkflowDefinition>, Source)>,
    /// The text each definition was parsed from (runs pin it).
    texts: BTreeMap<String, Arc<str>>,
}

impl Registry {
    /// The built-in definitions only.
    pub fn builtin() -> Registry {
        let mut registry = Registry::default();
        for ((file, text), json) in BUILTIN.iter().zip(BUILTIN_JSON) {
            // Built-ins are tested to parse; a failure here is a build defect.
            match crate::validate::parse_builtin_json(file, json) {
                Ok(def) => registry.insert_with_text(
                    def,
                    Source::Builtin {
                        file: (*file).to_string(),
                    },
                    text,
                ),
                Err(e) => panic!("built-in workflow {file} is invalid: {e}"),
            }
        }
        registry
    }

    /// The text of the built-in definition file `file` (`forge.yaml`), as
    /// embedded in this binary, without parsing anything.
    pub fn builtin_text(file: &str) -> Option<&'static str> {
        BUILTIN.iter().find(|(f, _)| *f == file).map(|(_, t)| *t)
    }

    /// The built-in definitions, parsed once per process.
    pub fn builtin_shared() -> &'static Registry {
        static BUILTINS: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
        BUILTINS.get_or_init(Registry::builtin)
    }

    /// Adds or replaces a definition.
    pub fn insert(&mut self, def: WorkflowDefinition, source: Source) {
        self.texts.remove(&def.id);
        self.entries.insert(def.id.clone(), (Arc::new(def), source));
    }

    /// Adds or replaces a definition parsed from `text` (kept: a run pins
    /// the definition it started with by its text).
    pub fn insert_with_text(&mut self, def: WorkflowDefinition, source: Source, text: &str) {
        self.texts.insert(def.id.clone(), Arc::from(text));
        self.entries.insert(def.id.clone(), (Arc::new(def), source));
    }

    /// The text the definition `id` was parsed from, when known.
    pub fn text(&self, id: &str) -> Option<Arc<str>> {
        self.texts.get(id).cloned()
    }

    /// Where the definition `id` came from.
    pub fn source(&self, id: &str) -> Option<&Source> {
        self.entries.get(id).map(|(_, s)| s)
    }

    /// The definition with `id`.
    pub fn get(&self, id: &str) -> Option<Arc<WorkflowDefinition>> {
        self.entries.get(id).map(|(d, _)| Arc::clone(d))
    }

    /// Every definition with its source, ordered by id.
    pub fn iter(&self) -> impl Iterator<Item = (&WorkflowDefinition, &Source)> {
        self.entries.values().map(|(d, s)| (d.as_ref(), s))
    }
}

/// Parses a YAML (or JSON, which is YAML) definition and checks it; the
/// first diagnostic becomes the error (see [`crate::validate`] for all of them).
pub fn parse(file: &str, text: &str) -> Result<WorkflowDefinition, DefinitionError> {
    crate::validate::parse_definition(file, text).map_err(|diagnostics| DefinitionError {
        file: file.to_string(),
        message: diagnostics
            .iter()
            .map(|d| format!("{}:{}: {}: {}", d.line, d.column, d.field, d.message))
            .collect::<Vec<_>>()
            .join("; "),
    })
}

/// `[a-z0-9][a-z0-9_-]*`, 1..=64 characters.
pub fn is_identifier(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'_')
}

/// A relative path made only of normal components (no `..`, no root).
pub fn is_relative_file(path: &str) -> bool {
    let p = std::path::Path::new(path);
    !path.is_empty()
        && !p.is_absolute()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The process parses the built-ins from the JSON the build made of
    /// them; a person reads (and a run pins) the YAML. Both must be the
    /// same definitions, field by field.
    #[test]
    fn the_built_ins_parsed_from_json_equal_their_yaml() {
        assert_eq!(BUILTIN.len(), BUILTIN_JSON.len());
        let registry = Registry::builtin();
        for ((file, yaml), json) in BUILTIN.iter().zip(BUILTIN_JSON) {
            let from_yaml = parse(file, yaml).expect("the YAML parses");
            let from_json =
                crate::validate::parse_builtin_json(file, json).expect("the JSON parses");
            assert_eq!(from_json, from_yaml, "{file}");
            let registered = registry.get(&from_yaml.id).expect("registered");
            assert_eq!(*registered, from_yaml, "{file}");
            assert_eq!(
                registry.text(&from_yaml.id).as_deref(),
                Some(*yaml),
                "{file}: runs pin the YAML"
            );
        }
    }

    #[test]
    fn the_forge_builtin_has_its_seventeen_phases_in_order() {
        let registry = Registry::builtin();
        let forge = registry.get("forge").unwrap();
        let ids: Vec<_> = forge.phases.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "phase-1",
                "phase-2",
                "phase-3",
                "phase-3b",
                "checkpoint-a",
                "phase-4",
                "phase-4b",
                "checkpoint-b",
                "phase-5",
                "phase-6",
                "phase-7",
                "final-verification",
                "pr-creation",
                "final-summary",
                "post-to-source",
                "final-commit",
                "final-push"
            ]
        );
        assert_eq!(
            forge.skipped_for("light"),
            ["phase-2", "phase-4", "phase-4b", "checkpoint-b", "phase-6"]
        );
        assert_eq!(forge.skipped_for("standard"), ["phase-4b", "checkpoint-b"]);
        assert!(forge.skipped_for("full").is_empty());
    }

    #[test]
    fn structural_errors_name_the_field() {
        let dup = "id: w\nlabel: W\nphases:\n  - {id: a, label: A, kind: agent}\n  - {id: a, label: B, kind: agent}\n";
        let e = parse("w.yaml", dup).unwrap_err();
        assert_eq!(
            e.to_string(),
            "w.yaml: 5:10: phases[1].id: duplicate phase id \"a\" (first defined as phases[0])"
        );

        let reserved = "id: w\nlabel: W\nphases:\n  - {id: completed, label: A, kind: agent}\n";
        assert!(
            parse("w.yaml", reserved)
                .unwrap_err()
                .message
                .contains("reserved")
        );

        let escape =
            "id: w\nlabel: W\nphases:\n  - {id: a, label: A, kind: agent, artifacts: [../x.md]}\n";
        assert!(
            parse("w.yaml", escape)
                .unwrap_err()
                .message
                .contains("artifacts[0]")
        );

        let unknown =
            "id: w\nlabel: W\nphases:\n  - {id: a, label: A, kind: agent, artefacts: [x.md]}\n";
        assert!(
            parse("w.yaml", unknown)
                .unwrap_err()
                .message
                .contains("artefacts")
        );
    }
}
