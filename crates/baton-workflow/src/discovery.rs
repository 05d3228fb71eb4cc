//! Discovery: built-in definitions, then project files in a folder
//! (`.baton/workflows/*.yaml|*.yml|*.json`), which add to or override them.

use std::path::Path;

use crate::{Diagnostic, Registry, Source, parse_definition};

/// What loading a folder produced.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Files that failed validation, with every diagnostic.
    pub errors: Vec<Diagnostic>,
}

/// The built-ins plus every valid definition in `dir` (missing folder: built-ins only).
/// Invalid files are reported and skipped; they never hide a valid workflow.
pub fn load_registry(dir: &Path) -> (Registry, LoadReport) {
    let mut registry = Registry::builtin();
    let mut report = LoadReport::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (registry, report);
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                )
        })
        .collect();
    files.sort();
    for path in files {
        let name = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => match parse_definition(&name, &text) {
                Ok(def) => registry.insert(def, Source::File { path: name }),
                Err(mut diagnostics) => report.errors.append(&mut diagnostics),
            },
            Err(e) => report.errors.push(Diagnostic {
                file: name,
                line: 0,
                column: 0,
                field: "(file)".into(),
                message: e.to_string(),
            }),
        }
    }
    (registry, report)
}
