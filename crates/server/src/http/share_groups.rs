//! `GET /api/v1/share-groups`: every share group (KIP-932) the caller may see, with its
//! members and their assignments, its counters since logd started (redelivered, archived by
//! reason, dead-lettered) and per partition it reads: the share-partition start offset, the
//! log end, the lag (records between them not yet acknowledged or archived, as Kafka counts
//! it) and the records in flight by state (available, acquired, acknowledged, archived), read
//! from the engine as `/metrics` reads them.

use axum::Json;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;

pub(super) async fn share_groups(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let log = &state.log;
    let groups: Vec<Value> = log
        .share_group_ids()
        .into_iter()
        .filter(|group| caller.sees_group(group))
        .map(|group| {
            let (epoch, members) = log.share_group_members(&group).unwrap_or((0, Vec::new()));
            let members: Vec<Value> = members
                .iter()
                .map(|m| {
                    json!({
                        "member_id": m.member_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "assignment": m.assignment.iter()
                            .flat_map(|(t, ps)| ps.iter().map(move |p| json!({"topic": t, "partition": p})))
                            .collect::<Vec<_>>(),
                    })
                })
                .collect();
            let partitions: Vec<Value> = log
                .share_partitions(&group)
                .into_iter()
                .filter(|p| caller.sees_topic(&p.topic))
                .map(|p| {
                    let end = log
                        .partition(&p.topic, p.partition)
                        .map(|l| l.high_watermark().0)
                        .ok();
                    let [available, acquired, acknowledged, archived] = p.counts;
                    json!({
                        "topic": p.topic,
                        "partition": p.partition,
                        "start_offset": p.start_offset,
                        "log_end": end,
                        "lag": end.and_then(|e| p.lag(e)),
                        "available": available,
                        "acquired": acquired,
                        "acknowledged": acknowledged,
                        "archived": archived,
                    })
                })
                .collect();
            let counts = log.share_counters(&group);
            json!({
                "group": group,
                "state": if members.is_empty() { "Empty" } else { "Stable" },
                "epoch": epoch,
                "members": members,
                "partitions": partitions,
                "redelivered": counts.redelivered,
                "rejected": counts.rejected,
                "at_delivery_limit": counts.at_delivery_limit,
                "dead_lettered": counts.dead_lettered,
            })
        })
        .collect();
    Json(json!({ "share_groups": groups })).into_response()
}
