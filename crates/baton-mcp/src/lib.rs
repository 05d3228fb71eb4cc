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
pub mod repo_profile;
pub mod schema;
pub mod server;
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
            "baton {}: MCP server on stdio for {} (specs in {}).\nRegister it with your agent (see README) or type JSON-RPC lines; Ctrl-D stops it.",
            ctx.version,
            ctx.config.repo_root.display(),
            ctx.config.specs_root.display()
        );
    }
    let session_id = new_session_id();
    let transcript = Transcript::start(&session_id, &transcript_options(&ctx.config))
        .map_err(|e| ServeError::Io(format!("transcript: {e}")))?;
    let service = transcript::Transcribed::new(server, transcript.recorder());
    let running = match service.serve(rmcp::transport::stdio()).await {
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

/// Serves streamable HTTP MCP at `/mcp` and the event stream at `/events` on
/// `addr` until SIGINT/SIGTERM. Returns once the listener is closed.
pub async fn serve_http(config: Config, addr: std::net::SocketAddr) -> Result<(), ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Io(format!("bind {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    let ctx = build_context(config)?;
    let session_id = new_session_id();
    let transcript = Transcript::start(&session_id, &transcript_options(&ctx.config))
        .map_err(|e| ServeError::Io(format!("transcript: {e}")))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let app = http::router(Arc::clone(&ctx), transcript.recorder(), cancel.clone())?;
    // Announce the bound address (port 0 picks a free one) on stderr for scripts.
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "baton: listening on http://{bound} (MCP at /mcp, events at /events)"
        );
    }
    let served = axum::serve(listener, app)
        .with_graceful_shutdown({
            let cancel = cancel.clone();
            async move {
                tokio::select! {
                    _ = shutdown_signal() => {},
                    _ = cancel.cancelled() => {},
                }
                cancel.cancel();
            }
        })
        .await
        .map_err(|e| ServeError::Io(e.to_string()));
    transcript.close().await;
    served
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
