//! `baton events [--follow] [--run RUN]`: the repository's events in the
//! terminal — the last ones from the log, then, with `--follow`, every event
//! any baton process appends, as it happens (the same follower the
//! dashboard uses: file notifications plus a byte offset, rotation-aware).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use baton_config::Config;
use baton_usecases::Services;
use baton_usecases::events::follow::{self, Tail};
use baton_usecases::events::{EventRecord, run_id_of};
use baton_usecases::notifications::run_id;

/// What to print.
#[derive(Debug, Clone)]
pub struct EventsOptions {
    /// Keep printing new events until interrupted.
    pub follow: bool,
    /// Only this run (folder name, `.specs/<name>` or absolute path).
    pub run: Option<String>,
    /// How many past events to print first.
    pub last: usize,
    /// One JSON record per line instead of columns.
    pub json: bool,
}

/// One event as a line.
pub fn line(r: &EventRecord) -> String {
    let time = r.timestamp.get(11..19).unwrap_or(r.timestamp.as_str());
    let mut text = format!(
        "{time}  {:<17} {:<20} {:<14} {}",
        r.event.as_str(),
        r.phase,
        serde_json::to_value(r.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        run_id(&r.workspace)
    );
    if let Some(d) = &r.detail {
        text.push_str(&format!("  {d}"));
    }
    text
}

/// Runs the command.
pub fn run(config: &Config, opts: &EventsOptions) -> anyhow::Result<ExitCode> {
    // Team mode: the team's log (every machine's runs), from the database.
    if config.team.enabled() {
        match team(config, opts) {
            Ok(code) => return Ok(code),
            Err(e) => eprintln!("baton: showing this machine's events only: {e}"),
        }
    }
    let only = match &opts.run {
        Some(r) => {
            let svc = Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
            Some(run_id_of(&svc, r).map_err(|e| anyhow::anyhow!("{}", e.message))?)
        }
        None => None,
    };
    let keep = move |r: &EventRecord| only.as_ref().is_none_or(|id| run_id(&r.workspace) == *id);
    let json = opts.json;
    let print = move |records: &[EventRecord]| -> bool {
        let mut out = std::io::stdout().lock();
        for r in records {
            let text = if json {
                serde_json::to_string(r).unwrap_or_default()
            } else {
                line(r)
            };
            // A closed pipe (`| head`) ends the command quietly.
            if writeln!(out, "{text}").is_err() {
                return false;
            }
        }
        out.flush().is_ok()
    };
    let (tail, recent) = Tail::start(&config.events.log_path, usize::MAX);
    let recent: Vec<EventRecord> = recent.into_iter().filter(|r| keep(r)).collect();
    if let Some(r) = &opts.run
        && recent.is_empty()
    {
        unknown_run(config, r)?;
    }
    let from = recent.len().saturating_sub(opts.last);
    if !print(&recent[from..]) {
        return Ok(ExitCode::SUCCESS);
    }
    if !opts.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let _handle = follow::spawn(tail, move |batch| {
        let mine: Vec<EventRecord> = batch.into_iter().filter(|r| keep(r)).collect();
        if print(&mine) {
            true
        } else {
            let _ = done_tx.send(());
            false
        }
    })
    .context("following the event log")?;
    // Until interrupted (Ctrl-C ends the process) or the output closes.
    let _ = done_rx.recv();
    Ok(ExitCode::SUCCESS)
}

/// Fails with a message for the person when `run` names no run here: no
/// events in the log and no folder under `.specs/` (a typo would otherwise
/// print nothing and exit 0).
fn unknown_run(config: &Config, run: &str) -> anyhow::Result<()> {
    let svc = Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
    let exists = baton_usecases::events::run_folder_exists(&svc, run)
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
    if exists {
        return Ok(());
    }
    let shown: String = run.chars().take(80).collect();
    let more = if shown.len() < run.len() { "…" } else { "" };
    anyhow::bail!(
        "no run named `{shown}{more}` in this repository (no events for it, no folder under .specs/).\n\
         `baton ls` lists the runs; pass one of their names, e.g. `baton events --run 20260101-fix-login`,\n\
         or leave out --run to see every run's events."
    )
}

/// The team's events (team mode): the last ones, then with `--follow`
/// every new one as it arrives, each with the machine its run runs on.
fn team(config: &Config, opts: &EventsOptions) -> anyhow::Result<ExitCode> {
    use baton_usecases::team::{self, TeamEventView};
    let svc = baton_usecases::Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
    let fail = |e: baton_usecases::Error| anyhow::anyhow!("{}", e.message);
    // The log's position first, then the last events up to it: an event
    // written between the two reads is left to the follow below (read
    // the other way round it would be in neither).
    let Some(position) = team::log_position(&svc).map_err(fail)? else {
        anyhow::bail!("team mode is off");
    };
    let Some(mut recent) = team::last_events(&svc, opts.last, opts.run.as_deref()).map_err(fail)?
    else {
        anyhow::bail!("team mode is off");
    };
    recent.retain(|e| e.position() <= position);
    let json = opts.json;
    let print = move |views: &[TeamEventView]| -> bool {
        let mut out = std::io::stdout().lock();
        for v in views {
            let text = if json {
                serde_json::to_string(v).unwrap_or_default()
            } else {
                let mut record = v.record.clone();
                record.workspace = v.run.clone();
                format!("{}  {}", line(&record), v.machine.name)
            };
            if writeln!(out, "{text}").is_err() {
                return false;
            }
        }
        out.flush().is_ok()
    };
    let after = position;
    if !print(&recent) || !opts.follow {
        return Ok(ExitCode::SUCCESS);
    }
    // Until interrupted (Ctrl-C ends the process) or the output closes.
    team::follow_events(&svc, after, opts.run.as_deref(), print).map_err(fail)?;
    Ok(ExitCode::SUCCESS)
}
