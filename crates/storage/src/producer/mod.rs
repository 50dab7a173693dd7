//! Idempotent-producer state of one partition, as Kafka's `ProducerStateManager` keeps it: per
//! producer id, its epoch and the sequence ranges and offsets of its last five batches, so that
//! a retried batch is answered with its original offsets instead of being stored twice, and a
//! gap or a fenced epoch is refused. Pure: the snapshot file is `snapshot.rs`, the clock is the
//! caller's (expiry takes `now_ms`).
//!
//! The rules (Kafka's `ProducerAppendInfo`, KIP-98 and KIP-360):
//! - a batch of the producer's current epoch whose exact sequence range matches one of the five
//!   cached batches is a duplicate;
//! - a lower epoch than the current one is fenced ([`Error::InvalidProducerEpoch`]);
//! - a higher epoch must start at sequence 0;
//! - within an epoch, the first sequence must follow the last one (`i32::MAX` wraps to 0);
//! - a producer with no state (new, expired, or whose batches retention deleted) is accepted
//!   at any sequence.
//!
//! Transactions (KIP-98) add, per producer, the first offset of its open transaction and the
//! coordinator epoch of its last marker (`txn.rs` holds the marker rules): a transactional
//! batch opens a transaction when none is open, a non-transactional one inside an open
//! transaction is refused ([`Error::InvalidTxnState`]), and a commit or abort marker closes
//! it. The open transactions' first offsets, in order, give the last stable offset.

mod read_committed;
pub(crate) mod snapshot;
#[cfg(test)]
mod tests;
mod txn;
#[cfg(test)]
mod txn_tests;

use std::collections::{BTreeMap, HashMap};

pub use read_committed::ReadCommitted;
pub use txn::{AbortedTxn, CompletedTxn, Marker};

use crate::batch::BatchHeader;
use crate::error::{Error, Result};

/// Batches remembered per producer: clients keep at most five requests in flight for this
/// reason (`max.in.flight.requests.per.connection`), so every retry they can send is found.
pub const BATCHES_RETAINED: usize = 5;

/// What is remembered of one appended batch of an idempotent producer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchMetadata {
    /// Sequence of its first record.
    pub first_sequence: i32,
    /// Sequence of its last record (wrapped past `i32::MAX`).
    pub last_sequence: i32,
    /// Offset of its first record.
    pub first_offset: i64,
    /// Offset of its last record.
    pub last_offset: i64,
    /// Its largest record timestamp (ms).
    pub max_timestamp: i64,
}

/// One producer's state in a partition: its epoch, its newest batches (oldest first) and its
/// transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerEntry {
    pub epoch: i16,
    /// Empty only for a producer known by a transaction marker alone.
    pub batches: RecentBatches,
    /// Timestamp of its last batch or marker (ms): expiry measures from it.
    pub last_timestamp: i64,
    /// The coordinator epoch of its last marker, -1 before any.
    pub coordinator_epoch: i32,
    /// The offset of its open transaction's first batch, while one is open.
    pub txn_first_offset: Option<i64>,
}

impl ProducerEntry {
    fn last(&self) -> Option<&BatchMetadata> {
        self.batches.last()
    }

    /// Offset of its last stored record, -1 without one.
    fn last_data_offset(&self) -> i64 {
        self.last().map_or(-1, |b| b.last_offset)
    }
}

/// A producer's newest [`BATCHES_RETAINED`] batches, oldest first, in place: checking and
/// recording an append copies them instead of allocating (an append per few records at
/// 10,000 partitions made the allocations a measurable part of it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RecentBatches {
    /// The first `len` are the batches; the rest stay default, so that equality holds.
    batches: [BatchMetadata; BATCHES_RETAINED],
    len: usize,
}

impl RecentBatches {
    /// Adds the newest batch, forgetting the oldest when full.
    pub fn push(&mut self, batch: BatchMetadata) {
        if self.len == BATCHES_RETAINED {
            self.batches.rotate_left(1);
            self.batches[BATCHES_RETAINED - 1] = batch;
        } else {
            self.batches[self.len] = batch;
            self.len += 1;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn last(&self) -> Option<&BatchMetadata> {
        self.as_slice().last()
    }

    pub fn as_slice(&self) -> &[BatchMetadata] {
        &self.batches[..self.len]
    }
}

impl FromIterator<BatchMetadata> for RecentBatches {
    /// The newest [`BATCHES_RETAINED`] of `batches`.
    fn from_iter<I: IntoIterator<Item = BatchMetadata>>(batches: I) -> RecentBatches {
        let mut recent = RecentBatches::default();
        for batch in batches {
            recent.push(batch);
        }
        recent
    }
}

impl<'a> IntoIterator for &'a RecentBatches {
    type Item = &'a BatchMetadata;
    type IntoIter = std::slice::Iter<'a, BatchMetadata>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// The entries an append would leave, by producer id (each once): usually one.
pub(crate) type ProducerUpdates = Vec<(i64, ProducerEntry)>;

/// A producer as `logd topics describe` and DescribeProducers show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerInfo {
    /// The producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub epoch: i16,
    /// Sequence of its last stored record.
    pub last_sequence: i32,
    /// Timestamp of its last stored batch (ms).
    pub last_timestamp: i64,
    /// Offset of its last stored record.
    pub last_offset: i64,
    /// The coordinator epoch of its last transaction marker, -1 before any.
    pub coordinator_epoch: i32,
    /// Where its open transaction starts, if one is open.
    pub txn_first_offset: Option<i64>,
}

/// What to do with an incoming batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Store it.
    Append,
    /// Already stored: answer with these offsets and store nothing.
    Duplicate(BatchMetadata),
}

/// The producer state of one partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Producers {
    entries: HashMap<i64, ProducerEntry>,
    /// The open transactions: first offset to producer id (each first offset is its own
    /// batch's, so unique), kept beside `entries` so the last stable offset is one lookup.
    open: BTreeMap<i64, i64>,
}

/// `sequence` advanced by `n`, wrapping past `i32::MAX` to 0 as Kafka's sequences do
/// (`DefaultRecordBatch.incrementSequence`): a batch starting at `first` with
/// `last_offset_delta` ends at `advance_sequence(first, last_offset_delta)`, and the next batch
/// must start at `advance_sequence(last, 1)`.
pub fn advance_sequence(sequence: i32, n: i32) -> i32 {
    ((i64::from(sequence) + i64::from(n)) % (i64::from(i32::MAX) + 1)) as i32
}

impl Producers {
    /// Rebuilds the state from a snapshot's entries.
    pub(crate) fn from_entries(entries: HashMap<i64, ProducerEntry>) -> Producers {
        let open = entries
            .iter()
            .filter_map(|(&id, e)| Some((e.txn_first_offset?, id)))
            .collect();
        Producers { entries, open }
    }

    /// The first offset of the oldest open transaction: records from it on are not stable.
    pub(crate) fn first_unstable_offset(&self) -> Option<i64> {
        self.open.keys().next().copied()
    }

    /// The open transactions as (first offset, producer id), oldest first.
    pub(crate) fn open_transactions(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.open.iter().map(|(&first, &id)| (first, id))
    }

    pub(crate) fn entries(&self) -> &HashMap<i64, ProducerEntry> {
        &self.entries
    }

    /// Producers tracked.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every producer, by id.
    pub(crate) fn infos(&self) -> Vec<ProducerInfo> {
        let mut infos: Vec<ProducerInfo> = self
            .entries
            .iter()
            .map(|(&producer_id, entry)| ProducerInfo {
                producer_id,
                epoch: entry.epoch,
                last_sequence: entry.last().map_or(-1, |b| b.last_sequence),
                last_timestamp: entry.last_timestamp,
                last_offset: entry.last_data_offset(),
                coordinator_epoch: entry.coordinator_epoch,
                txn_first_offset: entry.txn_first_offset,
            })
            .collect();
        infos.sort_unstable_by_key(|i| i.producer_id);
        infos
    }

    /// Checks each idempotent batch of one append in order (later batches of the same producer
    /// against the earlier ones), returning the entries as they would be after the append, or
    /// the first duplicate (Kafka answers a request that holds a duplicate as that duplicate).
    /// `headers` carry the base offsets the append will give them; `position` names the batch
    /// in errors.
    pub(crate) fn check_append(
        &self,
        headers: &[(usize, BatchHeader)],
    ) -> Result<Result<ProducerUpdates, BatchMetadata>> {
        let mut updated = ProducerUpdates::new();
        for (position, header) in headers {
            if header.producer_id < 0 {
                continue;
            }
            let id = header.producer_id;
            let earlier = updated.iter().position(|(i, _)| *i == id);
            let current = match earlier {
                Some(at) => Some(&updated[at].1),
                None => self.entries.get(&id),
            };
            match verdict(current, header, *position)? {
                Verdict::Duplicate(original) => return Ok(Err(original)),
                Verdict::Append => {
                    let entry = applied(current, header)?;
                    match earlier {
                        Some(at) => updated[at].1 = entry,
                        None => updated.push((id, entry)),
                    }
                }
            }
        }
        Ok(Ok(updated))
    }

    /// Takes in the entries [`Producers::check_append`] returned, once the append is written.
    pub(crate) fn commit(&mut self, updated: ProducerUpdates) {
        for (id, entry) in updated {
            self.set(id, entry);
        }
    }

    /// Stores `entry` as producer `id`'s, keeping the open transactions in step.
    fn set(&mut self, id: i64, entry: ProducerEntry) {
        let before = self.entries.insert(id, entry);
        if let Some(first) = before.and_then(|e| e.txn_first_offset) {
            self.open.remove(&first);
        }
        if let Some(first) = entry.txn_first_offset {
            self.open.insert(first, id);
        }
    }

    /// Applies a data batch read back from the log (rebuilding after a restart), without
    /// checks: the log is the truth, whatever it holds.
    pub(crate) fn replay(&mut self, header: &BatchHeader) {
        if header.producer_id < 0 {
            return;
        }
        let current = self.entries.get(&header.producer_id);
        let mut entry = applied_unchecked(current, header);
        if !header.is_transactional() {
            entry.txn_first_offset = None;
        }
        self.set(header.producer_id, entry);
    }

    /// Forgets producers whose last batch is `expiration_ms` or more older than `now_ms`
    /// (Kafka's `producer.id.expiration.ms`, measured like Kafka in batch timestamps). Returns
    /// how many were forgotten.
    /// A producer with an open transaction is kept (as Kafka keeps it): its transaction ends
    /// by a marker, and the transaction timeout makes sure one comes.
    pub(crate) fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| {
            e.txn_first_offset.is_some() || now_ms.saturating_sub(e.last_timestamp) < expiration_ms
        });
        before - self.entries.len()
    }

    /// Forgets producers none of whose batches is still in the log (retention moved its start
    /// past them), so memory follows what the log holds. Returns how many were forgotten.
    /// A producer with an open transaction is kept, as in [`Producers::expire`].
    pub(crate) fn retain_from(&mut self, log_start: i64) -> usize {
        let before = self.entries.len();
        self.entries
            .retain(|_, e| e.txn_first_offset.is_some() || e.last_data_offset() >= log_start);
        before - self.entries.len()
    }
}

/// Kafka's decision for one batch against its producer's current entry.
fn verdict(
    current: Option<&ProducerEntry>,
    header: &BatchHeader,
    position: usize,
) -> Result<Verdict> {
    if header.producer_epoch < 0 || header.base_sequence < 0 {
        return Err(Error::InvalidProducerFields {
            position,
            producer_id: header.producer_id,
            epoch: header.producer_epoch,
            sequence: header.base_sequence,
        });
    }
    let Some(entry) = current else {
        // No state: a new producer, or one whose state expired (KIP-360 accepts any sequence).
        return Ok(Verdict::Append);
    };
    let Some(newest) = entry.last() else {
        // Known by a marker alone: a fenced epoch is refused, and any other batch starts a
        // sequence at 0 as a new epoch does (Kafka's `checkSequence` with no batch).
        if header.producer_epoch < entry.epoch {
            return Err(Error::InvalidProducerEpoch {
                producer_id: header.producer_id,
                epoch: header.producer_epoch,
                current: entry.epoch,
            });
        }
        return match header.base_sequence {
            0 => Ok(Verdict::Append),
            received => Err(Error::OutOfOrderSequence {
                producer_id: header.producer_id,
                epoch: header.producer_epoch,
                expected: 0,
                received,
            }),
        };
    };
    let first = header.base_sequence;
    let last = advance_sequence(first, header.last_offset_delta);
    let out_of_order = |expected| Error::OutOfOrderSequence {
        producer_id: header.producer_id,
        epoch: header.producer_epoch,
        expected,
        received: first,
    };
    if header.producer_epoch < entry.epoch {
        return Err(Error::InvalidProducerEpoch {
            producer_id: header.producer_id,
            epoch: header.producer_epoch,
            current: entry.epoch,
        });
    }
    if header.producer_epoch > entry.epoch {
        return match first {
            0 => Ok(Verdict::Append),
            _ => Err(out_of_order(0)),
        };
    }
    if let Some(original) = entry
        .batches
        .as_slice()
        .iter()
        .find(|b| b.first_sequence == first && b.last_sequence == last)
    {
        return Ok(Verdict::Duplicate(*original));
    }
    let expected = advance_sequence(newest.last_sequence, 1);
    if first == expected {
        Ok(Verdict::Append)
    } else {
        Err(out_of_order(expected))
    }
}

/// The entry after `header`'s batch is stored, refusing a non-transactional batch inside an
/// open transaction.
fn applied(current: Option<&ProducerEntry>, header: &BatchHeader) -> Result<ProducerEntry> {
    let open = current.and_then(|e| e.txn_first_offset);
    if open.is_some() && !header.is_transactional() {
        return Err(Error::InvalidTxnState {
            producer_id: header.producer_id,
        });
    }
    Ok(applied_unchecked(current, header))
}

/// The entry after `header`'s batch is stored: a new epoch starts its batches afresh (an open
/// transaction stays open), a transactional batch opens a transaction when none is.
fn applied_unchecked(current: Option<&ProducerEntry>, header: &BatchHeader) -> ProducerEntry {
    let batch = BatchMetadata {
        first_sequence: header.base_sequence,
        last_sequence: advance_sequence(header.base_sequence, header.last_offset_delta),
        first_offset: header.base_offset,
        last_offset: header.base_offset + i64::from(header.last_offset_delta),
        max_timestamp: header.max_timestamp,
    };
    let mut entry = match current {
        Some(entry) if entry.epoch == header.producer_epoch => {
            let mut entry = *entry;
            entry.batches.push(batch);
            entry
        }
        _ => ProducerEntry {
            epoch: header.producer_epoch,
            batches: RecentBatches::from_iter([batch]),
            last_timestamp: -1,
            coordinator_epoch: current.map_or(-1, |e| e.coordinator_epoch),
            txn_first_offset: current.and_then(|e| e.txn_first_offset),
        },
    };
    entry.last_timestamp = header.max_timestamp;
    if header.is_transactional() && entry.txn_first_offset.is_none() {
        entry.txn_first_offset = Some(header.base_offset);
    }
    entry
}
