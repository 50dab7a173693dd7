//! What a read_committed reader keeps, as Kafka's consumer decides it (`CompletedFetch`):
//! given the aborted transactions a fetch was told of, a transactional batch of a producer
//! whose aborted transaction has begun by the batch's end is skipped until that producer's
//! abort marker; control batches are never records.

use std::collections::HashSet;

use super::{AbortedTxn, Marker};
use crate::batch::BatchRef;

/// Decides batch by batch, in offset order, which batches a read_committed reader keeps.
#[derive(Debug, Clone)]
pub struct ReadCommitted {
    /// Not yet begun, latest first (so the next to begin pops off the end).
    pending: Vec<AbortedTxn>,
    /// Producers inside an aborted transaction.
    aborting: HashSet<i64>,
}

impl ReadCommitted {
    /// A filter for a read told of `aborted` (in any order).
    pub fn new(mut aborted: Vec<AbortedTxn>) -> ReadCommitted {
        aborted.sort_unstable_by_key(|a| std::cmp::Reverse(a.first_offset));
        ReadCommitted {
            pending: aborted,
            aborting: HashSet::new(),
        }
    }

    /// Whether the reader keeps `batch`'s records (batches must come in offset order).
    pub fn keep(&mut self, batch: &BatchRef<'_>) -> bool {
        let header = &batch.header;
        if header.producer_id >= 0 {
            while self
                .pending
                .last()
                .is_some_and(|a| a.first_offset <= header.last_offset())
            {
                let begun = self.pending.pop().expect("checked above");
                self.aborting.insert(begun.producer_id);
            }
            if header.is_control() {
                if Marker::parse(batch).is_some_and(|m| !m.commit) {
                    self.aborting.remove(&header.producer_id);
                }
            } else if header.is_transactional() && self.aborting.contains(&header.producer_id) {
                return false;
            }
        }
        !header.is_control()
    }
}
