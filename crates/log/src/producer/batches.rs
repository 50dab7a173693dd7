//! The producer's batching state: each topic's partitions' open and closed batches, their
//! appenders, the queue of batches in the order they opened (for the linger thread), and the
//! pool of batch buffers. Laid out for the placing loop's cache behaviour (see each type).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use logd_storage::batch::{BatchBuilder, Compression};
use parking_lot::{Condvar, Mutex};

use super::slot::BatchSlot;
use super::staging::prefetch;

/// `repr(C)`: the slot and the builder's pushed fields first, in the partition's first cache
/// line (see [`PartitionBatches`]).
#[derive(Debug)]
#[repr(C)]
pub(super) struct Pending {
    pub(super) slot: Arc<BatchSlot>,
    pub(super) builder: BatchBuilder,
    /// Tells this batch from later ones of the same partition in [`OpenedQueue`].
    pub(super) id: u64,
}

impl Pending {
    pub(super) fn new(
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
pub(super) const METADATA_MAX_AGE: Duration = Duration::from_secs(1);

/// A topic's partitions' batches, with the producer's view of its partition count. Senders
/// and `flush` read this under the producer's topic map lock; the linger thread reaches a
/// partition through its [`Opened`] entry instead, so it never contends with senders there.
#[derive(Debug)]
pub(super) struct TopicBatches {
    pub(super) name: Arc<str>,
    pub(super) partition_count: AtomicU32,
    /// When `partition_count` was last asked of the engine; looked at when a batch opens.
    pub(super) checked: Mutex<Instant>,
    /// Grown (under the map's write lock) as records reach higher partitions.
    pub(super) partitions: Vec<Arc<PartitionBatches>>,
    /// Each partition's placement hints, side by side (16 bytes each, so that 10,000
    /// partitions' stay in the cache where their batches do not).
    pub(super) hints: Vec<PlacementHints>,
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
pub(super) struct PartitionBatches {
    pub(super) batches: Mutex<Batches>,
    pub(super) appender: Mutex<Appender>,
}

/// Where the open batch's next record goes and its delivery slot, noted after each placement:
/// read without the partition's lock, by a placer that prefetches them for a whole chunk.
/// Only addresses, never read through: stale ones cost a miss, nothing else.
#[derive(Debug, Default)]
pub(super) struct PlacementHints {
    pub(super) next_write: AtomicPtr<u8>,
    pub(super) slot: AtomicPtr<BatchSlot>,
}

impl PlacementHints {
    pub(super) fn note(&self, batch: &Pending) {
        let next_write = batch.builder.next_write().cast_mut();
        self.next_write.store(next_write, Ordering::Relaxed);
        let slot = Arc::as_ptr(&batch.slot).cast_mut();
        self.slot.store(slot, Ordering::Relaxed);
    }

    /// Prefetches where a record of `record_bytes` goes and, if it has a delivery waiting,
    /// the slot that delivery counts on.
    pub(super) fn prefetch(&self, record_bytes: usize, delivery: bool) {
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
    pub(super) fn is_open(&self, id: u64) -> bool {
        self.batches.lock().holds_open(id)
    }
}

/// The bytes of a [`PartitionBatches`] that placing a record touches: the lock, the open
/// batch's slot and its builder's pushed fields, its first cache line.
pub(super) const HOT_PARTITION_BYTES: usize = 64;

/// A partition's open batch and the closed ones waiting to be appended, oldest first.
/// `repr(C)`: the open batch first, right after the lock's state.
#[derive(Debug, Default)]
#[repr(C)]
pub(super) struct Batches {
    pub(super) open: Option<Pending>,
    pub(super) ready: VecDeque<Pending>,
    /// Numbers the partition's batches, so a linger entry names the batch it was for.
    pub(super) next_id: u64,
}

impl Batches {
    /// Closes the open batch: it joins the queue of batches to append.
    pub(super) fn close(&mut self) {
        if let Some(batch) = self.open.take() {
            self.ready.push_back(batch);
        }
    }

    /// Whether the batch numbered `id` is the open one.
    pub(super) fn holds_open(&self, id: u64) -> bool {
        self.open.as_ref().is_some_and(|b| b.id == id)
    }

    /// Closes the batch numbered `id` if it is still the open one; whether it was.
    pub(super) fn close_if_open(&mut self, id: u64) -> bool {
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
pub(super) struct Appender {
    pub(super) epoch: i16,
    pub(super) next_sequence: i32,
}

/// An idempotent producer's id and current epoch.
#[derive(Debug, Clone, Copy)]
pub(super) struct Identity {
    pub(super) id: i64,
    pub(super) epoch: i16,
}

/// Buffers of appended batches, reused for new ones (as Kafka's producer reuses
/// `batch.size` buffers in its `BufferPool`). A sender spreading records over thousands of
/// partitions opens a batch every few records; allocating each on the sending thread and
/// freeing it on the linger thread made the two contend for the allocator's lock.
#[derive(Debug)]
pub(super) struct BufferPool {
    pub(super) free: Mutex<Vec<Vec<u8>>>,
    /// Buffers larger than this (a batch of one oversized record) are not kept.
    pub(super) largest: usize,
}

/// Buffers a [`BufferPool`] keeps at most: enough for the batches one linger pass appends
/// at a time, so at most this many times `batch_bytes` (4 MiB by default) sits unused.
pub(super) const POOLED_BUFFERS: usize = 256;

impl BufferPool {
    pub(super) fn new(batch_bytes: usize) -> BufferPool {
        BufferPool {
            free: Mutex::new(Vec::new()),
            largest: batch_bytes.saturating_mul(2),
        }
    }

    /// A buffer to build a batch in: a returned one if there is one, else a new one.
    pub(super) fn take(&self) -> Vec<u8> {
        self.free.lock().pop().unwrap_or_default()
    }

    /// Keeps `buffer` for a later batch, unless the pool is full or the buffer too large.
    pub(super) fn give_back(&self, buffer: Vec<u8>) {
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
pub(super) struct Opened {
    pub(super) started: Instant,
    pub(super) partition: Arc<PartitionBatches>,
    pub(super) id: u64,
}

/// `OpenedQueue` is never cleared of closed batches' entries below this length.
pub(super) const OPENED_COMPACT_MIN: usize = 1024;

/// Batches in the order they opened, so the linger thread finds the due ones at the front
/// instead of looking at every partition of every topic (10,000 of them, say) each time.
/// Entries of batches closed meanwhile (full, or flushed) are skipped when they come up, and
/// dropped whenever the queue reaches `compact_at`: a long linger under steady traffic that
/// fills batches would otherwise keep one entry per batch sent within it.
#[derive(Debug)]
pub(super) struct OpenedQueue {
    pub(super) entries: VecDeque<Opened>,
    pub(super) compact_at: usize,
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
    pub(super) fn remember(&mut self, opened: Opened) {
        self.entries.push_back(opened);
        if self.entries.len() >= self.compact_at {
            self.entries.retain(|o| o.partition.is_open(o.id));
            self.compact_at = (2 * self.entries.len()).max(OPENED_COMPACT_MIN);
        }
    }

    /// Takes the entries opened `linger` or longer ago; with them, when the oldest entry
    /// left is due.
    pub(super) fn take_due(&mut self, linger: Duration) -> (Vec<Opened>, Option<Instant>) {
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
