//! `GET /api/v1/topics/{name}/messages`: records of one partition from a chosen start, read
//! straight from storage (compressed batches decoded), each key, value and header shown as
//! text when it is UTF-8 and as hex when it is not.

use std::collections::HashMap;

use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use logd_kafka::acl::{Operation, ResourceType};
use logd_storage::Offset;
use logd_storage::batch::RecordRef;
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;
use super::params::{Failure, answer, bad, number, partition_of};

/// Records per request unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 50;
/// The most records one request returns.
const MAX_LIMIT: usize = 1000;
/// Bytes of batches read per step of the walk.
const READ_STEP: usize = 1 << 20;

/// Where reading starts, from the query: `offset=N`, `timestamp=MS` (the first record at or
/// after it), `last=N` (the last N records), or else the earliest record.
enum Start {
    Earliest,
    Offset(i64),
    Timestamp(i64),
    Last(i64),
}

pub(super) async fn messages(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    answer(
        caller
            .require(Operation::Read, ResourceType::Topic, &name)
            .and_then(|()| read(&state, &name, &query)),
    )
}

fn read(state: &Shared, name: &str, query: &HashMap<String, String>) -> Result<Value, Failure> {
    let partition = number(query, "partition")?.unwrap_or(0);
    let limit = match number(query, "limit")? {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT as i64).contains(&n) => n as usize,
        Some(n) => return Err(bad(format!("limit must be 1 to {MAX_LIMIT}, not {n}"))),
    };
    let start = match (
        number(query, "offset")?,
        number(query, "timestamp")?,
        number(query, "last")?,
    ) {
        (None, None, None) => Start::Earliest,
        (Some(offset), None, None) => Start::Offset(offset),
        (None, Some(timestamp), None) => Start::Timestamp(timestamp),
        (None, None, Some(last)) if last > 0 => Start::Last(last),
        (None, None, Some(last)) => return Err(bad(format!("last must be positive, not {last}"))),
        _ => return Err(bad("give at most one of offset, timestamp and last".into())),
    };
    let log = partition_of(&state.log, name, partition)?;
    let (log_start, high_watermark) = (log.log_start_offset().0, log.high_watermark().0);
    let from = match start {
        Start::Earliest => log_start,
        Start::Offset(offset) if (log_start..=high_watermark).contains(&offset) => offset,
        Start::Offset(offset) => {
            return Err(bad(format!(
                "offset {offset} is outside the partition's {log_start} to {high_watermark}"
            )));
        }
        Start::Timestamp(ts) => match log.offset_for_timestamp(ts) {
            Ok(found) => found.map_or(high_watermark, |o| o.0),
            Err(e) => return Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        },
        Start::Last(n) => high_watermark.saturating_sub(n).max(log_start),
    };
    let mut records = Vec::new();
    let mut next = from;
    while next < high_watermark && records.len() < limit {
        let reached = log
            .visit_records(Offset(next), READ_STEP, |record| {
                records.push(record_json(&record));
                records.len() < limit
            })
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if reached.0 <= next {
            break;
        }
        next = reached.0;
    }
    Ok(json!({
        "topic": name,
        "partition": partition,
        "log_start": log_start,
        "high_watermark": high_watermark,
        "next_offset": next,
        "records": records,
    }))
}

/// A record as the console shows it: offset, timestamp, and key, value and headers as
/// [`shown`] renders bytes.
pub(super) fn record_json(record: &RecordRef<'_>) -> Value {
    json!({
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": record.key.map(shown),
        "value": record.value.map(shown),
        "headers": record.headers.map(|h| json!({
            "key": shown(h.key),
            "value": h.value.map(shown),
        })).collect::<Vec<_>>(),
    })
}

/// Bytes as the console shows them: text when they are UTF-8, else hex.
pub(super) fn shown(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({ "text": text }),
        Err(_) => json!({ "hex": bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_shown_as_text_and_anything_else_as_hex() {
        assert_eq!(
            shown(b"<b>caf\xc3\xa9</b>"),
            json!({ "text": "<b>café</b>" })
        );
        assert_eq!(shown(b"\xff\x00a"), json!({ "hex": "ff0061" }));
        assert_eq!(shown(b""), json!({ "text": "" }));
    }
}
