//! The tag on every `state.json` baton writes, and its check.
//!
//! baton signs the text of each state it writes with an HMAC-SHA256 whose
//! key lives in the person's own configuration folder
//! (`~/.config/baton/state.key`, `baton_config::person`, created on first
//! use, readable by the user only) — outside every repository, so a
//! `state.json` edited by hand, by `jq` or by an agent's shell no longer
//! matches its tag. [`check`] reads a run's state file back and says
//! whether baton wrote it as it is.
//!
//! What this guarantees, honestly: it shows an edit made by anything that
//! does not hold the key — an editor, `jq`, a script, a copy of another
//! run's file. It is no secret from the user's own processes: inside a
//! client with baton's hooks the agent cannot write `state.json` or the
//! key's folder (both protected), but a program of the same user (one the
//! agent runs in a phase that may change the repository, or one outside
//! the client) can read the key and forge a matching tag. Only a channel
//! off the machine (the dashboard from another device, chat) is beyond
//! that process's reach (docs/lifecycle.md "Who may answer").

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use baton_state::WorkspaceRef;
use baton_state::integrity::StateSigner;

/// The key file's name in the person's configuration folder.
pub const KEY_FILE: &str = "state.key";

/// Tag prefix: the algorithm.
const SCHEME: &str = "hmac-sha256";

/// The person's state key, read (or made) on first use.
pub struct KeySigner {
    dir: Option<PathBuf>,
    key: OnceLock<Option<Keyed>>,
}

/// A key with what every tag under it starts from: its public name and
/// the HMAC state after the key (cloned per tag, not derived again).
struct Keyed {
    id: String,
    mac: Hmac<Sha256>,
}

impl Keyed {
    fn new(key: &[u8]) -> Option<Keyed> {
        Some(Keyed {
            id: key_id(key),
            mac: Hmac::<Sha256>::new_from_slice(key).ok()?,
        })
    }
}

impl std::fmt::Debug for KeySigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySigner").field("dir", &self.dir).finish()
    }
}

impl KeySigner {
    /// A signer over the key in the person's configuration folder.
    pub fn new() -> KeySigner {
        KeySigner::in_dir(baton_config::person::config_dir())
    }

    /// A signer over the key in `dir` (none: never signs).
    pub fn in_dir(dir: Option<PathBuf>) -> KeySigner {
        KeySigner {
            dir,
            key: OnceLock::new(),
        }
    }

    fn key(&self) -> Option<&Keyed> {
        self.key
            .get_or_init(|| {
                self.dir
                    .as_deref()
                    .and_then(load_or_make)
                    .and_then(|k| Keyed::new(&k))
            })
            .as_ref()
    }

    /// The tag of `text` under this key.
    fn tag(&self, text: &str) -> Option<String> {
        use std::fmt::Write;
        let key = self.key()?;
        let mut mac = key.mac.clone();
        mac.update(text.as_bytes());
        let mut tag = String::with_capacity(SCHEME.len() + key.id.len() + 66);
        tag.push_str(SCHEME);
        tag.push(':');
        tag.push_str(&key.id);
        tag.push(':');
        for b in mac.finalize().into_bytes() {
            let _ = write!(tag, "{b:02x}");
        }
        Some(tag)
    }

    /// Whether this process has a key (it signs what it writes).
    pub fn has_key(&self) -> bool {
        self.key().is_some()
    }

    /// Reads the key now if the person has one, so the first state change
    /// does not read it before its reply (a server's warm-up). A missing
    /// key is left to be made by the first use, as always: a server that
    /// never touches a run makes none.
    pub fn warm(&self) {
        let Some(dir) = self.dir.as_deref() else {
            return;
        };
        if let Some(key) = read_key(&dir.join(KEY_FILE)).and_then(|k| Keyed::new(&k)) {
            let _ = self.key.set(Some(key));
        }
    }
}

impl Default for KeySigner {
    fn default() -> KeySigner {
        KeySigner::new()
    }
}

impl StateSigner for KeySigner {
    fn sign(&self, text: &str) -> Option<String> {
        self.tag(text)
    }
}

/// A short public name of a key (the first 8 hex digits of its SHA-256).
fn key_id(key: &[u8]) -> String {
    Sha256::digest(key)
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The key in `dir/state.key`, made (64 hex digits, mode 0600, the folder
/// 0700) when there is none yet.
fn load_or_make(dir: &Path) -> Option<Vec<u8>> {
    let path = dir.join(KEY_FILE);
    let read = || read_key(&path);
    if let Some(key) = read() {
        return Some(key);
    }
    if !dir.exists() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .ok()?;
    }
    let secret = format!(
        "{}{}\n",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    // Written whole under a name of its own, then linked into place: two
    // processes racing keep the first one's key, and neither ever reads a
    // key half-written (it would sign nothing for the rest of its life).
    let staged = dir.join(format!(".{KEY_FILE}.{}", uuid::Uuid::new_v4().simple()));
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&staged)
            && f.write_all(secret.as_bytes()).is_ok()
            && f.sync_all().is_ok()
        {
            // AlreadyExists: another process made the key first; use it.
            let _ = std::fs::hard_link(&staged, &path);
        }
        let _ = std::fs::remove_file(&staged);
    }
    read()
}

/// The key in the file at `path`, if it holds one (never a link).
fn read_key(path: &Path) -> Option<Vec<u8>> {
    baton_fs::read_string_nofollow(path, 256)
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| t.len() >= 32)
        .map(String::into_bytes)
}

/// What a run's state file says about who wrote it.
pub use baton_state::integrity::TagCheck as Check;

/// Checks the state file baton reads for the run in `ws` (the live state
/// of a sealed run, else `state.json`) against `signer`'s key.
pub fn check(signer: &KeySigner, ws: &WorkspaceRef) -> Check {
    if !signer.has_key() {
        return Check::Unknown;
    }
    let live = ws.dir.join(baton_state::store::LIVE_STATE_FILE);
    let path = if std::fs::symlink_metadata(&live).is_ok_and(|m| m.file_type().is_file()) {
        live
    } else {
        ws.state_file()
    };
    let Ok(text) = baton_fs::read_string_nofollow(&path, baton_state::store::MAX_STATE_BYTES)
    else {
        return Check::Unknown;
    };
    baton_state::integrity::check_text(signer, &text)
}

/// Whether the state of a run (`state`, whose file's bytes `check` says
/// this of) was written outside baton: its tag does not match, or a run
/// that baton tags carries none. Ended runs are as committed and not
/// judged. `check` is the store's check of the very bytes `state` was read
/// from ([`baton_state::StateStore::load_checked`]): one read, one HMAC.
pub fn changed_outside(check: Check, state: &baton_state::WorkspaceState) -> bool {
    if state.current_phase_status.is_terminal() {
        return false;
    }
    match check {
        Check::Changed => true,
        Check::Untagged => state.definition.is_some(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warm-up reads a key that is there (the first change then reads
    /// nothing) and makes none that is not (only a use makes one).
    #[test]
    fn warming_up_reads_an_existing_key_and_makes_none() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("baton");
        let cold = KeySigner::in_dir(Some(folder.clone()));
        cold.warm();
        assert!(!folder.join(KEY_FILE).exists(), "no key made by a warm-up");
        let tag = cold.sign("{}").unwrap();
        assert!(folder.join(KEY_FILE).exists(), "made by the first use");
        let warm = KeySigner::in_dir(Some(folder.clone()));
        warm.warm();
        // Read at the warm-up: the file is no longer needed.
        std::fs::remove_file(folder.join(KEY_FILE)).unwrap();
        assert_eq!(warm.sign("{}"), Some(tag));
        assert!(!folder.join(KEY_FILE).exists());
    }

    #[test]
    fn a_key_is_made_once_and_tags_what_it_signs() {
        let dir = tempfile::tempdir().unwrap();
        let a = KeySigner::in_dir(Some(dir.path().join("baton")));
        let tag = a.sign("{\n}\n").unwrap();
        assert!(tag.starts_with("hmac-sha256:"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("baton").join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Another process reads the same key.
        let b = KeySigner::in_dir(Some(dir.path().join("baton")));
        assert_eq!(b.sign("{\n}\n"), Some(tag.clone()));
        assert_ne!(b.sign("{\n }\n"), Some(tag));
        // No folder: no key, no tag.
        assert_eq!(KeySigner::in_dir(None).sign("x"), None);
        // Nothing staged is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("baton"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(KEY_FILE)]);
    }

    #[test]
    fn processes_racing_to_make_the_key_all_sign_with_the_same_one() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("baton");
        let tags: Vec<Option<String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| KeySigner::in_dir(Some(folder.clone())).sign("{\n}\n")))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(tags[0].is_some());
        assert!(tags.iter().all(|t| *t == tags[0]), "{tags:?}");
    }
}
