//! The handler layer of baton: MCP tools over stdio or streamable HTTP, and
//! the HTTP event stream. Handlers parse arguments, call the engine and the
//! state store, shape the reply and publish events; they own no logic of
//! their own beyond that.
//!
//! Entry points: [`serve_stdio`] and [`serve_http`].

#![warn(missing_docs)]

pub mod args;
pub mod context;
pub mod error;
pub mod http;
pub mod protocol;
pub mod repo_profile;
pub mod schema;
pub mod server;
pub mod stdio;
pub mod tools;
pub mod transcript;

use std::sync::Arc;

use baton_config::Config;
use baton_events::{EventBus, EventLog};
use baton_transcript::{Transcript, TranscriptOptions};
use rmcp::ServiceExt;

pub use context::AppContext;
pub use error::{ErrorCode, ToolError};
pub use server::BatonServer;

/// Failures that stop the server from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The tool selection names an unknown profile or group.
    #[error("{0}")]
    Tools(String),
    /// The event log or transcript folder could not be opened.
    #[error("{0}")]
    Io(String),
    /// The MCP session failed.
    #[error("MCP: {0}")]
    Mcp(String),
}

/// Builds the shared context: event log opened, workflows loaded.
pub fn build_context(config: Config) -> Result<Arc<AppContext>, ServeError> {
    let log = EventLog::open(
        &config.events.log_path,
        config.events.max_bytes,
        config.events.keep,
    )
    .map_err(|e| ServeError::Io(e.to_string()))?;
    let bus = Arc::new(EventBus::with_log(log));
    Ok(Arc::new(AppContext::new(config, bus)))
}

/// The server with the configured tool groups.
pub fn build_server(ctx: Arc<AppContext>) -> Result<BatonServer, ServeError> {
    let tools = tools::select(ctx.config.tool_groups.as_deref())
        .map_err(|e| ServeError::Tools(e.to_string()))?;
    Ok(BatonServer::new(ctx, tools))
}

fn transcript_options(config: &Config) -> TranscriptOptions {
    TranscriptOptions {
        dir: config
            .transcript
            .enabled
            .then(|| config.transcript.dir.clone()),
        echo_stderr: config.transcript.echo_stderr,
        max_bytes: config.transcript.max_bytes,
        max_total_bytes: config.transcript.max_total_bytes,
        max_payload_bytes: config.transcript.max_payload_bytes,
    }
}

/// A new time-ordered session id.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Serves MCP over stdin/stdout until stdin closes or SIGINT/SIGTERM arrives.
/// Nothing but protocol frames is written to stdout.
pub async fn serve_stdio(config: Config) -> Result<(), ServeError> {
    let ctx = build_context(config)?;
    let server = build_server(Arc::clone(&ctx))?;
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        use std::io::Write;
        // A person started the server by hand: say what it is waiting for.
        let _ = writeln!(
            std::io::stderr(),
            "baton {}: MCP server on stdio for {} (work in {}).\n\
             Your agent starts this itself (`baton init` registers it). To try it by hand, type one JSON-RPC message per line, e.g.\n\
             {{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"me\",\"version\":\"0\"}}}}}}\n\
             Ctrl-D stops it.",
            ctx.version,
            ctx.config.repo_root.display(),
            ctx.config.specs_root.display()
        );
    }
    let session_id = new_session_id();
    let transcript = Transcript::start(&session_id, &transcript_options(&ctx.config))
        .map_err(|e| ServeError::Io(format!("transcript: {e}")))?;
    let service = transcript::Transcribed::new(server, transcript.recorder());
    let transport = stdio::StdioTransport::stdio(transcript.recorder());
    let running = match service.serve(transport).await {
        Ok(running) => running,
        // stdin closed before any client spoke: a normal, quiet end.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            transcript.close().await;
            return Ok(());
        }
        Err(e) => {
            transcript.close().await;
            return Err(ServeError::Mcp(e.to_string()));
        }
    };
    let cancel = running.cancellation_token();
    let outcome = tokio::select! {
        r = running.waiting() => r.map(|_| ()).map_err(|e| ServeError::Mcp(e.to_string())),
        _ = shutdown_signal() => {
            cancel.cancel();
            Ok(())
        }
    };
    transcript.close().await;
    outcome
}

/// How long, after Ctrl-C or SIGTERM, open HTTP connections get to finish
/// before the server stops anyway. `/events` streams end at once.
pub const HTTP_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(300);

/// The addresses `--http ADDR` means: `HOST:PORT` with a name or an IP
/// (`localhost:8765`, `127.0.0.1:0`, `[::1]:8765`), or a bare `PORT`
/// (loopback). Names are resolved; IPv4 addresses come first.
pub async fn resolve_listen_addr(spec: &str) -> Result<Vec<std::net::SocketAddr>, ServeError> {
    let spec = spec.trim();
    let full = if !spec.is_empty() && spec.bytes().all(|b| b.is_ascii_digit()) {
        format!("127.0.0.1:{spec}")
    } else {
        spec.to_string()
    };
    let explain = |why: String| {
        ServeError::Io(format!(
            "cannot listen on {spec:?}: {why}. Give HOST:PORT or PORT, e.g. localhost:8765, 127.0.0.1:0 (a free port) or 8765"
        ))
    };
    let mut addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host(full.as_str())
        .await
        .map_err(|e| explain(e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(explain("the name resolves to no address".into()));
    }
    addrs.sort_by_key(|a| a.is_ipv6());
    addrs.dedup();
    Ok(addrs)
}

/// Serves streamable HTTP MCP at `/mcp` and the event stream at `/events` on
/// `addr` (see [`resolve_listen_addr`]) until SIGINT/SIGTERM. On the signal,
/// `/events` streams end at once and open requests get
/// [`HTTP_SHUTDOWN_GRACE`]; a second signal stops at once.
pub async fn serve_http(config: Config, addr: &str) -> Result<(), ServeError> {
    let addrs = resolve_listen_addr(addr).await?;
    let listener = tokio::net::TcpListener::bind(&addrs[..])
        .await
        .map_err(|e| ServeError::Io(format!("cannot listen on {addr:?}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    let ctx = build_context(config)?;
    let session_id = new_session_id();
    let transcript = Transcript::start(&session_id, &transcript_options(&ctx.config))
        .map_err(|e| ServeError::Io(format!("transcript: {e}")))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let limits = http::HttpLimits::from_env()?;
    let app = http::router(
        Arc::clone(&ctx),
        transcript.recorder(),
        cancel.clone(),
        limits,
    )?;
    // Announce the bound address (port 0 picks a free one) on stderr for scripts.
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "baton: listening on http://{bound} (MCP at /mcp, events at /events); Ctrl-C stops it"
        );
    }
    let stop = {
        let cancel = cancel.clone();
        async move {
            tokio::select! {
                _ = shutdown_signal() => {},
                _ = cancel.cancelled() => {},
            }
            cancel.cancel();
        }
    };
    let served = http::serve(listener, app, cancel.clone(), limits);
    tokio::pin!(served);
    let outcome = tokio::select! {
        r = &mut served => r,
        _ = stop => {
            // Event streams end on `cancel`; requests in flight get a moment.
            tokio::select! {
                r = &mut served => r,
                _ = tokio::time::sleep(HTTP_SHUTDOWN_GRACE) => Ok(()),
                _ = shutdown_signal() => Ok(()),
            }
        }
    };
    transcript.close().await;
    outcome
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
