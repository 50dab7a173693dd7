//! The console's changes: produce a record, create a topic, add partitions, delete a topic
//! (its name typed again to confirm), reset a group's offsets (planned first, applied with
//! `execute`) and delete a group. Each is one engine call, the one the Kafka handler of the same change makes, so the
//! engine's rules (topic names, configuration ranges, no reset or delete while a group has
//! members) answer the same way. Bodies are JSON only: a page on another site cannot send
//! those, nor a DELETE, without a CORS preflight this server never grants.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use logd::{Partitioner, ResetTarget};
use logd_kafka::acl::{Operation, ResourceType};
use logd_storage::batch::{BatchBuilder, Compression};
use serde::Deserialize;
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;
use super::refusals::{engine_status, status_of};

use super::params::Failure;

fn answer(result: Result<(StatusCode, Value), Failure>) -> Response {
    match result {
        Ok((status, value)) => (status, Json(value)).into_response(),
        Err((status, error)) => (status, Json(json!({ "error": error }))).into_response(),
    }
}

/// Runs an engine change (it may wait on fsyncs) off the listener's thread.
async fn blocking(
    work: impl FnOnce() -> Result<(StatusCode, Value), Failure> + Send + 'static,
) -> Response {
    answer(
        tokio::task::spawn_blocking(work)
            .await
            .unwrap_or_else(|e| Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))),
    )
}

#[derive(Debug, Deserialize)]
pub(super) struct NewRecord {
    key: Option<String>,
    value: Option<String>,
    #[serde(default)]
    headers: Vec<NewHeader>,
    /// The partition; by the key's murmur2 hash (as Kafka's Java client) when absent, keyless
    /// records in turn.
    partition: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(super) struct NewHeader {
    key: String,
    value: Option<String>,
}

/// `POST /api/v1/topics/{name}/messages`: one record, appended as the Produce handler appends
/// a client's batch (the engine's size limit and durability apply).
pub(super) async fn produce(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Json(request): Json<NewRecord>,
) -> Response {
    let (log, partitioner) = (state.log.clone(), state.partitioner.clone());
    blocking(move || {
        caller.require(Operation::Write, ResourceType::Topic, &name)?;
        let count = log.partition_count(&name).map_err(|e| engine_status(&e))?;
        let key = request.key.as_deref().map(str::as_bytes);
        let partition = match request.partition {
            Some(p) if p < count => p,
            Some(p) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("topic {name} has no partition {p} (it has {count})"),
                ));
            }
            None => partitioner.partition(key, count),
        };
        let headers: Vec<(&[u8], Option<&[u8]>)> = request
            .headers
            .iter()
            .map(|h| (h.key.as_bytes(), h.value.as_deref().map(str::as_bytes)))
            .collect();
        let mut builder = BatchBuilder::new(Compression::None);
        builder.push(
            log.clock().now_ms(),
            key,
            request.value.as_deref().map(str::as_bytes),
            &headers,
        );
        let mut batch = builder
            .build(0)
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let appended = log
            .append(&name, partition, &mut batch)
            .map_err(|e| engine_status(&e))?;
        Ok((
            StatusCode::CREATED,
            json!({ "topic": name, "partition": partition, "offset": appended.base_offset.0 }),
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub(super) struct NewTopic {
    name: String,
    partitions: Option<u32>,
}

/// `POST /api/v1/topics`: a topic with the broker's defaults (as CreateTopics without
/// configs gets), `partitions` of them (1 unless given).
pub(super) async fn create_topic(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Json(request): Json<NewTopic>,
) -> Response {
    let log = state.log.clone();
    blocking(move || {
        let mut config = log.default_topic_config().clone();
        config.partitions = request.partitions.unwrap_or(1);
        let created = caller
            .admin()
            .create_topic(caller.who(), &request.name, config, false)
            .map_err(|r| status_of(&r))?;
        let partitions = created.config.partitions;
        tracing::info!(topic = %request.name, partitions, principal = caller.principal(), "topic created from the console");
        Ok((
            StatusCode::CREATED,
            json!({ "name": request.name, "partitions": partitions }),
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub(super) struct Confirmation {
    confirm: String,
}

/// `DELETE /api/v1/topics/{name}` with `{"confirm": name}`: the topic, its data and every
/// group's offsets on it.
pub(super) async fn delete_topic(
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Json(request): Json<Confirmation>,
) -> Response {
    blocking(move || {
        if request.confirm != name {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("type the topic's name ({name}) as confirm to delete it"),
            ));
        }
        caller
            .admin()
            .delete_topic(caller.who(), &name)
            .map_err(|r| status_of(&r))?;
        tracing::info!(topic = %name, principal = caller.principal(), "topic deleted from the console");
        Ok((StatusCode::OK, json!({ "deleted": name })))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub(super) struct Partitions {
    count: u32,
}

/// `POST /api/v1/topics/{name}/partitions` with `{"count": n}`: grows the topic to n
/// partitions (never shrinks, as Kafka).
pub(super) async fn add_partitions(
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Json(request): Json<Partitions>,
) -> Response {
    blocking(move || {
        let count = i32::try_from(request.count).unwrap_or(i32::MAX);
        caller
            .admin()
            .add_partitions(caller.who(), &name, count, None, false)
            .map_err(|r| status_of(&r))?;
        Ok((
            StatusCode::OK,
            json!({ "name": name, "partitions": request.count }),
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub(super) struct Reset {
    /// `earliest`, `latest`, `offset`, `timestamp` or `shift-by`.
    to: String,
    /// The offset, timestamp (ms) or shift those three need.
    value: Option<i64>,
    /// Topics to reset; every topic the group has offsets on when absent.
    topics: Option<Vec<String>>,
    /// Apply the plan; without it, only plan.
    #[serde(default)]
    execute: bool,
}

/// `POST /api/v1/groups/{group}/reset-offsets`: the plan of `logd groups reset-offsets`,
/// applied with `execute`; refused (409) while the group has members, as Kafka refuses.
pub(super) async fn reset_offsets(
    Extension(caller): Extension<Caller>,
    Path(group): Path<String>,
    Json(request): Json<Reset>,
) -> Response {
    blocking(move || {
        let target = target(&request)?;
        let plan = caller
            .admin()
            .reset_offsets(
                caller.who(),
                &group,
                request.topics.clone(),
                target,
                request.execute,
            )
            .map_err(|r| status_of(&r))?;
        if request.execute {
            tracing::info!(group, partitions = plan.len(), to = %request.to, principal = caller.principal(), "offsets reset from the console");
        }
        let plan: Vec<Value> = plan
            .iter()
            .map(|p| {
                json!({
                    "topic": p.topic,
                    "partition": p.partition,
                    "current": p.current,
                    "requested": p.requested,
                    "target": p.target,
                })
            })
            .collect();
        Ok((
            StatusCode::OK,
            json!({ "group": group, "executed": request.execute, "plan": plan }),
        ))
    })
    .await
}

fn target(request: &Reset) -> Result<ResetTarget, Failure> {
    let value = |what: &str| {
        request.value.ok_or_else(|| {
            (
                StatusCode::BAD_REQUEST,
                format!("a reset to {what} needs a value"),
            )
        })
    };
    Ok(match request.to.as_str() {
        "earliest" => ResetTarget::Earliest,
        "latest" => ResetTarget::Latest,
        "offset" => ResetTarget::Offset(value("an offset")?),
        "timestamp" => ResetTarget::Timestamp(value("a timestamp")?),
        "shift-by" => ResetTarget::ShiftBy(value("a shift")?),
        other => {
            return Err((
                StatusCode::BAD_REQUEST,
                format!(
                    "to must be earliest, latest, offset, timestamp or shift-by, not {other:?}"
                ),
            ));
        }
    })
}

/// `DELETE /api/v1/groups/{group}`: its offsets and state; refused (409) while it has members.
pub(super) async fn delete_group(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(group): Path<String>,
) -> Response {
    let log = state.log.clone();
    blocking(move || {
        let known = log.list_groups().contains(&group);
        let deleted = caller
            .admin()
            .delete_group(caller.who(), &group)
            .map_err(|r| status_of(&r))?;
        if !known && !deleted {
            return Err((StatusCode::NOT_FOUND, format!("no group {group}")));
        }
        tracing::info!(
            group,
            principal = caller.principal(),
            "group deleted from the console"
        );
        Ok((StatusCode::OK, json!({ "deleted": group })))
    })
    .await
}
