//! The HTTP listener (`--http-listen`, on by default on loopback): the web console at `/`, the
//! JSON API it is built on under `/api/v1/` (documented in `docs/console-api.yaml`),
//! Prometheus metrics at `/metrics` and a health check at `/health`. It runs on a runtime of
//! its own thread, so a busy console never takes a worker from the Kafka listeners, and reads
//! the engine directly, in process. Which names it answers to is `hosts.rs`'s; who may use the
//! API, and for what, is `access.rs`'s; `/metrics` and `/health` stay open to scrapers.

pub(crate) mod access;
mod api;
mod changes;
mod checked_transport;
mod dead_letters;
mod history;
pub(crate) mod hosts;
mod messages;
mod params;
mod quotas;
mod refusals;
mod search;
mod share_groups;
mod timeline;
mod transactions;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use logd::Log;

use crate::metrics::Metrics;

/// The console page: server-side assets built into the binary, no network beyond logd.
const CONSOLE_PAGE: &str = include_str!("console.html");

/// What the handlers share.
#[derive(Clone)]
pub(crate) struct State {
    log: Log,
    access: Arc<access::Access>,
    metrics: Arc<Metrics>,
    history: Arc<history::History>,
    /// The client quotas the broker enforces.
    quotas: Arc<logd_kafka::quota::ClientQuotas>,
    /// Where records produced from the console go: by key as Kafka's Java client, keyless in
    /// turn.
    partitioner: Arc<logd::KeyHash<logd::RoundRobin>>,
}

/// Serves `listener` on a new thread until the process ends.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    (log, quotas): (Log, Arc<logd_kafka::quota::ClientQuotas>),
    metrics: Arc<Metrics>,
    access: access::Access,
    allowed_hosts: hosts::AllowedHosts,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let history = history::History::start(log.clone(), metrics.clone())?;
    let router = router(
        State {
            log,
            quotas,
            access: Arc::new(access),
            metrics,
            history,
            partitioner: Arc::default(),
        },
        allowed_hosts,
    );
    std::thread::Builder::new()
        .name("logd-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(e) => {
                        tracing::error!(error = %e, "the HTTP listener cannot start");
                        return;
                    }
                };
                // The caller's address is the host ACLs are checked for.
                let service = router.into_make_service_with_connect_info::<SocketAddr>();
                if let Err(e) = axum::serve(listener, service).await {
                    tracing::error!(error = %e, "the HTTP listener stopped");
                }
            });
        })?;
    Ok(())
}

fn router(state: State, allowed_hosts: hosts::AllowedHosts) -> Router {
    // The console and its API answer only to the console's own names; scrapers use any.
    let console = Router::new()
        .route("/", get(|| async { Html(CONSOLE_PAGE) }))
        .nest("/api/v1", api::routes(&state))
        .route_layer(axum::middleware::from_fn_with_state(
            allowed_hosts,
            hosts::guard,
        ));
    Router::new()
        .merge(console)
        .route("/health", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .with_state(state)
}

async fn metrics(axum::extract::State(state): axum::extract::State<State>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
}
