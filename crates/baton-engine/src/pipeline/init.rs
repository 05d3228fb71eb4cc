//! `pipeline_init` and `pipeline_init_with_context` decisions: pure functions
//! of their inputs (and, for resume detection, of what the caller says exists).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Minimum length of a plain-text task, in characters (seed 001's error text).
pub const MIN_TASK_CHARS: usize = 3;
/// Longest raw `arguments` accepted.
pub const MAX_ARGUMENTS: usize = 16 * 1024;
/// Longest slug.
pub const MAX_SLUG: usize = 60;

/// Where the task comes from (seed 001 `source_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    /// `https://github.com/{owner}/{repo}/issues/{n}`.
    GithubIssue,
    /// `https://{org}.atlassian.net/browse/{KEY}-{n}`.
    JiraIssue,
    /// `https://linear.app/{org}/issue/{KEY}-{n}`.
    LinearIssue,
    /// Plain text (the default).
    Text,
    /// An existing workspace (`.specs/…`).
    Workspace,
}

impl SourceType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::GithubIssue => "github_issue",
            SourceType::JiraIssue => "jira_issue",
            SourceType::LinearIssue => "linear_issue",
            SourceType::Text => "text",
            SourceType::Workspace => "workspace",
        }
    }
}

/// Flags parsed from the raw arguments.
///
/// As an argument (echoed back to `pipeline_init_with_context`) a missing
/// flag is false and an unknown one is refused, so a misspelt flag is never
/// silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Flags {
    /// `--auto`.
    pub auto: bool,
    /// `--nopr`.
    pub skip_pr: bool,
    /// `--debug`.
    pub debug: bool,
    /// `--discuss`.
    pub discuss: bool,
    /// `--effort=S|M|L`.
    pub effort_override: Option<String>,
    /// The caller's current git branch (null when not given).
    pub current_branch: Option<String>,
}

/// The parsed raw arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedInput {
    /// Flags.
    pub flags: Flags,
    /// The task text without flags.
    pub core_text: String,
    /// The classified source.
    pub source_type: SourceType,
    /// The issue id for URL sources ("42", "SOA-123").
    pub source_id: Option<String>,
    /// The URL for URL sources.
    pub source_url: Option<String>,
}

/// Parses and validates the raw `/baton`-style argument string.
/// Errors are the human-readable texts of seed 001's error path.
pub fn parse_arguments(arguments: &str) -> Result<ParsedInput, Vec<String>> {
    if arguments.len() > MAX_ARGUMENTS {
        return Err(vec![format!(
            "input too long: at most {MAX_ARGUMENTS} bytes are accepted"
        )]);
    }
    let mut flags = Flags::default();
    let mut errors = Vec::new();
    let mut core: Vec<&str> = Vec::new();
    for token in arguments.split_whitespace() {
        match token {
            "--auto" => flags.auto = true,
            "--nopr" => flags.skip_pr = true,
            "--debug" => flags.debug = true,
            "--discuss" => flags.discuss = true,
            "--resume" => {}
            t if t.starts_with("--effort=") => {
                let value = &t["--effort=".len()..];
                match value {
                    "S" | "M" | "L" => {
                        if flags.effort_override.is_none() {
                            flags.effort_override = Some(value.to_string());
                        }
                    }
                    _ => errors.push(format!(
                        "invalid effort {value:?}: valid efforts are S, M, L"
                    )),
                }
            }
            t => core.push(t),
        }
    }
    let core_text = core.join(" ");
    if !errors.is_empty() {
        return Err(errors);
    }
    if core_text.is_empty() {
        return Err(vec![if arguments.trim().is_empty() {
            "input is empty: describe the task, or give a GitHub, Jira or Linear issue URL"
                .to_string()
        } else {
            "only flags were given: add the task description after the flags".to_string()
        }]);
    }
    let (source_type, source_id, source_url) = classify(&core_text)?;
    if source_type == SourceType::Text && core_text.chars().count() < MIN_TASK_CHARS {
        return Err(vec![format!(
            "input too short: minimum {MIN_TASK_CHARS} characters required"
        )]);
    }
    Ok(ParsedInput {
        flags,
        core_text,
        source_type,
        source_id,
        source_url,
    })
}

type Classified = (SourceType, Option<String>, Option<String>);

/// Classifies the core text: issue URLs, workspaces, text.
pub fn classify(core: &str) -> Result<Classified, Vec<String>> {
    if core.starts_with("http://") || core.starts_with("https://") {
        let url = core.split_whitespace().next().unwrap_or(core);
        let rest = url.strip_prefix("https://").unwrap_or("");
        let segments: Vec<&str> = rest.split('/').collect();
        let host = segments.first().copied().unwrap_or("");
        if host == "github.com" {
            // github.com/{owner}/{repo}/issues/{n}
            return match segments.as_slice() {
                [_, owner, repo, "issues", n, ..]
                    if !owner.is_empty() && !repo.is_empty() && is_digits(n) =>
                {
                    Ok((SourceType::GithubIssue, Some(n.to_string()), Some(url.to_string())))
                }
                _ => Err(vec!["invalid GitHub URL: expected https://github.com/{owner}/{repo}/issues/{number}".into()]),
            };
        }
        if host.ends_with(".atlassian.net") && host.len() > ".atlassian.net".len() {
            return match segments.as_slice() {
                [_, "browse", key, ..] if is_issue_key(key) => Ok((
                    SourceType::JiraIssue,
                    Some(key.to_string()),
                    Some(url.to_string()),
                )),
                _ => Err(vec![
                    "invalid Jira URL: expected https://{org}.atlassian.net/browse/{KEY}-{number}"
                        .into(),
                ]),
            };
        }
        if host == "linear.app" {
            return match segments.as_slice() {
                [_, org, "issue", key, ..] if !org.is_empty() && is_issue_key(key) => Ok((
                    SourceType::LinearIssue,
                    Some(key.to_string()),
                    Some(url.to_string()),
                )),
                _ => Err(vec![
                    "invalid Linear URL: expected https://linear.app/{org}/issue/{KEY}-{number}"
                        .into(),
                ]),
            };
        }
        return Err(vec![
            "unrecognised URL: supported are https://github.com/{owner}/{repo}/issues/{number}, https://{org}.atlassian.net/browse/{KEY}-{number}, https://linear.app/{org}/issue/{KEY}-{number}".into(),
        ]);
    }
    if core.contains(".specs/") {
        return Ok((SourceType::Workspace, None, None));
    }
    Ok((SourceType::Text, None, None))
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `KEY-123`: upper-case letters, a hyphen, digits.
fn is_issue_key(s: &str) -> bool {
    match s.split_once('-') {
        Some((key, n)) => {
            !key.is_empty() && key.bytes().all(|b| b.is_ascii_uppercase()) && is_digits(n)
        }
        None => false,
    }
}

/// Lower-case; every run of characters outside `[a-z0-9]` becomes one `-`;
/// trimmed; cut to `max` bytes at most; empty → `task`.
pub fn slugify(text: &str, max: usize) -> String {
    let mut slug = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let mut slug = slug.trim_matches('-').to_string();
    if slug.len() > max {
        slug.truncate(max);
        slug = slug.trim_end_matches('-').to_string();
    }
    if slug.is_empty() {
        "task".to_string()
    } else {
        slug
    }
}

/// Keywords that suggest a large change (substring match, lower-cased).
const LARGE: &[&str] = &[
    "migration",
    "new service",
    "new api",
    "new endpoint",
    "redesign",
    "architecture",
    "rewrite",
];
/// Keywords that suggest a small change.
const SMALL: &[&str] = &[
    "validation",
    "required",
    "optional",
    "rename",
    "typo",
    "label",
    "message",
    "toggle",
    "flag",
    "visibility",
    "hide",
    "show",
    "enable",
    "disable",
];

/// Effort detection, first match wins: the override; story points (≤ 4 S,
/// ≤ 12 M, else L); large keywords → L; small keywords → S; else M.
pub fn detect_effort(
    effort_override: Option<&str>,
    story_points: Option<f64>,
    text: &str,
) -> String {
    if let Some(e) = effort_override.filter(|e| matches!(*e, "S" | "M" | "L")) {
        return e.to_string();
    }
    if let Some(points) = story_points.filter(|p| *p >= 1.0) {
        return if points <= 4.0 {
            "S"
        } else if points <= 12.0 {
            "M"
        } else {
            "L"
        }
        .to_string();
    }
    let lower = text.to_lowercase();
    if LARGE.iter().any(|k| lower.contains(k)) {
        return "L".to_string();
    }
    if SMALL.iter().any(|k| lower.contains(k)) {
        return "S".to_string();
    }
    "M".to_string()
}

/// Branch type keywords, in priority order (fix > refactor > docs > chore).
const BRANCH_RULES: &[(&str, &[&str])] = &[
    (
        "fix",
        &[
            "bug",
            "bugs",
            "fix",
            "fixes",
            "defect",
            "defects",
            "hotfix",
            "hotfixes",
            "bugfix",
            "bugfixes",
            "バグ",
            "修正",
            "不具合",
            "障害",
            "fehler",
            "correctif",
            "bogue",
        ],
    ),
    (
        "refactor",
        &[
            "refactor",
            "refactors",
            "refactoring",
            "restructure",
            "restructures",
            "restructuring",
            "reorganize",
            "reorganizes",
            "reorganizing",
            "リファクタ",
            "再構成",
            "構造改善",
            "refaktorierung",
            "umstrukturierung",
            "refactorisation",
            "restructuration",
        ],
    ),
    (
        "docs",
        &[
            "documentation",
            "readme",
            "readmes",
            "docs",
            "ドキュメント",
            "文書",
            "資料",
            "dokumentation",
        ],
    ),
    (
        "chore",
        &[
            "dependency",
            "dependencies",
            "upgrade",
            "upgrades",
            "migration",
            "migrations",
            "config",
            "configs",
            "configuration",
            "依存",
            "アップグレード",
            "移行",
            "設定",
            "abhängigkeit",
            "dépendance",
        ],
    ),
];

/// The branch type for a text: ASCII keywords on word boundaries, others as
/// substrings; `feature` by default.
pub fn classify_branch(content: &str) -> &'static str {
    let lower = content.to_lowercase();
    for (kind, words) in BRANCH_RULES {
        if words.iter().any(|w| contains_word(&lower, w)) {
            return kind;
        }
    }
    "feature"
}

fn contains_word(haystack: &str, word: &str) -> bool {
    if !word.is_ascii() {
        return haystack.contains(word);
    }
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    haystack.match_indices(word).any(|(i, _)| {
        let before = haystack[..i].chars().next_back();
        let after = haystack[i + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// `<type>/<spec name>` with the date prefix removed, cut at 60 characters on a hyphen.
pub fn branch_name(spec_name: &str, content: &str) -> String {
    let kind = if content.trim().is_empty() {
        "feature"
    } else {
        classify_branch(content)
    };
    let mut name = slugify(spec_name, usize::MAX);
    if name.len() > MAX_SLUG {
        let cut = &name[..MAX_SLUG];
        name = match cut.rfind('-') {
            Some(i) if i > 0 => cut[..i].to_string(),
            _ => cut.to_string(),
        };
    }
    format!("{kind}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_parsed_and_stripped() {
        let p = parse_arguments("--auto fix the login timeout --nopr --effort=S --debug").unwrap();
        assert_eq!(p.core_text, "fix the login timeout");
        assert!(p.flags.auto && p.flags.skip_pr && p.flags.debug && !p.flags.discuss);
        assert_eq!(p.flags.effort_override.as_deref(), Some("S"));
        assert_eq!(p.source_type, SourceType::Text);
    }

    #[test]
    fn the_seed_error_path_texts() {
        assert_eq!(
            parse_arguments("ab").unwrap_err(),
            ["input too short: minimum 3 characters required"]
        );
        assert!(parse_arguments("   ").unwrap_err()[0].starts_with("input is empty"));
        assert!(parse_arguments("--auto --nopr").unwrap_err()[0].starts_with("only flags"));
        assert!(parse_arguments("do it --effort=XS").unwrap_err()[0].contains("\"XS\""));
        assert!(
            parse_arguments("日本語").is_ok(),
            "three characters, not bytes"
        );
    }

    #[test]
    fn issue_urls_are_classified_with_their_ids() {
        let g = parse_arguments("https://github.com/owner/repo/issues/42").unwrap();
        assert_eq!(
            (g.source_type, g.source_id.as_deref()),
            (SourceType::GithubIssue, Some("42"))
        );
        let j = parse_arguments("https://acme.atlassian.net/browse/SOA-123").unwrap();
        assert_eq!(
            (j.source_type, j.source_id.as_deref()),
            (SourceType::JiraIssue, Some("SOA-123"))
        );
        let l = parse_arguments("https://linear.app/acme/issue/ENG-7/some-title").unwrap();
        assert_eq!(
            (l.source_type, l.source_id.as_deref()),
            (SourceType::LinearIssue, Some("ENG-7"))
        );
        assert!(parse_arguments("https://github.com/owner/repo/pull/42").is_err());
        assert!(parse_arguments("https://example.com/x").is_err());
        assert!(parse_arguments("http://github.com/owner/repo/issues/42").is_err());
        let w = parse_arguments(".specs/20260330-fix-auth").unwrap();
        assert_eq!(w.source_type, SourceType::Workspace);
    }

    #[test]
    fn slugs_follow_the_rules() {
        assert_eq!(slugify("Fix Auth  Timeout!", 60), "fix-auth-timeout");
        assert_eq!(
            slugify("https://github.com/owner/repo/issues/42", 60),
            "https-github-com-owner-repo-issues-42"
        );
        assert_eq!(slugify("SOA-2896 アラート通知", 60), "soa-2896");
        assert_eq!(slugify("日本語だけ", 60), "task");
        assert_eq!(slugify(&"ab-".repeat(40), 60).len(), 59);
    }

    #[test]
    fn effort_detection_precedence() {
        assert_eq!(detect_effort(Some("L"), Some(2.0), "typo"), "L");
        assert_eq!(
            detect_effort(Some("Q"), Some(2.0), ""),
            "S",
            "invalid overrides are ignored"
        );
        assert_eq!(detect_effort(None, Some(4.0), "rewrite"), "S");
        assert_eq!(detect_effort(None, Some(12.0), ""), "M");
        assert_eq!(detect_effort(None, Some(13.0), ""), "L");
        assert_eq!(
            detect_effort(None, None, "Database MIGRATION and typo"),
            "L"
        );
        assert_eq!(detect_effort(None, None, "fix a typo"), "S");
        assert_eq!(detect_effort(None, None, "implement login feature"), "M");
    }

    #[test]
    fn branches_are_classified_on_word_boundaries() {
        assert_eq!(classify_branch("Fix the login bug"), "fix");
        assert_eq!(
            classify_branch("add a prefix option"),
            "feature",
            "prefix is not fix"
        );
        assert_eq!(classify_branch("ログインの不具合"), "fix");
        assert_eq!(classify_branch("refactoring the parser"), "refactor");
        assert_eq!(classify_branch("update README"), "docs");
        assert_eq!(classify_branch("upgrade dependencies"), "chore");
        assert_eq!(
            branch_name("42-fix-auth-timeout", "bug: auth times out"),
            "fix/42-fix-auth-timeout"
        );
        assert_eq!(branch_name("login", ""), "feature/login");
        let long = "a-".repeat(40) + "end";
        assert!(branch_name(&long, "x").len() <= "feature/".len() + 60);
    }
}
