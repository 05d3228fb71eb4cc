//! The friction map: the `## Improvement Report` the final-summary agent
//! writes (crates/baton-workflow/agents/verifier.md), parsed into items and
//! merged across runs like review findings (docs/history.md §6).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::merge::{Group, cluster, sort_groups, to_weight};
use crate::record::FrictionRecord;
use crate::text::normalize;

/// The categories the verifier writes, in its order.
pub const CATEGORIES: [&str; 4] = [
    "Documentation",
    "Code Readability",
    "AI Agent Support",
    "Other",
];

/// Longest problem or improvement text kept, in characters.
pub const MAX_ITEM_CHARS: usize = 300;

/// The items of the improvement report in `summary` (the section headed
/// `Improvement Report`, to the next heading of the same or a higher level).
pub fn from_summary(summary: &str) -> Vec<FrictionRecord> {
    let lines: Vec<&str> = summary.lines().collect();
    let Some((start, level)) = lines.iter().enumerate().find_map(|(i, l)| {
        let (level, title) = heading(l)?;
        (level <= 3 && title.to_lowercase().starts_with("improvement report")).then_some((i, level))
    }) else {
        return Vec::new();
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| heading(l).is_some_and(|(lv, _)| lv <= level))
        .map_or(lines.len(), |p| start + 1 + p);
    items(&lines[start + 1..end])
}

/// The items of a stand-alone report (forge's `improvement.md`): every
/// heading names a category.
pub fn from_report(report: &str) -> Vec<FrictionRecord> {
    let lines: Vec<&str> = report.lines().collect();
    items(&lines)
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start();
    let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &trimmed[hashes..];
    if !rest.starts_with(' ') && !rest.is_empty() {
        return None;
    }
    Some((hashes, rest.trim().trim_matches('*').trim()))
}

fn category(title: &str) -> String {
    let lower = title.to_lowercase();
    CATEGORIES
        .iter()
        .find(|c| lower.starts_with(&c.to_lowercase()))
        .map(|c| c.to_string())
        .unwrap_or_else(|| crate::text::prompt_line(title, 60))
}

fn items(lines: &[&str]) -> Vec<FrictionRecord> {
    let mut out: Vec<FrictionRecord> = Vec::new();
    let mut current = "Other".to_string();
    for raw in lines {
        if let Some((_, title)) = heading(raw) {
            current = category(title);
            continue;
        }
        let indented = raw.starts_with("  ") || raw.starts_with('\t');
        let line = raw.trim();
        let Some(body) = bullet(line) else {
            continue;
        };
        // A nested `Mitigation:`/`Suggestion:` bullet completes the item above.
        if indented
            && let Some(last) = out.last_mut()
            && let Some(fix) = labelled(body)
        {
            if last.improvement.is_empty() {
                last.improvement = crate::text::prompt_line(fix, MAX_ITEM_CHARS);
            }
            continue;
        }
        if is_none(body) {
            continue;
        }
        let (problem, improvement) = split_item(body);
        if problem.is_empty() {
            continue;
        }
        out.push(FrictionRecord {
            category: current.clone(),
            problem: crate::text::prompt_line(problem, MAX_ITEM_CHARS),
            improvement: crate::text::prompt_line(improvement, MAX_ITEM_CHARS),
        });
    }
    out
}

fn bullet(line: &str) -> Option<&str> {
    if let Some(rest) = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))
    {
        return Some(rest.trim());
    }
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 {
        let rest = &line[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(r.trim());
        }
    }
    None
}

fn labelled(body: &str) -> Option<&str> {
    let lower = body.to_lowercase();
    ["mitigation:", "suggestion:", "improvement:", "fix:"]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map(|p| body[p.len()..].trim())
}

fn is_none(body: &str) -> bool {
    matches!(
        normalize(body).as_str(),
        "none" | "none observed" | "nothing observed" | "n a" | "なし" | "特になし"
    )
}

/// `problem — improvement` (also `--`, `–`, `->`, `→`).
fn split_item(body: &str) -> (&str, &str) {
    let body = body.trim_matches('*').trim();
    for sep in [" — ", " -- ", " – ", " -> ", " → ", "—"] {
        if let Some((p, i)) = body.split_once(sep) {
            return (p.trim(), i.trim());
        }
    }
    (body, "")
}

/// One friction item seen in past runs, for merging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrictionObservation {
    /// The item.
    pub item: FrictionRecord,
    /// Recency weight in millionths.
    pub weight: u64,
    /// Recency rank: larger is newer.
    pub seen: u64,
    /// The run.
    pub run: String,
}

/// Friction items merged across runs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FrictionPoint {
    /// Category.
    pub category: String,
    /// The problem, in its most weighty wording.
    pub problem: String,
    /// The most weighty suggested improvement ("" when none was given).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub improvement: String,
    /// Runs that reported it.
    pub count: u32,
    /// The recency-weighted count.
    pub weight: f64,
    /// The newest run that reported it.
    pub last_seen: String,
}

/// Merges friction items by category and problem similarity, heaviest first.
pub fn merge(observations: &[FrictionObservation]) -> Vec<FrictionPoint> {
    let mut by_category: HashMap<&str, Vec<&FrictionObservation>> = HashMap::new();
    for o in observations {
        by_category
            .entry(o.item.category.as_str())
            .or_default()
            .push(o);
    }
    let mut points = Vec::new();
    for (cat, members) in by_category {
        let mut groups: HashMap<String, Vec<&FrictionObservation>> = HashMap::new();
        for o in members {
            let norm = normalize(&o.item.problem);
            if !norm.is_empty() {
                groups.entry(norm).or_default().push(o);
            }
        }
        let mut sorted: Vec<Group> = groups
            .iter()
            .map(|(norm, m)| Group {
                norm: norm.clone(),
                weight: m.iter().map(|o| o.weight).sum(),
                count: m.len() as u32,
            })
            .collect();
        sort_groups(&mut sorted);
        let assignment = cluster(&sorted);
        let mut clusters: Vec<Vec<&FrictionObservation>> = Vec::new();
        for (g, c) in sorted.iter().zip(&assignment) {
            if *c >= clusters.len() {
                clusters.resize_with(c + 1, Vec::new);
            }
            clusters[*c].extend(groups[&g.norm].iter().copied());
        }
        for (i, members) in clusters.into_iter().enumerate() {
            if members.is_empty() {
                continue;
            }
            let head = &sorted[assignment.iter().position(|c| *c == i).unwrap_or(0)].norm;
            points.push(point(cat, head, &members));
        }
    }
    points.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.category.cmp(&b.category))
            .then_with(|| a.problem.cmp(&b.problem))
    });
    points
}

fn heaviest<'a>(texts: impl Iterator<Item = (&'a str, u64)>) -> String {
    let mut sums: HashMap<&str, u64> = HashMap::new();
    for (t, w) in texts {
        *sums.entry(t).or_default() += w;
    }
    sums.into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(t, _)| t.to_string())
        .unwrap_or_default()
}

fn point(category: &str, head: &str, members: &[&FrictionObservation]) -> FrictionPoint {
    let problem = heaviest(
        members
            .iter()
            .filter(|o| normalize(&o.item.problem) == head)
            .map(|o| (o.item.problem.as_str(), o.weight)),
    );
    let improvement = heaviest(
        members
            .iter()
            .filter(|o| !o.item.improvement.is_empty())
            .map(|o| (o.item.improvement.as_str(), o.weight)),
    );
    let newest = members
        .iter()
        .max_by(|a, b| a.seen.cmp(&b.seen).then_with(|| b.run.cmp(&a.run)))
        .map(|o| o.run.clone())
        .unwrap_or_default();
    FrictionPoint {
        category: category.to_string(),
        problem,
        improvement,
        count: members.len() as u32,
        weight: to_weight(members.iter().map(|o| o.weight).sum()),
        last_seen: newest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = "# Fix login\n\n## Process\n- review-design: APPROVE\n\n## Improvement Report\n### Documentation\n- The README does not say how to run the e2e tests — document `make e2e`\n### Code Readability\nNone observed.\n### AI Agent Support\n- The test command was hard to find -- add it to CLAUDE.md\n- Flaky network test\n  - Mitigation: mark it #[ignore]\n### Other\n- None observed.\n\n## Appendix\n- not part of the report\n";

    #[test]
    fn the_report_section_is_parsed_into_items() {
        let items = from_summary(SUMMARY);
        assert_eq!(items.len(), 3, "{items:#?}");
        assert_eq!(items[0].category, "Documentation");
        assert_eq!(
            items[0].problem,
            "The README does not say how to run the e2e tests"
        );
        assert_eq!(items[0].improvement, "document `make e2e`");
        assert_eq!(items[1].category, "AI Agent Support");
        assert_eq!(items[1].improvement, "add it to CLAUDE.md");
        assert_eq!(items[2].problem, "Flaky network test");
        assert_eq!(items[2].improvement, "mark it #[ignore]");
        assert!(from_summary("# No report here\n- a — b\n").is_empty());
    }

    #[test]
    fn forge_reports_use_headings_as_categories() {
        let items =
            from_report("# Improvement\n## Documentation\n- Missing API docs → write them\n");
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].category, "Documentation");
        assert_eq!(items[0].improvement, "write them");
    }

    fn fo(cat: &str, problem: &str, fix: &str, weight: u64, seen: u64) -> FrictionObservation {
        FrictionObservation {
            item: FrictionRecord {
                category: cat.into(),
                problem: problem.into(),
                improvement: fix.into(),
            },
            weight,
            seen,
            run: format!("r{seen}"),
        }
    }

    #[test]
    fn similar_problems_merge_within_a_category() {
        let points = merge(&[
            fo(
                "AI Agent Support",
                "The test command was hard to find",
                "add it to CLAUDE.md",
                100,
                1,
            ),
            fo(
                "AI Agent Support",
                "the test command was hard to find.",
                "",
                300,
                3,
            ),
            fo(
                "Documentation",
                "The test command was hard to find",
                "",
                50,
                2,
            ),
        ]);
        assert_eq!(points.len(), 2, "{points:#?}");
        assert_eq!(points[0].count, 2);
        assert_eq!(points[0].problem, "the test command was hard to find.");
        assert_eq!(points[0].improvement, "add it to CLAUDE.md");
        assert_eq!(points[0].last_seen, "r3");
        assert_eq!(points[1].category, "Documentation");
    }
}
