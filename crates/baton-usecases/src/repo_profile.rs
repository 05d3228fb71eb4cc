//! Detects the repository's own quality commands (lint, format, type check,
//! unit and end-to-end tests) from its files. Never hard-coded npm scripts:
//! Cargo, npm/pnpm/yarn (only scripts that exist), Go, Python and Make.

use std::path::Path;

use baton_engine::instruction::{DetectedCommand, RepoProfile};

fn cmd(name: &str, argv: &[&str], source: &str) -> DetectedCommand {
    DetectedCommand {
        name: name.to_string(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        source: source.to_string(),
    }
}

/// Detects the quality commands of the repository at `root`.
pub fn detect(root: &Path) -> RepoProfile {
    let mut commands = Vec::new();
    if root.join("Cargo.toml").is_file() {
        commands.push(cmd(
            "format",
            &["cargo", "fmt", "--all", "--", "--check"],
            "Cargo.toml",
        ));
        commands.push(cmd(
            "lint",
            &["cargo", "clippy", "--all-targets", "--", "-D", "warnings"],
            "Cargo.toml",
        ));
        commands.push(cmd(
            "test",
            &["cargo", "test", "--all-targets"],
            "Cargo.toml",
        ));
    }
    if let Ok(text) = std::fs::read_to_string(root.join("package.json"))
        && let Ok(pkg) = serde_json::from_str::<serde_json::Value>(&text)
    {
        let runner = if root.join("pnpm-lock.yaml").is_file() {
            "pnpm"
        } else if root.join("yarn.lock").is_file() {
            "yarn"
        } else {
            "npm"
        };
        let scripts = pkg.get("scripts").and_then(|s| s.as_object());
        for (name, candidates) in [
            ("lint", &["lint"][..]),
            ("typecheck", &["typecheck", "type-check", "tsc"][..]),
            ("test", &["test"][..]),
            ("e2e", &["test:e2e", "e2e"][..]),
        ] {
            if let Some(script) = candidates
                .iter()
                .find(|c| scripts.is_some_and(|s| s.contains_key(**c)))
            {
                let source = format!("package.json scripts.{script}");
                commands.push(cmd(name, &[runner, "run", script], &source));
            }
        }
    }
    if root.join("go.mod").is_file() {
        commands.push(cmd("lint", &["go", "vet", "./..."], "go.mod"));
        commands.push(cmd("test", &["go", "test", "./..."], "go.mod"));
    }
    if root.join("pyproject.toml").is_file() || root.join("setup.py").is_file() {
        let source = if root.join("pyproject.toml").is_file() {
            "pyproject.toml"
        } else {
            "setup.py"
        };
        let pyproject = std::fs::read_to_string(root.join("pyproject.toml")).unwrap_or_default();
        if pyproject.contains("[tool.ruff") {
            commands.push(cmd("lint", &["ruff", "check", "."], source));
        }
        if pyproject.contains("[tool.mypy") {
            commands.push(cmd("typecheck", &["mypy", "."], source));
        }
        commands.push(cmd("test", &["python", "-m", "pytest"], source));
    }
    if let Ok(text) = std::fs::read_to_string(root.join("Makefile")) {
        for target in ["lint", "check", "test", "e2e"] {
            let defined = text.lines().any(|l| {
                l.starts_with(&format!("{target}:")) || l.starts_with(&format!("{target} :"))
            });
            if defined && !commands.iter().any(|c| c.name == target) {
                commands.push(cmd(target, &["make", target], "Makefile"));
            }
        }
    }
    RepoProfile {
        quality_commands: commands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_npm_go_python_and_make_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(detect(root).quality_commands.is_empty());
        std::fs::write(root.join("Cargo.toml"), "[package]\n").unwrap();
        std::fs::write(
            root.join("package.json"),
            r#"{"scripts": {"lint": "eslint .", "test": "vitest", "test:e2e": "playwright test"}}"#,
        )
        .unwrap();
        std::fs::write(root.join("pnpm-lock.yaml"), "").unwrap();
        std::fs::write(root.join("go.mod"), "module x\n").unwrap();
        std::fs::write(root.join("pyproject.toml"), "[tool.ruff]\n").unwrap();
        std::fs::write(root.join("Makefile"), "e2e:\n\t./e2e.sh\n").unwrap();
        let argv: Vec<String> = detect(root)
            .quality_commands
            .iter()
            .map(|c| c.argv.join(" "))
            .collect();
        assert_eq!(
            argv,
            [
                "cargo fmt --all -- --check",
                "cargo clippy --all-targets -- -D warnings",
                "cargo test --all-targets",
                "pnpm run lint",
                "pnpm run test",
                "pnpm run test:e2e",
                "go vet ./...",
                "go test ./...",
                "ruff check .",
                "python -m pytest",
            ]
        );
    }

    #[test]
    fn make_targets_fill_in_what_nothing_else_provides() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Makefile"),
            "lint:\n\tx\ntest:\n\ty\nbuild:\n",
        )
        .unwrap();
        let names: Vec<String> = detect(dir.path())
            .quality_commands
            .iter()
            .map(|c| c.argv.join(" "))
            .collect();
        assert_eq!(names, ["make lint", "make test"]);
    }
}
