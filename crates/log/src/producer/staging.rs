//! Records a producer has accepted but not yet put into their partitions' batches, in the
//! order they were sent, and where each one went once they are put there.
//!
//! Sending to thousands of partitions makes every record land in a different partition's
//! batch, whose lock, buffer tail and delivery slot are cold in the cache; taken one record at
//! a time, each miss is waited for in turn (the lock's release waits for the record's stores).
//! Staged records are placed a chunk at a time instead, after their partitions' state was
//! asked for all at once, so the misses overlap.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::record::ProducerRecord;
use super::slot::BatchSlot;

/// Records staged before a chunk is placed: enough for the cache misses of one chunk's
/// partitions to overlap, few enough that the chunk's partition state stays in the L1 cache.
pub(super) const CHUNK_RECORDS: usize = 64;

// A chunk's dropped deliveries are one bit each in a `u64`.
const _: () = assert!(CHUNK_RECORDS <= 64);

/// Bytes of keys, values and headers staged before a chunk is placed whatever its count.
pub(super) const CHUNK_BYTES: usize = 256 << 10;

/// A byte range of [`Chunk::bytes`].
type Span = Range<usize>;

/// What a sender needs of a topic to stage a record for it, without the producer's topic map.
#[derive(Debug)]
pub(super) struct TopicView {
    pub name: Arc<str>,
    pub partition_count: u32,
    /// Partitions the producer has made room for: a record to a higher one waits for that.
    pub with_room: u32,
}

/// One staged record; its bytes are in the chunk's `bytes`.
#[derive(Debug)]
pub(super) struct Staged {
    /// Index into [`Chunk::topics`].
    pub topic: usize,
    pub partition: u32,
    pub timestamp: i64,
    pub key: Option<Span>,
    pub value: Option<Span>,
    /// Range of [`Chunk::headers`].
    pub headers: Range<usize>,
    /// What the record adds to a batch, about: its bytes and a varint's worth for each length.
    pub size: usize,
}

/// Staged records in arrival order, and the placements their deliveries wait for.
#[derive(Debug)]
pub(super) struct Chunk {
    pub records: Vec<Staged>,
    /// The topics the records name, each once (a producer writes few topics), as the
    /// producer saw them when the chunk first staged a record for them.
    pub topics: Vec<TopicView>,
    bytes: Vec<u8>,
    headers: Vec<(Span, Option<Span>)>,
    /// When the first record was staged: the batches it opens count their linger from here.
    pub first_staged: Option<Instant>,
    pub placements: Arc<Placements>,
}

impl Default for Chunk {
    fn default() -> Chunk {
        Chunk {
            records: Vec::with_capacity(CHUNK_RECORDS),
            topics: Vec::new(),
            bytes: Vec::new(),
            headers: Vec::new(),
            first_staged: None,
            placements: Arc::default(),
        }
    }
}

impl Chunk {
    /// The chunk's view of topic `name`, and its index in [`Chunk::topics`].
    pub fn topic(&self, name: &str) -> Option<(usize, &TopicView)> {
        self.topics
            .iter()
            .enumerate()
            .find(|(_, view)| *view.name == *name)
    }

    /// Takes `view` as the chunk's view of its topic (replacing an older one); its index in
    /// [`Chunk::topics`].
    pub fn remember(&mut self, view: TopicView) -> usize {
        match self.topics.iter().position(|known| known.name == view.name) {
            Some(index) => {
                self.topics[index] = view;
                index
            }
            None => {
                self.topics.push(view);
                self.topics.len() - 1
            }
        }
    }

    /// Stages `record` for partition `partition` of the chunk's topic number `topic`; the
    /// index its placement will have.
    pub fn stage(
        &mut self,
        record: &ProducerRecord<'_>,
        topic: usize,
        partition: u32,
        timestamp: i64,
    ) -> usize {
        let first_byte = self.bytes.len();
        let key = record.key.map(|k| self.keep(k));
        let value = record.value.map(|v| self.keep(v));
        let first_header = self.headers.len();
        for (k, v) in &record.headers {
            let header = (self.keep(k.as_bytes()), v.map(|v| self.keep(v)));
            self.headers.push(header);
        }
        let headers = first_header..self.headers.len();
        let lengths = 32 + 16 * headers.len();
        let size = lengths + self.bytes.len() - first_byte;
        self.first_staged.get_or_insert_with(Instant::now);
        self.records.push(Staged {
            topic,
            partition,
            timestamp,
            key,
            value,
            headers,
            size,
        });
        self.records.len() - 1
    }

    /// Empties the chunk for reuse, keeping its buffers; new placements for new deliveries.
    pub fn empty(&mut self) {
        self.records.clear();
        self.topics.clear();
        self.bytes.clear();
        self.headers.clear();
        self.first_staged = None;
        self.placements = Arc::default();
    }

    fn keep(&mut self, bytes: &[u8]) -> Span {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        start..self.bytes.len()
    }

    /// Bytes of keys, values and headers staged.
    pub fn staged_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the chunk is due to be placed for its size.
    pub fn is_full(&self) -> bool {
        self.records.len() >= CHUNK_RECORDS || self.staged_bytes() >= CHUNK_BYTES
    }

    /// A staged record's key, value and headers.
    pub fn contents(&self, record: &Staged) -> RecordContents<'_> {
        let span = |s: &Option<Span>| s.clone().map(|s| &self.bytes[s]);
        RecordContents {
            key: span(&record.key),
            value: span(&record.value),
            headers: if record.headers.is_empty() {
                Vec::new()
            } else {
                self.headers[record.headers.clone()]
                    .iter()
                    .map(|(k, v)| (&self.bytes[k.clone()], span(v)))
                    .collect()
            },
        }
    }
}

/// A staged record's bytes, borrowed from its chunk.
pub(super) struct RecordContents<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
}

/// Where a chunk's records went: one per chunk, shared by its records' deliveries.
#[derive(Debug, Default)]
pub(super) struct Placements {
    placed: Mutex<Option<Placed>>,
    done: Condvar,
    /// Bit `i`: record `i`'s delivery was dropped, so nobody will ask where it went (a
    /// producer that sends without waiting, and learns of failures from `flush`).
    dropped: AtomicU64,
}

/// The batches a chunk's records joined, and each record's batch and index in it.
#[derive(Debug, Default)]
pub(super) struct Placed {
    /// The batches, each once in a row (a run of records to one partition shares one).
    pub slots: Vec<Arc<BatchSlot>>,
    /// Per record: index into `slots`, and the record's index in that batch; nothing for a
    /// record whose delivery was dropped before it was placed.
    pub records: Vec<Option<(u32, u32)>>,
}

impl Placed {
    /// Notes that the next record joined `slot` at `index`.
    pub fn note(&mut self, slot: &Arc<BatchSlot>, index: usize) {
        if !self
            .slots
            .last()
            .is_some_and(|last| Arc::ptr_eq(last, slot))
        {
            self.slots.push(slot.clone());
        }
        self.records
            .push(Some((self.slots.len() as u32 - 1, index as u32)));
    }

    /// Notes that the next record was placed with nobody left to tell where.
    pub fn skip(&mut self) {
        self.records.push(None);
    }
}

impl Placements {
    /// Notes that record `index`'s delivery was dropped.
    pub fn forget(&self, index: usize) {
        self.dropped.fetch_or(1 << index, Ordering::Relaxed);
    }

    /// The records whose deliveries were dropped so far, a bit each.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Publishes where the chunk's records went and wakes their waiting deliveries.
    pub fn publish(&self, placed: Placed) {
        *self.placed.lock() = Some(placed);
        self.done.notify_all();
    }

    /// Waits until the chunk was placed; record `index`'s batch and its index there.
    pub fn wait(&self, index: usize) -> (Arc<BatchSlot>, i64) {
        let mut placed = self.placed.lock();
        loop {
            if let Some(placed) = placed.as_ref() {
                let (slot, in_batch) =
                    placed.records[index].expect("a delivery still held was placed with its slot");
                return (placed.slots[slot as usize].clone(), i64::from(in_batch));
            }
            self.done.wait(&mut placed);
        }
    }
}

/// A cache line's size on the machines logd runs on.
const CACHE_LINE: usize = 64;

/// Asks the cache for the lines holding `bytes` bytes from `address` without waiting for them,
/// so that many misses overlap instead of being waited for one at a time. Only an address:
/// nothing is read through it, and a stale or dangling one costs a wasted fetch.
#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "the prefetch intrinsic is unsafe only for its target-feature check"
)]
pub(super) fn prefetch<T>(address: *const T, bytes: usize) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    let into_line = address.addr() % CACHE_LINE;
    let first_line = address.cast::<i8>().wrapping_sub(into_line);
    for line in 0..(into_line + bytes).div_ceil(CACHE_LINE) {
        // SAFETY: `sse` is part of the x86_64 baseline, so the instruction exists; a prefetch
        // never faults and reads nothing into the program, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(first_line.wrapping_add(line * CACHE_LINE)) };
    }
}

/// Elsewhere the hardware's own prefetching has to do.
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn prefetch<T>(_address: *const T, _bytes: usize) {}
