//! Who "this machine" is in the team, and which repository it works on.
//!
//! * **A machine is a working copy**, not a host: every clone and every git
//!   worktree has its own identity, a random id kept in
//!   `<repo>/.baton/team/machine.json` (baton's own ignored folder, never
//!   committed). Two clones on one host with one user are two machines.
//!   The id is the key; the host name and folder only make it readable
//!   (`host:folder`) and tell a copied working copy from a moved one:
//!   - the file names this host and this folder: it is ours;
//!   - it names another host: the working copy was copied to this host, so
//!     this copy takes a new id;
//!   - it names this host and another folder that still holds a working
//!     copy with the same id: this is a copy (`cp -r`), so it takes a new id;
//!   - it names this host and a folder that is gone: the working copy was
//!     moved, so it keeps its id and records its new folder.
//! * **The repository** is what clones of one origin share: the normalised
//!   `origin` URL, else the first root commit, else (no git) this machine
//!   alone. The team's views show the runs of the same repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::TeamError;

/// The identity file's name inside the team folder.
pub const MACHINE_FILE: &str = "machine.json";

/// This working copy's identity in the team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The random id: the key of everything this working copy writes.
    pub id: String,
    /// The host name when the id was made (or last moved).
    pub host: String,
    /// The working copy's folder (absolute).
    pub path: String,
}

impl Machine {
    /// A readable name: `host:folder-name` (the id says which exactly).
    pub fn label(&self) -> String {
        let folder = Path::new(&self.path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(&self.path);
        format!("{}:{folder}", self.host)
    }

    /// The first 8 characters of the id, for people.
    pub fn short_id(&self) -> &str {
        self.id.get(..8).unwrap_or(&self.id)
    }
}

/// What [`load_or_create`] decided about the identity file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The file was ours.
    Same,
    /// No file yet: a new identity.
    New,
    /// A copy of another working copy (`from` is the original's label): a
    /// new identity.
    Copied {
        /// The original's readable name.
        from: String,
    },
    /// The working copy moved here from `from`: same identity.
    Moved {
        /// The folder it was in.
        from: String,
    },
}

/// This host's name (`uname -n`).
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown-host".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    if name.is_empty() {
        "unknown-host".into()
    } else {
        name
    }
}

/// Reads this working copy's identity from `team_dir`, making, keeping or
/// renewing it as the module documentation says.
pub fn load_or_create(team_dir: &Path, repo_root: &Path) -> Result<(Machine, Found), TeamError> {
    let host = host_name();
    let here = repo_root.display().to_string();
    let file = team_dir.join(MACHINE_FILE);
    let fresh = || Machine {
        id: uuid::Uuid::new_v4().to_string(),
        host: host.clone(),
        path: here.clone(),
    };
    match read(&file)? {
        None => {
            let mine = fresh();
            // Two processes starting at once: the first file wins, both use it.
            if write_new(&file, &mine)? {
                Ok((mine, Found::New))
            } else {
                match read(&file)? {
                    Some(theirs) => Ok((theirs, Found::Same)),
                    None => Err(TeamError::io("read", &file, "vanished while starting")),
                }
            }
        }
        Some(m) if m.host == host && m.path == here => Ok((m, Found::Same)),
        Some(m) => {
            let original_alive = m.host == host
                && read(&PathBuf::from(&m.path).join(relative_team_file(team_dir, repo_root)))
                    .ok()
                    .flatten()
                    .is_some_and(|o| o.id == m.id);
            if m.host != host || original_alive {
                let mine = fresh();
                replace(&file, &mine)?;
                Ok((mine, Found::Copied { from: m.label() }))
            } else {
                let from = m.path.clone();
                let moved = Machine {
                    path: here.clone(),
                    ..m
                };
                replace(&file, &moved)?;
                Ok((moved, Found::Moved { from }))
            }
        }
    }
}

/// The identity file's path relative to the repository (to look for it in
/// the original of a copy).
fn relative_team_file(team_dir: &Path, repo_root: &Path) -> PathBuf {
    team_dir
        .strip_prefix(repo_root)
        .map(|p| p.join(MACHINE_FILE))
        .unwrap_or_else(|_| PathBuf::from(".baton/team").join(MACHINE_FILE))
}

fn read(file: &Path) -> Result<Option<Machine>, TeamError> {
    match std::fs::read(file) {
        Ok(bytes) => match serde_json::from_slice::<Machine>(&bytes) {
            Ok(m) if uuid::Uuid::parse_str(&m.id).is_ok() => Ok(Some(m)),
            // A damaged file is replaced by a new identity (nothing to keep).
            _ => Ok(None),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TeamError::io("read", file, e)),
    }
}

fn write_new(file: &Path, m: &Machine) -> Result<bool, TeamError> {
    let text = serde_json::to_vec_pretty(m).unwrap_or_default();
    match baton_fs::create_new_whole(file, &text) {
        Ok(made) => Ok(made),
        Err(e) => Err(TeamError::io("write", file, e)),
    }
}

/// Replaces the identity file whole (a new file renamed over the old one).
fn replace(file: &Path, m: &Machine) -> Result<(), TeamError> {
    let tmp = file.with_extension(format!("{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    write_new(&tmp, m)?;
    std::fs::rename(&tmp, file).map_err(|e| TeamError::io("rename", file, e))
}

/// The repository's team key: the normalised `origin` URL, else
/// `root:<first root commit>`, else `machine:<id>`.
pub fn repository_key(repo_root: &Path, machine: &Machine) -> String {
    if let Some(url) = git(repo_root, &["config", "--get", "remote.origin.url"]) {
        return normalise_remote(&url, repo_root);
    }
    if let Some(roots) = git(repo_root, &["rev-list", "--max-parents=0", "HEAD"])
        && let Some(first) = roots.lines().map(str::trim).filter(|l| !l.is_empty()).min()
    {
        return format!("root:{first}");
    }
    format!("machine:{}", machine.id)
}

fn git(repo_root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo_root)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// `https://github.com/Org/Repo.git`, `git@github.com:Org/Repo.git` and
/// `ssh://git@github.com/Org/Repo` are all `github.com/Org/Repo`; a local
/// path is made absolute (relative to the repository) and canonical.
pub fn normalise_remote(url: &str, repo_root: &Path) -> String {
    let url = url.trim();
    let strip = |s: &str| {
        s.trim_end_matches('/')
            .trim_end_matches(".git")
            .trim_end_matches('/')
            .to_string()
    };
    if let Some((scheme, rest)) = url.split_once("://") {
        if scheme == "file" {
            return local_path(rest, repo_root);
        }
        // Drop credentials and a port-less user; lower-case the host.
        let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        return format!("{}/{}", host.to_ascii_lowercase(), strip(path));
    }
    // scp-like: user@host:path (not a Windows drive, not a local path).
    if !url.starts_with('/')
        && !url.starts_with('.')
        && let Some((left, path)) = url.split_once(':')
    {
        let host = left.rsplit_once('@').map_or(left, |(_, h)| h);
        return format!("{}/{}", host.to_ascii_lowercase(), strip(path));
    }
    local_path(url, repo_root)
}

fn local_path(path: &str, repo_root: &Path) -> String {
    let p = Path::new(path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        repo_root.join(p)
    };
    let canonical = abs.canonicalize().unwrap_or(abs);
    format!(
        "file:{}",
        canonical
            .display()
            .to_string()
            .trim_end_matches('/')
            .trim_end_matches(".git")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_of_one_origin_share_a_key() {
        let root = Path::new("/tmp");
        let a = normalise_remote("https://GitHub.com/Org/Repo.git", root);
        let b = normalise_remote("git@github.com:Org/Repo.git", root);
        let c = normalise_remote("ssh://git@github.com/Org/Repo/", root);
        let d = normalise_remote("https://user:token@github.com/Org/Repo", root);
        assert_eq!(a, "github.com/Org/Repo");
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a, d, "credentials never reach the key");
        assert_ne!(a, normalise_remote("git@github.com:Org/Other.git", root));
    }

    #[test]
    fn clones_and_copies_are_machines_of_their_own_and_a_move_keeps_its_id() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let team_a = a.join(".baton/team");
        std::fs::create_dir_all(&team_a).unwrap();
        let (first, found) = load_or_create(&team_a, &a).unwrap();
        assert_eq!(found, Found::New);
        let (again, found) = load_or_create(&team_a, &a).unwrap();
        assert_eq!((again.id.as_str(), found), (first.id.as_str(), Found::Same));

        // A second clone beside it: its own identity.
        let b = tmp.path().join("b");
        std::fs::create_dir_all(b.join(".baton/team")).unwrap();
        let (other, _) = load_or_create(&b.join(".baton/team"), &b).unwrap();
        assert_ne!(other.id, first.id);

        // A copy of a (identity file and all): a new identity, a keeps its own.
        let copy = tmp.path().join("copy");
        std::fs::create_dir_all(copy.join(".baton/team")).unwrap();
        std::fs::copy(
            team_a.join(MACHINE_FILE),
            copy.join(".baton/team").join(MACHINE_FILE),
        )
        .unwrap();
        let (copied, found) = load_or_create(&copy.join(".baton/team"), &copy).unwrap();
        assert_ne!(copied.id, first.id);
        assert!(matches!(found, Found::Copied { .. }), "{found:?}");
        assert_eq!(load_or_create(&team_a, &a).unwrap().0.id, first.id);

        // a moved elsewhere: same identity, new folder.
        let moved = tmp.path().join("moved");
        std::fs::rename(&a, &moved).unwrap();
        let (m, found) = load_or_create(&moved.join(".baton/team"), &moved).unwrap();
        assert_eq!(m.id, first.id);
        assert!(matches!(found, Found::Moved { .. }), "{found:?}");
        assert_eq!(m.path, moved.display().to_string());
        assert!(m.label().ends_with(":moved"), "{}", m.label());
    }
}
