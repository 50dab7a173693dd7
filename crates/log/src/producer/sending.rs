//! Appending closed batches to the engine: a partition's queue in order under its appender,
//! numbered under the idempotent producer's id and epoch (bumped after a failed append), each
//! outcome left in its batch's slot; and the linger thread, which closes batches older than
//! `linger`.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use logd_storage::advance_sequence;

use crate::error::Result;

use super::batches::{Appender, Identity, PartitionBatches, Pending};
use super::shared::Shared;
use super::staging::prefetch;

impl Shared {
    /// Appends a partition's queued batches in order, holding its appender. Whoever closes a
    /// batch drains its partition afterwards, so one look at the queue is enough: a batch
    /// queued meanwhile is its closer's to append.
    pub(super) fn drain(&self, partition: &PartitionBatches) {
        let mut appender = partition.appender.lock();
        let queued = std::mem::take(&mut partition.batches.lock().ready);
        for batch in queued {
            self.append(batch, &mut appender);
        }
    }

    /// The producer id and epoch, allocating the id at the first use.
    pub(super) fn identity(&self) -> Result<Option<Identity>> {
        if !self.config.idempotence {
            return Ok(None);
        }
        let mut identity = self.identity.lock();
        if identity.is_none() {
            *identity = Some(Identity {
                id: self.log.init_producer_id()?,
                epoch: 0,
            });
        }
        Ok(*identity)
    }

    /// After a failed append it is unknown whether the batch landed: later batches start a new
    /// epoch at sequence 0 (Kafka's client bumps the epoch the same way, KIP-360), and a new
    /// id once the epochs run out.
    pub(super) fn bump_epoch(&self) {
        let mut identity = self.identity.lock();
        *identity = identity.and_then(|i| {
            (i.epoch < i16::MAX).then_some(Identity {
                id: i.id,
                epoch: i.epoch + 1,
            })
        });
    }

    /// Appends one batch (with the partition's next sequence when idempotent) and resolves its
    /// deliveries; a failure reaches them and the next `flush`.
    pub(super) fn append(&self, batch: Pending, appender: &mut Appender) {
        let (topic, partition) = (&batch.slot.topic, batch.slot.partition);
        let records = batch.builder.len() as i32;
        let result = self.identity().and_then(|identity| {
            let builder = match identity {
                Some(Identity { id, epoch }) => {
                    if appender.epoch != epoch {
                        appender.epoch = epoch;
                        appender.next_sequence = 0;
                    }
                    batch.builder.producer(id, epoch, appender.next_sequence)
                }
                None => batch.builder,
            };
            let mut bytes = builder.build(0)?;
            let appended = self.log.append(topic, partition, &mut bytes);
            self.buffers.give_back(bytes);
            appended
        });
        match &result {
            Ok(_) => appender.next_sequence = advance_sequence(appender.next_sequence, records),
            Err(_) => self.bump_epoch(),
        }
        self.partitioner.batch_complete(
            partition,
            self.log.partition_count(topic).unwrap_or(1).max(1),
        );
        let outcome = result.map(|info| info.base_offset.0).map_err(Arc::new);
        if let Err(e) = &outcome {
            self.failed.lock().get_or_insert_with(|| e.clone());
        }
        *batch.slot.outcome.lock() = Some(outcome);
        batch.slot.done.notify_all();
    }
}

/// How many due batches ahead the linger thread prefetches partitions' state.
const LINGER_PREFETCH_AHEAD: usize = 4;

/// Appends batches older than `linger` until the producer is dropped.
pub(super) fn linger_loop(shared: Weak<Shared>) {
    loop {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let linger = shared.config.linger;
        // One short hold of the queue a round; each due partition is then closed and appended
        // under its own locks, so sends to other partitions go on meanwhile.
        let staged_due = shared.place_lingering(linger);
        let (due, next_due) = shared.opened.lock().take_due(linger);
        for (at, opened) in due.iter().enumerate() {
            // The partitions a few entries on, asked for now: each of their misses overlaps
            // with this entry's append instead of stalling the loop when it gets there.
            if let Some(ahead) = due.get(at + LINGER_PREFETCH_AHEAD) {
                prefetch(Arc::as_ptr(&ahead.partition), size_of::<PartitionBatches>());
            }
            if opened.partition.batches.lock().close_if_open(opened.id) {
                shared.drain(&opened.partition);
            }
        }
        let mut closing = shared.closing.lock();
        if *closing {
            return;
        }
        // Until the oldest open batch is due; with none open, a batch opened meanwhile waits at
        // most half a linger longer than it should.
        let pause = next_due
            .into_iter()
            .chain(staged_due)
            .min()
            .map_or(linger / 2, |due| {
                due.saturating_duration_since(Instant::now())
            });
        shared
            .wake
            .wait_for(&mut closing, pause.max(Duration::from_millis(1)));
        if *closing {
            return;
        }
    }
}
