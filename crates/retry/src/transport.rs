//! [`Transport`]: what the retry worker needs from a log, so the same worker runs over the
//! embedded engine (`Embedded`, with the `embedded` feature) and over a remote logd or Kafka
//! broker (`logd-client` implements it), and the batch codec both use for the worker's
//! records. A transport without membership reads every partition like an `assign()` consumer,
//! which brokers accept while the group has no other members.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use logd_storage::batch::{BatchBuilder, Compression, Record};

use crate::error::Result;
use crate::message::{Message, OutRecord};

/// A log the worker reads, appends to and commits in.
pub trait Transport {
    /// Current time (ms); the engine's clock when embedded, so tests can drive it.
    fn now_ms(&self) -> i64;
    /// Creates `topic` with `partitions` (and `retention_ms`) unless it exists.
    fn ensure_topic(
        &mut self,
        topic: &str,
        partitions: u32,
        retention_ms: Option<i64>,
    ) -> Result<()>;
    /// Partitions of `topic`.
    fn partition_count(&mut self, topic: &str) -> Result<u32>;
    /// Partitions of `topic`, `None` if there is no such topic (any other failure is an
    /// error).
    fn partitions_if_exists(&mut self, topic: &str) -> Result<Option<u32>>;
    /// Joins `group` as a member reading `topics` (the retry tiers and the source, each with
    /// `partitions` partitions, so range assignment gives a member the same partition numbers
    /// of each: a record keeps its partition across hops), keeps the membership alive, and
    /// returns what this worker owns now. Later commits carry the membership's generation, so
    /// a worker the group replaced cannot commit over its successor. Called often (at least
    /// every few seconds); a transport without group membership owns every partition, as an
    /// `assign()` consumer.
    fn owned_partitions(
        &mut self,
        group: &str,
        topics: &[String],
        partitions: u32,
    ) -> Result<Ownership> {
        let _ = (group, topics);
        Ok(Ownership {
            generation: -1,
            partitions: (0..partitions).collect(),
        })
    }
    /// Records of a partition from `offset` on (some, not necessarily all; none at the end).
    /// An offset below the partition's start reads from its start.
    fn fetch(&mut self, topic: &str, partition: u32, offset: i64) -> Result<Vec<Message>>;
    /// Appends one batch ([`encode_record`]'s, stamped by an idempotent producer); returns
    /// its first offset once it is durable (as the topic's policy says). A batch the log
    /// already stored is not stored again and returns the original offset.
    fn append(&mut self, topic: &str, partition: u32, batch: Vec<u8>) -> Result<i64>;
    /// A producer id never handed out before (epoch 0), for idempotent appends.
    fn init_producer_id(&mut self) -> Result<i64>;
    /// The offset `group` committed in a partition (the next to read).
    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>>;
    /// Commits `offset` (the next to read) for `group`; durable when it returns.
    fn commit(&mut self, group: &str, topic: &str, partition: u32, offset: i64) -> Result<()>;
    /// A marker for [`Transport::wait`]: taken before looking for data.
    fn marker(&mut self) -> u64;
    /// Waits up to `timeout` for data newer than `marker` (or returns early).
    fn wait(&mut self, marker: u64, timeout: Duration);
}

/// The partitions a worker owns in one generation of its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// The group generation (-1 without group membership); a new one may have moved
    /// partitions away and back, so the worker re-reads its positions from the commits.
    pub generation: i32,
    /// Partition numbers of the source (and of each retry tier) this worker reads.
    pub partitions: BTreeSet<u32>,
}

/// The idempotent-producer fields of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub epoch: i16,
    /// Sequence of the batch's record.
    pub sequence: i32,
}

/// Builds one batch holding `record`, written by the idempotent producer `stamp` names.
pub fn encode_record(record: &OutRecord, stamp: Stamp) -> Result<Vec<u8>> {
    let headers: Vec<(&[u8], Option<&[u8]>)> = record
        .headers
        .iter()
        .map(|(k, v)| (k.as_bytes(), v.as_deref()))
        .collect();
    let mut builder = BatchBuilder::new(Compression::None).producer(
        stamp.producer_id,
        stamp.epoch,
        stamp.sequence,
    );
    builder.push(
        record.timestamp,
        record.key.as_deref(),
        record.value.as_deref(),
        &headers,
    );
    Ok(builder.build(0)?)
}

/// The records of `batches` at or after `from`, as messages of `topic`/`partition`.
pub fn decode_messages(
    batches: &Bytes,
    topic: &str,
    partition: u32,
    from: i64,
    max_decompressed: usize,
) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    Record::decode_each(batches, max_decompressed, |r| {
        if r.offset >= from {
            out.push(Message {
                topic: topic.to_owned(),
                partition,
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r
                    .headers
                    .into_iter()
                    .map(|h| (String::from_utf8_lossy(&h.key).into_owned(), h.value))
                    .collect(),
            });
        }
        true
    })?;
    Ok(out)
}
