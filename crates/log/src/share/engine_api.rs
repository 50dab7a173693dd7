//! `Log`'s share-group calls: acquire records of a partition for a member, acknowledge them,
//! give back what a leaving member holds, and describe a group's share-partitions, each under
//! the group's configs (lock duration, delivery limit, record locks, `share.auto.offset.reset`,
//! logd's redelivery backoff). The wire and the embedded [`super::ShareConsumer`] both call
//! these.

use crate::engine::Log;
use crate::error::{Error, Result};
use crate::group_configs::{GroupConfigs, duration_ms};

use super::partition::{AcknowledgeType, AcquiredRecords, Archived, ShareLimits};
use super::store::SharePartitionState;

/// The limits group `group` works under, from its configs.
pub(crate) fn limits(configs: &GroupConfigs, group: &str) -> ShareLimits {
    let int = |name| configs.int(group, name);
    ShareLimits {
        lock_duration_ms: int("share.record.lock.duration.ms"),
        delivery_count_limit: u16::try_from(int("share.delivery.count.limit")).unwrap_or(u16::MAX),
        max_record_locks: u32::try_from(int("share.partition.max.record.locks"))
            .unwrap_or(u32::MAX),
        backoff_ms: int("logd.share.redelivery.backoff.ms"),
        backoff_max_ms: int("logd.share.redelivery.backoff.max.ms"),
    }
}

impl Log {
    /// Acquires for `member` of share group `group` at most `max_records` records of
    /// `topic`-`partition` (available ones first, then new ones up to the high watermark), each
    /// locked for the group's `share.record.lock.duration.ms`. The acquisition is durable
    /// before this returns. Records whose locks expired on the way are given back first; those
    /// archived then (at the delivery limit) come back as the second list.
    pub fn share_acquire(
        &self,
        group: &str,
        member: &str,
        topic: &str,
        partition: u32,
        max_records: usize,
    ) -> Result<(Vec<AcquiredRecords>, Vec<Archived>)> {
        let log = self.partition(topic, partition)?;
        let configs = &self.shared.group_configs;
        let limits = limits(configs, group);
        let now = self.clock().now_ms();
        let key = (group.to_owned(), topic.to_owned(), partition);
        let start = || {
            // Where a share group begins reading a partition: `share.auto.offset.reset`.
            let reset = configs.value(group, "share.auto.offset.reset");
            Ok(match reset.as_str() {
                "earliest" => log.log_start_offset().0,
                "latest" => log.high_watermark().0,
                other => {
                    let ago = other
                        .strip_prefix("by_duration:")
                        .and_then(duration_ms)
                        .unwrap_or(0);
                    let from = now.saturating_sub(i64::try_from(ago).unwrap_or(i64::MAX));
                    log.offset_for_timestamp(from)?
                        .map_or(log.high_watermark().0, |o| o.0)
                }
            })
        };
        self.shared.shares.acquire(
            key,
            member,
            log.high_watermark().0,
            max_records,
            &limits,
            now,
            start,
        )
    }

    /// Applies `member`'s acknowledgements of `topic`-`partition` in share group `group`: per
    /// batch its first and last offset and one type for all or one per offset. All or none:
    /// a record the member does not hold is [`Error::InvalidRecordState`]. Durable before this
    /// returns; returns the records archived unaccepted (rejected, or at the delivery limit).
    pub fn share_acknowledge(
        &self,
        group: &str,
        member: &str,
        topic: &str,
        partition: u32,
        batches: &[(i64, i64, Vec<AcknowledgeType>)],
    ) -> Result<Vec<Archived>> {
        let limits = limits(&self.shared.group_configs, group);
        let key = (group.to_owned(), topic.to_owned(), partition);
        self.shared
            .shares
            .acknowledge(&key, member, batches, &limits, self.clock().now_ms())
    }

    /// Gives back every record `member` of share group `group` holds, as when it leaves: they
    /// are available to the other members at once (or after logd's backoff). Returns those
    /// archived at the delivery limit.
    pub fn share_leave(&self, group: &str, member: &str) -> Result<Vec<Archived>> {
        if group.is_empty() {
            return Err(Error::NoGroup);
        }
        let limits = limits(&self.shared.group_configs, group);
        self.shared
            .shares
            .release_member(group, member, &limits, self.clock().now_ms())
    }

    /// The share-partitions of share group `group`: start and end offsets and records in
    /// each state between them.
    pub fn share_partitions(&self, group: &str) -> Vec<SharePartitionState> {
        self.shared.shares.describe(group)
    }
}
