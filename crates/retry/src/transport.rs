//! [`Transport`]: what the retry worker needs from a log, so the same worker runs over the
//! embedded engine (`Embedded`, with the `embedded` feature) and over a remote logd or Kafka
//! broker (`logd-client` implements it), and the batch codec both use for the worker's
//! records. A transport without membership reads every partition like an `assign()` consumer,
//! which brokers accept while the group has no other members.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use logd_storage::ReadCommitted;
use logd_storage::batch::{BatchBuilder, BatchRef, Compression, Record};

use crate::error::{Error, Result};
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
    /// Starts (or starts again) transactional producer `transactional_id` for the worker's
    /// exactly-once hops: fences any other instance with that id (aborting the transaction it
    /// left open, so a copy it wrote is never read, and waiting until that is complete) and
    /// from now on reads only committed records (read_committed). A transport without
    /// transactions refuses.
    fn init_transactions(&mut self, transactional_id: &str) -> Result<()> {
        Err(Error::Config(format!(
            "exactly-once hops (transactional id {transactional_id}) need a transport with \
             transactions"
        )))
    }
    /// Appends `record` to `topic`/`partition` inside producer `transactional_id`'s
    /// transaction (opening one); returns its offset. On failure the transaction is aborted;
    /// [`Error::Fenced`](crate::Error) when another instance took the id over.
    fn append_in_transaction(
        &mut self,
        transactional_id: &str,
        topic: &str,
        partition: u32,
        record: &OutRecord,
    ) -> Result<i64> {
        let _ = (transactional_id, topic, partition, record);
        Err(Error::Config("this transport has no transactions".into()))
    }
    /// Commits `offsets` ((topic, partition, next offset to read)) for `group` inside
    /// producer `transactional_id`'s open transaction, then commits the transaction: its
    /// appends and these offsets take effect together or not at all. On failure the
    /// transaction is aborted; [`Error::Fenced`](crate::Error) when another instance took the
    /// id over.
    fn commit_transaction(
        &mut self,
        transactional_id: &str,
        group: &str,
        offsets: &[(String, u32, i64)],
    ) -> Result<()> {
        let _ = (transactional_id, group, offsets);
        Err(Error::Config("this transport has no transactions".into()))
    }
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
    /// Whether the batch belongs to a transaction (the producer's transactional id's).
    pub transactional: bool,
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
    if stamp.transactional {
        builder = builder.transactional();
    }
    builder.push(
        record.timestamp,
        record.key.as_deref(),
        record.value.as_deref(),
        &headers,
    );
    Ok(builder.build(0)?)
}

/// The records of `batches` at or after `from`, as messages of `topic`/`partition`; with
/// `committed`, only those a read_committed reader keeps.
pub fn decode_messages(
    batches: &Bytes,
    topic: &str,
    partition: u32,
    from: i64,
    max_decompressed: usize,
    mut committed: Option<ReadCommitted>,
) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    let keep = |batch: &BatchRef<'_>| committed.as_mut().is_none_or(|c| c.keep(batch));
    Record::decode_kept(batches, max_decompressed, keep, |r| {
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
