//! Every share-partition of the engine, live (members' locks included) over its durable state
//! (`persist.rs`). Each change is decided under one lock, logged there (so the log has the
//! changes in their order) and waited for outside it: acquired records are durable before they
//! are handed out, and an acknowledgement before it is answered.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, Storage, Written};
use parking_lot::Mutex;

use super::partition::{
    AcknowledgeType, AcquiredRecords, ArchiveReason, Archived, ShareLimits, SharePartition,
};
use super::persist::{self, SavedShares, Settled, ShareKey, ShareRecord};
use crate::error::{Error, Result};

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

#[derive(Debug)]
pub(crate) struct ShareStates {
    log: StateLog<SavedShares>,
    live: Mutex<BTreeMap<ShareKey, SharePartition>>,
}

fn storage_error(e: logd_storage::Error) -> Error {
    Error::Storage(e)
}

impl ShareStates {
    /// The share state saved in the data directory `dir`. Records held at the crash are given
    /// back, as if their locks expired: available again with their counts, or archived (and
    /// logged so) once a group's delivery limit was reached.
    pub(crate) fn open(
        storage: Arc<dyn Storage>,
        dir: &Path,
        limits: impl Fn(&str) -> ShareLimits,
    ) -> Result<ShareStates> {
        let log = persist::open(storage, dir).map_err(storage_error)?;
        let mut live = BTreeMap::new();
        let mut written = None;
        let saved: Vec<_> = log.read(|s| {
            s.partitions
                .iter()
                .map(|(k, p)| (k.clone(), p.restore()))
                .collect()
        });
        for (key, mut partition) in saved {
            let archived = partition.archive_at_limit(limits(&key.0).delivery_count_limit);
            if !archived.is_empty() {
                tracing::info!(
                    group = key.0,
                    topic = key.1,
                    partition = key.2,
                    records = archived.len(),
                    "records in flight at the last stop reached the delivery limit: archived"
                );
                written = Some(
                    log.write(settled(
                        &key,
                        archived.iter().map(|a| (a.offset, Settled::Archived)),
                    ))
                    .map_err(storage_error)?,
                );
            }
            live.insert(key, partition);
        }
        if let Some(written) = written {
            log.wait(written).map_err(storage_error)?;
        }
        Ok(ShareStates {
            log,
            live: Mutex::new(live),
        })
    }

    /// Acquires for `member` (see [`SharePartition::acquire`]) within the window `window`
    /// gives (from the share-partition: where available records are taken from, the end new
    /// ones stop at, and what the caller read there), first giving back records whose locks
    /// expired; a share-partition seen for the first time starts at `start()`. Returns once the
    /// acquisition is durable, with the records archived on the way and what `window` read.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn acquire<T>(
        &self,
        key: ShareKey,
        member: &str,
        max_records: usize,
        limits: &ShareLimits,
        now_ms: i64,
        start: impl FnOnce() -> Result<i64>,
        window: impl FnOnce(&SharePartition) -> Result<(i64, i64, T)>,
    ) -> Result<(Vec<AcquiredRecords>, Vec<Archived>, T)> {
        let (acquired, archived, read, written) = {
            let mut live = self.live.lock();
            let mut last = None;
            if !live.contains_key(&key) {
                let start = start()?;
                last = Some(self.write(ShareRecord::Initialized {
                    key: key.clone(),
                    start,
                })?);
                live.insert(key.clone(), SharePartition::new(start));
            }
            let partition = live.get_mut(&key).expect("inserted above");
            let archived = partition.expire_locks(limits, now_ms);
            if !archived.is_empty() {
                last = Some(self.write(settled(
                    &key,
                    archived.iter().map(|a| (a.offset, Settled::Archived)),
                ))?);
            }
            let (from, end, read) = window(partition)?;
            let acquired =
                partition.acquire_between(member, from, end, max_records, limits, now_ms);
            for range in &acquired {
                last = Some(self.write(ShareRecord::Acquired {
                    key: key.clone(),
                    first: range.first_offset,
                    last: range.last_offset,
                })?);
            }
            (acquired, archived, read, last)
        };
        self.wait(written)?;
        Ok((acquired, archived, read))
    }

    /// Applies `member`'s acknowledgements (see [`SharePartition::acknowledge`]), first giving
    /// back records whose locks expired; returns once they are durable, with the records
    /// archived unaccepted.
    pub(crate) fn acknowledge(
        &self,
        key: &ShareKey,
        member: &str,
        batches: &[(i64, i64, Vec<AcknowledgeType>)],
        limits: &ShareLimits,
        now_ms: i64,
    ) -> Result<Vec<Archived>> {
        let (archived, written) = {
            let mut live = self.live.lock();
            let Some(partition) = live.get_mut(key) else {
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
                        AcknowledgeType::Release => {}
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
            let written = if done.is_empty() {
                None
            } else {
                Some(self.write(settled(key, done.into_iter()))?)
            };
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
        now_ms: i64,
    ) -> Result<Vec<Archived>> {
        let (archived, written) = {
            let mut live = self.live.lock();
            let mut all = Vec::new();
            let mut last = None;
            for (key, partition) in live.iter_mut().filter(|(k, _)| k.0 == group) {
                let archived = partition.release_member(member, limits, now_ms);
                if !archived.is_empty() {
                    last = Some(self.write(settled(
                        key,
                        archived.iter().map(|a| (a.offset, Settled::Archived)),
                    ))?);
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
            let before = live.len();
            live.retain(|key, _| key.0 != group);
            if live.len() == before {
                return Ok(false);
            }
            self.write(ShareRecord::GroupDeleted {
                group: group.to_owned(),
            })?
        };
        self.wait(Some(written))?;
        Ok(true)
    }

    /// Every group with share state.
    pub(crate) fn group_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.live.lock().keys().map(|k| k.0.clone()).collect();
        ids.dedup();
        ids
    }

    /// Every share-partition of group `group`.
    pub(crate) fn describe(&self, group: &str) -> Vec<SharePartitionState> {
        self.live
            .lock()
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

fn settled(key: &ShareKey, offsets: impl Iterator<Item = (i64, Settled)>) -> ShareRecord {
    ShareRecord::Settled {
        key: key.clone(),
        offsets: offsets.collect(),
    }
}
