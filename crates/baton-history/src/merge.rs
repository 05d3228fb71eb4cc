//! Merging near-identical texts (review findings, friction items) into
//! patterns by Levenshtein similarity (docs/history.md §5).
//!
//! The result depends only on the multiset of observations — never on their
//! order — and merging a merge result again changes nothing:
//!
//! 1. observations with the same normal form ([`crate::text::normalize`])
//!    are one group; weights and counts add up (integers, so sums are exact);
//! 2. groups are taken heaviest first (weight, count, then text);
//! 3. a group joins the most similar existing cluster whose first group is
//!    within [`MAX_DISTANCE_TENTHS`]/10 of the longer text's length in edit
//!    distance (characters, so Japanese works); otherwise it starts a
//!    cluster. Cluster heads are therefore pairwise dissimilar, which is what
//!    makes a second merge a no-op.
//!
//! Two cheap lower bounds of the edit distance (the length difference and
//! the character-count difference) skip pairs that cannot be within the
//! distance before Levenshtein runs; they never change the result.

use std::collections::HashMap;

use baton_engine::completion::verdict::Severity;
use serde::Serialize;

use crate::text::normalize;

/// Two texts merge when their edit distance is at most this many tenths of
/// the longer one's length (similarity ≥ 0.7).
pub const MAX_DISTANCE_TENTHS: usize = 3;

/// One merge input: a text seen `count` times with a recency weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The text as written.
    pub text: String,
    /// Review phase (empty for friction items).
    pub phase: String,
    /// Reviewing agent (empty for friction items).
    pub agent: String,
    /// Severity.
    pub severity: Severity,
    /// How many times.
    pub count: u32,
    /// Recency weight in millionths ([`crate::WEIGHT_UNIT`] is 1.0).
    pub weight: u64,
    /// Recency rank: larger is newer.
    pub seen: u64,
    /// The run it was seen in (the newest one for merged input).
    pub run: String,
}

/// Counts of one (phase, agent, severity) within a pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PatternCount {
    /// Review phase.
    pub phase: String,
    /// Reviewing agent.
    pub agent: String,
    /// CRITICAL or MINOR.
    pub severity: Severity,
    /// Findings.
    pub count: u32,
    /// Recency weight in millionths.
    #[serde(skip)]
    #[schemars(skip)]
    pub weight_micro: u64,
}

/// Findings merged into one pattern.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Pattern {
    /// The most weighty wording.
    pub text: String,
    /// Findings merged.
    pub count: u32,
    /// The recency-weighted count (the newest run's finding counts 1).
    pub weight: f64,
    /// Counts per phase, agent and severity, largest first.
    pub by: Vec<PatternCount>,
    /// The newest run it was seen in.
    pub last_seen: String,
    /// Recency rank of `last_seen`.
    #[serde(skip)]
    #[schemars(skip)]
    pub seen: u64,
    /// `weight` in millionths.
    #[serde(skip)]
    #[schemars(skip)]
    pub weight_micro: u64,
}

impl Pattern {
    /// The pattern as merge input again (one observation per count row).
    pub fn observations(&self) -> Vec<Observation> {
        self.by
            .iter()
            .map(|c| Observation {
                text: self.text.clone(),
                phase: c.phase.clone(),
                agent: c.agent.clone(),
                severity: c.severity,
                count: c.count,
                weight: c.weight_micro,
                seen: self.seen,
                run: self.last_seen.clone(),
            })
            .collect()
    }

    /// Findings with this severity.
    pub fn count_of(&self, severity: Severity) -> u32 {
        self.by
            .iter()
            .filter(|c| c.severity == severity)
            .map(|c| c.count)
            .sum()
    }
}

/// Severity as a sortable number (CRITICAL first).
pub fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Critical => 0,
        Severity::Minor => 1,
    }
}

/// One distinct normal form with its totals.
#[derive(Debug, Clone)]
pub struct Group {
    /// The normal form.
    pub norm: String,
    /// Summed weight.
    pub weight: u64,
    /// Summed count.
    pub count: u32,
}

/// Clusters groups; returns, for each group in `groups` order, the index of
/// the cluster it joins (clusters are numbered by their first group).
/// `groups` must be sorted heaviest first ([`sort_groups`]).
pub fn cluster(groups: &[Group]) -> Vec<usize> {
    cluster_with(groups, true)
}

/// [`cluster`] comparing every pair (no lower-bound filter): the reference
/// the filter is tested against.
#[doc(hidden)]
pub fn cluster_unfiltered(groups: &[Group]) -> Vec<usize> {
    cluster_with(groups, false)
}

fn cluster_with(groups: &[Group], filter: bool) -> Vec<usize> {
    let mut heads: Vec<Head> = Vec::new();
    let mut assignment = Vec::with_capacity(groups.len());
    for group in groups {
        let this = Head::new(&group.norm);
        let mut best: Option<(usize, usize, usize)> = None; // (distance, longer, head)
        for (h, head) in heads.iter().enumerate() {
            let longer = head.chars.len().max(this.chars.len());
            let limit = longer * MAX_DISTANCE_TENTHS / 10;
            // Exact lower bounds of the edit distance first: the length
            // difference and the character-count difference.
            if filter
                && (head.chars.len().abs_diff(this.chars.len()) > limit
                    || head.bag_distance(&this) > limit)
            {
                continue;
            }
            let d = strsim::generic_levenshtein(&head.chars, &this.chars);
            if d > limit {
                continue;
            }
            // Smaller relative distance (d / longer) wins; ties keep the older head.
            let better = match best {
                None => true,
                Some((bd, bl, _)) => d * bl < bd * longer,
            };
            if better {
                best = Some((d, longer, h));
            }
        }
        match best {
            Some((_, _, h)) => assignment.push(h),
            None => {
                assignment.push(heads.len());
                heads.push(this);
            }
        }
    }
    assignment
}

/// A cluster's first text with its character counts (64 hashed buckets).
struct Head {
    chars: Vec<char>,
    buckets: [u16; 64],
}

impl Head {
    fn new(text: &str) -> Head {
        let chars: Vec<char> = text.chars().collect();
        let mut buckets = [0u16; 64];
        for c in &chars {
            let b = (*c as u32 % 64) as usize;
            buckets[b] = buckets[b].saturating_add(1);
        }
        Head { chars, buckets }
    }

    /// A lower bound of the edit distance: an insertion or deletion changes
    /// one count by one, a substitution two counts in opposite directions, so
    /// neither the surplus nor the deficit can shrink by more than one per
    /// edit. (Hashing characters into buckets only lowers the bound.)
    fn bag_distance(&self, other: &Head) -> usize {
        let (mut surplus, mut deficit) = (0usize, 0usize);
        for (a, b) in self.buckets.iter().zip(&other.buckets) {
            if a > b {
                surplus += usize::from(a - b);
            } else {
                deficit += usize::from(b - a);
            }
        }
        surplus.max(deficit)
    }
}

/// Sorts groups heaviest first: weight, count, then normal form.
pub fn sort_groups(groups: &mut [Group]) {
    groups.sort_by(|a, b| {
        b.weight
            .cmp(&a.weight)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.norm.cmp(&b.norm))
    });
}

/// Merges review findings into patterns, heaviest first.
pub fn merge_findings(observations: &[Observation]) -> Vec<Pattern> {
    // 1. Groups by normal form.
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut members: Vec<Vec<&Observation>> = Vec::new();
    for o in observations {
        let norm = normalize(&o.text);
        if norm.is_empty() || o.count == 0 {
            continue;
        }
        let i = *index.entry(norm.clone()).or_insert_with(|| {
            groups.push(Group {
                norm,
                weight: 0,
                count: 0,
            });
            members.push(Vec::new());
            groups.len() - 1
        });
        groups[i].weight += o.weight;
        groups[i].count += o.count;
        members[i].push(o);
    }
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by(|a, b| {
        let (a, b) = (&groups[*a], &groups[*b]);
        b.weight
            .cmp(&a.weight)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.norm.cmp(&b.norm))
    });
    let sorted: Vec<Group> = order.iter().map(|i| groups[*i].clone()).collect();
    let assignment = cluster(&sorted);
    // 2. Clusters.
    let mut clusters: Vec<Vec<&Observation>> = Vec::new();
    for (pos, cluster_id) in assignment.iter().enumerate() {
        if *cluster_id >= clusters.len() {
            clusters.resize_with(cluster_id + 1, Vec::new);
        }
        clusters[*cluster_id].extend(members[order[pos]].iter().copied());
    }
    let mut patterns: Vec<Pattern> = clusters
        .into_iter()
        .filter(|c| !c.is_empty())
        .map(|c| build_pattern(&c))
        .collect();
    patterns.sort_by(|a, b| {
        b.weight_micro
            .cmp(&a.weight_micro)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.text.cmp(&b.text))
    });
    patterns
}

fn build_pattern(members: &[&Observation]) -> Pattern {
    // The wording: the display text with the most weight in the heaviest group.
    let mut texts: HashMap<&str, (u64, u32)> = HashMap::new();
    for o in members {
        let e = texts.entry(o.text.as_str()).or_default();
        e.0 += o.weight;
        e.1 += o.count;
    }
    let heaviest_norm = {
        let mut norms: HashMap<String, (u64, u32)> = HashMap::new();
        for o in members {
            let e = norms.entry(normalize(&o.text)).or_default();
            e.0 += o.weight;
            e.1 += o.count;
        }
        norms
            .into_iter()
            .max_by(|a, b| {
                a.1.0
                    .cmp(&b.1.0)
                    .then(a.1.1.cmp(&b.1.1))
                    .then_with(|| b.0.cmp(&a.0))
            })
            .map(|(n, _)| n)
            .unwrap_or_default()
    };
    let text = texts
        .iter()
        .filter(|(t, _)| normalize(t) == heaviest_norm)
        .max_by(|a, b| {
            a.1.0
                .cmp(&b.1.0)
                .then(a.1.1.cmp(&b.1.1))
                .then_with(|| b.0.cmp(a.0))
        })
        .map(|(t, _)| t.to_string())
        .unwrap_or_default();
    let mut rows: Vec<PatternCount> = Vec::new();
    for o in members {
        match rows
            .iter_mut()
            .find(|r| r.phase == o.phase && r.agent == o.agent && r.severity == o.severity)
        {
            Some(r) => {
                r.count += o.count;
                r.weight_micro += o.weight;
            }
            None => rows.push(PatternCount {
                phase: o.phase.clone(),
                agent: o.agent.clone(),
                severity: o.severity,
                count: o.count,
                weight_micro: o.weight,
            }),
        }
    }
    rows.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(severity_rank(a.severity).cmp(&severity_rank(b.severity)))
            .then_with(|| a.phase.cmp(&b.phase))
            .then_with(|| a.agent.cmp(&b.agent))
    });
    let newest = members
        .iter()
        .max_by(|a, b| a.seen.cmp(&b.seen).then_with(|| b.run.cmp(&a.run)))
        .map(|o| (o.seen, o.run.clone()))
        .unwrap_or_default();
    let weight_micro: u64 = rows.iter().map(|r| r.weight_micro).sum();
    Pattern {
        text,
        count: rows.iter().map(|r| r.count).sum(),
        weight: to_weight(weight_micro),
        by: rows,
        last_seen: newest.1,
        seen: newest.0,
        weight_micro,
    }
}

/// Millionths to a weight rounded to two decimals.
pub fn to_weight(micro: u64) -> f64 {
    (micro as f64 / crate::WEIGHT_UNIT as f64 * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn obs(
        text: &str,
        agent: &str,
        sev: Severity,
        weight: u64,
        seen: u64,
    ) -> Observation {
        Observation {
            text: text.into(),
            phase: "phase-6".into(),
            agent: agent.into(),
            severity: sev,
            count: 1,
            weight,
            seen,
            run: format!("run-{seen}"),
        }
    }

    #[test]
    fn near_identical_findings_merge_and_different_ones_do_not() {
        let input = vec![
            obs(
                "Missing error context in store.rs",
                "impl-reviewer",
                Severity::Critical,
                1_000_000,
                3,
            ),
            obs(
                "missing error context in handler.rs",
                "impl-reviewer",
                Severity::Minor,
                500_000,
                2,
            ),
            obs(
                "Missing eror context in lib.rs",
                "impl-reviewer",
                Severity::Minor,
                250_000,
                1,
            ),
            obs(
                "Add a test for the timeout path",
                "impl-reviewer",
                Severity::Minor,
                250_000,
                1,
            ),
        ];
        let p = merge_findings(&input);
        assert_eq!(p.len(), 2, "{p:#?}");
        assert_eq!(p[0].count, 3);
        assert_eq!(p[0].text, "Missing error context in store.rs");
        assert_eq!(p[0].count_of(Severity::Critical), 1);
        assert_eq!(p[0].count_of(Severity::Minor), 2);
        assert_eq!(p[0].weight, 1.75);
        assert_eq!(p[0].last_seen, "run-3");
        assert_eq!(p[1].text, "Add a test for the timeout path");
    }

    #[test]
    fn japanese_findings_merge_by_characters() {
        let input = vec![
            obs(
                "タイムアウト時のエラー処理がない",
                "impl-reviewer",
                Severity::Critical,
                10,
                1,
            ),
            obs(
                "タイムアウト時のエラー処理が無い",
                "impl-reviewer",
                Severity::Critical,
                10,
                2,
            ),
            obs(
                "テストが不足している",
                "impl-reviewer",
                Severity::Minor,
                10,
                1,
            ),
        ];
        assert_eq!(merge_findings(&input).len(), 2);
    }

    #[test]
    fn short_texts_need_an_exact_match() {
        let groups: Vec<Group> = ["ab", "ac", "abcdefghij", "abcdefghiX"]
            .iter()
            .map(|t| Group {
                norm: t.to_string(),
                weight: 1,
                count: 1,
            })
            .collect();
        // 1 edit in 2 characters is over 30 %; 1 in 10 is not.
        assert_eq!(cluster(&groups), [0, 1, 2, 2]);
    }
}
