//! [`Producer`]: routes records to partitions (explicit, or by the partitioner), collects them
//! into one batch per partition, and appends a batch when it is full, when it has waited
//! `linger`, or on [`Producer::flush`]. Each send returns a [`Delivery`] that resolves to the
//! record's partition and offset once the append is durable under the topic's fsync policy.
//!
//! A send stages the record in arrival order (`staging.rs`); a chunk of staged records is
//! placed in its partitions' batches at once, after their state was prefetched, so that
//! spreading records over thousands of partitions does not wait for a cache miss per record.
//! A partition's open batch and its closed batches waiting in a queue have a lock of their
//! own (a sender to one partition never waits for the linger thread appending another), and
//! the queue is appended in order by whichever thread holds that partition's appender (a
//! sender, `flush`, or the linger thread), so its records land in the order they were sent.
//! An idempotent producer (the default, as Kafka's Java client) numbers each partition's
//! records from 0 under a producer id from the engine, so an append of the same batch twice
//! stores it once; after a failed append it bumps its epoch and numbers afresh, since whether
//! that batch landed is unknown.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use logd_partition::{KeyHash, Partitioner, Sticky};
use logd_storage::advance_sequence;
use logd_storage::batch::{BatchBuilder, Compression};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};

use crate::engine::Log;
use crate::error::{Error, Result};

mod staging;

use staging::{Chunk, Placed, Placements, Staged, TopicView, prefetch};

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

/// What a batch's append came to: its base offset, or the error every record of it shares.
type Outcome = std::result::Result<i64, Arc<Error>>;

/// One per batch, shared by its records' deliveries.
#[derive(Debug)]
struct BatchSlot {
    topic: Arc<str>,
    partition: u32,
    outcome: Mutex<Option<Outcome>>,
    done: Condvar,
}

/// The pending result of one send. Dropping it is fine: the record is still sent, a failure
/// is reported by the next [`Producer::flush`], and a record whose delivery is gone before it
/// is placed costs a little less.
#[derive(Debug)]
pub struct Delivery {
    /// The record's chunk, which says which batch the record joined once it is placed.
    placements: Arc<Placements>,
    /// The record's index in its chunk.
    index: usize,
    timestamp: i64,
}

impl Delivery {
    /// Waits until the record's batch was appended (and is durable per the topic's policy).
    pub fn wait(self) -> Result<RecordMetadata> {
        let (slot, index) = self.placements.wait(self.index);
        let mut outcome = slot.outcome.lock();
        while outcome.is_none() {
            slot.done.wait(&mut outcome);
        }
        match outcome.as_ref().expect("checked above") {
            Ok(base_offset) => Ok(RecordMetadata {
                topic: slot.topic.to_string(),
                partition: slot.partition,
                offset: base_offset + index,
                timestamp: self.timestamp,
            }),
            Err(e) => Err(Error::Delivery(e.clone())),
        }
    }
}

impl Drop for Delivery {
    /// A record whose delivery is gone is placed without keeping its batch's slot: one cache
    /// miss and two atomic updates less for a sender that does not wait on each record.
    fn drop(&mut self) {
        self.placements.forget(self.index);
    }
}

/// `repr(C)`: the slot and the builder's pushed fields first, in the partition's first cache
/// line (see [`PartitionBatches`]).
#[derive(Debug)]
#[repr(C)]
struct Pending {
    slot: Arc<BatchSlot>,
    builder: BatchBuilder,
    /// Tells this batch from later ones of the same partition in [`OpenedQueue`].
    id: u64,
}

impl Pending {
    fn new(
        id: u64,
        compression: Compression,
        buffer: Vec<u8>,
        topic: Arc<str>,
        partition: u32,
    ) -> Pending {
        Pending {
            id,
            builder: BatchBuilder::with_buffer(compression, buffer),
            slot: Arc::new(BatchSlot {
                topic,
                partition,
                outcome: Mutex::new(None),
                done: Condvar::new(),
            }),
        }
    }
}

/// How long a producer trusts its cached partition count of a topic, as Kafka clients cache
/// metadata: partitions added meanwhile get records after at most this long.
const METADATA_MAX_AGE: Duration = Duration::from_secs(1);

/// A topic's partitions' batches, with the producer's view of its partition count. Senders
/// and `flush` read this under the producer's topic map lock; the linger thread reaches a
/// partition through its [`Opened`] entry instead, so it never contends with senders there.
#[derive(Debug)]
struct TopicBatches {
    name: Arc<str>,
    partition_count: AtomicU32,
    /// When `partition_count` was last asked of the engine; looked at when a batch opens.
    checked: Mutex<Instant>,
    /// Grown (under the map's write lock) as records reach higher partitions.
    partitions: Vec<Arc<PartitionBatches>>,
    /// Each partition's placement hints, side by side (16 bytes each, so that 10,000
    /// partitions' stay in the cache where their batches do not).
    hints: Vec<PlacementHints>,
}

/// One partition's batches under a lock of its own, so a sender adding to one partition and
/// the linger thread appending another never wait for each other (Kafka's
/// `RecordAccumulator` keeps a deque and a lock per partition for the same reason).
///
/// Aligned to a cache line, with the lock and the open batch first: placing a record touches
/// that line and nothing else of it (the reference counts, in a line of their own, only
/// change when a batch opens or fills).
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct PartitionBatches {
    batches: Mutex<Batches>,
    appender: Mutex<Appender>,
}

/// Where the open batch's next record goes and its delivery slot, noted after each placement:
/// read without the partition's lock, by a placer that prefetches them for a whole chunk.
/// Only addresses, never read through: stale ones cost a miss, nothing else.
#[derive(Debug, Default)]
struct PlacementHints {
    next_write: AtomicPtr<u8>,
    slot: AtomicPtr<BatchSlot>,
}

impl PlacementHints {
    fn note(&self, batch: &Pending) {
        let next_write = batch.builder.next_write().cast_mut();
        self.next_write.store(next_write, Ordering::Relaxed);
        let slot = Arc::as_ptr(&batch.slot).cast_mut();
        self.slot.store(slot, Ordering::Relaxed);
    }

    /// Prefetches where a record of `record_bytes` goes and, if it has a delivery waiting,
    /// the slot that delivery counts on.
    fn prefetch(&self, record_bytes: usize, delivery: bool) {
        prefetch(self.next_write.load(Ordering::Relaxed), record_bytes);
        if !delivery {
            return;
        }
        // Only the reference counts in front of the slot, which the delivery's clone changes.
        let counts = 2 * size_of::<usize>();
        let slot = self.slot.load(Ordering::Relaxed).cast::<u8>();
        prefetch(slot.wrapping_sub(counts), counts);
    }
}

impl PartitionBatches {
    /// Whether the batch numbered `id` is still open.
    fn is_open(&self, id: u64) -> bool {
        self.batches.lock().holds_open(id)
    }
}

/// The bytes of a [`PartitionBatches`] that placing a record touches: the lock, the open
/// batch's slot and its builder's pushed fields, its first cache line.
const HOT_PARTITION_BYTES: usize = 64;

/// A partition's open batch and the closed ones waiting to be appended, oldest first.
/// `repr(C)`: the open batch first, right after the lock's state.
#[derive(Debug, Default)]
#[repr(C)]
struct Batches {
    open: Option<Pending>,
    ready: VecDeque<Pending>,
    /// Numbers the partition's batches, so a linger entry names the batch it was for.
    next_id: u64,
}

impl Batches {
    /// Closes the open batch: it joins the queue of batches to append.
    fn close(&mut self) {
        if let Some(batch) = self.open.take() {
            self.ready.push_back(batch);
        }
    }

    /// Whether the batch numbered `id` is the open one.
    fn holds_open(&self, id: u64) -> bool {
        self.open.as_ref().is_some_and(|b| b.id == id)
    }

    /// Closes the batch numbered `id` if it is still the open one; whether it was.
    fn close_if_open(&mut self, id: u64) -> bool {
        let open = self.holds_open(id);
        if open {
            self.close();
        }
        open
    }
}

/// Held while appending a partition's queued batches, so they land in order; with
/// idempotence, the partition's next sequence under the producer epoch it was counted in.
#[derive(Debug, Default)]
struct Appender {
    epoch: i16,
    next_sequence: i32,
}

/// An idempotent producer's id and current epoch.
#[derive(Debug, Clone, Copy)]
struct Identity {
    id: i64,
    epoch: i16,
}

/// Buffers of appended batches, reused for new ones (as Kafka's producer reuses
/// `batch.size` buffers in its `BufferPool`). A sender spreading records over thousands of
/// partitions opens a batch every few records; allocating each on the sending thread and
/// freeing it on the linger thread made the two contend for the allocator's lock.
#[derive(Debug)]
struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
    /// Buffers larger than this (a batch of one oversized record) are not kept.
    largest: usize,
}

/// Buffers a [`BufferPool`] keeps at most: enough for the batches one linger pass appends
/// at a time, so at most this many times `batch_bytes` (4 MiB by default) sits unused.
const POOLED_BUFFERS: usize = 256;

impl BufferPool {
    fn new(batch_bytes: usize) -> BufferPool {
        BufferPool {
            free: Mutex::new(Vec::new()),
            largest: batch_bytes.saturating_mul(2),
        }
    }

    /// A buffer to build a batch in: a returned one if there is one, else a new one.
    fn take(&self) -> Vec<u8> {
        self.free.lock().pop().unwrap_or_default()
    }

    /// Keeps `buffer` for a later batch, unless the pool is full or the buffer too large.
    fn give_back(&self, buffer: Vec<u8>) {
        if buffer.capacity() <= self.largest {
            let mut free = self.free.lock();
            if free.len() < POOLED_BUFFERS {
                free.push(buffer);
            }
        }
    }
}

/// A batch opened at `started`, due to be appended `linger` later if still open then.
#[derive(Debug)]
struct Opened {
    started: Instant,
    partition: Arc<PartitionBatches>,
    id: u64,
}

/// `OpenedQueue` is never cleared of closed batches' entries below this length.
const OPENED_COMPACT_MIN: usize = 1024;

/// Batches in the order they opened, so the linger thread finds the due ones at the front
/// instead of looking at every partition of every topic (10,000 of them, say) each time.
/// Entries of batches closed meanwhile (full, or flushed) are skipped when they come up, and
/// dropped whenever the queue reaches `compact_at`: a long linger under steady traffic that
/// fills batches would otherwise keep one entry per batch sent within it.
#[derive(Debug)]
struct OpenedQueue {
    entries: VecDeque<Opened>,
    compact_at: usize,
}

impl Default for OpenedQueue {
    fn default() -> OpenedQueue {
        OpenedQueue {
            entries: VecDeque::new(),
            compact_at: OPENED_COMPACT_MIN,
        }
    }
}

impl OpenedQueue {
    /// Queues a newly opened batch; drops the entries of closed batches once the queue has
    /// doubled since the last time (amortised constant work per batch), so it holds at most
    /// about twice as many entries as there are open batches.
    fn remember(&mut self, opened: Opened) {
        self.entries.push_back(opened);
        if self.entries.len() >= self.compact_at {
            self.entries.retain(|o| o.partition.is_open(o.id));
            self.compact_at = (2 * self.entries.len()).max(OPENED_COMPACT_MIN);
        }
    }

    /// Takes the entries opened `linger` or longer ago; with them, when the oldest entry
    /// left is due.
    fn take_due(&mut self, linger: Duration) -> (Vec<Opened>, Option<Instant>) {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(first) = self.entries.front() {
            if now.saturating_duration_since(first.started) < linger {
                return (due, Some(first.started + linger));
            }
            due.extend(self.entries.pop_front());
        }
        (due, None)
    }
}

#[derive(Debug)]
struct Shared {
    log: Log,
    config: ProducerConfig,
    partitioner: Box<dyn Partitioner>,
    /// By topic name (a producer writes few topics: a sorted map beats hashing).
    topics: RwLock<BTreeMap<Arc<str>, TopicBatches>>,
    /// Records sent but not yet placed in their partitions' batches. Lock order: `staging`,
    /// then `placing`, then `topics`.
    staging: Mutex<Chunk>,
    /// The last placed chunk's buffers, emptied, for the next chunk to stage into: memory
    /// still in the cache, where a new chunk's would be cold.
    spare_chunk: Mutex<Chunk>,
    /// Held while a chunk is placed, taken before `staging` is released: chunks are placed in
    /// the order they were staged, so a partition's records keep the order they were sent in.
    placing: Mutex<()>,
    /// Lock order: a partition's `batches` is never held while taking this.
    opened: Mutex<OpenedQueue>,
    buffers: BufferPool,
    /// With idempotence: the producer id and epoch, allocated at the first append.
    identity: Mutex<Option<Identity>>,
    /// The first append that failed since the last `flush`, which reports it: a sender that
    /// never waits on its deliveries still learns that records were not stored.
    failed: Mutex<Option<Arc<Error>>>,
    closing: Mutex<bool>,
    wake: Condvar,
}

/// Sends records to the engine's topics. Dropping it flushes.
#[derive(Debug)]
pub struct Producer {
    shared: Arc<Shared>,
    linger_thread: Option<JoinHandle<()>>,
}

impl Producer {
    /// A producer with Kafka's Java default partitioner (murmur2 of the key; sticky if keyless).
    pub fn new(log: &Log, config: ProducerConfig) -> Producer {
        Producer::with_partitioner(log, config, Box::new(KeyHash::new(Sticky::default())))
    }

    /// A producer with another partitioner (e.g. librdkafka's `ConsistentRandom`).
    pub fn with_partitioner(
        log: &Log,
        config: ProducerConfig,
        partitioner: Box<dyn Partitioner>,
    ) -> Producer {
        let shared = Arc::new(Shared {
            log: log.clone(),
            config: config.clone(),
            partitioner,
            topics: RwLock::new(BTreeMap::new()),
            staging: Mutex::new(Chunk::default()),
            spare_chunk: Mutex::new(Chunk::default()),
            placing: Mutex::new(()),
            opened: Mutex::new(OpenedQueue::default()),
            buffers: BufferPool::new(config.batch_bytes),
            identity: Mutex::new(None),
            failed: Mutex::new(None),
            closing: Mutex::new(false),
            wake: Condvar::new(),
        });
        let weak = Arc::downgrade(&shared);
        let linger_thread = std::thread::Builder::new()
            .name("logd-producer-linger".into())
            .spawn(move || linger_loop(weak))
            .expect("spawn the producer's linger thread");
        Producer {
            shared,
            linger_thread: Some(linger_thread),
        }
    }

    /// Queues a record; its batch is appended when full, after `linger`, or on `flush`.
    pub fn send(&self, record: ProducerRecord<'_>) -> Result<Delivery> {
        let shared = &self.shared;
        let timestamp = record
            .timestamp
            .unwrap_or_else(|| shared.log.clock().now_ms());
        // The staging lock first: the chunk keeps what a send needs of its topics, so a
        // record is staged with one lock taken, not the topic map's as well.
        let mut staging = shared.staging.lock();
        let (topic, partition_count, with_room) = loop {
            if let Some((topic, view)) = staging.topic(record.topic) {
                break (topic, view.partition_count, view.with_room);
            }
            staging = shared.refresh_view(staging, record.topic)?.0;
        };
        let partition = match record.partition {
            Some(p) if p < partition_count => p,
            Some(p) => {
                return Err(Error::UnknownPartition {
                    topic: record.topic.to_owned(),
                    partition: p,
                    partitions: partition_count,
                });
            }
            None => shared.partitioner.partition(record.key, partition_count),
        };
        let topic = if partition < with_room {
            topic
        } else {
            drop(staging);
            shared.add_partitions(record.topic, partition);
            let (relocked, topic) = shared.refresh_view(shared.staging.lock(), record.topic)?;
            staging = relocked;
            topic
        };
        let index = staging.stage(&record, topic, partition, timestamp);
        let delivery = Delivery {
            placements: staging.placements.clone(),
            index,
            timestamp,
        };
        if staging.is_full() {
            shared.place_staged(staging);
        }
        Ok(delivery)
    }

    /// Appends every queued batch and waits until they are stored; fails if any batch since the
    /// last `flush` (including ones appended by `send` or the linger thread) was not stored.
    pub fn flush(&self) -> Result<()> {
        self.shared.place_staged(self.shared.staging.lock());
        // Every partition, even one with nothing queued: taking its appender waits for an
        // append another thread has in flight.
        let partitions: Vec<Arc<PartitionBatches>> = {
            let topics = self.shared.topics.read();
            topics
                .values()
                .flat_map(|t| t.partitions.iter().cloned())
                .collect()
        };
        for partition in partitions {
            partition.batches.lock().close();
            // Failures are recorded in `failed` by `append`.
            self.shared.drain(&partition);
        }
        match self.shared.failed.lock().take() {
            Some(e) => Err(Error::Delivery(e)),
            None => Ok(()),
        }
    }
}

impl Shared {
    /// Starts keeping batches for the topic `name`, if the engine has it.
    fn add_topic(&self, name: &str) -> Result<()> {
        let found = self.log.topic_for_produce(name)?;
        self.topics
            .write()
            .entry(found.name.clone())
            .or_insert_with(|| TopicBatches {
                name: found.name.clone(),
                partition_count: AtomicU32::new(found.partition_count()),
                checked: Mutex::new(Instant::now()),
                partitions: Vec::new(),
                hints: Vec::new(),
            });
        Ok(())
    }

    /// What a sender needs of topic `name`, the producer keeping batches for it from now on
    /// if the engine has it.
    fn topic_view(&self, name: &str) -> Result<TopicView> {
        let view = |topic: &TopicBatches| TopicView {
            name: topic.name.clone(),
            partition_count: topic.partition_count.load(Ordering::Relaxed),
            with_room: topic.partitions.len() as u32,
        };
        if let Some(topic) = self.topics.read().get(name) {
            return Ok(view(topic));
        }
        self.add_topic(name)?;
        let topics = self.topics.read();
        let topic = topics
            .get(name)
            .ok_or_else(|| Error::UnknownTopic(name.to_owned()))?;
        Ok(view(topic))
    }

    /// Gives the staging chunk a fresh view of topic `name`, asked for with the staging lock
    /// released (the topic map's locks come after it); the lock again, and the topic's index
    /// in the chunk.
    fn refresh_view<'a>(
        &'a self,
        staging: MutexGuard<'a, Chunk>,
        name: &str,
    ) -> Result<(MutexGuard<'a, Chunk>, usize)> {
        drop(staging);
        let view = self.topic_view(name)?;
        let mut staging = self.staging.lock();
        let topic = staging.remember(view);
        Ok((staging, topic))
    }

    /// Makes room for the batches of `topic`'s partitions up to `partition`.
    fn add_partitions(&self, topic: &str, partition: u32) {
        if let Some(topic) = self.topics.write().get_mut(topic)
            && topic.partitions.len() <= partition as usize
        {
            topic
                .partitions
                .resize_with(partition as usize + 1, Arc::default);
            topic
                .hints
                .resize_with(partition as usize + 1, PlacementHints::default);
        }
    }

    /// Asks the engine for `topic`'s partition count again once the last answer is
    /// `METADATA_MAX_AGE` old; looked at as a batch opens, so not with every record. A topic
    /// the engine no longer has keeps its count: appends to it fail and say so.
    fn refresh_partition_count(&self, topic: &TopicBatches, now: Instant) {
        let mut checked = topic.checked.lock();
        if now.saturating_duration_since(*checked) >= METADATA_MAX_AGE {
            if let Ok(found) = self.log.topic_for_produce(&topic.name) {
                topic
                    .partition_count
                    .store(found.partition_count(), Ordering::Relaxed);
            }
            *checked = now;
        }
    }

    /// Places the staged records in their partitions' batches, then appends the batches that
    /// filled. `placing` is taken before `staging` is released, so chunks are placed in the
    /// order they were staged; the appends come after, so the next chunk can be placed
    /// meanwhile.
    fn place_staged(&self, mut staging: MutexGuard<'_, Chunk>) {
        if staging.records.is_empty() {
            return;
        }
        let mut chunk = std::mem::take(&mut *self.spare_chunk.lock());
        std::mem::swap(&mut chunk, &mut staging);
        let placing = self.placing.lock();
        drop(staging);
        let filled = self.place(&chunk);
        drop(placing);
        chunk.empty();
        *self.spare_chunk.lock() = chunk;
        for partition in filled {
            // A failure reaches every delivery of that batch, and the next `flush`.
            self.drain(&partition);
        }
    }

    /// Places the staged records once the first of them has waited `linger`; otherwise says
    /// when it will have (nothing when none is staged).
    fn place_lingering(&self, linger: Duration) -> Option<Instant> {
        let staging = self.staging.lock();
        let due = staging.first_staged? + linger;
        if due > Instant::now() {
            return Some(due);
        }
        self.place_staged(staging);
        None
    }

    /// Puts a chunk's records into their partitions' batches in order, closing a batch a
    /// record would push past `batch_bytes` (a record larger than the limit gets a batch of its
    /// own); returns the partitions whose batches were closed so, for the caller to append.
    fn place(&self, chunk: &Chunk) -> Vec<Arc<PartitionBatches>> {
        let topics = self.topics.read();
        let chunk_topics: Vec<&TopicBatches> = chunk
            .topics
            .iter()
            .map(|view| {
                let name = &view.name;
                topics.get(name).expect("a producer never forgets a topic")
            })
            .collect();
        let room = "`send` made room for the partition's batches";
        let target = |record: &Staged| {
            let topic = chunk_topics[record.topic];
            let partition = record.partition as usize;
            let batches = topic.partitions.get(partition).expect(room);
            let hints = topic.hints.get(partition).expect(room);
            (batches, hints)
        };
        // Every partition's lock and open batch, where each record goes and each delivery's
        // slot, asked for at once: the misses overlap, where taking them in the loop below
        // would wait for each in turn. (Prefetching a fixed distance ahead inside that loop
        // was slower: its locks wait for the prefetches.)
        let dropped = chunk.placements.dropped();
        let delivery = |at: usize| dropped & (1 << at) == 0;
        for (at, record) in chunk.records.iter().enumerate() {
            let (batches, hints) = target(record);
            prefetch(Arc::as_ptr(batches), HOT_PARTITION_BYTES);
            hints.prefetch(record.size, delivery(at));
        }
        let started = chunk.first_staged.unwrap_or_else(Instant::now);
        let mut placed = Placed {
            slots: Vec::with_capacity(chunk.records.len()),
            records: Vec::with_capacity(chunk.records.len()),
        };
        let mut opened = Vec::new();
        let mut filled: Vec<Arc<PartitionBatches>> = Vec::new();
        let mut current: Option<(&Arc<PartitionBatches>, MutexGuard<'_, Batches>)> = None;
        for (at, record) in chunk.records.iter().enumerate() {
            let (partition, hints) = target(record);
            let batches = match &mut current {
                Some((held, batches)) if Arc::ptr_eq(held, partition) => batches,
                _ => {
                    current = None;
                    &mut current.insert((partition, partition.batches.lock())).1
                }
            };
            let contents = chunk.contents(record);
            let full = batches.open.as_ref().is_some_and(|b| {
                !b.builder.is_empty() && b.builder.size() + record.size > self.config.batch_bytes
            });
            if full {
                batches.close();
                if !filled.iter().any(|f| Arc::ptr_eq(f, partition)) {
                    filled.push(partition.clone());
                }
            }
            if batches.open.is_none() {
                batches.next_id += 1;
                opened.push(Opened {
                    started,
                    partition: partition.clone(),
                    id: batches.next_id,
                });
                batches.open = Some(Pending::new(
                    batches.next_id,
                    self.config.compression,
                    self.buffers.take(),
                    chunk_topics[record.topic].name.clone(),
                    record.partition,
                ));
            }
            let batch = batches.open.as_mut().expect("opened above");
            if delivery(at) {
                placed.note(&batch.slot, batch.builder.len());
            } else {
                placed.skip();
            }
            batch.builder.push(
                record.timestamp,
                contents.key,
                contents.value,
                &contents.headers,
            );
            hints.note(batch);
        }
        drop(current);
        if !opened.is_empty() {
            let now = Instant::now();
            for topic in &chunk_topics {
                self.refresh_partition_count(topic, now);
            }
            let mut queue = self.opened.lock();
            for batch in opened {
                queue.remember(batch);
            }
        }
        drop(topics);
        chunk.placements.publish(placed);
        filled
    }

    /// Appends a partition's queued batches in order, holding its appender. Whoever closes a
    /// batch drains its partition afterwards, so one look at the queue is enough: a batch
    /// queued meanwhile is its closer's to append.
    fn drain(&self, partition: &PartitionBatches) {
        let mut appender = partition.appender.lock();
        let queued = std::mem::take(&mut partition.batches.lock().ready);
        for batch in queued {
            self.append(batch, &mut appender);
        }
    }

    /// The producer id and epoch, allocating the id at the first use.
    fn identity(&self) -> Result<Option<Identity>> {
        if !self.config.idempotence {
            return Ok(None);
        }
        let mut identity = self.identity.lock();
        if identity.is_none() {
            *identity = Some(Identity {
                id: self.log.init_producer_id()?,
                epoch: 0,
            });
        }
        Ok(*identity)
    }

    /// After a failed append it is unknown whether the batch landed: later batches start a new
    /// epoch at sequence 0 (Kafka's client bumps the epoch the same way, KIP-360), and a new
    /// id once the epochs run out.
    fn bump_epoch(&self) {
        let mut identity = self.identity.lock();
        *identity = identity.and_then(|i| {
            (i.epoch < i16::MAX).then_some(Identity {
                id: i.id,
                epoch: i.epoch + 1,
            })
        });
    }

    /// Appends one batch (with the partition's next sequence when idempotent) and resolves its
    /// deliveries; a failure reaches them and the next `flush`.
    fn append(&self, batch: Pending, appender: &mut Appender) {
        let (topic, partition) = (&batch.slot.topic, batch.slot.partition);
        let records = batch.builder.len() as i32;
        let result = self.identity().and_then(|identity| {
            let builder = match identity {
                Some(Identity { id, epoch }) => {
                    if appender.epoch != epoch {
                        appender.epoch = epoch;
                        appender.next_sequence = 0;
                    }
                    batch.builder.producer(id, epoch, appender.next_sequence)
                }
                None => batch.builder,
            };
            let mut bytes = builder.build(0)?;
            let appended = self.log.append(topic, partition, &mut bytes);
            self.buffers.give_back(bytes);
            appended
        });
        match &result {
            Ok(_) => appender.next_sequence = advance_sequence(appender.next_sequence, records),
            Err(_) => self.bump_epoch(),
        }
        self.partitioner.batch_complete(
            partition,
            self.log.partition_count(topic).unwrap_or(1).max(1),
        );
        let outcome = result.map(|info| info.base_offset.0).map_err(Arc::new);
        if let Err(e) = &outcome {
            self.failed.lock().get_or_insert_with(|| e.clone());
        }
        *batch.slot.outcome.lock() = Some(outcome);
        batch.slot.done.notify_all();
    }
}

/// How many due batches ahead the linger thread prefetches partitions' state.
const LINGER_PREFETCH_AHEAD: usize = 4;

/// Appends batches older than `linger` until the producer is dropped.
fn linger_loop(shared: Weak<Shared>) {
    loop {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let linger = shared.config.linger;
        // One short hold of the queue a round; each due partition is then closed and appended
        // under its own locks, so sends to other partitions go on meanwhile.
        let staged_due = shared.place_lingering(linger);
        let (due, next_due) = shared.opened.lock().take_due(linger);
        for (at, opened) in due.iter().enumerate() {
            // The partitions a few entries on, asked for now: each of their misses overlaps
            // with this entry's append instead of stalling the loop when it gets there.
            if let Some(ahead) = due.get(at + LINGER_PREFETCH_AHEAD) {
                prefetch(Arc::as_ptr(&ahead.partition), size_of::<PartitionBatches>());
            }
            if opened.partition.batches.lock().close_if_open(opened.id) {
                shared.drain(&opened.partition);
            }
        }
        let mut closing = shared.closing.lock();
        if *closing {
            return;
        }
        // Until the oldest open batch is due; with none open, a batch opened meanwhile waits at
        // most half a linger longer than it should.
        let pause = next_due
            .into_iter()
            .chain(staged_due)
            .min()
            .map_or(linger / 2, |due| {
                due.saturating_duration_since(Instant::now())
            });
        shared
            .wake
            .wait_for(&mut closing, pause.max(Duration::from_millis(1)));
        if *closing {
            return;
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        let _ = self.flush();
        *self.shared.closing.lock() = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.linger_thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TopicConfig;

    #[test]
    fn placing_a_record_touches_only_the_first_cache_line_of_its_partition() {
        let partition = PartitionBatches::default();
        let start = &raw const partition as usize;
        assert_eq!(start % 64, 0, "aligned to a cache line");
        // The lock's state is the mutex's first word, in front of the data it guards.
        assert_eq!(&raw const partition.batches as usize, start);
        let data = partition.batches.data_ptr() as usize - start;
        assert!(data > 0, "the lock's state comes first");
        let mut batches = partition.batches.lock();
        let buffer = Vec::new();
        let open = Pending::new(1, Compression::None, buffer, Arc::from("t"), 0);
        let open = batches.open.insert(open);
        let slot_end = &raw const open.slot as usize - start + size_of::<Arc<BatchSlot>>();
        let builder = &raw const open.builder as usize - start;
        let pushed_end = builder + BatchBuilder::PUSHED_BYTES;
        assert!(
            slot_end <= HOT_PARTITION_BYTES,
            "the slot ends at {slot_end}"
        );
        assert!(
            pushed_end <= HOT_PARTITION_BYTES,
            "the pushed fields end at {pushed_end}"
        );
    }

    #[test]
    fn the_buffer_pool_reuses_buffers_and_keeps_a_bounded_number_of_them() {
        let pool = BufferPool::new(1000);
        let mut used = Vec::with_capacity(900);
        used.extend_from_slice(&[7; 900]);
        let address = used.as_ptr();
        pool.give_back(used);
        let again = pool.take();
        assert_eq!(
            again.as_ptr(),
            address,
            "the returned buffer is handed out again"
        );
        assert!(again.capacity() >= 900);
        // One oversized record's batch is not kept, and the pool stops growing at its bound.
        pool.give_back(Vec::with_capacity(2001));
        assert_eq!(pool.free.lock().len(), 0);
        for _ in 0..POOLED_BUFFERS + 10 {
            pool.give_back(Vec::with_capacity(100));
        }
        assert_eq!(pool.free.lock().len(), POOLED_BUFFERS);
        assert_eq!(pool.take().capacity(), 100);
    }

    /// An engine in a fresh directory with topic "t" of `partitions` partitions.
    fn engine_with_topic(partitions: u32) -> (tempfile::TempDir, Log) {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path(), crate::Config::default()).unwrap();
        let topic = TopicConfig {
            partitions,
            ..TopicConfig::default()
        };
        log.create_topic("t", topic).unwrap();
        (dir, log)
    }

    /// Every record stored in `topic`'s partition, by offset.
    fn stored(log: &Log, topic: &str, partition: u32) -> Vec<logd_storage::batch::Record> {
        let bytes = log
            .partition(topic, partition)
            .unwrap()
            .read(logd_storage::Offset(0), 64 << 20)
            .unwrap();
        logd_storage::batch::Record::decode_all(&bytes, 64 << 20).unwrap()
    }

    #[test]
    fn each_delivery_names_where_its_record_was_stored_across_chunks_and_filled_batches() {
        let (_dir, log) = engine_with_topic(7);
        // Batches that fill every few records, so that chunks close batches part-way, and
        // records of several sizes with and without headers, spread over the partitions.
        let producer = Producer::new(
            &log,
            ProducerConfig {
                batch_bytes: 400,
                ..ProducerConfig::default()
            },
        );
        let sent: Vec<(String, String)> = (0..staging::CHUNK_RECORDS * 3 + 17)
            .map(|i| (format!("key-{i}"), "v".repeat(i % 90)))
            .collect();
        let deliveries: Vec<Delivery> = sent
            .iter()
            .enumerate()
            .map(|(i, (key, value))| {
                let mut record = ProducerRecord::new("t", value).key(key);
                if i % 3 == 0 {
                    record = record.header("n", key);
                }
                producer.send(record).unwrap()
            })
            .collect();
        producer.flush().unwrap();
        let mut last_offset = [-1i64; 7];
        for (i, delivery) in deliveries.into_iter().enumerate() {
            let stored_at = delivery.wait().unwrap();
            let partition = stored_at.partition as usize;
            assert!(
                stored_at.offset > last_offset[partition],
                "record {i} stored before an earlier one of its partition"
            );
            last_offset[partition] = stored_at.offset;
            let records = stored(&log, "t", stored_at.partition);
            let record = &records[stored_at.offset as usize];
            let (key, value) = &sent[i];
            assert_eq!(record.key.as_deref(), Some(key.as_bytes()), "record {i}");
            assert_eq!(
                record.value.as_deref(),
                Some(value.as_bytes()),
                "record {i}"
            );
            let headers: Vec<&[u8]> = record.headers.iter().map(|h| &h.key[..]).collect();
            let expected: &[&[u8]] = if i % 3 == 0 { &[b"n"] } else { &[] };
            assert_eq!(headers, expected, "record {i}");
        }
        let total: usize = (0..7).map(|p| stored(&log, "t", p).len()).sum();
        assert_eq!(total, sent.len(), "every record once");
    }

    #[test]
    fn records_whose_deliveries_were_dropped_are_stored_without_keeping_their_batch() {
        let (_dir, log) = engine_with_topic(2);
        let producer = Producer::new(&log, ProducerConfig::default());
        // Records alternate between the partitions; only partition 1's deliveries are kept.
        let mut kept = Vec::new();
        for i in 0..10u32 {
            let delivery = producer
                .send(ProducerRecord::new("t", "v").partition(i % 2))
                .unwrap();
            if i % 2 == 1 {
                kept.push(delivery);
            }
        }
        producer.flush().unwrap();
        for p in 0..2 {
            assert_eq!(stored(&log, "t", p).len(), 5, "partition {p}");
        }
        // The chunk holds partition 1's batch once: with partition 0's records in between
        // kept too, it would hold it once per record (a run of one batch is noted once).
        let (slot, _) = kept[0].placements.wait(kept[0].index);
        assert_eq!(
            Arc::strong_count(&slot),
            2,
            "the chunk's reference and this one"
        );
        for (n, delivery) in kept.into_iter().enumerate() {
            let stored_at = delivery.wait().unwrap();
            assert_eq!((stored_at.partition, stored_at.offset), (1, n as i64));
        }
    }

    #[test]
    fn a_staged_record_is_stored_after_its_linger_without_a_flush() {
        let (_dir, log) = engine_with_topic(1);
        let producer = Producer::new(
            &log,
            ProducerConfig {
                linger: Duration::from_millis(20),
                ..ProducerConfig::default()
            },
        );
        // One record: far from filling a chunk, so only the linger thread places it.
        let delivery = producer.send(ProducerRecord::new("t", "lone")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(delivery.wait()));
        let stored_at = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the record was stored without a flush")
            .unwrap();
        assert_eq!((stored_at.partition, stored_at.offset), (0, 0));
        assert_eq!(stored(&log, "t", 0).len(), 1);
    }

    #[test]
    fn large_records_are_placed_before_the_staging_holds_more_than_a_chunk_of_bytes() {
        let (_dir, log) = engine_with_topic(1);
        let producer = Producer::new(
            &log,
            ProducerConfig {
                linger: Duration::from_secs(600),
                ..ProducerConfig::default()
            },
        );
        let value = vec![b'x'; 100 << 10];
        for _ in 0..20 {
            producer.send(ProducerRecord::new("t", &value)).unwrap();
            let staged = producer.shared.staging.lock();
            assert!(staged.records.len() < staging::CHUNK_RECORDS);
            assert!(staged.staged_bytes() < staging::CHUNK_BYTES);
        }
        producer.flush().unwrap();
        assert_eq!(stored(&log, "t", 0).len(), 20);
    }

    #[test]
    fn batches_closed_before_their_linger_leave_no_trail() {
        let (_dir, log) = engine_with_topic(1);
        // A long linger, and batches that fill at every second record: each closes early.
        let producer = Producer::new(
            &log,
            ProducerConfig {
                linger: Duration::from_secs(600),
                batch_bytes: 100,
                ..ProducerConfig::default()
            },
        );
        for _ in 0..20_000 {
            producer
                .send(ProducerRecord::new("t", &[b'v'; 40]))
                .unwrap();
        }
        let queued = producer.shared.opened.lock().entries.len();
        assert!(
            queued <= 2 * OPENED_COMPACT_MIN,
            "{queued} entries for one open batch"
        );
        producer.flush().unwrap();
        assert_eq!(
            log.describe_topic("t").unwrap().partitions[0].log_end,
            20_000
        );
    }
}
