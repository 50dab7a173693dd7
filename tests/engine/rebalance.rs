//! The embedded consumer's control over its partitions: a rebalance listener that commits on
//! revoke means no record is processed twice when a member joins (the control run without one
//! processes some twice); paused partitions are skipped until resumed; `at_end` tells when a
//! partition is read to its end.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use logd::{
    AutoOffsetReset, Consumer, ConsumerConfig, Log, Producer, ProducerConfig, ProducerRecord,
    RebalanceListener, TopicPartition,
};
use std::sync::Mutex;

use super::{open, topic};

/// Commits what was processed when partitions are taken away.
struct CommitOnRevoke;

impl RebalanceListener for CommitOnRevoke {
    fn on_revoked(&mut self, consumer: &mut Consumer, _revoked: &[TopicPartition]) {
        consumer
            .commit()
            .expect("a commit in on_revoked is accepted");
    }
}

fn produce(log: &Log, values: std::ops::Range<u32>) {
    let producer = Producer::new(log, ProducerConfig::default());
    for v in values {
        let value = v.to_string();
        producer
            .send(ProducerRecord::new("t", &value).partition(v % 2))
            .unwrap();
    }
    producer.flush().unwrap();
}

/// A member polling on its own thread until `stop`, recording what it processes and how many
/// partitions it holds. It never commits, except through the listener.
fn member(
    log: &Log,
    listener: bool,
    processed: &Arc<Mutex<Vec<String>>>,
    held: &Arc<AtomicUsize>,
    stop: &Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let (log, processed, held, stop) = (log.clone(), processed.clone(), held.clone(), stop.clone());
    std::thread::spawn(move || {
        let mut consumer = Consumer::new(
            &log,
            ConsumerConfig {
                group_id: Some("g".into()),
                auto_offset_reset: AutoOffsetReset::Earliest,
                ..ConsumerConfig::default()
            },
        );
        if listener {
            consumer.set_rebalance_listener(CommitOnRevoke);
        }
        consumer.subscribe(vec!["t".into()]).unwrap();
        while !stop.load(Ordering::Relaxed) {
            for record in consumer.poll(Duration::from_millis(20)).unwrap() {
                let value = String::from_utf8(record.value.unwrap().to_vec()).unwrap();
                processed.lock().unwrap().push(value);
            }
            held.store(consumer.assignment().len(), Ordering::Relaxed);
        }
    })
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One member processes 100 records, a second joins, 20 more arrive; returns how many records
/// were processed more than once.
fn twice_processed_across_a_join(listener: bool) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 2);
    produce(&log, 0..100);
    let processed = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (held_a, held_b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let a = member(&log, listener, &processed, &held_a, &stop);
    wait_for("the first member processed everything", || {
        processed.lock().unwrap().len() >= 100
    });
    let b = member(&log, listener, &processed, &held_b, &stop);
    wait_for("the group settled with a partition each", || {
        held_a.load(Ordering::Relaxed) == 1 && held_b.load(Ordering::Relaxed) == 1
    });
    produce(&log, 100..120);
    wait_for("every record processed", || {
        processed
            .lock()
            .unwrap()
            .iter()
            .collect::<BTreeSet<_>>()
            .len()
            == 120
    });
    stop.store(true, Ordering::Relaxed);
    a.join().unwrap();
    b.join().unwrap();
    let all = processed.lock().unwrap();
    all.len() - all.iter().collect::<BTreeSet<_>>().len()
}

#[test]
fn a_listener_committing_on_revoke_processes_no_record_twice_across_a_rebalance() {
    assert_eq!(twice_processed_across_a_join(true), 0);
}

#[test]
fn without_a_listener_the_joining_member_processes_the_uncommitted_records_again() {
    assert!(twice_processed_across_a_join(false) > 0);
}

#[test]
fn paused_partitions_are_skipped_until_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 2);
    let (p0, p1) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
    let mut consumer = Consumer::new(
        &log,
        ConsumerConfig {
            auto_offset_reset: AutoOffsetReset::Earliest,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![p0.clone(), p1.clone()]).unwrap();
    consumer.pause(std::slice::from_ref(&p0)).unwrap();
    assert_eq!(consumer.paused(), vec![p0.clone()]);
    produce(&log, 0..10);
    let partitions = |records: Vec<logd::ConsumerRecord>| -> BTreeSet<u32> {
        records.iter().map(|r| r.partition).collect()
    };
    assert_eq!(
        partitions(consumer.poll(Duration::from_millis(100)).unwrap()),
        BTreeSet::from([1])
    );
    assert!(consumer.poll(Duration::from_millis(50)).unwrap().is_empty());
    consumer.resume(std::slice::from_ref(&p0));
    assert_eq!(
        partitions(consumer.poll(Duration::from_millis(100)).unwrap()),
        BTreeSet::from([0])
    );
    assert!(consumer.pause(&[TopicPartition::new("t", 7)]).is_err());
}

#[test]
fn at_end_signals_a_partition_read_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 2);
    let p0 = TopicPartition::new("t", 0);
    let mut consumer = Consumer::new(
        &log,
        ConsumerConfig {
            auto_offset_reset: AutoOffsetReset::Earliest,
            ..ConsumerConfig::default()
        },
    );
    consumer.assign(vec![p0.clone()]).unwrap();
    produce(&log, 0..6); // three records in partition 0
    assert!(!consumer.at_end(&p0).unwrap());
    let mut read = 0;
    while !consumer.at_end(&p0).unwrap() {
        read += consumer.poll(Duration::from_millis(100)).unwrap().len();
    }
    assert_eq!(read, 3);
    produce(&log, 6..8);
    assert!(!consumer.at_end(&p0).unwrap(), "new records arrived");
}
