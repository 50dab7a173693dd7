//! Replay: resetting a group to an offset, to a timestamp, and to earliest after retention
//! deleted segments (clamped and reported), with a dry run first; and waking a waiting consumer
//! within milliseconds of an append.

use std::time::{Duration, Instant};

use logd::{
    AutoOffsetReset, Consumer, ConsumerConfig, Producer, ProducerConfig, ProducerRecord,
    ResetTarget, TopicConfig, TopicPartition,
};

use super::open;

fn group_consumer(log: &logd::Log) -> Consumer {
    let mut consumer = Consumer::new(
        log,
        ConsumerConfig {
            group_id: Some("replayer".into()),
            auto_offset_reset: AutoOffsetReset::Error,
            ..ConsumerConfig::default()
        },
    );
    consumer
        .assign(vec![TopicPartition::new("history", 0)])
        .unwrap();
    consumer
}

fn first_offset(consumer: &mut Consumer) -> i64 {
    consumer.poll(Duration::from_secs(5)).unwrap()[0].offset
}

#[test]
fn resets_replay_from_an_offset_a_timestamp_and_the_clamped_earliest() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    log.create_topic(
        "history",
        TopicConfig {
            partitions: 1,
            segment_bytes: 4096,
            retention_bytes: Some(8192),
            retention_ms: None,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let producer = Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 1,
            ..ProducerConfig::default()
        },
    );
    for i in 0..400i64 {
        producer
            .send(
                ProducerRecord::new("history", &format!("event {i:>40}"))
                    .partition(0)
                    .timestamp(1_000 + i * 10),
            )
            .unwrap();
    }
    producer.flush().unwrap();
    let topics = vec!["history".to_owned()];
    log.reset_offsets("replayer", &topics, ResetTarget::Offset(100), true)
        .unwrap();

    // Dry run: the plan is shown, nothing changes.
    let plan = log
        .reset_offsets("replayer", &topics, ResetTarget::Offset(250), false)
        .unwrap();
    assert_eq!((plan[0].current, plan[0].target), (Some(100), 250));
    assert_eq!(
        log.offsets()
            .fetch("replayer", "history", 0)
            .unwrap()
            .offset,
        100
    );
    assert_eq!(first_offset(&mut group_consumer(&log)), 100);

    log.reset_offsets("replayer", &topics, ResetTarget::Offset(250), true)
        .unwrap();
    assert_eq!(
        first_offset(&mut group_consumer(&log)),
        250,
        "replays exactly from the offset"
    );

    let plan = log
        .reset_offsets(
            "replayer",
            &topics,
            ResetTarget::Timestamp(1_000 + 321 * 10 - 5),
            true,
        )
        .unwrap();
    assert_eq!(plan[0].target, 321);
    assert_eq!(
        first_offset(&mut group_consumer(&log)),
        321,
        "replays from the first record at that time"
    );

    // Retention deletes old segments; resetting below the new start is clamped and reported.
    assert!(log.apply_retention(i64::MAX / 2).unwrap() > 0);
    let start = log.describe_topic("history").unwrap().partitions[0].log_start;
    assert!(start > 0);
    let plan = log
        .reset_offsets("replayer", &topics, ResetTarget::Offset(0), true)
        .unwrap();
    assert_eq!(
        (plan[0].requested, plan[0].target, plan[0].clamped()),
        (0, start, true)
    );
    let plan = log
        .reset_offsets("replayer", &topics, ResetTarget::Earliest, false)
        .unwrap();
    assert_eq!(plan[0].target, start);
    assert_eq!(first_offset(&mut group_consumer(&log)), start);

    // A consumer whose commit fell out of retention follows auto_offset_reset.
    log.offsets()
        .commit(
            "stale",
            &[logd_offsets::OffsetCommit {
                topic: "history".into(),
                partition: 0,
                offset: 1,
                metadata: String::new(),
            }],
            0,
        )
        .unwrap();
    let mut stale = Consumer::new(
        &log,
        ConsumerConfig {
            group_id: Some("stale".into()),
            auto_offset_reset: AutoOffsetReset::Earliest,
            ..ConsumerConfig::default()
        },
    );
    stale
        .assign(vec![TopicPartition::new("history", 0)])
        .unwrap();
    assert_eq!(first_offset(&mut stale), start);
    let mut strict = Consumer::new(
        &log,
        ConsumerConfig {
            group_id: Some("stale".into()),
            auto_offset_reset: AutoOffsetReset::Error,
            ..ConsumerConfig::default()
        },
    );
    strict
        .assign(vec![TopicPartition::new("history", 0)])
        .unwrap();
    assert!(matches!(
        strict.poll(Duration::from_millis(10)),
        Err(logd::Error::NoOffset { .. })
    ));
}

#[test]
fn a_waiting_consumer_wakes_within_milliseconds_of_an_append() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    super::topic(&log, "history", 1);
    let waiter = {
        let log = log.clone();
        std::thread::spawn(move || {
            let mut consumer = Consumer::new(
                &log,
                ConsumerConfig {
                    auto_offset_reset: AutoOffsetReset::Earliest,
                    ..ConsumerConfig::default()
                },
            );
            consumer
                .assign(vec![TopicPartition::new("history", 0)])
                .unwrap();
            let records = consumer.poll(Duration::from_secs(30)).unwrap();
            (records.len(), Instant::now())
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let producer = Producer::new(&log, ProducerConfig::default());
    producer
        .send(ProducerRecord::new("history", "wake up").partition(0))
        .unwrap()
        .wait()
        .unwrap();
    let appended = Instant::now();
    let (count, woke) = waiter.join().unwrap();
    assert_eq!(count, 1);
    // Generous for a loaded 2-core CI machine; the benchmark reports the real latency.
    let latency = woke.saturating_duration_since(appended);
    assert!(
        latency < Duration::from_millis(500),
        "woke {latency:?} after the append"
    );
}
