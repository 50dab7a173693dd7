//! `GET /api/v1/transactions`: every transactional id the caller may see (DESCRIBE on it)
//! with its state, producer, epoch, timeout, how long its transaction has been open and the
//! partitions in it; and every partition the caller may see whose last stable offset is behind
//! its high watermark (what read_committed readers wait for), read from the engine as
//! `/metrics` reads them.

use axum::Json;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;

pub(super) async fn transactions(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let log = &state.log;
    let now = log.clock().now_ms();
    let ids: Vec<Value> = log
        .transactions()
        .into_iter()
        .filter(|t| caller.sees_transactional_id(&t.transactional_id))
        .map(|t| {
            json!({
                "transactional_id": t.transactional_id,
                "state": t.state.name(),
                "producer_id": t.producer_id,
                "epoch": t.epoch,
                "timeout_ms": t.timeout_ms,
                "open_ms": (t.started_ms >= 0).then(|| now.saturating_sub(t.started_ms)),
                "partitions": t.partitions.iter()
                    .filter(|(topic, _)| caller.sees_topic(topic))
                    .map(|(topic, p)| json!({"topic": topic, "partition": p}))
                    .collect::<Vec<_>>(),
                "groups": t.groups,
            })
        })
        .collect();
    let mut waiting = Vec::new();
    for topic in log.list_topics() {
        if !caller.sees_topic(&topic) {
            continue;
        }
        for partition in 0..log.partition_count(&topic).unwrap_or(0) {
            let Ok(p) = log.partition(&topic, partition) else {
                continue;
            };
            let (stable, end) = (p.last_stable_offset().0, p.high_watermark().0);
            if stable < end {
                waiting.push(json!({
                    "topic": topic,
                    "partition": partition,
                    "last_stable_offset": stable,
                    "high_watermark": end,
                    "lag": end - stable,
                }));
            }
        }
    }
    Json(json!({ "transactions": ids, "unstable_partitions": waiting })).into_response()
}
