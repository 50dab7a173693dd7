//! `Log`'s side of share groups' dead letters (KIP-1191): where a group's go, under Kafka's
//! rules (the topic named by `errors.deadletterqueue.topic.name`, not internal, with the
//! broker's prefix, carrying `errors.deadletterqueue.group.enable=true`, created so only when
//! the engine auto-creates dead-letter topics), and their write. A letter is the record's key,
//! value and headers when `errors.deadletterqueue.copy.record.enable` (Kafka copies key and
//! value; logd its headers too, so a replay restores the record) with Kafka's `__dlq.errors.*`
//! context headers and logd's `logd.dlq.*` ones (so `logd dlq` and the console triage and
//! replay them), timestamped at its write, in the source partition modulo the topic's count.

use std::collections::BTreeMap;

use logd_storage::Offset;
use logd_storage::batch::{BatchBuilder, Compression, Record};
use logd_storage::dead_letter_headers::*;

use super::letters::DeadLetterTarget;
use super::persist::{Letter, ShareKey};
use crate::engine::Log;
use crate::error::Error;
use crate::topic::{TimestampType, TopicConfig};

/// The topic config that lets a share group write dead letters to a topic (Kafka's).
pub const DLQ_GROUP_ENABLE: &str = "errors.deadletterqueue.group.enable";
/// Kafka's context headers of a share group's dead letter.
const TOPIC: &str = "__dlq.errors.topic";
const PARTITION: &str = "__dlq.errors.partition";
const OFFSET: &str = "__dlq.errors.offset";
const GROUP: &str = "__dlq.errors.group";
const DELIVERY_COUNT: &str = "__dlq.errors.delivery.count";
const MESSAGE: &str = "__dlq.errors.message";
/// Kafka's messages for a rejected record and one at the delivery limit.
const REJECTED: &str = "Offset rejected by client.";
const AT_LIMIT: &str = "Offset delivery count exceeded the threshold.";

impl Log {
    /// Where share group `group`'s dead letters go now: `None` when it names no topic, or
    /// names one Kafka would not write to (said in the log; its records are archived alone).
    pub(crate) fn dead_letter_target(&self, group: &str) -> Option<DeadLetterTarget> {
        let configs = &self.shared.group_configs;
        let topic = configs.value(group, "errors.deadletterqueue.topic.name");
        if topic.is_empty() {
            return None;
        }
        let resolved = self
            .dead_letter_partitions(group, &topic)
            .and_then(|partitions| {
                let producer_id = self
                    .shared
                    .shares
                    .letter_producer(|| self.init_producer_id())
                    .map_err(|e| e.to_string())?;
                Ok(DeadLetterTarget {
                    copy_record: configs.value(group, "errors.deadletterqueue.copy.record.enable")
                        == "true",
                    topic: topic.clone(),
                    partitions,
                    producer_id,
                })
            });
        match resolved {
            Ok(target) => Some(target),
            Err(reason) => {
                tracing::warn!(
                    group,
                    topic,
                    "{reason} Records are archived without dead letters."
                );
                None
            }
        }
    }

    /// The partition count of dead-letter topic `topic` of `group`, creating it if the engine
    /// auto-creates them; Kafka's words when it may not be written.
    fn dead_letter_partitions(&self, group: &str, topic: &str) -> Result<u32, String> {
        if topic.starts_with("__") {
            return Err(format!(
                "Configured DLQ topic name in share group: {group} cannot start with __, topic: {topic}."
            ));
        }
        let prefix = &self.shared.config.dead_letter_topic_prefix;
        if !topic.starts_with(prefix.as_str()) {
            return Err(format!(
                "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: {group}, topic: {topic}, prefix: {prefix}."
            ));
        }
        match self.topic(topic) {
            Ok(found) => {
                let enabled = found.config.read().inert.get(DLQ_GROUP_ENABLE).cloned();
                if enabled.as_deref() != Some("true") {
                    return Err(format!(
                        "DLQ is not enabled on configured DLQ topic for share group: {group}, topic: {topic}."
                    ));
                }
                Ok(found.partition_count())
            }
            Err(Error::UnknownTopic(_)) if self.shared.config.auto_create_dead_letter_topics => {
                let mut config = TopicConfig {
                    timestamp_type: TimestampType::CreateTime,
                    ..self.shared.config.default_topic.clone()
                };
                config
                    .inert
                    .insert(DLQ_GROUP_ENABLE.to_owned(), "true".to_owned());
                match self.create_topic(topic, config) {
                    Ok(_) | Err(Error::TopicExists(_)) => {
                        self.partition_count(topic).map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(Error::UnknownTopic(_)) => Err(format!(
                "DLQ topic does not exist and auto create is disabled on cluster for share group: {group}, topic: {topic}."
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Writes the dead letters waiting to be written. A failure is logged and the letters
    /// stay pending, for the next change that archives or the next restart.
    pub(crate) fn write_dead_letters(&self) {
        let shares = &self.shared.shares;
        if !shares.has_pending_letters() {
            return;
        }
        let mut sources = SourceRecords::default();
        if let Err(e) = shares.write_letters(|run| self.write_letter_run(run, &mut sources)) {
            tracing::error!(error = %e, "share-group dead letters not written; they wait for the next try");
        }
    }

    /// Appends the letters of `run` (one dead-letter partition and producer, in sequence
    /// order) not already there; returns how many, from the first, are there now.
    fn write_letter_run(&self, run: &[(ShareKey, Letter)], sources: &mut SourceRecords) -> usize {
        let first = &run[0].1;
        let log = match self.partition(&first.topic, first.partition) {
            Ok(log) => log,
            Err(e @ (Error::UnknownTopic(_) | Error::UnknownPartition { .. })) => {
                tracing::error!(
                    topic = first.topic,
                    partition = first.partition,
                    letters = run.len(),
                    "dead-letter topic gone ({e}): its pending letters are dropped"
                );
                return run.len();
            }
            Err(e) => {
                tracing::error!(error = %e, topic = first.topic, "dead letters not written");
                return 0;
            }
        };
        // Those a crash interrupted after their append: the producer state holds them.
        let there = log
            .producers()
            .iter()
            .find(|p| p.producer_id == first.producer_id)
            .map(|p| p.last_sequence);
        let mut done = there.map_or(0, |last| {
            run.iter().take_while(|(_, l)| l.sequence <= last).count()
        });
        let max_batch = self
            .topic(&first.topic)
            .map(|t| t.config.read().max_batch_bytes)
            .unwrap_or(1 << 20);
        let now = self.clock().now_ms();
        while done < run.len() {
            let mut builder = BatchBuilder::new(Compression::None).producer(
                first.producer_id,
                0,
                run[done].1.sequence,
            );
            let mut end = done;
            while end < run.len()
                && (end == done
                    || (builder.size() < max_batch / 2
                        && run[end].1.sequence == run[end - 1].1.sequence.wrapping_add(1)))
            {
                let (key, letter) = &run[end];
                let source = sources.get(self, key, letter.offset);
                let headers = letter_headers(key, letter, source, now);
                let headers: Vec<(&[u8], Option<&[u8]>)> = headers
                    .iter()
                    .map(|(k, v)| (k.as_slice(), v.as_deref()))
                    .collect();
                let copy = source.filter(|_| letter.copy_record);
                builder.push(
                    now,
                    copy.and_then(|r| r.key.as_deref()),
                    copy.and_then(|r| r.value.as_deref()),
                    &headers,
                );
                end += 1;
            }
            let appended = builder
                .build(0)
                .map_err(Error::from)
                .and_then(|mut bytes| self.append(&first.topic, first.partition, &mut bytes));
            if let Err(e) = appended {
                tracing::error!(
                    error = %e,
                    topic = first.topic,
                    partition = first.partition,
                    "dead letters not written; they wait for the next try"
                );
                return done;
            }
            done = end;
        }
        run.len()
    }
}

/// The headers of `letter`'s record: the source record's own when copied (less earlier
/// dead-letter and retry headers), then Kafka's context headers, then logd's.
fn letter_headers(
    key: &ShareKey,
    letter: &Letter,
    source: Option<&Record>,
    now: i64,
) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let (group, topic, partition) = key;
    let mut headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    if letter.copy_record
        && let Some(record) = source
    {
        for h in &record.headers {
            let name = String::from_utf8_lossy(&h.key);
            let stale = name.starts_with("__dlq.errors.")
                || name.starts_with("logd.retry.")
                || (name.starts_with("logd.dlq.") && name != DLQ_REPLAY_COUNT);
            if !stale {
                headers.push((h.key.to_vec(), h.value.as_ref().map(|v| v.to_vec())));
            }
        }
    }
    let (message, reason, class) = if letter.rejected {
        (REJECTED, REASON_PERMANENT, "share.rejected")
    } else {
        (AT_LIMIT, REASON_MAX_ATTEMPTS, "share.delivery.limit")
    };
    // What the member said of its rejection, when it said (a retry worker's failure).
    let (reason, class, error) = match &letter.error {
        Some(e) => (
            if e.out_of_attempts {
                REASON_MAX_ATTEMPTS
            } else {
                REASON_PERMANENT
            },
            e.class.as_str(),
            e.message.as_str(),
        ),
        None => (reason, class, message),
    };
    let mut add = |name: &str, value: String| headers.push((name.into(), Some(value.into())));
    add(TOPIC, topic.clone());
    add(PARTITION, partition.to_string());
    add(OFFSET, letter.offset.to_string());
    add(GROUP, group.clone());
    add(DELIVERY_COUNT, letter.delivery_count.to_string());
    add(MESSAGE, message.to_owned());
    add(DLQ_ORIGINAL_TOPIC, topic.clone());
    add(DLQ_ORIGINAL_PARTITION, partition.to_string());
    add(DLQ_ORIGINAL_OFFSET, letter.offset.to_string());
    if let Some(record) = source {
        add(DLQ_ORIGINAL_TIMESTAMP, record.timestamp.to_string());
    }
    add(DLQ_GROUP, group.clone());
    add(DLQ_ATTEMPTS, letter.delivery_count.to_string());
    add(DLQ_FIRST_FAILURE_TS, now.to_string());
    add(DLQ_LAST_FAILURE_TS, now.to_string());
    add(DLQ_ERROR_CLASS, class.to_owned());
    add(DLQ_ERROR_MESSAGE, error.to_owned());
    add(DLQ_REASON, reason.to_owned());
    headers
}

/// Source records by place, read a batch at a time (a run's letters are mostly neighbours).
#[derive(Default)]
struct SourceRecords {
    batches: BTreeMap<(String, u32), Vec<Record>>,
}

impl SourceRecords {
    /// The record at `offset` of `key`'s partition; `None` when retention took it.
    fn get(&mut self, log: &Log, key: &ShareKey, offset: i64) -> Option<&Record> {
        let place = (key.1.clone(), key.2);
        let cached = self
            .batches
            .get(&place)
            .is_some_and(|records| records.iter().any(|r| r.offset == offset));
        if !cached {
            let partition = log.partition(&key.1, key.2).ok()?;
            if offset < partition.log_start_offset().0 {
                return None;
            }
            // One batch: the one holding `offset`.
            let bytes = partition.read(Offset(offset), 1).ok()?;
            let records =
                Record::decode_all(&bytes, partition.config().max_decompressed_bytes).ok()?;
            self.batches.insert(place.clone(), records);
        }
        self.batches
            .get(&place)?
            .iter()
            .find(|r| r.offset == offset)
    }
}
