//! What the run's commit stages: exactly the files the run created or
//! changed, never files that were dirty or untracked before it started,
//! never another workspace, never baton's runtime files, and no
//! secret-looking file without a person's consent.

use baton_state::WorkspaceState;

/// The repository as it is now, read by the caller (`git status`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoStatus {
    /// Repository-relative paths that are modified, staged, deleted or
    /// untracked now (for a rename, the new path).
    pub changed: Vec<String>,
}

/// Where the run's own files are.
#[derive(Debug, Clone, Copy)]
pub struct RunPaths<'a> {
    /// The specs folder, repository-relative, without a trailing slash (e.g. `.specs`).
    pub specs_dir: &'a str,
    /// The run's workspace, repository-relative (e.g. `.specs/20260401-fix`).
    pub workspace: &'a str,
}

/// The outcome of choosing the files to stage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StagePlan {
    /// Files to stage, sorted.
    pub stage: Vec<String>,
    /// Secret-looking files a person has not decided about yet.
    pub undecided_secrets: Vec<String>,
    /// Files left out, with the reason (for the person and the log).
    pub left_out: Vec<(String, &'static str)>,
}

/// File names that look like secrets: environment files, keys, certificates,
/// credential stores. A person decides whether such a file is committed.
pub fn looks_secret(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    name == ".env"
        || name.starts_with(".env.")
        || name.ends_with(".env")
        || (name.starts_with("id_") && !name.ends_with(".pub"))
        || matches!(
            ext,
            "pem" | "key" | "p12" | "pfx" | "jks" | "keystore" | "kdbx"
        )
        || matches!(
            name.as_str(),
            ".netrc" | "_netrc" | ".npmrc" | ".pypirc" | ".git-credentials" | ".htpasswd"
        )
        || name.starts_with("credentials")
        || name.contains("secret")
        || name == "service-account.json"
}

/// Whether a path is one of baton's runtime files, never committed.
fn is_runtime(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path == ".baton"
        || path.starts_with(".baton/")
        || name == baton_state::store::LOCK_FILE
        || name == baton_state::store::LIVE_STATE_FILE
        || (name.starts_with(".state.json.") && name.ends_with(".tmp"))
}

/// Chooses what the run's commit stages from what changed in the repository.
pub fn stage_plan(state: &WorkspaceState, status: &RepoStatus, paths: RunPaths<'_>) -> StagePlan {
    let baseline: Vec<&str> = state
        .repo_baseline
        .as_ref()
        .map(|b| b.dirty.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let late = state.repo_baseline.as_ref().is_some_and(|b| b.taken_late);
    let specs = format!("{}/", paths.specs_dir.trim_end_matches('/'));
    let own = format!("{}/", paths.workspace.trim_end_matches('/'));
    let mut plan = StagePlan::default();
    let mut changed: Vec<&String> = status.changed.iter().collect();
    changed.sort();
    changed.dedup();
    for path in changed {
        let reason = if is_runtime(path) {
            Some("baton runtime file")
        } else if path.starts_with(&specs) && !path.starts_with(&own) {
            Some("another workspace")
        } else if baseline.contains(&path.as_str()) && !path.starts_with(&own) {
            // (The run's own workspace is the run's, even when a resent
            // confirmation found its request already written.)
            Some(if late {
                "modified or untracked when baton first met this migrated run"
            } else {
                "modified or untracked before the run started"
            })
        } else if state.commit_excluded.contains(path) {
            Some("kept out by a person")
        } else if looks_secret(path) && !state.commit_allowed.contains(path) {
            plan.undecided_secrets.push(path.clone());
            Some("looks like a secret")
        } else {
            None
        };
        match reason {
            Some(r) => plan.left_out.push((path.clone(), r)),
            None => plan.stage.push(path.clone()),
        }
    }
    plan
}

/// Paths out of `git status --porcelain=v1 -z --untracked-files=all` output:
/// every entry's path (the new path of a rename or copy).
pub fn parse_porcelain(output: &[u8]) -> Vec<String> {
    let mut paths = Vec::new();
    let mut fields = output.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        if entry.len() < 4 {
            continue;
        }
        let code = &entry[..2];
        let path = String::from_utf8_lossy(&entry[3..]).into_owned();
        // A rename or copy is followed by its original path, which changed too.
        if (code.contains(&b'R') || code.contains(&b'C'))
            && let Some(from) = fields.next()
        {
            paths.push(String::from_utf8_lossy(from).into_owned());
        }
        paths.push(path);
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_state::RepoBaseline;

    fn state(dirty: &[&str]) -> WorkspaceState {
        let mut s = WorkspaceState::fresh(
            "forge",
            "phase-1",
            "x",
            ".specs/20260401-x",
            "t",
            "2026-01-01T00:00:00Z".parse().unwrap(),
        );
        s.repo_baseline = Some(RepoBaseline {
            head: None,
            dirty: dirty.iter().map(|d| d.to_string()).collect(),
            ..RepoBaseline::default()
        });
        s
    }

    const PATHS: RunPaths<'static> = RunPaths {
        specs_dir: ".specs",
        workspace: ".specs/20260401-x",
    };

    fn status(paths: &[&str]) -> RepoStatus {
        RepoStatus {
            changed: paths.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn only_the_runs_files_are_staged() {
        let s = state(&["notes.txt", "src/half-done.rs"]);
        let plan = stage_plan(
            &s,
            &status(&[
                "notes.txt",
                "src/half-done.rs",
                "src/new.rs",
                "README.md",
                ".specs/20260401-x/design.md",
                ".specs/20260401-x/state.json",
                ".specs/20260401-x/.state.lock",
                ".specs/20260402-other/state.json",
                ".baton/events/events.jsonl",
            ]),
            PATHS,
        );
        assert_eq!(
            plan.stage,
            [
                ".specs/20260401-x/design.md",
                ".specs/20260401-x/state.json",
                "README.md",
                "src/new.rs"
            ]
        );
        let reasons: Vec<(&str, &str)> = plan
            .left_out
            .iter()
            .map(|(p, r)| (p.as_str(), *r))
            .collect();
        assert!(reasons.contains(&("notes.txt", "modified or untracked before the run started")));
        assert!(reasons.contains(&(".specs/20260402-other/state.json", "another workspace")));
        assert!(reasons.contains(&(".specs/20260401-x/.state.lock", "baton runtime file")));
        assert!(plan.undecided_secrets.is_empty());
    }

    #[test]
    fn the_runs_own_workspace_is_staged_even_when_the_baseline_names_it() {
        // A kill between request.md and state.json: the resent confirmation
        // found the request already there.
        let s = state(&[".specs/20260401-x/request.md", "notes.txt"]);
        let plan = stage_plan(
            &s,
            &status(&[".specs/20260401-x/request.md", "notes.txt"]),
            PATHS,
        );
        assert_eq!(plan.stage, [".specs/20260401-x/request.md"]);
    }

    #[test]
    fn secrets_wait_for_a_person_and_their_decision_sticks() {
        let mut s = state(&[]);
        let st = status(&[
            ".env",
            "config/prod.pem",
            "keys/id_ed25519",
            "keys/id_ed25519.pub",
            "src/secretary.rs",
            "app.rs",
        ]);
        let plan = stage_plan(&s, &st, PATHS);
        assert_eq!(
            plan.undecided_secrets,
            [
                ".env",
                "config/prod.pem",
                "keys/id_ed25519",
                "src/secretary.rs"
            ]
        );
        assert_eq!(plan.stage, ["app.rs", "keys/id_ed25519.pub"]);
        s.commit_allowed = vec!["src/secretary.rs".into()];
        s.commit_excluded = vec![
            ".env".into(),
            "config/prod.pem".into(),
            "keys/id_ed25519".into(),
        ];
        let plan = stage_plan(&s, &st, PATHS);
        assert!(plan.undecided_secrets.is_empty());
        assert_eq!(
            plan.stage,
            ["app.rs", "keys/id_ed25519.pub", "src/secretary.rs"]
        );
    }

    #[test]
    fn secret_names_are_recognised() {
        for yes in [
            ".env",
            ".env.local",
            "prod.env",
            "server.pem",
            "tls.key",
            "id_rsa",
            ".npmrc",
            "credentials.json",
            "my_secret.txt",
            ".git-credentials",
        ] {
            assert!(looks_secret(yes), "{yes}");
        }
        for no in [
            "id_rsa.pub",
            "environment.md",
            "src/keyboard.rs",
            "README.md",
            "Cargo.lock",
        ] {
            assert!(!looks_secret(no), "{no}");
        }
    }

    #[test]
    fn porcelain_output_gives_every_path() {
        let out = b" M src/a.rs\0?? new file.txt\0R  new.rs\0old.rs\0 D gone.rs\0";
        assert_eq!(
            parse_porcelain(out),
            ["src/a.rs", "new file.txt", "old.rs", "new.rs", "gone.rs"]
        );
    }
}
