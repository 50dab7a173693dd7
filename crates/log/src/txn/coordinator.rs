//! The transaction coordinator's decisions (Kafka's `TransactionCoordinator` and
//! `TransactionMetadata`, transaction version 1): each call checks the producer id and epoch
//! against the transactional id's, moves its state and logs the new metadata durably before
//! answering. Writing the markers a decision calls for is the engine's (`txn_admin.rs`): a
//! decision to end a transaction is logged as `PrepareCommit`/`PrepareAbort` first, so a crash
//! before the markers are all written finishes them on the next open.
//!
//! Each transactional id's decisions are ordered by its own lock (one of [`STRIPES`], by the
//! id's hash), held while its record is fsynced, so its next decision reads the state the last
//! one left; ids under different locks decide at once and share the state log's fsyncs. A
//! decision to end a transaction keeps the lock (a [`Finishing`]) until its markers are
//! written and its completion logged, so nothing decided for the id meanwhile, and no
//! second finisher, can race those markers. A finish that fails leaves the id preparing,
//! and lock-free: housekeeping takes it up again ([`Transactions::resume`]) until it
//! completes.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::path::Path;
use std::sync::Arc;

use logd_offsets::OffsetCommit;
use logd_storage::{StateLog, Storage};
use parking_lot::{Mutex, MutexGuard};

use super::persist::{self, PendingOffset, SavedTxns, TxnMeta, TxnRecord, TxnState};
use crate::error::{Error, Result};

/// Kafka's `transaction.max.timeout.ms` default: 15 minutes.
pub const TRANSACTION_MAX_TIMEOUT_MS: i32 = 900_000;
/// Kafka's `transactional.id.expiration.ms` default: an id idle this long is forgotten.
pub const TRANSACTIONAL_ID_EXPIRATION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// How many locks the transactional ids are spread over: two ids share one with this chance's
/// inverse, and then only wait for each other's decisions, never deadlock (no call holds two).
const STRIPES: usize = 256;

/// What finishing a transaction takes: a marker in each partition, and (for a commit) the
/// offsets it commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Completion {
    pub id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
    pub partitions: Vec<(String, u32)>,
    pub offsets: Vec<(String, Vec<OffsetCommit>)>,
}

/// A decision to end a transaction, its id's lock held until [`Transactions::completed`]
/// logs the end (or until dropped, when finishing failed: housekeeping resumes it).
#[derive(Debug)]
#[must_use = "a decided end is finished by writing its markers, then `completed`"]
pub(crate) struct Finishing<'a> {
    pub done: Completion,
    _held: MutexGuard<'a, ()>,
}

/// What InitProducerId decided.
#[derive(Debug)]
pub(crate) enum Init<'a> {
    /// The producer id and epoch to use.
    Ready(i64, i16),
    /// The id had a transaction open: it is aborted at the new epoch (the old instance is
    /// fenced), after which the new instance uses that epoch.
    AbortFirst(Finishing<'a>),
}

/// A transactional id as DescribeTransactions shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    /// The transactional id.
    pub transactional_id: String,
    /// Its producer id.
    pub producer_id: i64,
    /// Its epoch.
    pub epoch: i16,
    /// Its state.
    pub state: TxnState,
    /// Its transaction timeout.
    pub timeout_ms: i32,
    /// When its open transaction began (ms), -1 when none is open.
    pub started_ms: i64,
    /// The partitions in its transaction.
    pub partitions: Vec<(String, u32)>,
    /// The groups whose offsets it commits.
    pub groups: Vec<String>,
}

/// The engine's transactional ids.
#[derive(Debug)]
pub(crate) struct Transactions {
    log: StateLog<SavedTxns>,
    /// Each id's decisions under `stripes[hash(id) % STRIPES]`.
    stripes: Box<[Mutex<()>]>,
    /// Completions still to refuse, as a failed write would (the failed-finish tests).
    #[cfg(test)]
    pub(crate) fail_completions: std::sync::atomic::AtomicUsize,
}

/// The checks every call from a transactional producer passes: its id is known, maps to
/// `producer_id`, at `epoch`.
fn checked<'a>(ids: &'a SavedTxns, id: &str, producer_id: i64, epoch: i16) -> Result<&'a TxnMeta> {
    let meta = ids
        .ids
        .get(id)
        .ok_or_else(|| Error::InvalidProducerIdMapping {
            transactional_id: id.to_owned(),
            producer_id,
        })?;
    if meta.producer_id != producer_id {
        return Err(Error::InvalidProducerIdMapping {
            transactional_id: id.to_owned(),
            producer_id,
        });
    }
    if meta.epoch != epoch {
        return Err(Error::ProducerFenced {
            transactional_id: id.to_owned(),
            epoch,
            current: meta.epoch,
        });
    }
    Ok(meta)
}

fn completion(id: &str, meta: &TxnMeta) -> Completion {
    let commit = meta.state == TxnState::PrepareCommit;
    let offsets = match commit {
        true => meta
            .groups
            .iter()
            .map(|(group, offsets)| {
                let commits = offsets
                    .iter()
                    .map(|((topic, partition), pending)| OffsetCommit {
                        topic: topic.clone(),
                        partition: *partition,
                        offset: pending.offset,
                        metadata: pending.metadata.clone(),
                    })
                    .collect();
                (group.clone(), commits)
            })
            .collect(),
        false => Vec::new(),
    };
    Completion {
        id: id.to_owned(),
        producer_id: meta.producer_id,
        epoch: meta.epoch,
        commit,
        partitions: meta.partitions.iter().cloned().collect(),
        offsets,
    }
}

/// The transaction state machine's rules, checked on every change in debug builds (the model
/// test's random inits, adds, ends, timeouts and restarts go through them): a move is one of
/// Kafka's (a new id starts `Empty`; `Empty` or complete to `Ongoing` or, bumped, `Empty`;
/// `Ongoing` to `Ongoing` or a prepare; a prepare to its completion, and nothing else), a
/// producer id's epoch never goes back, and a state with no transaction open holds no
/// partitions, groups or start time.
fn debug_check(id: &str, before: Option<&TxnMeta>, next: &TxnMeta) {
    use TxnState::*;
    let from = before.map(|m| m.state);
    let allowed = match (from, next.state) {
        (None, to) => to == Empty,
        (Some(Empty | CompleteCommit | CompleteAbort), to) => matches!(to, Empty | Ongoing),
        (Some(Ongoing), to) => matches!(to, Ongoing | PrepareCommit | PrepareAbort),
        (Some(PrepareCommit), to) => to == CompleteCommit,
        (Some(PrepareAbort), to) => to == CompleteAbort,
    };
    debug_assert!(allowed, "{id}: {from:?} to {:?}", next.state);
    if let Some(before) = before
        && before.producer_id == next.producer_id
    {
        debug_assert!(
            next.epoch >= before.epoch,
            "{id}: epoch {} after {}",
            next.epoch,
            before.epoch
        );
    }
    if matches!(next.state, Empty | CompleteCommit | CompleteAbort) {
        debug_assert!(
            next.partitions.is_empty() && next.groups.is_empty() && next.started_ms == -1,
            "{id}: {:?} with a transaction's contents: {next:?}",
            next.state
        );
    }
}

/// Whether `meta`'s open transaction has outlived its timeout at `now_ms`.
fn is_timed_out(meta: &TxnMeta, now_ms: i64) -> bool {
    meta.state == TxnState::Ongoing
        && now_ms.saturating_sub(meta.started_ms) >= i64::from(meta.timeout_ms)
}

/// `meta` with its epoch raised (a new producer id once epochs run out). The epoch before is
/// remembered only for a bump a recovering client asked for (`recovering`, KIP-360), so that
/// its retry gets the same answer; a fenced instance naming it stays fenced (Kafka's
/// `prepareIncrementProducerEpoch`).
fn fenced(
    meta: &TxnMeta,
    recovering: bool,
    allocate: impl FnOnce() -> Result<i64>,
) -> Result<TxnMeta> {
    let mut next = meta.clone();
    if meta.epoch >= i16::MAX - 1 {
        next.producer_id = allocate()?;
        next.epoch = 0;
        next.last_epoch = -1;
    } else {
        next.epoch = meta.epoch + 1;
        next.last_epoch = if recovering { meta.epoch } else { -1 };
    }
    Ok(next)
}

impl Transactions {
    /// The transaction state saved in the data directory `dir`.
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<Transactions> {
        Ok(Transactions {
            log: persist::open(storage, dir)?,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            #[cfg(test)]
            fail_completions: Default::default(),
        })
    }

    /// The lock ordering `id`'s decisions (a fixed hash, so an id keeps its lock).
    fn stripe(&self, id: &str) -> &Mutex<()> {
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(id);
        &self.stripes[(hash % STRIPES as u64) as usize]
    }

    fn finishing<'a>(&self, held: MutexGuard<'a, ()>, id: &str, meta: &TxnMeta) -> Finishing<'a> {
        Finishing {
            done: completion(id, meta),
            _held: held,
        }
    }

    fn put(&self, id: &str, meta: TxnMeta) -> Result<()> {
        if cfg!(debug_assertions) {
            let before = self.log.read(|s| s.ids.get(id).cloned());
            debug_check(id, before.as_ref(), &meta);
        }
        let id = id.to_owned();
        Ok(self.log.append(TxnRecord::Put { id, meta })?)
    }

    /// InitProducerId with a transactional id (Kafka's `handleInitProducerId`): a new id gets
    /// a new producer id at epoch 0; a known one its epoch raised, fencing the instance
    /// before it, whose open transaction is aborted first. `expected` is the producer id and
    /// epoch a client recovering from an error names (KIP-360): it must be the id's current or
    /// previous one, and a retry of a bump that already happened gets the same answer.
    pub(crate) fn init(
        &self,
        id: &str,
        timeout_ms: i32,
        max_timeout_ms: i32,
        expected: Option<(i64, i16)>,
        now_ms: i64,
        allocate: impl FnOnce() -> Result<i64>,
    ) -> Result<Init<'_>> {
        if !(1..=max_timeout_ms).contains(&timeout_ms) {
            return Err(Error::InvalidTransactionTimeout {
                timeout_ms,
                max_ms: max_timeout_ms,
            });
        }
        let held = self.stripe(id).lock();
        let current = self.log.read(|s| s.ids.get(id).cloned());
        let Some(meta) = current else {
            let producer_id = allocate()?;
            let meta = TxnMeta {
                producer_id,
                epoch: 0,
                last_epoch: -1,
                timeout_ms,
                state: TxnState::Empty,
                partitions: BTreeSet::new(),
                groups: Default::default(),
                started_ms: -1,
                updated_ms: now_ms,
            };
            self.put(id, meta)?;
            return Ok(Init::Ready(producer_id, 0));
        };
        if let Some((producer_id, epoch)) = expected {
            let known = producer_id == meta.producer_id
                && (epoch == meta.epoch || epoch == meta.last_epoch);
            if !known {
                return Err(Error::ProducerFenced {
                    transactional_id: id.to_owned(),
                    epoch,
                    current: meta.epoch,
                });
            }
            // A retry of the bump that made the current epoch: answer it again.
            if epoch == meta.last_epoch && !meta.state.is_preparing() {
                return Ok(Init::Ready(meta.producer_id, meta.epoch));
            }
        }
        if meta.state.is_preparing() {
            return Err(Error::ConcurrentTransactions(id.to_owned()));
        }
        let mut next = fenced(&meta, expected.is_some(), allocate)?;
        next.timeout_ms = timeout_ms;
        next.updated_ms = now_ms;
        if meta.state == TxnState::Ongoing {
            next.state = TxnState::PrepareAbort;
            self.put(id, next.clone())?;
            return Ok(Init::AbortFirst(self.finishing(held, id, &next)));
        }
        next.state = TxnState::Empty;
        let ready = Init::Ready(next.producer_id, next.epoch);
        self.put(id, next)?;
        Ok(ready)
    }

    /// Opens the transaction if needed and changes it with `change` (AddPartitionsToTxn,
    /// AddOffsetsToTxn): refused while markers are being written.
    fn extend(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        now_ms: i64,
        change: impl FnOnce(&mut TxnMeta),
    ) -> Result<()> {
        let _held = self.stripe(id).lock();
        let meta = self
            .log
            .read(|s| checked(s, id, producer_id, epoch).cloned())?;
        if meta.state.is_preparing() {
            return Err(Error::ConcurrentTransactions(id.to_owned()));
        }
        let mut next = meta.clone();
        if meta.state != TxnState::Ongoing {
            next.state = TxnState::Ongoing;
            next.started_ms = now_ms;
            next.partitions.clear();
            next.groups.clear();
        }
        change(&mut next);
        next.updated_ms = now_ms;
        if next == meta {
            return Ok(());
        }
        self.put(id, next)
    }

    /// AddPartitionsToTxn: `partitions` join the transaction.
    pub(crate) fn add_partitions(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, u32)],
        now_ms: i64,
    ) -> Result<()> {
        self.extend(id, producer_id, epoch, now_ms, |meta| {
            meta.partitions.extend(partitions.iter().cloned());
        })
    }

    /// AddOffsetsToTxn: the transaction will commit offsets for `group`.
    pub(crate) fn add_group(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.extend(id, producer_id, epoch, now_ms, |meta| {
            meta.groups.entry(group.to_owned()).or_default();
        })
    }

    /// TxnOffsetCommit: `offsets` for `group` commit with the transaction, which must have
    /// added the group.
    pub(crate) fn stage_offsets(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        offsets: &[OffsetCommit],
        now_ms: i64,
    ) -> Result<()> {
        let _held = self.stripe(id).lock();
        let meta = self
            .log
            .read(|s| checked(s, id, producer_id, epoch).cloned())?;
        if meta.state != TxnState::Ongoing || !meta.groups.contains_key(group) {
            return Err(Error::InvalidTxnState(format!(
                "transactional id {id} did not add group {group} to an open transaction"
            )));
        }
        let mut next = meta;
        let staged = next.groups.entry(group.to_owned()).or_default();
        for commit in offsets {
            staged.insert(
                (commit.topic.clone(), commit.partition),
                PendingOffset {
                    offset: commit.offset,
                    metadata: commit.metadata.clone(),
                },
            );
        }
        next.updated_ms = now_ms;
        self.put(id, next)
    }

    /// EndTxn: decides to commit or abort the open transaction, returning what finishing it
    /// takes; `None` for a retry of an end already complete (nothing is written twice).
    pub(crate) fn end(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now_ms: i64,
    ) -> Result<Option<Finishing<'_>>> {
        let held = self.stripe(id).lock();
        let meta = self
            .log
            .read(|s| checked(s, id, producer_id, epoch).cloned())?;
        let wrong = |state: TxnState| {
            Error::InvalidTxnState(format!(
                "transactional id {id} cannot {} in state {}",
                if commit { "commit" } else { "abort" },
                state.name()
            ))
        };
        match (meta.state, commit) {
            (TxnState::Ongoing, _) => {}
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => {
                return Ok(None);
            }
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                return Err(Error::ConcurrentTransactions(id.to_owned()));
            }
            (state, _) => return Err(wrong(state)),
        }
        let mut next = meta;
        next.state = match commit {
            true => TxnState::PrepareCommit,
            false => TxnState::PrepareAbort,
        };
        next.updated_ms = now_ms;
        self.put(id, next.clone())?;
        Ok(Some(self.finishing(held, id, &next)))
    }

    /// Logs that the markers (and offsets) `finishing` called for are all written: the id's
    /// transaction is complete, and its lock free.
    pub(crate) fn completed(&self, finishing: Finishing<'_>, now_ms: i64) -> Result<()> {
        let done = &finishing.done;
        #[cfg(test)]
        {
            use std::sync::atomic::Ordering;
            let due = self.fail_completions.load(Ordering::SeqCst);
            if due > 0 {
                self.fail_completions.store(due - 1, Ordering::SeqCst);
                return Err(Error::InvalidTxnState("an injected failure".into()));
            }
        }
        let meta = self.log.read(|s| s.ids.get(&done.id).cloned());
        // The lock was held since the decision, so the id is as it left it.
        debug_assert!(
            meta.as_ref()
                .is_some_and(|m| m.state.is_preparing() && m.epoch == done.epoch),
            "{}: finished {done:?} over {meta:?}",
            done.id
        );
        let Some(mut meta) = meta else {
            return Ok(());
        };
        if !meta.state.is_preparing() || meta.epoch != done.epoch {
            return Ok(());
        }
        meta.state = match done.commit {
            true => TxnState::CompleteCommit,
            false => TxnState::CompleteAbort,
        };
        meta.partitions.clear();
        meta.groups.clear();
        meta.started_ms = -1;
        meta.updated_ms = now_ms;
        self.put(&done.id, meta)
    }

    /// Takes up `id`'s transaction again if it is preparing and no one holds its lock: the
    /// finish a crash or a failed write interrupted (on open, and each housekeeping round).
    pub(crate) fn resume(&self, id: &str) -> Option<Finishing<'_>> {
        let held = self.stripe(id).try_lock()?;
        let meta = self.log.read(|s| s.ids.get(id).cloned())?;
        meta.state
            .is_preparing()
            .then(|| self.finishing(held, id, &meta))
    }

    /// The ids whose open transaction is older than its timeout, for
    /// [`Transactions::abort_timed_out`] (Kafka's `abortTimedOutTransactions`).
    pub(crate) fn timed_out(&self, now_ms: i64) -> Vec<String> {
        self.log.read(|s| {
            s.ids
                .iter()
                .filter(|(_, m)| is_timed_out(m, now_ms))
                .map(|(id, _)| id.clone())
                .collect()
        })
    }

    /// Fences and aborts `id`'s transaction (at a raised epoch, so its producer cannot go on)
    /// if it is still open past its timeout, as seen under the id's lock.
    pub(crate) fn abort_timed_out(
        &self,
        id: &str,
        now_ms: i64,
        allocate: impl FnOnce() -> Result<i64>,
    ) -> Result<Option<Finishing<'_>>> {
        let held = self.stripe(id).lock();
        let Some(meta) = self.log.read(|s| s.ids.get(id).cloned()) else {
            return Ok(None);
        };
        if !is_timed_out(&meta, now_ms) {
            return Ok(None);
        }
        let mut next = fenced(&meta, false, allocate)?;
        next.state = TxnState::PrepareAbort;
        next.updated_ms = now_ms;
        self.put(id, next.clone())?;
        Ok(Some(self.finishing(held, id, &next)))
    }

    /// Forgets the ids idle for `id_expiration_ms` with nothing open, each checked again
    /// under its lock; returns how many.
    pub(crate) fn forget_idle(&self, now_ms: i64, id_expiration_ms: i64) -> Result<usize> {
        let is_idle = |m: &TxnMeta| {
            matches!(
                m.state,
                TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
            ) && now_ms.saturating_sub(m.updated_ms) >= id_expiration_ms
        };
        let idle: Vec<String> = self.log.read(|s| {
            s.ids
                .iter()
                .filter(|(_, m)| is_idle(m))
                .map(|(id, _)| id.clone())
                .collect()
        });
        let mut forgotten = 0;
        for id in idle {
            let _held = self.stripe(&id).lock();
            if self.log.read(|s| s.ids.get(&id).is_some_and(is_idle)) {
                self.log.append(TxnRecord::Remove { id })?;
                forgotten += 1;
            }
        }
        Ok(forgotten)
    }

    /// Fences and aborts `id`'s open transaction now (`kafka-transactions.sh`'s abort of a
    /// hanging transaction, for an id the coordinator knows).
    pub(crate) fn abort_now(
        &self,
        id: &str,
        now_ms: i64,
        allocate: impl FnOnce() -> Result<i64>,
    ) -> Result<Option<Finishing<'_>>> {
        let held = self.stripe(id).lock();
        let meta = self
            .log
            .read(|s| s.ids.get(id).cloned())
            .ok_or_else(|| Error::TransactionalIdNotFound(id.to_owned()))?;
        match meta.state {
            TxnState::Ongoing => {}
            state if state.is_preparing() => return Ok(Some(self.finishing(held, id, &meta))),
            _ => return Ok(None),
        }
        let mut next = fenced(&meta, false, allocate)?;
        next.state = TxnState::PrepareAbort;
        next.updated_ms = now_ms;
        self.put(id, next.clone())?;
        Ok(Some(self.finishing(held, id, &next)))
    }

    /// The ids whose markers are still to write (a crash or a failed write interrupted them,
    /// or a finisher holds them now), for [`Transactions::resume`].
    pub(crate) fn preparing(&self) -> Vec<String> {
        self.log.read(|s| {
            s.ids
                .iter()
                .filter(|(_, m)| m.state.is_preparing())
                .map(|(id, _)| id.clone())
                .collect()
        })
    }

    /// Whether producer `producer_id` at `epoch` may write a transactional batch to `topic`
    /// `partition`: its transactional id's transaction is open and holds the partition
    /// (Kafka's produce-side verification, KIP-890 part 1), so no batch can open a
    /// transaction in a partition that no marker will close. A transaction whose markers
    /// are being written is CONCURRENT_TRANSACTIONS, as Kafka's coordinator answers.
    pub(crate) fn verify_produce(
        &self,
        producer_id: i64,
        epoch: i16,
        topic: &str,
        partition: u32,
    ) -> Result<()> {
        self.log.read(|s| {
            let Some(id) = s.producers.get(&producer_id) else {
                return Err(Error::InvalidTxnState(format!(
                    "producer {producer_id} has no transactional id"
                )));
            };
            let meta = &s.ids[id];
            if meta.epoch != epoch {
                return Err(Error::ProducerFenced {
                    transactional_id: id.clone(),
                    epoch,
                    current: meta.epoch,
                });
            }
            if meta.state.is_preparing() {
                return Err(Error::ConcurrentTransactions(format!(
                    "transactional id {id}'s transaction is ending"
                )));
            }
            let holds = meta.state == TxnState::Ongoing
                && meta.partitions.contains(&(topic.to_owned(), partition));
            match holds {
                true => Ok(()),
                false => Err(Error::InvalidTxnState(format!(
                    "{topic}-{partition} is not in transactional id {id}'s open transaction"
                ))),
            }
        })
    }

    /// The partitions of `group` with offsets an open transaction commits: a stable
    /// OffsetFetch waits for them (Kafka's UNSTABLE_OFFSET_COMMIT).
    pub(crate) fn pending_offsets(&self, group: &str) -> BTreeSet<(String, i32)> {
        self.log.read(|s| {
            s.ids
                .values()
                .filter(|m| m.state == TxnState::Ongoing || m.state.is_preparing())
                .filter_map(|m| m.groups.get(group))
                .flat_map(|offsets| offsets.keys().cloned())
                .collect()
        })
    }

    /// Every transactional id, described, by id.
    pub(crate) fn describe_all(&self) -> Vec<TxnDescription> {
        self.log.read(|s| {
            s.ids
                .iter()
                .map(|(id, m)| TxnDescription {
                    transactional_id: id.clone(),
                    producer_id: m.producer_id,
                    epoch: m.epoch,
                    state: m.state,
                    timeout_ms: m.timeout_ms,
                    started_ms: m.started_ms,
                    partitions: m.partitions.iter().cloned().collect(),
                    groups: m.groups.keys().cloned().collect(),
                })
                .collect()
        })
    }
}
