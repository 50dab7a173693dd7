//! Every share-partition of the engine, live (members' locks included) over its durable state
//! (`persist.rs`). Each share-partition has its own lock: a change is decided under it, logged
//! there (so the log has each share-partition's changes in their order) and waited for outside
//! it: acquired records are durable before they are handed out, and an acknowledgement before
//! it is answered. Fetches and acknowledgements of different share-partitions do not wait on
//! one lock, and no lock is held across a fetch's log read or an fsync (only a share-partition's
//! first start, from `share.auto.offset.reset`, looks in the log's index under its lock). Records archived unaccepted
//! in a group with a dead-letter topic are logged with their letters (`letters.rs`), whose
//! lock is taken after a share-partition's, never before.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, Storage, Written};
use parking_lot::{Mutex, RwLock};

use super::letters::{DeadLetterTarget, PendingLetters};
use super::partition::{
    AcknowledgeType, AcquiredRecords, ArchiveReason, Archived, Bounds, ShareLimits, SharePartition,
};
use super::persist::{
    self, Letter, LetterId, RejectReason, SavedShares, Settled, ShareKey, ShareRecord, runs,
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
/// `end`, never the offsets in `skipped` (sorted inclusive ranges); with `batch_ends` (the
/// last offsets of the batches read) the record limit is Kafka's batch-optimized one (see
/// [`SharePartition::acquire_between`]); and what the caller read.
pub(crate) struct Window<T> {
    pub from: i64,
    pub end: i64,
    pub skipped: Vec<(i64, i64)>,
    pub batch_ends: Vec<i64>,
    pub read: T,
}

impl<T> Window<T> {
    /// The acquisition's bounds.
    fn bounds(&self) -> Bounds<'_> {
        Bounds {
            from: self.from,
            end: self.end,
            skipped: &self.skipped,
            batch_ends: &self.batch_ends,
        }
    }
}

#[derive(Debug)]
pub(crate) struct ShareStates {
    log: StateLog<SavedShares>,
    /// Each share-partition behind its own lock; the map's lock is held only to find, add or
    /// remove one.
    partitions: RwLock<BTreeMap<ShareKey, Arc<Mutex<Slot>>>>,
    letters: Mutex<PendingLetters>,
    /// Held while dead letters are written, so each partition's go in sequence order.
    writing_letters: Mutex<()>,
    /// This run's producer id for dead letters, once one is needed.
    letter_producer: Mutex<Option<i64>>,
    /// Per group, since the engine opened.
    counters: Mutex<BTreeMap<String, ShareCounters>>,
}

/// One share-partition's place: its state once initialized, and whether it was removed from
/// the map (a caller that found it before then looks again).
#[derive(Debug, Default)]
struct Slot {
    state: Option<SharePartition>,
    removed: bool,
}

impl Slot {
    /// The share-partition, unless it is not initialized yet or was removed.
    fn live(&mut self) -> Option<&mut SharePartition> {
        if self.removed {
            return None;
        }
        self.state.as_mut()
    }
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
        let (partitions, letters) = log.read(|s| {
            let partitions = s
                .partitions
                .iter()
                .map(|(k, p)| {
                    let slot = Slot {
                        state: Some(p.restore()),
                        removed: false,
                    };
                    (k.clone(), Arc::new(Mutex::new(slot)))
                })
                .collect();
            (partitions, PendingLetters::recovered(&s.letters))
        });
        Ok(ShareStates {
            log,
            partitions: RwLock::new(partitions),
            letters: Mutex::new(letters),
            writing_letters: Mutex::new(()),
            letter_producer: Mutex::new(None),
            counters: Mutex::new(BTreeMap::new()),
        })
    }

    /// The slot of `key`, added (uninitialized) when `add` and it is not there.
    fn slot(&self, key: &ShareKey, add: bool) -> Option<Arc<Mutex<Slot>>> {
        if let Some(slot) = self.partitions.read().get(key) {
            return Some(slot.clone());
        }
        if !add {
            return None;
        }
        Some(
            self.partitions
                .write()
                .entry(key.clone())
                .or_default()
                .clone(),
        )
    }

    /// Every slot whose key `wanted` picks, in key order.
    fn slots(&self, wanted: impl Fn(&ShareKey) -> bool) -> Vec<(ShareKey, Arc<Mutex<Slot>>)> {
        self.partitions
            .read()
            .iter()
            .filter(|(k, _)| wanted(k))
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
    }

    /// Removes the slots of `keys` from the map, each marked removed under its own lock (so a
    /// change begun on it finishes first and none begins after), and logs `record` while they
    /// are held; returns the keys that had state.
    fn remove(
        &self,
        keys: impl Fn(&ShareKey) -> bool,
        record: impl FnOnce(Vec<ShareKey>) -> Option<ShareRecord>,
    ) -> Result<(Vec<ShareKey>, Option<Written>)> {
        let mut map = self.partitions.write();
        let gone: Vec<ShareKey> = map.keys().filter(|k| keys(k)).cloned().collect();
        let slots: Vec<Arc<Mutex<Slot>>> = gone.iter().filter_map(|k| map.remove(k)).collect();
        let mut held: Vec<_> = slots.iter().map(|s| s.lock()).collect();
        let had: Vec<ShareKey> = gone
            .into_iter()
            .zip(held.iter())
            .filter(|(_, slot)| slot.state.is_some())
            .map(|(k, _)| k)
            .collect();
        for slot in held.iter_mut() {
            slot.removed = true;
        }
        let written = match record(had.clone()) {
            Some(record) => Some(self.write(record)?),
            None => None,
        };
        drop(held);
        drop(map);
        Ok((had, written))
    }

    /// Archives (and logs so, with their letters) the records a restart gave back whose
    /// counts reached their group's delivery limit.
    pub(crate) fn archive_at_limit(
        &self,
        limits: impl Fn(&str) -> ShareLimits,
        dlq: impl Fn(&str) -> Option<DeadLetterTarget>,
    ) -> Result<()> {
        let mut last = None;
        for (key, slot) in self.slots(|_| true) {
            let mut held = slot.lock();
            let Some(partition) = held.live() else {
                continue;
            };
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
            if let Some(written) = self.archive(&key, &archived, &|| dlq(&key.0))? {
                last = Some(written);
            }
        }
        self.wait(last)
    }

    /// Acquires for `member` (see [`SharePartition::acquire`]) in two steps. Under the
    /// share-partition's lock: a share-partition seen for the first time starts at `start()`,
    /// its start moves up to `log_start` (records the log no longer has are neither delivered
    /// nor counted), records whose locks expired are given back, and `plan` says where the
    /// read begins. Outside every lock: `read` reads the log there and gives the window
    /// (available records from its `from`, new ones to its `end`, never its `skipped`). Under
    /// the lock again: the records are acquired within it, which holds however other fetches
    /// moved the share-partition meanwhile (they only take records, and a window only
    /// covers what its read holds). Returns once the acquisition is durable, with the
    /// records archived on the way and what `read` read.
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
        plan: impl FnOnce(&SharePartition) -> i64,
        read: impl FnOnce(i64) -> Result<Window<T>>,
    ) -> Result<(Vec<AcquiredRecords>, Vec<Archived>, T)> {
        let (mut start, mut plan) = (Some(start), Some(plan));
        let (slot, from, archived, mut last) = loop {
            let slot = self.slot(&key, true).expect("added when missing");
            let mut held = slot.lock();
            if held.removed {
                continue;
            }
            let mut last = None;
            if held.state.is_none() {
                // Once: a slot is found removed only before this.
                let at = (start.take().expect("called once"))()?;
                last = Some(self.write(ShareRecord::Initialized {
                    key: key.clone(),
                    start: at,
                })?);
                held.state = Some(SharePartition::new(at));
            }
            let partition = held.state.as_mut().expect("initialized above");
            if let Some(moved) = self.follow(&key, partition, log_start)? {
                last = Some(moved);
            }
            let archived = partition.expire_locks(limits, now_ms);
            if let Some(written) = self.archive(&key, &archived, dlq)? {
                last = Some(written);
            }
            let from = (plan.take().expect("planned once"))(partition);
            drop(held);
            break (slot, from, archived, last);
        };
        let window = read(from)?;
        let acquired = {
            let mut held = slot.lock();
            match held.live() {
                // Deleted meanwhile: nothing to acquire from.
                None => Vec::new(),
                Some(partition) => {
                    let (acquired, dropped) = partition.acquire_between(
                        member,
                        &window.bounds(),
                        max_records,
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
                    acquired
                }
            }
        };
        self.wait(last)?;
        Ok((acquired, archived, window.read))
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
        let offsets: Vec<(i64, Settled)> =
            dropped.iter().map(|&o| (o, Settled::Archived)).collect();
        self.write(ShareRecord::SettledRuns {
            key: key.clone(),
            runs: runs(&offsets),
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
        let (mut moved, mut last) = (0, None);
        for (key, slot) in self.slots(|_| true) {
            let Some(start) = log_start(&key.1, key.2) else {
                continue;
            };
            let mut held = slot.lock();
            let Some(partition) = held.live() else {
                continue;
            };
            if let Some(written) = self.follow(&key, partition, start)? {
                moved += 1;
                last = Some(written);
            }
        }
        self.wait(last)?;
        Ok(moved)
    }

    /// Forgets every group's state of the topics `gone` says are gone (a topic deleted, so
    /// that one created again under its name starts afresh, as Kafka keys share state by
    /// topic id), durably; returns how many share-partitions went.
    pub(crate) fn forget_topics(&self, gone: impl Fn(&str) -> bool) -> Result<usize> {
        let (had, written) = self.remove(
            |k| gone(&k.1),
            |keys| (!keys.is_empty()).then_some(ShareRecord::PartitionsDeleted { keys }),
        )?;
        self.wait(written)?;
        Ok(had.len())
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
        let none_acquired = || {
            Error::InvalidRecordState(format!(
                "{}-{}: no records acquired in group {}",
                key.1, key.2, key.0
            ))
        };
        let slot = self.slot(key, false).ok_or_else(none_acquired)?;
        let (archived, written) = {
            let mut held = slot.lock();
            let removed = held.removed;
            let partition = held
                .state
                .as_mut()
                .filter(|_| !removed)
                .ok_or_else(none_acquired)?;
            let mut archived = partition.expire_locks(limits, now_ms);
            let start = partition.start_offset();
            let acknowledged = partition.acknowledge(member, batches, limits, now_ms)?;
            // In order of precedence, the last word on an offset winning.
            let mut done: Vec<(i64, Settled)> = archived
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
                        AcknowledgeType::Accept => done.push((offset, Settled::Acknowledged)),
                        AcknowledgeType::Gap | AcknowledgeType::Reject => {
                            done.push((offset, Settled::Archived));
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
                done.push((a.offset, Settled::Archived));
            }
            archived.extend(acknowledged);
            let written = self.settle(key, done, &archived, dlq, reasons)?;
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
        let (mut all, mut last) = (Vec::new(), None);
        for (key, slot) in self.slots(|k| k.0 == group) {
            let mut held = slot.lock();
            let Some(partition) = held.live() else {
                continue;
            };
            let archived = partition.release_member(member, limits, now_ms);
            if let Some(written) = self.archive(&key, &archived, dlq)? {
                last = Some(written);
            }
            all.extend(archived);
        }
        self.wait(last)?;
        Ok(all)
    }

    /// Deletes group `group`'s share state, durably; whether it had any.
    pub(crate) fn delete_group(&self, group: &str) -> Result<bool> {
        let (had, written) = self.remove(
            |k| k.0 == group,
            |keys| {
                (!keys.is_empty()).then(|| ShareRecord::GroupDeleted {
                    group: group.to_owned(),
                })
            },
        )?;
        self.wait(written)?;
        Ok(!had.is_empty())
    }

    /// Makes `key`'s state begin afresh at `start` (AlterShareGroupOffsets: records in flight
    /// are dropped), or be gone (`None`: DeleteShareGroupOffsets, and a negative offset, as
    /// Kafka takes it), durably.
    pub(crate) fn set_start(&self, keys: &[(ShareKey, Option<i64>)]) -> Result<()> {
        let mut last = None;
        for (key, start) in keys {
            match start {
                Some(start) => loop {
                    let slot = self.slot(key, true).expect("added when missing");
                    let mut held = slot.lock();
                    if held.removed {
                        continue;
                    }
                    held.state = Some(SharePartition::new(*start));
                    last = Some(self.write(ShareRecord::Initialized {
                        key: key.clone(),
                        start: *start,
                    })?);
                    break;
                },
                None => {
                    let (_, written) = self.remove(
                        |k| k == key,
                        |_| {
                            Some(ShareRecord::PartitionsDeleted {
                                keys: vec![key.clone()],
                            })
                        },
                    )?;
                    last = written;
                }
            }
        }
        self.wait(last)
    }

    /// Every group with share state.
    pub(crate) fn group_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .slots(|_| true)
            .into_iter()
            .filter(|(_, slot)| {
                let held = slot.lock();
                held.state.is_some() && !held.removed
            })
            .map(|(k, _)| k.0)
            .collect();
        ids.dedup();
        ids
    }

    /// Every share-partition of group `group`.
    pub(crate) fn describe(&self, group: &str) -> Vec<SharePartitionState> {
        self.slots(|k| k.0 == group)
            .into_iter()
            .filter_map(|((_, topic, partition), slot)| {
                let held = slot.lock();
                let p = held.state.as_ref().filter(|_| !held.removed)?;
                Some(SharePartitionState {
                    topic,
                    partition,
                    start_offset: p.start_offset(),
                    end_offset: p.end_offset(),
                    counts: p.counts(),
                })
            })
            .collect()
    }

    /// Logs `offsets` of `key` settled and the records `archived` unaccepted there archived
    /// (each with its letter for the target `dlq` gives, in the same record); `None` when
    /// there is nothing.
    fn settle(
        &self,
        key: &ShareKey,
        offsets: Vec<(i64, Settled)>,
        archived: &[Archived],
        dlq: &dyn Fn() -> Option<DeadLetterTarget>,
        reasons: &BTreeMap<i64, RejectReason>,
    ) -> Result<Option<Written>> {
        // `archived` first, so what the caller says of an offset wins.
        let mut all: Vec<(i64, Settled)> = archived
            .iter()
            .map(|a| (a.offset, Settled::Archived))
            .collect();
        all.extend(offsets);
        let offsets = last_word(all);
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
        if offsets.is_empty() {
            return Ok(None);
        }
        // Resolved only when there is something to write, so a misconfigured topic is said
        // once per archiving, not on every fetch.
        let target = if archived.is_empty() { None } else { dlq() };
        let Some(dlq) = target.as_ref() else {
            return self
                .write(ShareRecord::SettledRuns {
                    key: key.clone(),
                    runs: runs(&offsets),
                })
                .map(Some);
        };
        // Assigned and logged under the letters' lock, so letters are logged in sequence
        // order whichever share-partitions archive at once.
        let mut letters = self.letters.lock();
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
        key: &ShareKey,
        archived: &[Archived],
        dlq: &dyn Fn() -> Option<DeadLetterTarget>,
    ) -> Result<Option<Written>> {
        self.settle(key, Vec::new(), archived, dlq, &BTreeMap::new())
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
        !self.letters.lock().is_empty()
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
        let (pending, last_logged) = self.letters.lock().all();
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
        self.letters.lock().written(&done);
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

/// `entries` in offset order, one per offset: the last said of each.
fn last_word(mut entries: Vec<(i64, Settled)>) -> Vec<(i64, Settled)> {
    // Stable: entries of one offset stay in the order said.
    entries.sort_by_key(|&(offset, _)| offset);
    let mut out: Vec<(i64, Settled)> = Vec::with_capacity(entries.len());
    for (offset, settled) in entries {
        match out.last_mut() {
            Some(last) if last.0 == offset => last.1 = settled,
            _ => out.push((offset, settled)),
        }
    }
    out
}
