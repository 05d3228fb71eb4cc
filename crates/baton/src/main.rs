//! `baton`: the command-line entry point.
//!
//! `baton serve` runs the MCP server (stdio by default, `--http ADDR` for
//! streamable HTTP); the other commands read the same state files for people.

mod answer_cmd;
mod cli;
mod dashboard_cmd;
mod demo_cmd;
mod driver;
mod history_cmd;
mod events_cmd;
mod init_cmd;
mod ls_cmd;
mod manuals_cmd;
mod scripted;
mod show_cmd;
mod workflow_cmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    // Diagnostics go to stderr only: in stdio mode stdout is the protocol channel.
    tracing_subscriber::fmt()
        .with_writer(|| QuietStderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BATON_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("baton: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// stderr that swallows write errors: a client that closed our stderr must
/// never take the server down with it.
struct QuietStderr;

impl std::io::Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}
