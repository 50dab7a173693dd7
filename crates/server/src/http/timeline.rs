//! A dead letter's retry timeline, `GET /api/v1/dead-letters/{topic}/letters/{partition}/{offset}`:
//! where the record came from, each hop through a retry tier with its attempt and due time,
//! the dead-letter entry, and each replay with who asked. The hops are found in the tier
//! topics of the record's original topic as the retry layer names them
//! (`ORIGINAL.retry.TIER`), in the record's partition (a record keeps its partition across
//! hops), walked from storage; the replays come from the dead-letter topic's replays topic.

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use logd::{Headers, Log};
use logd_kafka::acl::{Operation, ResourceType};
use logd_retry::message::*;
use logd_retry::{DEFAULT_RETRY_INFIX, DeadLetters, Embedded};
use logd_storage::Offset;
use logd_storage::batch::RecordRef;
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;
use super::dead_letters::{dead_letter_topic, failed, letter};
use super::params::{Failure, answer};

/// Bytes of batches read per step of a tier's walk.
const READ_STEP: usize = 1 << 20;
/// Records of tier topics one timeline walks at most; past that it says it is incomplete.
const MAX_SCANNED: u64 = 10_000_000;

pub(super) async fn timeline(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((topic, partition, offset)): Path<(String, u32, i64)>,
) -> Response {
    let log = state.log.clone();
    answer(
        tokio::task::spawn_blocking(move || build(&log, &caller, &topic, partition, offset))
            .await
            .unwrap_or_else(|e| Err(failed(e))),
    )
}

fn build(
    log: &Log,
    caller: &Caller,
    topic: &str,
    partition: u32,
    offset: i64,
) -> Result<Value, Failure> {
    caller.require(Operation::Read, ResourceType::Topic, topic)?;
    dead_letter_topic(log, topic)?;
    let mut transport = Embedded::new(log.clone());
    let mut letters = DeadLetters::new(&mut transport, topic);
    let dead = letters
        .show(partition, offset)
        .map_err(failed)?
        .ok_or_else(|| {
            (
                StatusCode::NOT_FOUND,
                format!("no letter at {topic}-{partition} offset {offset}"),
            )
        })?;
    let replays = letters.replays().map_err(failed)?;

    let mut events = Vec::new();
    let origin = (
        dead.header_str(DLQ_ORIGINAL_TOPIC),
        dead.header_i64(DLQ_ORIGINAL_PARTITION),
        dead.header_i64(DLQ_ORIGINAL_OFFSET),
    );
    let mut complete = true;
    if let (Some(original), Some(original_partition), Some(original_offset)) = origin {
        events.push(json!({
            "event": "produced",
            "topic": original,
            "partition": original_partition,
            "offset": original_offset,
            "at": dead.header_i64(DLQ_ORIGINAL_TIMESTAMP),
        }));
        let hops = Hops::find(log, caller, original, original_partition, original_offset);
        complete = hops.complete;
        events.extend(hops.events);
    }
    events.push(json!({
        "event": "dead-lettered",
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "at": dead.header_i64(DLQ_LAST_FAILURE_TS),
        "attempts": dead.header_i64(DLQ_ATTEMPTS),
        "reason": dead.header_str(DLQ_REASON),
        "error_class": dead.header_str(DLQ_ERROR_CLASS),
        "error_message": dead.header_str(DLQ_ERROR_MESSAGE),
    }));
    events.extend(
        replays
            .iter()
            .filter(|r| (r.partition, r.offset) == (partition, offset))
            .map(|r| {
                json!({
                    "event": "replayed",
                    "topic": r.target,
                    "partition": r.target_partition,
                    "offset": r.target_offset,
                    "at": r.at,
                    "by": r.by,
                    "replay_count": r.count,
                })
            }),
    );
    Ok(json!({
        "letter": letter(&dead),
        "events": events,
        "complete": complete,
    }))
}

/// A record's hops through the retry tiers of its original topic.
struct Hops {
    events: Vec<Value>,
    /// False if a tier was too long to walk whole, or the caller may not read one.
    complete: bool,
}

impl Hops {
    fn find(log: &Log, caller: &Caller, original: &str, partition: i64, offset: i64) -> Hops {
        let prefix = format!("{original}{DEFAULT_RETRY_INFIX}");
        let mut tiers: Vec<String> = log
            .list_topics()
            .into_iter()
            .filter(|t| t.starts_with(&prefix))
            .collect();
        tiers.sort();
        let mut hops = Hops {
            events: Vec::new(),
            complete: true,
        };
        let mut budget = MAX_SCANNED;
        for tier in tiers {
            if !caller.may(Operation::Read, ResourceType::Topic, &tier) {
                hops.complete = false;
                continue;
            }
            let Ok(count) = log.partition_count(&tier) else {
                continue;
            };
            let tier_partition = (partition as u32) % count.max(1);
            let Ok(tier_log) = log.partition(&tier, tier_partition) else {
                continue;
            };
            let (partition_text, offset_text) = (partition.to_string(), offset.to_string());
            let matches = |r: &RecordRef<'_>| {
                header(r, RETRY_ORIGINAL_OFFSET) == Some(offset_text.as_bytes())
                    && header(r, RETRY_ORIGINAL_PARTITION) == Some(partition_text.as_bytes())
                    && header(r, RETRY_ORIGINAL_TOPIC) == Some(original.as_bytes())
            };
            let (mut next, end) = (tier_log.log_start_offset().0, tier_log.high_watermark().0);
            while next < end && budget > 0 {
                let walked = tier_log.visit_records(Offset(next), READ_STEP, |record| {
                    budget -= 1;
                    if matches(&record) {
                        hops.events.push(json!({
                            "event": "retry",
                            "topic": tier,
                            "partition": tier_partition,
                            "offset": record.offset,
                            "attempt": number(header(&record, ATTEMPT)),
                            "due": number(header(&record, DUE_TS)),
                        }));
                    }
                    budget > 0
                });
                match walked {
                    Ok(reached) if reached.0 > next => next = reached.0,
                    _ => break,
                }
            }
            if next < end {
                hops.complete = false;
            }
        }
        hops.events.sort_by_key(|e| e["due"].as_i64());
        hops
    }
}

/// The value of the first header named `name`.
fn header<'a>(record: &RecordRef<'a>, name: &str) -> Option<&'a [u8]> {
    record
        .headers
        .into_iter()
        .find(|h| h.key == name.as_bytes())
        .and_then(|h| h.value)
}

/// A header value as an integer, if it is one.
fn number(value: Option<&[u8]>) -> Option<i64> {
    std::str::from_utf8(value?).ok()?.parse().ok()
}
