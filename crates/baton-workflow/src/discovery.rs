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
    // The built-ins are parsed once per process; the registry shares them.
    let mut registry = Registry::builtin_shared().clone();
    let mut report = LoadReport::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (registry, report);
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            // A link is never followed (its target could be anything, and a
            // parse error would quote it); FIFOs and devices are skipped.
            std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
                && matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                )
        })
        .collect();
    files.sort();
    for path in files {
        let name = path.display().to_string();
        match read_plain(&path) {
            Ok(text) => match parse_definition(&name, &text) {
                Ok(def) => registry.insert_with_text(def, Source::File { path: name }, &text),
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

/// Reads a definition file without following a link or blocking on a FIFO
/// swapped in after the listing; at most 1 MiB.
fn read_plain(path: &Path) -> std::io::Result<String> {
    read_regular(path, libc::O_NOFOLLOW)
}

/// Reads a definition file a person names (`baton workflow validate FILE`):
/// a link is followed, but a FIFO, a device or a folder is refused at once
/// instead of blocking or reading without end; at most 1 MiB.
pub fn read_definition_file(path: &Path) -> std::io::Result<String> {
    read_regular(path, 0)
}

fn read_regular(path: &Path, extra_flags: libc::c_int) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    const MAX_BYTES: u64 = 1024 * 1024;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(extra_flags | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a folder, a FIFO or a device): name a definition file",
        ));
    }
    let mut text = String::new();
    file.take(MAX_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "larger than 1 MiB",
        ));
    }
    Ok(text)
}
