//! HTTP routes: streamable HTTP MCP at `/mcp`, the event stream at `/events`,
//! and `/healthz`. Bound to loopback by default; rmcp validates `Host`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use futures::stream::{self, Stream, StreamExt};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use baton_events::EventRecord;
use baton_transcript::Recorder;

use crate::context::AppContext;
use crate::transcript::record_http;
use crate::{ServeError, build_server};

/// Events replayed to a new `/events` subscriber before live ones.
pub const REPLAY_LIMIT: usize = 500;

/// The router for `serve --http`.
pub fn router(
    ctx: Arc<AppContext>,
    recorder: Recorder,
    cancel: CancellationToken,
) -> Result<Router, ServeError> {
    let server = build_server(Arc::clone(&ctx))?;
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = cancel;
    // Stateless with plain JSON responses: every exchange is one JSON body each
    // way, which the transcript middleware records as is.
    config.legacy_session_mode = false;
    config.json_response = true;
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp = Router::new()
        .fallback_service(mcp)
        .layer(axum::middleware::from_fn_with_state(recorder, record_http));
    Ok(Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/events", get(events))
        .with_state(ctx)
        .nest("/mcp", mcp))
}

/// Query of `/events`.
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    /// Only events of this workspace (as shown in replies, e.g. `.specs/20260401-x`).
    workspace: Option<String>,
}

/// `GET /events[?workspace=…]`: replays recent events, then streams live ones
/// as Server-Sent Events (`event: <kind>`, `data: <record json>`).
pub(crate) async fn events(
    State(ctx): State<Arc<AppContext>>,
    Query(query): Query<EventsQuery>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // History and subscription together: nothing falls in between.
    let (history, live) = ctx.bus.subscribe_with_recent(REPLAY_LIMIT);
    let filter = query.workspace;
    let keep = move |r: &EventRecord| filter.as_ref().is_none_or(|w| *w == r.workspace);
    let keep_live = keep.clone();
    let replay = stream::iter(history.into_iter().filter(keep));
    let live = stream::unfold(live, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(record) => return Some((record, rx)),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
    .filter(move |r| std::future::ready(keep_live(r)));
    let frames = replay.chain(live).map(|record| {
        Ok(Event::default()
            .event(record.event.as_str())
            .json_data(&record)
            .unwrap_or_else(|_| Event::default().comment("unserialisable event")))
    });
    Sse::new(frames).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
