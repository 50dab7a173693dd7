//! `GET /api/v1/topics/{name}/messages`: records of one partition from a chosen start, read
//! straight from storage (compressed batches decoded), each key, value and header shown as
//! text when it is UTF-8 and as hex when it is not.

use std::collections::HashMap;

use axum::extract::{Extension, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use logd_kafka::acl::{Operation, ResourceType};
use logd_storage::batch::RecordRef;
use logd_storage::{Offset, PartitionLog};
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

/// Where reading starts, from the query: `offset=N` (one partition), `timestamp=MS` (the first
/// record at or after it), `last=N` (the last N records), `latest=true` (the end: nothing yet,
/// the start of a live tail), `after=P:O,P:O` (each partition from its own offset, as the live
/// tail continues), or else the earliest record.
enum Start {
    Earliest,
    Latest,
    Offset(i64),
    Timestamp(i64),
    Last(i64),
    After(HashMap<u32, i64>),
}

/// Partitions read together at most: `partition=all` on a larger topic is refused.
const MAX_PARTITIONS: usize = 1000;

pub(super) async fn messages(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let result = caller
        .require(Operation::Read, ResourceType::Topic, &name)
        .and_then(|()| read(&state, &name, &query));
    match (query.get("format").map(String::as_str), result) {
        (Some("jsonl"), Ok(page)) => json_lines(&name, &page),
        (None | Some("json"), result) => answer(result),
        (Some(_), Err(failure)) => answer(Err(failure)),
        (Some(other), Ok(_)) => answer(Err(bad(format!(
            "format must be json or jsonl, not {other:?}"
        )))),
    }
}

/// The page's records as JSON lines, one record a line, to save as a file.
fn json_lines(name: &str, page: &Value) -> Response {
    let mut body = String::new();
    for record in page["records"].as_array().into_iter().flatten() {
        body.push_str(&record.to_string());
        body.push('\n');
    }
    let file = format!(
        "{}.jsonl",
        name.replace(
            |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '.',
            "_"
        )
    );
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ),
        ],
        body,
    )
        .into_response()
}

/// `partition=N`, `partition=0,2` or `partition=all` (0 when absent).
fn partitions(
    log: &logd::Log,
    name: &str,
    query: &HashMap<String, String>,
) -> Result<Vec<u32>, Failure> {
    let chosen: Vec<i64> = match query.get("partition").map(String::as_str) {
        None => vec![0],
        Some("all") => {
            let count = match log.partition_count(name) {
                Ok(count) => count,
                Err(_) => return partition_of(log, name, 0).map(|_| Vec::new()),
            };
            (0..count as i64).collect()
        }
        Some(list) => list
            .split(',')
            .map(|p| {
                p.trim().parse::<i64>().map_err(|_| {
                    bad(format!(
                        "partition must be a number, a list of them or all, not {list:?}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
    };
    if chosen.len() > MAX_PARTITIONS {
        return Err(bad(format!(
            "at most {MAX_PARTITIONS} partitions at once, not {}",
            chosen.len()
        )));
    }
    let mut partitions = Vec::new();
    for partition in chosen {
        partition_of(log, name, partition)?;
        if !partitions.contains(&(partition as u32)) {
            partitions.push(partition as u32);
        }
    }
    Ok(partitions)
}

fn read(state: &Shared, name: &str, query: &HashMap<String, String>) -> Result<Value, Failure> {
    let partitions = partitions(&state.log, name, query)?;
    let limit = match number(query, "limit")? {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT as i64).contains(&n) => n as usize,
        Some(n) => return Err(bad(format!("limit must be 1 to {MAX_LIMIT}, not {n}"))),
    };
    let after = query.get("after").map(|a| after(a)).transpose()?;
    let latest = match query.get("latest").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(bad(format!("latest must be true or false, not {other:?}"))),
    };
    let one_start = || bad("give at most one of offset, timestamp, last, latest and after".into());
    let start = match (
        number(query, "offset")?,
        number(query, "timestamp")?,
        number(query, "last")?,
        after,
    ) {
        (None, None, None, None) if latest => Start::Latest,
        _ if latest => return Err(one_start()),
        (None, None, None, None) => Start::Earliest,
        (Some(_), None, None, None) if partitions.len() > 1 => {
            return Err(bad(
                "offset needs one partition: give after=P:O,... for several".into(),
            ));
        }
        (Some(offset), None, None, None) => Start::Offset(offset),
        (None, Some(timestamp), None, None) => Start::Timestamp(timestamp),
        (None, None, Some(last), None) if last > 0 => Start::Last(last),
        (None, None, Some(last), None) => {
            return Err(bad(format!("last must be positive, not {last}")));
        }
        (None, None, None, Some(after)) => Start::After(after),
        _ => {
            return Err(one_start());
        }
    };
    // First the places of up to `limit` records of each partition, without copying them;
    // then, in time order, the first `limit` of those, read again as JSON.
    let mut shown_partitions = Vec::new();
    let mut places: Vec<(i64, u32, i64)> = Vec::new();
    let mut logs = HashMap::new();
    for &partition in &partitions {
        let log = partition_of(&state.log, name, partition as i64)?;
        let (log_start, high_watermark) = (log.log_start_offset().0, log.high_watermark().0);
        let from = match &start {
            Start::Earliest => log_start,
            Start::Latest => high_watermark,
            Start::Offset(_) | Start::After(_) => {
                let offset = start_offset(&start, partition, log_start);
                if !(log_start..=high_watermark).contains(&offset) {
                    let whose = match partitions.len() {
                        1 => "the partition's".to_owned(),
                        _ => format!("partition {partition}'s"),
                    };
                    return Err(bad(format!(
                        "offset {offset} is outside {whose} {log_start} to {high_watermark}"
                    )));
                }
                offset
            }
            Start::Timestamp(ts) => match log.offset_for_timestamp(*ts) {
                Ok(found) => found.map_or(high_watermark, |o| o.0),
                Err(e) => return Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
            },
            Start::Last(n) => high_watermark.saturating_sub(*n).max(log_start),
        };
        let mut taken = 0;
        walk(&log, from, high_watermark, |record| {
            places.push((record.timestamp, partition, record.offset));
            taken += 1;
            taken < limit
        })?;
        shown_partitions.push((partition, log_start, high_watermark, from));
        logs.insert(partition, log);
    }
    places.sort_unstable();
    if let Start::Last(n) = start {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        places.drain(..places.len().saturating_sub(n));
    }
    places.truncate(limit);

    let mut chosen: HashMap<u32, Vec<i64>> = HashMap::new();
    for (_, partition, offset) in &places {
        chosen.entry(*partition).or_default().push(*offset);
    }
    let mut json_of: HashMap<(u32, i64), Value> = HashMap::new();
    for (partition, offsets) in &chosen {
        let (first, last) = (
            offsets.iter().min().copied().unwrap_or(0),
            offsets.iter().max().copied().unwrap_or(0),
        );
        walk(&logs[partition], first, last + 1, |record| {
            if offsets.contains(&record.offset) {
                let mut shown = record_json(&record);
                if partitions.len() > 1 {
                    shown["partition"] = (*partition).into();
                }
                json_of.insert((*partition, record.offset), shown);
            }
            true
        })?;
    }
    let records: Vec<Value> = places
        .iter()
        .filter_map(|(_, partition, offset)| json_of.remove(&(*partition, *offset)))
        .collect();
    let described: Vec<Value> = shown_partitions
        .iter()
        .map(|(partition, log_start, high_watermark, from)| {
            let next = chosen
                .get(partition)
                .and_then(|offsets| offsets.iter().max())
                .map_or(*from, |last| last + 1);
            json!({
                "partition": partition,
                "log_start": log_start,
                "high_watermark": high_watermark,
                "next_offset": next,
            })
        })
        .collect();
    let mut page = json!({ "topic": name, "partitions": described, "records": records });
    if let [one] = &described[..] {
        for key in ["partition", "log_start", "high_watermark", "next_offset"] {
            page[key] = one[key].clone();
        }
    }
    Ok(page)
}

/// Where `start` begins in `partition`: its offset, or the partition's own in `after` (the
/// log start for one it does not name).
fn start_offset(start: &Start, partition: u32, log_start: i64) -> i64 {
    match start {
        Start::Offset(offset) => *offset,
        Start::After(offsets) => offsets.get(&partition).copied().unwrap_or(log_start),
        _ => log_start,
    }
}

/// `P:O,P:O`.
fn after(text: &str) -> Result<HashMap<u32, i64>, Failure> {
    text.split(',')
        .map(|pair| {
            let (p, o) = pair.split_once(':')?;
            Some((p.trim().parse().ok()?, o.trim().parse().ok()?))
        })
        .collect::<Option<_>>()
        .ok_or_else(|| bad(format!("after is PARTITION:OFFSET,..., not {text:?}")))
}

/// Calls `f` with each record of `log` from `from` to `to` until it returns false.
fn walk(
    log: &PartitionLog,
    from: i64,
    to: i64,
    mut f: impl FnMut(RecordRef<'_>) -> bool,
) -> Result<(), Failure> {
    let mut next = from;
    let mut going = true;
    while next < to && going {
        let reached = log
            .visit_records(Offset(next), READ_STEP, |record| {
                if record.offset >= to {
                    going = false;
                    return false;
                }
                going = f(record);
                going
            })
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if reached.0 <= next {
            break;
        }
        next = reached.0;
    }
    Ok(())
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
