//! The console's JSON API, `/api/v1/`: topics with their partitions, sizes and the groups that
//! read them; groups with their members, committed offsets and lag. Read-only; every answer
//! is built from the same engine calls `logd topics` and `logd groups` make.

use axum::Json;
use axum::Router;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use logd::IsolationLevel;
use logd::groups::classic::GroupPhase;
use logd_kafka::acl::{Operation, ResourceType};
use serde_json::{Value, json};

use super::State as Shared;
use super::access::{self, Caller};
use super::changes;
use super::params::answer;
use crate::lag::{group_lag, partition_lag};

pub(super) fn routes(state: &Shared) -> Router<Shared> {
    Router::new()
        .route("/session", get(access::session))
        .route("/logout", post(access::logout))
        .route("/broker", get(broker))
        .route("/topics", get(topics).post(changes::create_topic))
        .route("/topics/{name}", get(topic).delete(changes::delete_topic))
        .route("/topics/{name}/partitions", post(changes::add_partitions))
        .route(
            "/topics/{name}/messages",
            get(super::messages::messages).post(changes::produce),
        )
        .route("/topics/{name}/search", get(super::search::search))
        .route("/dead-letters", get(super::dead_letters::topics))
        .route("/dead-letters/{topic}", get(super::dead_letters::letters))
        .route(
            "/dead-letters/{topic}/replay",
            post(super::dead_letters::replay),
        )
        .route(
            "/dead-letters/{topic}/letters/{partition}/{offset}",
            get(super::timeline::timeline),
        )
        .route("/history", get(super::history::history))
        .route("/quotas", get(super::quotas::quotas))
        .route("/groups", get(groups))
        .route("/share-groups", get(super::share_groups::share_groups))
        .route("/transactions", get(super::transactions::transactions))
        .route("/groups/{group}", get(group).delete(changes::delete_group))
        .route(
            "/groups/{group}/reset-offsets",
            post(changes::reset_offsets),
        )
        .route_layer(middleware::from_fn_with_state(state.clone(), access::guard))
        // The one call a caller makes before it has a session.
        .route("/login", post(access::login))
        .fallback(|| async { not_found("no such API endpoint".into()) })
}

/// The node: data directory, the fsync policy new topics get, and the disk's size and free
/// space (-1 when the system cannot say).
async fn broker(State(state): State<Shared>, Extension(caller): Extension<Caller>) -> Response {
    // What DescribeLogDirs shows a Kafka client.
    if let Err(refused) = caller.require_on_cluster(Operation::Describe) {
        return answer(Err(refused));
    }
    let dir = state.log.dir();
    let (total, free) = logd_storage::disk_space(dir);
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "data_dir": dir.display().to_string(),
        "fsync": state.log.default_topic_config().fsync.to_string(),
        "disk_total_bytes": total,
        "disk_free_bytes": free,
    }))
    .into_response()
}

/// Every topic: partitions, bytes on disk and records stored.
async fn topics(State(state): State<Shared>, Extension(caller): Extension<Caller>) -> Response {
    let mut names = state.log.list_topics();
    names.retain(|name| caller.sees_topic(name));
    names.sort();
    let topics: Vec<Value> = names
        .iter()
        .filter_map(|name| state.log.describe_topic(name).ok())
        .map(|topic| {
            json!({
                "name": topic.name,
                "partitions": topic.partitions.len(),
                "size_bytes": topic.partitions.iter().map(|p| p.size_bytes).sum::<u64>(),
                "records": topic.partitions.iter()
                    .map(|p| (p.high_watermark - p.log_start).max(0))
                    .sum::<i64>(),
            })
        })
        .collect();
    Json(json!({ "topics": topics })).into_response()
}

/// One topic: its configuration, each partition's offsets and size, and the groups with
/// offsets committed on it, with their lag.
async fn topic(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Response {
    if let Err(refused) = caller.require(Operation::Describe, ResourceType::Topic, &name) {
        return answer(Err(refused));
    }
    let topic = match state.log.describe_topic(&name) {
        Ok(topic) => topic,
        Err(logd::Error::UnknownTopic(_)) => return not_found(format!("no topic {name}")),
        Err(e) => return server_error(e),
    };
    let config = &topic.config;
    let defaults = state.log.default_topic_config();
    let ranges = state.log.cleaner_ranges(&name).unwrap_or_default();
    let compacts = config.cleanup_policy.compacts();
    let partitions: Vec<Value> = topic
        .partitions
        .iter()
        .map(|p| {
            let range = ranges.iter().find(|r| r.partition == p.partition);
            let log = state.log.partition(&name, p.partition).ok();
            let oldest = log.as_ref().and_then(|l| {
                (p.log_start < p.high_watermark)
                    .then(|| {
                        l.timestamp_of(logd_storage::Offset(p.log_start))
                            .ok()
                            .flatten()
                    })
                    .flatten()
            });
            let newest = log
                .as_ref()
                .and_then(|l| l.max_timestamp().ok().flatten())
                .map(|(ts, _)| ts);
            json!({
                "partition": p.partition,
                "log_start": p.log_start,
                "log_end": p.log_end,
                "high_watermark": p.high_watermark,
                "size_bytes": p.size_bytes,
                "segments": log.as_ref().map(|l| l.segment_count()),
                "active_from": range.map(|r| r.active_start),
                "cleaned_up_to": range.filter(|_| compacts).map(|r| r.cleaned_up_to),
                "cleanable_end": range.filter(|_| compacts).map(|r| r.cleanable_end),
                "oldest_timestamp": oldest,
                "newest_timestamp": newest,
            })
        })
        .collect();
    // Every config under Kafka's names, as DescribeConfigs and `kafka-configs` show them, and
    // those a topic created now with no configs would not have.
    let configs = logd_kafka::topic_configs(config, defaults);
    let non_default: Vec<&str> = configs.iter().filter(|c| c.set).map(|c| c.name).collect();
    let config: serde_json::Map<String, Value> = configs
        .iter()
        .map(|c| (c.name.to_owned(), Value::String(c.value.clone())))
        .collect();
    let groups: Vec<Value> = state
        .log
        .list_groups()
        .into_iter()
        .filter(|group| caller.sees_group(group))
        .filter_map(|group| {
            let description = state.log.describe_group(&group).ok()?;
            let lag: Vec<_> = description
                .offsets
                .iter()
                .filter(|o| o.topic == name)
                .collect();
            (!lag.is_empty()).then(|| {
                json!({
                    "group": group,
                    "state": phase_name(description.phase),
                    "lag": lag.iter().map(|o| o.lag).sum::<i64>(),
                })
            })
        })
        .collect();
    Json(json!({
        "name": topic.name,
        "id": hex(&topic.id),
        "config": config,
        "non_default": non_default,
        "partitions": partitions,
        "groups": groups,
    }))
    .into_response()
}

/// Every group: state, members and total lag.
async fn groups(State(state): State<Shared>, Extension(caller): Extension<Caller>) -> Response {
    let groups: Vec<Value> = state
        .log
        .list_groups()
        .into_iter()
        .filter(|group| caller.sees_group(group))
        .filter_map(|group| state.log.describe_group(&group).ok())
        .map(|g| {
            let now = state.log.clock().now_ms();
            let lag = group_lag(&state.log, &g.group);
            json!({
                "group": g.group,
                "state": phase_name(g.phase),
                "members": g.members.len(),
                "lag": lag.records,
                "lag_ms": lag.oldest_unconsumed.map(|ts| (now - ts).max(0)),
            })
        })
        .collect();
    Json(json!({ "groups": groups })).into_response()
}

/// One group: state, generation, members with their assignments, and per partition the
/// committed offset, the end and the lag.
async fn group(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(group): Path<String>,
) -> Response {
    if let Err(refused) = caller.require(Operation::Describe, ResourceType::Group, &group) {
        return answer(Err(refused));
    }
    if !state.log.list_groups().contains(&group) {
        return not_found(format!("no group {group}"));
    }
    let g = match state.log.describe_group(&group) {
        Ok(g) => g,
        Err(e) => return server_error(e),
    };
    let members: Vec<Value> = g
        .members
        .iter()
        .map(|(member, assigned)| {
            let (host, principal) = host_and_principal(&member.client_host);
            json!({
                "member_id": member.member_id,
                "client_id": member.client_id,
                "client_host": host,
                "principal": principal,
                "assignment": assigned.iter()
                    .map(|(topic, partition)| json!({"topic": topic, "partition": partition}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    let now = state.log.clock().now_ms();
    // As OffsetFetch answers: only the topics the caller may see.
    let mut offsets: Vec<Value> = g
        .offsets
        .iter()
        .filter(|o| caller.sees_topic(&o.topic))
        .map(|o| {
            let partition = o.partition as i32;
            let oldest = partition_lag(&state.log, g.isolation, &o.topic, partition, o.committed)
                .and_then(|lag| lag.oldest_unconsumed);
            json!({
                "topic": o.topic,
                "partition": o.partition,
                "committed": o.committed,
                "log_end": o.log_end,
                "lag": o.lag,
                "lag_ms": oldest.map(|ts| (now - ts).max(0)),
            })
        })
        .collect();
    // Partitions the members hold but the group never committed on: listed with no commit and
    // no lag, as Kafka's tools show them (`-`), with the records the partition has.
    let committed: std::collections::BTreeSet<(&str, u32)> = g
        .offsets
        .iter()
        .map(|o| (o.topic.as_str(), o.partition))
        .collect();
    let uncommitted: std::collections::BTreeSet<(&str, u32)> = g
        .members
        .iter()
        .flat_map(|(_, assigned)| assigned.iter().map(|(t, p)| (t.as_str(), *p)))
        .filter(|place| !committed.contains(place) && caller.sees_topic(place.0))
        .collect();
    for (topic, partition) in uncommitted {
        let Ok(log) = state.log.partition(topic, partition) else {
            continue;
        };
        offsets.push(json!({
            "topic": topic,
            "partition": partition,
            "committed": null,
            "log_end": g.isolation.end(&log),
            "records": log.high_watermark().0 - log.log_start_offset().0,
            "lag": null,
            "lag_ms": null,
        }));
    }
    Json(json!({
        "group": g.group,
        "state": phase_name(g.phase),
        "generation": g.generation,
        "isolation": match g.isolation {
            IsolationLevel::ReadCommitted => "read_committed",
            IsolationLevel::ReadUncommitted => "read_uncommitted",
        },
        "members": members,
        "offsets": offsets,
    }))
    .into_response()
}

/// A member's host and principal: the broker records a member that authenticated as
/// `/HOST (User:NAME)` (what Kafka's tools show as the host), one that did not as `/HOST`;
/// a host never holds a space, a principal (a certificate's subject) may hold brackets.
fn host_and_principal(client_host: &str) -> (&str, &str) {
    client_host
        .strip_suffix(')')
        .and_then(|rest| rest.split_once(" ("))
        .unwrap_or((client_host, logd_kafka::auth::ANONYMOUS))
}

/// Kafka's names for group states; a group known only by its committed offsets is `Empty`.
fn phase_name(phase: Option<GroupPhase>) -> &'static str {
    match phase {
        None | Some(GroupPhase::Empty) => "Empty",
        Some(GroupPhase::PreparingRebalance) => "PreparingRebalance",
        Some(GroupPhase::CompletingRebalance) => "CompletingRebalance",
        Some(GroupPhase::Stable) => "Stable",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn not_found(error: String) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": error }))).into_response()
}

fn server_error(error: logd::Error) -> Response {
    let body = Json(json!({ "error": error.to_string() }));
    (StatusCode::INTERNAL_SERVER_ERROR, body).into_response()
}

#[cfg(test)]
mod tests {
    /// Every endpoint `routes` serves is in the OpenAPI document, and the document names no
    /// endpoint that is not served.
    #[test]
    fn a_members_host_and_principal_are_told_apart() {
        use super::host_and_principal;
        assert_eq!(
            host_and_principal("/127.0.0.1 (User:alice)"),
            ("/127.0.0.1", "User:alice")
        );
        assert_eq!(
            host_and_principal("/10.0.0.7"),
            ("/10.0.0.7", "User:ANONYMOUS")
        );
        assert_eq!(
            host_and_principal("/::1 (User:CN=svc (ops))"),
            ("/::1", "User:CN=svc (ops)"),
            "a principal may hold brackets"
        );
    }

    #[test]
    fn the_openapi_document_lists_exactly_the_served_endpoints() {
        let document = include_str!("../../../../docs/console-api.yaml");
        let documented: Vec<&str> = document
            .lines()
            .filter_map(|l| l.strip_prefix("  /")?.strip_suffix(':'))
            .collect();
        let served = [
            "api/v1/login",
            "api/v1/session",
            "api/v1/logout",
            "api/v1/broker",
            "api/v1/topics",
            "api/v1/topics/{name}",
            "api/v1/topics/{name}/partitions",
            "api/v1/topics/{name}/messages",
            "api/v1/topics/{name}/search",
            "api/v1/dead-letters",
            "api/v1/dead-letters/{topic}",
            "api/v1/dead-letters/{topic}/replay",
            "api/v1/dead-letters/{topic}/letters/{partition}/{offset}",
            "api/v1/history",
            "api/v1/quotas",
            "api/v1/groups",
            "api/v1/groups/{group}",
            "api/v1/groups/{group}/reset-offsets",
            "api/v1/share-groups",
            "api/v1/transactions",
            "metrics",
            "health",
        ];
        assert_eq!(documented, served);
        let source = include_str!("api.rs");
        for path in served.iter().filter_map(|p| p.strip_prefix("api/v1")) {
            assert!(source.contains(&format!("\"{path}\"")), "{path} is routed");
        }
    }
}
