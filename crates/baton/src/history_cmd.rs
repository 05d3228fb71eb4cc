//! `baton history …` and the dashboard part of `baton stats`: the run
//! history (docs/history.md) for people, through the same use cases
//! ([`baton_usecases::history`]) the MCP tools call, so the numbers match.

use std::process::ExitCode;

use anyhow::anyhow;
use baton_config::Config;
use baton_usecases::Services;
use baton_usecases::history as uc;
use baton_usecases::history::{Basis, Dashboard, Severity};
use clap::Subcommand;

/// `baton history` subcommands.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Past runs most like a text, with the words that matched.
    Search {
        /// A request, a few words (Japanese or English).
        query: String,
        /// How many runs (at most 50).
        #[arg(long, default_value_t = 5)]
        limit: u32,
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
        /// How many patterns (at most 50).
        #[arg(long, default_value_t = 10)]
        limit: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The friction map from past improvement reports.
    Friction {
        /// How many points (at most 50).
        #[arg(long, default_value_t = 10)]
        limit: u32,
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

/// The use cases' services for a history command: no event log is opened
/// (these commands publish no events).
fn services(config: &Config) -> Services {
    Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"))
}

fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// A use-case refusal as a CLI error.
fn refused(e: baton_usecases::Error) -> anyhow::Error {
    anyhow!(e.message)
}

/// Runs a `baton history` subcommand.
pub fn run(config: &Config, command: HistoryCommand) -> anyhow::Result<ExitCode> {
    // Warnings (a damaged file rebuilt, …) go to stderr through the log.
    run_on(&services(config), command).map(|()| ExitCode::SUCCESS)
}

fn run_on(svc: &Services, command: HistoryCommand) -> anyhow::Result<()> {
    match command {
        HistoryCommand::Search { query, limit, json } => {
            let found = uc::search(
                svc,
                uc::SearchArgs {
                    query,
                    limit: Some(limit),
                },
            )
            .map_err(refused)?;
            if json {
                return print_json(&found);
            }
            if found.runs.is_empty() {
                println!("no similar run among {} recorded", found.recorded);
            }
            for h in &found.runs {
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
            Ok(())
        }
        HistoryCommand::Patterns {
            agent,
            phase,
            severity,
            limit,
            json,
        } => {
            let found = uc::patterns(
                svc,
                uc::PatternsArgs {
                    agent,
                    phase,
                    severity: match severity.as_deref() {
                        Some("CRITICAL") => Some(Severity::Critical),
                        Some("MINOR") => Some(Severity::Minor),
                        _ => None,
                    },
                    limit: Some(limit),
                },
            )
            .map_err(refused)?;
            if json {
                return print_json(&found);
            }
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
            Ok(())
        }
        HistoryCommand::Friction { limit, json } => {
            let found =
                uc::friction(svc, uc::FrictionArgs { limit: Some(limit) }).map_err(refused)?;
            if json {
                return print_json(&found);
            }
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
            Ok(())
        }
        HistoryCommand::Estimate { text, effort, json } => {
            let found = uc::estimate(
                svc,
                uc::EstimateArgs {
                    request: text,
                    effort,
                },
            )
            .map_err(refused)?;
            if json {
                return print_json(&found);
            }
            let estimate = &found.estimate;
            if estimate.basis == Basis::None {
                println!("no completed run recorded yet: nothing to estimate from");
                return Ok(());
            }
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
            Ok(())
        }
        HistoryCommand::Reindex => {
            let started = std::time::Instant::now();
            let report = uc::reindex(svc, uc::ReindexArgs {}).map_err(refused)?;
            println!(
                "recorded {} ended runs in {} ({} still running) in {:.0} ms",
                report.runs,
                svc.history.path().display(),
                report.running,
                started.elapsed().as_secs_f64() * 1000.0
            );
            if !report.unreadable.is_empty() {
                println!("unreadable state.json: {}", report.unreadable.join(", "));
            }
            Ok(())
        }
    }
}

/// The dashboard `baton stats` shows (and embeds in its JSON): the
/// `analytics_dashboard` use case.
pub fn dashboard(config: &Config, workflow: Option<&str>) -> anyhow::Result<Dashboard> {
    uc::dashboard(
        &services(config),
        uc::DashboardArgs {
            workflow: workflow.map(str::to_string),
        },
    )
    .map_err(refused)
}

/// Prints the dashboard as text.
pub fn print_dashboard(d: &Dashboard) {
    use crate::text_table::Table;
    let pct = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.0} %", r * 100.0));
    let count = crate::show_cmd::count;
    println!(
        "Ended runs (the run history, every branch): {} — {} completed, {} abandoned; first-pass {}, review pass {}, {:.2} loops per run, {} tokens, ${:.2}\n",
        d.runs,
        d.completed,
        d.abandoned,
        pct(d.first_pass_rate),
        pct(d.review_pass_rate),
        d.loops_per_run,
        count(d.tokens),
        d.cost_usd
    );
    let mut by_effort = Table::new(
        "BY EFFORT",
        &[
            ("effort", false),
            ("runs", true),
            ("completed", true),
            ("loops/run", true),
            ("mean tokens", true),
            ("mean time", true),
            ("mean cost", true),
        ],
    );
    for e in &d.by_effort {
        by_effort.row(vec![
            e.effort.to_string(),
            e.runs.to_string(),
            e.completed.to_string(),
            format!("{:.2}", e.loops_per_run),
            count(e.mean_tokens),
            format!("{:.1} min", e.mean_minutes),
            format!("${:.2}", e.mean_cost_usd),
        ]);
    }
    println!("{}", by_effort.render());
    let mut by_phase = Table::new(
        "BY PHASE",
        &[
            ("phase", false),
            ("runs", true),
            ("visits", true),
            ("sent back", true),
            ("mean time", true),
            ("mean tokens", true),
        ],
    );
    for p in &d.by_phase {
        by_phase.row(vec![
            p.phase.clone(),
            p.runs.to_string(),
            p.visits.to_string(),
            p.back.to_string(),
            format!("{:.1} min", p.mean_minutes),
            count(p.mean_tokens),
        ]);
    }
    println!("{}", by_phase.render());
}
