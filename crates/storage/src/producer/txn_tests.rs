//! Transactions in the producer state rule by rule, the marker's bytes, the version 1
//! snapshot, and a property test that replaying the log rebuilds what appending built.

use std::path::Path;

use proptest::prelude::*;

use super::snapshot::{self, Snapshot};
use super::tests::{header, offer};
use super::*;
use crate::batch::{BatchBuilder, BatchRef, Compression};

/// A transactional batch header.
fn txn(id: i64, epoch: i16, sequence: i32, count: i32, base_offset: i64) -> BatchHeader {
    let mut h = header(id, epoch, sequence, count, base_offset);
    h.attributes |= 0x10;
    h
}

fn marker(id: i64, epoch: i16, coordinator_epoch: i32, commit: bool) -> Marker {
    Marker {
        producer_id: id,
        producer_epoch: epoch,
        coordinator_epoch,
        commit,
    }
}

/// Checks and applies a marker at `offset`, as `append_marker` does.
fn end(p: &mut Producers, m: Marker, offset: i64) -> Result<Option<CompletedTxn>> {
    let (entry, completed) = p.check_marker(&m, offset, 5_000 + offset)?;
    p.commit(vec![(m.producer_id, entry)]);
    Ok(completed)
}

#[test]
fn a_transaction_opens_at_its_first_batch_and_a_marker_closes_it() {
    let mut p = Producers::default();
    offer(&mut p, txn(1, 0, 0, 3, 10)).unwrap();
    offer(&mut p, txn(1, 0, 3, 2, 13)).unwrap();
    assert_eq!(p.first_unstable_offset(), Some(10));
    offer(&mut p, txn(2, 0, 0, 1, 15)).unwrap();
    assert_eq!(
        p.open_transactions().collect::<Vec<_>>(),
        [(10, 1), (15, 2)]
    );
    let done = end(&mut p, marker(1, 0, 0, true), 16).unwrap();
    assert_eq!(
        done,
        Some(CompletedTxn {
            producer_id: 1,
            first_offset: 10,
            last_offset: 16,
            aborted: false
        })
    );
    assert_eq!(p.first_unstable_offset(), Some(15));
    // The next transactional batch opens a new transaction; sequences go on.
    offer(&mut p, txn(1, 0, 5, 1, 17)).unwrap();
    assert_eq!(
        p.open_transactions().collect::<Vec<_>>(),
        [(15, 2), (17, 1)]
    );
    assert_eq!(p.infos()[0].txn_first_offset, Some(17));
    assert_eq!(p.infos()[0].coordinator_epoch, 0);
}

#[test]
fn a_plain_batch_inside_an_open_transaction_is_refused() {
    let mut p = Producers::default();
    offer(&mut p, txn(1, 0, 0, 1, 0)).unwrap();
    let before = p.clone();
    let refused = offer(&mut p, header(1, 0, 1, 1, 1));
    assert!(
        matches!(refused, Err(Error::InvalidTxnState { producer_id: 1 })),
        "{refused:?}"
    );
    assert_eq!(p, before);
    end(&mut p, marker(1, 0, 0, false), 1).unwrap();
    offer(&mut p, header(1, 0, 1, 1, 2)).unwrap();
    assert_eq!(p.first_unstable_offset(), None);
}

#[test]
fn an_abort_is_indexed_with_the_stable_offset_after_its_marker() {
    let mut p = Producers::default();
    offer(&mut p, txn(1, 0, 0, 2, 0)).unwrap();
    offer(&mut p, txn(2, 0, 0, 2, 2)).unwrap();
    let done = end(&mut p, marker(2, 0, 0, false), 4).unwrap().unwrap();
    // Producer 1's transaction, open since 0, holds the stable offset back.
    let entry = p.aborted_entry(&done).unwrap();
    assert_eq!((entry.first_offset, entry.last_offset), (2, 4));
    assert_eq!(entry.last_stable_offset, 0);
    let done = end(&mut p, marker(1, 0, 0, false), 5).unwrap().unwrap();
    assert_eq!(p.aborted_entry(&done).unwrap().last_stable_offset, 6);
    // Asked before the marker is taken in, the answer is the same.
    offer(&mut p, txn(1, 0, 2, 1, 6)).unwrap();
    let (_, done) = p.check_marker(&marker(1, 0, 0, false), 7, 0).unwrap();
    assert_eq!(
        p.aborted_entry(&done.unwrap()).unwrap().last_stable_offset,
        8
    );
    assert!(
        p.aborted_entry(&CompletedTxn {
            aborted: false,
            ..done.unwrap()
        })
        .is_none()
    );
}

#[test]
fn stale_markers_are_fenced_and_change_nothing() {
    let mut p = Producers::default();
    offer(&mut p, txn(1, 3, 0, 1, 0)).unwrap();
    end(&mut p, marker(1, 3, 7, true), 1).unwrap();
    offer(&mut p, txn(1, 3, 1, 1, 2)).unwrap();
    let before = p.clone();
    assert!(matches!(
        end(&mut p, marker(1, 2, 7, false), 3),
        Err(Error::InvalidProducerEpoch {
            epoch: 2,
            current: 3,
            ..
        })
    ));
    assert!(matches!(
        end(&mut p, marker(1, 3, 6, false), 3),
        Err(Error::TransactionCoordinatorFenced {
            epoch: 6,
            current: 7,
            ..
        })
    ));
    assert_eq!(p, before);
}

#[test]
fn a_marker_for_a_producer_that_wrote_nothing_ends_nothing() {
    let mut p = Producers::default();
    assert_eq!(end(&mut p, marker(9, 4, 0, false), 0).unwrap(), None);
    let info = p.infos()[0];
    assert_eq!(
        (info.epoch, info.last_sequence, info.last_offset),
        (4, -1, -1)
    );
    // Known by its marker alone: its epoch's sequences start at 0, an older epoch is fenced.
    assert!(matches!(
        offer(&mut p, txn(9, 4, 5, 1, 1)),
        Err(Error::OutOfOrderSequence {
            expected: 0,
            received: 5,
            ..
        })
    ));
    assert!(matches!(
        offer(&mut p, txn(9, 3, 0, 1, 1)),
        Err(Error::InvalidProducerEpoch { .. })
    ));
    offer(&mut p, txn(9, 4, 0, 1, 1)).unwrap();
    // A marker of a new epoch forgets the old epoch's batches.
    end(&mut p, marker(9, 5, 0, false), 2).unwrap();
    assert_eq!(p.infos()[0].last_sequence, -1);
}

#[test]
fn a_producer_with_an_open_transaction_is_never_forgotten() {
    let mut p = Producers::default();
    offer(&mut p, txn(1, 0, 0, 1, 0)).unwrap();
    offer(&mut p, header(2, 0, 0, 1, 1)).unwrap();
    assert_eq!(p.expire(1 << 40, 1), 1);
    assert_eq!(p.retain_from(100), 0);
    assert_eq!(p.first_unstable_offset(), Some(0));
    end(&mut p, marker(1, 0, 0, true), 2).unwrap();
    assert_eq!(p.retain_from(100), 1);
    assert_eq!(p.len(), 0);
}

#[test]
fn a_marker_is_a_control_batch_kafka_reads() {
    for commit in [false, true] {
        let m = marker(77, 3, 12, commit);
        let bytes = m.batch(1_700_000_000_000);
        let (batch, rest) = BatchRef::parse(&bytes, 0).unwrap();
        assert!(rest.is_empty());
        batch.verify_crc(0).unwrap();
        let h = batch.header;
        assert!(h.is_control() && h.is_transactional());
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (77, 3, -1)
        );
        let records = batch.records(1 << 10).unwrap();
        let records: Vec<_> = records.iter().map(Result::unwrap).collect();
        assert_eq!(records.len(), 1);
        // Kafka's EndTransactionMarker: key version 0 and type, value version 0 and epoch.
        let kind = u8::from(commit);
        assert_eq!(records[0].key, Some(&[0, 0, 0, kind][..]));
        assert_eq!(records[0].value, Some(&[0, 0, 0, 0, 0, 12][..]));
        // No record for a reader.
        let decoded = crate::batch::Record::decode_all(&bytes.clone().into(), 1 << 10).unwrap();
        assert!(decoded.is_empty());
        assert_eq!(Marker::parse(&batch), Some(m));
    }
}

#[test]
fn other_control_records_are_not_markers() {
    for (key, value) in [
        (&[0u8, 0, 0, 2][..], &[0u8, 0, 0, 0, 0, 0][..]), // LEADER_CHANGE
        (&[0, 1, 0, 1][..], &[0, 0, 0, 0, 0, 0][..]),     // unknown key version
        (&[0, 0, 0, 1][..], &[0, 0, 0][..]),              // value too short
    ] {
        let mut b = BatchBuilder::new(Compression::None)
            .producer(1, 0, -1)
            .control();
        b.push(0, Some(key), Some(value), &[]);
        let bytes = b.build(0).unwrap();
        let (batch, _) = BatchRef::parse(&bytes, 0).unwrap();
        assert_eq!(Marker::parse(&batch), None, "{key:?} {value:?}");
    }
    let plain = BatchBuilder::new(Compression::None).transactional();
    let mut plain = plain.producer(1, 0, 0);
    plain.push(0, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0]), &[]);
    let bytes = plain.build(0).unwrap();
    assert_eq!(Marker::parse(&BatchRef::parse(&bytes, 0).unwrap().0), None);
}

#[test]
fn a_version_1_snapshot_reads_as_no_transactions() {
    // Version 1: header, one producer (id 5, epoch 2, one batch), CRC.
    let mut v1 = Vec::new();
    v1.extend_from_slice(b"LOGDPSNP");
    v1.extend_from_slice(&1u16.to_be_bytes());
    v1.extend_from_slice(&0u16.to_be_bytes());
    v1.extend_from_slice(&10i64.to_be_bytes());
    v1.extend_from_slice(&1u32.to_be_bytes());
    v1.extend_from_slice(&5i64.to_be_bytes());
    v1.extend_from_slice(&2i16.to_be_bytes());
    v1.push(1);
    for field in [&0i32.to_be_bytes()[..], &3i32.to_be_bytes()] {
        v1.extend_from_slice(field);
    }
    for field in [6i64, 9, 4_242] {
        v1.extend_from_slice(&field.to_be_bytes());
    }
    let crc = crate::crc::crc32c(&v1);
    v1.extend_from_slice(&crc.to_be_bytes());
    let read = Snapshot::decode(&v1, Path::new("s")).unwrap();
    let info = read.producers.infos()[0];
    assert_eq!(
        info,
        ProducerInfo {
            producer_id: 5,
            epoch: 2,
            last_sequence: 3,
            last_timestamp: 4_242,
            last_offset: 9,
            coordinator_epoch: -1,
            txn_first_offset: None,
        }
    );
    // Written back, it is version 2 and reads the same.
    let v2 = snapshot::encode(10, &read.producers);
    assert_eq!(&v2[8..10], &2u16.to_be_bytes());
    assert_eq!(Snapshot::decode(&v2, Path::new("s")).unwrap(), read);
}

/// One thing a transactional client or its coordinator does.
#[derive(Debug, Clone)]
enum Op {
    /// Producer `id` sends a transactional batch of `count` records.
    Send { id: i64, count: i32 },
    /// Its coordinator ends its transaction.
    End { id: i64, commit: bool },
    /// It bumps its epoch (a new instance with the same transactional id).
    Bump { id: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..4i64, 1..5i32).prop_map(|(id, count)| Op::Send { id, count }),
        2 => (0..4i64, any::<bool>()).prop_map(|(id, commit)| Op::End { id, commit }),
        1 => (0..4i64).prop_map(|id| Op::Bump { id }),
    ]
}

proptest! {
    /// Whatever producers and coordinators do, replaying the log's batches and markers
    /// (recovery) rebuilds the state appending built, the open transactions are those a
    /// reference says, and every abort is indexed with the stable offset the reference gives.
    #[test]
    fn replay_rebuilds_what_appends_built(ops in prop::collection::vec(op(), 1..80)) {
        let mut live = Producers::default();
        let mut log: Vec<(BatchHeader, Option<Marker>)> = Vec::new();
        let mut next = 0i64;
        let mut epochs = [0i16; 4];
        let mut sequences = [0i32; 4];
        // Reference: each producer's open transaction's first offset.
        let mut open: [Option<i64>; 4] = [None; 4];
        let mut aborts = Vec::new();
        for op in ops {
            match op {
                Op::Send { id, count } => {
                    let i = id as usize;
                    let h = txn(id, epochs[i], sequences[i], count, next);
                    prop_assert_eq!(offer(&mut live, h).unwrap(), Verdict::Append);
                    open[i].get_or_insert(next);
                    sequences[i] += count;
                    next += i64::from(count);
                    log.push((h, None));
                }
                Op::End { id, commit } => {
                    let i = id as usize;
                    let m = marker(id, epochs[i], 0, commit);
                    let (entry, done) = live.check_marker(&m, next, 0).unwrap();
                    prop_assert_eq!(done.map(|d| d.first_offset), open[i]);
                    if let Some(d) = done.filter(|d| d.aborted) {
                        aborts.push(live.aborted_entry(&d).unwrap());
                    }
                    live.commit(vec![(id, entry)]);
                    open[i] = None;
                    let mut h = header(id, epochs[i], -1, 1, next);
                    h.attributes |= 0x30;
                    log.push((h, Some(m)));
                    next += 1;
                }
                Op::Bump { id } if open[id as usize].is_none() => {
                    epochs[id as usize] += 1;
                    sequences[id as usize] = 0;
                }
                Op::Bump { .. } => {}
            }
            let expected = open.iter().flatten().min().copied();
            prop_assert_eq!(live.first_unstable_offset(), expected);
            if let Some(a) = aborts.last() {
                let others = open.iter().flatten().copied().min();
                prop_assert!(a.last_stable_offset <= a.last_offset + 1);
                prop_assert!(others.is_none_or(|o| a.last_stable_offset <= o.max(a.last_offset + 1)));
            }
        }
        let mut replayed = Producers::default();
        let mut replayed_aborts = Vec::new();
        for (h, m) in &log {
            match m {
                Some(m) => {
                    let done = replayed.replay_marker(m, h.base_offset, 5_000 + h.base_offset);
                    replayed_aborts.extend(done.and_then(|d| replayed.aborted_entry(&d)));
                }
                None => replayed.replay(h),
            }
        }
        // Timestamps differ (the live markers used `end`'s); everything else must not.
        prop_assert_eq!(&replayed.open, &live.open);
        prop_assert_eq!(replayed_aborts, aborts);
        let strip = |p: &Producers| {
            let mut infos = p.infos();
            for i in &mut infos {
                i.last_timestamp = 0;
            }
            infos
        };
        prop_assert_eq!(strip(&replayed), strip(&live));
    }
}
