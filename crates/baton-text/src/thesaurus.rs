//! Query expansion with a thesaurus that is data.
//!
//! Manuals are written in formal, written-style vocabulary (疾病, 解約,
//! 貸付, uninstall) while people ask in everyday words (病気, やめる, 借りる,
//! remove). Each entry maps an everyday form found in the (normalised)
//! query to formal forms; the formal forms become alternative spellings of
//! the same query concept, so a section using either form covers it.
//!
//! The entries are text files in one format (`KEY = ALT1, ALT2`, `#`
//! comments): the built-in `thesaurus/core.txt` (embedded), and a user's
//! own file for their manuals' vocabulary (`MANUALS_THESAURUS`, see
//! docs/manuals.md §4–5). Entries are merged by key in file order.

use std::collections::HashMap;
use std::path::Path;

use crate::normalize as text;

/// The built-in entries, embedded at compile time: the core list (written
/// against the tuning sets) and the general list (written blind, from
/// general knowledge of the genres; docs/manuals.md §6).
const CORE: &str = include_str!("../thesaurus/core.txt");
const GENERAL: &str = include_str!("../thesaurus/general.txt");

/// Largest thesaurus file read (a user file beyond it is refused).
pub const MAX_THESAURUS_BYTES: u64 = 4 * 1024 * 1024;

/// Everyday forms and the formal forms they expand to, all in normal form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Thesaurus {
    entries: Vec<(String, Vec<String>)>,
}

impl Thesaurus {
    /// The built-in entries.
    pub fn builtin() -> Thesaurus {
        let mut t = Thesaurus::default();
        // The embedded file is checked by a unit test; a bad line is skipped.
        let _ = t.add_text(CORE, "thesaurus/core.txt");
        let _ = t.add_text(GENERAL, "thesaurus/general.txt");
        t
    }

    /// Number of entries (distinct keys).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds the entries of a thesaurus text (`origin` names it in problems).
    /// Malformed lines are skipped and returned as `origin:line: problem`.
    pub fn add_text(&mut self, text: &str, origin: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let mut index: HashMap<String, usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_line(line) {
                Ok((key, alternatives)) => match index.get(&key) {
                    Some(&i) => {
                        let existing = &mut self.entries[i].1;
                        for alt in alternatives {
                            if !existing.contains(&alt) {
                                existing.push(alt);
                            }
                        }
                    }
                    None => {
                        index.insert(key.clone(), self.entries.len());
                        self.entries.push((key, alternatives));
                    }
                },
                Err(problem) => problems.push(format!("{origin}:{}: {problem}", n + 1)),
            }
        }
        problems
    }

    /// Adds a thesaurus file; problems (unreadable, too large, bad lines)
    /// come back as messages and never stop the rest from loading.
    pub fn add_file(&mut self, path: &Path) -> Vec<String> {
        let origin = path.display().to_string();
        match std::fs::metadata(path) {
            Ok(m) if m.len() > MAX_THESAURUS_BYTES => {
                return vec![format!(
                    "{origin}: {} bytes; the limit is {MAX_THESAURUS_BYTES}",
                    m.len()
                )];
            }
            Ok(_) => {}
            Err(e) => return vec![format!("{origin}: {e}")],
        }
        match std::fs::read_to_string(path) {
            Ok(text) => self.add_text(&text, &origin),
            Err(e) => vec![format!("{origin}: {e}")],
        }
    }

    /// Expansions for a normalised query: `(matched everyday form, formal
    /// forms)`. A key inside a longer matched key (`いつ` in `いつから`) is
    /// skipped.
    pub fn expansions<'a>(&'a self, normalized: &str) -> Vec<(&'a str, &'a [String])> {
        let matched: Vec<(&str, &[String])> = self
            .entries
            .iter()
            .filter(|(key, _)| occurs(normalized, key))
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        matched
            .iter()
            .filter(|(key, _)| {
                !matched.iter().any(|(other, _)| {
                    other.len() > key.len()
                        && other.contains(key)
                        && covers_all(normalized, key, other)
                })
            })
            .copied()
            .collect()
    }
}

/// Parses `KEY = ALT1, ALT2` into normal form.
fn parse_line(line: &str) -> Result<(String, Vec<String>), String> {
    let Some((key, rest)) = line.split_once('=') else {
        return Err("expected `KEY = ALT1, ALT2`".into());
    };
    let key = text::normalize(key);
    if key.is_empty() {
        return Err("empty key".into());
    }
    let mut alternatives: Vec<String> = Vec::new();
    for alt in rest.split(',') {
        let alt = text::normalize(alt);
        if !alt.is_empty() && alt != key && !alternatives.contains(&alt) {
            alternatives.push(alt);
        }
    }
    if alternatives.is_empty() {
        return Err(format!("no alternative for {key:?}"));
    }
    Ok((key, alternatives))
}

/// Whether `key` occurs in `text`. A key that begins with an ASCII letter
/// or digit must begin a word there (`use` is not found in `because`, `log`
/// not in `catalog`); it may end inside one, so a key also finds its
/// inflections (`delete` in `deleted`, `compatib` in `compatible`). Other
/// keys match anywhere: Japanese has no spaces between words.
fn occurs(text: &str, key: &str) -> bool {
    if !key
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric())
    {
        return text.contains(key);
    }
    text.match_indices(key).any(|(i, _)| {
        !text[..i]
            .bytes()
            .next_back()
            .is_some_and(|b| b.is_ascii_alphanumeric())
    })
}

/// Whether every occurrence of `key` in `text` lies inside an occurrence of `longer`.
fn covers_all(text: &str, key: &str, longer: &str) -> bool {
    let spans: Vec<(usize, usize)> = text
        .match_indices(longer)
        .map(|(i, m)| (i, i + m.len()))
        .collect();
    text.match_indices(key)
        .all(|(i, m)| spans.iter().any(|(a, b)| *a <= i && i + m.len() <= *b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(t: &Thesaurus, q: &str) -> Vec<String> {
        t.expansions(q).iter().map(|(k, _)| k.to_string()).collect()
    }

    #[test]
    fn the_embedded_files_parse_without_problems() {
        let mut t = Thesaurus::default();
        assert_eq!(t.add_text(CORE, "core"), Vec::<String>::new());
        assert_eq!(t.add_text(GENERAL, "general"), Vec::<String>::new());
        assert!(t.len() > 500);
        assert_eq!(Thesaurus::builtin(), t);
    }

    #[test]
    fn longest_key_wins() {
        let t = Thesaurus::builtin();
        let k = keys(&t, "保障はいつから始まりますか");
        assert!(k.contains(&"いつから".to_string()));
        assert!(!k.contains(&"いつ".to_string()));
        let k = keys(&t, "いつ払う、いつから");
        assert!(k.contains(&"いつ".to_string()));
    }

    #[test]
    fn english_keys_begin_a_word_and_japanese_keys_match_anywhere() {
        let mut t = Thesaurus::default();
        let problems = t.add_text("log = journal\ndelete = remove\n病気 = 疾病", "test");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(keys(&t, "where is the catalog").is_empty());
        assert_eq!(keys(&t, "read the log"), ["log"]);
        assert_eq!(keys(&t, "(log) output"), ["log"]);
        assert_eq!(keys(&t, "deleted files"), ["delete"]);
        assert_eq!(keys(&t, "undelete files"), Vec::<String>::new());
        assert_eq!(keys(&t, "重い病気になった"), ["病気"]);
    }

    #[test]
    fn lines_are_normalised_merged_and_bad_lines_reported() {
        let mut t = Thesaurus::default();
        let problems = t.add_text(
            "# comment\n\nＰＣ = Computer, 端末\nno equals sign\n = x\nkey = key, ,\npc = terminal, 端末\n",
            "user.txt",
        );
        assert_eq!(
            problems,
            vec![
                "user.txt:4: expected `KEY = ALT1, ALT2`".to_string(),
                "user.txt:5: empty key".to_string(),
                "user.txt:6: no alternative for \"key\"".to_string(),
            ]
        );
        assert_eq!(t.len(), 1);
        let (key, alts) = t.expansions("my pc is slow")[0];
        assert_eq!(key, "pc");
        assert_eq!(alts, ["computer", "端末", "terminal"]);
    }

    #[test]
    fn files_that_cannot_be_read_are_reported() {
        let mut t = Thesaurus::default();
        let problems = t.add_file(Path::new("/nonexistent/thesaurus.txt"));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("/nonexistent/thesaurus.txt: "));
        assert_eq!(t.len(), 0);
    }
}
