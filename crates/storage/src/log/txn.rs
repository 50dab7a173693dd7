//! Transactions in one partition: the markers a coordinator writes to end them, the last
//! stable offset (LSO) a read_committed reader stops at, and the aborted transactions it
//! skips. A producer's transactional batches open its transaction (`append`); only
//! [`PartitionLog::append_marker`] closes one, so the LSO moves only by a marker.

use std::sync::atomic::Ordering;

use super::PartitionLog;
use super::state::LogState;
use crate::Offset;
use crate::batch::{self, BatchHeader};
use crate::error::Result;
use crate::producer::{AbortedTxn, Marker};

/// A transaction open in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenTxn {
    /// The producer.
    pub producer_id: i64,
    /// Offset of its first batch in the partition.
    pub first_offset: Offset,
}

impl PartitionLog {
    /// Appends a commit or abort marker for `marker.producer_id`'s transaction (a control
    /// batch stamped `now_ms`), closing it; an abort is recorded in the aborted-transaction
    /// index. A marker for a producer with no open transaction here is written all the same,
    /// as Kafka writes it, and ends nothing. Refused with
    /// [`crate::Error::InvalidProducerEpoch`] for an epoch older than the producer's and
    /// [`crate::Error::TransactionCoordinatorFenced`] for a stale coordinator epoch. Returns
    /// the marker's offset once it is as durable as the fsync policy promises.
    pub fn append_marker(&self, marker: &Marker, now_ms: i64) -> Result<Offset> {
        let offset = self.append_marker_deferred(marker, now_ms)?;
        self.wait_durable(offset.0 + 1)?;
        Ok(offset)
    }

    /// [`PartitionLog::append_marker`] without waiting for the fsync policy: the caller makes
    /// it durable with [`crate::await_durable`], so one transaction's markers in many
    /// partitions wait for their fsyncs together. Under `fsync = always` readers see it only
    /// once it is durable, as any record.
    pub fn append_marker_deferred(&self, marker: &Marker, now_ms: i64) -> Result<Offset> {
        let mut bytes = marker.batch(now_ms);
        let mut header = BatchHeader::parse(&bytes, 0)?;
        let offset = {
            let mut state = self.state.lock();
            self.check_writable()?;
            let offset = state.end_offset;
            header.base_offset = offset;
            let (entry, completed) = state.producers.check_marker(marker, offset, now_ms)?;
            batch::set_base_offset(&mut bytes, offset);
            let aborted = completed.and_then(|c| state.producers.aborted_entry(&c));
            let updates = vec![(marker.producer_id, entry)];
            let written =
                self.write_locked(&mut state, &bytes, &[(0, header)], offset, updates, aborted);
            if let Err(e) = written {
                drop(state);
                self.poison();
                return Err(e);
            }
            self.publish_unstable(&state);
            self.end_offset.store(offset + 1, Ordering::Release);
            offset
        };
        Ok(Offset(offset))
    }

    /// Publishes the oldest open transaction's start after the state changed.
    pub(super) fn publish_unstable(&self, state: &LogState) {
        let first = state.producers.first_unstable_offset().unwrap_or(i64::MAX);
        self.first_unstable.store(first, Ordering::Release);
    }

    /// The last stable offset: read_committed readers see records below it. The start of the
    /// oldest open transaction, or the high watermark when that is lower (or none is open);
    /// never below the log start.
    pub fn last_stable_offset(&self) -> Offset {
        let high_watermark = self.high_watermark().0;
        let unstable = self.first_unstable.load(Ordering::Acquire);
        Offset(unstable.max(self.log_start_offset().0).min(high_watermark))
    }

    /// The aborted transactions a read_committed fetch of `from..upper` must be told of:
    /// those whose marker is at or after `from` and whose first batch is before `upper`, in
    /// marker order (Kafka's `collectAbortedTransactions`).
    pub fn aborted_transactions(&self, from: Offset, upper: Offset) -> Vec<AbortedTxn> {
        let state = self.state.lock();
        let mut found = Vec::new();
        let first = state.segment_for(from.0.max(state.log_start));
        for segment in &state.segments[first..] {
            if segment.txn_index.collect(from.0, upper.0, &mut found) {
                break;
            }
        }
        found
    }

    /// The transactions open in this partition, oldest first.
    pub fn open_transactions(&self) -> Vec<OpenTxn> {
        self.state
            .lock()
            .producers
            .open_transactions()
            .map(|(first, producer_id)| OpenTxn {
                producer_id,
                first_offset: Offset(first),
            })
            .collect()
    }
}
