//! Consumer groups: three consumers on six partitions own two each; when one leaves (or dies
//! and its session expires) the other two take its partitions from its last commit; nothing is
//! lost; a stale member's commit is refused.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use logd::groups::classic::{Assignor, GroupError};
use logd::{
    AutoOffsetReset, Consumer, ConsumerConfig, Error, Log, Producer, ProducerConfig,
    ProducerRecord, TopicPartition,
};

use super::{eventually, open, topic};

#[derive(Default)]
struct Shared {
    /// value -> times processed
    processed: Mutex<BTreeMap<String, u32>>,
    /// worker -> its current assignment
    assignments: Mutex<BTreeMap<usize, Vec<TopicPartition>>>,
}

fn config(assignor: Assignor) -> ConsumerConfig {
    ConsumerConfig {
        group_id: Some("workers".into()),
        auto_offset_reset: AutoOffsetReset::Earliest,
        session_timeout: Duration::from_millis(600),
        rebalance_timeout: Duration::from_secs(3),
        assignor,
        max_poll_records: 20,
        ..ConsumerConfig::default()
    }
}

/// Polls, records what it processed, commits; stops when `stop` is set, leaving the group if
/// `graceful`, or simply vanishing (a crash) otherwise.
fn worker(
    log: Log,
    id: usize,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    graceful: bool,
    assignor: Assignor,
) {
    let mut consumer = Consumer::new(&log, config(assignor));
    consumer.subscribe(vec!["work".into()]).unwrap();
    while !stop.load(Ordering::SeqCst) {
        let records = consumer.poll(Duration::from_millis(30)).unwrap();
        {
            let mut processed = shared.processed.lock().unwrap();
            for r in &records {
                *processed
                    .entry(String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
                    .or_default() += 1;
            }
        }
        match consumer.commit() {
            Ok(()) => {}
            // Between a rebalance and this consumer's rejoin its generation is stale; the
            // records come back to whoever owns the partition next.
            Err(Error::Group(
                GroupError::IllegalGeneration
                | GroupError::RebalanceInProgress
                | GroupError::UnknownMember,
            )) => {}
            Err(e) => panic!("worker {id}: {e}"),
        }
        shared
            .assignments
            .lock()
            .unwrap()
            .insert(id, consumer.assignment().to_vec());
    }
    shared.assignments.lock().unwrap().remove(&id);
    if graceful {
        consumer.close();
    }
}

fn produce(log: &Log, from: usize, to: usize) {
    let producer = Producer::new(log, ProducerConfig::default());
    for i in from..to {
        producer
            .send(ProducerRecord::new("work", &format!("{i}")).key(&format!("key-{i}")))
            .unwrap();
    }
    producer.flush().unwrap();
}

fn owned_counts(shared: &Shared) -> Vec<usize> {
    let mut counts: Vec<usize> = shared
        .assignments
        .lock()
        .unwrap()
        .values()
        .map(Vec::len)
        .collect();
    counts.sort();
    counts
}

fn disjoint_and_complete(shared: &Shared) -> bool {
    let assignments = shared.assignments.lock().unwrap();
    let mut all: Vec<&TopicPartition> = assignments.values().flatten().collect();
    all.sort();
    let len = all.len();
    all.dedup();
    all.len() == len && len == 6
}

fn run(graceful: bool, assignor: Assignor) {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "work", 6);
    let shared = Arc::new(Shared::default());
    let stops: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let threads: Vec<_> = (0..3)
        .map(|id| {
            let (log, shared, stop) = (log.clone(), shared.clone(), stops[id].clone());
            std::thread::spawn(move || worker(log, id, shared, stop, graceful, assignor))
        })
        .collect();
    assert!(
        eventually(Duration::from_secs(20), || owned_counts(&shared)
            == vec![2, 2, 2]
            && disjoint_and_complete(&shared)),
        "three members never owned two partitions each: {:?}",
        shared.assignments.lock().unwrap()
    );
    produce(&log, 0, 300);
    assert!(eventually(Duration::from_secs(20), || shared
        .processed
        .lock()
        .unwrap()
        .len()
        == 300));

    // Worker 2 goes away: gracefully (LeaveGroup) or by dying (its session expires).
    stops[2].store(true, Ordering::SeqCst);
    assert!(
        eventually(Duration::from_secs(20), || owned_counts(&shared)
            == vec![3, 3]
            && disjoint_and_complete(&shared)),
        "the two survivors never took over: {:?}",
        shared.assignments.lock().unwrap()
    );
    produce(&log, 300, 600);
    assert!(eventually(Duration::from_secs(20), || shared
        .processed
        .lock()
        .unwrap()
        .len()
        == 600));
    for stop in &stops {
        stop.store(true, Ordering::SeqCst);
    }
    for t in threads {
        t.join().unwrap();
    }
    let processed = shared.processed.lock().unwrap();
    assert_eq!(processed.len(), 600, "every record processed");
    let duplicates: u32 = processed.values().map(|n| n - 1).sum();
    // Workers commit after every poll, so only records processed between a worker's last
    // commit and its departure may repeat: at most one poll's worth (20) per rebalance.
    assert!(duplicates <= 60, "{duplicates} duplicates");
    let lag: i64 = log
        .describe_group("workers")
        .unwrap()
        .offsets
        .iter()
        .map(|p| p.lag)
        .sum();
    assert_eq!(lag, 0, "all committed");
}

#[test]
fn a_member_that_leaves_hands_its_partitions_over() {
    run(true, Assignor::Range);
}

#[test]
fn a_member_that_dies_loses_its_partitions_after_its_session_timeout() {
    run(false, Assignor::RoundRobin);
}

#[test]
fn a_stale_members_commit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "work", 6);
    produce(&log, 0, 10);
    let quick = ConsumerConfig {
        rebalance_timeout: Duration::from_millis(200),
        ..config(Assignor::Range)
    };
    let mut a = Consumer::new(&log, quick.clone());
    a.subscribe(vec!["work".into()]).unwrap();
    a.poll(Duration::from_millis(50)).unwrap();
    let (a_id, a_generation) = a.membership().map(|(m, g)| (m.to_owned(), g)).unwrap();
    assert_eq!(a.assignment().len(), 6);
    a.commit().unwrap();

    // b joins; a (same thread) never rejoins, so after the rebalance timeout the group moves
    // on without it.
    let mut b = Consumer::new(&log, quick);
    b.subscribe(vec!["work".into()]).unwrap();
    b.poll(Duration::from_millis(50)).unwrap();
    assert_eq!(b.assignment().len(), 6);
    let (_, b_generation) = b.membership().unwrap();
    assert!(b_generation > a_generation);

    let refused = a.commit().unwrap_err();
    assert!(
        matches!(refused, Error::Group(GroupError::UnknownMember)),
        "{refused}"
    );
    let stale =
        log.coordinator()
            .validate_commit("workers", &a_id, a_generation, log.clock().now_ms());
    assert_eq!(stale, Err(GroupError::UnknownMember));
    b.commit().unwrap();
}
