//! Compacted topics over the engine: the cleaner keeps each key's latest record at its offset
//! (its own thread does it, also for a topic altered to compact, or the embedder's
//! `clean_topics`), a consumer reads across what
//! the cleaning removed, records without a key are refused and store nothing, and retention
//! deletes nothing of a topic that only compacts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use logd::{
    AutoOffsetReset, CleanupPolicy, Config, Consumer, ConsumerConfig, Error, Housekeeping, Log,
    ManualClock, TopicConfig, TopicPartition,
};
use logd_storage::batch::{BatchBuilder, Compression};

use super::eventually;

/// Linux's EMFILE: too many open files.
const EMFILE: i32 = 24;

/// One batch of `(key, value)` records at `ts`; a `None` key is a keyless record.
fn batch(records: &[(Option<&str>, &str)], ts: i64) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    for (key, value) in records {
        builder.push(ts, key.map(str::as_bytes), Some(value.as_bytes()), &[]);
    }
    builder.build(0).unwrap()
}

/// An engine config whose cleaning the test runs itself (`clean_topics`).
fn without_housekeeping() -> Config {
    Config {
        housekeeping: Housekeeping {
            enabled: false,
            ..Housekeeping::default()
        },
        ..Config::default()
    }
}

/// An engine in `dir` on a manual clock at 10 s, whose cleaning the test runs itself.
fn engine_at_ten_seconds(dir: &std::path::Path) -> Log {
    let clock = Arc::new(ManualClock::new(10_000));
    Log::open_with(
        Arc::new(logd_storage::RealFs),
        clock,
        dir,
        without_housekeeping(),
    )
    .unwrap()
}

fn compacted(policy: CleanupPolicy) -> TopicConfig {
    TopicConfig {
        cleanup_policy: policy,
        segment_bytes: 1024,
        retention_ms: Some(1),
        ..TopicConfig::default()
    }
}

/// Writes 300 records of about 100 bytes over keys k0..k9 into `t`-0; what each key's latest
/// value and offset are.
fn write(log: &Log) -> BTreeMap<String, (i64, String)> {
    let mut latest = BTreeMap::new();
    for i in 0..100 {
        let records: Vec<(String, String)> = (0..3)
            .map(|j| {
                let n = i * 3 + j;
                (format!("k{}", n % 10), format!("v{n}-{}", "x".repeat(100)))
            })
            .collect();
        let refs: Vec<(Option<&str>, &str)> = records
            .iter()
            .map(|(k, v)| (Some(k.as_str()), v.as_str()))
            .collect();
        let info = log.append("t", 0, &mut batch(&refs, 1_000)).unwrap();
        for (j, (k, v)) in records.into_iter().enumerate() {
            latest.insert(k, (info.base_offset.0 + j as i64, v));
        }
    }
    latest
}

/// Everything a consumer reads of `t`-0 from the start: key to (offset, value), in order.
fn consume(log: &Log) -> Vec<(i64, String, String)> {
    let mut consumer = Consumer::new(
        log,
        ConsumerConfig {
            auto_offset_reset: AutoOffsetReset::Earliest,
            max_poll_records: 7,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![TopicPartition::new("t", 0)]).unwrap();
    let mut read = Vec::new();
    let end = log.partition("t", 0).unwrap().end_offset().0;
    for _ in 0..1_000 {
        for r in consumer.poll(Duration::from_millis(10)).unwrap() {
            let text = |b: Option<bytes::Bytes>| String::from_utf8(b.unwrap().to_vec()).unwrap();
            read.push((r.offset, text(r.key), text(r.value)));
        }
        if consumer.position(&TopicPartition::new("t", 0)).unwrap() >= end {
            return read;
        }
    }
    panic!("the consumer never reached {end}: read {read:?}");
}

#[test]
fn the_cleaner_keeps_each_keys_latest_record_and_consumers_read_past_the_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let log = engine_at_ten_seconds(dir.path());
    log.create_topic("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    let latest = write(&log);
    let partition = log.partition("t", 0).unwrap();
    assert!(partition.segment_count() > 3, "several sealed segments");
    let end = partition.end_offset();

    // Retention (1 ms) deletes nothing of a topic that only compacts.
    assert_eq!(log.apply_retention(1_000_000).unwrap(), 0);

    let round = log.clean_topics(10_000, 1 << 20, None);
    assert_eq!(round.partitions_cleaned, 1, "{round:?}");
    assert!(round.records_removed > 250, "{round:?}");
    assert_eq!(partition.end_offset(), end, "offsets never move");
    // The active segment is never cleaned: its keys may still have older copies before it.
    let read = consume(&log);
    let mut last_seen = BTreeMap::new();
    for (offset, key, value) in &read {
        last_seen.insert(key.clone(), (*offset, value.clone()));
    }
    assert_eq!(last_seen, latest, "each key's latest record, at its offset");
    assert!(
        read.len() < 60,
        "most older records went: {} read",
        read.len()
    );
    let offsets: Vec<i64> = read.iter().map(|r| r.0).collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "in offset order");

    // Without new writes, the next round finds nothing due.
    assert_eq!(
        log.clean_topics(20_000, 1 << 20, None).partitions_cleaned,
        0
    );

    // A record without a key is refused and stores nothing (Kafka's INVALID_RECORD).
    let refused = log.append("t", 0, &mut batch(&[(Some("k1"), "x"), (None, "y")], 2_000));
    assert!(
        matches!(
            refused,
            Err(Error::Storage(logd_storage::Error::KeylessRecord {
                index: 1,
                ..
            }))
        ),
        "{refused:?}"
    );
    assert_eq!(partition.end_offset(), end);
}

#[test]
fn compact_and_delete_also_applies_retention_and_delete_only_topics_take_keyless_records() {
    let dir = tempfile::tempdir().unwrap();
    let config = without_housekeeping();
    let log = Log::open(dir.path(), config).unwrap();
    log.create_topic("t", compacted(CleanupPolicy::CompactDelete))
        .unwrap();
    write(&log);
    assert!(
        log.apply_retention(1_000_000).unwrap() > 0,
        "retention applies too"
    );
    log.create_topic("plain", TopicConfig::default()).unwrap();
    log.append("plain", 0, &mut batch(&[(None, "keyless")], 1))
        .unwrap();
}

#[test]
fn the_engines_own_cleaner_thread_compacts_without_the_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        housekeeping: Housekeeping {
            cleaner_backoff: Duration::from_millis(20),
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let log = Log::open(dir.path(), config).unwrap();
    // Written as a plain topic, then altered to compact (as `logd topics alter` does).
    log.create_topic("t", compacted(CleanupPolicy::Delete))
        .unwrap();
    let latest = write(&log);
    let partition = log.partition("t", 0).unwrap();
    let before = partition.size_bytes();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        partition.size_bytes(),
        before,
        "nothing cleans a topic that only deletes"
    );
    log.alter_topic_config("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || partition.size_bytes()
            < before / 2),
        "the cleaner thread shrank the partition: {} of {before} bytes",
        partition.size_bytes()
    );
    let mut last_seen = BTreeMap::new();
    for (offset, key, value) in consume(&log) {
        last_seen.insert(key, (offset, value));
    }
    assert_eq!(last_seen, latest);
}

#[test]
fn a_failed_cleaning_is_counted_and_retried_after_a_backoff_while_writes_go_on() {
    let fs = logd_storage::SimFs::new();
    let config = without_housekeeping();
    let clock = Arc::new(ManualClock::new(10_000));
    let log = Log::open_with(Arc::new(fs.clone()), clock, "/data", config).unwrap();
    log.create_topic("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    let latest = write(&log);

    // The cleaned segment's file cannot be created (out of descriptors, say).
    fs.fail_nth(logd_storage::FaultKind::Create, 0, EMFILE);
    let failed = log.clean_topics(10_000, 1 << 20, None);
    assert_eq!(
        (failed.failed, failed.partitions_cleaned),
        (1, 0),
        "{failed:?}"
    );
    let stats = log.cleaner_stats();
    assert_eq!(
        (stats.failures, stats.uncleanable_partitions),
        (1, 1),
        "{stats:?}"
    );
    // The partition still takes writes: a cleaning failure is not a write failure.
    log.append("t", 0, &mut batch(&[(Some("k0"), "after")], 2_000))
        .unwrap();
    let after = log.partition("t", 0).unwrap().end_offset().0 - 1;

    // Within the backoff (15 s) it waits; past it, it is cleaned.
    let waiting = log.clean_topics(20_000, 1 << 20, None);
    assert_eq!(
        (waiting.backing_off, waiting.partitions_cleaned),
        (1, 0),
        "{waiting:?}"
    );
    let retried = log.clean_topics(25_001, 1 << 20, None);
    assert_eq!(retried.partitions_cleaned, 1, "{retried:?}");
    assert_eq!(log.cleaner_stats().uncleanable_partitions, 0);
    assert!(log.cleaner_stats().records_removed > 250);
    let mut expected = latest;
    expected.insert("k0".into(), (after, "after".into()));
    let mut last_seen = BTreeMap::new();
    for (offset, key, value) in consume(&log) {
        last_seen.insert(key, (offset, value));
    }
    assert_eq!(last_seen, expected);
}

#[test]
fn a_retry_worker_reading_a_compacted_source_is_carried_past_emptied_batches() {
    use logd_retry::{Embedded, Transport};
    let dir = tempfile::tempdir().unwrap();
    let config = without_housekeeping();
    let log = Log::open(dir.path(), config).unwrap();
    log.create_topic("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    write(&log);
    log.clean_topics(i64::MAX / 2, 1 << 20, None);
    let first_kept = consume(&log)[0].0;
    assert!(first_kept > 10, "the first batches hold nothing any more");
    let mut transport = Embedded::new(log.clone());
    let fetched = transport.fetch("t", 0, 0).unwrap();
    assert_eq!(
        fetched.first().map(|m| m.offset),
        Some(first_kept),
        "the first record that remains, not an empty answer that stalls the worker"
    );
}

#[test]
fn cleaner_ranges_divide_each_partition_as_the_cleaner_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = engine_at_ten_seconds(dir.path());
    log.create_topic("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    log.create_topic("plain", TopicConfig::default()).unwrap();
    write(&log);
    let partition = log.partition("t", 0).unwrap();
    let active = partition.active_segment_base().0;
    assert!(active > 0);

    // Before any cleaning: nothing clean, every sealed segment cleanable.
    let before = log.cleaner_ranges("t").unwrap();
    assert_eq!(
        before,
        vec![logd::CleanerRanges {
            partition: 0,
            log_start: 0,
            cleaned_up_to: 0,
            cleanable_end: active,
            active_start: active,
            log_end: 300,
        }]
    );

    log.clean_topics(10_000, 1 << 20, None);
    let after = log.cleaner_ranges("t").unwrap()[0];
    assert_eq!(
        (after.cleaned_up_to, after.cleanable_end, after.active_start),
        (active, active, active),
        "all that was cleanable is clean"
    );

    // Segments newer than min.compaction.lag.ms are sealed but not cleanable.
    log.alter_topic_config(
        "t",
        TopicConfig {
            min_compaction_lag_ms: 1_000_000,
            ..compacted(CleanupPolicy::Compact)
        },
    )
    .unwrap();
    let waiting = log.cleaner_ranges("t").unwrap()[0];
    assert_eq!(waiting.cleanable_end, waiting.cleaned_up_to);

    // A topic that only deletes has nothing clean or cleanable.
    log.append("plain", 0, &mut batch(&[(None, "x")], 1_000))
        .unwrap();
    let plain = log.cleaner_ranges("plain").unwrap()[0];
    assert_eq!(
        (plain.cleaned_up_to, plain.cleanable_end, plain.log_end),
        (0, 0, 1)
    );
    assert!(matches!(
        log.cleaner_ranges("missing"),
        Err(Error::UnknownTopic(_))
    ));
}

#[test]
fn max_compaction_lag_rolls_a_quiet_active_segment_so_its_records_get_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let log = engine_at_ten_seconds(dir.path());
    // Segments that would take a week or a megabyte to roll, a lag bound of a second.
    log.create_topic(
        "t",
        TopicConfig {
            cleanup_policy: CleanupPolicy::Compact,
            segment_bytes: 1 << 20,
            max_compaction_lag_ms: Some(1_000),
            ..TopicConfig::default()
        },
    )
    .unwrap();
    log.append("t", 0, &mut batch(&[(Some("a"), "old")], 1_000))
        .unwrap();
    log.append("t", 0, &mut batch(&[(Some("a"), "new")], 1_100))
        .unwrap();
    log.append("t", 0, &mut batch(&[(Some("b"), "later")], 2_500))
        .unwrap();
    let partition = log.partition("t", 0).unwrap();
    assert_eq!(partition.segment_count(), 2, "rolled after the lag bound");

    let round = log.clean_topics(10_000, 1 << 20, None);
    assert_eq!(round.records_removed, 1, "{round:?}");
    let read: Vec<(i64, String, String)> = consume(&log);
    let offsets: Vec<i64> = read.iter().map(|r| r.0).collect();
    assert_eq!(offsets, vec![1, 2], "a's older value went, offsets kept");
}

#[test]
fn after_a_restart_the_cleaner_resumes_where_it_ended_instead_of_cleaning_everything_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = engine_at_ten_seconds(dir.path());
    log.create_topic("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    write(&log);
    assert_eq!(
        log.clean_topics(10_000, 1 << 20, None).partitions_cleaned,
        1
    );
    let cleaned = log.cleaner_ranges("t").unwrap()[0].cleaned_up_to;
    assert!(cleaned > 0);
    drop(log);

    let log = engine_at_ten_seconds(dir.path());
    assert_eq!(log.cleaner_ranges("t").unwrap()[0].cleaned_up_to, cleaned);
    assert_eq!(
        log.clean_topics(20_000, 1 << 20, None).partitions_cleaned,
        0,
        "nothing new to clean"
    );
}

#[test]
fn a_topic_deleted_and_created_again_is_cleaned_from_its_own_start() {
    let dir = tempfile::tempdir().unwrap();
    let log = engine_at_ten_seconds(dir.path());
    log.create_topic("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    write(&log);
    log.clean_topics(10_000, 1 << 20, None);
    assert!(log.cleaner_ranges("t").unwrap()[0].cleaned_up_to > 100);

    log.delete_topic("t").unwrap();
    log.create_topic("t", compacted(CleanupPolicy::Compact))
        .unwrap();
    // A shorter log than the deleted one: 60 records over the ten keys.
    for i in 0..20 {
        let records: Vec<(String, String)> = (0..3)
            .map(|j| (format!("k{}", (i * 3 + j) % 10), "x".repeat(100)))
            .collect();
        let refs: Vec<(Option<&str>, &str)> = records
            .iter()
            .map(|(k, v)| (Some(k.as_str()), v.as_str()))
            .collect();
        log.append("t", 0, &mut batch(&refs, 1_000)).unwrap();
    }
    assert_eq!(log.cleaner_ranges("t").unwrap()[0].cleaned_up_to, 0);
    let round = log.clean_topics(20_000, 1 << 20, None);
    assert_eq!(round.partitions_cleaned, 1, "{round:?}");
    assert!(round.records_removed > 0, "{round:?}");
}
