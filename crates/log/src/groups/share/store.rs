//! Every share-partition of the engine, live (members' locks included) over its durable state
//! (`persist.rs`). Each change is decided under one lock, logged there (so the log has the
//! changes in their order) and waited for outside it: acquired records are durable before they
//! are handed out, and an acknowledgement before it is answered. Records archived unaccepted
//! in a group with a dead-letter topic are logged with their letters (`letters.rs`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, Storage, Written};
use parking_lot::Mutex;

use super::letters::{DeadLetterTarget, PendingLetters};
use super::partition::{
    AcknowledgeType, AcquiredRecords, ArchiveReason, Archived, ShareLimits, SharePartition,
};
use super::persist::{
    self, Letter, LetterId, RejectReason, SavedShares, Settled, ShareKey, ShareRecord,
};
use crate::error::{Error, Result};

/// What a share group's records went through since the engine opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShareCounters {
    /// Records handed out again (a delivery after the first).
    pub redelivered: u64,
    /// Records archived because a member rejected them.
    pub rejected: u64,
    /// Records archived at the group's delivery limit.
    pub at_delivery_limit: u64,
    /// Dead letters written to the group's dead-letter topic.
    pub dead_lettered: u64,
}

/// One share-partition's state as described: start, end, and records available, acquired,
/// acknowledged and archived between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionState {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The share-partition start offset.
    pub start_offset: i64,
    /// The offset after the last record ever acquired.
    pub end_offset: i64,
    /// Records available, acquired, acknowledged and archived between start and end.
    pub counts: [usize; 4],
}

impl SharePartitionState {
    /// The share-partition's lag as Kafka 4.4 counts it (KIP-1226): the records from the start
    /// offset up to `high_watermark` not yet acknowledged or archived; `None` when the start
    /// is past the high watermark (an operator moved it there).
    pub fn lag(&self, high_watermark: i64) -> Option<i64> {
        let done = (self.counts[2] + self.counts[3]) as i64;
        Some(high_watermark - self.start_offset - done).filter(|lag| *lag >= 0)
    }
}

/// What a fetch takes of a share-partition: available records from `from` on, new ones up to
/// `end`, never the offsets in `skipped` (sorted inclusive ranges), and what the caller read.
pub(crate) struct Window<T> {
    pub from: i64,
    pub end: i64,
    pub skipped: Vec<(i64, i64)>,
    pub read: T,
}

#[derive(Debug)]
pub(crate) struct ShareStates {
    log: StateLog<SavedShares>,
    live: Mutex<Live>,
    /// Held while dead letters are written, so each partition's go in sequence order.
    writing_letters: Mutex<()>,
    /// This run's producer id for dead letters, once one is needed.
    letter_producer: Mutex<Option<i64>>,
    /// Per group, since the engine opened.
    counters: Mutex<BTreeMap<String, ShareCounters>>,
}

#[derive(Debug)]
struct Live {
    partitions: BTreeMap<ShareKey, SharePartition>,
    letters: PendingLetters,
}

fn storage_error(e: logd_storage::Error) -> Error {
    Error::Storage(e)
}

impl ShareStates {
    /// The share state saved in the data directory `dir`. Records held at the crash are given
    /// back, as if their locks expired: available again with their counts (those at a
    /// delivery limit are archived by [`ShareStates::archive_at_limit`]).
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<ShareStates> {
        let log = persist::open(storage, dir).map_err(storage_error)?;
        let live = log.read(|s| Live {
            partitions: s
                .partitions
                .iter()
                .map(|(k, p)| (k.clone(), p.restore()))
                .collect(),
            letters: PendingLetters::recovered(&s.letters),
        });
        Ok(ShareStates {
            log,
            live: Mutex::new(live),
            writing_letters: Mutex::new(()),
            letter_producer: Mutex::new(None),
            counters: Mutex::new(BTreeMap::new()),
        })
    }

    /// Archives (and logs so, with their letters) the records a restart gave back whose
    /// counts reached their group's delivery limit.
    pub(crate) fn archive_at_limit(
        &self,
        limits: impl Fn(&str) -> ShareLimits,
        dlq: impl Fn(&str) -> Option<DeadLetterTarget>,
    ) -> Result<()> {
        let written = {
            let mut live = self.live.lock();
            let live = &mut *live;
            let mut last = None;
            for (key, partition) in &mut live.partitions {
                let archived = partition.archive_at_limit(limits(&key.0).delivery_count_limit);
                if archived.is_empty() {
                    continue;
                }
                tracing::info!(
                    group = key.0,
                    topic = key.1,
                    partition = key.2,
                    records = archived.len(),
                    "records in flight at the last stop reached the delivery limit: archived"
                );
                last = self.archive(&mut live.letters, key, &archived, &|| dlq(&key.0))?;
            }
            last
        };
        self.wait(written)
    }

    /// Acquires for `member` (see [`SharePartition::acquire`]) within the window `window`
    /// gives, first moving the start up to `log_start` (records the log no longer has are
    /// neither delivered nor counted) and giving back records whose locks expired; a
    /// share-partition seen for the first time starts at `start()`. Returns once the
    /// acquisition is durable, with the records archived on the way and what `window` read.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn acquire<T>(
        &self,
        key: ShareKey,
        member: &str,
        max_records: usize,
        limits: &ShareLimits,
        dlq: &dyn Fn() -> Option<DeadLetterTarget>,
        now_ms: i64,
        log_start: i64,
        start: impl FnOnce() -> Result<i64>,
        window: impl FnOnce(&SharePartition) -> Result<Window<T>>,
    ) -> Result<(Vec<AcquiredRecords>, Vec<Archived>, T)> {
        let (acquired, archived, read, written) = {
            let mut live = self.live.lock();
            let live = &mut *live;
            let mut last = None;
            if !live.partitions.contains_key(&key) {
                let start = start()?;
                last = Some(self.write(ShareRecord::Initialized {
                    key: key.clone(),
                    start,
                })?);
                live.partitions
                    .insert(key.clone(), SharePartition::new(start));
            }
            let partition = live.partitions.get_mut(&key).expect("inserted above");
            if let Some(moved) = self.follow(&key, partition, log_start)? {
                last = Some(moved);
            }
            let archived = partition.expire_locks(limits, now_ms);
            if let Some(written) = self.archive(&mut live.letters, &key, &archived, dlq)? {
                last = Some(written);
            }
            let partition = live.partitions.get_mut(&key).expect("inserted above");
            let window = window(partition)?;
            let (acquired, dropped) = partition.acquire_between(
                member,
                window.from,
                window.end,
                max_records,
                &window.skipped,
                limits,
                now_ms,
            );
            let again: u64 = acquired
                .iter()
                .filter(|r| r.delivery_count > 1)
                .map(|r| (r.last_offset - r.first_offset + 1) as u64)
                .sum();
            if again > 0 {
                self.count(&key.0, |c| c.redelivered += again);
            }
            for range in &acquired {
                last = Some(self.write(ShareRecord::Acquired {
                    key: key.clone(),
                    first: range.first_offset,
                    last: range.last_offset,
                })?);
            }
            if let Some(written) = self.log_dropped(&key, &dropped)? {
                last = Some(written);
            }
            (acquired, archived, window.read, last)
        };
        self.wait(written)?;
        Ok((acquired, archived, read))
    }

    /// Logs `dropped` (sorted offsets archived at acquisition, never handed out): the end
    /// moved past them (an acquisition record each run, which counts a delivery nobody
    /// saw; their counts matter no more) and each settled archived.
    fn log_dropped(&self, key: &ShareKey, dropped: &[i64]) -> Result<Option<Written>> {
        let Some(&first) = dropped.first() else {
            return Ok(None);
        };
        let mut run = (first, first);
        for &offset in &dropped[1..] {
            if offset == run.1 + 1 {
                run.1 = offset;
                continue;
            }
            // The log keeps its order: waiting for the last record waits for this one.
            let _before_last = self.write(ShareRecord::Acquired {
                key: key.clone(),
                first: run.0,
                last: run.1,
            })?;
            run = (offset, offset);
        }
        let _before_last = self.write(ShareRecord::Acquired {
            key: key.clone(),
            first: run.0,
            last: run.1,
        })?;
        let offsets = dropped.iter().map(|&o| (o, Settled::Archived)).collect();
        self.write(ShareRecord::Settled {
            key: key.clone(),
            offsets,
        })
        .map(Some)
    }

    /// Moves `partition`'s start up to `log_start`, logging it; `None` when it was there.
    fn follow(
        &self,
        key: &ShareKey,
        partition: &mut SharePartition,
        log_start: i64,
    ) -> Result<Option<Written>> {
        if log_start <= partition.start_offset() {
            return Ok(None);
        }
        partition.move_start(log_start);
        self.write(ShareRecord::StartMoved {
            key: key.clone(),
            offset: log_start,
        })
        .map(Some)
    }

    /// Moves every share-partition's start up to its log's start (`log_start` of a topic
    /// and partition; `None` for one that is gone), durably: retention and DeleteRecords
    /// removed what is below. Returns how many moved.
    pub(crate) fn follow_log_starts(
        &self,
        log_start: impl Fn(&str, u32) -> Option<i64>,
    ) -> Result<usize> {
        let (moved, written) = {
            let mut live = self.live.lock();
            let (mut moved, mut last) = (0, None);
            for (key, partition) in live.partitions.iter_mut() {
                let Some(start) = log_start(&key.1, key.2) else {
                    continue;
                };
                if let Some(written) = self.follow(key, partition, start)? {
                    moved += 1;
                    last = Some(written);
                }
            }
            (moved, last)
        };
        self.wait(written)?;
        Ok(moved)
    }

    /// Forgets every group's state of the topics `gone` says are gone (a topic deleted, so
    /// that one created again under its name starts afresh, as Kafka keys share state by
    /// topic id), durably; returns how many share-partitions went.
    pub(crate) fn forget_topics(&self, gone: impl Fn(&str) -> bool) -> Result<usize> {
        let written = {
            let mut live = self.live.lock();
            let keys: Vec<ShareKey> = live
                .partitions
                .keys()
                .filter(|k| gone(&k.1))
                .cloned()
                .collect();
            if keys.is_empty() {
                return Ok(0);
            }
            for key in &keys {
                live.partitions.remove(key);
            }
            (
                keys.len(),
                self.write(ShareRecord::PartitionsDeleted { keys })?,
            )
        };
        self.wait(Some(written.1))?;
        Ok(written.0)
    }

    /// Applies `member`'s acknowledgements (see [`SharePartition::acknowledge`]), first giving
    /// back records whose locks expired; returns once they are durable, with the records
    /// archived unaccepted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn acknowledge(
        &self,
        key: &ShareKey,
        member: &str,
        batches: &[(i64, i64, Vec<AcknowledgeType>)],
        limits: &ShareLimits,
        dlq: &dyn Fn() -> Option<DeadLetterTarget>,
        reasons: &BTreeMap<i64, RejectReason>,
        now_ms: i64,
    ) -> Result<Vec<Archived>> {
        let (archived, written) = {
            let mut live = self.live.lock();
            let live = &mut *live;
            let Some(partition) = live.partitions.get_mut(key) else {
                return Err(Error::InvalidRecordState(format!(
                    "{}-{}: no records acquired in group {}",
                    key.1, key.2, key.0
                )));
            };
            let mut archived = partition.expire_locks(limits, now_ms);
            let start = partition.start_offset();
            let acknowledged = partition.acknowledge(member, batches, limits, now_ms)?;
            let mut done: BTreeMap<i64, Settled> = archived
                .iter()
                .map(|a| (a.offset, Settled::Archived))
                .collect();
            for (first, last, types) in batches {
                for offset in (*first).max(start)..=*last {
                    let kind = types[if types.len() == 1 {
                        0
                    } else {
                        (offset - first) as usize
                    }];
                    match kind {
                        AcknowledgeType::Accept => {
                            done.insert(offset, Settled::Acknowledged);
                        }
                        AcknowledgeType::Gap | AcknowledgeType::Reject => {
                            done.insert(offset, Settled::Archived);
                        }
                        // Nothing durable: a record held at a crash is given back anyway.
                        AcknowledgeType::Release | AcknowledgeType::Renew => {}
                    }
                }
            }
            for a in acknowledged
                .iter()
                .filter(|a| a.reason == ArchiveReason::DeliveryLimit)
            {
                done.insert(a.offset, Settled::Archived);
            }
            archived.extend(acknowledged);
            let written = self.settle(
                &mut live.letters,
                key,
                done.into_iter().collect(),
                &archived,
                dlq,
                reasons,
            )?;
            (archived, written)
        };
        self.wait(written)?;
        Ok(archived)
    }

    /// Gives back every record `member` holds in group `group`; returns those archived.
    pub(crate) fn release_member(
        &self,
        group: &str,
        member: &str,
        limits: &ShareLimits,
        dlq: &dyn Fn() -> Option<DeadLetterTarget>,
        now_ms: i64,
    ) -> Result<Vec<Archived>> {
        let (archived, written) = {
            let mut live = self.live.lock();
            let live = &mut *live;
            let mut all = Vec::new();
            let mut last = None;
            for (key, partition) in live.partitions.iter_mut().filter(|(k, _)| k.0 == group) {
                let archived = partition.release_member(member, limits, now_ms);
                if let Some(written) = self.archive(&mut live.letters, key, &archived, dlq)? {
                    last = Some(written);
                }
                all.extend(archived);
            }
            (all, last)
        };
        self.wait(written)?;
        Ok(archived)
    }

    /// Deletes group `group`'s share state, durably; whether it had any.
    pub(crate) fn delete_group(&self, group: &str) -> Result<bool> {
        let written = {
            let mut live = self.live.lock();
            let before = live.partitions.len();
            live.partitions.retain(|key, _| key.0 != group);
            if live.partitions.len() == before {
                return Ok(false);
            }
            self.write(ShareRecord::GroupDeleted {
                group: group.to_owned(),
            })?
        };
        self.wait(Some(written))?;
        Ok(true)
    }

    /// Makes `key`'s state begin afresh at `start` (AlterShareGroupOffsets: records in flight
    /// are dropped), or be gone (`None`: DeleteShareGroupOffsets, and a negative offset, as
    /// Kafka takes it), durably.
    pub(crate) fn set_start(&self, keys: &[(ShareKey, Option<i64>)]) -> Result<()> {
        let written = {
            let mut live = self.live.lock();
            let mut last = None;
            for (key, start) in keys {
                last = Some(match start {
                    Some(start) => {
                        live.partitions
                            .insert(key.clone(), SharePartition::new(*start));
                        self.write(ShareRecord::Initialized {
                            key: key.clone(),
                            start: *start,
                        })?
                    }
                    None => {
                        live.partitions.remove(key);
                        self.write(ShareRecord::PartitionsDeleted {
                            keys: vec![key.clone()],
                        })?
                    }
                });
            }
            last
        };
        self.wait(written)
    }

    /// Every group with share state.
    pub(crate) fn group_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .live
            .lock()
            .partitions
            .keys()
            .map(|k| k.0.clone())
            .collect();
        ids.dedup();
        ids
    }

    /// Every share-partition of group `group`.
    pub(crate) fn describe(&self, group: &str) -> Vec<SharePartitionState> {
        self.live
            .lock()
            .partitions
            .iter()
            .filter(|(k, _)| k.0 == group)
            .map(|((_, topic, partition), p)| SharePartitionState {
                topic: topic.clone(),
                partition: *partition,
                start_offset: p.start_offset(),
                end_offset: p.end_offset(),
                counts: p.counts(),
            })
            .collect()
    }

    /// Logs `offsets` of `key` settled and the records `archived` unaccepted there archived
    /// (each with its letter for the target `dlq` gives, in the same record); `None` when
    /// there is nothing.
    fn settle(
        &self,
        letters: &mut PendingLetters,
        key: &ShareKey,
        offsets: Vec<(i64, Settled)>,
        archived: &[Archived],
        dlq: &dyn Fn() -> Option<DeadLetterTarget>,
        reasons: &BTreeMap<i64, RejectReason>,
    ) -> Result<Option<Written>> {
        let mut offsets: BTreeMap<i64, Settled> = offsets.into_iter().collect();
        for a in archived {
            offsets.entry(a.offset).or_insert(Settled::Archived);
        }
        if !archived.is_empty() {
            let rejected = archived
                .iter()
                .filter(|a| a.reason == ArchiveReason::Rejected)
                .count() as u64;
            self.count(&key.0, |c| {
                c.rejected += rejected;
                c.at_delivery_limit += archived.len() as u64 - rejected;
            });
        }
        let offsets: Vec<(i64, Settled)> = offsets.into_iter().collect();
        if offsets.is_empty() {
            return Ok(None);
        }
        // Resolved only when there is something to write, so a misconfigured topic is said
        // once per archiving, not on every fetch.
        let target = if archived.is_empty() { None } else { dlq() };
        let Some(dlq) = target.as_ref() else {
            return self
                .write(ShareRecord::Settled {
                    key: key.clone(),
                    offsets,
                })
                .map(Some);
        };
        let new = letters.assign(key, archived, dlq, reasons);
        let written = self.write(ShareRecord::SettledWithLetters {
            key: key.clone(),
            offsets,
            letters: new.clone(),
        })?;
        letters.logged(key, new, written);
        Ok(Some(written))
    }

    /// Logs the records `archived` (expired at their limit, or given back there) archived.
    fn archive(
        &self,
        letters: &mut PendingLetters,
        key: &ShareKey,
        archived: &[Archived],
        dlq: &dyn Fn() -> Option<DeadLetterTarget>,
    ) -> Result<Option<Written>> {
        self.settle(letters, key, Vec::new(), archived, dlq, &BTreeMap::new())
    }

    /// This run's producer id for dead letters, from `allocate` the first time.
    pub(crate) fn letter_producer(&self, allocate: impl FnOnce() -> Result<i64>) -> Result<i64> {
        let mut id = self.letter_producer.lock();
        match *id {
            Some(id) => Ok(id),
            None => {
                let new = allocate()?;
                *id = Some(new);
                Ok(new)
            }
        }
    }

    /// Whether letters wait to be written.
    pub(crate) fn has_pending_letters(&self) -> bool {
        !self.live.lock().letters.is_empty()
    }

    /// Writes every pending letter with `write` (given letters of one dead-letter partition
    /// and producer in sequence order; it returns how many of them it wrote, from the first),
    /// once the records that logged them are durable; logs those written. One writer at a
    /// time, so each partition's letters go in order.
    pub(crate) fn write_letters(
        &self,
        mut write: impl FnMut(&[(ShareKey, Letter)]) -> usize,
    ) -> Result<()> {
        let _writer = self.writing_letters.lock();
        let (pending, last_logged) = self.live.lock().letters.all();
        self.wait(last_logged)?;
        let mut done: Vec<LetterId> = Vec::new();
        let mut run_start = 0;
        for i in 1..=pending.len() {
            let same_run = i < pending.len() && {
                let (a, b) = (&pending[i - 1].1, &pending[i].1);
                (&a.topic, a.partition, a.producer_id) == (&b.topic, b.partition, b.producer_id)
            };
            if !same_run {
                let run = &pending[run_start..i];
                let wrote = &run[..write(run).min(run.len())];
                for (key, _) in wrote {
                    self.count(&key.0, |c| c.dead_lettered += 1);
                }
                done.extend(wrote.iter().map(|(_, l)| l.id()));
                run_start = i;
            }
        }
        if done.is_empty() {
            return Ok(());
        }
        // Not waited for: a restart that finds them pending sees them in the producer state.
        let _not_waited = self.write(ShareRecord::LettersWritten {
            letters: done.clone(),
        })?;
        self.live.lock().letters.written(&done);
        Ok(())
    }

    fn count(&self, group: &str, change: impl FnOnce(&mut ShareCounters)) {
        change(self.counters.lock().entry(group.to_owned()).or_default());
    }

    /// What group `group`'s records went through since the engine opened.
    pub(crate) fn counters(&self, group: &str) -> ShareCounters {
        self.counters.lock().get(group).copied().unwrap_or_default()
    }

    fn write(&self, record: ShareRecord) -> Result<Written> {
        self.log.write(record).map_err(storage_error)
    }

    fn wait(&self, written: Option<Written>) -> Result<()> {
        match written {
            Some(written) => self.log.wait(written).map_err(storage_error),
            None => Ok(()),
        }
    }
}
