//! [`Message`], a record as the worker reads it, and [`OutRecord`], one it writes; and the
//! headers each hop adds. Header values are decimal strings (as Kafka Connect writes them).
//!
//! A record sent to a retry topic carries its attempt count, when it is due, its origin
//! (`logd.retry.original.*`) and its first failure time. A dead letter carries
//! `logd.dlq.original.topic`, `.partition`, `.offset`, `.timestamp`,
//! `logd.dlq.consumer.group`, `logd.dlq.attempts`, `logd.dlq.first.failure.ts`,
//! `logd.dlq.last.failure.ts`, `logd.dlq.error.class`, `logd.dlq.error.message` and
//! `logd.dlq.reason`. The original key, value, timestamp and headers travel unchanged; earlier
//! `logd.retry.*` and `logd.dlq.*` headers are replaced, except `logd.dlq.replay.count`, which
//! `logd dlq replay` raises so a record that dies again is visibly a repeat.

use bytes::Bytes;
use logd_storage::Headers;

/// Attempts so far (handler calls), on a retry record.
pub const ATTEMPT: &str = "logd.retry.attempt";
/// When a retry record may be handled (ms since the epoch).
pub const DUE_TS: &str = "logd.retry.due.ts";
/// The source record's topic, on a retry record.
pub const RETRY_ORIGINAL_TOPIC: &str = "logd.retry.original.topic";
/// The source record's partition, on a retry record.
pub const RETRY_ORIGINAL_PARTITION: &str = "logd.retry.original.partition";
/// The source record's offset, on a retry record.
pub const RETRY_ORIGINAL_OFFSET: &str = "logd.retry.original.offset";
/// The first failure's time, on a retry record.
pub const RETRY_FIRST_FAILURE_TS: &str = "logd.retry.first.failure.ts";
pub use logd_storage::dead_letter_headers::{
    DLQ_ATTEMPTS, DLQ_ERROR_CLASS, DLQ_ERROR_MESSAGE, DLQ_FIRST_FAILURE_TS, DLQ_GROUP,
    DLQ_LAST_FAILURE_TS, DLQ_ORIGINAL_OFFSET, DLQ_ORIGINAL_PARTITION, DLQ_ORIGINAL_TIMESTAMP,
    DLQ_ORIGINAL_TOPIC, DLQ_REASON, DLQ_REPLAY_COUNT,
};
/// On a record of a replays topic: the partition of the letter it replayed.
pub const REPLAY_LETTER_PARTITION: &str = "logd.replay.letter.partition";
/// On a record of a replays topic: the offset of the letter it replayed.
pub const REPLAY_LETTER_OFFSET: &str = "logd.replay.letter.offset";
/// On a record of a replays topic: where the letter went.
pub const REPLAY_TARGET_TOPIC: &str = "logd.replay.target.topic";
/// On a record of a replays topic: the partition it went to.
pub const REPLAY_TARGET_PARTITION: &str = "logd.replay.target.partition";
/// On a record of a replays topic: its offset there.
pub const REPLAY_TARGET_OFFSET: &str = "logd.replay.target.offset";
/// On a record of a replays topic: who replayed it (a principal), when known.
pub const REPLAY_BY: &str = "logd.replay.by";

/// A record read from a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Topic read from.
    pub topic: String,
    /// Partition read from.
    pub partition: u32,
    /// Its offset there.
    pub offset: i64,
    /// Its timestamp (ms).
    pub timestamp: i64,
    /// Key.
    pub key: Option<Bytes>,
    /// Value.
    pub value: Option<Bytes>,
    /// Headers in order.
    pub headers: Vec<(String, Option<Bytes>)>,
}

impl Message {
    /// The last value of header `name`, as a decimal number.
    pub fn header_i64(&self, name: &str) -> Option<i64> {
        self.header_str(name)?.parse().ok()
    }

    /// This record's headers without logd's retry and dead-letter bookkeeping (the replay
    /// count stays).
    pub fn user_headers(&self) -> Vec<(String, Option<Bytes>)> {
        self.headers
            .iter()
            .filter(|(k, _)| {
                !(k.starts_with("logd.retry.") || k.starts_with("logd.dlq."))
                    || k == DLQ_REPLAY_COUNT
            })
            .cloned()
            .collect()
    }
}

/// A record to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutRecord {
    /// Timestamp (ms); hops keep the original's.
    pub timestamp: i64,
    /// Key.
    pub key: Option<Bytes>,
    /// Value.
    pub value: Option<Bytes>,
    /// Headers in order.
    pub headers: Vec<(String, Option<Bytes>)>,
}

impl OutRecord {
    /// The same key, value, timestamp and user headers as `message`.
    pub fn copy_of(message: &Message) -> OutRecord {
        OutRecord {
            timestamp: message.timestamp,
            key: message.key.clone(),
            value: message.value.clone(),
            headers: message.user_headers(),
        }
    }

    /// Adds header `name` with a text value.
    pub fn with(mut self, name: &str, value: impl ToString) -> OutRecord {
        self.headers
            .push((name.to_owned(), Some(Bytes::from(value.to_string()))));
        self
    }
}

impl Headers for Message {
    fn each_header(&self, f: &mut logd_storage::HeaderVisitor<'_>) {
        for (name, value) in &self.headers {
            f(name.as_bytes(), value.as_deref());
        }
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.as_deref())
    }
}
