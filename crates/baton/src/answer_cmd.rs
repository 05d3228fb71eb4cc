//! `baton answer`: a person answers the question a run waits at, from a
//! terminal. The terminal is a channel the agent does not control: the
//! command refuses to run when its input is not a terminal (an agent's
//! shell tool has none), so an agent cannot answer its own checkpoint by
//! running it.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{anyhow, bail};

use baton_config::Config;
use baton_usecases::Actor;
use baton_usecases::Services;
use baton_usecases::pipeline::answer::{AnswerArgs, answer_question, pending_question};

/// Answers the run's pending question with `words` (or asks for it).
pub fn run(config: Config, workspace: &str, words: &[String]) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "baton answer takes a person's answer and must run in a terminal (its input is not one). \
             If you are an agent: show the question to the person and let them run this command themselves."
        );
    }
    let svc = std::sync::Arc::new(
        Services::open(config, env!("CARGO_PKG_VERSION")).map_err(|e| anyhow!(e.message))?,
    );
    let notifier = baton_notify::start_for_services(std::sync::Arc::clone(&svc));
    let answered = ask_and_answer(&svc, workspace, words);
    if let Some(n) = notifier {
        n.finish(std::time::Duration::from_secs(5));
    }
    answered
}

fn ask_and_answer(svc: &Services, workspace: &str, words: &[String]) -> anyhow::Result<ExitCode> {
    let Some(q) = pending_question(svc, workspace).map_err(|e| anyhow!(e.message))? else {
        // `abandon` needs no question: the person stops the run (recorded
        // as theirs, like the dashboard's abandon).
        if let Some((first, rest)) = words.split_first()
            && first == "abandon"
        {
            let reason = rest.join(" ");
            let reply = baton_usecases::recovery::abandon_by(
                svc,
                baton_usecases::recovery::AbandonArgs {
                    workspace: workspace.to_string(),
                    reason: (!reason.trim().is_empty()).then(|| reason.trim().to_string()),
                },
                &Actor::person("terminal"),
            )
            .map_err(|e| anyhow!(e.message))?;
            println!("abandoned at {} (by person:terminal)", reply.current_phase);
            return Ok(ExitCode::SUCCESS);
        }
        bail!("nothing in {workspace} waits for an answer (see `baton show {workspace}`)");
    };
    let answer = if words.is_empty() {
        eprintln!("\n{}\n", q.present_to_user.trim_end());
        eprint!("{} > ", q.options.join(" / "));
        std::io::stderr().flush().ok();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            bail!("no answer given");
        }
        line.trim().to_string()
    } else {
        let (first, rest) = words
            .split_first()
            .map(|(f, r)| (f.clone(), r.join(" ")))
            .unwrap_or_default();
        if rest.trim().is_empty() {
            first
        } else {
            format!("{first}: {}", rest.trim())
        }
    };
    let reply = answer_question(
        svc,
        AnswerArgs {
            workspace: workspace.to_string(),
            answer,
        },
        Actor::person("terminal"),
    )
    .map_err(|e| anyhow!(e.message))?;
    println!(
        "{}: {} (by {}) — {} is now {}",
        reply.question, reply.answer, reply.by, reply.current_phase, reply.current_phase_status
    );
    let next = baton_usecases::guidance::next_for_run(svc, workspace)
        .unwrap_or_else(|e| format!("see `baton show {workspace}` ({})", e.message));
    println!("next: {next}");
    Ok(ExitCode::SUCCESS)
}
