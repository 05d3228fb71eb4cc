//! Where the specs folder may be: inside the repository baton works on,
//! below its root, outside its `.git` folder. A run's files are committed
//! with the repository and the agent client's hooks guard them as the
//! repository's; a folder elsewhere (`/etc`, a home folder, another
//! repository) is one nobody would expect baton to write into. The rule is
//! the same for `--specs-dir`, `BATON_SPECS_DIR` and `baton.toml`'s
//! `specs_dir`, and it looks through symbolic links of the parts that exist.

use std::path::{Path, PathBuf};

use crate::ConfigError;

/// Refuses `specs_root` (absolute, dot segments removed) unless it lies
/// inside `repo_root`; `setting` names where it came from for the message.
pub(crate) fn check(repo_root: &Path, specs_root: &Path, setting: &str) -> Result<(), ConfigError> {
    let refuse = |why: String| ConfigError::InvalidValue {
        name: setting.to_string(),
        value: specs_root.display().to_string(),
        reason: format!(
            "{why}. baton keeps its runs inside the repository it works on, where they are committed with it; pass a folder inside {}, relative to it (`.specs`, the default, or e.g. `docs/specs`), or point --repo at the repository you meant",
            repo_root.display()
        ),
    };
    // The parts that exist, with their links followed, decide: a link
    // inside that leads out is refused, a path that reaches the repository
    // through a link to it is inside.
    let real = match (repo_root.canonicalize(), real_existing(specs_root)) {
        (Ok(real_repo), Some(real_specs)) => Some((real_repo, real_specs)),
        _ => None,
    };
    let inside = match &real {
        Some((real_repo, real_specs)) => relative_inside(real_repo, real_specs),
        None => relative_inside(repo_root, specs_root),
    };
    let Some(inside) = inside else {
        return Err(match real {
            Some((_, real_specs)) if relative_inside(repo_root, specs_root).is_some() => {
                refuse(format!(
                    "a symbolic link on its way leads to {}, outside the repository",
                    real_specs.display()
                ))
            }
            _ => refuse(format!(
                "it is outside the repository {}",
                repo_root.display()
            )),
        });
    };
    if inside.as_os_str().is_empty() {
        return Err(refuse(
            "it is the repository's root itself, where every folder would be taken for a run"
                .into(),
        ));
    }
    if inside.starts_with(".git") {
        return Err(refuse(
            "it is inside the repository's .git folder, which is git's own".into(),
        ));
    }
    Ok(())
}

/// `path` relative to `root` when it is `root` or below it.
fn relative_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    path.strip_prefix(root).ok().map(Path::to_path_buf)
}

/// `path` with its longest existing ancestor's links resolved and the
/// rest (not there yet) appended as given.
fn real_existing(path: &Path) -> Option<PathBuf> {
    let mut missing = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = at.canonicalize() {
            let mut out = real;
            out.extend(missing.iter().rev());
            return Some(out);
        }
        missing.push(at.file_name()?.to_os_string());
        at = at.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_inside_the_repository_is_allowed_and_others_are_refused() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        assert!(check(root, &root.join(".specs"), "--specs-dir").is_ok());
        assert!(check(root, &root.join("docs/specs"), "--specs-dir").is_ok());
        for (path, says) in [
            (PathBuf::from("/etc"), "outside the repository"),
            (root.parent().unwrap().join("x"), "outside the repository"),
            (root.to_path_buf(), "the repository's root itself"),
            (root.join(".git/specs"), ".git folder"),
        ] {
            let e = check(root, &path, "--specs-dir").unwrap_err().to_string();
            assert!(e.contains(says), "{}: {e}", path.display());
            assert!(e.contains("--specs-dir"), "{e}");
            assert!(e.contains("pass a folder inside"), "{e}");
        }
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        for path in [root.join("out"), root.join("out/specs")] {
            let e = check(root, &path, "--specs-dir").unwrap_err().to_string();
            assert!(
                e.contains("a symbolic link on its way leads to /etc"),
                "{e}"
            );
        }
        std::os::unix::fs::symlink(root.join(".git"), root.join("git-link")).unwrap();
        let e = check(root, &root.join("git-link/runs"), "--specs-dir")
            .unwrap_err()
            .to_string();
        assert!(e.contains(".git folder"), "{e}");
        // The repository reached through a link to it is the repository.
        let elsewhere = tempfile::tempdir().unwrap();
        let alias = elsewhere.path().join("alias");
        std::os::unix::fs::symlink(root, &alias).unwrap();
        assert!(check(root, &alias.join(".specs"), "--specs-dir").is_ok());
    }
}
