//! What no agent tool may name, reading or writing: baton's key and the
//! person's configuration folder, the dashboard's token file, and — while
//! a run is bound — a run's control files (`state.json`, the live state and
//! journal, `.baton/`). Pure decisions over the texts a tool call carries
//! (a path argument, a command line): the hooks cannot see what a program
//! computes at run time, so these are the first layer only (Claude Code's
//! sandbox is the OS's; docs/clients.md "Trust model").

use super::paths;

/// What names a secret: absolute folders and files, and the home folder a
/// command's `~` and `$HOME` stand for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Folders nothing reads inside (the person's configuration folder).
    pub dirs: Vec<String>,
    /// Files nothing reads (the dashboard's token file), each also by its
    /// repository-relative name when it has one.
    pub files: Vec<String>,
    /// The home folder (`~`, `$HOME`), absolute.
    pub home: Option<String>,
}

/// Names that point at baton's key wherever the folder is spelled.
const KEY_MARKERS: &[&str] = &[".config/baton", "state.key"];

/// `text` as a shell would read its literal parts: quotes and escapes
/// removed, `~`, `$HOME` and `${HOME}` replaced by the home folder.
fn plain(text: &str, home: Option<&str>) -> String {
    let mut out: String = text
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    if let Some(home) = home {
        out = out.replace("${HOME}", home).replace("$HOME", home);
        let mut expanded = String::with_capacity(out.len());
        let mut prev: Option<char> = None;
        for c in out.chars() {
            let at_word_start = prev.is_none_or(|p| {
                p.is_whitespace() || matches!(p, '=' | ':' | '(' | ';' | '|' | '&' | '<' | '>')
            });
            if c == '~' && at_word_start {
                expanded.push_str(home);
            } else {
                expanded.push(c);
            }
            prev = Some(c);
        }
        out = expanded;
    }
    out
}

/// The secret `text` (a path argument or a command line) names, in words
/// for the agent; `None` when it names none.
pub fn secret_named(secrets: &Secrets, text: &str) -> Option<String> {
    let text = plain(text, secrets.home.as_deref());
    for dir in &secrets.dirs {
        let dir = dir.trim_end_matches('/');
        if !dir.is_empty() && text.contains(dir) {
            return Some(format!(
                "{dir} (baton's key and the person's configuration)"
            ));
        }
    }
    if let Some(marker) = KEY_MARKERS.iter().find(|m| text.contains(*m)) {
        return Some(format!(
            "{marker} (baton's key and the person's configuration)"
        ));
    }
    secrets
        .files
        .iter()
        .find(|f| !f.is_empty() && text.contains(f.as_str()))
        .map(|f| format!("{f} (the dashboard's access token)"))
}

/// The words of a command line that could be paths: split at blanks and
/// the shell's operators, quotes and escapes removed, `~`/`$HOME` expanded.
pub fn path_words(command: &str, home: Option<&str>) -> Vec<String> {
    plain(command, home)
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')' | '`' | '=')
        })
        .filter(|w| !w.is_empty() && !w.starts_with('-'))
        .map(str::to_string)
        .collect()
}

/// The control file `path` (repository-relative, normalised) is, when it
/// is one of `control` (patterns, `*`/`**`); a last part spelled as a glob
/// (`.specs/x/*`) counts when its folder holds control files.
pub fn control_named(control: &[String], path: &str) -> Option<String> {
    if control.iter().any(|p| paths::matches(p, path)) {
        return Some(path.to_string());
    }
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    if name.contains(['*', '?', '[']) {
        for probe in ["state.json", ".state.live.json", "state-archive.jsonl", "x"] {
            let candidate = if dir.is_empty() {
                probe.to_string()
            } else {
                format!("{dir}/{probe}")
            };
            if paths::matches(name, probe) && control.iter().any(|p| paths::matches(p, &candidate))
            {
                return Some(path.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        Secrets {
            dirs: vec!["/home/me/.config/baton".into()],
            files: vec!["/repo/secrets/token".into(), "secrets/token".into()],
            home: Some("/home/me".into()),
        }
    }

    #[test]
    fn the_key_and_the_configuration_folder_are_named_however_spelled() {
        let s = secrets();
        for text in [
            "/home/me/.config/baton/state.key",
            "cat ~/.config/baton/state.key",
            "cat $HOME/.config/baton/config.toml",
            "cat \"${HOME}\"/.con'fig'/baton/x",
            "python3 -c \"open('/home/me/.config/baton/state.key')\"",
            "find / -name state.key",
            "/elsewhere/.config/baton",
        ] {
            assert!(secret_named(&s, text).is_some(), "{text}");
        }
        assert!(secret_named(&s, "cat secrets/token").is_some());
        assert!(secret_named(&s, "/repo/secrets/token").is_some());
        for text in [
            "cargo test",
            "cat ~/.config/git/config",
            "/repo/src/main.rs",
            "ls ~",
        ] {
            assert_eq!(secret_named(&s, text), None, "{text}");
        }
    }

    #[test]
    fn words_of_a_command_line() {
        assert_eq!(
            path_words("cat '.specs/x/state.json' | jq -r . > out.txt", None),
            vec!["cat", ".specs/x/state.json", "jq", ".", "out.txt"]
        );
        assert_eq!(path_words("ls ~/x", Some("/h")), vec!["ls", "/h/x"]);
    }

    #[test]
    fn control_files_by_name_and_by_glob() {
        let control: Vec<String> = [
            ".baton/**",
            ".specs/*/state.json",
            ".specs/*/.state*",
            ".specs/*/state-archive.jsonl",
            ".specs/.history/**",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for path in [
            ".specs/x/state.json",
            ".specs/x/.state.live.json",
            ".baton/sessions/s.json",
            ".specs/x/*",
            ".specs/*/state.json",
            ".specs/x/state*",
        ] {
            assert!(control_named(&control, path).is_some(), "{path}");
        }
        for path in [
            ".specs/x/analysis.md",
            "src/state.json",
            ".specs/x",
            "state.json",
        ] {
            assert_eq!(control_named(&control, path), None, "{path}");
        }
    }
}
