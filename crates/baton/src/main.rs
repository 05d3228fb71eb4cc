//! `baton`: the command-line entry point.
//!
//! `baton serve` runs the MCP server (stdio by default, `--http ADDR` for
//! streamable HTTP); the other commands read the same state files for people.

mod agents;
mod answer_cmd;
mod cli;
mod dashboard_cmd;
mod demo_cmd;
mod driver;
mod enforce_cmd;
mod events_cmd;
mod history_cmd;
mod hook_cmd;
mod init_cmd;
mod ls_cmd;
mod manuals_cmd;
mod person_note;
mod sandbox;
mod scripted;
mod show_cmd;
mod team_cmd;
mod text_table;
mod workflow_cmd;

use std::process::ExitCode;

use clap::Parser;

/// The diagnostics shown without `BATON_LOG`: warnings, except rmcp's note
/// on every error response it sends and sqlx's notes on each dropped
/// connection in team mode (baton logs what matters itself: team mode says
/// once that the database is away, and again when it is back).
const DEFAULT_LOG: &str = "warn,rmcp::service=error,sqlx=error";

fn main() -> ExitCode {
    limit_malloc_arenas();
    let args = cli::Cli::parse();
    if args.only_prints() {
        end_quietly_on_closed_pipe();
    }
    // Diagnostics go to stderr only: in stdio mode stdout is the protocol
    // channel. BATON_LOG takes a level or `target=level` pairs
    // ("info", "warn,baton_mcp=debug"); a value that does not parse is ignored.
    let filter = std::env::var("BATON_LOG")
        .ok()
        .and_then(|v| v.parse::<tracing_subscriber::filter::Targets>().ok())
        .or_else(|| DEFAULT_LOG.parse().ok())
        .unwrap_or_default();
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(|| QuietStderr)
                .with_ansi(false),
        )
        .with(filter)
        .init();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("baton: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Restores the default action of `SIGPIPE` (end the process) that Rust's
/// runtime turns off, so `baton ls | head -1` ends quietly instead of
/// panicking with a backtrace on the next write to the closed pipe.
fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up, before any thread is spawned;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// One malloc arena for every thread (glibc). By default glibc gives each
/// thread that allocates its own arena — up to 8 per core — and each keeps
/// freed memory of its own; baton's threads do short, small work, so one
/// arena holds the process's peak memory down (measured by
/// `cargo bench -p baton --bench memory`) at no cost a person can see.
/// glibc's own setting (`MALLOC_ARENA_MAX`, `GLIBC_TUNABLES`) wins when given.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none()
        && std::env::var_os("GLIBC_TUNABLES").is_none()
    {
        /// `M_ARENA_MAX` of glibc's malloc.h.
        const M_ARENA_MAX: std::os::raw::c_int = -8;
        unsafe extern "C" {
            fn mallopt(
                param: std::os::raw::c_int,
                value: std::os::raw::c_int,
            ) -> std::os::raw::c_int;
        }
        // SAFETY: mallopt only changes glibc's allocator settings; it is
        // called first thing in main, before any other thread exists.
        unsafe {
            mallopt(M_ARENA_MAX, 1);
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
