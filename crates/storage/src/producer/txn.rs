//! Transaction markers: the control batch a coordinator writes to end a producer's
//! transaction in a partition (Kafka's `EndTransactionMarker`), and what writing one does to
//! the producer state (Kafka's `ProducerAppendInfo.appendEndTxnMarker`):
//! - a marker from an epoch older than the producer's is fenced ([`Error::InvalidProducerEpoch`]);
//! - one from a coordinator epoch older than the last marker's is a stale coordinator
//!   ([`Error::TransactionCoordinatorFenced`]);
//! - otherwise it closes the open transaction, if any (a marker for a producer that wrote
//!   nothing here completes nothing), and moves the producer to the marker's epoch.
//!
//! ```text
//! control batch: attributes transactional | control, producer id and epoch, sequence -1,
//! one record:    key   = version i16 (0), type i16 (0 abort, 1 commit)
//!                value = version i16 (0), coordinator epoch i32
//! ```

use super::{ProducerEntry, Producers, RecentBatches};
use crate::batch::{BatchBuilder, BatchRef, Compression};
use crate::error::{Error, Result};

/// Control record type of an abort marker.
const ABORT: i16 = 0;
/// Control record type of a commit marker.
const COMMIT: i16 = 1;
/// Shortest marker value: Kafka's version 0 is 6 bytes; later versions add tagged fields
/// after them, which a marker's meaning does not need.
const MIN_VALUE_LEN: usize = 6;

/// A commit or abort marker for one producer's transaction in one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// The producer whose transaction ends.
    pub producer_id: i64,
    /// Its epoch, as the coordinator knows it.
    pub producer_epoch: i16,
    /// The coordinator's epoch: a marker from an older one is refused.
    pub coordinator_epoch: i32,
    /// Commit (true) or abort (false).
    pub commit: bool,
}

/// A transaction a marker ended in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// The producer.
    pub producer_id: i64,
    /// Offset of its first batch.
    pub first_offset: i64,
    /// Offset of the marker.
    pub last_offset: i64,
    /// Aborted (true) or committed.
    pub aborted: bool,
}

/// An aborted transaction, as the aborted-transaction index keeps it and a read_committed
/// fetch is told of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer.
    pub producer_id: i64,
    /// Offset of its first batch: a read_committed reader skips this producer's
    /// transactional batches from here to the marker.
    pub first_offset: i64,
    /// Offset of its abort marker.
    pub last_offset: i64,
    /// The partition's last stable offset once the marker was written.
    pub last_stable_offset: i64,
}

impl Marker {
    /// The marker as a control batch stamped `timestamp` (its base offset is the log's to
    /// set).
    pub fn batch(&self, timestamp: i64) -> Vec<u8> {
        let kind = if self.commit { COMMIT } else { ABORT };
        let mut key = [0u8; 4];
        key[2..].copy_from_slice(&kind.to_be_bytes());
        let mut value = [0u8; 6];
        value[2..].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        let mut builder = BatchBuilder::new(Compression::None)
            .producer(self.producer_id, self.producer_epoch, -1)
            .control();
        builder.push(timestamp, Some(&key), Some(&value), &[]);
        builder
            .build(0)
            .expect("an uncompressed batch always builds")
    }

    /// The marker a control batch holds, or `None` for a control record that is not a
    /// transaction marker (Kafka's other control types) or not one this log understands.
    pub fn parse(batch: &BatchRef<'_>) -> Option<Marker> {
        let header = &batch.header;
        if !header.is_control() {
            return None;
        }
        // Control batches are never compressed; the limit only bounds a damaged one.
        let records = batch.records(1 << 10).ok()?;
        let record = records.iter().next()?.ok()?;
        let key = record.key?;
        let value = record.value?;
        if key.len() != 4 || key[..2] != [0, 0] || value.len() < MIN_VALUE_LEN {
            return None;
        }
        let commit = match i16::from_be_bytes([key[2], key[3]]) {
            COMMIT => true,
            ABORT => false,
            _ => return None,
        };
        Some(Marker {
            producer_id: header.producer_id,
            producer_epoch: header.producer_epoch,
            coordinator_epoch: i32::from_be_bytes(value[2..6].try_into().ok()?),
            commit,
        })
    }
}

impl Producers {
    /// Checks `marker` at `offset` against its producer's state; returns the producer's entry
    /// as it would be after it and the transaction it ends, if one is open.
    pub(crate) fn check_marker(
        &self,
        marker: &Marker,
        offset: i64,
        timestamp: i64,
    ) -> Result<(ProducerEntry, Option<CompletedTxn>)> {
        if let Some(entry) = self.entries.get(&marker.producer_id) {
            if marker.producer_epoch < entry.epoch {
                return Err(Error::InvalidProducerEpoch {
                    producer_id: marker.producer_id,
                    epoch: marker.producer_epoch,
                    current: entry.epoch,
                });
            }
            if marker.coordinator_epoch < entry.coordinator_epoch {
                return Err(Error::TransactionCoordinatorFenced {
                    producer_id: marker.producer_id,
                    epoch: marker.coordinator_epoch,
                    current: entry.coordinator_epoch,
                });
            }
        }
        Ok(self.after_marker(marker, offset, timestamp))
    }

    /// Applies a marker read back from the log, without checks (the log is the truth);
    /// returns the transaction it ended.
    pub(crate) fn replay_marker(
        &mut self,
        marker: &Marker,
        offset: i64,
        timestamp: i64,
    ) -> Option<CompletedTxn> {
        let (entry, completed) = self.after_marker(marker, offset, timestamp);
        self.set(marker.producer_id, entry);
        completed
    }

    /// The index entry for `completed` if it was aborted: its last stable offset is the one
    /// once the marker is in (the oldest other open transaction's start, or the offset after
    /// the marker), whether or not the state took the marker in yet.
    pub(crate) fn aborted_entry(&self, completed: &CompletedTxn) -> Option<AbortedTxn> {
        let after_marker = completed.last_offset + 1;
        let other = self
            .open
            .keys()
            .find(|&&first| first != completed.first_offset);
        completed.aborted.then(|| AbortedTxn {
            producer_id: completed.producer_id,
            first_offset: completed.first_offset,
            last_offset: completed.last_offset,
            last_stable_offset: other.map_or(after_marker, |&f| f.min(after_marker)),
        })
    }

    fn after_marker(
        &self,
        marker: &Marker,
        offset: i64,
        timestamp: i64,
    ) -> (ProducerEntry, Option<CompletedTxn>) {
        let current = self.entries.get(&marker.producer_id);
        let completed = current
            .and_then(|e| e.txn_first_offset)
            .map(|first_offset| CompletedTxn {
                producer_id: marker.producer_id,
                first_offset,
                last_offset: offset,
                aborted: !marker.commit,
            });
        // A new epoch forgets the old epoch's batches (Kafka's `maybeUpdateProducerEpoch`).
        let batches = match current {
            Some(e) if e.epoch == marker.producer_epoch => e.batches,
            _ => RecentBatches::default(),
        };
        let entry = ProducerEntry {
            epoch: marker.producer_epoch,
            batches,
            last_timestamp: timestamp,
            coordinator_epoch: marker.coordinator_epoch,
            txn_first_offset: None,
        };
        (entry, completed)
    }
}
