//! `Log`'s share-group calls: acquire records of a partition for a member, acknowledge them,
//! give back what a leaving member holds, and describe a group's share-partitions, each under
//! the group's configs (lock duration, delivery limit, record locks, `share.auto.offset.reset`,
//! logd's redelivery backoff). The wire and the embedded [`super::ShareConsumer`] both call
//! these.

use crate::engine::Log;
use crate::error::{Error, Result};
use crate::groups::configs::{GroupConfigs, duration_ms};
use crate::groups::protocol::GroupProtocol;

use std::collections::BTreeMap;

use super::group::{ShareHeartbeat, ShareMemberDescription};
use super::partition::{
    AcknowledgeType, AcquireMode, AcquiredRecords, Archived, BackoffJitter, ShareLimits,
};
use super::persist::RejectReason;
use super::store::{ShareCounters, SharePartitionState, Window};
use crate::isolation::IsolationLevel;

/// Bytes an embedded read_committed acquisition reads to learn which batches are aborted.
const COMMITTED_READ_BYTES: usize = 1 << 20;

/// Group `group`'s `share.isolation.level`.
fn isolation(configs: &GroupConfigs, group: &str) -> IsolationLevel {
    match configs.value(group, "share.isolation.level").as_str() {
        "read_committed" => IsolationLevel::ReadCommitted,
        _ => IsolationLevel::ReadUncommitted,
    }
}

/// Reads at most `max_bytes` of `log` from `from` and makes the acquisition window of what
/// was read below `end`, keeping only the batches that start below `end` and below `walk_to`
/// (past which nothing can be acquired: the in-flight bound), with where each ends; for
/// read_committed, the aborted transactions' batches and the control batches there are the
/// offsets skipped. A read that lost a race with retention (the log start passed `from`)
/// takes nothing: the next one starts at the new log start.
fn read_window(
    log: &logd_storage::PartitionLog,
    (from, end): (i64, i64),
    max_bytes: usize,
    committed: bool,
    walk_to: i64,
) -> Result<Window<bytes::Bytes>> {
    let empty = |from| Window {
        from,
        end: from,
        skipped: Vec::new(),
        batch_ends: Vec::new(),
        read: bytes::Bytes::new(),
    };
    if from >= end || max_bytes == 0 {
        return Ok(empty(from));
    }
    let bytes = match log.read(logd_storage::Offset(from), max_bytes) {
        Ok(bytes) => bytes,
        Err(logd_storage::Error::OffsetOutOfRange { .. }) => return Ok(empty(from)),
        Err(e) => return Err(e.into()),
    };
    let (mut covered, mut len, mut batch_ends) = (from, 0, Vec::new());
    for item in logd_storage::batch::BatchIter::new(&bytes, 0) {
        let Ok((position, batch)) = item else { break };
        if batch.header.base_offset >= end.min(walk_to) && !batch_ends.is_empty() {
            break;
        }
        batch_ends.push(batch.header.last_offset());
        covered = batch.header.next_offset();
        len = position + batch.bytes.len();
    }
    let bytes = bytes.slice(..len);
    let covered = covered.min(end);
    let skipped = if committed {
        skipped_batches(log, &bytes, from, covered)?
    } else {
        Vec::new()
    };
    Ok(Window {
        from,
        end: covered,
        skipped,
        batch_ends,
        read: bytes,
    })
}

/// The batches of `bytes` holding the records of `acquired` (in offset order): what a share
/// fetch answers, as Kafka's `ShareFetchUtils.maybeSliceFetchRecords` slices its read, so no
/// member is sent a batch it acquired nothing of.
fn batches_holding(bytes: &bytes::Bytes, acquired: &[AcquiredRecords]) -> bytes::Bytes {
    let (Some(first), Some(last)) = (acquired.first(), acquired.last()) else {
        return bytes::Bytes::new();
    };
    let (first, last) = (first.first_offset, last.last_offset);
    let (mut start, mut end) = (None, 0);
    for item in logd_storage::batch::BatchIter::new(bytes, 0) {
        let Ok((position, batch)) = item else { break };
        if batch.header.base_offset > last {
            break;
        }
        if batch.header.last_offset() >= first {
            start.get_or_insert(position);
            end = position + batch.bytes.len();
        }
    }
    start.map_or_else(bytes::Bytes::new, |start| bytes.slice(start..end))
}

/// The offset ranges of `bytes` (read from `log` at `from`) below `end` a read_committed
/// reader never sees: batches of aborted transactions, and control batches.
fn skipped_batches(
    log: &logd_storage::PartitionLog,
    bytes: &bytes::Bytes,
    from: i64,
    end: i64,
) -> Result<Vec<(i64, i64)>> {
    let aborted = log.aborted_transactions(logd_storage::Offset(from), logd_storage::Offset(end));
    let mut filter = logd_storage::ReadCommitted::new(aborted);
    let mut skipped: Vec<(i64, i64)> = Vec::new();
    for item in logd_storage::batch::BatchIter::new(bytes, 0) {
        let (_, batch) = item?;
        let (first, last) = (batch.header.base_offset, batch.header.last_offset());
        if first >= end {
            break;
        }
        if filter.keep(&batch) {
            continue;
        }
        match skipped.last_mut() {
            Some(run) if run.1 + 1 >= first => run.1 = run.1.max(last),
            _ => skipped.push((first, last)),
        }
    }
    Ok(skipped)
}

/// The limits group `group` works under, from its configs.
fn limits(configs: &GroupConfigs, group: &str) -> ShareLimits {
    let int = |name| configs.int(group, name);
    ShareLimits {
        lock_duration_ms: int("share.record.lock.duration.ms"),
        delivery_count_limit: u16::try_from(int("share.delivery.count.limit")).unwrap_or(u16::MAX),
        max_record_locks: u32::try_from(int("share.partition.max.record.locks"))
            .unwrap_or(u32::MAX),
        backoff_ms: int("logd.share.redelivery.backoff.ms"),
        backoff_max_ms: int("logd.share.redelivery.backoff.max.ms"),
        backoff_jitter: BackoffJitter::from_name(
            &configs.value(group, "logd.share.redelivery.backoff.jitter"),
        )
        .unwrap_or_default(),
        renew_enabled: configs.value(group, "share.renew.acknowledge.enable") == "true",
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
        let isolation = isolation(&self.shared.group_configs, group);
        let now = self.clock().now_ms();
        let plan = |sp: &super::SharePartition| match isolation {
            IsolationLevel::ReadUncommitted => i64::MIN,
            _ => sp.next_fetch_offset(now).max(log.log_start_offset().0),
        };
        let limits = limits(&self.shared.group_configs, group);
        let (acquired, archived, ()) = self.share_acquire_in(
            (group, member),
            (topic, partition),
            &log,
            (max_records, &limits),
            plan,
            |from| {
                let end = isolation.end(&log);
                match isolation {
                    IsolationLevel::ReadUncommitted => Ok(Window {
                        from,
                        end,
                        skipped: Vec::new(),
                        batch_ends: Vec::new(),
                        read: (),
                    }),
                    // What is aborted is known from the batches: read them as a fetch would.
                    IsolationLevel::ReadCommitted => {
                        let window =
                            read_window(&log, (from, end), COMMITTED_READ_BYTES, true, i64::MAX)?;
                        // The embedded limit is strict: no batch ends.
                        Ok(Window {
                            from: window.from,
                            end: window.end,
                            skipped: window.skipped,
                            batch_ends: Vec::new(),
                            read: (),
                        })
                    }
                }
            },
        )?;
        Ok((acquired, archived))
    }

    /// As [`Log::share_acquire`], for a fetch that answers with the log's bytes: reads at most
    /// `max_bytes` of `topic`-`partition` from where the share-partition's next record to
    /// hand out is, and acquires only records those bytes hold (so none is locked that the
    /// answer lacks). Under [`AcquireMode::BatchOptimized`], `max_records` is a soft limit
    /// as in Kafka 4.4: new records are acquired to the end of the batch the limit ends in,
    /// so one batch goes whole to one member instead of to each with a slice. Returns the
    /// records acquired, those archived, and the batches holding the acquired records. A
    /// group with `share.isolation.level=read_committed` reads to the last stable offset,
    /// and the records of aborted transactions and the control batches there are archived,
    /// never acquired, as Kafka 4.4's `SharePartition` does. The read holds no lock: fetches
    /// of other share-partitions, and acknowledgements, go on meanwhile.
    pub fn share_fetch(
        &self,
        group: &str,
        member: &str,
        topic: &str,
        partition: u32,
        (max_records, max_bytes): (usize, usize),
        mode: AcquireMode,
    ) -> Result<(Vec<AcquiredRecords>, Vec<Archived>, bytes::Bytes)> {
        let log = self.partition(topic, partition)?;
        let now = self.clock().now_ms();
        let configs = &self.shared.group_configs;
        let isolation = isolation(configs, group);
        let limits = limits(configs, group);
        let locks = i64::from(limits.max_record_locks);
        let (acquired, archived, read) = self.share_acquire_in(
            (group, member),
            (topic, partition),
            &log,
            (max_records, &limits),
            |sp| sp.next_fetch_offset(now).max(log.log_start_offset().0),
            |from| {
                let end = isolation.end(&log);
                let committed = isolation == IsolationLevel::ReadCommitted;
                let mut window = read_window(
                    &log,
                    (from, end),
                    max_bytes,
                    committed,
                    from.saturating_add(locks),
                )?;
                if mode == AcquireMode::RecordLimit {
                    window.batch_ends.clear();
                }
                Ok(window)
            },
        )?;
        let answer = batches_holding(&read, &acquired);
        Ok((acquired, archived, answer))
    }

    /// The acquisition both calls share, on `log` (`topic`-`partition`, looked up once):
    /// `plan` says where to read from, under the share-partition's lock; `read` reads there,
    /// outside it.
    fn share_acquire_in<T>(
        &self,
        (group, member): (&str, &str),
        (topic, partition): (&str, u32),
        log: &logd_storage::PartitionLog,
        (max_records, limits): (usize, &ShareLimits),
        plan: impl FnOnce(&super::SharePartition) -> i64,
        read: impl FnOnce(i64) -> Result<Window<T>>,
    ) -> Result<(Vec<AcquiredRecords>, Vec<Archived>, T)> {
        let configs = &self.shared.group_configs;
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
        let acquired = self.shared.shares.acquire(
            key,
            member,
            max_records,
            limits,
            &|| self.dead_letter_target(group),
            now,
            log.log_start_offset().0,
            start,
            plan,
            read,
        )?;
        self.write_dead_letters();
        Ok(acquired)
    }

    /// Moves every share-partition's start up to its partition's log start, durably (after
    /// retention or DeleteRecords removed what is below): what the log no longer holds is
    /// neither delivered nor counted in the lag. Returns how many moved.
    pub(crate) fn follow_share_log_starts(&self) -> Result<usize> {
        self.shared.shares.follow_log_starts(|topic, partition| {
            let log = self.partition(topic, partition).ok()?;
            Some(log.log_start_offset().0)
        })
    }

    /// Applies `member`'s acknowledgements of `topic`-`partition` in share group `group`: per
    /// batch its first and last offset and one type for all or one per offset, and why some
    /// rejected records were rejected (by offset; for their dead letters' headers). All or
    /// none: a record the member does not hold is [`Error::InvalidRecordState`]. Durable before
    /// this returns; returns the records archived unaccepted (rejected, or at the delivery
    /// limit).
    pub fn share_acknowledge(
        &self,
        group: &str,
        member: &str,
        topic: &str,
        partition: u32,
        batches: &[(i64, i64, Vec<AcknowledgeType>)],
        reasons: &BTreeMap<i64, RejectReason>,
    ) -> Result<Vec<Archived>> {
        let limits = limits(&self.shared.group_configs, group);
        let key = (group.to_owned(), topic.to_owned(), partition);
        let archived = self.shared.shares.acknowledge(
            &key,
            member,
            batches,
            &limits,
            &|| self.dead_letter_target(group),
            reasons,
            self.clock().now_ms(),
        )?;
        self.write_dead_letters();
        Ok(archived)
    }

    /// Gives back every record `member` of share group `group` holds, as when it leaves: they
    /// are available to the other members at once (or after logd's backoff). Returns those
    /// archived at the delivery limit.
    pub fn share_leave(&self, group: &str, member: &str) -> Result<Vec<Archived>> {
        if group.is_empty() {
            return Err(Error::NoGroup);
        }
        let limits = limits(&self.shared.group_configs, group);
        let archived = self.shared.shares.release_member(
            group,
            member,
            &limits,
            &|| self.dead_letter_target(group),
            self.clock().now_ms(),
        )?;
        self.write_dead_letters();
        Ok(archived)
    }

    /// After the open: forgets the share state of topics that are gone, moves starts up to
    /// the log starts, archives the records given back at their delivery limits (with their
    /// dead letters) and writes the letters a crash left unwritten.
    pub(crate) fn recover_shares(&self) -> Result<()> {
        // A crash between a topic's deletion and its share state's leaves state of a topic
        // that is gone; and the log starts may have moved past what was logged.
        let gone = self
            .shared
            .shares
            .forget_topics(|topic| self.topic(topic).is_err())?;
        if gone > 0 {
            tracing::info!(gone, "share state of deleted topics forgotten");
        }
        self.follow_share_log_starts()?;
        let configs = &self.shared.group_configs;
        self.shared.shares.archive_at_limit(
            |group| limits(configs, group),
            |group| self.dead_letter_target(group),
        )?;
        self.write_dead_letters();
        Ok(())
    }

    /// A ShareGroupHeartbeat of `member` in share group `group` (epoch 0 joins with
    /// `subscribed`, -1 leaves, any other must be the member's). Members silent for the group's
    /// `share.session.timeout.ms` are removed and their records given back, as is a leaving
    /// member's. The heartbeat interval to answer is [`Log::share_heartbeat_interval_ms`].
    pub fn share_heartbeat(
        &self,
        group: &str,
        member: &str,
        member_epoch: i32,
        subscribed: Option<Vec<String>>,
        client: (&str, &str),
    ) -> Result<ShareHeartbeat> {
        if member_epoch == 0 {
            // A join: the id must be free or a share group's (one protocol per group id).
            self.claim_group(group, GroupProtocol::Share, || {
                self.share_beat(group, member, member_epoch, subscribed, client)
            })
        } else {
            self.share_beat(group, member, member_epoch, subscribed, client)
        }
    }

    /// [`Log::share_heartbeat`] once a join has claimed the group id.
    fn share_beat(
        &self,
        group: &str,
        member: &str,
        member_epoch: i32,
        subscribed: Option<Vec<String>>,
        client: (&str, &str),
    ) -> Result<ShareHeartbeat> {
        let configs = &self.shared.group_configs;
        let now = self.clock().now_ms();
        let assign = |topics: &[String]| -> BTreeMap<String, Vec<u32>> {
            topics
                .iter()
                .filter_map(|t| Some((t.clone(), (0..self.partition_count(t).ok()?).collect())))
                .collect()
        };
        let (answer, expired) = self.shared.share_groups.heartbeat(
            group,
            member,
            member_epoch,
            subscribed,
            client,
            configs.int(group, "share.session.timeout.ms"),
            now,
            assign,
        );
        for gone in &expired {
            tracing::info!(
                group,
                member = gone.as_str(),
                "share-group member's session expired"
            );
            self.share_leave(group, gone)?;
        }
        if member_epoch == -1 {
            self.share_leave(group, member)?;
        }
        answer
    }

    /// Removes the share-group members silent for their group's `share.session.timeout.ms`
    /// and gives their records back (housekeeping calls it each round, so a group whose
    /// last member died becomes empty without another member's heartbeat).
    pub(crate) fn expire_share_members(&self, now_ms: i64) {
        let configs = &self.shared.group_configs;
        let expired = self.shared.share_groups.expire(
            |group| configs.int(group, "share.session.timeout.ms"),
            now_ms,
        );
        for (group, member) in expired {
            tracing::info!(
                group,
                member = member.as_str(),
                "share-group member's session expired"
            );
            if let Err(e) = self.share_leave(&group, &member) {
                tracing::error!(group, member, error = %e, "giving back an expired member's records failed");
            }
        }
    }

    /// The heartbeat interval of share group `group` (`share.heartbeat.interval.ms`).
    pub fn share_heartbeat_interval_ms(&self, group: &str) -> i64 {
        self.shared
            .group_configs
            .int(group, "share.heartbeat.interval.ms")
    }

    /// The lock duration of share group `group` (`share.record.lock.duration.ms`).
    pub fn share_lock_duration_ms(&self, group: &str) -> i64 {
        self.shared
            .group_configs
            .int(group, "share.record.lock.duration.ms")
    }

    /// Whether `member` is a member of share group `group`.
    pub fn is_share_member(&self, group: &str, member: &str) -> bool {
        self.shared.share_groups.is_member(group, member)
    }

    /// Every share group: those with members since the engine started and those with share
    /// state, sorted.
    pub fn share_group_ids(&self) -> Vec<String> {
        let mut ids = self.shared.share_groups.ids();
        ids.extend(self.shared.shares.group_ids());
        ids.sort();
        ids.dedup();
        ids
    }

    /// Share group `group`'s epoch and members, `None` when it had none since the engine
    /// started.
    pub fn share_group_members(&self, group: &str) -> Option<(i32, Vec<ShareMemberDescription>)> {
        self.shared.share_groups.describe(group)
    }

    /// Sets where share group `group` reads each (topic, partition, offset) of `offsets` from
    /// (AlterShareGroupOffsets): records in flight are dropped and the next one handed out is
    /// at the offset (a negative one makes the group start the partition from
    /// `share.auto.offset.reset` again, as Kafka takes it). Durable before this returns;
    /// refused while the group has members ([`GroupError::NonEmptyGroup`]). An unknown group
    /// becomes an empty share group, as on Kafka.
    ///
    /// [`GroupError::NonEmptyGroup`]: crate::groups::classic::GroupError::NonEmptyGroup
    pub fn alter_share_offsets(&self, group: &str, offsets: &[(String, u32, i64)]) -> Result<()> {
        self.refuse_with_members(group)?;
        let keys: Vec<_> = offsets
            .iter()
            .map(|(topic, partition, offset)| {
                let key = (group.to_owned(), topic.clone(), *partition);
                (key, (*offset >= 0).then_some(*offset))
            })
            .collect();
        self.shared.shares.set_start(&keys)?;
        self.shared.share_groups.ensure(group);
        Ok(())
    }

    /// Forgets share group `group`'s state of every partition of `topics`
    /// (DeleteShareGroupOffsets): it starts them again from `share.auto.offset.reset`. Durable
    /// before this returns; refused while the group has members. Returns, per topic, whether
    /// the group had state there.
    pub fn delete_share_offsets(&self, group: &str, topics: &[String]) -> Result<Vec<bool>> {
        self.refuse_with_members(group)?;
        let held = self.share_partitions(group);
        let mut had = Vec::new();
        let mut keys = Vec::new();
        for topic in topics {
            let mine: Vec<_> = held.iter().filter(|p| &p.topic == topic).collect();
            had.push(!mine.is_empty());
            keys.extend(
                mine.iter()
                    .map(|p| ((group.to_owned(), topic.clone(), p.partition), None)),
            );
        }
        self.shared.shares.set_start(&keys)?;
        self.shared.share_groups.ensure(group);
        Ok(had)
    }

    fn refuse_with_members(&self, group: &str) -> Result<()> {
        let members = self
            .share_group_members(group)
            .is_some_and(|(_, members)| !members.is_empty());
        if members {
            return Err(crate::groups::classic::GroupError::NonEmptyGroup.into());
        }
        Ok(())
    }

    /// Whether `group` is a classic consumer group (members or committed offsets), which
    /// share-group calls are refused for.
    pub fn is_classic_group(&self, group: &str) -> bool {
        self.list_groups().iter().any(|g| g == group)
    }

    /// What share group `group`'s records went through since the engine opened:
    /// redeliveries, archived records by reason, dead letters written.
    pub fn share_counters(&self, group: &str) -> ShareCounters {
        self.shared.shares.counters(group)
    }

    /// The share-partitions of share group `group`: start and end offsets and records in
    /// each state between them.
    pub fn share_partitions(&self, group: &str) -> Vec<SharePartitionState> {
        self.shared.shares.describe(group)
    }
}
