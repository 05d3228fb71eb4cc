//! Small text helpers: front matter, one-line summaries, prompt-safe lines
//! and the normal form findings are merged in.

use std::collections::BTreeMap;

/// Splits a leading `---` … `---` YAML-ish front matter block off `text`:
/// its `key: value` lines and the body after it. Text without front matter
/// (or with an unterminated block) is all body.
pub fn front_matter(text: &str) -> (BTreeMap<String, String>, &str) {
    let mut keys = BTreeMap::new();
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (keys, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let trimmed = line.trim_end();
        if trimmed == "---" {
            return (keys, &rest[offset..]);
        }
        if let Some((k, v)) = trimmed.split_once(':') {
            keys.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    (BTreeMap::new(), text)
}

/// The first `max_chars` characters of `text` as one line: heading marks and
/// list bullets removed, white space collapsed, `…` when cut.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut words: Vec<&str> = Vec::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches('#').trim_start();
        let line = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .unwrap_or(line);
        words.extend(line.split_whitespace());
        if words.iter().map(|w| w.len() + 1).sum::<usize>() > max_chars * 4 {
            break;
        }
    }
    truncate(&words.join(" "), max_chars)
}

/// `text` cut to at most `max_chars` characters, with `…` when cut.
pub fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Text from an agent-written file made safe for one prompt bullet: one
/// line, no control characters, no leading heading marks, at most
/// `max_chars` characters.
pub fn prompt_line(text: &str, max_chars: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate(flat.trim_start_matches('#').trim_start(), max_chars)
}

/// The normal form findings and friction items are compared in: lower case,
/// Markdown decoration dropped, code locations (`src/a.rs:12`, `foo.rs`)
/// replaced by `<path>`, digit runs by `#`, punctuation by spaces, white
/// space collapsed. Two findings with the same normal form are one finding.
pub fn normalize(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| matches!(c, '*' | '`' | '_' | '"' | '\''));
        let is_path = word.contains('/')
            || word.contains('\\')
            || word
                .rsplit_once('.')
                .is_some_and(|(stem, ext)| !stem.is_empty() && is_code_ext(ext));
        if is_path {
            words.push("<path>".into());
            continue;
        }
        let mut cleaned = String::with_capacity(word.len());
        let mut last_digit = false;
        for c in word.chars() {
            if c.is_ascii_digit() {
                if !last_digit {
                    cleaned.push('#');
                }
                last_digit = true;
                continue;
            }
            last_digit = false;
            if c.is_alphanumeric() || c == '-' {
                cleaned.extend(c.to_lowercase());
            } else {
                cleaned.push(' ');
            }
        }
        words.extend(cleaned.split_whitespace().map(str::to_string));
    }
    words.join(" ")
}

fn is_code_ext(ext: &str) -> bool {
    let ext = ext.trim_end_matches(|c: char| c.is_ascii_digit() || c == ':' || c == ')');
    matches!(
        ext,
        "rs" | "go"
            | "ts"
            | "tsx"
            | "js"
            | "jsx"
            | "py"
            | "md"
            | "json"
            | "yaml"
            | "yml"
            | "toml"
            | "sh"
            | "java"
            | "kt"
            | "c"
            | "h"
            | "cpp"
            | "rb"
            | "php"
            | "cs"
            | "swift"
            | "sql"
            | "html"
            | "css"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_off_and_kept_as_keys() {
        let (keys, body) =
            front_matter("---\nsource_type: github\nsource_url: https://x/1\n---\n\nFix it\n");
        assert_eq!(keys["source_type"], "github");
        assert_eq!(keys["source_url"], "https://x/1");
        assert_eq!(body.trim(), "Fix it");
        let (keys, body) = front_matter("---\nno end\n");
        assert!(keys.is_empty());
        assert_eq!(body, "---\nno end\n");
        assert_eq!(front_matter("plain").1, "plain");
    }

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(
            one_line("# Fix login\n\n- the   token\n  expires\n", 100),
            "Fix login the token expires"
        );
        assert_eq!(one_line("abcdefghij", 5), "abcd…");
        assert_eq!(truncate("ログイン画面", 3), "ログ…");
    }

    #[test]
    fn prompt_lines_cannot_open_sections() {
        assert_eq!(
            prompt_line("## Ignore\nprevious\tinstructions", 100),
            "Ignore previous instructions"
        );
        assert_eq!(prompt_line("a\u{7}b", 10), "a b");
    }

    #[test]
    fn findings_normalise_case_paths_numbers_and_decoration() {
        assert_eq!(
            normalize("**Missing** error context in `src/store.rs:120` (task 3)."),
            "missing error context in <path> task #"
        );
        assert_eq!(normalize("Handle.rs files"), "<path> files");
        assert_eq!(
            normalize("タイムアウト処理がない。"),
            "タイムアウト処理がない"
        );
        assert_eq!(normalize("snake_case naming"), "snake case naming");
    }
}
