//! [`Producer`]: routes records to partitions (explicit, or by the partitioner), collects them
//! into one batch per partition, and appends a batch when it is full, when it has waited
//! `linger`, or on [`Producer::flush`]. Each send returns a [`Delivery`] that resolves to the
//! record's partition and offset once the append is durable under the topic's fsync policy.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use logd_partition::{KeyHash, Partitioner, Sticky};
use logd_storage::batch::{BatchBuilder, Compression};
use parking_lot::{Condvar, Mutex};

use crate::engine::Log;
use crate::error::{Error, Result};

/// How a producer batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Append a partition's batch once it reaches this many bytes (Kafka `batch.size`, 16 KiB).
    pub batch_bytes: usize,
    /// Append a batch at the latest this long after its first record (Kafka `linger.ms`, 5 ms).
    pub linger: Duration,
    /// Codec for batches.
    pub compression: Compression,
}

impl Default for ProducerConfig {
    fn default() -> ProducerConfig {
        ProducerConfig {
            batch_bytes: 16 << 10,
            linger: Duration::from_millis(5),
            compression: Compression::None,
        }
    }
}

/// A record to send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerRecord {
    /// Topic.
    pub topic: String,
    /// Explicit partition; `None` lets the partitioner choose (by key, or sticky if keyless).
    pub partition: Option<u32>,
    /// Key; records with the same key go to the same partition.
    pub key: Option<Bytes>,
    /// Value.
    pub value: Option<Bytes>,
    /// Headers, in order (keys may repeat).
    pub headers: Vec<(String, Option<Bytes>)>,
    /// Timestamp (ms); `None` for the engine clock's now.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with `value` for `topic`.
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> ProducerRecord {
        ProducerRecord {
            topic: topic.into(),
            value: Some(value.into()),
            ..ProducerRecord::default()
        }
    }

    /// Sets the key.
    pub fn key(mut self, key: impl Into<Bytes>) -> ProducerRecord {
        self.key = Some(key.into());
        self
    }

    /// Adds a header.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> ProducerRecord {
        self.headers.push((key.into(), Some(value.into())));
        self
    }

    /// Sends to this partition, bypassing the partitioner.
    pub fn partition(mut self, partition: u32) -> ProducerRecord {
        self.partition = Some(partition);
        self
    }

    /// Sets the timestamp (ms).
    pub fn timestamp(mut self, timestamp: i64) -> ProducerRecord {
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
#[derive(Debug, Default)]
struct BatchSlot {
    outcome: Mutex<Option<Outcome>>,
    done: Condvar,
}

/// The pending result of one send.
#[derive(Debug)]
pub struct Delivery {
    slot: Arc<BatchSlot>,
    topic: Arc<str>,
    partition: u32,
    index: i64,
    timestamp: i64,
}

impl Delivery {
    /// Waits until the record's batch was appended (and is durable per the topic's policy).
    pub fn wait(self) -> Result<RecordMetadata> {
        let mut outcome = self.slot.outcome.lock();
        while outcome.is_none() {
            self.slot.done.wait(&mut outcome);
        }
        match outcome.as_ref().expect("checked above") {
            Ok(base_offset) => Ok(RecordMetadata {
                topic: self.topic.to_string(),
                partition: self.partition,
                offset: base_offset + self.index,
                timestamp: self.timestamp,
            }),
            Err(e) => Err(Error::Delivery(e.clone())),
        }
    }
}

#[derive(Debug)]
struct Pending {
    builder: BatchBuilder,
    slot: Arc<BatchSlot>,
    started: Instant,
}

impl Pending {
    fn new(compression: Compression) -> Pending {
        Pending {
            builder: BatchBuilder::new(compression),
            slot: Arc::new(BatchSlot::default()),
            started: Instant::now(),
        }
    }
}

/// Pending batches by topic, then by partition.
type PendingBatches = HashMap<Arc<str>, Vec<Option<Pending>>>;

#[derive(Debug)]
struct Shared {
    log: Log,
    config: ProducerConfig,
    partitioner: Box<dyn Partitioner>,
    pending: Mutex<PendingBatches>,
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
            config,
            partitioner,
            pending: Mutex::new(HashMap::new()),
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
    pub fn send(&self, record: ProducerRecord) -> Result<Delivery> {
        let shared = &self.shared;
        let topic = shared.log.topic_for_produce(&record.topic)?;
        let partitions = topic.partition_count();
        let partition = match record.partition {
            Some(p) if p < partitions => p,
            Some(p) => {
                return Err(Error::UnknownPartition {
                    topic: record.topic,
                    partition: p,
                    partitions,
                });
            }
            None => shared
                .partitioner
                .partition(record.key.as_deref(), partitions),
        };
        let timestamp = record
            .timestamp
            .unwrap_or_else(|| shared.log.clock().now_ms());
        let headers: Vec<(&[u8], Option<&[u8]>)> = record
            .headers
            .iter()
            .map(|(k, v)| (k.as_bytes(), v.as_deref()))
            .collect();
        let name = topic.name.clone();
        let mut pending = shared.pending.lock();
        // Keyed by the topic's shared name: a refcount, not a string copy, per send.
        let by_partition = pending.entry(name.clone()).or_default();
        if by_partition.len() <= partition as usize {
            by_partition.resize_with(partition as usize + 1, || None);
        }
        let batch = by_partition[partition as usize]
            .get_or_insert_with(|| Pending::new(shared.config.compression));
        let delivery = Delivery {
            slot: batch.slot.clone(),
            topic: name.clone(),
            partition,
            index: batch.builder.len() as i64,
            timestamp,
        };
        batch.builder.push(
            timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &headers,
        );
        if batch.builder.size() >= shared.config.batch_bytes {
            let full = by_partition[partition as usize]
                .take()
                .expect("just filled");
            drop(pending);
            // A failure reaches every delivery of the batch, this one included.
            let _ = shared.append(&name, partition, full);
        }
        Ok(delivery)
    }

    /// Appends every queued batch and waits until they are stored.
    pub fn flush(&self) -> Result<()> {
        let batches = std::mem::take(&mut *self.shared.pending.lock());
        let mut failure = None;
        for (topic, by_partition) in batches {
            for (partition, batch) in by_partition.into_iter().enumerate() {
                if let Some(batch) = batch
                    && let Err(e) = self.shared.append(&topic, partition as u32, batch)
                {
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) => Err(Error::Delivery(e)),
            None => Ok(()),
        }
    }
}

impl Shared {
    /// Appends one batch and resolves its deliveries.
    fn append(
        &self,
        topic: &str,
        partition: u32,
        batch: Pending,
    ) -> std::result::Result<(), Arc<Error>> {
        let result = batch
            .builder
            .build(0)
            .map_err(Error::from)
            .and_then(|mut bytes| self.log.append(topic, partition, &mut bytes));
        self.partitioner.batch_complete(
            partition,
            self.log.partition_count(topic).unwrap_or(1).max(1),
        );
        let outcome = result.map(|info| info.base_offset.0).map_err(Arc::new);
        *batch.slot.outcome.lock() = Some(outcome.clone());
        batch.slot.done.notify_all();
        outcome.map(|_| ())
    }
}

/// Appends batches older than `linger` until the producer is dropped.
fn linger_loop(shared: Weak<Shared>) {
    loop {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let linger = shared.config.linger;
        let due: Vec<(Arc<str>, u32, Pending)> = {
            let mut pending = shared.pending.lock();
            let mut due = Vec::new();
            for (topic, by_partition) in pending.iter_mut() {
                for (partition, slot) in by_partition.iter_mut().enumerate() {
                    if slot.as_ref().is_some_and(|b| b.started.elapsed() >= linger) {
                        due.push((
                            topic.clone(),
                            partition as u32,
                            slot.take().expect("checked"),
                        ));
                    }
                }
            }
            due
        };
        for (topic, partition, batch) in due {
            // A failure reaches the batch's deliveries; nothing else to do here.
            let _ = shared.append(&topic, partition, batch);
        }
        let mut closing = shared.closing.lock();
        if *closing {
            return;
        }
        shared
            .wake
            .wait_for(&mut closing, linger.max(Duration::from_millis(1)) / 2);
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
