//! The one verdict and finding parser (forge defect A22: validation and
//! transitions used two different detectors, and an unknown verdict counted
//! as approval). Here a review without a clear verdict yields `None`, which
//! the pipeline turns into a question for a person, never an approval.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A review verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// Design or tasks approved.
    Approve,
    /// Approved with minor findings.
    ApproveWithNotes,
    /// Revision required.
    Revise,
    /// Implementation review passed.
    Pass,
    /// Passed with minor findings.
    PassWithNotes,
    /// Implementation review failed.
    Fail,
}

impl Verdict {
    /// The design and task reviews' vocabulary.
    pub const REVIEW: [Verdict; 3] = [Verdict::Approve, Verdict::ApproveWithNotes, Verdict::Revise];
    /// The implementation review's vocabulary.
    pub const IMPL_REVIEW: [Verdict; 3] = [Verdict::Pass, Verdict::PassWithNotes, Verdict::Fail];

    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "APPROVE",
            Verdict::ApproveWithNotes => "APPROVE_WITH_NOTES",
            Verdict::Revise => "REVISE",
            Verdict::Pass => "PASS",
            Verdict::PassWithNotes => "PASS_WITH_NOTES",
            Verdict::Fail => "FAIL",
        }
    }

    /// Whether the verdict lets the work go forward.
    pub fn is_positive(self) -> bool {
        !matches!(self, Verdict::Revise | Verdict::Fail)
    }

    /// Whether the verdict lets the work go forward with findings to note.
    pub fn has_notes(self) -> bool {
        matches!(self, Verdict::ApproveWithNotes | Verdict::PassWithNotes)
    }

    /// The verdicts among `words` (a phase's `verdicts`), in their order.
    /// A word outside the vocabulary is left out (the definition's
    /// validation refuses it where a review file is read).
    pub fn vocabulary(words: &[String]) -> Vec<Verdict> {
        words.iter().filter_map(|w| Verdict::from_word(w)).collect()
    }

    fn from_word(word: &str) -> Option<Verdict> {
        [
            Verdict::Approve,
            Verdict::ApproveWithNotes,
            Verdict::Revise,
            Verdict::Pass,
            Verdict::PassWithNotes,
            Verdict::Fail,
        ]
        .into_iter()
        .find(|v| v.as_str() == word)
    }
}

/// Severity of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Severity {
    /// Must be fixed.
    Critical,
    /// Should be fixed.
    Minor,
}

/// One review finding (seed 001's `findings[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// CRITICAL or MINOR.
    pub severity: Severity,
    /// The finding's title.
    pub description: String,
}

/// What a review artifact says.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, JsonSchema)]
pub struct ParsedReview {
    /// The verdict; `None` when absent, not in the vocabulary, or contradictory.
    pub verdict: Option<Verdict>,
    /// Why there is no verdict, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Every finding, in order.
    pub findings: Vec<Finding>,
}

/// The word after `Verdict:` with light decoration removed (`**APPROVE**`, `APPROVE.`, `` `PASS` ``).
fn verdict_word(rest: &str) -> Option<&str> {
    rest.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| matches!(c, '*' | '`' | '.' | ',' | ';' | '!' | '"' | '\''))
        })
        .find(|w| !w.is_empty())
}

/// Parses a review artifact against the allowed vocabulary.
///
/// * Heading lines `# Verdict: X` / `## Verdict: X` are authoritative; the
///   inline form `Verdict: X` counts only when no heading names a verdict.
/// * Several verdict lines that disagree make the verdict `None` (a person decides).
/// * A verdict outside `allowed` is `None`.
/// * Findings: `**n. [CRITICAL] title**` or `**[MINOR] title**` on any line.
pub fn parse_review(text: &str, allowed: &[Verdict]) -> ParsedReview {
    let mut headings: Vec<&str> = Vec::new();
    let mut inline: Vec<&str> = Vec::new();
    let mut findings = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        let stripped = line.trim_start_matches('#');
        let hashes = line.len() - stripped.len();
        let body = stripped.trim_start().trim_start_matches("**").trim_start();
        if let Some(rest) = body
            .strip_prefix("Verdict:")
            .or_else(|| body.strip_prefix("Verdict**:"))
            .or_else(|| body.strip_prefix("VERDICT:"))
            && let Some(word) = verdict_word(rest)
        {
            if (1..=3).contains(&hashes) {
                headings.push(word);
            } else if hashes == 0 {
                inline.push(word);
            }
        }
        if let Some(f) = finding(line) {
            findings.push(f);
        }
    }
    let words = if headings.is_empty() {
        inline
    } else {
        headings
    };
    let mut distinct: Vec<&str> = Vec::new();
    for w in &words {
        if !distinct.contains(w) {
            distinct.push(w);
        }
    }
    let (verdict, problem) = match distinct.as_slice() {
        [] => (None, Some("no verdict line found".to_string())),
        [one] => match Verdict::from_word(one).filter(|v| allowed.contains(v)) {
            Some(v) => (Some(v), None),
            None => (
                None,
                Some(format!(
                    "verdict {one:?} is not one of {}",
                    allowed
                        .iter()
                        .map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ),
        },
        many => (
            None,
            Some(format!("contradictory verdicts: {}", many.join(", "))),
        ),
    };
    ParsedReview {
        verdict,
        problem,
        findings,
    }
}

fn finding(line: &str) -> Option<Finding> {
    let start = line.find("**")?;
    let rest = &line[start + 2..];
    let end = rest.find("**")?;
    let inner = rest[..end].trim();
    // Optional "n." before the severity tag.
    let inner = match inner.split_once(' ') {
        Some((n, tail))
            if n.ends_with('.') && n[..n.len() - 1].bytes().all(|b| b.is_ascii_digit()) =>
        {
            tail.trim()
        }
        _ => inner,
    };
    let (severity, title) = if let Some(t) = inner.strip_prefix("[CRITICAL]") {
        (Severity::Critical, t)
    } else if let Some(t) = inner.strip_prefix("[MINOR]") {
        (Severity::Minor, t)
    } else {
        return None;
    };
    let title = title.trim();
    (!title.is_empty()).then(|| Finding {
        severity,
        description: title.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_verdicts_win_and_findings_are_collected() {
        let text = "## Orchestrator Summary\nLooks fine. Verdict: REVISE was considered.\n\n## Verdict: APPROVE_WITH_NOTES\n\n## Findings\n**1. [MINOR] Name the error type**\nFix: …\n**2. [MINOR] Add a test**\n";
        let r = parse_review(text, &Verdict::REVIEW);
        assert_eq!(r.verdict, Some(Verdict::ApproveWithNotes));
        assert_eq!(
            r.findings,
            [
                Finding {
                    severity: Severity::Minor,
                    description: "Name the error type".into()
                },
                Finding {
                    severity: Severity::Minor,
                    description: "Add a test".into()
                },
            ]
        );
    }

    #[test]
    fn inline_verdicts_count_only_without_a_heading_and_decoration_is_tolerated() {
        assert_eq!(
            parse_review("Verdict: **PASS**\n", &Verdict::IMPL_REVIEW).verdict,
            Some(Verdict::Pass)
        );
        assert_eq!(
            parse_review("# Verdict: FAIL.\n", &Verdict::IMPL_REVIEW).verdict,
            Some(Verdict::Fail)
        );
        assert_eq!(
            parse_review("**Verdict:** REVISE\n", &Verdict::REVIEW).verdict,
            Some(Verdict::Revise)
        );
    }

    #[test]
    fn missing_foreign_or_contradictory_verdicts_are_none_never_approval() {
        let none = parse_review("Everything APPROVE looks good", &Verdict::REVIEW);
        assert_eq!(none.verdict, None);
        assert_eq!(none.problem.as_deref(), Some("no verdict line found"));
        let foreign = parse_review("## Verdict: PASS\n", &Verdict::REVIEW);
        assert_eq!(foreign.verdict, None);
        assert!(foreign.problem.unwrap().contains("not one of APPROVE"));
        let both = parse_review(
            "## Verdict: APPROVE\n## Verdict: REVISE\n",
            &Verdict::REVIEW,
        );
        assert_eq!(both.verdict, None);
        assert!(both.problem.unwrap().contains("contradictory"));
        let lower = parse_review("## Verdict: approve\n", &Verdict::REVIEW);
        assert_eq!(lower.verdict, None, "verdict words are exact");
    }

    #[test]
    fn findings_need_a_tag_and_a_title() {
        let r = parse_review(
            "**[CRITICAL] Missing error handling for timeouts**\n**3. [MINOR]**\n**Bold text**\n",
            &Verdict::REVIEW,
        );
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].severity, Severity::Critical);
    }

    #[test]
    fn the_vocabulary_is_the_one_definitions_are_validated_against() {
        let all = Verdict::vocabulary(&baton_workflow::VERDICT_WORDS.map(String::from));
        assert_eq!(all.len(), baton_workflow::VERDICT_WORDS.len());
        for (v, w) in all.iter().zip(baton_workflow::VERDICT_WORDS) {
            assert_eq!(v.as_str(), w);
        }
        let forge = baton_workflow::Registry::builtin().get("forge").unwrap();
        assert_eq!(
            Verdict::vocabulary(&forge.phase("phase-3b").unwrap().verdicts),
            Verdict::REVIEW
        );
        assert_eq!(
            Verdict::vocabulary(&forge.phase("phase-6").unwrap().verdicts),
            Verdict::IMPL_REVIEW
        );
        assert_eq!(
            Verdict::vocabulary(&["LGTM".into(), "REVISE".into()]),
            [Verdict::Revise]
        );
    }
}
