//! The names of the headers a dead letter carries, as `logd-retry`'s worker writes them and
//! the engine's share groups write them for their dead-letter topics, so `logd dlq` and the
//! console read both alike. Values are decimal strings (as Kafka Connect writes them).

/// The source record's topic.
pub const DLQ_ORIGINAL_TOPIC: &str = "logd.dlq.original.topic";
/// The source record's partition.
pub const DLQ_ORIGINAL_PARTITION: &str = "logd.dlq.original.partition";
/// The source record's offset.
pub const DLQ_ORIGINAL_OFFSET: &str = "logd.dlq.original.offset";
/// The source record's timestamp.
pub const DLQ_ORIGINAL_TIMESTAMP: &str = "logd.dlq.original.timestamp";
/// The group that gave up.
pub const DLQ_GROUP: &str = "logd.dlq.consumer.group";
/// How many times the record was handled (delivered, for a share group).
pub const DLQ_ATTEMPTS: &str = "logd.dlq.attempts";
/// The first failure's time.
pub const DLQ_FIRST_FAILURE_TS: &str = "logd.dlq.first.failure.ts";
/// The last failure's time.
pub const DLQ_LAST_FAILURE_TS: &str = "logd.dlq.last.failure.ts";
/// The last error's class.
pub const DLQ_ERROR_CLASS: &str = "logd.dlq.error.class";
/// The last error's message.
pub const DLQ_ERROR_MESSAGE: &str = "logd.dlq.error.message";
/// Why it is a dead letter: [`REASON_PERMANENT`] or [`REASON_MAX_ATTEMPTS`].
pub const DLQ_REASON: &str = "logd.dlq.reason";
/// How many times `logd dlq replay` put this record back.
pub const DLQ_REPLAY_COUNT: &str = "logd.dlq.replay.count";
/// [`DLQ_REASON`] of a record that failed for good (a share group's reject).
pub const REASON_PERMANENT: &str = "permanent";
/// [`DLQ_REASON`] of a record out of attempts (a share group's delivery limit).
pub const REASON_MAX_ATTEMPTS: &str = "max-attempts";
