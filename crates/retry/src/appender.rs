//! [`IdempotentAppender`]: appends the retry layer's copies (retry hops, dead letters, replays)
//! as one idempotent producer, so a batch appended twice (a transport retry, or a hop completed
//! again after a crash, see `journal.rs`) is stored once: a producer id from the log, an epoch,
//! and per partition the next sequence.

use std::collections::HashMap;

use crate::error::Result;
use crate::message::OutRecord;
use crate::transport::{Stamp, Transport, encode_record};

/// The producer identity and sequences of one writer over a transport.
#[derive(Debug, Default)]
pub struct IdempotentAppender {
    /// Producer id and epoch, taken from the transport at the first append.
    identity: Option<(i64, i16)>,
    /// Next sequence per (topic, partition) under the current epoch.
    sequences: HashMap<(String, u32), i32>,
}

impl IdempotentAppender {
    /// An appender that asks the transport for a producer id at its first append.
    pub fn new() -> IdempotentAppender {
        IdempotentAppender::default()
    }

    /// Continues as `producer_id` in the epoch after `epoch`, every sequence from 0: what a
    /// restarted writer does once its unfinished batch is settled (a new epoch is always
    /// accepted at sequence 0). Past the last epoch it takes a new id instead.
    pub fn resume_after(producer_id: i64, epoch: i16) -> IdempotentAppender {
        IdempotentAppender {
            identity: epoch.checked_add(1).map(|next| (producer_id, next)),
            sequences: HashMap::new(),
        }
    }

    /// `record` as a batch stamped with this writer's id, epoch and the partition's next
    /// sequence (not yet taken: [`IdempotentAppender::append`] takes it).
    pub fn stamp(
        &mut self,
        transport: &mut dyn Transport,
        topic: &str,
        partition: u32,
        record: &OutRecord,
    ) -> Result<Vec<u8>> {
        let (producer_id, epoch) = match self.identity {
            Some(identity) => identity,
            None => {
                let identity = (transport.init_producer_id()?, 0);
                self.identity = Some(identity);
                identity
            }
        };
        let sequence = self
            .sequences
            .get(&(topic.to_owned(), partition))
            .copied()
            .unwrap_or(0);
        encode_record(
            record,
            Stamp {
                producer_id,
                epoch,
                sequence,
                transactional: false,
            },
        )
    }

    /// Appends a batch [`IdempotentAppender::stamp`] made for this partition; returns its
    /// offset. After a failure it is unknown whether the batch landed, so the writer moves to a
    /// new epoch (its sequences restart at 0), as Kafka's clients do.
    pub fn append(
        &mut self,
        transport: &mut dyn Transport,
        topic: &str,
        partition: u32,
        batch: Vec<u8>,
    ) -> Result<i64> {
        match transport.append(topic, partition, batch) {
            Ok(offset) => {
                let next = self
                    .sequences
                    .entry((topic.to_owned(), partition))
                    .or_insert(0);
                // One record per batch.
                *next = logd_storage::advance_sequence(*next, 1);
                Ok(offset)
            }
            Err(e) => {
                *self = match self.identity {
                    Some((id, epoch)) => IdempotentAppender::resume_after(id, epoch),
                    None => IdempotentAppender::new(),
                };
                Err(e)
            }
        }
    }

    /// Stamps and appends `record`.
    pub fn send(
        &mut self,
        transport: &mut dyn Transport,
        topic: &str,
        partition: u32,
        record: &OutRecord,
    ) -> Result<i64> {
        let batch = self.stamp(transport, topic, partition, record)?;
        self.append(transport, topic, partition, batch)
    }
}
