//! The handler layer of baton: MCP tools over stdio or streamable HTTP, the
//! HTTP event stream and the dashboard. Handlers parse arguments, call the engine and the
//! state store, shape the reply and publish events; they own no logic of
//! their own beyond that.
//!
//! Entry points: [`serve_stdio`] and [`serve_http`].

#![warn(missing_docs)]

pub mod admission;
pub mod args;
pub mod context;
pub mod dashboard;
pub mod elicit;
pub mod error;
pub mod http;
pub mod protocol;
pub mod schema;
pub mod server;
pub mod stdio;
pub mod tools;
pub mod transcript;

use std::sync::Arc;

use baton_config::Config;
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
    let services = baton_usecases::Services::open(config, env!("CARGO_PKG_VERSION"))
        .map_err(|e| ServeError::Io(e.message))?;
    Ok(Arc::new(AppContext::with_services(services)))
}

/// Sweeps the temporary files of killed writes and loads the run history
/// on a background thread, so neither the start nor the first prompt that
/// needs Layer 4 waits for them (docs/history.md §1). Called once the
/// server is up (over stdio: after the `initialize` handshake, so the load
/// never competes with the reply). Nothing waits for this thread; a call
/// that needs the history meanwhile waits for the load instead of doing it
/// twice.
pub fn warm_history(ctx: &Arc<AppContext>) {
    let ctx = Arc::clone(ctx);
    let spawned = std::thread::Builder::new()
        .name("baton-history-warm".into())
        .spawn(move || {
            // The syncer and the baseline reader first: a call hands them
            // its work instead of starting their threads before its reply.
            ctx.start_workers();
            // Temporary files of writes killed long ago: cheap with few
            // workspaces, and never on the start path with many.
            ctx.sweep_temp_files();
            ctx.history.warm();
            baton_usecases::history::log_warnings(&ctx.history);
            // Team mode (off: nothing happens): other machines' events,
            // history and answers for this machine's runs.
            baton_usecases::team::start_background(&ctx);
        });
    if let Err(e) = spawned {
        tracing::warn!("history: not loaded in the background ({e}); the first use loads it");
    }
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
    let notifier = dashboard::start_notifier(&ctx);
    let server = build_server(Arc::clone(&ctx))?.running_quick_calls_itself();
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
    // A reply is serialised once: the transcript's text is what is sent.
    let written = Arc::new(transcript::WrittenReplies::default());
    let service = transcript::Transcribed::new(server, transcript.recorder())
        .with_written(Arc::clone(&written));
    let transport = stdio::StdioTransport::stdio(transcript.recorder()).with_written(written);
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
    // After the handshake: the load never delays the `initialize` reply.
    warm_history(&ctx);
    let cancel = running.cancellation_token();
    let outcome = tokio::select! {
        r = running.waiting() => r.map(|_| ()).map_err(|e| ServeError::Mcp(e.to_string())),
        _ = shutdown_signal() => {
            cancel.cancel();
            Ok(())
        }
    };
    transcript.close().await;
    if let Some(n) = notifier {
        n.finish(std::time::Duration::from_secs(3));
    }
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
pub async fn serve_http(mut config: Config, addr: &str) -> Result<(), ServeError> {
    let addrs = resolve_listen_addr(addr).await?;
    let listener = tokio::net::TcpListener::bind(&addrs[..])
        .await
        .map_err(|e| ServeError::Io(format!("cannot listen on {addr:?}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    let person = dashboard::person_at_terminal();
    let guard = dashboard::guard_for(&config, bound, person)?;
    if config.notify.dashboard_url.is_none() {
        config.notify.dashboard_url = Some(guard.base_url());
    }
    let ctx = build_context(config)?;
    warm_history(&ctx);
    // `/events` streams every process's events, not only this one's.
    ctx.bus
        .follow_log()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    let notifier = dashboard::start_notifier(&ctx);
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
    )?
    .merge(dashboard::routes(Arc::clone(&ctx), Arc::clone(&guard)))
    .layer(axum::middleware::from_fn_with_state(
        Arc::clone(&guard),
        dashboard::security::check,
    ));
    // Announce the bound address (port 0 picks a free one) on stderr for scripts.
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "baton: listening on http://{bound} (MCP at /mcp, events at /events, dashboard at /); Ctrl-C stops it"
        );
    }
    dashboard::announce(&guard, person);
    let outcome = serve_until_signal(listener, app, cancel, limits).await;
    transcript.close().await;
    if let Some(n) = notifier {
        n.finish(std::time::Duration::from_secs(3));
    }
    outcome
}

/// Serves `app` until SIGINT/SIGTERM or `cancel`: on the signal, `/events`
/// streams end at once (they watch `cancel`) and open requests get
/// [`HTTP_SHUTDOWN_GRACE`]; a second signal stops at once.
pub(crate) async fn serve_until_signal(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    cancel: tokio_util::sync::CancellationToken,
    limits: http::HttpLimits,
) -> Result<(), ServeError> {
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
