//! The person's own configuration for a test: a `config.toml` in a
//! temporary folder, named to a debug build of baton by
//! `BATON_PERSON_CONFIG` (release builds ignore the variable and read the
//! real `~/.config/baton/config.toml`, docs/configuration.md).

use std::path::PathBuf;

/// The variable a debug build reads the person's configuration path from.
pub const ENV: &str = "BATON_PERSON_CONFIG";

/// A person's configuration folder holding `config.toml`.
pub struct PersonConfig {
    /// The folder (removed when dropped).
    pub dir: tempfile::TempDir,
    /// The `config.toml` in it.
    pub path: PathBuf,
}

impl PersonConfig {
    /// A configuration with `text` (TOML; empty: nothing granted).
    pub fn with(text: &str) -> PersonConfig {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).expect("write config.toml");
        PersonConfig { dir, path }
    }

    /// The person trusts elicitation answers as theirs.
    pub fn trusting_elicitation() -> PersonConfig {
        PersonConfig::with("[answers]\ntrust = [\"elicitation\"]\n")
    }

    /// The person allows `--auto` asked for by a tool in `repo`.
    pub fn allowing_auto_in(repo: &std::path::Path) -> PersonConfig {
        PersonConfig::with(&format!(
            "[auto]\nrepositories = [{}]\n",
            serde_json::to_string(&repo.display().to_string()).expect("a path as a string")
        ))
    }

    /// `(ENV, path)` for a process's environment.
    pub fn env(&self) -> (&'static str, String) {
        (ENV, self.path.display().to_string())
    }
}
