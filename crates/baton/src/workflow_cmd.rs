//! `baton workflow …` and `baton stats`: workflow definitions and run
//! analytics for people.

use std::path::PathBuf;
use std::process::ExitCode;

use baton_config::Config;
use baton_usecases::Services;
use baton_usecases::workflows::{StatsArgs, workflow_stats};
use baton_workflow::{COMPLETED, Source, WorkflowDefinition, parse_definition};

/// What `baton workflow` does.
pub enum Action {
    /// List definitions.
    List,
    /// Show one definition's graph.
    Show(String),
    /// Validate files.
    Validate(Vec<PathBuf>),
    /// Print the JSON Schema.
    Schema,
}

/// Runs a `baton workflow` subcommand.
pub fn run(config: &Config, action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::List => {
            let svc = Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
            for (def, source) in svc.workflows.iter() {
                let from = match source {
                    Source::Builtin { .. } => "built-in".to_string(),
                    Source::File { path } => path.clone(),
                };
                println!(
                    "{:<12} {:<28} {:>2} phases  {from}",
                    def.id,
                    def.label,
                    def.phases.len()
                );
            }
            for problem in svc.workflow_errors.iter() {
                eprintln!("skipped: {problem}");
            }
            Ok(if svc.workflow_errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Action::Show(id) => {
            let svc = Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
            let def = svc
                .workflow(&id)
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            print!("{}", render_graph(&def));
            Ok(ExitCode::SUCCESS)
        }
        Action::Validate(files) => {
            let mut failed = false;
            for file in files {
                let name = file.display().to_string();
                let text = baton_workflow::read_definition_file(&file)
                    .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
                match parse_definition(&name, &text) {
                    Ok(def) => println!(
                        "{name}: ok (workflow {:?}, {} phases)",
                        def.id,
                        def.phases.len()
                    ),
                    Err(problems) => {
                        failed = true;
                        for p in problems {
                            println!("{p}");
                        }
                    }
                }
            }
            Ok(if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Action::Schema => {
            let schema = schemars::schema_for!(WorkflowDefinition);
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The phase graph, one phase per line with its outgoing edges.
pub fn render_graph(def: &WorkflowDefinition) -> String {
    let mut out = format!("{} — {} (v{})\n", def.id, def.label, def.version);
    for (i, p) in def.phases.iter().enumerate() {
        let mut line = format!(
            "{:>2}. {:<16} [{}]",
            i + 1,
            p.id,
            // The kind's wire name (snake_case, as in the YAML).
            serde_json::to_value(p.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        );
        let default = def.default_successor(&p.id, &[]);
        line.push_str(&format!(
            "  → {}",
            if default == COMPLETED {
                "(end)"
            } else {
                &default
            }
        ));
        for t in &p.transitions {
            let mut cond = Vec::new();
            if let Some(r) = t.when.result {
                cond.push(format!(
                    "result={}",
                    serde_json::to_value(r)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or("")
                ));
            }
            if !t.when.verdict.is_empty() {
                cond.push(format!("verdict∈{}", t.when.verdict.join("|")));
            }
            line.push_str(&format!("; {} → {}", cond.join(","), t.goto));
        }
        if let Some(limit) = p.max_visits {
            line.push_str(&format!("  (at most {limit} visits)"));
        }
        if !p.artifacts.is_empty() {
            line.push_str(&format!("  writes {}", p.artifacts.join(", ")));
        }
        if !p.skip_for.is_empty() {
            line.push_str(&format!("  skipped for {}", p.skip_for.join(", ")));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `baton stats`.
pub fn stats(config: &Config, workflow: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let svc = Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
    let stats = workflow_stats(
        &svc,
        StatsArgs {
            workflow: workflow.map(str::to_string),
        },
    )
    .map_err(|e| anyhow::anyhow!("{} ({})", e.message, e.code.as_str()))?;
    let (runs, by_workflow) = (stats.runs, stats.by_workflow);
    // Ended runs from the run history: the numbers the analytics tools give.
    let dashboard = crate::history_cmd::dashboard(config, workflow)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"runs": runs, "byWorkflow": by_workflow, "dashboard": dashboard})
            )?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if dashboard.runs > 0 {
        crate::history_cmd::print_dashboard(&dashboard);
    }
    if runs.is_empty() {
        println!(
            "No runs in {} on this branch yet.",
            config.specs_root.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    use crate::text_table::Table;
    for (id, w) in &by_workflow {
        println!(
            // (`recoveryTrips` of --json counts visits to the phases a
            // failure leads to; in a workflow whose revisions go back to
            // phases every run visits, that is not a count of trouble, so
            // the line leaves it out.)
            "Runs of the workflow {id} in {} (this branch): {} — {} completed, {} abandoned, {} active\n",
            config.specs_root.display(),
            w.runs,
            w.completed,
            w.abandoned,
            w.active,
        );
        let mut phases = Table::new(
            &format!("PHASES OF {}", id.to_uppercase()),
            &[("phase", false), ("visits", true), ("mean time", true)],
        );
        for (phase, mean) in &w.mean_phase_ms {
            let visits = w.phase_visits.get(phase).copied().unwrap_or(0);
            phases.row(vec![
                phase.clone(),
                visits.to_string(),
                crate::show_cmd::duration((*mean).max(0) as u64),
            ]);
        }
        println!("{}", phases.render());
    }
    Ok(ExitCode::SUCCESS)
}
