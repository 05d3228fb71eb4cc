//! `baton history …` and the dashboard part of `baton stats`: the run
//! history (docs/history.md) for people, on the same library and with the
//! same numbers the MCP tools give.

use std::process::ExitCode;
use std::sync::Arc;

use baton_config::Config;
use baton_engine::pipeline::verdict::Severity;
use baton_history::{Basis, Dashboard, HistoryIndex, PatternFilter, PriceTable};
use baton_state::Effort;
use clap::Subcommand;

/// `baton history` subcommands.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Past runs most like a text, with the words that matched.
    Search {
        /// A request, a few words (Japanese or English).
        query: String,
        /// How many runs.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Review findings of past runs merged into patterns, heaviest first.
    Patterns {
        /// Only findings of this reviewing agent (e.g. impl-reviewer).
        #[arg(long)]
        agent: Option<String>,
        /// Only findings of this review phase (e.g. phase-3b).
        #[arg(long)]
        phase: Option<String>,
        /// Only CRITICAL or only MINOR findings.
        #[arg(long, value_parser = ["CRITICAL", "MINOR"])]
        severity: Option<String>,
        /// How many patterns.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The friction map from past improvement reports.
    Friction {
        /// How many points.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Tokens, time and cost to expect for a request, from similar past runs.
    Estimate {
        /// The request text.
        text: String,
        /// S, M or L.
        #[arg(long, value_parser = ["S", "M", "L"])]
        effort: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild the history file from every workspace under the specs root.
    Reindex,
}

/// The price table of the configuration.
pub fn prices(config: &Config) -> PriceTable {
    PriceTable {
        default_usd_per_mtok: config.prices.default_usd_per_mtok,
        models: config.prices.models.clone(),
    }
}

/// The history of the configured specs root, with the project's workflows.
/// Not fsynced whatever `BATON_FSYNC` says: a record lost to a power cut is
/// written again by the next catch-up (docs/history.md §3).
pub fn open(config: &Config) -> HistoryIndex {
    let (registry, _) = baton_workflow::load_registry(&config.workflows_dir);
    HistoryIndex::open(&config.specs_root).with_registry(Arc::new(registry))
}

fn warnings(history: &HistoryIndex) {
    for w in history.take_warnings() {
        eprintln!("baton: warning: {w}");
    }
}

fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn effort(e: Option<&str>) -> Option<Effort> {
    match e {
        Some("S") => Some(Effort::S),
        Some("M") => Some(Effort::M),
        Some("L") => Some(Effort::L),
        _ => None,
    }
}

/// Runs a `baton history` subcommand.
pub fn run(config: &Config, command: HistoryCommand) -> anyhow::Result<ExitCode> {
    let history = open(config);
    let result = match command {
        HistoryCommand::Search { query, limit, json } => {
            let hits = history.similar(&query, limit);
            if json {
                print_json(&serde_json::json!({"results": hits}))?;
            } else if hits.is_empty() {
                println!("no similar run among {} recorded", history.len());
            }
            if !json {
                for h in &hits {
                    println!(
                        "{:<40} score {:>6.2}  {:<9} {:<2} {} loops  {:.0} min  {}k tokens",
                        h.workspace,
                        h.score,
                        h.outcome.as_str(),
                        h.effort.map(|e| format!("{e:?}")).unwrap_or_default(),
                        h.loops,
                        h.minutes,
                        h.tokens.div_ceil(1000)
                    );
                    println!("    {}", h.request);
                    println!("    matched: {}", h.matched.join(", "));
                }
            }
            Ok(())
        }
        HistoryCommand::Patterns {
            agent,
            phase,
            severity,
            limit,
            json,
        } => {
            let filter = PatternFilter {
                agent,
                phase,
                severity: match severity.as_deref() {
                    Some("CRITICAL") => Some(Severity::Critical),
                    Some("MINOR") => Some(Severity::Minor),
                    _ => None,
                },
                limit,
            };
            let found = history.patterns(&filter);
            if json {
                print_json(&found)?;
            } else {
                println!(
                    "{} patterns from {} reviewed runs",
                    found.patterns.len(),
                    found.runs_analyzed
                );
                for p in &found.patterns {
                    let critical = p.count_of(Severity::Critical);
                    let rows: Vec<String> =
                        p.by.iter()
                            .map(|r| format!("{} {} ×{}", r.agent, r.phase, r.count))
                            .collect();
                    println!(
                        "{:>4}× ({critical} CRITICAL) weight {:>6.2}  {}",
                        p.count, p.weight, p.text
                    );
                    println!("      {}; last in {}", rows.join(", "), p.last_seen);
                }
            }
            Ok(())
        }
        HistoryCommand::Friction { limit, json } => {
            let found = history.friction(limit);
            if json {
                print_json(&found)?;
            } else {
                println!(
                    "{} friction points from {} improvement reports",
                    found.points.len(),
                    found.reports_analyzed
                );
                for f in &found.points {
                    let fix = if f.improvement.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", f.improvement)
                    };
                    println!(
                        "{:>4}× {}: {}{fix}  (last in {})",
                        f.count, f.category, f.problem, f.last_seen
                    );
                }
            }
            Ok(())
        }
        HistoryCommand::Estimate {
            text,
            effort: e,
            json,
        } => {
            let estimate = history.estimate(&text, effort(e.as_deref()), &prices(config));
            if json {
                print_json(&estimate)?;
            } else if estimate.basis == Basis::None {
                println!("no completed run recorded yet: nothing to estimate from");
            } else {
                let basis = match estimate.basis {
                    Basis::Similar => "similar completed runs",
                    Basis::Effort => "newest completed runs of this effort",
                    _ => "newest completed runs",
                };
                println!(
                    "based on {} {basis} (confidence {})",
                    estimate.sample, estimate.confidence
                );
                println!(
                    "tokens        p50 {:>10.0}  p90 {:>10.0}",
                    estimate.tokens.p50, estimate.tokens.p90
                );
                println!(
                    "work minutes  p50 {:>10.1}  p90 {:>10.1}",
                    estimate.minutes.p50, estimate.minutes.p90
                );
                println!(
                    "cost (USD)    p50 {:>10.2}  p90 {:>10.2}",
                    estimate.cost_usd.p50, estimate.cost_usd.p90
                );
                if !estimate.similar.is_empty() {
                    println!("most similar: {}", estimate.similar.join(", "));
                }
            }
            Ok(())
        }
        HistoryCommand::Reindex => {
            let started = std::time::Instant::now();
            let report = history.reindex()?;
            println!(
                "recorded {} ended runs in {} ({} still running) in {:.0} ms",
                report.runs,
                history.path().display(),
                report.running,
                started.elapsed().as_secs_f64() * 1000.0
            );
            if !report.unreadable.is_empty() {
                println!("unreadable state.json: {}", report.unreadable.join(", "));
            }
            Ok(())
        }
    };
    warnings(&history);
    result.map(|()| ExitCode::SUCCESS)
}

/// The dashboard `baton stats` shows (and embeds in its JSON).
pub fn dashboard(config: &Config, workflow: Option<&str>) -> Dashboard {
    let history = open(config);
    let d = history.dashboard(workflow, &prices(config));
    warnings(&history);
    d
}

/// Prints the dashboard as text.
pub fn print_dashboard(d: &Dashboard) {
    let pct = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.0} %", r * 100.0));
    println!(
        "history: {} ended runs ({} completed, {} abandoned); first-pass {}, review pass {}, {:.2} loops/run, {} tokens, ${:.2}",
        d.runs,
        d.completed,
        d.abandoned,
        pct(d.first_pass_rate),
        pct(d.review_pass_rate),
        d.loops_per_run,
        d.tokens,
        d.cost_usd
    );
    for e in &d.by_effort {
        println!(
            "  effort {:<2} {:>5} runs ({:>5} completed)  {:.2} loops/run  mean {:>9} tokens  {:>7.1} min  ${:.2}",
            e.effort,
            e.runs,
            e.completed,
            e.loops_per_run,
            e.mean_tokens,
            e.mean_minutes,
            e.mean_cost_usd
        );
    }
    for p in &d.by_phase {
        println!(
            "  {:<20} {:>5} runs  {:>5} visits  {:>4} back  mean {:>7.1} min  {:>9} tokens",
            p.phase, p.runs, p.visits, p.back, p.mean_minutes, p.mean_tokens
        );
    }
}
