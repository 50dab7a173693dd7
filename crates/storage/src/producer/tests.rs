//! The producer state machine rule by rule, a property test of a client that retries any of
//! its in-flight batches, and the snapshot codec.

use std::path::Path;

use proptest::prelude::*;

use super::snapshot::Snapshot;
use super::*;
use crate::batch::BatchHeader;

/// The header of a batch of `count` records from `id`/`epoch` starting at `sequence`, to be
/// stored at `base_offset`.
pub(super) fn header(
    id: i64,
    epoch: i16,
    sequence: i32,
    count: i32,
    base_offset: i64,
) -> BatchHeader {
    BatchHeader {
        base_offset,
        batch_length: 0,
        partition_leader_epoch: 0,
        magic: 2,
        crc: 0,
        attributes: 0,
        last_offset_delta: count - 1,
        base_timestamp: 1_000 + base_offset,
        max_timestamp: 1_000 + base_offset,
        producer_id: id,
        producer_epoch: epoch,
        base_sequence: sequence,
        record_count: count,
    }
}

/// Checks one batch and, if it is appended, commits it.
pub(super) fn offer(producers: &mut Producers, h: BatchHeader) -> Result<Verdict> {
    match producers.check_append(&[(0, h)])? {
        Ok(updated) => {
            producers.commit(updated);
            Ok(Verdict::Append)
        }
        Err(original) => Ok(Verdict::Duplicate(original)),
    }
}

#[test]
fn a_retried_batch_is_a_duplicate_with_its_original_offsets() {
    let mut p = Producers::default();
    assert_eq!(
        offer(&mut p, header(1, 0, 0, 3, 10)).unwrap(),
        Verdict::Append
    );
    assert_eq!(
        offer(&mut p, header(1, 0, 3, 2, 13)).unwrap(),
        Verdict::Append
    );
    // The retry arrives when the log has moved on: it would get offset 40.
    let Verdict::Duplicate(original) = offer(&mut p, header(1, 0, 0, 3, 40)).unwrap() else {
        panic!("not a duplicate");
    };
    assert_eq!((original.first_offset, original.last_offset), (10, 12));
    assert_eq!(
        p.infos()[0].last_offset,
        14,
        "the duplicate changed nothing"
    );
}

#[test]
fn only_the_last_five_batches_are_recognised() {
    let mut p = Producers::default();
    for i in 0..7 {
        offer(&mut p, header(1, 0, i, 1, i64::from(i))).unwrap();
    }
    for i in 2..7 {
        assert!(matches!(
            offer(&mut p, header(1, 0, i, 1, 100)),
            Ok(Verdict::Duplicate(b)) if b.first_offset == i64::from(i)
        ));
    }
    assert!(matches!(
        offer(&mut p, header(1, 0, 1, 1, 100)),
        Err(Error::OutOfOrderSequence {
            expected: 7,
            received: 1,
            ..
        })
    ));
}

#[test]
fn a_gap_is_out_of_order_and_changes_nothing() {
    let mut p = Producers::default();
    offer(&mut p, header(1, 0, 0, 2, 0)).unwrap();
    let before = p.clone();
    assert!(matches!(
        offer(&mut p, header(1, 0, 3, 1, 2)),
        Err(Error::OutOfOrderSequence {
            producer_id: 1,
            epoch: 0,
            expected: 2,
            received: 3
        })
    ));
    // A batch that overlaps the last one without matching it is out of order too.
    assert!(matches!(
        offer(&mut p, header(1, 0, 1, 2, 2)),
        Err(Error::OutOfOrderSequence { expected: 2, .. })
    ));
    assert_eq!(p, before);
}

#[test]
fn an_older_epoch_is_fenced_and_a_newer_one_starts_at_zero() {
    let mut p = Producers::default();
    offer(&mut p, header(1, 3, 0, 1, 0)).unwrap();
    assert!(matches!(
        offer(&mut p, header(1, 2, 1, 1, 1)),
        Err(Error::InvalidProducerEpoch {
            producer_id: 1,
            epoch: 2,
            current: 3
        })
    ));
    assert!(matches!(
        offer(&mut p, header(1, 4, 5, 1, 1)),
        Err(Error::OutOfOrderSequence {
            expected: 0,
            received: 5,
            ..
        })
    ));
    assert_eq!(
        offer(&mut p, header(1, 4, 0, 1, 1)).unwrap(),
        Verdict::Append
    );
    // The old epoch's batches are no longer duplicates: that epoch is fenced.
    assert!(matches!(
        offer(&mut p, header(1, 3, 0, 1, 9)),
        Err(Error::InvalidProducerEpoch { current: 4, .. })
    ));
}

#[test]
fn an_unknown_producer_is_accepted_at_any_sequence() {
    let mut p = Producers::default();
    assert_eq!(
        offer(&mut p, header(9, 0, 4711, 1, 0)).unwrap(),
        Verdict::Append
    );
    assert_eq!(p.infos()[0].last_sequence, 4711);
}

#[test]
fn a_producer_id_without_epoch_or_sequence_is_invalid() {
    let mut p = Producers::default();
    for (epoch, sequence) in [(-1, 0), (0, -1), (-5, -5)] {
        assert!(matches!(
            offer(&mut p, header(1, epoch, sequence, 1, 0)),
            Err(Error::InvalidProducerFields { producer_id: 1, .. })
        ));
    }
    assert_eq!(p.len(), 0);
    // Without a producer id the fields are not looked at.
    assert_eq!(
        offer(&mut p, header(-1, -1, -1, 1, 0)).unwrap(),
        Verdict::Append
    );
    assert_eq!(p.len(), 0);
}

#[test]
fn sequences_wrap_from_i32_max_to_zero() {
    assert_eq!(advance_sequence(i32::MAX, 0), i32::MAX);
    assert_eq!(advance_sequence(i32::MAX, 1), 0);
    assert_eq!(advance_sequence(i32::MAX - 1, 4), 2);
    let mut p = Producers::default();
    offer(&mut p, header(1, 0, i32::MAX - 2, 2, 0)).unwrap();
    // A batch spanning the wrap: MAX, 0, 1.
    assert_eq!(
        offer(&mut p, header(1, 0, i32::MAX, 3, 2)).unwrap(),
        Verdict::Append
    );
    assert_eq!(p.infos()[0].last_sequence, 1);
    assert!(matches!(
        offer(&mut p, header(1, 0, i32::MAX, 3, 9)),
        Ok(Verdict::Duplicate(b)) if b.first_offset == 2
    ));
    assert_eq!(
        offer(&mut p, header(1, 0, 2, 1, 5)).unwrap(),
        Verdict::Append
    );
}

#[test]
fn batches_of_one_append_are_checked_against_each_other() {
    let p = Producers::default();
    let consecutive = [(0, header(1, 0, 0, 2, 0)), (100, header(1, 0, 2, 1, 2))];
    assert!(
        matches!(p.check_append(&consecutive), Ok(Ok(u)) if u.len() == 1 && u[0].1.batches.len() == 2)
    );
    let gap = [(0, header(1, 0, 0, 2, 0)), (100, header(1, 0, 5, 1, 2))];
    assert!(matches!(
        p.check_append(&gap),
        Err(Error::OutOfOrderSequence { expected: 2, .. })
    ));
}

#[test]
fn expiry_and_retention_forget_producers() {
    let mut p = Producers::default();
    offer(&mut p, header(1, 0, 0, 1, 0)).unwrap(); // timestamp 1000, offset 0
    offer(&mut p, header(2, 0, 0, 1, 50)).unwrap(); // timestamp 1050, offset 50
    assert_eq!(p.expire(1_049, 50), 0);
    assert_eq!(p.expire(1_050, 50), 1, "idle for exactly the expiration");
    assert_eq!(p.infos()[0].producer_id, 2);
    assert_eq!(p.retain_from(50), 0);
    assert_eq!(p.retain_from(51), 1);
    assert_eq!(p.len(), 0);
    // Forgotten, producer 2 starts afresh at any sequence.
    assert_eq!(
        offer(&mut p, header(2, 0, 77, 1, 60)).unwrap(),
        Verdict::Append
    );
}

/// What a client does next.
#[derive(Debug, Clone)]
enum Step {
    /// Sends its next batch of this many records.
    Send(i32),
    /// Retries the batch this many back among its last five (0 = newest).
    Retry(usize),
    /// Retries a batch older than the last five.
    StaleRetry,
    /// Bumps its epoch (KIP-360) and restarts its sequence.
    BumpEpoch,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1..20i32).prop_map(Step::Send),
        3 => (0..BATCHES_RETAINED).prop_map(Step::Retry),
        1 => Just(Step::StaleRetry),
        1 => Just(Step::BumpEpoch),
    ]
}

proptest! {
    /// However a client interleaves new batches, retries and epoch bumps, each batch is
    /// stored once, retries get the original offsets, and nothing stale is ever stored.
    #[test]
    fn every_batch_is_stored_once(steps in prop::collection::vec(step(), 1..120)) {
        let mut p = Producers::default();
        let mut end = 0i64; // the log's end offset
        let mut epoch = 0i16;
        let mut next_sequence = 0i32;
        // The client's sent batches of this epoch: (first sequence, count, stored at).
        let mut sent: Vec<(i32, i32, i64)> = Vec::new();
        for step in steps {
            match step {
                Step::Send(count) => {
                    let verdict = offer(&mut p, header(3, epoch, next_sequence, count, end)).unwrap();
                    prop_assert_eq!(verdict, Verdict::Append);
                    sent.push((next_sequence, count, end));
                    end += i64::from(count);
                    next_sequence += count;
                }
                Step::Retry(back) if back < sent.len() => {
                    let (first, count, at) = sent[sent.len() - 1 - back];
                    let verdict = offer(&mut p, header(3, epoch, first, count, end)).unwrap();
                    prop_assert!(
                        matches!(verdict, Verdict::Duplicate(b) if b.first_offset == at),
                        "retry of {:?} got {:?}", (first, count, at), verdict
                    );
                }
                Step::StaleRetry if sent.len() > BATCHES_RETAINED => {
                    let (first, count, _) = sent[sent.len() - 1 - BATCHES_RETAINED];
                    let result = offer(&mut p, header(3, epoch, first, count, end));
                    prop_assert!(
                        matches!(result, Err(Error::OutOfOrderSequence { .. })),
                        "{:?}",
                        result
                    );
                }
                Step::BumpEpoch => {
                    // The new epoch's first batch fences the old one's retries.
                    let old = sent.last().copied();
                    epoch += 1;
                    sent.clear();
                    let verdict = offer(&mut p, header(3, epoch, 0, 1, end)).unwrap();
                    prop_assert_eq!(verdict, Verdict::Append);
                    sent.push((0, 1, end));
                    end += 1;
                    next_sequence = 1;
                    if let Some((first, count, _)) = old {
                        let result = offer(&mut p, header(3, epoch - 1, first, count, end));
                        let fenced = matches!(result, Err(Error::InvalidProducerEpoch { .. }));
                        prop_assert!(fenced, "{:?}", result);
                    }
                }
                Step::Retry(_) | Step::StaleRetry => {}
            }
        }
        if let Some(info) = p.infos().first() {
            prop_assert_eq!(info.last_offset, end - 1);
            prop_assert_eq!(info.epoch, epoch);
        }
    }

    #[test]
    fn snapshots_round_trip(
        producers in prop::collection::btree_map(
            0..i64::MAX,
            (
                0..i16::MAX,
                prop::collection::vec((any::<i32>(), 1..1000i32, 0..1i64 << 40), 0..=5),
                -1..1000i32,
                prop::option::of(0..1i64 << 41),
                any::<i64>(),
            ),
            0..40,
        ),
    ) {
        let entries = producers
            .into_iter()
            .map(|(id, (epoch, batches, coordinator_epoch, txn_first_offset, last_timestamp))| {
                let batches = batches
                    .into_iter()
                    .map(|(first, count, at)| BatchMetadata {
                        first_sequence: first,
                        last_sequence: advance_sequence(first, count - 1),
                        first_offset: at,
                        last_offset: at + i64::from(count) - 1,
                        max_timestamp: at * 3,
                    })
                    .collect();
                let entry = ProducerEntry {
                    epoch,
                    batches,
                    last_timestamp,
                    coordinator_epoch,
                    txn_first_offset,
                };
                (id, entry)
            })
            .collect();
        let snapshot = Snapshot { offset: 1 << 41, producers: Producers::from_entries(entries) };
        let bytes = snapshot::encode(snapshot.offset, &snapshot.producers);
        prop_assert_eq!(Snapshot::decode(&bytes, Path::new("s")).unwrap(), snapshot);
    }

    #[test]
    fn any_bytes_decode_to_a_snapshot_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Snapshot::decode(&bytes, Path::new("s"));
    }
}

#[test]
fn every_damaged_byte_of_a_snapshot_is_caught() {
    let mut p = Producers::default();
    offer(&mut p, header(5, 1, 0, 4, 0)).unwrap();
    offer(&mut p, header(6, 0, 9, 1, 4)).unwrap();
    let good = snapshot::encode(5, &p);
    // Golden layout: header, two producers of one batch each, CRC.
    assert_eq!(good.len(), 24 + 2 * (31 + 32) + 4);
    assert_eq!(&good[0..8], b"LOGDPSNP");
    assert_eq!(&good[12..20], &5i64.to_be_bytes(), "the snapshot's offset");
    assert_eq!(&good[20..24], &2u32.to_be_bytes(), "producer count");
    assert_eq!(
        &good[24..32],
        &5i64.to_be_bytes(),
        "producers by id: 5 first"
    );
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x10;
        assert!(
            Snapshot::decode(&bad, Path::new("s")).is_err(),
            "flipped byte {i} went unnoticed"
        );
    }
    for len in 0..good.len() {
        assert!(Snapshot::decode(&good[..len], Path::new("s")).is_err());
    }
}

#[test]
fn a_snapshot_whose_count_lies_is_refused_without_allocating() {
    let mut bytes = snapshot::encode(0, &Producers::default());
    bytes.truncate(bytes.len() - 4);
    bytes[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
    let crc = crate::crc::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        Snapshot::decode(&bytes, Path::new("s")),
        Err(Error::CorruptFile { reason, .. }) if reason.contains("count")
    ));
}

#[test]
fn snapshot_names_are_twenty_digit_offsets() {
    assert_eq!(snapshot::file_name(42), "00000000000000000042.snapshot");
    assert_eq!(
        snapshot::parse_name("00000000000000000042.snapshot"),
        Some(42)
    );
    assert_eq!(snapshot::parse_name("42.snapshot"), None);
    assert_eq!(snapshot::parse_name("00000000000000000042.log"), None);
}
