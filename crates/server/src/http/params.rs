//! What the read endpoints share: a failure as an HTTP status and a message (answered as JSON), integer query
//! parameters that say what was wrong with them, and a topic's partition or a 404 that says
//! which of the two is missing.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use logd::Log;
use logd_storage::PartitionLog;
use serde_json::{Value, json};

/// A refused or failed request: its status and what to tell the caller.
pub(super) type Failure = (StatusCode, String);

/// The answer as JSON, or the failure as `{"error": ...}` with its status.
pub(super) fn answer(result: Result<Value, Failure>) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err((status, error)) => (status, Json(json!({ "error": error }))).into_response(),
    }
}

/// A bad request, saying why.
pub(super) fn bad(error: String) -> Failure {
    (StatusCode::BAD_REQUEST, error)
}

/// The integer query parameter `key`, if given.
pub(super) fn number(query: &HashMap<String, String>, key: &str) -> Result<Option<i64>, Failure> {
    query
        .get(key)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| bad(format!("{key} must be an integer, not {v:?}")))
        })
        .transpose()
}

/// Partition `partition` of topic `name`: 404 naming the topic, or the partition, if missing.
pub(super) fn partition_of(
    log: &Log,
    name: &str,
    partition: i64,
) -> Result<Arc<PartitionLog>, Failure> {
    match log.describe_topic(name) {
        Ok(_) => log
            .partition(name, u32::try_from(partition).unwrap_or(u32::MAX))
            .map_err(|_| {
                (
                    StatusCode::NOT_FOUND,
                    format!("topic {name} has no partition {partition}"),
                )
            }),
        Err(logd::Error::UnknownTopic(_)) => {
            Err((StatusCode::NOT_FOUND, format!("no topic {name}")))
        }
        Err(e) => Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}
