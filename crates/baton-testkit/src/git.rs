//! A real git repository in a temporary folder: `git init`, a test
//! identity, no signing, an initial commit, and the calls tests make on it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A throwaway git repository; removed when dropped.
pub struct GitRepo {
    dir: tempfile::TempDir,
}

impl GitRepo {
    /// A fresh repository on branch `main` with one commit (a README).
    pub fn new() -> GitRepo {
        let repo = GitRepo::empty();
        std::fs::write(repo.path().join("README.md"), "# test repository\n").expect("README");
        repo.git(&["add", "README.md"]);
        repo.git(&["commit", "-q", "-m", "initial commit"]);
        repo
    }

    /// A fresh repository on branch `main` with no commit yet.
    pub fn empty() -> GitRepo {
        let dir = tempfile::tempdir().expect("temporary folder");
        let repo = GitRepo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        for (key, value) in [
            ("user.name", "baton test"),
            ("user.email", "test@example.invalid"),
            ("commit.gpgsign", "false"),
        ] {
            repo.git(&["config", key, value]);
        }
        repo
    }

    /// The repository's folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `path` joined to the repository's folder.
    pub fn join(&self, relative: &str) -> PathBuf {
        self.path().join(relative)
    }

    /// Writes `text` to `relative` (creating folders).
    pub fn write(&self, relative: &str, text: &str) {
        let path = self.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("folders");
        }
        std::fs::write(path, text).expect("write");
    }

    /// Runs git with `args` in the repository; panics with git's output
    /// when it fails. Returns standard output, trimmed.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The commit `HEAD` names.
    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git status --porcelain`, one entry per line.
    pub fn status(&self) -> Vec<String> {
        self.git(&["status", "--porcelain", "--untracked-files=all"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Writes `text` to `relative`, adds that file alone and commits it
    /// with `message`. Returns the new commit.
    pub fn commit_file(&self, relative: &str, text: &str, message: &str) -> String {
        self.write(relative, text);
        self.git(&["add", relative]);
        self.git(&["commit", "-q", "-m", message]);
        self.head()
    }

    /// Adds everything and commits it with `message`.
    pub fn commit_all(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }
}

impl Default for GitRepo {
    fn default() -> GitRepo {
        GitRepo::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_repository_has_one_commit_and_a_clean_tree() {
        let repo = GitRepo::new();
        assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]), "1");
        assert!(repo.status().is_empty());
        repo.write("src/a.rs", "fn a() {}\n");
        assert_eq!(repo.status(), ["?? src/a.rs"]);
        let before = repo.head();
        assert_ne!(repo.commit_all("add a"), before);
        assert!(repo.status().is_empty());
    }
}
