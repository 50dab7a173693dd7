//! `GET /api/v1/topics/{name}/search`: a substring search over one partition's records, read
//! straight from storage, in steps the caller continues. Each call scans at most `scan`
//! records from `from` and says exactly how far it got (`scanned_through`) and whether the
//! range is done, so the console shows progress, can cancel between steps, and never calls a
//! search that stopped early one that found nothing.

use std::collections::HashMap;

use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use logd_kafka::acl::{Operation, ResourceType};
use logd_storage::Offset;
use memchr::memmem::Finder;
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;
use super::messages::record_json;
use super::params::{Failure, answer, bad, number, partition_of};

/// Matches one call returns unless `limit` says otherwise, and at most.
const DEFAULT_MATCHES: usize = 100;
const MAX_MATCHES: usize = 1000;
/// Records one call scans unless `scan` says otherwise, and at most.
const DEFAULT_SCAN: i64 = 1_000_000;
const MAX_SCAN: i64 = 10_000_000;
/// Bytes of batches read per step of the walk.
const READ_STEP: usize = 1 << 20;

/// Where in a record to look.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Any,
    Key,
    Value,
    Header,
}

pub(super) async fn search(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Err(refused) = caller.require(Operation::Read, ResourceType::Topic, &name) {
        return answer(Err(refused));
    }
    let log = state.log.clone();
    let result = tokio::task::spawn_blocking(move || run(&log, &name, &query))
        .await
        .unwrap_or_else(|e| Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())));
    answer(result)
}

fn run(log: &logd::Log, name: &str, query: &HashMap<String, String>) -> Result<Value, Failure> {
    let needle = match query.get("q") {
        Some(q) if !q.is_empty() => q.clone(),
        _ => return Err(bad("q, the text to find, is required".into())),
    };
    let field = match query.get("in").map(String::as_str) {
        None | Some("any") => Field::Any,
        Some("key") => Field::Key,
        Some("value") => Field::Value,
        Some("header") => Field::Header,
        Some(other) => {
            return Err(bad(format!(
                "in must be any, key, value or header, not {other:?}"
            )));
        }
    };
    let limit = match number(query, "limit")? {
        None => DEFAULT_MATCHES,
        Some(n) if (1..=MAX_MATCHES as i64).contains(&n) => n as usize,
        Some(n) => return Err(bad(format!("limit must be 1 to {MAX_MATCHES}, not {n}"))),
    };
    let scan = match number(query, "scan")? {
        None => DEFAULT_SCAN,
        Some(n) if (1..=MAX_SCAN).contains(&n) => n,
        Some(n) => return Err(bad(format!("scan must be 1 to {MAX_SCAN}, not {n}"))),
    };
    let partition = number(query, "partition")?.unwrap_or(0);
    let partition_log = partition_of(log, name, partition)?;
    let (log_start, high_watermark) = (
        partition_log.log_start_offset().0,
        partition_log.high_watermark().0,
    );
    // The range: offsets, or the first records at or after two times.
    let at_time = |key: &str| -> Result<Option<i64>, Failure> {
        let Some(ts) = number(query, key)? else {
            return Ok(None);
        };
        let found = partition_log
            .offset_for_timestamp(ts)
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        Ok(Some(found.map_or(high_watermark, |o| o.0)))
    };
    let from = match (number(query, "from")?, at_time("from_timestamp")?) {
        (Some(_), Some(_)) => return Err(bad("give from or from_timestamp, not both".into())),
        (Some(offset), None) | (None, Some(offset)) => offset,
        (None, None) => log_start,
    };
    let to = match (number(query, "to")?, at_time("to_timestamp")?) {
        (Some(_), Some(_)) => return Err(bad("give to or to_timestamp, not both".into())),
        (Some(offset), None) | (None, Some(offset)) => offset.min(high_watermark),
        (None, None) => high_watermark,
    };
    if from < log_start || from > high_watermark {
        return Err(bad(format!(
            "from {from} is outside the partition's {log_start} to {high_watermark}"
        )));
    }

    let finder = Finder::new(needle.as_bytes());
    let found = |bytes: Option<&[u8]>| bytes.is_some_and(|b| finder.find(b).is_some());
    let in_headers = |mut headers: logd_storage::batch::Headers<'_>| {
        headers.any(|h| found(Some(h.key)) || found(h.value))
    };
    let mut matches = Vec::new();
    let mut scanned: i64 = 0;
    let mut next = from;
    while next < to && scanned < scan && matches.len() < limit {
        let reached = partition_log
            .visit_records(Offset(next), READ_STEP, |record| {
                if record.offset >= to {
                    return false;
                }
                scanned += 1;
                let hit = match field {
                    Field::Key => found(record.key),
                    Field::Value => found(record.value),
                    Field::Header => in_headers(record.headers),
                    Field::Any => {
                        found(record.key) || found(record.value) || in_headers(record.headers)
                    }
                };
                if hit {
                    matches.push(record_json(&record));
                }
                // Stop right after the record that used up the budget.
                scanned < scan && matches.len() < limit
            })
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if reached.0 <= next {
            break;
        }
        next = reached.0.min(to);
    }
    Ok(json!({
        "topic": name,
        "partition": partition,
        "from": from,
        "to": to,
        "scanned": scanned,
        "scanned_through": next,
        "done": next >= to,
        "matches": matches,
    }))
}
