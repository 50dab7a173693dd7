//! One share-partition's record states, as Kafka's `SharePartition` keeps them (KIP-932): the
//! start offset (every record below it is done with), the end of what was ever acquired, and
//! between them each record's state (available, acquired by a member until its lock expires,
//! acknowledged, archived) and delivery count. No clock and no I/O: every call takes `now`
//! in milliseconds, so the wire and embedded share consumers drive the same rules, and model
//! tests can drive it through every interleaving.
//!
//! Kafka's rules kept here: acquiring counts a delivery and takes a lock for
//! `share.record.lock.duration.ms`; a record released, whose lock expired or whose member left
//! becomes available again, or archived once its delivery count reached
//! `share.delivery.count.limit`; ACCEPT acknowledges, REJECT (and GAP, for an offset with no
//! record) archives; an acknowledgement of a record the member does not hold, or that is not
//! acquired, is INVALID_RECORD_STATE and one past what was acquired INVALID_REQUEST, and either
//! changes nothing of the request; no new record is acquired while
//! `share.partition.max.record.locks` records are between start and end; RENEW (KIP-1222)
//! starts a held record's lock again, unless the group's `share.renew.acknowledge.enable` is
//! off (INVALID_RECORD_STATE). logd's own addition:
//! a released or expired record may wait an exponential backoff before it is available again,
//! without holding back the records after it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};

/// How a member acknowledges a record (Kafka's `AcknowledgeType` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcknowledgeType {
    /// 0: the offset holds no record for the member (compacted away, a control batch).
    Gap,
    /// 1: processed.
    Accept,
    /// 2: give it back, to be delivered again.
    Release,
    /// 3: unprocessable: archive it (and dead-letter it, where the group says so).
    Reject,
    /// 4: still at work on it: its lock starts again for the lock duration (KIP-1222); it stays
    /// acquired by the member, to be acknowledged later.
    Renew,
}

impl AcknowledgeType {
    /// The type of Kafka's code, `None` for a code Kafka does not define.
    pub fn from_code(code: i8) -> Option<AcknowledgeType> {
        match code {
            0 => Some(AcknowledgeType::Gap),
            1 => Some(AcknowledgeType::Accept),
            2 => Some(AcknowledgeType::Release),
            3 => Some(AcknowledgeType::Reject),
            4 => Some(AcknowledgeType::Renew),
            _ => None,
        }
    }
}

/// A record's state (Kafka's `RecordState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// To be acquired.
    Available,
    /// Held by a member until its lock expires.
    Acquired,
    /// Processed: never delivered again.
    Acknowledged,
    /// Done with, unprocessed: rejected, past the delivery limit, or below the log's start.
    Archived,
}

/// The limits a share-partition works under: the group's configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareLimits {
    /// `share.record.lock.duration.ms`.
    pub lock_duration_ms: i64,
    /// `share.delivery.count.limit`.
    pub delivery_count_limit: u16,
    /// `share.partition.max.record.locks`: records between start and end.
    pub max_record_locks: u32,
    /// logd's redelivery backoff: the wait before a record released or expired after its first
    /// delivery is available again; 0 (the default) is Kafka's at once.
    pub backoff_ms: i64,
    /// The backoff's cap.
    pub backoff_max_ms: i64,
    /// How the backoff is spread.
    pub backoff_jitter: BackoffJitter,
    /// `share.renew.acknowledge.enable`: whether RENEW is accepted.
    pub renew_enabled: bool,
}

impl Default for ShareLimits {
    fn default() -> ShareLimits {
        ShareLimits {
            lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            max_record_locks: 2_000,
            backoff_ms: 0,
            backoff_max_ms: 0,
            backoff_jitter: BackoffJitter::Added,
            renew_enabled: true,
        }
    }
}

impl ShareLimits {
    /// The wait before a record delivered `delivery_count` times is available again:
    /// `backoff * 2^(count - 1)` spread by the jitter (derived from the offset, so the state
    /// machine stays deterministic), the whole capped at the backoff's maximum.
    pub(crate) fn backoff(&self, delivery_count: u16, offset: i64) -> i64 {
        if self.backoff_ms <= 0 {
            return 0;
        }
        let cap = self.backoff_max_ms.max(self.backoff_ms);
        let exponent = u32::from(delivery_count.saturating_sub(1)).min(30);
        let wait = self.backoff_ms.saturating_mul(1 << exponent).min(cap);
        let mut seed = logd_storage::SplitMix64::new(offset as u64 ^ u64::from(delivery_count));
        let mut below = |n: i64| seed.below(n as u64 + 1) as i64;
        let spread = match self.backoff_jitter {
            BackoffJitter::Added => wait + below(wait / 4),
            BackoffJitter::None => wait,
            BackoffJitter::Full => below(wait),
            BackoffJitter::Equal => wait - wait / 2 + below(wait / 2),
        };
        spread.min(cap)
    }
}

/// How a redelivery backoff is spread, so that records released together do not all come
/// back at once (`logd.share.redelivery.backoff.jitter`; a retry policy's jitter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackoffJitter {
    /// Up to a quarter of the wait added (the default).
    #[default]
    Added,
    /// Exactly the exponential wait.
    None,
    /// Uniform in `[0, wait]`.
    Full,
    /// Uniform in `[wait / 2, wait]`.
    Equal,
}

impl BackoffJitter {
    /// The jitter the config value `name` says, `None` for a name it does not define.
    pub fn from_name(name: &str) -> Option<BackoffJitter> {
        match name {
            "added" => Some(BackoffJitter::Added),
            "none" => Some(BackoffJitter::None),
            "full" => Some(BackoffJitter::Full),
            "equal" => Some(BackoffJitter::Equal),
            _ => None,
        }
    }

    /// The config value that names it.
    pub fn name(self) -> &'static str {
        match self {
            BackoffJitter::Added => "added",
            BackoffJitter::None => "none",
            BackoffJitter::Full => "full",
            BackoffJitter::Equal => "equal",
        }
    }
}

/// A record's entry while it is between start and end.
#[derive(Debug, Clone, PartialEq, Eq)]
struct InFlight {
    state: RecordState,
    delivery_count: u16,
    /// The member holding it, while acquired (shared by the records of one acquisition).
    member: Option<Arc<str>>,
    /// When an acquired record's lock expires; when an available one may be acquired.
    until_ms: i64,
}

/// Records acquired by one call: `first..=last`, each delivered `delivery_count` times now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquiredRecords {
    /// The first offset.
    pub first_offset: i64,
    /// The last offset.
    pub last_offset: i64,
    /// Deliveries so far, this one included.
    pub delivery_count: u16,
}

/// How a share fetch's record limit is kept (KIP-1206's acquire modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AcquireMode {
    /// A soft limit: new records are taken to the end of the batch it ends in (Kafka's
    /// default, and ShareFetch v1's only mode).
    #[default]
    BatchOptimized,
    /// A hard limit: never more records than asked.
    RecordLimit,
}

/// Where an acquisition may take records: available ones from `from`, new ones below `end`,
/// never the offsets in `skipped` (sorted, disjoint, inclusive ranges), and where the log's
/// batches end (their last offsets, sorted) when the limit is Kafka's batch-optimized one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds<'a> {
    pub from: i64,
    pub end: i64,
    pub skipped: &'a [(i64, i64)],
    pub batch_ends: &'a [i64],
}

/// Why a record was archived without being accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveReason {
    /// A member rejected it.
    Rejected,
    /// It was delivered `share.delivery.count.limit` times and given back again.
    DeliveryLimit,
}

/// A record archived without being accepted: what a dead-letter topic receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archived {
    /// Its offset.
    pub offset: i64,
    /// Why.
    pub reason: ArchiveReason,
    /// How many times it was delivered.
    pub delivery_count: u16,
}

/// One share-partition's state.
#[derive(Debug, Clone)]
pub struct SharePartition {
    start_offset: i64,
    /// The offset after the last ever acquired (`start_offset` when nothing is in flight).
    end_offset: i64,
    /// Every offset in `start_offset..end_offset`.
    records: BTreeMap<i64, InFlight>,
    /// No acquired record's lock expires before this (`i64::MAX` when none is held): lets
    /// each fetch and acknowledgement skip the walk over every record in flight for expired
    /// locks. A bound, not the minimum: locks released or renewed since leave it low, and the
    /// next walk sets it again.
    locks_from_ms: i64,
}

/// Two share-partitions are equal when their records are: the lock bound is a cache.
impl PartialEq for SharePartition {
    fn eq(&self, other: &SharePartition) -> bool {
        (self.start_offset, self.end_offset, &self.records)
            == (other.start_offset, other.end_offset, &other.records)
    }
}

impl Eq for SharePartition {}

impl SharePartition {
    /// A share-partition that starts at `start_offset` (from `share.auto.offset.reset`).
    pub fn new(start_offset: i64) -> SharePartition {
        SharePartition {
            start_offset,
            end_offset: start_offset,
            records: BTreeMap::new(),
            locks_from_ms: i64::MAX,
        }
    }

    /// A share-partition as saved: offsets `start..end` with each record's state (available,
    /// acknowledged or archived) and delivery count; the start moves past a settled head.
    pub(crate) fn restored(
        start: i64,
        end: i64,
        records: impl Iterator<Item = (i64, RecordState, u16)>,
    ) -> SharePartition {
        let mut restored = SharePartition {
            start_offset: start,
            end_offset: end,
            records: records
                .map(|(offset, state, delivery_count)| {
                    let record = InFlight {
                        state,
                        delivery_count,
                        member: None,
                        until_ms: 0,
                    };
                    (offset, record)
                })
                .collect(),
            // Walked at the first expiry check, which sets it.
            locks_from_ms: i64::MIN,
        };
        restored.advance_start();
        restored
    }

    /// The share-partition start offset: every record below it is acknowledged or archived.
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    /// The offset after the last record ever acquired.
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    /// Offset `offset`'s state and delivery count, while it is between start and end.
    pub fn record(&self, offset: i64) -> Option<(RecordState, u16)> {
        self.records
            .get(&offset)
            .map(|r| (r.state, r.delivery_count))
    }

    /// How many records are in each state between start and end: available, acquired,
    /// acknowledged, archived.
    pub fn counts(&self) -> [usize; 4] {
        let mut counts = [0; 4];
        for record in self.records.values() {
            counts[record.state as usize] += 1;
        }
        counts
    }

    /// Acquires for `member` at most `max_records` records below `log_end` (the partition's
    /// end, or its last stable offset): available ones first, in offset order, then records
    /// never delivered, while fewer than `max_record_locks` records are between start and
    /// end. Each acquisition counts a delivery and locks the record until
    /// `now + lock_duration_ms`.
    pub fn acquire(
        &mut self,
        member: &str,
        log_end: i64,
        max_records: usize,
        limits: &ShareLimits,
        now_ms: i64,
    ) -> Vec<AcquiredRecords> {
        let bounds = Bounds {
            from: i64::MIN,
            end: log_end,
            skipped: &[],
            batch_ends: &[],
        };
        self.acquire_between(member, &bounds, max_records, limits, now_ms)
            .0
    }

    /// Where the next fetch for this share-partition reads from: its first record available
    /// by `now`, or its end.
    pub fn next_fetch_offset(&self, now_ms: i64) -> i64 {
        self.records
            .iter()
            .find(|(_, r)| r.state == RecordState::Available && r.until_ms <= now_ms)
            .map_or(self.end_offset, |(&offset, _)| offset)
    }

    /// As [`SharePartition::acquire`], within `bounds`: available records from `bounds.from`
    /// on only (those a fetch read from there holds), new ones below `bounds.end`.
    ///
    /// Offsets in `bounds.skipped` (a read_committed group's aborted transactions and control
    /// batches) are never handed out: each one the call would take is archived instead,
    /// uncounted against `max_records`, and returned in the second list for the caller to log.
    ///
    /// With `bounds.batch_ends`, `max_records` is the soft limit of Kafka 4.4's
    /// batch-optimized acquisition (ShareFetch v1's only mode): new records are taken to the
    /// end of the batch holding the last one the limit allows, so a batch is handed out whole
    /// to one member rather than sent again with each slice of it.
    pub(crate) fn acquire_between(
        &mut self,
        member: &str,
        bounds: &Bounds<'_>,
        max_records: usize,
        limits: &ShareLimits,
        now_ms: i64,
    ) -> (Vec<AcquiredRecords>, Vec<i64>) {
        let (from, log_end) = (bounds.from, bounds.end);
        let skipped = bounds.skipped;
        let is_skipped = |offset: i64| {
            let after = skipped.partition_point(|&(_, last)| last < offset);
            skipped
                .get(after)
                .is_some_and(|&(first, _)| first <= offset)
        };
        let holder: Arc<str> = Arc::from(member);
        let mut dropped = Vec::new();
        let mut acquired: Vec<AcquiredRecords> = Vec::new();
        let take = |offset: i64, record: &mut InFlight, acquired: &mut Vec<AcquiredRecords>| {
            record.state = RecordState::Acquired;
            record.delivery_count = record.delivery_count.saturating_add(1);
            record.member = Some(holder.clone());
            record.until_ms = now_ms.saturating_add(limits.lock_duration_ms);
            match acquired.last_mut() {
                Some(last)
                    if last.last_offset + 1 == offset
                        && last.delivery_count == record.delivery_count =>
                {
                    last.last_offset = offset;
                }
                _ => acquired.push(AcquiredRecords {
                    first_offset: offset,
                    last_offset: offset,
                    delivery_count: record.delivery_count,
                }),
            }
        };
        let mut count = 0;
        for (&offset, record) in self.records.range_mut(from..log_end.max(from)) {
            if count == max_records {
                break;
            }
            if record.state == RecordState::Available && record.until_ms <= now_ms {
                if is_skipped(offset) {
                    settle(record, RecordState::Archived);
                    dropped.push(offset);
                    continue;
                }
                take(offset, record, &mut acquired);
                count += 1;
            }
        }
        let window_end = self
            .start_offset
            .saturating_add(i64::from(limits.max_record_locks));
        // Past the limit, new records up to here: the end of the limit's last batch.
        let mut batch_end = None;
        while self.end_offset < log_end.min(window_end) {
            if count >= max_records && batch_end.is_none_or(|end| self.end_offset > end) {
                break;
            }
            let offset = self.end_offset;
            let mut record = InFlight {
                state: RecordState::Available,
                delivery_count: 0,
                member: None,
                until_ms: 0,
            };
            if is_skipped(offset) {
                record.state = RecordState::Archived;
                dropped.push(offset);
            } else {
                take(offset, &mut record, &mut acquired);
                count += 1;
                if count == max_records && batch_end.is_none() {
                    let ends = bounds.batch_ends;
                    batch_end = ends.get(ends.partition_point(|&end| end < offset)).copied();
                }
            }
            self.records.insert(offset, record);
            self.end_offset += 1;
        }
        if !acquired.is_empty() {
            let until = now_ms.saturating_add(limits.lock_duration_ms);
            self.locks_from_ms = self.locks_from_ms.min(until);
        }
        if !dropped.is_empty() {
            dropped.sort_unstable();
            self.advance_start();
        }
        self.debug_check();
        (acquired, dropped)
    }

    /// Applies `member`'s acknowledgements: per batch, its first and last offset and either
    /// one type for all of it or one per offset. All or nothing: a record the member does not
    /// hold is [`Error::InvalidRecordState`], an offset past the end or a malformed batch
    /// [`Error::InvalidShareRequest`]. Offsets below the start (archived already, say
    /// by the log's retention) are skipped. Returns the records archived unaccepted.
    pub fn acknowledge(
        &mut self,
        member: &str,
        batches: &[(i64, i64, Vec<AcknowledgeType>)],
        limits: &ShareLimits,
        now_ms: i64,
    ) -> Result<Vec<Archived>> {
        // Each batch's offsets from the start on (below it, already done), checked whole
        // before any is applied.
        let mut spans: Vec<(i64, i64, &[AcknowledgeType], i64)> = Vec::new();
        for (first, last, types) in batches {
            let (first, last) = (*first, *last);
            let length = last.checked_sub(first).and_then(|n| n.checked_add(1));
            let Some(length) = length.filter(|&n| n > 0) else {
                return Err(Error::InvalidShareRequest(format!(
                    "batch {first}-{last}: the last offset is below the first"
                )));
            };
            if types.is_empty() || (types.len() > 1 && types.len() as i64 != length) {
                return Err(Error::InvalidShareRequest(format!(
                    "batch {first}-{last}: {} acknowledge types for {length} offsets",
                    types.len()
                )));
            }
            if last >= self.end_offset {
                return Err(Error::InvalidShareRequest(format!(
                    "batch {first}-{last}: the last offset is past the acquired records"
                )));
            }
            let from = first.max(self.start_offset);
            if from > last {
                continue;
            }
            for (&offset, record) in self.records.range(from..=last) {
                let kind = types[if types.len() == 1 {
                    0
                } else {
                    (offset - first) as usize
                }];
                if kind == AcknowledgeType::Renew && !limits.renew_enabled {
                    return Err(Error::InvalidRecordState(
                        "Renewing acquisition locks is not enabled for the group.".into(),
                    ));
                }
                if record.state != RecordState::Acquired {
                    return Err(Error::InvalidRecordState(format!(
                        "offset {offset} is not acquired"
                    )));
                }
                if record.member.as_deref() != Some(member) {
                    return Err(Error::InvalidRecordState(format!(
                        "member {member} is not the owner of offset {offset}"
                    )));
                }
            }
            spans.push((from, last, types, first));
        }
        // A second acknowledgement of an offset in one request finds it no longer acquired,
        // as Kafka applies batches in turn.
        spans.sort_unstable_by_key(|span| span.0);
        if let Some(pair) = spans.windows(2).find(|pair| pair[1].0 <= pair[0].1) {
            return Err(Error::InvalidRecordState(format!(
                "offset {} is acknowledged twice",
                pair[1].0
            )));
        }
        let mut archived = Vec::new();
        for (from, last, types, first) in spans {
            for (&offset, record) in self.records.range_mut(from..=last) {
                let kind = types[if types.len() == 1 {
                    0
                } else {
                    (offset - first) as usize
                }];
                match kind {
                    AcknowledgeType::Accept => settle(record, RecordState::Acknowledged),
                    AcknowledgeType::Gap => settle(record, RecordState::Archived),
                    AcknowledgeType::Reject => {
                        settle(record, RecordState::Archived);
                        archived.push(Archived {
                            offset,
                            reason: ArchiveReason::Rejected,
                            delivery_count: record.delivery_count,
                        });
                    }
                    AcknowledgeType::Release => {
                        archived.extend(give_back(offset, record, limits, now_ms));
                    }
                    AcknowledgeType::Renew => {
                        record.until_ms = now_ms.saturating_add(limits.lock_duration_ms);
                    }
                }
            }
        }
        self.advance_start();
        self.debug_check();
        Ok(archived)
    }

    /// Gives back every record `member` holds, as when it leaves the group or its session
    /// expires; returns those archived at the delivery limit.
    pub fn release_member(
        &mut self,
        member: &str,
        limits: &ShareLimits,
        now_ms: i64,
    ) -> Vec<Archived> {
        self.give_back_where(limits, now_ms, |r| r.member.as_deref() == Some(member))
    }

    /// Gives back every acquired record whose lock expired by `now`; returns those archived
    /// at the delivery limit.
    pub fn expire_locks(&mut self, limits: &ShareLimits, now_ms: i64) -> Vec<Archived> {
        if now_ms < self.locks_from_ms {
            return Vec::new();
        }
        let archived = self.give_back_where(limits, now_ms, |r| r.until_ms <= now_ms);
        self.locks_from_ms = self.next_expiry_ms().unwrap_or(i64::MAX);
        archived
    }

    /// When the next acquired lock expires, if any is held.
    pub fn next_expiry_ms(&self) -> Option<i64> {
        self.records
            .values()
            .filter(|r| r.state == RecordState::Acquired)
            .map(|r| r.until_ms)
            .min()
    }

    /// Moves the start to `offset` (the log's start moved past it, or an operator reset the
    /// group's offsets there): records below it are archived and forgotten, held ones
    /// included, and acknowledgements of them later are ignored. A start moved forward past
    /// the end leaves nothing in flight.
    pub fn move_start(&mut self, offset: i64) {
        if offset > self.start_offset {
            self.records = self.records.split_off(&offset);
            self.start_offset = offset;
            self.end_offset = self.end_offset.max(offset);
            // Records settled at the new start are done with too.
            self.advance_start();
        }
        self.debug_check();
    }

    /// Archives every available record delivered `limit` times: after a restart, the records
    /// held when the engine stopped, given back as if their locks expired. Returns them.
    pub(crate) fn archive_at_limit(&mut self, limit: u16) -> Vec<Archived> {
        let mut archived = Vec::new();
        for (&offset, record) in self.records.iter_mut() {
            if record.state == RecordState::Available && record.delivery_count >= limit {
                settle(record, RecordState::Archived);
                archived.push(Archived {
                    offset,
                    reason: ArchiveReason::DeliveryLimit,
                    delivery_count: record.delivery_count,
                });
            }
        }
        self.advance_start();
        archived
    }

    fn give_back_where(
        &mut self,
        limits: &ShareLimits,
        now_ms: i64,
        holds: impl Fn(&InFlight) -> bool,
    ) -> Vec<Archived> {
        let mut archived = Vec::new();
        for (&offset, record) in self.records.iter_mut() {
            if record.state == RecordState::Acquired && holds(record) {
                archived.extend(give_back(offset, record, limits, now_ms));
            }
        }
        self.advance_start();
        self.debug_check();
        archived
    }

    /// The share-partition's shape after every change its members make, checked in debug
    /// builds (the model test's acquisitions, acknowledgements, expiries and leaves go through
    /// it; a state restored from disk is not, so bad bytes there never meet an assertion): the
    /// records are exactly the offsets `start..end`, and a record is acquired exactly when a
    /// member holds it, which counted a delivery.
    fn debug_check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        debug_assert!(self.start_offset <= self.end_offset);
        debug_assert_eq!(
            self.records.len() as i64,
            self.end_offset - self.start_offset,
            "records between {} and {}",
            self.start_offset,
            self.end_offset
        );
        debug_assert!(
            self.records
                .keys()
                .next()
                .is_none_or(|&first| first == self.start_offset),
            "the first record is not at the start {}",
            self.start_offset
        );
        for (offset, record) in &self.records {
            let acquired = record.state == RecordState::Acquired;
            debug_assert_eq!(acquired, record.member.is_some(), "record {offset}");
            debug_assert!(!acquired || record.delivery_count > 0, "record {offset}");
            debug_assert!(
                !acquired || record.until_ms >= self.locks_from_ms,
                "record {offset}'s lock is below the bound"
            );
        }
    }

    /// Moves the start past the acknowledged and archived records at its head.
    fn advance_start(&mut self) {
        while let Some(entry) = self.records.first_entry() {
            if !matches!(
                entry.get().state,
                RecordState::Acknowledged | RecordState::Archived
            ) {
                break;
            }
            self.start_offset = *entry.key() + 1;
            entry.remove();
        }
        if self.records.is_empty() {
            self.start_offset = self.end_offset;
        }
    }
}

fn settle(record: &mut InFlight, state: RecordState) {
    record.state = state;
    record.member = None;
}

/// An acquired record given back: available again (after the backoff), or archived once it
/// was delivered the limit's number of times.
fn give_back(
    offset: i64,
    record: &mut InFlight,
    limits: &ShareLimits,
    now_ms: i64,
) -> Option<Archived> {
    if record.delivery_count >= limits.delivery_count_limit {
        settle(record, RecordState::Archived);
        return Some(Archived {
            offset,
            reason: ArchiveReason::DeliveryLimit,
            delivery_count: record.delivery_count,
        });
    }
    settle(record, RecordState::Available);
    record.until_ms = now_ms.saturating_add(limits.backoff(record.delivery_count, offset));
    None
}
