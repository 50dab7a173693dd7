//! The producer's public types: its configuration, a record to send, and where a record was
//! stored.

use std::time::Duration;

use logd_storage::batch::Compression;

/// How a producer batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Append a partition's batch once it reaches this many bytes (Kafka `batch.size`, 16 KiB).
    pub batch_bytes: usize,
    /// Append a batch at the latest this long after its first record (Kafka `linger.ms`, 5 ms).
    pub linger: Duration,
    /// Codec for batches.
    pub compression: Compression,
    /// Write as an idempotent producer (Kafka `enable.idempotence`, on by default as in the
    /// Java client): a producer id and per-partition sequence numbers let the partition store
    /// a batch appended twice only once.
    pub idempotence: bool,
}

impl Default for ProducerConfig {
    fn default() -> ProducerConfig {
        ProducerConfig {
            batch_bytes: 16 << 10,
            linger: Duration::from_millis(5),
            compression: Compression::None,
            idempotence: true,
        }
    }
}

/// A record to send. It borrows its bytes: `send` copies them into the partition's batch, so
/// nothing is allocated per record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerRecord<'a> {
    /// Topic.
    pub topic: &'a str,
    /// Explicit partition; `None` lets the partitioner choose (by key, or sticky if keyless).
    pub partition: Option<u32>,
    /// Key; records with the same key go to the same partition.
    pub key: Option<&'a [u8]>,
    /// Value; `None` is a tombstone.
    pub value: Option<&'a [u8]>,
    /// Headers, in order (keys may repeat).
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
    /// Timestamp (ms); `None` for the engine clock's now.
    pub timestamp: Option<i64>,
}

impl<'a> ProducerRecord<'a> {
    /// A record with `value` for `topic`.
    pub fn new(topic: &'a str, value: &'a (impl AsRef<[u8]> + ?Sized)) -> ProducerRecord<'a> {
        ProducerRecord {
            topic,
            value: Some(value.as_ref()),
            ..ProducerRecord::default()
        }
    }

    /// Sets the key.
    pub fn key(mut self, key: &'a (impl AsRef<[u8]> + ?Sized)) -> ProducerRecord<'a> {
        self.key = Some(key.as_ref());
        self
    }

    /// Adds a header.
    pub fn header(
        mut self,
        key: &'a str,
        value: &'a (impl AsRef<[u8]> + ?Sized),
    ) -> ProducerRecord<'a> {
        self.headers.push((key, Some(value.as_ref())));
        self
    }

    /// Sends to this partition, bypassing the partitioner.
    pub fn partition(mut self, partition: u32) -> ProducerRecord<'a> {
        self.partition = Some(partition);
        self
    }

    /// Sets the timestamp (ms).
    pub fn timestamp(mut self, timestamp: i64) -> ProducerRecord<'a> {
        self.timestamp = Some(timestamp);
        self
    }
}

/// Where a record was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: u32,
    /// Offset.
    pub offset: i64,
    /// Timestamp stored with the record.
    pub timestamp: i64,
}
