//! Share groups over a topic's lifetime (issue 50), through the engine: DeleteRecords and
//! retention moving the share-partition's start (durably), read_committed groups never
//! handed an aborted transaction's record nor a control batch, and a topic deleted and
//! created again starting afresh.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{SimFs, Storage};

use super::consumer_tests::member as member_acknowledging;
use super::store::{ShareStates, Window};
use super::*;
use crate::{
    Config, Housekeeping, Log, ManualClock, Producer, ProducerConfig, ProducerRecord, TopicConfig,
};

fn open(dir: &Path, topic: TopicConfig) -> Log {
    open_at(dir, topic, Arc::new(ManualClock::new(1_000)))
}

fn open_at(dir: &Path, topic: TopicConfig, clock: Arc<ManualClock>) -> Log {
    let config = Config {
        housekeeping: Housekeeping {
            enabled: false,
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let log = Log::open_with(Arc::new(logd_storage::RealFs), clock, dir, config).unwrap();
    if log.partition_count("jobs").is_err() {
        log.create_topic("jobs", topic).unwrap();
    }
    log.alter_group_configs(
        "workers",
        &[
            ("share.auto.offset.reset", Some("earliest")),
            ("share.partition.max.record.locks", Some("100")),
        ],
        false,
    )
    .unwrap();
    log
}

fn one_partition() -> TopicConfig {
    TopicConfig {
        partitions: 1,
        ..TopicConfig::default()
    }
}

fn produce(log: &Log, count: usize) {
    let producer = Producer::new(log, ProducerConfig::default());
    for i in 0..count {
        producer
            .send(ProducerRecord::new("jobs", format!("job-{i}").as_str()))
            .unwrap()
            .wait()
            .unwrap();
    }
}

fn member(log: &Log) -> ShareConsumer {
    member_acknowledging(log, AcknowledgementMode::Implicit)
}

/// Polls (accepting implicitly) until two polls in a row bring nothing: offset to delivery
/// count, each offset at most once.
fn drain(consumer: &mut ShareConsumer) -> BTreeMap<i64, u16> {
    let mut got = BTreeMap::new();
    let mut idle = 0;
    while idle < 2 {
        idle += 1;
        for r in consumer.poll(Duration::ZERO).unwrap() {
            let before = got.insert(r.record.offset, r.delivery_count);
            assert!(before.is_none(), "offset {} twice", r.record.offset);
            idle = 0;
        }
    }
    consumer.commit().unwrap();
    got
}

fn state(log: &Log) -> SharePartitionState {
    log.share_partitions("workers").remove(0)
}

#[test]
fn delete_records_past_released_records_moves_the_start_and_the_queue_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), one_partition());
    produce(&log, 150);
    // A member takes 7 and leaves: they are available below what DeleteRecords removes.
    let mut first = member_acknowledging(&log, AcknowledgementMode::Explicit);
    assert_eq!(first.poll(Duration::ZERO).unwrap().len(), 7);
    first.close().unwrap();
    assert_eq!(state(&log).counts[0], 7, "released, available");
    assert_eq!(log.delete_records("jobs", 0, 150).unwrap(), 150);
    // The start followed the log start at once: nothing in flight, no lag.
    let moved = state(&log);
    assert_eq!((moved.start_offset, moved.counts), (150, [0, 0, 0, 0]));
    assert_eq!(moved.lag(150), Some(0));
    produce(&log, 150);
    let got = drain(&mut member(&log));
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        (150..300).collect::<Vec<_>>()
    );
    assert!(got.values().all(|&count| count == 1), "{got:?}");
    assert_eq!(state(&log).lag(300), Some(0));
    // The move is durable.
    drop(log);
    let log = open(dir.path(), one_partition());
    assert_eq!(state(&log).start_offset, 300);
    assert!(drain(&mut member(&log)).is_empty());
}

#[test]
fn records_held_by_a_member_that_never_closed_are_dropped_when_the_log_start_passes_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), one_partition());
    produce(&log, 20);
    // A member holds 7 and never closes (its process died): their locks still run.
    let holder = log
        .share_acquire("workers", "dead", "jobs", 0, 7)
        .unwrap()
        .0;
    assert_eq!((holder[0].first_offset, holder[0].last_offset), (0, 6));
    log.delete_records("jobs", 0, 10).unwrap();
    let after = state(&log);
    assert_eq!((after.start_offset, after.counts[1]), (10, 0));
    // Its late acknowledgement of a record gone is ignored, not refused.
    let late = log
        .share_acknowledge(
            "workers",
            "dead",
            "jobs",
            0,
            &[(0, 6, vec![AcknowledgeType::Accept])],
            &BTreeMap::new(),
        )
        .unwrap();
    assert!(late.is_empty());
    let got = drain(&mut member(&log));
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        (10..20).collect::<Vec<_>>()
    );
}

#[test]
fn retention_moves_the_start_of_a_group_nobody_reads() {
    let dir = tempfile::tempdir().unwrap();
    let topic = TopicConfig {
        partitions: 1,
        segment_bytes: 1_024,
        retention_bytes: Some(2_048),
        ..TopicConfig::default()
    };
    let log = open(dir.path(), topic.clone());
    produce(&log, 10);
    assert_eq!(drain(&mut member(&log)).len(), 10);
    produce(&log, 300);
    assert!(log.apply_retention(2_000).unwrap() > 0);
    let log_start = log.partition("jobs", 0).unwrap().log_start_offset().0;
    assert!(log_start > 10, "{log_start}");
    let moved = state(&log);
    assert_eq!(moved.start_offset, log_start);
    assert_eq!(moved.lag(310), Some(310 - log_start));
    let got = drain(&mut member(&log));
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        (log_start..310).collect::<Vec<_>>()
    );
}

#[test]
fn a_groups_last_member_that_died_expires_in_housekeeping_and_its_records_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let log = open_at(dir.path(), one_partition(), clock.clone());
    let lock = [("share.record.lock.duration.ms", Some("60000"))];
    log.alter_group_configs("workers", &lock, false).unwrap();
    produce(&log, 10);
    // The only member takes records and dies: no close, no other member's heartbeat.
    let mut dead = member_acknowledging(&log, AcknowledgementMode::Explicit);
    assert_eq!(dead.poll(Duration::ZERO).unwrap().len(), 7);
    std::mem::forget(dead);
    assert_eq!(log.share_group_members("workers").unwrap().1.len(), 1);
    assert!(log.delete_group("workers").is_err(), "not empty yet");
    // Housekeeping's round before the session timeout (45 s) keeps it, after removes it.
    clock.advance(44_000);
    log.expire_members();
    assert_eq!(log.share_group_members("workers").unwrap().1.len(), 1);
    clock.advance(1_000);
    log.expire_members();
    assert!(log.share_group_members("workers").unwrap().1.is_empty());
    // Its records are available at once (their 60 s locks have not run out by themselves).
    assert_eq!(state(&log).counts, [7, 0, 0, 0]);
    let got = drain(&mut member(&log));
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert!(
        got.iter().all(|(&o, &c)| c == if o < 7 { 2 } else { 1 }),
        "{got:?}"
    );
}

/// A transactional batch of `count` records to `jobs`-0.
fn send_txn(log: &Log, (producer_id, epoch): (i64, i16), sequence: i32, count: usize) {
    let mut builder = BatchBuilder::new(Compression::None)
        .producer(producer_id, epoch, sequence)
        .transactional();
    for i in 0..count {
        builder.push(0, None, Some(format!("txn-{i}").as_bytes()), &[]);
    }
    log.append("jobs", 0, &mut builder.build(0).unwrap())
        .unwrap();
}

/// 10 records aborted (offsets 0-9, the marker at 10), 5 committed (11-15, marker 16), 2
/// outside transactions (17, 18), then 3 in a transaction still open (19-21).
fn transactions(log: &Log) {
    let parts = [("jobs".to_owned(), 0)];
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    log.add_partitions_to_txn("t", pid, epoch, &parts).unwrap();
    send_txn(log, (pid, epoch), 0, 10);
    log.end_txn("t", pid, epoch, false).unwrap();
    log.add_partitions_to_txn("t", pid, epoch, &parts).unwrap();
    send_txn(log, (pid, epoch), 10, 5);
    log.end_txn("t", pid, epoch, true).unwrap();
    produce(log, 2);
    log.add_partitions_to_txn("t", pid, epoch, &parts).unwrap();
    send_txn(log, (pid, epoch), 15, 3);
}

fn read_committed(log: &Log) {
    log.alter_group_configs(
        "workers",
        &[("share.isolation.level", Some("read_committed"))],
        false,
    )
    .unwrap();
}

#[test]
fn a_read_committed_group_gets_neither_aborted_records_nor_markers_nor_open_ones() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), one_partition());
    read_committed(&log);
    transactions(&log);
    let got = drain(&mut member(&log));
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        [11, 12, 13, 14, 15, 17, 18]
    );
    // Everything below the open transaction is done with: the aborted records and the markers
    // archived, the rest accepted.
    let done = state(&log);
    assert_eq!((done.start_offset, done.end_offset), (19, 19));
    // The open transaction commits: its records come.
    let (pid, epoch) = log.init_transactional_producer("t", 60_000, None).unwrap();
    assert!(
        pid >= 0 && epoch > 0,
        "the new instance aborts the open transaction"
    );
    let got = drain(&mut member(&log));
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn a_read_committed_share_fetch_acquires_no_aborted_offset_and_a_read_uncommitted_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), one_partition());
    transactions(&log);
    let offsets = |acquired: &[AcquiredRecords]| -> Vec<i64> {
        acquired
            .iter()
            .flat_map(|r| r.first_offset..=r.last_offset)
            .collect()
    };
    // read_uncommitted, as today: everything up to the high watermark, markers included.
    let (all, _, _) = log
        .share_fetch(
            "workers",
            "m",
            "jobs",
            0,
            (100, 1 << 20),
            AcquireMode::RecordLimit,
        )
        .unwrap();
    assert_eq!(offsets(&all), (0..22).collect::<Vec<_>>());
    // Another group, read_committed: only the committed records, below the open transaction.
    log.alter_group_configs(
        "readers",
        &[
            ("share.auto.offset.reset", Some("earliest")),
            ("share.isolation.level", Some("read_committed")),
        ],
        false,
    )
    .unwrap();
    let (committed, _, bytes) = log
        .share_fetch(
            "readers",
            "m",
            "jobs",
            0,
            (100, 1 << 20),
            AcquireMode::RecordLimit,
        )
        .unwrap();
    assert_eq!(offsets(&committed), [11, 12, 13, 14, 15, 17, 18]);
    assert!(!bytes.is_empty());
    let described = log.share_partitions("readers").remove(0);
    // Acquired 7; the aborted records and the abort marker archived below the start, the
    // commit marker (16) archived between the acquired ones; none counted at the limit.
    assert_eq!(described.counts, [0, 7, 0, 1]);
    assert_eq!(described.start_offset, 11);
    assert_eq!(log.share_counters("readers").at_delivery_limit, 0);
}

#[test]
fn a_topic_deleted_and_created_again_starts_afresh_for_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), one_partition());
    produce(&log, 10);
    assert_eq!(drain(&mut member(&log)).len(), 10);
    assert_eq!(state(&log).start_offset, 10);
    log.delete_topic("jobs").unwrap();
    assert!(log.share_partitions("workers").is_empty());
    log.create_topic("jobs", one_partition()).unwrap();
    produce(&log, 5);
    let got = drain(&mut member(&log));
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    // And so after a restart: the deletion was durable.
    drop(log);
    let log = open(dir.path(), one_partition());
    assert_eq!(state(&log).start_offset, 5);
    assert!(drain(&mut member(&log)).is_empty());
}

/// The power-cut workload: ten records acquired and released, then the log start moved to 4
/// and offsets 6-7 skipped (an aborted transaction) in the next acquisition, whose records are
/// accepted. Returns whether the move's acquisition and the acceptance were answered.
fn moving_workload(fs: &SimFs) -> (bool, bool) {
    let limits = ShareLimits::default();
    let key = ("g".to_owned(), "t".to_owned(), 0);
    let Ok(()) = logd_storage::create_dir_durable(fs, Path::new("/d")) else {
        return (false, false);
    };
    let Ok(states) = ShareStates::open(Arc::new(fs.clone()), Path::new("/d")) else {
        return (false, false);
    };
    let acquire = |log_start, window| {
        states.acquire(
            key.clone(),
            "m",
            100,
            &limits,
            &|| None,
            0,
            log_start,
            || Ok(0),
            |_| i64::MIN,
            |_| Ok(window),
        )
    };
    if acquire(0, super::consumer_tests::window(i64::MIN, 10)).is_err() {
        return (false, false);
    }
    let release = [(0, 9, vec![AcknowledgeType::Release])];
    let none = BTreeMap::new();
    if states
        .acknowledge(&key, "m", &release, &limits, &|| None, &none, 0)
        .is_err()
    {
        return (false, false);
    }
    let skipping = Window {
        from: 4,
        end: 14,
        skipped: vec![(6, 7)],
        batch_ends: Vec::new(),
        read: (),
    };
    let Ok((acquired, _, ())) = acquire(4, skipping) else {
        return (false, false);
    };
    let offsets: Vec<i64> = acquired
        .iter()
        .flat_map(|r| r.first_offset..=r.last_offset)
        .collect();
    assert_eq!(offsets, [4, 5, 8, 9, 10, 11, 12, 13]);
    let accept: Vec<_> = offsets
        .iter()
        .map(|&o| (o, o, vec![AcknowledgeType::Accept]))
        .collect();
    let accepted = states
        .acknowledge(&key, "m", &accept, &limits, &|| None, &none, 0)
        .is_ok();
    (true, accepted)
}

#[test]
fn a_power_cut_never_brings_back_what_a_moved_start_or_a_skipped_batch_dropped() {
    let limits = ShareLimits::default();
    let key = ("g".to_owned(), "t".to_owned(), 0);
    let states = SimFs::every_power_cut(moving_workload, |image, &(moved, accepted), cut, mode| {
        let _ = image.create_dir_all(Path::new("/d"));
        let recovered = ShareStates::open(Arc::new(image), Path::new("/d"))
            .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: reopen failed: {e}"));
        let (ranges, _, ()) = recovered
            .acquire(
                key.clone(),
                "n",
                100,
                &limits,
                &|| None,
                1,
                0,
                || Ok(0),
                |_| i64::MIN,
                |_| Ok(super::consumer_tests::window(i64::MIN, 20)),
            )
            .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: acquire failed: {e}"));
        let again: Vec<i64> = ranges
            .iter()
            .flat_map(|r| r.first_offset..=r.last_offset)
            .collect();
        // What each prefix of the workload's writes leaves: all ten back; the start moved;
        // the skipped batch archived too; the acceptance done. What was answered is durable,
        // so the states before it are excluded.
        let everything: Vec<i64> = (0..20).collect();
        let start_moved: Vec<i64> = (4..20).collect();
        let skipped: Vec<i64> = [4, 5].into_iter().chain(8..20).collect();
        let done: Vec<i64> = (14..20).collect();
        let allowed: Vec<&Vec<i64>> = match (moved, accepted) {
            (true, true) => vec![&done],
            (true, false) => vec![&skipped, &done],
            (false, _) => vec![&everything, &start_moved, &skipped],
        };
        assert!(
            allowed.contains(&&again),
            "cut {cut} {mode:?} (moved {moved}, accepted {accepted}): {again:?}"
        );
    });
    assert!(states > 20, "{states} crash states");
}
