//! At-least-once: a consumer that processes and crashes before committing gets those records
//! again; a long randomized run loses nothing and counts its duplicates. At-most-once commits
//! before handing records out.

use std::collections::BTreeMap;
use std::time::Duration;

use logd::{
    AutoOffsetReset, Consumer, ConsumerConfig, DeliverySemantics, Producer, ProducerConfig,
    ProducerRecord, TopicPartition,
};
use logd_storage::SplitMix64;

use super::{open, topic};

fn consumer(log: &logd::Log, delivery: DeliverySemantics, max_poll_records: usize) -> Consumer {
    let mut consumer = Consumer::new(
        log,
        ConsumerConfig {
            group_id: Some("workers".into()),
            auto_offset_reset: AutoOffsetReset::Earliest,
            delivery,
            max_poll_records,
            ..ConsumerConfig::default()
        },
    );
    consumer
        .assign(vec![
            TopicPartition::new("jobs", 0),
            TopicPartition::new("jobs", 1),
        ])
        .unwrap();
    consumer
}

fn produce(log: &logd::Log, n: usize) {
    let producer = Producer::new(log, ProducerConfig::default());
    for i in 0..n {
        producer
            .send(ProducerRecord::new("jobs", &format!("job-{i}")).key(&format!("{i}")))
            .unwrap();
    }
    producer.flush().unwrap();
}

#[test]
fn a_crash_before_commit_redelivers_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "jobs", 2);
    produce(&log, 10);
    let mut first = consumer(&log, DeliverySemantics::AtLeastOnce, 100);
    let got = first.poll(Duration::from_secs(5)).unwrap();
    assert!(!got.is_empty());
    drop(first); // crash: processed, never committed

    let mut second = consumer(&log, DeliverySemantics::AtLeastOnce, 100);
    let again = second.poll(Duration::from_secs(5)).unwrap();
    let offsets = |rs: &[logd::ConsumerRecord]| {
        rs.iter()
            .map(|r| (r.partition, r.offset))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        offsets(&again)[..got.len().min(again.len())],
        offsets(&got)[..got.len().min(again.len())]
    );
    second.commit().unwrap();
    drop(second);
    let mut third = consumer(&log, DeliverySemantics::AtLeastOnce, 100);
    let mut rest = Vec::new();
    loop {
        let records = third.poll(Duration::from_millis(50)).unwrap();
        if records.is_empty() {
            break;
        }
        rest.extend(records);
    }
    assert_eq!(
        again.len() + rest.len(),
        10,
        "after the commit nothing comes twice"
    );
}

#[test]
fn a_long_run_with_random_crashes_loses_nothing_and_counts_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "jobs", 2);
    produce(&log, 2_000);
    let mut rng = SplitMix64::new(99);
    let mut processed: BTreeMap<String, u32> = BTreeMap::new();
    let mut redelivered_expected = 0u32;
    let mut rounds = 0;
    while processed.len() < 2_000 {
        rounds += 1;
        assert!(rounds < 10_000, "no progress");
        let mut worker = consumer(
            &log,
            DeliverySemantics::AtLeastOnce,
            1 + rng.below(150) as usize,
        );
        // Each incarnation works through a few polls, then crashes or commits.
        for _ in 0..1 + rng.below(4) {
            let records = worker.poll(Duration::from_millis(100)).unwrap();
            for r in &records {
                *processed
                    .entry(String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
                    .or_default() += 1;
            }
            if rng.below(3) == 0 {
                // Crash after processing, before the commit: these come back.
                redelivered_expected += records.len() as u32;
                break;
            }
            worker.commit().unwrap();
        }
        drop(worker);
    }
    let duplicates: u32 = processed.values().map(|n| n - 1).sum();
    assert_eq!(processed.len(), 2_000, "every record processed");
    assert!(
        duplicates <= redelivered_expected,
        "{duplicates} duplicates, at most {redelivered_expected} explained by crashes"
    );
    assert!(duplicates > 0, "the run must exercise redelivery");
}

#[test]
fn at_most_once_commits_before_handing_records_out() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "jobs", 2);
    produce(&log, 20);
    let mut first = consumer(&log, DeliverySemantics::AtMostOnce, 5);
    let handed_out = first.poll(Duration::from_secs(5)).unwrap();
    assert_eq!(handed_out.len(), 5);
    drop(first); // crash while processing: at-most-once loses these, never repeats them
    let mut second = consumer(&log, DeliverySemantics::AtMostOnce, 100);
    let mut seen = Vec::new();
    loop {
        let records = second.poll(Duration::from_millis(50)).unwrap();
        if records.is_empty() {
            break;
        }
        seen.extend(records);
    }
    assert_eq!(seen.len(), 15);
    assert!(seen.iter().all(|r| {
        !handed_out
            .iter()
            .any(|h| h.partition == r.partition && h.offset == r.offset)
    }));
}
