//! [`Shared`]: what the producer's handle and its linger thread share. Placing records in
//! batches is `placing.rs`; appending closed batches to the engine is `sending.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use logd_partition::Partitioner;
use parking_lot::{Condvar, Mutex, RwLock};

use crate::engine::Log;
use crate::error::Error;

use super::batches::{BufferPool, Identity, OpenedQueue, TopicBatches};
use super::record::ProducerConfig;
use super::staging::Chunk;

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) log: Log,
    pub(super) config: ProducerConfig,
    pub(super) partitioner: Box<dyn Partitioner>,
    /// By topic name (a producer writes few topics: a sorted map beats hashing).
    pub(super) topics: RwLock<BTreeMap<Arc<str>, TopicBatches>>,
    /// Records sent but not yet placed in their partitions' batches. Lock order: `staging`,
    /// then `placing`, then `topics`.
    pub(super) staging: Mutex<Chunk>,
    /// The last placed chunk's buffers, emptied, for the next chunk to stage into: memory
    /// still in the cache, where a new chunk's would be cold.
    pub(super) spare_chunk: Mutex<Chunk>,
    /// Held while a chunk is placed, taken before `staging` is released: chunks are placed in
    /// the order they were staged, so a partition's records keep the order they were sent in.
    pub(super) placing: Mutex<()>,
    /// Lock order: a partition's `batches` is never held while taking this.
    pub(super) opened: Mutex<OpenedQueue>,
    pub(super) buffers: BufferPool,
    /// With idempotence: the producer id and epoch, allocated at the first append.
    pub(super) identity: Mutex<Option<Identity>>,
    /// The first append that failed since the last `flush`, which reports it: a sender that
    /// never waits on its deliveries still learns that records were not stored.
    pub(super) failed: Mutex<Option<Arc<Error>>>,
    pub(super) closing: Mutex<bool>,
    pub(super) wake: Condvar,
}
