//! Durable share-partition state, as Kafka keeps it in `__share_group_state`: per share group
//! and partition, the start and end offsets and each in-flight record's delivery count and
//! whether it is done (acknowledged or archived), on a `logd_storage::StateLog` in `shares/` of
//! the data directory. Only what must survive is logged: acquisitions (a delivery counted, the
//! end moved), settlements and start moves. Locks and holders are not: after a restart every
//! record that was held is given back, as if its lock expired, with its count kept, so a record
//! in flight at a crash is delivered again with its count raised, and one whose
//! acknowledgement was answered never is. The format is in `docs/format.md`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, StateLogConfig, StateMachine, Storage};
use serde::{Deserialize, Serialize};

use super::partition::{RecordState, SharePartition};

/// The state log's directory in the data directory.
pub(crate) const SHARES_DIR: &str = "shares";
/// Fold the log into a snapshot once it is this big.
const SNAPSHOT_AFTER_BYTES: u64 = 16 << 20;

/// A share-partition: group, topic, partition.
pub(crate) type ShareKey = (String, String, u32);

/// A record done with, as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Settled {
    /// Accepted.
    Acknowledged,
    /// Rejected, a gap, or past the delivery limit.
    Archived,
}

/// A record archived unaccepted in a group with a dead-letter topic: what to write there,
/// logged with the archiving in one record so that neither happens without the other. Its
/// batch carries `producer_id` and `sequence`, so a write a crash interrupted is recognised
/// in the dead-letter partition's producer state and not written twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Letter {
    /// The source record's offset (its topic and partition are the share-partition's).
    pub offset: i64,
    /// How many times it was delivered.
    pub delivery_count: u16,
    /// Rejected by a member (else: at the delivery limit).
    pub rejected: bool,
    /// Copy the record's key, value and headers (`errors.deadletterqueue.copy.record.enable`).
    pub copy_record: bool,
    /// The dead-letter topic.
    pub topic: String,
    /// Its partition (the source partition modulo its count, as Kafka).
    pub partition: u32,
    /// The idempotent producer id of the write.
    pub producer_id: i64,
    /// The record's sequence for that producer in that partition.
    pub sequence: i32,
    /// Why the member rejected it, when it said (`ShareConsumer::reject_with`).
    pub error: Option<RejectReason>,
}

/// Why a member rejected a record, for its dead letter's `logd.dlq.error.*` and
/// `logd.dlq.reason` headers (a retry worker's failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectReason {
    /// The error's class (`logd.dlq.error.class`).
    pub class: String,
    /// Its message (`logd.dlq.error.message`).
    pub message: String,
    /// The record ran out of attempts (`logd.dlq.reason` `max-attempts`, else `permanent`).
    pub out_of_attempts: bool,
}

/// A letter's place in write order: dead-letter topic, partition, producer id, sequence.
pub(crate) type LetterId = (String, u32, i64, i32);

impl Letter {
    pub fn id(&self) -> LetterId {
        (
            self.topic.clone(),
            self.partition,
            self.producer_id,
            self.sequence,
        )
    }
}

/// One share-partition as saved: offsets in `start..end` not listed were never acquired
/// (impossible: acquisition lists them) or are done and below a settled head.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SavedPartition {
    pub start: i64,
    pub end: i64,
    /// Each record in `start..end`: its delivery count, and whether it is done.
    pub records: BTreeMap<i64, (u16, Option<Settled>)>,
}

impl SavedPartition {
    fn advance_start(&mut self) {
        while let Some(entry) = self.records.first_entry() {
            if entry.get().1.is_none() {
                break;
            }
            self.start = *entry.key() + 1;
            entry.remove();
        }
        if self.records.is_empty() {
            self.start = self.end;
        }
    }

    /// The live share-partition after a restart: every record not done is available.
    pub fn restore(&self) -> SharePartition {
        SharePartition::restored(
            self.start,
            self.end,
            self.records.iter().map(|(&offset, &(count, settled))| {
                let state = match settled {
                    None => RecordState::Available,
                    Some(Settled::Acknowledged) => RecordState::Acknowledged,
                    Some(Settled::Archived) => RecordState::Archived,
                };
                (offset, state, count)
            }),
        )
    }
}

/// Every saved share-partition, and the dead letters logged but not yet known written.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct SavedShares {
    pub partitions: BTreeMap<ShareKey, SavedPartition>,
    pub letters: BTreeMap<LetterId, (ShareKey, Letter)>,
}

/// What the share log records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum ShareRecord {
    /// A share-partition's state begins at `start` (from `share.auto.offset.reset`).
    Initialized { key: ShareKey, start: i64 },
    /// `first..=last` were acquired: one more delivery each; the end moves past them.
    Acquired {
        key: ShareKey,
        first: i64,
        last: i64,
    },
    /// These offsets are done.
    Settled {
        key: ShareKey,
        offsets: Vec<(i64, Settled)>,
    },
    /// The start moved to `offset` (retention, or an offset reset); what is below is done.
    StartMoved { key: ShareKey, offset: i64 },
    /// The group's share state is gone (the group was deleted).
    GroupDeleted { group: String },
    /// As `Settled`, and these archived records are to be written to the dead-letter topic.
    SettledWithLetters {
        key: ShareKey,
        offsets: Vec<(i64, Settled)>,
        letters: Vec<Letter>,
    },
    /// These letters are in their dead-letter partitions.
    LettersWritten { letters: Vec<LetterId> },
    /// These share-partitions' states are gone (DeleteShareGroupOffsets): the group starts
    /// them again from `share.auto.offset.reset`.
    PartitionsDeleted { keys: Vec<ShareKey> },
    /// As `Settled`, in runs: each `first..=last` is done the one way. What is logged now
    /// (`Settled` is still read): an acknowledgement of a batch of thousands is one run, a
    /// few dozen bytes, not a dozen bytes an offset.
    SettledRuns {
        key: ShareKey,
        runs: Vec<(i64, i64, Settled)>,
    },
}

/// `offsets` (in offset order) as runs of consecutive offsets settled the same way.
pub(crate) fn runs(offsets: &[(i64, Settled)]) -> Vec<(i64, i64, Settled)> {
    let mut runs: Vec<(i64, i64, Settled)> = Vec::new();
    for &(offset, settled) in offsets {
        match runs.last_mut() {
            Some(run) if run.1 + 1 == offset && run.2 == settled => run.1 = offset,
            _ => runs.push((offset, offset, settled)),
        }
    }
    runs
}

impl StateMachine for SavedShares {
    type Record = ShareRecord;

    fn apply(&mut self, record: ShareRecord) {
        match record {
            ShareRecord::Initialized { key, start } => {
                self.partitions.insert(
                    key,
                    SavedPartition {
                        start,
                        end: start,
                        records: BTreeMap::new(),
                    },
                );
            }
            ShareRecord::Acquired { key, first, last } => {
                if let Some(p) = self.partitions.get_mut(&key) {
                    for offset in first.max(p.start)..=last {
                        p.records.entry(offset).or_insert((0, None)).0 += 1;
                    }
                    p.end = p.end.max(last + 1);
                }
            }
            ShareRecord::Settled { key, offsets } => self.settle(&key, offsets),
            ShareRecord::SettledRuns { key, runs } => {
                if let Some(p) = self.partitions.get_mut(&key) {
                    for (first, last, settled) in runs.into_iter().filter(|r| r.0 <= r.1) {
                        for (_, record) in p.records.range_mut(first..=last) {
                            record.1 = Some(settled);
                        }
                    }
                    p.advance_start();
                }
            }
            ShareRecord::StartMoved { key, offset } => {
                if let Some(p) = self.partitions.get_mut(&key)
                    && offset > p.start
                {
                    p.records = p.records.split_off(&offset);
                    p.start = offset;
                    p.end = p.end.max(offset);
                }
            }
            ShareRecord::GroupDeleted { group } => {
                // Its letters still go out: their records were archived.
                self.partitions.retain(|(g, _, _), _| *g != group);
            }
            ShareRecord::SettledWithLetters {
                key,
                offsets,
                letters,
            } => {
                self.settle(&key, offsets);
                for letter in letters {
                    self.letters.insert(letter.id(), (key.clone(), letter));
                }
            }
            ShareRecord::LettersWritten { letters } => {
                for id in letters {
                    self.letters.remove(&id);
                }
            }
            ShareRecord::PartitionsDeleted { keys } => {
                for key in keys {
                    self.partitions.remove(&key);
                }
            }
        }
    }
}

impl SavedShares {
    fn settle(&mut self, key: &ShareKey, offsets: Vec<(i64, Settled)>) {
        if let Some(p) = self.partitions.get_mut(key) {
            for (offset, settled) in offsets {
                if let Some(record) = p.records.get_mut(&offset) {
                    record.1 = Some(settled);
                }
            }
            p.advance_start();
        }
    }
}

/// Opens the share log in `dir` (the data directory).
pub(crate) fn open(
    storage: Arc<dyn Storage>,
    dir: &Path,
) -> logd_storage::Result<StateLog<SavedShares>> {
    StateLog::open(
        storage,
        dir.join(SHARES_DIR),
        StateLogConfig {
            name: SHARES_DIR,
            snapshot_after_bytes: SNAPSHOT_AFTER_BYTES,
        },
    )
}
