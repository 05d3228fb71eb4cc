//! Command-line parsing and the commands for people.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use baton_config::{Config, Overrides};

/// The text after `baton --help`: where a newcomer starts.
const START_HERE: &str = "\
Start here:
  baton demo                    watch a whole pipeline run in a throwaway git repository (no LLM)
  baton init --client claude    register baton with your agent in this repository
  baton ls                      see where every piece of work in this repository stands
  baton tools                   the tools an agent gets, by profile

Your agent starts `baton serve` itself (baton init writes that entry); you only run it by
hand to try it (type JSON-RPC lines) or to serve HTTP: `baton serve --http localhost:8765`.";

/// baton: an MCP server that keeps AI coding agents on a deterministic, resumable workflow.
///
/// The agent does the work; baton decides which step comes next, refuses steps taken out of
/// order, checks that each phase left its file on disk, and records every transition. Each
/// piece of work lives in a folder under .specs/ whose state.json baton owns.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, after_help = START_HERE)]
pub struct Cli {
    /// The repository to work in (default: the nearest folder upwards with .git or baton.toml) [env: BATON_REPO_ROOT].
    #[arg(long, global = true, value_name = "PATH")]
    repo: Option<PathBuf>,
    /// Where the work folders live: a folder inside the repository, relative to it (default .specs) [env: BATON_SPECS_DIR].
    #[arg(long, global = true, value_name = "PATH")]
    specs_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// Whether the command only prints a report (lists, views, searches):
    /// when the reader of its output goes away (`baton ls | head -1`) it
    /// should end quietly, as other terminal tools do, not fail on the
    /// closed pipe. The server, the hook and the commands that drive agents
    /// or write runs handle a closed pipe themselves.
    pub fn only_prints(&self) -> bool {
        matches!(
            self.command,
            Command::Ls { .. }
                | Command::State { .. }
                | Command::Tools
                | Command::Workflow { .. }
                | Command::Manuals { .. }
                | Command::History { .. }
                | Command::Show { .. }
                | Command::Events { .. }
                | Command::Team { .. }
                | Command::Stats { .. }
        )
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the MCP server your agent talks to (over stdin/stdout unless --http is given).
    #[command(after_help = "\
Examples:
  baton serve                          what `baton init` registers for your agent (pipeline tools)
  baton serve --tools issue,manuals    the issue workflow and manual search instead
  baton serve --http localhost:8765    streamable HTTP at http://localhost:8765/mcp, events at /events")]
    Serve {
        /// Serve MCP over HTTP instead: HOST:PORT or just PORT (localhost:8765, 127.0.0.1:0 picks a free port, 8765 means 127.0.0.1:8765).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Which tools to expose: profiles or groups, comma-separated — pipeline (default), issue, manuals, recovery, all; see `baton tools` [env: BATON_TOOLS].
        #[arg(long, value_name = "NAMES")]
        tools: Option<String>,
        /// Print every JSON-RPC message, pretty, on stderr as it passes [env: BATON_DEV].
        #[arg(long)]
        dev: bool,
        /// Do not record the messages in .baton/logs/ [env: BATON_TRANSCRIPT=off].
        #[arg(long)]
        no_transcript: bool,
    },
    /// List every piece of work in this repository: its workflow, phase and status.
    Ls {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show where one piece of work stands and what comes next.
    State {
        #[command(subcommand)]
        command: StateCommand,
    },
    /// List the tools an agent can be given, by profile, and the groups they live in.
    Tools,
    /// Register baton with your agent in this repository: its MCP server, hooks and /baton-pipeline command.
    #[command(after_help = "\
`baton init` (Claude Code), `baton init codex`, `baton init cursor`, `baton init all`.
Claude Code: .mcp.json, .claude/settings.json (hooks and the Bash sandbox), .claude/agents/,
.claude/commands/baton-pipeline.md. Codex: .codex/config.toml and .codex/hooks.json. Cursor:
.cursor/mcp.json, .cursor/hooks.json, .cursor/commands/baton-pipeline.md. Files are merged: other
servers, your own hooks and settings stay. docs/clients.md says what each file holds.")]
    Init {
        /// Which agent: claude, cursor, codex or all (the same as --client).
        #[arg(value_enum, conflicts_with = "client", value_name = "AGENT")]
        agent: Option<crate::init_cmd::Client>,
        /// Which agent: claude, cursor, codex or all.
        #[arg(long, value_enum, default_value = "claude")]
        client: crate::init_cmd::Client,
    },
    /// Turn the agent client's hooks off (or on again) for one run, or release a held run: `baton enforce off|on|release <workspace> [reason]`.
    #[command(after_help = "\
A person's choice, in a terminal: it is recorded in the run's state.json (who, when, why).
While it is off, the hooks of Claude Code, Codex and Cursor let the agent do anything for that
run; baton's own gates (the MCP tools, person-only questions) still hold.
`release` lets a run go on that baton held because its state changed outside baton while an
agent's command ran (state_changed_outside_baton): check it with `baton show` first.

Examples:
  baton enforce off .specs/20260401-fix-auth the test suite needs to write fixtures
  baton enforce on .specs/20260401-fix-auth
  baton enforce release .specs/20260401-fix-auth")]
    Enforce {
        /// off, on, or release.
        #[arg(value_parser = ["off", "on", "release"])]
        switch: String,
        /// The run's workspace (.specs/…).
        workspace: String,
        /// Why (recorded).
        reason: Vec<String>,
    },
    /// The hook command of the agent clients: your client runs it on its events (`baton init` installs it); see docs/clients.md.
    #[command(after_help = "\
Reads the client's JSON on stdin and answers in the client's own format. Claude Code and Codex
events: pre-tool-use, post-tool-use, user-prompt-submit, stop, subagent-stop, session-start.
Cursor (--client cursor): before-shell-execution, before-mcp-execution, pre-tool-use,
after-file-edit, before-submit-prompt, stop.")]
    Hook {
        /// The event (see below).
        event: String,
        /// Whose contract: claude, codex or cursor.
        #[arg(long, value_enum, default_value = "claude")]
        client: crate::hook_cmd::HookClient,
        /// The run the session's agent works for (`baton run` passes it to the agents it starts): an unbound session is bound to it.
        #[arg(long, value_name = "WORKSPACE")]
        run: Option<String>,
    },
    /// Workflow definitions: list them, show one's phases, check your own files, print the format.
    Workflow {
        #[command(subcommand)]
        command: WorkflowCommand,
    },
    /// Search the project's manuals from the terminal (the same search the agent's manual tools use).
    Manuals {
        #[command(subcommand)]
        command: ManualsCommand,
    },
    /// Run a whole pipeline without an MCP client: baton starts your agent for each step.
    #[command(after_help = "\
--agent claude starts Claude Code (`claude -p`, JSON output) and --agent codex starts Codex
(`codex exec --json`) for each step, with the tools the phase allows: a read-only phase may
write only its artifact, an implementation phase may edit the repository, and neither may
commit or push (baton's own steps do) or answer your questions: baton's hooks, bound to the
run, refuse it inside the CLI. Their tokens, cost and model are recorded per phase.
Any other value is a command run with `sh -c` in the repository, the prompt on stdin.

Checkpoints are asked on this terminal (or answered by --auto). Without a terminal the run
stops at the question and prints the `baton answer` command and the command that resumes it:
pass the run's folder instead of a task, e.g. `baton run .specs/20260101-fix-login --agent claude`.

Exit status: 0 done, 4 abandoned, 3 waiting for a person's answer, 2 stopped by an error or a failed agent.

Examples:
  baton run \"fix the login typo\" --agent claude --nopr
  baton run .specs/20260101-fix-the-login-typo --agent claude")]
    Run {
        /// What to do: a task description or an issue URL; or a run's folder (.specs/<run>) to resume it.
        text: String,
        /// How much process: S, M or L (default: judged from the text).
        #[arg(long)]
        effort: Option<String>,
        /// Answer checkpoints yourself: go on, skip posting to the issue, retry a failed command once, then give up.
        #[arg(long)]
        auto: bool,
        /// Do not push or open a pull request.
        #[arg(long)]
        nopr: bool,
        /// The agent: claude, codex, a command (run with `sh -c`, prompt on stdin), or builtin:scripted.
        #[arg(long, value_name = "AGENT")]
        agent: String,
        /// Where the work goes: current (the branch you are on) or new (a new branch). Default: a new branch from the default branch, the current branch elsewhere.
        #[arg(long, value_name = "current|new", value_parser = crate::driver::BranchChoice::parse)]
        branch: Option<crate::driver::BranchChoice>,
        /// Stop for you once the agents have reported this many US dollars (default: [budget] max_cost_usd in baton.toml).
        #[arg(long, value_name = "USD", value_parser = crate::driver::parse_max_cost)]
        max_cost: Option<f64>,
        /// Stop for you once the agents have reported this many tokens (default: [budget] max_tokens in baton.toml).
        #[arg(long, value_name = "N", value_parser = crate::driver::parse_max_tokens)]
        max_tokens: Option<u64>,
    },
    /// Run a complete pipeline in a throwaway git repository with a scripted agent (no LLM, no network).
    Demo {
        /// How much process: S, M or L.
        #[arg(long, default_value = "L")]
        effort: String,
        /// Keep the repository afterwards and print where it is.
        #[arg(long)]
        keep: bool,
    },
    /// Past runs: similar runs, review patterns, friction, estimates, reindex.
    History {
        #[command(subcommand)]
        command: crate::history_cmd::HistoryCommand,
    },
    /// Answer the question a run waits at (a checkpoint, a human gate, a
    /// decision), as the person at this terminal: e.g. `baton answer
    /// .specs/20260401-fix approve`, `baton answer 20260401-fix revise "split
    /// the API change"`. Without an answer it shows the question and asks.
    Answer {
        /// The run: folder name, .specs/<name>, or absolute path.
        workspace: String,
        /// The answer: one of the question's options, then optional text.
        answer: Vec<String>,
    },
    /// One run at a glance: phases with time and tokens, tasks, the question
    /// it waits at (full text, options), artifacts, timeline.
    Show {
        /// The run: folder name, .specs/<name>, or absolute path.
        workspace: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// The whole timeline (default: the last entries).
        #[arg(long)]
        all: bool,
    },
    /// The repository's events (from every baton process); --follow keeps printing new ones.
    Events {
        /// Keep printing events as they happen, until interrupted.
        #[arg(long, short = 'f')]
        follow: bool,
        /// Only this run (folder name, .specs/<name>, or absolute path).
        #[arg(long)]
        run: Option<String>,
        /// How many past events to print first.
        #[arg(long, short = 'n', default_value_t = 20)]
        last: usize,
        /// One JSON record per line.
        #[arg(long)]
        json: bool,
    },
    /// The live dashboard for every run: watch, answer, revise, abandon (docs/dashboard.md).
    Dashboard {
        /// Port (default 8377, or BATON_DASHBOARD_PORT; 0 picks a free one).
        #[arg(long)]
        port: Option<u16>,
        /// Address to listen on; anything but loopback needs an access token.
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
    },
    /// Team mode (one PostgreSQL for every machine of a team): this machine, the database, what waits to be sent (docs/team.md).
    Team {
        #[command(subcommand)]
        command: TeamCommand,
    },
    /// How runs went: time per phase, review loops, per workflow.
    Stats {
        /// Only runs of this workflow (e.g. forge, issue).
        #[arg(long)]
        workflow: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum TeamCommand {
    /// This working copy's identity, the database (password hidden), whether it answers, the schema, writes waiting, how events arrive.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ManualsCommand {
    /// Search the manuals (in MANUALS_ROOT, default ./manuals) and print the best sections.
    Find {
        /// What to look for, in Japanese or English.
        query: String,
        /// Only this manual (a folder name under the manuals root).
        #[arg(long)]
        manual: Option<String>,
        /// How many sections to print.
        #[arg(long, default_value_t = 10)]
        limit: u64,
        /// Print JSON (what the agent's manual_hits returns).
        #[arg(long)]
        json: bool,
    },
    /// Build or refresh the search index now, showing progress (searches build it when needed).
    Index,
}

#[derive(Debug, Subcommand)]
enum WorkflowCommand {
    /// Every workflow baton knows, built-in or from .baton/workflows/.
    List,
    /// The phases of one workflow and where each can lead.
    Show {
        /// Workflow id (see `baton workflow list`).
        id: String,
    },
    /// Check your own definition files; prints each problem as file:line:column: field: message.
    Validate {
        /// YAML or JSON files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the JSON Schema of the definition format (for your editor).
    Schema,
}

#[derive(Debug, Subcommand)]
enum StateCommand {
    /// Where a piece of work stands and what comes next (or its whole state.json with --raw).
    Show {
        /// The work folder: its name, .specs/<name>, or its path.
        workspace: String,
        /// Print state.json as stored.
        #[arg(long)]
        raw: bool,
    },
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if !matches!(cli.command, Command::Hook { .. }) {
        crate::person_note::warn_if_unusable();
    }
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
            // stdio serves one client: one thread runs the protocol and the
            // tool handlers run on the blocking pool, so two idle workers
            // would only cost memory. HTTP serves many connections.
            let runtime = match http {
                Some(_) => tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build(),
                None => tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build(),
            }
            .context("starting the async runtime")?;
            runtime.block_on(async move {
                match http {
                    Some(addr) => baton_mcp::serve_http(config, &addr).await,
                    None => baton_mcp::serve_stdio(config).await,
                }
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ls { json } => {
            let config = Config::load(&overrides)?;
            crate::ls_cmd::run(&config, json)
        }
        Command::Show {
            workspace,
            json,
            all,
        } => {
            let config = Config::load(&overrides)?;
            crate::show_cmd::run(config, &workspace, json, all)
        }
        Command::Events {
            follow,
            run,
            last,
            json,
        } => {
            let config = Config::load(&overrides)?;
            crate::events_cmd::run(
                &config,
                &crate::events_cmd::EventsOptions {
                    follow,
                    run,
                    last,
                    json,
                },
            )
        }
        Command::Dashboard { port, bind } => {
            person_only()?;
            let config = Config::load(&overrides)?;
            crate::dashboard_cmd::run(config, port, bind)
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
        Command::Enforce {
            switch,
            workspace,
            reason,
        } => {
            person_only()?;
            let config = Config::load(&overrides)?;
            if switch == "release" {
                crate::enforce_cmd::release(config, &workspace)
            } else {
                crate::enforce_cmd::run(config, &workspace, switch == "on", &reason)
            }
        }
        Command::Hook { event, client, run } => Ok(crate::hook_cmd::run(
            client,
            &event,
            run.as_deref(),
            &overrides,
        )),
        Command::Init { agent, client } => {
            let config = Config::load(&overrides)?;
            crate::init_cmd::run(&config, agent.unwrap_or(client))
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
            branch,
            max_cost,
            max_tokens,
        } => {
            // `--auto` is the person's grant to answer their questions:
            // never from inside an agent's sandbox (a program the agent ran).
            if auto {
                person_only()?;
            }
            // Checked before anything is opened or written.
            let agent = crate::agents::Agent::parse(&agent, std::env::var_os("PATH").as_deref())?;
            let config = Config::load(&overrides)?;
            let repo = config.repo_root.clone();
            let svc = std::sync::Arc::new(
                baton_usecases::Services::open(config, env!("CARGO_PKG_VERSION"))
                    .map_err(|e| anyhow::anyhow!(e.message))?,
            );
            let notifier = baton_notify::start_for_services(std::sync::Arc::clone(&svc));
            // Team mode (off: nothing): answers given on other machines for
            // this machine's runs, other machines' history and events.
            baton_usecases::team::start_background(&svc);
            let opts = crate::driver::RunOptions {
                text,
                effort,
                auto,
                nopr,
                agent,
                branch: branch.unwrap_or_default(),
                budget: baton_config::Budget {
                    max_cost_usd: max_cost.or(svc.config.budget.max_cost_usd),
                    max_tokens: max_tokens.or(svc.config.budget.max_tokens),
                },
            };
            let ran = crate::driver::run(&svc, &repo, &opts);
            if let Some(n) = notifier {
                n.finish(std::time::Duration::from_secs(5));
            }
            let ran = ran?;
            Ok(if ran.waits_for_person {
                ExitCode::from(3)
            } else if ran.abandoned {
                ExitCode::from(4)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Demo { effort, keep } => crate::demo_cmd::run(&effort, keep),
        Command::History { command } => {
            let config = Config::load(&overrides)?;
            crate::history_cmd::run(&config, command)
        }
        Command::Answer { workspace, answer } => {
            person_only()?;
            let config = Config::load(&overrides)?;
            crate::answer_cmd::run(config, &workspace, &answer)
        }
        Command::Team {
            command: TeamCommand::Status { json },
        } => {
            let config = Config::load(&overrides)?;
            crate::team_cmd::status(config, json)
        }
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

fn show(config: &Config, workspace: &str, raw: bool) -> anyhow::Result<ExitCode> {
    use baton_usecases::show::{StateGetArgs, WorkspaceArgs, state_get, state_resume_info};
    let svc = baton_usecases::Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
    let refused = |e: baton_usecases::Error| anyhow::anyhow!("{} ({})", e.message, e.code.as_str());
    if raw {
        let state = state_get(
            &svc,
            StateGetArgs {
                workspace: workspace.to_string(),
                field: None,
            },
        )
        .map_err(refused)?;
        println!("{}", serde_json::to_string_pretty(&state.value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let info = state_resume_info(
        &svc,
        WorkspaceArgs {
            workspace: workspace.to_string(),
        },
    )
    .map_err(refused)?;
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

/// A person's command (`answer`, `enforce`, `dashboard`) refuses at once
/// inside an agent's sandbox, before it reads anything: a program the agent
/// runs may have made itself a terminal, and only the person's own
/// terminal can write baton's witness folder (`baton_usecases::witness`).
fn person_only() -> anyhow::Result<()> {
    baton_usecases::witness::person_may_write().map_err(|m| anyhow::anyhow!(m))
}
