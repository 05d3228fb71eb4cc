//! Where a path named in a tool call points: inside the repository or
//! outside it, with the links of the folders that exist resolved.

use std::path::{Path, PathBuf};

use baton_engine::scope::{self, Target};

/// Where a path the client names points, for the rules.
pub(super) fn target(repo_root: &Path, cwd: &Path, path: &str) -> Target {
    let absolute = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{path}", cwd.display())
    };
    let normal = scope::paths::normalise(&absolute).unwrap_or(absolute);
    // Resolve links of the folders that exist (a link inside the repository
    // must not lead a write elsewhere unseen).
    let resolved = resolve_existing_prefix(Path::new(&normal));
    let root = std::fs::canonicalize(repo_root).unwrap_or_else(|_| repo_root.to_path_buf());
    match resolved.strip_prefix(&root) {
        Ok(rel) => Target::Repo(rel.to_string_lossy().into_owned()),
        Err(_) => Target::Outside(resolved.to_string_lossy().into_owned()),
    }
}

/// `path` with the longest existing prefix canonicalised (links resolved).
pub(super) fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}
