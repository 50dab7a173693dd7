//! Dead-letter triage, `/api/v1/dead-letters`: every `*.dlq` topic with its pending letters
//! grouped by error class, reason and original topic; a topic's letters with their origin,
//! error, attempts and recorded replays; and replay of a group, a selection or one letter to
//! the original topic (or another), planned first with a dry run. All of it is
//! `logd_retry::DeadLetters` over the engine, the same code `logd dlq` runs, so each replay is
//! recorded with who asked, and a letter once replayed is not sent again by accident.

use std::collections::{BTreeMap, HashMap};

use axum::Json;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use logd::Headers;
use logd_kafka::acl::{Operation, ResourceType};
use logd_retry::message::*;
use logd_retry::{DeadLetters, Embedded, LetterFilter, Message, ReplayOptions};
use serde::Deserialize;
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;
use super::checked_transport::CheckedTransport;
use super::messages::shown;
use super::params::{Failure, answer, bad};
use crate::metrics::DLQ_SUFFIX;

/// Letters one listing returns at most.
const MAX_LETTERS: usize = 500;
/// Letters a replay's answer shows whole, as a sample of what it moves.
const SAMPLE: usize = 3;

pub(super) fn failed(e: impl std::fmt::Display) -> Failure {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// Every dead-letter topic: its pending letters in groups of the same error class, reason
/// and original topic, with how many and when the first and last of each were written.
pub(super) async fn topics(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let log = state.log.clone();
    answer(
        blocking(move || {
            // Grouping reads the letters: the topics the caller may READ.
            let mut names: Vec<String> = log
                .list_topics()
                .into_iter()
                .filter(|t| {
                    t.ends_with(DLQ_SUFFIX) && caller.may(Operation::Read, ResourceType::Topic, t)
                })
                .collect();
            names.sort();
            let mut topics = Vec::new();
            for name in names {
                let mut transport = Embedded::new(log.clone());
                let pending = DeadLetters::new(&mut transport, &name)
                    .list(true)
                    .map_err(failed)?;
                let mut groups: BTreeMap<(String, String, String), (usize, i64, i64)> =
                    BTreeMap::new();
                for letter in &pending {
                    let key = (
                        text(letter, DLQ_ERROR_CLASS),
                        text(letter, DLQ_REASON),
                        text(letter, DLQ_ORIGINAL_TOPIC),
                    );
                    let entry = groups.entry(key).or_insert((0, i64::MAX, i64::MIN));
                    entry.0 += 1;
                    entry.1 = entry.1.min(letter.timestamp);
                    entry.2 = entry.2.max(letter.timestamp);
                }
                let groups: Vec<Value> = groups
                    .into_iter()
                    .map(
                        |((error_class, reason, original_topic), (count, first, last))| {
                            json!({
                                "error_class": error_class,
                                "reason": reason,
                                "original_topic": original_topic,
                                "count": count,
                                "first_seen": first,
                                "last_seen": last,
                            })
                        },
                    )
                    .collect();
                topics.push(json!({ "topic": name, "pending": pending.len(), "groups": groups }));
            }
            Ok(json!({ "topics": topics }))
        })
        .await,
    )
}

/// A dead-letter topic's letters (pending ones unless `all=true`), optionally only those of
/// one `error_class` and `reason`, at most [`MAX_LETTERS`].
pub(super) async fn letters(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(topic): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let log = state.log.clone();
    answer(
        blocking(move || {
            caller.require(Operation::Read, ResourceType::Topic, &topic)?;
            dead_letter_topic(&log, &topic)?;
            let all = match query.get("all").map(String::as_str) {
                None | Some("false") => false,
                Some("true") => true,
                Some(other) => {
                    return Err(bad(format!("all must be true or false, not {other:?}")));
                }
            };
            let filter = LetterFilter {
                reason: query.get("reason").cloned(),
                error_class: query.get("error_class").cloned(),
                ..LetterFilter::default()
            };
            let mut transport = Embedded::new(log);
            let mut dead_letters = DeadLetters::new(&mut transport, &topic);
            let listed = dead_letters.list(!all).map_err(failed)?;
            let mut replays: HashMap<(u32, i64), Vec<Value>> = HashMap::new();
            for r in dead_letters.replays().map_err(failed)? {
                replays
                    .entry((r.partition, r.offset))
                    .or_default()
                    .push(json!({
                        "target": r.target,
                        "target_partition": r.target_partition,
                        "target_offset": r.target_offset,
                        "replay_count": r.count,
                        "by": r.by,
                        "at": r.at,
                    }));
            }
            let matching: Vec<&Message> = listed.iter().filter(|l| filter.matches(l)).collect();
            let letters: Vec<Value> = matching
                .iter()
                .take(MAX_LETTERS)
                .map(|l| {
                    let mut shown = letter(l);
                    shown["replays"] = replays
                        .remove(&(l.partition, l.offset))
                        .unwrap_or_default()
                        .into();
                    shown
                })
                .collect();
            Ok(json!({
                "topic": topic,
                "matching": matching.len(),
                "letters": letters,
            }))
        })
        .await,
    )
}

/// What a replay request says: which letters, where to, and whether only to plan it.
#[derive(Debug, Deserialize)]
pub(super) struct ReplayRequest {
    error_class: Option<String>,
    reason: Option<String>,
    key: Option<String>,
    /// Only these letters.
    letters: Option<Vec<Place>>,
    to: Option<String>,
    #[serde(default)]
    dry_run: bool,
}

/// A letter's place in its topic.
#[derive(Debug, Deserialize)]
pub(super) struct Place {
    partition: u32,
    offset: i64,
}

/// Replays the pending letters a request selects (or plans it, with `dry_run`). The caller
/// must READ the dead-letter topic and WRITE every topic a letter goes to: the targets of the
/// plan are checked before anything is written, and each append again as it is made.
pub(super) async fn replay(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(topic): Path<String>,
    Json(request): Json<ReplayRequest>,
) -> Response {
    let log = state.log.clone();
    answer(
        blocking(move || {
            caller.require(Operation::Read, ResourceType::Topic, &topic)?;
            dead_letter_topic(&log, &topic)?;
            if let Some(to) = &request.to
                && log.describe_topic(to).is_err()
            {
                return Err(bad(format!("no topic {to} to replay into")));
            }
            let options = ReplayOptions {
                to: request.to.clone(),
                filter: LetterFilter {
                    reason: request.reason.clone(),
                    error_class: request.error_class.clone(),
                    key: request.key.clone(),
                    letters: request
                        .letters
                        .as_ref()
                        .map(|places| places.iter().map(|l| (l.partition, l.offset)).collect()),
                },
                from_beginning: false,
                dry_run: true,
                by: Some(caller.principal().to_owned()),
            };
            let log_for_sample = log.clone();
            let mut planning = Embedded::new(log.clone());
            let mut report = DeadLetters::new(&mut planning, &topic)
                .replay(&options)
                .map_err(failed)?;
            if !request.dry_run {
                let mut targets: Vec<&str> = report.replays.iter().map(|r| &*r.target).collect();
                targets.sort_unstable();
                targets.dedup();
                for target in targets {
                    caller.require(Operation::Write, ResourceType::Topic, target)?;
                }
                let mut transport = CheckedTransport::new(Embedded::new(log), &caller);
                let replayed = DeadLetters::new(&mut transport, &topic).replay(&ReplayOptions {
                    dry_run: false,
                    ..options
                });
                report = match (replayed, transport.refused) {
                    (Ok(report), _) => report,
                    (Err(_), Some(refused)) => return Err(refused),
                    (Err(e), None) => return Err(failed(e)),
                };
                tracing::info!(
                    topic,
                    principal = caller.principal(),
                    replayed = report.replays.len(),
                    scanned = report.scanned,
                    error_class = request.error_class.as_deref().unwrap_or("*"),
                    reason = request.reason.as_deref().unwrap_or("*"),
                    "dead letters replayed from the console"
                );
            }
            // What the first few letters hold, for the preview.
            let mut reading = Embedded::new(log_for_sample);
            let mut letters = DeadLetters::new(&mut reading, &topic);
            let mut sample = Vec::new();
            for r in report.replays.iter().take(SAMPLE) {
                if let Some(found) = letters.show(r.partition, r.offset).map_err(failed)? {
                    sample.push(letter(&found));
                }
            }
            let replays: Vec<Value> = report
                .replays
                .iter()
                .map(|r| {
                    json!({
                        "partition": r.partition,
                        "offset": r.offset,
                        "target": r.target,
                        "target_partition": r.target_partition,
                        "replay_count": r.count,
                    })
                })
                .collect();
            Ok(json!({
                "topic": topic,
                "dry_run": request.dry_run,
                "scanned": report.scanned,
                "replays": replays,
                "sample": sample,
            }))
        })
        .await,
    )
}

/// Runs engine work that may wait on the disk off the listener's thread.
async fn blocking(
    work: impl FnOnce() -> Result<Value, Failure> + Send + 'static,
) -> Result<Value, Failure> {
    tokio::task::spawn_blocking(work).await.map_err(failed)?
}

/// Checks `topic` is an existing dead-letter topic.
pub(super) fn dead_letter_topic(log: &logd::Log, topic: &str) -> Result<(), Failure> {
    if !topic.ends_with(DLQ_SUFFIX) {
        return Err(bad(format!(
            "{topic} is not a dead-letter topic (*{DLQ_SUFFIX})"
        )));
    }
    match log.describe_topic(topic) {
        Ok(_) => Ok(()),
        Err(logd::Error::UnknownTopic(_)) => {
            Err((StatusCode::NOT_FOUND, format!("no topic {topic}")))
        }
        Err(e) => Err(failed(e)),
    }
}

/// A letter as the console shows it: where it is, what failed, where it came from, the record.
pub(super) fn letter(letter: &Message) -> Value {
    json!({
        "partition": letter.partition,
        "offset": letter.offset,
        "timestamp": letter.timestamp,
        "error_class": letter.header_str(DLQ_ERROR_CLASS),
        "error_message": letter.header_str(DLQ_ERROR_MESSAGE),
        "reason": letter.header_str(DLQ_REASON),
        "attempts": letter.header_i64(DLQ_ATTEMPTS),
        "consumer_group": letter.header_str(DLQ_GROUP),
        "first_failure": letter.header_i64(DLQ_FIRST_FAILURE_TS),
        "last_failure": letter.header_i64(DLQ_LAST_FAILURE_TS),
        "replay_count": letter.header_i64(DLQ_REPLAY_COUNT).unwrap_or(0),
        "original": {
            "topic": letter.header_str(DLQ_ORIGINAL_TOPIC),
            "partition": letter.header_i64(DLQ_ORIGINAL_PARTITION),
            "offset": letter.header_i64(DLQ_ORIGINAL_OFFSET),
            "timestamp": letter.header_i64(DLQ_ORIGINAL_TIMESTAMP),
        },
        "key": letter.key.as_deref().map(shown),
        "value": letter.value.as_deref().map(shown),
        "headers": letter.user_headers().iter().map(|(k, v)| json!({
            "key": { "text": k },
            "value": v.as_deref().map(shown),
        })).collect::<Vec<_>>(),
    })
}

/// A header as text, empty when missing.
fn text(letter: &Message, name: &str) -> String {
    letter.header_str(name).unwrap_or("").to_owned()
}
