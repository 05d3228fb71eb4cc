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

/// The built-in definitions as parsed and checked, precomputed: one line
/// per file of [`BUILTIN`], `file<TAB>definition JSON`. Reading JSON spares
/// every process (the server, each CLI command and hook) the YAML parse —
/// about 14 M instructions, most of the first call that needs a workflow.
/// A test checks that each line is exactly what [`parse`] makes of the YAML
/// (`BATON_BLESS=1 cargo test -p baton-workflow --lib builtin` rewrites
/// them); the YAML stays the source and the text runs pin.
const BUILTIN_PARSED: &str = include_str!("../workflows/builtin.parsed.tsv");

/// The precomputed definition of built-in `file`, when its line is there
/// and reads back.
fn builtin_parsed(file: &str) -> Option<WorkflowDefinition> {
    BUILTIN_PARSED.lines().find_map(|line| {
        let (name, json) = line.split_once('\t')?;
        (name == file).then(|| serde_json::from_str(json).ok())?
    })
}

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
        for (file, text) in BUILTIN {
            // Built-ins are tested to parse; a failure here is a build defect.
            // The precomputed form first (tested equal to the parse).
            let parsed = builtin_parsed(file).map_or_else(|| parse(file, text), Ok);
            match parsed {
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

    /// What [`BUILTIN_PARSED`] must hold: each built-in parsed from its YAML.
    fn builtin_parsed_text() -> String {
        BUILTIN
            .iter()
            .map(|(file, text)| {
                let json = parse(file, text)
                    .ok()
                    .and_then(|def| serde_json::to_string(&def).ok())
                    .unwrap_or_default();
                format!("{file}\t{json}\n")
            })
            .collect()
    }

    #[test]
    fn builtin_definitions_precomputed_are_what_their_yaml_parses_to() {
        let expected = builtin_parsed_text();
        if std::env::var_os("BATON_BLESS").is_some() {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("workflows/builtin.parsed.tsv");
            std::fs::write(path, &expected).unwrap();
            return;
        }
        assert_eq!(
            BUILTIN_PARSED, expected,
            "workflows/builtin.parsed.tsv is stale: run BATON_BLESS=1 cargo test -p baton-workflow --lib builtin"
        );
        // Read back, each is the very definition the YAML gives.
        for (file, text) in BUILTIN {
            assert_eq!(
                builtin_parsed(file),
                Some(parse(file, text).unwrap()),
                "{file}"
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
