//! Timestamps at append, as Kafka's `LogValidator` treats them: a max timestamp that does not
//! match the records is set, never refused (Go's sarama 1.22 states -1); log-append time stamps
//! every batch; create-time bounds refuse records too far from the append; a producer may not
//! claim log-append time. Every normalised batch keeps its records and passes its CRC.

use proptest::prelude::*;

use super::*;
use crate::Error;
use crate::batch::{BatchRef, CRC, MAX_TIMESTAMP};

const NOW: i64 = 1_800_000_000_000;

/// `batch` with its max timestamp replaced by `max` and its CRC made to match, as a client
/// that states the max timestamp wrongly but checksums what it sends.
fn restated(mut batch: Vec<u8>, max: i64) -> Vec<u8> {
    batch[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&max.to_be_bytes());
    let crc = crate::crc::crc32c(&batch[crate::batch::ATTRIBUTES..]);
    batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    batch
}

/// A stored batch: its max timestamp, whether it is log-append time, and its records'
/// (timestamp, value).
type Stored = (i64, bool, Vec<(i64, Vec<u8>)>);

/// Every stored batch.
fn stored(log: &PartitionLog) -> Vec<Stored> {
    let bytes = log.read(Offset(0), 1 << 20).unwrap();
    let mut out = Vec::new();
    let mut rest = &bytes[..];
    let mut position = 0;
    while !rest.is_empty() {
        let (batch, after) = BatchRef::parse(rest, position).unwrap();
        batch.verify_crc(position).unwrap();
        let records = batch
            .records(1 << 20)
            .unwrap()
            .iter()
            .map(|r| {
                let r = r.unwrap();
                (r.timestamp, r.value.unwrap().to_vec())
            })
            .collect();
        out.push((
            batch.header.max_timestamp,
            batch.header.is_log_append_time(),
            records,
        ));
        position += rest.len() - after.len();
        rest = after;
    }
    out
}

#[test]
fn a_wrong_max_timestamp_is_set_from_the_records_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path(), small_config()).unwrap();
    let values = vec![b"a".to_vec(), b"b".to_vec()];
    let appended = log
        .append_at(&mut restated(batch_of(&values, NOW), -1), NOW)
        .unwrap();
    assert_eq!(appended.normalized, 1);
    let right = log.append_at(&mut batch_of(&values, NOW), NOW).unwrap();
    assert_eq!(right.normalized, 0, "a right one is stored as sent");
    let batches = stored(&log);
    assert_eq!(batches[0].0, NOW + 1, "the records' largest timestamp");
    assert_eq!(batches[0], batches[1]);
}

#[test]
fn log_append_time_stamps_every_batch_with_the_append_time() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        log_append_time: true,
        ..small_config()
    };
    let log = PartitionLog::open(dir.path(), config).unwrap();
    let appended = log
        .append_at(&mut batch_of(&[b"x".to_vec()], 5), NOW)
        .unwrap();
    assert_eq!(appended.log_append_time, Some(NOW));
    let (max, log_append_time, records) = stored(&log).remove(0);
    assert_eq!((max, log_append_time), (NOW, true));
    assert_eq!(
        records,
        vec![(NOW, b"x".to_vec())],
        "readers see the append time"
    );
}

#[test]
fn create_time_bounds_refuse_records_too_far_from_the_append() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        timestamp_before_max_ms: Some(1000),
        timestamp_after_max_ms: Some(3_600_000),
        ..small_config()
    };
    let log = PartitionLog::open(dir.path(), config).unwrap();
    let one = |ts: i64| batch_of(&[b"v".to_vec()], ts);
    for ts in [NOW - 1001, NOW + 3_600_001] {
        let refused = log.append_at(&mut one(ts), NOW).unwrap_err();
        assert!(
            matches!(refused, Error::TimestampOutOfRange { timestamp, .. } if timestamp == ts),
            "{refused}"
        );
    }
    for ts in [NOW - 1000, NOW + 3_600_000] {
        log.append_at(&mut one(ts), NOW).unwrap();
    }
    assert_eq!(
        log.end_offset(),
        Offset(2),
        "nothing of the refused batches stored"
    );
    // A producer claiming log-append time on a log of create times.
    let mut claimed = one(NOW);
    assert!(crate::batch::set_max_timestamp(&mut claimed, true, NOW));
    assert!(matches!(
        log.append_at(&mut claimed, NOW),
        Err(Error::ProducerLogAppendTime { position: 0 })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn normalising_keeps_every_record_and_yields_a_valid_crc(
        timestamps in proptest::collection::vec(0i64..1_000_000, 1..20),
        stated in any::<i64>(),
        compression in prop_oneof![Just(Compression::None), Just(Compression::Lz4), Just(Compression::Zstd)],
    ) {
        let mut builder = BatchBuilder::new(compression);
        for (i, ts) in timestamps.iter().enumerate() {
            builder.push(*ts, Some(format!("k{i}").as_bytes()), Some(format!("v{i}").as_bytes()), &[]);
        }
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(dir.path(), small_config()).unwrap();
        log.append_at(&mut restated(builder.build(0).unwrap(), stated), NOW).unwrap();
        let batches = stored(&log);
        prop_assert_eq!(batches.len(), 1);
        let (max, log_append_time, records) = &batches[0];
        prop_assert!(!log_append_time);
        prop_assert_eq!(*max, *timestamps.iter().max().unwrap());
        let expected: Vec<(i64, Vec<u8>)> = timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| (*ts, format!("v{i}").into_bytes()))
            .collect();
        prop_assert_eq!(records, &expected);
    }
}
