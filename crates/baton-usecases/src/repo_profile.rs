//! Detects the repository's own quality commands (lint, format, type check,
//! unit and end-to-end tests) from its files. Never hard-coded npm scripts:
//! Cargo, npm/pnpm/yarn (only scripts that exist), Go, Python and Make.
//!
//! [`ProfileCache`] keeps the last detection for the life of the process
//! and detects again whenever what it read may have changed: a file among
//! those [`detect`] looks at created, removed, renamed or edited (see
//! [`ProfileCache::get`]), so a changed `package.json` or `Makefile` is seen
//! on the next call.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

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

/// Every file [`detect`] looks at, in the repository root.
const LOOKED_AT: [&str; 8] = [
    "Cargo.toml",
    "package.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "go.mod",
    "pyproject.toml",
    "setup.py",
    "Makefile",
];

/// A time stamp is trusted only when it is at least this much older than
/// the moment it was taken: file times come from a coarse clock (one tick,
/// 1–10 ms), so an edit in the same tick as the one before could leave
/// them unchanged; one made later than this after the look cannot.
const SETTLED: Duration = Duration::from_millis(100);

/// What the last detection read, so a later call can tell whether the
/// repository's profile may have changed without reading it again.
#[derive(Debug, Default)]
pub struct ProfileCache {
    last: Mutex<Option<(Stamp, RepoProfile)>>,
}

/// The metadata of the root folder and of each of [`LOOKED_AT`] that
/// existed (as a folder entry, a dangling link included) when it was read.
/// The folder's times change whenever an entry is created, removed or
/// renamed in it; a present file's (followed through a link) whenever it
/// is written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    folder: Meta,
    present: Vec<(&'static str, Option<Meta>)>,
}

/// Enough of a file's metadata to notice it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    len: u64,
    modified: Option<SystemTime>,
    /// Status change time and inode (Unix): an edit, a chmod, a replacement.
    changed: (i64, i64, u64),
}

impl Meta {
    fn of(meta: &std::fs::Metadata) -> Meta {
        #[cfg(unix)]
        let changed = {
            use std::os::unix::fs::MetadataExt;
            (meta.ctime(), meta.ctime_nsec(), meta.ino())
        };
        #[cfg(not(unix))]
        let changed = (0, 0, 0);
        Meta {
            len: meta.len(),
            modified: meta.modified().ok(),
            changed,
        }
    }

    /// Whether this stamp was old enough, at `looked`, to be trusted.
    fn settled_before(&self, looked: SystemTime) -> bool {
        let Some(limit) = looked.checked_sub(SETTLED) else {
            return false;
        };
        let changed = u64::try_from(self.changed.0).ok().map(|secs| {
            SystemTime::UNIX_EPOCH + Duration::new(secs, u32::try_from(self.changed.1).unwrap_or(0))
        });
        self.modified.is_some_and(|m| m < limit) && changed.is_some_and(|c| c < limit)
    }
}

impl Stamp {
    /// The root folder's and each present file's metadata, now.
    fn take(root: &Path) -> Option<Stamp> {
        let folder = Meta::of(&std::fs::metadata(root).ok()?);
        let present = LOOKED_AT
            .iter()
            .filter(|name| std::fs::symlink_metadata(root.join(name)).is_ok())
            .map(|name| (*name, look(&root.join(name))))
            .collect();
        Some(Stamp { folder, present })
    }

    /// Whether nothing [`detect`] reads changed since this stamp: the
    /// folder looked at, then only the files that were present.
    fn still_holds(&self, root: &Path) -> bool {
        std::fs::metadata(root).is_ok_and(|m| Meta::of(&m) == self.folder)
            && self
                .present
                .iter()
                .all(|(name, meta)| look(&root.join(name)) == *meta)
    }

    fn settled_before(&self, looked: SystemTime) -> bool {
        self.folder.settled_before(looked)
            && self
                .present
                .iter()
                .all(|(_, m)| m.is_none_or(|m| m.settled_before(looked)))
    }
}

/// The metadata of the file at `path`, through links (as [`detect`] reads
/// it).
fn look(path: &Path) -> Option<Meta> {
    std::fs::metadata(path).ok().map(|m| Meta::of(&m))
}

impl ProfileCache {
    /// The quality commands of the repository at `root`: the last
    /// detection while nothing it read has changed (one look at the root
    /// folder and one at each file that was there), else [`detect`] again.
    /// A detection is kept only when the times it was checked by had
    /// settled ([`SETTLED`]); otherwise the next call detects again.
    pub fn get(&self, root: &Path) -> RepoProfile {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((stamp, profile)) = last.as_ref()
            && stamp.still_holds(root)
        {
            return profile.clone();
        }
        let looked = SystemTime::now();
        let stamp = Stamp::take(root);
        let profile = detect(root);
        *last = stamp
            .filter(|s| s.settled_before(looked))
            .map(|s| (s, profile.clone()));
        profile
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

    fn commands(profile: &RepoProfile) -> Vec<String> {
        profile
            .quality_commands
            .iter()
            .map(|c| c.argv.join(" "))
            .collect()
    }

    /// Waits until what was just written is older than [`SETTLED`].
    fn settle() {
        std::thread::sleep(SETTLED + Duration::from_millis(50));
    }

    #[test]
    fn a_kept_profile_sees_every_change_of_what_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("package.json"), r#"{"scripts": {"lint": "x"}}"#).unwrap();
        settle();
        let cache = ProfileCache::default();
        assert_eq!(commands(&cache.get(root)), ["npm run lint"]);
        assert!(
            cache.last.lock().unwrap().is_some(),
            "a settled detection is kept"
        );
        assert_eq!(commands(&cache.get(root)), ["npm run lint"]);
        // Edited in place, same length, at once: seen.
        std::fs::write(root.join("package.json"), r#"{"scripts": {"test": "x"}}"#).unwrap();
        assert_eq!(commands(&cache.get(root)), ["npm run test"]);
        settle();
        assert_eq!(commands(&cache.get(root)), ["npm run test"]);
        // A new file among those read, and a lock file choosing the runner.
        std::fs::write(root.join("Makefile"), "e2e:\n\t./e2e.sh\n").unwrap();
        std::fs::write(root.join("pnpm-lock.yaml"), "").unwrap();
        assert_eq!(commands(&cache.get(root)), ["pnpm run test", "make e2e"]);
        settle();
        assert_eq!(commands(&cache.get(root)), ["pnpm run test", "make e2e"]);
        // Removed: gone.
        std::fs::remove_file(root.join("package.json")).unwrap();
        assert_eq!(commands(&cache.get(root)), ["make e2e"]);
        // Appended to: seen.
        settle();
        assert_eq!(commands(&cache.get(root)), ["make e2e"]);
        let mut makefile = std::fs::OpenOptions::new()
            .append(true)
            .open(root.join("Makefile"))
            .unwrap();
        std::io::Write::write_all(&mut makefile, b"lint:\n\ttrue\n").unwrap();
        drop(makefile);
        assert_eq!(commands(&cache.get(root)), ["make lint", "make e2e"]);
    }

    #[test]
    fn a_detection_over_fresh_files_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("go.mod"), "module x\n").unwrap();
        let cache = ProfileCache::default();
        assert_eq!(
            commands(&cache.get(root)),
            ["go vet ./...", "go test ./..."]
        );
        // Written within the clock's tick of the look: an edit now could
        // leave its times unchanged, so nothing is kept.
        assert!(cache.last.lock().unwrap().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_among_the_files_read_is_followed_and_watched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("Makefile");
        // A dangling link first: no target yet.
        std::os::unix::fs::symlink(&target, root.join("Makefile")).unwrap();
        settle();
        let cache = ProfileCache::default();
        assert!(commands(&cache.get(root)).is_empty());
        std::fs::write(&target, "test:\n\ttrue\n").unwrap();
        assert_eq!(commands(&cache.get(root)), ["make test"]);
        settle();
        assert_eq!(commands(&cache.get(root)), ["make test"]);
        std::fs::write(&target, "lint:\n\ttrue\n").unwrap();
        assert_eq!(commands(&cache.get(root)), ["make lint"]);
    }
}
