//! Layer 4 of an agent prompt (seed 001 "Data Flywheel"): which past-run
//! knowledge each agent gets, rendered as prompt blocks within a budget
//! (docs/history.md §7).

use baton_engine::completion::verdict::Severity;
use baton_engine::pipeline::prompt::LearningBlock;

use crate::friction::FrictionPoint;
use crate::merge::{Pattern, to_weight};
use crate::similar::SimilarRun;
use crate::text::{prompt_line, truncate};

/// Seed 001's subsection titles.
pub const SIMILAR_HEADING: &str = "Similar Past Pipelines";
/// Seed 001's subsection titles.
pub const PATTERNS_HEADING: &str = "Past Review Patterns";
/// Seed 001's subsection titles.
pub const FRICTION_HEADING: &str = "AI Friction Points";

/// A Layer-4 budget that leaves most of the prompt budget to Layers 1–3.
pub const DEFAULT_LAYER4_BUDGET_TOKENS: usize = 1200;

/// Longest rendered line, in characters.
pub const MAX_LINE_CHARS: usize = 320;

/// One kind of knowledge an agent gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// The `n` most similar past runs.
    Similar(usize),
    /// Review patterns: of one reviewing agent (all reviewers when `None`,
    /// or when that agent has none), CRITICAL findings only or all, at most `n`.
    Patterns {
        /// The reviewing agent.
        agent: Option<String>,
        /// Only CRITICAL findings.
        critical_only: bool,
        /// At most this many.
        n: usize,
    },
    /// The `n` heaviest friction points.
    Friction(usize),
}

/// What an agent gets, most important first (docs/history.md §7 table).
pub fn plan(agent: &str) -> Vec<Want> {
    let patterns = |agent: Option<&str>, critical_only: bool, n: usize| Want::Patterns {
        agent: agent.map(str::to_string),
        critical_only,
        n,
    };
    let implementer = || vec![Want::Friction(5), Want::Similar(3), patterns(None, true, 4)];
    match agent {
        "architect" => vec![Want::Similar(3), patterns(Some("design-reviewer"), true, 4)],
        "task-decomposer" => vec![Want::Similar(3), patterns(Some("task-reviewer"), false, 4)],
        "situation-analyst" | "situation-analyst-investigator" | "investigator" => {
            vec![Want::Similar(3)]
        }
        "implementer" => implementer(),
        a if a.ends_with("reviewer") => vec![patterns(Some(a), false, 8)],
        a if a.contains("implement") => implementer(),
        a if a.contains("review") => vec![patterns(Some(a), false, 8)],
        a if [
            "architect",
            "design",
            "plan",
            "decompos",
            "analy",
            "investigat",
        ]
        .iter()
        .any(|k| a.contains(k)) =>
        {
            vec![Want::Similar(3)]
        }
        _ => Vec::new(),
    }
}

/// Patterns whose rows match `agent` / `phase` / `severity` (each when
/// given), with only those rows counted, heaviest first.
pub fn filter_patterns(
    patterns: &[Pattern],
    agent: Option<&str>,
    phase: Option<&str>,
    severity: Option<Severity>,
) -> Vec<Pattern> {
    let mut out: Vec<Pattern> = patterns
        .iter()
        .filter_map(|p| {
            let by: Vec<_> =
                p.by.iter()
                    .filter(|r| {
                        agent.is_none_or(|a| r.agent == a)
                            && phase.is_none_or(|ph| r.phase == ph)
                            && severity.is_none_or(|s| r.severity == s)
                    })
                    .cloned()
                    .collect();
            if by.is_empty() {
                return None;
            }
            let weight_micro = by.iter().map(|r| r.weight_micro).sum();
            Some(Pattern {
                text: p.text.clone(),
                count: by.iter().map(|r| r.count).sum(),
                weight: to_weight(weight_micro),
                by,
                last_seen: p.last_seen.clone(),
                seen: p.seen,
                weight_micro,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.weight_micro
            .cmp(&a.weight_micro)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.text.cmp(&b.text))
    });
    out
}

/// The patterns a [`Want::Patterns`] draws on, heaviest first: those of
/// `agent` (CRITICAL findings only when `critical_only`), or — when that
/// agent has none, or no agent is named — those of every reviewer; and
/// whether it fell back to every reviewer's.
pub fn select_patterns(
    patterns: &[Pattern],
    agent: Option<&str>,
    critical_only: bool,
) -> (Vec<Pattern>, bool) {
    let severity = critical_only.then_some(Severity::Critical);
    if let Some(a) = agent {
        let own = filter_patterns(patterns, Some(a), None, severity);
        if !own.is_empty() {
            return (own, false);
        }
    }
    (
        filter_patterns(patterns, None, None, severity),
        agent.is_some(),
    )
}

/// The review patterns a reviewing agent's Layer 4 gives it (its *Past
/// Review Patterns* block, before the budget), as the dashboard shows them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct ReviewerPatterns {
    /// The reviewing agent (e.g. `design-reviewer`).
    pub agent: String,
    /// Only CRITICAL findings are given to it.
    pub critical_only: bool,
    /// It has no patterns of its own and is given every reviewer's.
    pub shared: bool,
    /// The heaviest patterns it is given, at most the number asked for.
    pub patterns: Vec<Pattern>,
}

/// What [`plan`] gives `agent` as its own review patterns — `None` for an
/// agent that is no reviewer (an architect gets a reviewer's patterns, but
/// not as its own review) — at most `limit` of them (and at most what its
/// Layer 4 would take).
pub fn reviewer_patterns(
    agent: &str,
    patterns: &[Pattern],
    limit: usize,
) -> Option<ReviewerPatterns> {
    plan(agent).into_iter().find_map(|want| match want {
        Want::Patterns {
            agent: Some(own),
            critical_only,
            n,
        } if own == agent => {
            let (mut views, shared) = select_patterns(patterns, Some(agent), critical_only);
            views.truncate(n.min(limit));
            Some(ReviewerPatterns {
                agent: own,
                critical_only,
                shared,
                patterns: views,
            })
        }
        _ => None,
    })
}

/// One similar run as a prompt line.
pub fn similar_line(run: &SimilarRun) -> String {
    let mut facts = vec![run.outcome.as_str().to_string()];
    if let Some(e) = run.effort {
        facts.push(format!("effort {e:?}"));
    }
    if run.loops > 0 {
        facts.push(format!(
            "{} loop{}",
            run.loops,
            if run.loops == 1 { "" } else { "s" }
        ));
    }
    if run.minutes > 0.0 {
        facts.push(format!("{:.0} min", run.minutes));
    }
    if run.tokens > 0 {
        facts.push(format!("{}k tokens", run.tokens.div_ceil(1000)));
    }
    let mut line = format!(
        "{} ({}): {}",
        run.workspace,
        facts.join(", "),
        truncate(&run.request, 140)
    );
    if !run.matched.is_empty() {
        line.push_str(&format!(" [matched: {}]", run.matched.join(", ")));
    }
    prompt_line(&line, MAX_LINE_CHARS)
}

/// One pattern as a prompt line.
pub fn pattern_line(p: &Pattern) -> String {
    let critical = p.count_of(Severity::Critical);
    let mut agents: Vec<&str> = Vec::new();
    for r in &p.by {
        if !r.agent.is_empty() && !agents.contains(&r.agent.as_str()) {
            agents.push(&r.agent);
        }
    }
    let severity = if critical == p.count {
        "CRITICAL".to_string()
    } else if critical == 0 {
        "MINOR".to_string()
    } else {
        format!("{critical} CRITICAL")
    };
    prompt_line(
        &format!(
            "\"{}\" — {}× ({severity}; {}; last in {})",
            truncate(&p.text, 160),
            p.count,
            agents.join(", "),
            p.last_seen
        ),
        MAX_LINE_CHARS,
    )
}

/// One friction point as a prompt line.
pub fn friction_line(f: &FrictionPoint) -> String {
    let mut line = format!("{}: {}", f.category, truncate(&f.problem, 150));
    if !f.improvement.is_empty() {
        line.push_str(&format!(" — {}", truncate(&f.improvement, 120)));
    }
    line.push_str(&format!(
        " ({} run{})",
        f.count,
        if f.count == 1 { "" } else { "s" }
    ));
    prompt_line(&line, MAX_LINE_CHARS)
}

/// Composes Layer 4 for `agent` from what the index found: blocks in the
/// agent's [`plan`] order, lines filled round-robin (first line of every
/// block, then the second, …) until the next line would exceed
/// `budget_tokens` (characters / 4, headings included). Blocks without
/// lines are left out; no data gives no blocks.
pub fn compose(
    agent: &str,
    similar: &[SimilarRun],
    patterns: &[Pattern],
    friction: &[FrictionPoint],
    budget_tokens: usize,
) -> Vec<LearningBlock> {
    let mut candidates: Vec<(&'static str, Vec<String>)> = Vec::new();
    for want in plan(agent) {
        match want {
            Want::Similar(n) => candidates.push((
                SIMILAR_HEADING,
                similar.iter().take(n).map(similar_line).collect(),
            )),
            Want::Patterns {
                agent,
                critical_only,
                n,
            } => {
                let (views, _) = select_patterns(patterns, agent.as_deref(), critical_only);
                candidates.push((
                    PATTERNS_HEADING,
                    views.iter().take(n).map(pattern_line).collect(),
                ));
            }
            Want::Friction(n) => candidates.push((
                FRICTION_HEADING,
                friction.iter().take(n).map(friction_line).collect(),
            )),
        }
    }
    let budget_chars = budget_tokens.saturating_mul(4);
    let mut used = 0usize;
    let mut blocks: Vec<LearningBlock> = candidates
        .iter()
        .map(|(h, _)| LearningBlock {
            heading: h.to_string(),
            lines: Vec::new(),
        })
        .collect();
    let rounds = candidates.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    'fill: for round in 0..rounds {
        for (i, (heading, lines)) in candidates.iter().enumerate() {
            let Some(line) = lines.get(round) else {
                continue;
            };
            // As rendered (quoted), plus the blank line between blocks.
            let heading_cost = if blocks[i].lines.is_empty() {
                LearningBlock::heading_chars(heading) + 1
            } else {
                0
            };
            let cost = heading_cost + LearningBlock::line_chars(line);
            if used + cost > budget_chars {
                break 'fill;
            }
            used += cost;
            blocks[i].lines.push(line.clone());
        }
    }
    blocks.retain(|b| !b.lines.is_empty());
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{Observation, merge_findings};
    use crate::record::Outcome;

    fn run(ws: &str) -> SimilarRun {
        SimilarRun {
            workspace: ws.into(),
            score: 3.0,
            outcome: Outcome::Completed,
            effort: Some(baton_state::Effort::M),
            request: "Fix the token refresh".into(),
            matched: vec!["token".into(), "refresh".into()],
            loops: 2,
            tokens: 181_000,
            minutes: 41.0,
        }
    }

    fn patterns() -> Vec<Pattern> {
        let o = |text: &str, agent: &str, sev: Severity| Observation {
            text: text.into(),
            phase: "p".into(),
            agent: agent.into(),
            severity: sev,
            count: 1,
            weight: 1_000_000,
            seen: 1,
            run: "20260301-a".into(),
        };
        merge_findings(&[
            o("Missing error context", "impl-reviewer", Severity::Critical),
            o(
                "Design lacks a rollback plan",
                "design-reviewer",
                Severity::Critical,
            ),
            o("Naming is inconsistent", "design-reviewer", Severity::Minor),
        ])
    }

    fn friction() -> Vec<FrictionPoint> {
        vec![FrictionPoint {
            category: "AI Agent Support".into(),
            problem: "The test command was hard to find".into(),
            improvement: "add it to CLAUDE.md".into(),
            count: 3,
            weight: 2.5,
            last_seen: "20260301-a".into(),
        }]
    }

    fn headings(blocks: &[LearningBlock]) -> Vec<&str> {
        blocks.iter().map(|b| b.heading.as_str()).collect()
    }

    #[test]
    fn each_role_gets_its_blocks() {
        let (s, p, f) = (vec![run("20260301-a")], patterns(), friction());
        let reviewer = compose("design-reviewer", &s, &p, &f, 2000);
        assert_eq!(headings(&reviewer), [PATTERNS_HEADING]);
        assert_eq!(
            reviewer[0].lines.len(),
            2,
            "only the design reviewer's patterns"
        );
        let implementer = compose("implementer", &s, &p, &f, 2000);
        assert_eq!(
            headings(&implementer),
            [FRICTION_HEADING, SIMILAR_HEADING, PATTERNS_HEADING]
        );
        assert!(implementer[2].lines.iter().all(|l| l.contains("CRITICAL")));
        let architect = compose("architect", &s, &p, &f, 2000);
        assert_eq!(headings(&architect), [SIMILAR_HEADING, PATTERNS_HEADING]);
        assert_eq!(architect[1].lines.len(), 1, "CRITICAL design findings only");
        assert!(architect[1].lines[0].contains("rollback"));
        assert!(compose("verifier", &s, &p, &f, 2000).is_empty());
        // A reviewer with no patterns of its own gets everyone's.
        assert_eq!(compose("task-reviewer", &s, &p, &f, 2000)[0].lines.len(), 3);
    }

    #[test]
    fn a_reviewer_is_shown_the_patterns_its_prompt_gets() {
        let (s, p, f) = (vec![run("20260301-a")], patterns(), friction());
        let own = reviewer_patterns("design-reviewer", &p, 10).unwrap();
        assert!(!own.shared && !own.critical_only);
        let texts: Vec<&str> = own.patterns.iter().map(|x| x.text.as_str()).collect();
        assert_eq!(
            texts,
            ["Design lacks a rollback plan", "Naming is inconsistent"]
        );
        // The same patterns, in the same order, as the prompt's lines.
        let prompt = &compose("design-reviewer", &s, &p, &f, 2000)[0].lines;
        let lines: Vec<String> = own.patterns.iter().map(pattern_line).collect();
        assert_eq!(&lines, prompt);
        assert_eq!(
            reviewer_patterns("design-reviewer", &p, 1)
                .unwrap()
                .patterns
                .len(),
            1
        );
        // No patterns of its own: every reviewer's, marked as shared.
        let shared = reviewer_patterns("task-reviewer", &p, 10).unwrap();
        assert!(shared.shared);
        assert_eq!(shared.patterns.len(), 3);
        // Agents that review nothing have no review patterns of their own.
        assert!(reviewer_patterns("architect", &p, 10).is_none());
        assert!(reviewer_patterns("verifier", &p, 10).is_none());
    }

    #[test]
    fn lines_carry_the_facts() {
        let line = similar_line(&run("20260301-a"));
        assert_eq!(
            line,
            "20260301-a (completed, effort M, 2 loops, 41 min, 181k tokens): Fix the token refresh [matched: token, refresh]"
        );
        assert_eq!(
            friction_line(&friction()[0]),
            "AI Agent Support: The test command was hard to find — add it to CLAUDE.md (3 runs)"
        );
        let p = patterns();
        let views = filter_patterns(&p, Some("impl-reviewer"), None, None);
        assert_eq!(
            pattern_line(&views[0]),
            "\"Missing error context\" — 1× (CRITICAL; impl-reviewer; last in 20260301-a)"
        );
    }

    #[test]
    fn the_budget_is_shared_round_robin_and_never_exceeded() {
        let s: Vec<SimilarRun> = (0..3).map(|i| run(&format!("2026030{i}-a"))).collect();
        let (p, f) = (patterns(), friction());
        let all = compose("implementer", &s, &p, &f, 10_000);
        let total =
            |b: &[LearningBlock]| b.iter().map(|b| b.render().chars().count()).sum::<usize>();
        for budget in [0, 30, 60, 100, 200] {
            let blocks = compose("implementer", &s, &p, &f, budget);
            assert!(total(&blocks) <= budget * 4, "budget {budget}");
            // Lines kept are a prefix of each block's lines.
            for b in &blocks {
                let full = all.iter().find(|a| a.heading == b.heading).unwrap();
                assert_eq!(b.lines[..], full.lines[..b.lines.len()]);
            }
        }
        let small = compose("implementer", &s, &p, &f, 40);
        assert_eq!(headings(&small), [FRICTION_HEADING]);
        assert!(compose("implementer", &s, &p, &f, 0).is_empty());
    }
}
