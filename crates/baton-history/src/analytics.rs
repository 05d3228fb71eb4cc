//! Run summary, repository dashboard, estimates and cost (docs/history.md §8).

use std::collections::BTreeMap;

use baton_engine::completion::verdict::Severity;
use baton_state::Effort;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::{Outcome, PhaseRecord, RunRecord};

/// The default price: US dollars per million tokens (forge's flat rate).
pub const DEFAULT_USD_PER_MTOK: f64 = 6.0;

/// Prices per model label, in US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PriceTable {
    /// The price of a model with no entry of its own.
    pub default_usd_per_mtok: f64,
    /// Per model label. A label matches exactly, else the longest entry the
    /// label contains (`sonnet` prices `claude-sonnet-4-5`).
    #[serde(default)]
    pub models: BTreeMap<String, f64>,
}

impl Default for PriceTable {
    fn default() -> PriceTable {
        PriceTable {
            default_usd_per_mtok: DEFAULT_USD_PER_MTOK,
            models: BTreeMap::new(),
        }
    }
}

impl PriceTable {
    /// US dollars per million tokens for a model label.
    pub fn usd_per_mtok(&self, model: &str) -> f64 {
        let lower = model.to_lowercase();
        if let Some(p) = self.models.get(&lower) {
            return *p;
        }
        self.models
            .iter()
            .filter(|(k, _)| !k.is_empty() && lower.contains(&k.to_lowercase()))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| *p)
            .unwrap_or(self.default_usd_per_mtok)
    }

    /// The cost of a run: each phase's tokens at its model's price.
    pub fn run_cost(&self, record: &RunRecord) -> f64 {
        let phased: u64 = record.phases.iter().map(|p| p.tokens).sum();
        let mut cost: f64 = record
            .phases
            .iter()
            .map(|p| p.tokens as f64 * self.usd_per_mtok(&p.model) / 1e6)
            .sum();
        // Tokens outside any phase record (none today) at the default price.
        cost += record.tokens.saturating_sub(phased) as f64 * self.default_usd_per_mtok / 1e6;
        cost
    }
}

fn cents(usd: f64) -> f64 {
    (usd * 100.0).round() / 100.0
}

fn minutes(ms: u64) -> f64 {
    (ms as f64 / 60_000.0 * 10.0).round() / 10.0
}

fn ratio(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| (n as f64 / d as f64 * 1000.0).round() / 1000.0)
}

/// CRITICAL and MINOR counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SeverityCounts {
    /// CRITICAL findings.
    pub critical: u32,
    /// MINOR findings.
    pub minor: u32,
}

/// One run, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunSummary {
    /// Workspace folder name.
    pub workspace: String,
    /// Workflow id.
    pub workflow: String,
    /// completed, abandoned or running.
    pub outcome: Outcome,
    /// Effort S, M or L.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// The request in one line.
    pub request: String,
    /// Tokens reported.
    pub tokens: u64,
    /// Cost at the configured prices.
    pub cost_usd: f64,
    /// Work time (agents' reported durations) in minutes.
    pub work_minutes: f64,
    /// Creation to last update, in minutes.
    pub wall_minutes: f64,
    /// Times work went back to an earlier phase.
    pub loops: u32,
    /// Phases that ran.
    pub phases_run: u32,
    /// Phases skipped.
    pub phases_skipped: u32,
    /// Findings of the final reviews.
    pub findings: SeverityCounts,
    /// Final verdict per review artifact.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, String>,
    /// Per phase: visits, loops, time, tokens, model.
    pub phases: Vec<PhaseLine>,
}

/// One phase in a [`RunSummary`].
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PhaseLine {
    /// Phase id.
    pub phase: String,
    /// Times started.
    pub visits: u32,
    /// Times it sent work back.
    #[serde(skip_serializing_if = "is_zero")]
    pub back: u32,
    /// Minutes.
    pub minutes: f64,
    /// Tokens.
    pub tokens: u64,
    /// Model label.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PhaseLine {
    fn of(p: &PhaseRecord) -> PhaseLine {
        PhaseLine {
            phase: p.phase.clone(),
            visits: p.visits,
            back: p.back,
            minutes: minutes(p.ms),
            tokens: p.tokens,
            model: p.model.clone(),
        }
    }
}

/// Summarises one run (ended or live).
pub fn run_summary(record: &RunRecord, prices: &PriceTable) -> RunSummary {
    let count = |s: Severity| record.findings.iter().filter(|f| f.severity == s).count() as u32;
    RunSummary {
        workspace: record.workspace.clone(),
        workflow: record.workflow.clone(),
        outcome: record.outcome,
        effort: record.effort,
        request: record.request.clone(),
        tokens: record.tokens,
        cost_usd: cents(prices.run_cost(record)),
        work_minutes: minutes(record.work_ms),
        wall_minutes: minutes(record.wall_ms()),
        loops: record.loops,
        phases_run: record.phases.len() as u32,
        phases_skipped: record.skipped.len() as u32,
        findings: SeverityCounts {
            critical: count(Severity::Critical),
            minor: count(Severity::Minor),
        },
        verdicts: record.verdicts.clone(),
        phases: record.phases.iter().map(PhaseLine::of).collect(),
    }
}

/// The repository dashboard over every recorded run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Dashboard {
    /// Runs recorded.
    pub runs: u32,
    /// Completed runs.
    pub completed: u32,
    /// Abandoned runs.
    pub abandoned: u32,
    /// Share of completed runs that never went back (no review REVISE/FAIL, no revision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_pass_rate: Option<f64>,
    /// Share of review passes that let the work go on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_pass_rate: Option<f64>,
    /// Loops per run, all runs.
    pub loops_per_run: f64,
    /// Tokens, all runs.
    pub tokens: u64,
    /// Cost, all runs, at the configured prices.
    pub cost_usd: f64,
    /// Per effort (`-` for runs without one).
    pub by_effort: Vec<EffortStats>,
    /// Per phase, in workflow order of first appearance.
    pub by_phase: Vec<PhaseStats>,
}

/// Dashboard numbers of one effort.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EffortStats {
    /// S, M, L or `-`.
    pub effort: String,
    /// Runs.
    pub runs: u32,
    /// Completed runs.
    pub completed: u32,
    /// Loops per run.
    pub loops_per_run: f64,
    /// Mean tokens of a completed run.
    pub mean_tokens: u64,
    /// Mean work minutes of a completed run.
    pub mean_minutes: f64,
    /// Mean cost of a completed run.
    pub mean_cost_usd: f64,
}

/// Dashboard numbers of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PhaseStats {
    /// Phase id.
    pub phase: String,
    /// Runs it ran in.
    pub runs: u32,
    /// Visits, all runs.
    pub visits: u32,
    /// Times it sent work back.
    pub back: u32,
    /// Mean minutes per run it ran in.
    pub mean_minutes: f64,
    /// Mean tokens per run it ran in.
    pub mean_tokens: u64,
}

/// Computes the dashboard.
pub fn dashboard<'a>(
    records: impl Iterator<Item = &'a RunRecord>,
    prices: &PriceTable,
) -> Dashboard {
    let mut d = Dashboard::default();
    let mut loops = 0u64;
    let mut first_pass = 0u64;
    let (mut review_visits, mut review_back) = (0u64, 0u64);
    let mut cost = 0.0;
    #[derive(Default)]
    struct E {
        runs: u32,
        completed: u32,
        loops: u64,
        tokens: u64,
        ms: u64,
        cost: f64,
    }
    let mut efforts: BTreeMap<String, E> = BTreeMap::new();
    let mut phases: Vec<(String, u32, u32, u32, u64, u64)> = Vec::new();
    for r in records {
        d.runs += 1;
        let run_cost = prices.run_cost(r);
        cost += run_cost;
        d.tokens += r.tokens;
        loops += u64::from(r.loops);
        let key = r
            .effort
            .map(|e| format!("{e:?}"))
            .unwrap_or_else(|| "-".to_string());
        let e = efforts.entry(key).or_default();
        e.runs += 1;
        e.loops += u64::from(r.loops);
        match r.outcome {
            Outcome::Completed => {
                d.completed += 1;
                e.completed += 1;
                e.tokens += r.tokens;
                e.ms += r.work_ms;
                e.cost += run_cost;
                if r.loops == 0 {
                    first_pass += 1;
                }
            }
            Outcome::Abandoned => d.abandoned += 1,
            Outcome::Running => {}
        }
        for p in &r.phases {
            if p.review {
                review_visits += u64::from(p.visits);
                review_back += u64::from(p.back.min(p.visits));
            }
            let i = match phases.iter().position(|x| x.0 == p.phase) {
                Some(i) => i,
                None => {
                    phases.push((p.phase.clone(), 0, 0, 0, 0, 0));
                    phases.len() - 1
                }
            };
            let x = &mut phases[i];
            x.1 += 1;
            x.2 += p.visits;
            x.3 += p.back;
            x.4 += p.ms;
            x.5 += p.tokens;
        }
    }
    d.first_pass_rate = ratio(first_pass, u64::from(d.completed));
    d.review_pass_rate = ratio(review_visits - review_back, review_visits);
    d.loops_per_run = ratio(loops, u64::from(d.runs)).unwrap_or(0.0);
    d.cost_usd = cents(cost);
    d.by_effort = efforts
        .into_iter()
        .map(|(effort, e)| {
            let c = u64::from(e.completed.max(1));
            EffortStats {
                effort,
                runs: e.runs,
                completed: e.completed,
                loops_per_run: ratio(e.loops, u64::from(e.runs)).unwrap_or(0.0),
                mean_tokens: e.tokens / c,
                mean_minutes: minutes(e.ms / c),
                mean_cost_usd: cents(e.cost / c as f64),
            }
        })
        .collect();
    d.by_phase = phases
        .into_iter()
        .map(|(phase, runs, visits, back, ms, tokens)| {
            let n = u64::from(runs.max(1));
            PhaseStats {
                phase,
                runs,
                visits,
                back,
                mean_minutes: minutes(ms / n),
                mean_tokens: tokens / n,
            }
        })
        .collect();
    d
}

/// The 50th and 90th percentile (nearest rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
pub struct Spread {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
}

fn spread(mut values: Vec<f64>) -> Spread {
    if values.is_empty() {
        return Spread::default();
    }
    values.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let rank = (p * values.len() as f64).ceil() as usize;
        values[rank.clamp(1, values.len()) - 1]
    };
    Spread {
        p50: at(0.5),
        p90: at(0.9),
    }
}

/// What the estimate is based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Completed runs similar to the request.
    Similar,
    /// Completed runs of the same effort.
    Effort,
    /// All completed runs.
    All,
    /// No completed run yet.
    None,
}

/// An estimate for a new request.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Estimate {
    /// What the numbers come from.
    pub basis: Basis,
    /// Runs used.
    pub sample: u32,
    /// low (< 3 runs), medium (< 10), high.
    pub confidence: &'static str,
    /// Tokens.
    pub tokens: Spread,
    /// Work minutes.
    pub minutes: Spread,
    /// Cost in US dollars.
    pub cost_usd: Spread,
    /// The most similar runs used (at most 3), when the basis is `similar`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub similar: Vec<String>,
}

impl Estimate {
    /// The estimate in one line for a person, or `None` when there is no
    /// completed run to base it on. E.g. `Estimate from 4 similar past runs
    /// (confidence medium): ~46k tokens (p90 80k), ~12 min of agent work
    /// (p90 20), ~$0.28 (p90 $0.48).`
    pub fn display_line(&self) -> Option<String> {
        let runs = if self.sample == 1 { "run" } else { "runs" };
        let from = match self.basis {
            Basis::Similar => format!("{} similar past {runs}", self.sample),
            Basis::Effort => format!(
                "the {} newest completed {runs} of this effort, none similar enough",
                self.sample
            ),
            Basis::All => format!(
                "the {} newest completed {runs}, none similar enough",
                self.sample
            ),
            Basis::None => return None,
        };
        Some(format!(
            "Estimate from {from} (confidence {}): ~{} tokens (p90 {}), ~{} min of agent work (p90 {}), ~${:.2} (p90 ${:.2}).",
            self.confidence,
            short_count(self.tokens.p50),
            short_count(self.tokens.p90),
            short_minutes(self.minutes.p50),
            short_minutes(self.minutes.p90),
            self.cost_usd.p50,
            self.cost_usd.p90
        ))
    }
}

/// `850`, `46k`, `1.2M`.
fn short_count(n: f64) -> String {
    if n >= 999_500.0 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 1000.0 {
        format!("{:.0}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// `12`, `0.5`.
fn short_minutes(m: f64) -> String {
    if m >= 10.0 {
        format!("{m:.0}")
    } else {
        format!("{m:.1}")
    }
}

/// The fewest similar runs an estimate is based on; below it the estimate
/// falls back to the effort, then to all runs.
pub const MIN_SIMILAR: usize = 3;

/// Builds an estimate from sample runs.
pub fn estimate(basis: Basis, sample: &[&RunRecord], prices: &PriceTable) -> Estimate {
    let n = sample.len();
    Estimate {
        basis: if n == 0 { Basis::None } else { basis },
        sample: n as u32,
        confidence: match n {
            0..=2 => "low",
            3..=9 => "medium",
            _ => "high",
        },
        tokens: spread(sample.iter().map(|r| r.tokens as f64).collect()),
        minutes: spread(sample.iter().map(|r| minutes(r.work_ms)).collect()),
        cost_usd: {
            let s = spread(sample.iter().map(|r| prices.run_cost(r)).collect());
            Spread {
                p50: cents(s.p50),
                p90: cents(s.p90),
            }
        },
        similar: if basis == Basis::Similar {
            sample.iter().take(3).map(|r| r.workspace.clone()).collect()
        } else {
            Vec::new()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::FindingRecord;

    pub(crate) fn record(
        ws: &str,
        outcome: Outcome,
        effort: Effort,
        tokens: u64,
        loops: u32,
    ) -> RunRecord {
        RunRecord {
            workspace: ws.into(),
            workflow: "forge".into(),
            outcome,
            created: "2026-01-01T00:00:00Z".parse().unwrap(),
            ended: "2026-01-01T01:00:00Z".parse().unwrap(),
            effort: Some(effort),
            flow: None,
            source: "text".into(),
            request: "r".into(),
            phases: vec![
                PhaseRecord {
                    phase: "phase-3".into(),
                    visits: 1 + loops,
                    back: 0,
                    review: false,
                    fails: 0,
                    ms: 60_000,
                    tokens: tokens / 2,
                    model: "opus".into(),
                },
                PhaseRecord {
                    phase: "phase-3b".into(),
                    visits: 1 + loops,
                    back: loops,
                    review: true,
                    fails: 0,
                    ms: 60_000,
                    tokens: tokens / 2,
                    model: "claude-sonnet-4-5".into(),
                },
            ],
            skipped: vec![],
            verdicts: BTreeMap::new(),
            findings: vec![FindingRecord {
                phase: "phase-3b".into(),
                agent: "design-reviewer".into(),
                severity: Severity::Critical,
                text: "x".into(),
            }],
            friction: vec![],
            loops,
            tokens,
            work_ms: 120_000,
            reason: None,
            branch: None,
            terms: vec![],
            len: 0,
        }
    }

    #[test]
    fn prices_match_labels_exactly_or_by_the_longest_contained_key() {
        let prices = PriceTable {
            default_usd_per_mtok: 1.0,
            models: [
                ("sonnet".to_string(), 3.0),
                ("claude-sonnet".to_string(), 4.0),
                ("opus".to_string(), 15.0),
            ]
            .into_iter()
            .collect(),
        };
        assert_eq!(prices.usd_per_mtok("opus"), 15.0);
        assert_eq!(prices.usd_per_mtok("claude-sonnet-4-5"), 4.0);
        assert_eq!(prices.usd_per_mtok("Sonnet"), 3.0);
        assert_eq!(prices.usd_per_mtok("haiku"), 1.0);
        let r = record("a", Outcome::Completed, Effort::M, 2_000_000, 0);
        // 1M opus tokens at 15 + 1M sonnet tokens at 4.
        assert_eq!(prices.run_cost(&r), 19.0);
    }

    #[test]
    fn the_dashboard_counts_outcomes_loops_and_pass_rates() {
        let runs = [
            record("a", Outcome::Completed, Effort::M, 1000, 0),
            record("b", Outcome::Completed, Effort::M, 3000, 2),
            record("c", Outcome::Abandoned, Effort::S, 500, 1),
        ];
        let d = dashboard(runs.iter(), &PriceTable::default());
        assert_eq!((d.runs, d.completed, d.abandoned), (3, 2, 1));
        assert_eq!(d.first_pass_rate, Some(0.5));
        // Review visits 1 + 3 + 2 = 6, sent back 0 + 2 + 1 = 3.
        assert_eq!(d.review_pass_rate, Some(0.5));
        assert_eq!(d.loops_per_run, 1.0);
        assert_eq!(d.tokens, 4500);
        let m = d.by_effort.iter().find(|e| e.effort == "M").unwrap();
        assert_eq!((m.runs, m.completed, m.mean_tokens), (2, 2, 2000));
        let s = d.by_effort.iter().find(|e| e.effort == "S").unwrap();
        assert_eq!((s.runs, s.completed, s.mean_tokens), (1, 0, 0));
        assert_eq!(d.by_phase[1].phase, "phase-3b");
        assert_eq!(d.by_phase[1].back, 3);
    }

    #[test]
    fn estimates_take_nearest_rank_percentiles() {
        let runs: Vec<RunRecord> = (1..=10)
            .map(|i| record(&format!("r{i}"), Outcome::Completed, Effort::M, i * 1000, 0))
            .collect();
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let e = estimate(Basis::Effort, &refs, &PriceTable::default());
        assert_eq!(e.sample, 10);
        assert_eq!(e.confidence, "high");
        assert_eq!(e.tokens.p50, 5000.0);
        assert_eq!(e.tokens.p90, 9000.0);
        assert_eq!(e.minutes.p50, 2.0);
        let none = estimate(Basis::Similar, &[], &PriceTable::default());
        assert_eq!(none.basis, Basis::None);
        assert_eq!(none.confidence, "low");
        assert_eq!(none.display_line(), None);
    }

    #[test]
    fn the_display_line_rounds_for_people() {
        let runs: Vec<RunRecord> = [46_200, 80_000, 30_000, 51_000]
            .iter()
            .enumerate()
            .map(|(i, t)| record(&format!("r{i}"), Outcome::Completed, Effort::M, *t, 0))
            .collect();
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let e = estimate(Basis::Similar, &refs, &PriceTable::default());
        assert_eq!(
            e.display_line().unwrap(),
            "Estimate from 4 similar past runs (confidence medium): ~46k tokens (p90 80k), ~2.0 min of agent work (p90 2.0), ~$0.28 (p90 $0.48)."
        );
        let one = estimate(Basis::All, &refs[..1], &PriceTable::default());
        assert!(
            one.display_line().unwrap().starts_with(
                "Estimate from the 1 newest completed run, none similar enough (confidence low)"
            ),
            "{:?}",
            one.display_line()
        );
        assert_eq!(short_count(1_234_567.0), "1.2M");
        assert_eq!(short_count(850.0), "850");
    }
}
