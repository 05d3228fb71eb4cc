//! Paths as the scope rules see them: lexical normalisation (no file
//! system) and the `*` / `**` patterns of `protected` lists.

/// `path` with `.` and `..` removed lexically and `\` kept as is; `None`
/// when `..` climbs above the start (the path leaves the base).
pub fn normalise(path: &str) -> Option<String> {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    Some(if absolute {
        format!("/{joined}")
    } else {
        joined
    })
}

/// Whether `path` (relative, normalised) matches `pattern`: `*` matches
/// within one folder, `**` across folders (also none), anything else
/// literally.
pub fn matches(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    let path: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match_parts(&pattern, &path)
}

fn match_parts(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| match_parts(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((name, tail)) => match_segment(first, name) && match_parts(rest, tail),
            None => false,
        },
    }
}

/// `*` within one name (any run of characters, none included).
fn match_segment(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Whether `path` is `dir` or inside it (both normalised).
pub fn is_within(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    path == dir || path.starts_with(&format!("{dir}/")) || dir.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_removes_dots_and_refuses_to_climb_out() {
        assert_eq!(normalise("a/./b/../c").as_deref(), Some("a/c"));
        assert_eq!(normalise("/x//y/").as_deref(), Some("/x/y"));
        assert_eq!(normalise("../x"), None);
        assert_eq!(normalise("a/../../x"), None);
    }

    #[test]
    fn patterns_match_within_and_across_folders() {
        assert!(matches(".claude/**", ".claude/settings.json"));
        assert!(matches(".claude/**", ".claude"));
        assert!(matches(".specs/*/state.json", ".specs/2026-x/state.json"));
        assert!(!matches(".specs/*/state.json", ".specs/a/b/state.json"));
        assert!(matches(".specs/*/.state*", ".specs/w/.state.live.json"));
        assert!(matches(".mcp.json", ".mcp.json"));
        assert!(!matches(".mcp.json", "x/.mcp.json"));
        assert!(matches("**/*.rs", "src/a/b.rs"));
        assert!(!matches("src/*", "src/a/b.rs"));
    }

    #[test]
    fn within_a_folder() {
        assert!(is_within("src/a.rs", "src"));
        assert!(is_within("src", "src"));
        assert!(!is_within("srcx/a", "src"));
    }
}
