//! [`Delivery`]: the pending result of one send.

use std::sync::Arc;

use crate::error::{Error, Result};

use super::record::RecordMetadata;
use super::staging::Placements;

/// The pending result of one send. Dropping it is fine: the record is still sent, a failure
/// is reported by the next [`Producer::flush`](super::Producer::flush), and a record whose delivery is gone before it
/// is placed costs a little less.
#[derive(Debug)]
pub struct Delivery {
    /// The record's chunk, which says which batch the record joined once it is placed.
    pub(super) placements: Arc<Placements>,
    /// The record's index in its chunk.
    pub(super) index: usize,
    pub(super) timestamp: i64,
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
