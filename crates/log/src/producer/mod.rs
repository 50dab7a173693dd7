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
//!
//! Files by job: the public types (`record.rs`, `delivery.rs`), staging (`staging.rs`), the
//! batching state (`batches.rs`, `slot.rs`), placing records in batches (`placing.rs`),
//! appending batches and the linger thread (`sending.rs`), and what they share (`shared.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use logd_partition::{KeyHash, Partitioner, Sticky};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::engine::Log;
use crate::error::{Error, Result};

mod batches;
mod delivery;
mod placing;
mod record;
mod sending;
mod shared;
mod slot;
mod staging;
#[cfg(test)]
mod tests;

pub use delivery::Delivery;
pub use record::{ProducerConfig, ProducerRecord, RecordMetadata};

use batches::{BufferPool, OpenedQueue, PartitionBatches};
use sending::linger_loop;
use shared::Shared;
use staging::Chunk;

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
