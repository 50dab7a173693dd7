//! The share-partition's rules, case by case as Kafka's `SharePartitionTest` has them, then a
//! model test: random acquisitions, acknowledgements (good and bad, renewals among them),
//! members leaving, locks
//! expiring and the start moving, each step checked against a reference written apart from it.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::Error;

const ACCEPT: AcknowledgeType = AcknowledgeType::Accept;
const RELEASE: AcknowledgeType = AcknowledgeType::Release;
const REJECT: AcknowledgeType = AcknowledgeType::Reject;

fn limits() -> ShareLimits {
    ShareLimits {
        lock_duration_ms: 1_000,
        delivery_count_limit: 3,
        max_record_locks: 10,
        ..ShareLimits::default()
    }
}

fn range(first: i64, last: i64, delivery_count: u16) -> AcquiredRecords {
    AcquiredRecords {
        first_offset: first,
        last_offset: last,
        delivery_count,
    }
}

#[test]
fn records_are_acquired_once_accepted_once_and_the_start_moves_past_them() {
    let mut sp = SharePartition::new(0);
    let l = limits();
    assert_eq!(sp.acquire("a", 5, 3, &l, 0), vec![range(0, 2, 1)]);
    // Another member gets the next ones, never the held ones.
    assert_eq!(sp.acquire("b", 5, 10, &l, 0), vec![range(3, 4, 1)]);
    assert_eq!(sp.acquire("c", 5, 10, &l, 0), vec![]);
    // b accepts out of order: the start waits for a's.
    sp.acknowledge("b", &[(3, 4, vec![ACCEPT])], &l, 1).unwrap();
    assert_eq!(sp.start_offset(), 0);
    sp.acknowledge("a", &[(0, 2, vec![ACCEPT, REJECT, ACCEPT])], &l, 1)
        .unwrap();
    assert_eq!((sp.start_offset(), sp.end_offset()), (5, 5));
    assert_eq!(sp.counts(), [0, 0, 0, 0]);
}

#[test]
fn a_released_record_comes_back_first_and_is_archived_at_the_delivery_limit() {
    let mut sp = SharePartition::new(0);
    let l = limits();
    sp.acquire("a", 3, 3, &l, 0);
    sp.acknowledge("a", &[(1, 1, vec![RELEASE])], &l, 0)
        .unwrap();
    assert_eq!(sp.record(1), Some((RecordState::Available, 1)));
    // The released record before new ones; its count goes on.
    assert_eq!(
        sp.acquire("b", 6, 2, &l, 0),
        vec![range(1, 1, 2), range(3, 3, 1)]
    );
    sp.acknowledge("b", &[(1, 1, vec![RELEASE])], &l, 0)
        .unwrap();
    assert_eq!(sp.acquire("b", 6, 1, &l, 0), vec![range(1, 1, 3)]);
    let archived = sp
        .acknowledge("b", &[(1, 1, vec![RELEASE])], &l, 0)
        .unwrap();
    assert_eq!(
        archived,
        vec![Archived {
            offset: 1,
            reason: ArchiveReason::DeliveryLimit,
            delivery_count: 3
        }]
    );
    assert_eq!(sp.record(1), Some((RecordState::Archived, 3)));
    let rejected = sp.acknowledge("a", &[(0, 0, vec![REJECT])], &l, 0).unwrap();
    assert_eq!(rejected[0].reason, ArchiveReason::Rejected);
    assert_eq!(sp.start_offset(), 2);
}

#[test]
fn a_lock_expires_and_a_member_leaving_gives_its_records_back() {
    let mut sp = SharePartition::new(10);
    let l = limits();
    sp.acquire("a", 14, 2, &l, 0);
    sp.acquire("b", 14, 2, &l, 500);
    assert_eq!(sp.next_expiry_ms(), Some(1_000));
    assert!(sp.expire_locks(&l, 999).is_empty());
    sp.expire_locks(&l, 1_000);
    assert_eq!(sp.record(10), Some((RecordState::Available, 1)));
    assert_eq!(sp.record(12), Some((RecordState::Acquired, 1)));
    // a's acknowledgement after its lock expired is refused.
    let late = sp.acknowledge("a", &[(10, 10, vec![ACCEPT])], &l, 1_001);
    assert!(
        matches!(late, Err(Error::InvalidRecordState(_))),
        "{late:?}"
    );
    sp.release_member("b", &l, 1_001);
    assert_eq!(sp.counts(), [4, 0, 0, 0]);
    assert_eq!(sp.acquire("c", 14, 10, &l, 1_001), vec![range(10, 13, 2)]);
}

#[test]
fn bad_acknowledgements_are_refused_with_kafkas_codes_and_change_nothing() {
    let mut sp = SharePartition::new(0);
    let l = limits();
    sp.acquire("a", 4, 2, &l, 0);
    sp.acquire("b", 4, 2, &l, 0);
    let before = sp.clone();
    for (member, batches, invalid_state) in [
        // b holds 2 and 3.
        ("a", vec![(0, 1, vec![ACCEPT]), (2, 2, vec![ACCEPT])], true),
        // Offset 1 twice in one request.
        ("a", vec![(0, 1, vec![ACCEPT]), (1, 1, vec![REJECT])], true),
        // Past the acquired records.
        ("a", vec![(0, 4, vec![ACCEPT])], false),
        ("a", vec![(1, 0, vec![ACCEPT])], false),
        ("a", vec![(0, 1, vec![ACCEPT, ACCEPT, ACCEPT])], false),
        ("a", vec![(0, 1, vec![])], false),
    ] {
        let refused = sp.acknowledge(member, &batches, &l, 0).unwrap_err();
        assert_eq!(
            matches!(refused, Error::InvalidRecordState(_)),
            invalid_state,
            "{batches:?}: {refused}"
        );
        assert!(
            invalid_state || matches!(refused, Error::InvalidShareRequest(_)),
            "{batches:?}: {refused}"
        );
        assert_eq!(sp, before, "{batches:?} changed the state");
    }
    // An acknowledged record is not acquired: acknowledging it again is refused.
    sp.acknowledge("a", &[(0, 0, vec![ACCEPT])], &l, 0).unwrap();
    sp.acknowledge("a", &[(1, 1, vec![AcknowledgeType::Gap])], &l, 0)
        .unwrap();
    assert_eq!(sp.start_offset(), 2);
    // Below the start: skipped, as Kafka skips what its start moved past.
    sp.acknowledge("b", &[(0, 3, vec![ACCEPT])], &l, 0).unwrap();
    assert_eq!(sp.start_offset(), 4);
}

#[test]
fn a_renewed_lock_runs_from_the_renewal_unless_the_group_turned_renewal_off() {
    const RENEW: AcknowledgeType = AcknowledgeType::Renew;
    let mut sp = SharePartition::new(0);
    let l = limits();
    sp.acquire("a", 2, 2, &l, 0);
    sp.acknowledge("a", &[(0, 0, vec![RENEW])], &l, 900)
        .unwrap();
    assert_eq!(sp.next_expiry_ms(), Some(1_000));
    // At 1 s offset 1's lock expires; offset 0's runs until 1.9 s, still a's.
    sp.expire_locks(&l, 1_000);
    assert_eq!(sp.record(0), Some((RecordState::Acquired, 1)));
    assert_eq!(sp.record(1), Some((RecordState::Available, 1)));
    // Only the holder renews, and only while the group allows it.
    let not_held = sp.acknowledge("b", &[(0, 0, vec![RENEW])], &l, 1_000);
    assert!(
        matches!(not_held, Err(Error::InvalidRecordState(_))),
        "{not_held:?}"
    );
    let off = ShareLimits {
        renew_enabled: false,
        ..l
    };
    let refused = sp.acknowledge("a", &[(0, 0, vec![RENEW])], &off, 1_000);
    assert!(matches!(refused, Err(Error::InvalidRecordState(m)) if m.contains("not enabled")));
    sp.expire_locks(&l, 1_900);
    assert_eq!(sp.record(0), Some((RecordState::Available, 1)));
}

#[test]
fn no_new_record_is_acquired_past_the_record_locks_bound() {
    let mut sp = SharePartition::new(0);
    let l = limits();
    assert_eq!(sp.acquire("a", 100, 100, &l, 0), vec![range(0, 9, 1)]);
    assert!(sp.acquire("b", 100, 100, &l, 0).is_empty());
    sp.acknowledge("a", &[(0, 3, vec![ACCEPT])], &l, 0).unwrap();
    assert_eq!(sp.acquire("b", 100, 100, &l, 0), vec![range(10, 13, 1)]);
    // Moving the start archives what is below, held records included.
    sp.move_start(12);
    assert_eq!((sp.start_offset(), sp.counts()), (12, [0, 2, 0, 0]));
    sp.move_start(50);
    assert_eq!((sp.start_offset(), sp.end_offset()), (50, 50));
}

#[test]
fn redelivery_waits_its_backoff_without_holding_back_newer_records() {
    let mut sp = SharePartition::new(0);
    let l = ShareLimits {
        backoff_ms: 100,
        backoff_max_ms: 150,
        delivery_count_limit: 10,
        ..limits()
    };
    sp.acquire("a", 10, 1, &l, 0);
    sp.acknowledge("a", &[(0, 0, vec![RELEASE])], &l, 0)
        .unwrap();
    // Offset 0 waits 100 to 125 ms; newer records flow meanwhile.
    assert_eq!(sp.acquire("a", 10, 1, &l, 99), vec![range(1, 1, 1)]);
    let mut now = 100;
    while sp.acquire("a", 1, 1, &l, now).is_empty() {
        now += 1;
    }
    assert!((100..=125).contains(&now), "{now}");
    // The second wait doubles, up to the cap.
    sp.acknowledge("a", &[(0, 0, vec![RELEASE])], &l, now)
        .unwrap();
    let released = now;
    while sp.acquire("a", 1, 1, &l, now).is_empty() {
        now += 1;
    }
    assert!(
        (150..=187).contains(&(now - released)),
        "{}",
        now - released
    );
}

/// What the model test does.
#[derive(Debug, Clone)]
enum Op {
    Acquire {
        member: u8,
        max: usize,
    },
    /// Acknowledge `count` records from the `skip`th one the member holds (per the reference),
    /// or, with `stray`, an offset it may not hold.
    Acknowledge {
        member: u8,
        skip: usize,
        count: usize,
        kind: u8,
        stray: Option<i64>,
    },
    Leave {
        member: u8,
    },
    Wait {
        ms: i64,
    },
    Produce {
        records: i64,
    },
    MoveStart {
        by: i64,
    },
}

proptest! {
    /// The redelivery wait never passes `backoff.max.ms`, jitter included, and each jitter
    /// keeps to its range of the exponential wait (capped).
    #[test]
    fn the_redelivery_backoff_keeps_to_its_jitter_and_never_exceeds_its_cap(
        base in 1i64..10_000,
        max in 0i64..100_000,
        count in 0u16..40,
        offset in any::<i64>(),
        jitter in prop_oneof![
            Just(BackoffJitter::Added),
            Just(BackoffJitter::None),
            Just(BackoffJitter::Full),
            Just(BackoffJitter::Equal),
        ],
    ) {
        let l = ShareLimits {
            backoff_ms: base,
            backoff_max_ms: max,
            backoff_jitter: jitter,
            ..ShareLimits::default()
        };
        let cap = max.max(base);
        let wait = l.backoff(count, offset);
        let exponential = base.saturating_mul(1 << u32::from(count.saturating_sub(1)).min(30));
        let d = exponential.min(cap);
        prop_assert!(wait <= cap, "{wait} > {cap}");
        let (low, high) = match jitter {
            BackoffJitter::Added => (d, d + d / 4),
            BackoffJitter::None => (d, d),
            BackoffJitter::Full => (0, d),
            BackoffJitter::Equal => (d - d / 2, d),
        };
        prop_assert!((low..=high).contains(&wait), "{jitter:?}: {wait} not in {low}..={high}");
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3u8, 1..6usize).prop_map(|(member, max)| Op::Acquire { member, max }),
        4 => (0..3u8, 0..4usize, 1..4usize, 0..5u8, prop::option::weighted(0.15, 0..40i64))
            .prop_map(|(member, skip, count, kind, stray)| Op::Acknowledge { member, skip, count, kind, stray }),
        1 => (0..3u8).prop_map(|member| Op::Leave { member }),
        2 => (1..700i64).prop_map(|ms| Op::Wait { ms }),
        2 => (1..6i64).prop_map(|records| Op::Produce { records }),
        1 => (1..4i64).prop_map(|by| Op::MoveStart { by }),
    ]
}

/// The reference: each offset's state, count, holder and lock, kept by rules written out here.
#[derive(Debug, Default)]
struct Reference {
    start: i64,
    end: i64,
    /// offset: (state, deliveries, holder, lock until)
    records: BTreeMap<i64, (RecordState, u16, Option<u8>, i64)>,
}

impl Reference {
    fn give_back(&mut self, offset: i64, limit: u16) -> Option<(i64, ArchiveReason)> {
        let entry = self.records.get_mut(&offset).unwrap();
        entry.2 = None;
        if entry.1 >= limit {
            entry.0 = RecordState::Archived;
            Some((offset, ArchiveReason::DeliveryLimit))
        } else {
            entry.0 = RecordState::Available;
            None
        }
    }

    fn settle_start(&mut self) {
        while let Some((&offset, &(state, ..))) = self.records.first_key_value() {
            if !matches!(state, RecordState::Acknowledged | RecordState::Archived) {
                break;
            }
            self.records.remove(&offset);
            self.start = offset + 1;
        }
        if self.records.is_empty() {
            self.start = self.end;
        }
    }

    fn held_by(&self, member: u8) -> Vec<i64> {
        self.records
            .iter()
            .filter(|(_, r)| r.0 == RecordState::Acquired && r.2 == Some(member))
            .map(|(&o, _)| o)
            .collect()
    }
}

fn name(member: u8) -> String {
    format!("member-{member}")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_share_partition_follows_the_reference(ops in prop::collection::vec(op(), 1..120)) {
        let l = ShareLimits { lock_duration_ms: 1_000, delivery_count_limit: 3, max_record_locks: 8, ..ShareLimits::default() };
        let mut sp = SharePartition::new(0);
        let mut model = Reference::default();
        let mut now = 0i64;
        let mut log_end = 5i64;
        let mut accepted = std::collections::BTreeSet::new();
        for op in ops {
            match op {
                Op::Acquire { member, max } => {
                    // The reference: locks that expired are given back first (the broker
                    // expires them on a timer; here the caller does, before acquiring).
                    let expired: Vec<i64> = model.records.iter()
                        .filter(|(_, r)| r.0 == RecordState::Acquired && r.3 <= now)
                        .map(|(&o, _)| o).collect();
                    let archived: Vec<(i64, ArchiveReason)> = expired.iter()
                        .filter_map(|&o| model.give_back(o, l.delivery_count_limit)).collect();
                    model.settle_start();
                    let got: Vec<(i64, ArchiveReason)> = sp.expire_locks(&l, now).iter().map(|a| (a.offset, a.reason)).collect();
                    prop_assert_eq!(got, archived);
                    let mut wanted: Vec<i64> = model.records.iter()
                        .filter(|(o, r)| r.0 == RecordState::Available && **o < log_end)
                        .map(|(&o, _)| o).take(max).collect();
                    while wanted.len() < max && model.end < log_end.min(model.start + i64::from(l.max_record_locks)) {
                        model.records.insert(model.end, (RecordState::Available, 0, None, 0));
                        wanted.push(model.end);
                        model.end += 1;
                    }
                    let acquired = sp.acquire(&name(member), log_end, max, &l, now);
                    let mut got = Vec::new();
                    for range in &acquired {
                        for offset in range.first_offset..=range.last_offset {
                            got.push((offset, range.delivery_count));
                        }
                    }
                    let mut expected = Vec::new();
                    for offset in wanted {
                        prop_assert!(!accepted.contains(&offset), "offset {} was accepted, and is delivered again", offset);
                        let entry = model.records.get_mut(&offset).unwrap();
                        *entry = (RecordState::Acquired, entry.1 + 1, Some(member), now + l.lock_duration_ms);
                        prop_assert!(entry.1 <= l.delivery_count_limit);
                        expected.push((offset, entry.1));
                    }
                    prop_assert_eq!(got, expected);
                }
                Op::Acknowledge { member, skip, count, kind, stray } => {
                    let held = model.held_by(member);
                    let chosen: Vec<i64> = match stray {
                        Some(offset) => vec![offset],
                        None => held.iter().copied().skip(skip).take(count).collect(),
                    };
                    let Some(&first) = chosen.first() else { continue };
                    let last = *chosen.last().unwrap();
                    // One batch per offset chosen (held offsets need not be contiguous).
                    let kind = AcknowledgeType::from_code(kind as i8).unwrap();
                    let batches: Vec<_> = chosen.iter().map(|&o| (o, o, vec![kind])).collect();
                    let valid = last < model.end
                        && chosen.iter().all(|o| *o < model.start || held.contains(o));
                    let before = sp.clone();
                    let result = sp.acknowledge(&name(member), &batches, &l, now);
                    if !valid {
                        prop_assert!(result.is_err(), "{:?} {}-{} accepted", kind, first, last);
                        prop_assert_eq!(&sp, &before);
                        continue;
                    }
                    let mut archived = Vec::new();
                    let start = model.start;
                    for &offset in chosen.iter().filter(|&&o| o >= start) {
                        let entry = model.records.get_mut(&offset).unwrap();
                        match kind {
                            AcknowledgeType::Accept => {
                                *entry = (RecordState::Acknowledged, entry.1, None, 0);
                                accepted.insert(offset);
                            }
                            AcknowledgeType::Gap => *entry = (RecordState::Archived, entry.1, None, 0),
                            AcknowledgeType::Reject => {
                                *entry = (RecordState::Archived, entry.1, None, 0);
                                archived.push((offset, ArchiveReason::Rejected));
                            }
                            AcknowledgeType::Release => archived.extend(model.give_back(offset, l.delivery_count_limit)),
                            // Still held, its lock from now.
                            AcknowledgeType::Renew => entry.3 = now + l.lock_duration_ms,
                        }
                    }
                    model.settle_start();
                    let got: Vec<_> = result.unwrap().iter().map(|a| (a.offset, a.reason)).collect();
                    prop_assert_eq!(got, archived);
                }
                Op::Leave { member } => {
                    for offset in model.held_by(member) {
                        model.give_back(offset, l.delivery_count_limit);
                    }
                    model.settle_start();
                    sp.release_member(&name(member), &l, now);
                }
                Op::Wait { ms } => now += ms,
                Op::Produce { records } => log_end += records,
                Op::MoveStart { by } => {
                    let to = model.start + by;
                    model.records = model.records.split_off(&to);
                    model.start = to;
                    model.end = model.end.max(to);
                    // Records settled at the new start are done with too.
                    model.settle_start();
                    sp.move_start(to);
                }
            }
            prop_assert_eq!((sp.start_offset(), sp.end_offset()), (model.start, model.end));
            prop_assert!(sp.end_offset() - sp.start_offset() <= i64::from(l.max_record_locks));
            for offset in model.start..model.end {
                let (state, count, ..) = model.records[&offset];
                prop_assert_eq!(sp.record(offset), Some((state, count)), "offset {}", offset);
            }
        }
        // Every record gets through: with locks expired and one member accepting all it gets,
        // the start reaches the log's end.
        for _ in 0..100 {
            now += l.lock_duration_ms;
            sp.expire_locks(&l, now);
            for range in sp.acquire("last", log_end, 100, &l, now) {
                sp.acknowledge("last", &[(range.first_offset, range.last_offset, vec![ACCEPT])], &l, now).unwrap();
            }
        }
        prop_assert_eq!(sp.start_offset(), log_end.max(model.start));
    }
}
