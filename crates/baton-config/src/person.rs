//! The person's own configuration: what only the person decides, kept
//! outside every repository — which channels besides their own count as
//! them, and where a run that asks for `--auto` may approve its
//! checkpoints without them.
//!
//! It lives in `~/.config/baton/config.toml`, where `~` is the home folder
//! of the user **in the password database**, never `$HOME` or
//! `$XDG_CONFIG_HOME`: the agent chooses the environment of every process
//! it starts, so a setting found through the environment would be the
//! agent's. A repository's `baton.toml` never grants any of this (the
//! repository's files are the agent's to write). Inside a client with
//! baton's hooks the hook keeps the agent from writing this file; a
//! process of the same user outside the client can still edit it
//! (docs/configuration.md, docs/lifecycle.md "Who may answer").
//!
//! ```toml
//! [answers]
//! # Channels besides terminal, dashboard, prompt and chat that count as you.
//! trust = ["elicitation"]
//!
//! [auto]
//! # Repositories where a run that asks for --auto (a tool argument) may
//! # approve its checkpoints without you; "*" for every repository.
//! repositories = ["/home/me/src/sandbox"]
//! ```
//!
//! The file is read once per process, at its first decision. A file that
//! cannot be read or parsed grants nothing (and says why in
//! [`PersonSettings::problem`]).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file name in the person's configuration folder.
pub const FILE_NAME: &str = "config.toml";

/// The largest configuration file baton reads (a few lines are usual).
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Testing hook, honoured by debug builds only: the path of the person's
/// configuration file (its folder holds the state key too). Release builds
/// ignore it: the agent sets the environment of the processes it starts.
pub const TEST_OVERRIDE_ENV: &str = "BATON_PERSON_CONFIG";

/// Testing hook, honoured by debug builds only: the person's witness
/// folder ([`witness_dir`]). Release builds ignore it.
pub const WITNESS_OVERRIDE_ENV: &str = "BATON_WITNESS_DIR";

/// What the person decided in their own configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PersonSettings {
    /// Channels besides the person's own (terminal, dashboard, prompt,
    /// chat) whose answers count as the person's (`elicitation`).
    pub trusted_channels: Vec<String>,
    /// Repositories (absolute paths) where `--auto` asked for by a tool
    /// argument is granted; `"*"` for all.
    pub auto_repositories: Vec<String>,
    /// The file read, when there was one.
    pub file: Option<PathBuf>,
    /// Why the file was not used, when it could not be.
    pub problem: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    answers: Answers,
    #[serde(default)]
    auto: Auto,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answers {
    #[serde(default)]
    trust: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Auto {
    #[serde(default)]
    repositories: Vec<String>,
}

impl PersonSettings {
    /// The person's settings from their configuration folder
    /// ([`config_dir`]); nothing granted when there is no file.
    pub fn load() -> PersonSettings {
        match config_file() {
            Some(path) => PersonSettings::from_file(&path),
            None => PersonSettings {
                problem: Some(
                    "your user has no home folder in the password database, so ~/.config/baton/config.toml cannot be found; ask the machine's administrator to set one".into(),
                ),
                ..PersonSettings::default()
            },
        }
    }

    /// The settings in `path` (missing: nothing granted, no problem). Read
    /// through `baton-fs`'s safe open: a link, a FIFO, a device or a file
    /// over [`MAX_FILE_BYTES`] is refused at once (it never blocks) and
    /// grants nothing, with a problem that says what to do.
    pub fn from_file(path: &Path) -> PersonSettings {
        let text = match baton_fs::read_string_nofollow(path, MAX_FILE_BYTES) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => {
                return PersonSettings::default();
            }
            Err(e) => {
                return PersonSettings {
                    file: Some(path.to_path_buf()),
                    problem: Some(format!(
                        "baton did not read {} ({e}), so nothing in it is used; make it a plain text file of your own (not a link, a pipe or a device) under {} KiB",
                        path.display(),
                        MAX_FILE_BYTES / 1024
                    )),
                    ..PersonSettings::default()
                };
            }
        };
        PersonSettings::parse(&text, path)
    }

    /// The settings in `text` (read from `path`).
    pub fn parse(text: &str, path: &Path) -> PersonSettings {
        match toml::from_str::<File>(text) {
            Ok(f) => PersonSettings {
                trusted_channels: f.answers.trust,
                auto_repositories: f.auto.repositories,
                file: Some(path.to_path_buf()),
                problem: None,
            },
            Err(e) => PersonSettings {
                file: Some(path.to_path_buf()),
                problem: Some(format!(
                    "{} is not valid (nothing in it is used); fix it as docs/configuration.md (\"The person's own configuration\") shows, or remove it: {e}",
                    path.display()
                )),
                ..PersonSettings::default()
            },
        }
    }

    /// Whether the person trusts `channel` to answer for them.
    pub fn trusts(&self, channel: &str) -> bool {
        self.trusted_channels.iter().any(|c| c == channel)
    }

    /// Whether the person lets runs in `repo` approve their checkpoints
    /// without them when a run asks for `--auto`.
    pub fn allows_auto_in(&self, repo: &Path) -> bool {
        self.auto_repositories
            .iter()
            .any(|r| r == "*" || Path::new(r) == repo)
    }
}

/// The person's configuration folder: `<home>/.config/baton`, the home
/// folder taken from the password database (in debug builds,
/// [`TEST_OVERRIDE_ENV`]'s folder when it is set).
pub fn config_dir() -> Option<PathBuf> {
    config_file().and_then(|f| f.parent().map(Path::to_path_buf))
}

/// The person's configuration file ([`config_dir`]`/config.toml`).
pub fn config_file() -> Option<PathBuf> {
    if cfg!(debug_assertions)
        && let Some(path) = std::env::var_os(TEST_OVERRIDE_ENV)
    {
        return Some(PathBuf::from(path));
    }
    home_from_passwd().map(|home| home.join(".config").join("baton").join(FILE_NAME))
}

/// The person's witness folder: `<home>/.local/state/baton/witness`, the
/// home folder taken from the password database, never `$HOME` or
/// `$XDG_STATE_HOME` (the agent sets the environment of the processes it
/// starts, and would choose a folder its sandbox may write); in debug
/// builds [`WITNESS_OVERRIDE_ENV`]'s folder when it is set. What baton
/// wrote to each run's state is recorded there, outside every folder an
/// agent's sandbox may write (`baton_state::witness`).
pub fn witness_dir() -> Option<PathBuf> {
    if cfg!(debug_assertions)
        && let Some(path) = std::env::var_os(WITNESS_OVERRIDE_ENV)
    {
        return Some(PathBuf::from(path));
    }
    home_from_passwd().map(|home| {
        home.join(".local")
            .join("state")
            .join("baton")
            .join("witness")
    })
}

/// The current user's home folder as the password database has it, asked
/// once per process (a lookup reads `/etc/nsswitch.conf` and
/// `/etc/passwd`; the configuration file and the witness folder are found
/// from it on every change that writes).
fn home_from_passwd() -> Option<PathBuf> {
    static HOME: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HOME.get_or_init(lookup_home).clone()
}

/// [`home_from_passwd`], asked of the password database.
fn lookup_home() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: all-zero is a valid `passwd` (pointers null, integers zero);
    // getpwuid_r fills it in, pointing into `buf`, which outlives its use.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the given length.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points to a NUL-terminated string inside `buf`.
    let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    path.is_absolute().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_grants_nothing_and_a_broken_one_grants_nothing_either() {
        let dir = tempfile::tempdir().unwrap();
        let none = PersonSettings::from_file(&dir.path().join("config.toml"));
        assert_eq!(none, PersonSettings::default());
        assert!(!none.trusts("elicitation"));
        assert!(!none.allows_auto_in(Path::new("/repo")));
        let broken = PersonSettings::parse(
            "[answers]\ntrust = [\"elicitation\"]\nextra = 1\n",
            Path::new("/x/config.toml"),
        );
        assert!(!broken.trusts("elicitation"));
        assert!(broken.problem.unwrap().contains("not valid"));
    }

    #[test]
    fn a_fifo_a_link_or_a_huge_file_is_refused_at_once_and_grants_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.toml");
        std::fs::write(&good, "[auto]\nrepositories = [\"*\"]\n").unwrap();
        assert!(PersonSettings::from_file(&good).allows_auto_in(Path::new("/r")));
        // A FIFO with no writer: an ordinary read would block for ever.
        let fifo = dir.path().join("fifo.toml");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        let huge = dir.path().join("huge.toml");
        std::fs::write(&huge, "#".repeat(MAX_FILE_BYTES as usize + 1)).unwrap();
        for path in [&fifo, &link, &huge] {
            let s = PersonSettings::from_file(path);
            assert!(!s.allows_auto_in(Path::new("/r")), "{path:?}");
            let problem = s.problem.expect("a problem that says why");
            assert!(problem.contains("nothing in it is used"), "{problem}");
            assert!(problem.contains("plain text file"), "{problem}");
        }
    }

    #[test]
    fn trust_and_auto_are_what_the_file_says() {
        let s = PersonSettings::parse(
            "[answers]\ntrust = [\"elicitation\"]\n[auto]\nrepositories = [\"/home/me/sandbox\"]\n",
            Path::new("/x/config.toml"),
        );
        assert!(s.trusts("elicitation") && !s.trusts("mcp"));
        assert!(s.allows_auto_in(Path::new("/home/me/sandbox")));
        assert!(!s.allows_auto_in(Path::new("/home/me/work")));
        let all = PersonSettings::parse(
            "[auto]\nrepositories = [\"*\"]\n",
            Path::new("/x/config.toml"),
        );
        assert!(all.allows_auto_in(Path::new("/anything")));
    }

    #[test]
    fn the_home_folder_comes_from_the_password_database() {
        // Whatever $HOME says, the path is the password database's.
        if std::env::var_os(TEST_OVERRIDE_ENV).is_none() {
            let file = config_file().expect("a home folder");
            assert!(file.ends_with(".config/baton/config.toml"), "{file:?}");
        }
    }
}
