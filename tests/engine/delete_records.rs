//! DeleteRecords in the engine: the log start moves up to the asked offset, whole segments
//! below it go, readers below it are refused, a consumer resetting to the earliest starts
//! there, and the start survives a reopen; offsets past the high watermark and topics that
//! only compact are refused.

use std::time::Duration;

use logd::{
    AutoOffsetReset, CleanupPolicy, Consumer, ConsumerConfig, Error, TopicConfig, TopicPartition,
};
use logd_storage::Offset;
use logd_storage::batch::{BatchBuilder, Compression};

use super::open;

/// One record of 200 bytes, `n` in its key.
fn record(n: i64) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(n, Some(format!("k{n}").as_bytes()), Some(&[b'r'; 200]), &[]);
    builder.build(0).unwrap()
}

fn segment_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("topics/t/0"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count()
}

#[test]
fn deleted_records_are_gone_for_readers_and_stay_gone_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = open(dir.path());
        log.create_topic(
            "t",
            TopicConfig {
                segment_bytes: 1024,
                ..TopicConfig::default()
            },
        )
        .unwrap();
        for n in 0..100 {
            log.append("t", 0, &mut record(n)).unwrap();
        }
        let segments = segment_files(dir.path());
        assert!(segments > 10, "{segments} segments");

        assert_eq!(log.delete_records("t", 0, 40).unwrap(), 40);
        let partition = log.partition("t", 0).unwrap();
        assert_eq!(partition.log_start_offset(), Offset(40));
        // Segments wholly below 40 are deleted; the one holding 40 stays.
        assert!(segment_files(dir.path()) < segments);
        assert!(matches!(
            partition.read(Offset(39), 1 << 20),
            Err(logd_storage::Error::OffsetOutOfRange { .. })
        ));
        // Below the start changes nothing; above the high watermark is out of range.
        assert_eq!(log.delete_records("t", 0, 10).unwrap(), 40);
        assert!(matches!(
            log.delete_records("t", 0, 101),
            Err(Error::Storage(logd_storage::Error::OffsetOutOfRange { .. }))
        ));
        assert!(matches!(
            log.delete_records("t", 0, -2),
            Err(Error::Storage(logd_storage::Error::OffsetOutOfRange { .. }))
        ));
        assert!(matches!(
            log.delete_records("t", 1, 0),
            Err(Error::UnknownPartition { .. })
        ));

        let mut consumer = Consumer::new(
            &log,
            ConsumerConfig {
                auto_offset_reset: AutoOffsetReset::Earliest,
                ..ConsumerConfig::default()
            },
        );
        consumer
            .assign(vec![TopicPartition {
                topic: "t".into(),
                partition: 0,
            }])
            .unwrap();
        let mut offsets = Vec::new();
        while offsets.len() < 60 {
            let records = consumer.poll(Duration::from_secs(5)).unwrap();
            assert!(!records.is_empty(), "the consumer stalled at {offsets:?}");
            offsets.extend(records.iter().map(|r| r.offset));
        }
        assert_eq!(offsets, (40..100).collect::<Vec<_>>());
    }
    let log = open(dir.path());
    assert_eq!(
        log.partition("t", 0).unwrap().log_start_offset(),
        Offset(40)
    );
    // -1 is the high watermark: everything goes, and appends go on after it.
    assert_eq!(log.delete_records("t", 0, -1).unwrap(), 100);
    log.append("t", 0, &mut record(100)).unwrap();
    assert_eq!(log.partition("t", 0).unwrap().end_offset(), Offset(101));
}

#[test]
fn a_topic_that_only_compacts_refuses_deletions_as_kafka_does() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    for (name, policy) in [
        ("compact", CleanupPolicy::Compact),
        ("both", CleanupPolicy::CompactDelete),
    ] {
        log.create_topic(
            name,
            TopicConfig {
                cleanup_policy: policy,
                ..TopicConfig::default()
            },
        )
        .unwrap();
        log.append(name, 0, &mut record(0)).unwrap();
    }
    match log.delete_records("compact", 0, 1) {
        Err(Error::PolicyViolation(message)) => assert_eq!(
            message,
            "Records of partition compact-0 can not be deleted due to the configured policy"
        ),
        other => panic!("deleting from a compacted topic: {other:?}"),
    }
    assert_eq!(log.delete_records("both", 0, 1).unwrap(), 1);
}
