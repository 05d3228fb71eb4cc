//! `baton dashboard [--port N] [--bind ADDR]`: the live dashboard for every
//! run of the repository (docs/dashboard.md). Loopback by default; another
//! address needs an access token. Started at a terminal, it prints a
//! one-time sign-in link: the browser that opens it may act (answer,
//! revise, abandon) as the person at that terminal.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use anyhow::Context;

use baton_config::Config;

/// Serves the dashboard until interrupted.
pub fn run(config: Config, port: Option<u16>, bind: IpAddr) -> anyhow::Result<ExitCode> {
    let addr = SocketAddr::new(bind, port.unwrap_or(config.dashboard.port));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(baton_mcp::dashboard::serve_dashboard(config, addr))?;
    Ok(ExitCode::SUCCESS)
}
