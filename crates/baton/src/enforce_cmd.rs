//! `baton enforce off|on <workspace> [reason]`: a person turns the client
//! hooks' enforcement of a run's scope off (or on again) — for one run,
//! recorded in its state with who chose and why. `baton enforce release
//! <workspace>` lets a held run go on (its state changed outside baton
//! while an agent's command ran: `baton_usecases::hooks::outside`). Like `baton answer`, it
//! runs only in a terminal: the agent's shell has none, and its hooks
//! refuse the command while a run is bound to the session.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{anyhow, bail};

use baton_config::Config;
use baton_usecases::Actor;
use baton_usecases::Services;

/// Turns enforcement `on` or off for `workspace`.
pub fn run(
    config: Config,
    workspace: &str,
    on: bool,
    reason: &[String],
) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "baton enforce is a person's choice and must run in a terminal (its input is not one). \
             If you are an agent: tell the person what you need and let them decide."
        );
    }
    let svc = Services::open(config, env!("CARGO_PKG_VERSION")).map_err(|e| anyhow!(e.message))?;
    let reason = reason.join(" ");
    let reason = reason.trim();
    let done = baton_usecases::hooks::set_enforcement(
        &svc,
        workspace,
        on,
        (!reason.is_empty()).then_some(reason),
        &Actor::person("terminal"),
    )
    .map_err(|e| anyhow!(e.message))?;
    if done.on {
        println!(
            "the agent client's hooks enforce the scope of {} again (by {})",
            done.workspace, done.by
        );
    } else {
        println!(
            "the agent client's hooks no longer enforce the scope of {} (by {}, recorded in its state.json); `baton enforce on {}` turns them back on",
            done.workspace, done.by, done.workspace
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Releases `workspace`, held because its state changed outside baton
/// while an agent's command ran; a person's choice, in a terminal.
pub fn release(config: Config, workspace: &str) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "baton enforce release is a person's choice and must run in a terminal (its input is not one). \
             If you are an agent: tell the person the run is held and let them decide."
        );
    }
    let svc = Services::open(config, env!("CARGO_PKG_VERSION")).map_err(|e| anyhow!(e.message))?;
    let by = Actor::person("terminal");
    let shown = baton_usecases::hooks::outside::release(&svc, workspace, &by)
        .map_err(|e| anyhow!(e.message))?;
    println!(
        "run {shown} is released (by {}, recorded in its state.json); its agent can go on with pipeline_next_action",
        by.label()
    );
    Ok(ExitCode::SUCCESS)
}
