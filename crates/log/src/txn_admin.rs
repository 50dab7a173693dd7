//! The engine's transactional calls (the Kafka APIs' meaning, transaction version 1): the
//! coordinator (`txn/`) decides and logs, and this carries its decisions out: a commit or
//! abort marker in every partition of the transaction, then (for a commit) its offsets in the
//! offset store, then the completion logged, the id's lock held throughout. A crash or a
//! failed write in between leaves the decision logged as `PrepareCommit`/`PrepareAbort`,
//! finished on the next open or by the next housekeeping round; a marker written twice for
//! one transaction ends nothing the second time.

use std::collections::BTreeSet;

use logd_offsets::OffsetCommit;
use logd_storage::{Marker, Offset};

use crate::engine::Log;
use crate::error::{Error, Result};
use crate::txn::{Finishing, Init, TxnDescription};

impl Log {
    /// InitProducerId for `transactional_id`: its producer id and a new epoch, fencing any
    /// instance before it (its open transaction is aborted first). `timeout_ms` is the
    /// producer's `transaction.timeout.ms`, at most [`crate::Config::transaction_max_timeout_ms`];
    /// `expected` the producer id and epoch a client recovering from an error names (KIP-360).
    pub fn init_transactional_producer(
        &self,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16)> {
        let init = self.shared.txns.init(
            transactional_id,
            timeout_ms,
            self.shared.config.transaction_max_timeout_ms,
            expected,
            self.shared.clock.now_ms(),
            || self.shared.producer_ids.allocate(),
        )?;
        match init {
            Init::Ready(producer_id, epoch) => Ok((producer_id, epoch)),
            Init::AbortFirst(finishing) => {
                let ready = (finishing.done.producer_id, finishing.done.epoch);
                self.finish(finishing)?;
                Ok(ready)
            }
        }
    }

    /// AddPartitionsToTxn: `partitions` (which must exist) join the producer's transaction,
    /// opening it if none is open.
    pub fn add_partitions_to_txn(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, u32)],
    ) -> Result<()> {
        for (topic, partition) in partitions {
            self.partition(topic, *partition)?;
        }
        let now = self.shared.clock.now_ms();
        self.shared
            .txns
            .add_partitions(transactional_id, producer_id, epoch, partitions, now)
    }

    /// AddOffsetsToTxn: the producer's transaction will commit offsets for `group`.
    pub fn add_offsets_to_txn(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
    ) -> Result<()> {
        let now = self.shared.clock.now_ms();
        self.shared
            .txns
            .add_group(transactional_id, producer_id, epoch, group, now)
    }

    /// TxnOffsetCommit: `offsets` for `group` are committed when the transaction commits and
    /// dropped if it aborts; until then a stable OffsetFetch of those partitions waits.
    pub fn txn_offset_commit(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        offsets: &[OffsetCommit],
    ) -> Result<()> {
        self.shared.offsets.check(group, offsets)?;
        let now = self.shared.clock.now_ms();
        self.shared
            .txns
            .stage_offsets(transactional_id, producer_id, epoch, group, offsets, now)
    }

    /// EndTxn: commits or aborts the producer's transaction, returning once every marker
    /// (and, for a commit, every offset) is durable. A retry of an end already done writes
    /// nothing.
    pub fn end_txn(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<()> {
        let now = self.shared.clock.now_ms();
        match self
            .shared
            .txns
            .end(transactional_id, producer_id, epoch, commit, now)?
        {
            Some(finishing) => self.finish(finishing),
            None => Ok(()),
        }
    }

    /// Aborts `transactional_id`'s open transaction now, fencing its producer (a hanging
    /// transaction, as `kafka-transactions.sh abort`). Nothing open is not an error.
    pub fn abort_transaction(&self, transactional_id: &str) -> Result<()> {
        let now = self.shared.clock.now_ms();
        let done = self.shared.txns.abort_now(transactional_id, now, || {
            self.shared.producer_ids.allocate()
        })?;
        match done {
            Some(finishing) => self.finish(finishing),
            None => Ok(()),
        }
    }

    /// Writes `marker` to one partition (Kafka's WriteTxnMarkers): how an operator ends a
    /// transaction open there that no transactional id accounts for (KIP-664's hanging
    /// transaction, `kafka-transactions.sh abort`). Returns the marker's offset.
    pub fn write_marker(&self, topic: &str, partition: u32, marker: &Marker) -> Result<Offset> {
        let log = self.partition(topic, partition)?;
        let offset = log.append_marker(marker, self.shared.clock.now_ms())?;
        self.shared.appends.notify();
        Ok(offset)
    }

    /// Aborts (fencing their producers) the transactions open longer than their timeout,
    /// and forgets transactional ids idle past `transactional.id.expiration.ms`. Returns how
    /// many were aborted. Housekeeping runs it every second. Each id is decided under its own
    /// lock, one at a time; an abort that fails is the next round's to finish.
    pub fn abort_expired_transactions(&self) -> Result<usize> {
        let now = self.shared.clock.now_ms();
        let txns = &self.shared.txns;
        let mut aborted = 0;
        let mut failed = None;
        for id in txns.timed_out(now) {
            let decided = txns.abort_timed_out(&id, now, || self.shared.producer_ids.allocate());
            let finishing = match decided {
                Ok(Some(finishing)) => finishing,
                Ok(None) => continue,
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            tracing::info!(
                transactional_id = id,
                producer_id = finishing.done.producer_id,
                "transaction timed out: aborted"
            );
            match self.finish(finishing) {
                Ok(()) => aborted += 1,
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        let expiration = self.shared.config.transactional_id_expiration_ms;
        txns.forget_idle(now, expiration)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(aborted),
        }
    }

    /// Every transactional id this engine knows, by id.
    pub fn transactions(&self) -> Vec<TxnDescription> {
        self.shared.txns.describe_all()
    }

    /// The partitions of `group` whose offsets an open transaction commits: Kafka answers a
    /// stable OffsetFetch of them UNSTABLE_OFFSET_COMMIT until it ends.
    pub fn pending_transactional_offsets(&self, group: &str) -> BTreeSet<(String, i32)> {
        self.shared.txns.pending_offsets(group)
    }

    /// The longest transaction timeout accepted.
    pub fn transaction_max_timeout_ms(&self) -> i32 {
        self.shared.config.transaction_max_timeout_ms
    }

    /// Finishes the transactions whose markers a crash or a failed write left half written
    /// (on open, and each housekeeping round), skipping any whose finisher is at work; returns
    /// how many it finished, and the first failure after trying them all.
    pub(crate) fn finish_interrupted_transactions(&self) -> Result<usize> {
        let mut finished = 0;
        let mut failed = None;
        for id in self.shared.txns.preparing() {
            let Some(finishing) = self.shared.txns.resume(&id) else {
                continue;
            };
            tracing::info!(
                transactional_id = id,
                commit = finishing.done.commit,
                "finishing a transaction an earlier attempt or stop interrupted"
            );
            match self.finish(finishing) {
                Ok(()) => finished += 1,
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(finished),
        }
    }

    /// Carries out `finishing`: a marker in each partition (one deleted since is skipped; a
    /// partition whose producer state refuses the marker as stale is logged and skipped, as
    /// Kafka's marker writer does), the offsets for a commit, then the completion logged.
    fn finish(&self, finishing: Finishing<'_>) -> Result<()> {
        let done = &finishing.done;
        let now = self.shared.clock.now_ms();
        let marker = Marker {
            producer_id: done.producer_id,
            producer_epoch: done.epoch,
            coordinator_epoch: 0,
            commit: done.commit,
        };
        // Every marker is written first, then all wait for their fsyncs together.
        let mut written = Vec::with_capacity(done.partitions.len());
        for (topic, partition) in &done.partitions {
            let log = match self.partition(topic, *partition) {
                Ok(log) => log,
                Err(Error::UnknownTopic(_) | Error::UnknownPartition { .. }) => continue,
                Err(e) => return Err(e),
            };
            match log.append_marker_deferred(&marker, now) {
                Ok(offset) => written.push((log, offset.0 + 1)),
                Err(
                    e @ (logd_storage::Error::InvalidProducerEpoch { .. }
                    | logd_storage::Error::TransactionCoordinatorFenced { .. }),
                ) => {
                    tracing::warn!(
                        transactional_id = done.id,
                        topic,
                        partition,
                        error = %e,
                        "marker refused as stale: skipped"
                    );
                }
                Err(e) => return Err(e.into()),
            }
        }
        let waits: Vec<_> = written.iter().map(|(log, end)| (&**log, *end)).collect();
        logd_storage::await_durable(&waits)?;
        if !done.partitions.is_empty() {
            self.shared.appends.notify();
        }
        for (group, offsets) in &done.offsets {
            if !offsets.is_empty() {
                self.shared.offsets.commit(group, offsets, now)?;
            }
        }
        self.shared.txns.completed(finishing, now)
    }
}
