//! Command-line parsing and the commands for people.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use baton_config::{Config, Overrides};
use baton_engine::summary::{resume_info, row};
use baton_state::StateStore;

/// baton: keeps AI coding agents on a deterministic, resumable, observable workflow.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, long_about = None)]
pub struct Cli {
    /// Repository root (default: nearest ancestor with .git or baton.toml) [env: BATON_REPO_ROOT].
    #[arg(long, global = true)]
    repo: Option<PathBuf>,
    /// Specs root, relative to the repository root (default .specs) [env: BATON_SPECS_DIR].
    #[arg(long, global = true)]
    specs_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the MCP server (stdio unless --http is given).
    Serve {
        /// Serve streamable HTTP on this address instead of stdio (e.g. 127.0.0.1:8765; port 0 picks one).
        #[arg(long)]
        http: Option<SocketAddr>,
        /// Which tools to expose: profiles or groups, comma-separated — pipeline (default), issue, manuals, recovery, all; see `baton tools` [env: BATON_TOOLS].
        #[arg(long, value_name = "NAMES")]
        tools: Option<String>,
        /// Development mode: echo every JSON-RPC message, pretty-printed, to stderr [env: BATON_DEV].
        #[arg(long)]
        dev: bool,
        /// Do not write the JSON-RPC transcript [env: BATON_TRANSCRIPT=off].
        #[arg(long)]
        no_transcript: bool,
    },
    /// List every workspace of the repository with its workflow, phase and status.
    Ls {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Read workspace state.
    State {
        #[command(subcommand)]
        command: StateCommand,
    },
    /// List the tool groups and their tools.
    Tools,
    /// Register baton with your agent client in this repository (.mcp.json, .cursor/mcp.json, Codex snippet).
    Init {
        /// Which client.
        #[arg(long, value_enum, default_value = "claude")]
        client: crate::init_cmd::Client,
    },
    /// Workflow definitions: list, show, validate, schema.
    Workflow {
        #[command(subcommand)]
        command: WorkflowCommand,
    },
    /// Search project manuals (seed 002): find, index.
    Manuals {
        #[command(subcommand)]
        command: ManualsCommand,
    },
    /// Drive a whole pipeline headless: agents run as COMMAND (prompt on stdin), exec argv, checkpoints on the terminal.
    Run {
        /// The task text or issue URL.
        text: String,
        /// S, M or L (default: detected from the text).
        #[arg(long)]
        effort: Option<String>,
        /// Answer checkpoints automatically (proceed; post-to-source: skip; a failed command: retry once, then abandon).
        #[arg(long)]
        auto: bool,
        /// Do not push or open a pull request.
        #[arg(long)]
        nopr: bool,
        /// The agent command, run with `sh -c` in the repository root, or `builtin:scripted`.
        #[arg(long)]
        agent: String,
    },
    /// Run a complete pipeline in a temporary git repository with the built-in scripted agent (no LLM).
    Demo {
        /// S, M or L.
        #[arg(long, default_value = "L")]
        effort: String,
        /// Keep the temporary repository and print its path.
        #[arg(long)]
        keep: bool,
    },
    /// Run analytics: per-phase durations, loop trips, per workflow.
    Stats {
        /// Only runs of this workflow id.
        #[arg(long)]
        workflow: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ManualsCommand {
    /// Search the manuals under MANUALS_ROOT (default ./manuals).
    Find {
        /// What to look for (Japanese or English).
        query: String,
        /// Only this manual.
        #[arg(long)]
        manual: Option<String>,
        /// How many candidates to print.
        #[arg(long, default_value_t = 10)]
        limit: u64,
        /// Print the manual_hits JSON.
        #[arg(long)]
        json: bool,
    },
    /// Build or refresh the on-disk index, with progress.
    Index,
}

#[derive(Debug, Subcommand)]
enum WorkflowCommand {
    /// Every known workflow with where it came from.
    List,
    /// The phase graph of one workflow.
    Show {
        /// Workflow id.
        id: String,
    },
    /// Check definition files; prints every problem as file:line:column: field: message.
    Validate {
        /// YAML or JSON files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the JSON Schema of the definition format.
    Schema,
}

#[derive(Debug, Subcommand)]
enum StateCommand {
    /// Show where a workspace stands (or its whole state.json with --raw).
    Show {
        /// Folder name, .specs/<name>, or absolute path.
        workspace: String,
        /// Print state.json as stored.
        #[arg(long)]
        raw: bool,
    },
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut overrides = Overrides {
        repo_root: cli.repo,
        specs_dir: cli.specs_dir,
        ..Overrides::default()
    };
    match cli.command {
        Command::Serve {
            http,
            tools,
            dev,
            no_transcript,
        } => {
            overrides.tool_groups = tools;
            overrides.dev = dev;
            overrides.no_transcript = no_transcript;
            let config = Config::load(&overrides)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(async move {
                match http {
                    Some(addr) => baton_mcp::serve_http(config, addr).await,
                    None => baton_mcp::serve_stdio(config).await,
                }
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ls { json } => {
            let config = Config::load(&overrides)?;
            ls(&config, json)
        }
        Command::State {
            command: StateCommand::Show { workspace, raw },
        } => {
            let config = Config::load(&overrides)?;
            show(&config, &workspace, raw)
        }
        Command::Workflow { command } => {
            let config = Config::load(&overrides)?;
            crate::workflow_cmd::run(&config, command_to(command))
        }
        Command::Init { client } => {
            let config = Config::load(&overrides)?;
            crate::init_cmd::run(&config, client)
        }
        Command::Manuals { command } => {
            let config = Config::load(&overrides)?;
            match command {
                ManualsCommand::Find {
                    query,
                    manual,
                    limit,
                    json,
                } => crate::manuals_cmd::find(&config, &query, manual.as_deref(), limit, json),
                ManualsCommand::Index => crate::manuals_cmd::index(&config),
            }
        }
        Command::Run {
            text,
            effort,
            auto,
            nopr,
            agent,
        } => {
            let config = Config::load(&overrides)?;
            let repo = config.repo_root.clone();
            let ctx = baton_mcp::build_context(config)?;
            let opts = crate::driver::RunOptions {
                text,
                effort,
                auto,
                nopr,
                agent: crate::driver::Agent::parse(&agent),
            };
            crate::driver::run(&ctx, &repo, &opts)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { effort, keep } => crate::demo_cmd::run(&effort, keep),
        Command::Stats { workflow, json } => {
            let config = Config::load(&overrides)?;
            crate::workflow_cmd::stats(&config, workflow.as_deref(), json)
        }
        Command::Tools => {
            print!("{}", tools_overview());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn command_to(c: WorkflowCommand) -> crate::workflow_cmd::Action {
    use crate::workflow_cmd::Action;
    match c {
        WorkflowCommand::List => Action::List,
        WorkflowCommand::Show { id } => Action::Show(id),
        WorkflowCommand::Validate { files } => Action::Validate(files),
        WorkflowCommand::Schema => Action::Schema,
    }
}

/// `baton tools`: the profiles with their tools, then the groups.
fn tools_overview() -> String {
    use baton_mcp::tools::{ALL_PROFILE, DEFAULT_PROFILE, GROUPS, PROFILES, profiles_of};
    use std::fmt::Write;
    let tools = baton_mcp::tools::all_tools();
    let mut out = format!(
        "Tool profiles: `baton serve --tools NAME[,NAME...]` (or BATON_TOOLS) exposes them; without it, `{DEFAULT_PROFILE}`.\n"
    );
    for (profile, about) in PROFILES {
        let _ = writeln!(out, "\n{profile}: {about}");
        if *profile == ALL_PROFILE {
            continue;
        }
        for t in tools
            .iter()
            .filter(|t| profiles_of(t.name).contains(profile))
        {
            let _ = writeln!(out, "  {:<27} {}", t.name, first_sentence(t.description));
        }
    }
    let _ = writeln!(
        out,
        "\nGroups (where the tools live; --tools accepts them too):"
    );
    for (group, about) in GROUPS {
        let _ = writeln!(out, "  {group:<10} {about}");
    }
    out
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}

fn ls(config: &Config, json: bool) -> anyhow::Result<ExitCode> {
    let store = StateStore::new(&config.repo_root, &config.specs_root);
    let (registry, _) = baton_workflow::load_registry(&config.workflows_dir);
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for (ws, state) in store.list()? {
        match state {
            Ok(state) => rows.push(row(&state, registry.get(&state.workflow).as_deref())),
            Err(e) => problems.push((ws.display, e.to_string())),
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "workspaces": rows,
                "unreadable": problems.iter().map(|(w, e)| serde_json::json!({"workspace": w, "error": e})).collect::<Vec<_>>(),
            }))?
        );
    } else if rows.is_empty() && problems.is_empty() {
        println!("no workspaces under {}", config.specs_root.display());
    } else {
        println!(
            "{:<40} {:<10} {:<20} {:<15} {:>8}",
            "WORKSPACE", "WORKFLOW", "PHASE", "STATUS", "PROGRESS"
        );
        for r in &rows {
            println!(
                "{:<40} {:<10} {:<20} {:<15} {:>8}",
                r.workspace, r.workflow, r.current_phase, r.status, r.progress
            );
        }
        for (w, e) in &problems {
            println!("{w:<40} unreadable: {e}");
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn show(config: &Config, workspace: &str, raw: bool) -> anyhow::Result<ExitCode> {
    let store = StateStore::new(&config.repo_root, &config.specs_root);
    let ws = store.resolve(workspace)?;
    let state = store.load(&ws)?;
    if raw {
        print!("{}", state.to_json());
        return Ok(ExitCode::SUCCESS);
    }
    let (registry, _) = baton_workflow::load_registry(&config.workflows_dir);
    let definition = registry
        .get(&state.workflow)
        .with_context(|| format!("unknown workflow {:?}", state.workflow))?;
    let info = resume_info(&state, &definition);
    println!("workspace   {}", info.workspace);
    println!("workflow    {}", info.workflow);
    println!(
        "phase       {} ({}) — {}",
        info.current_phase, info.current_phase_label, info.current_phase_status
    );
    println!("completed   {}", info.completed_phases.join(", "));
    if !info.skipped_phases.is_empty() {
        println!("skipped     {}", info.skipped_phases.join(", "));
    }
    if !info.remaining_phases.is_empty() {
        println!("remaining   {}", info.remaining_phases.join(", "));
    }
    if let Some(e) = &info.error {
        println!("error       {e}");
    }
    println!("next        {}", info.next_step);
    Ok(ExitCode::SUCCESS)
}
