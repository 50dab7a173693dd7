//! The embedded producer is idempotent by default: each partition's batches carry the
//! producer's id and contiguous sequences, a batch appended twice is stored once (and counted),
//! many threads sending to one partition keep their order, and a producer id the engine never
//! handed out is refused.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use logd::{Error, Producer, ProducerConfig, ProducerRecord};
use logd_storage::Offset;
use logd_storage::batch::{BatchBuilder, BatchIter, Compression, Record};

use super::{open, topic};

/// Every stored batch header of a partition, in order.
fn headers(log: &logd::Log, topic: &str, partition: u32) -> Vec<logd_storage::batch::BatchHeader> {
    let plog = log.partition(topic, partition).unwrap();
    let bytes = plog.read(Offset(0), 64 << 20).unwrap();
    BatchIter::new(&bytes, 0)
        .map(|b| b.unwrap().1.header)
        .collect()
}

#[test]
fn each_partition_gets_contiguous_sequences_under_one_producer_id() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 2);
    let producer = Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 200,
            ..ProducerConfig::default()
        },
    );
    for i in 0..300 {
        producer
            .send(ProducerRecord::new("t", &format!("value-{i}")).partition(i % 2))
            .unwrap();
    }
    producer.flush().unwrap();
    let mut ids = Vec::new();
    for partition in 0..2 {
        let mut next_sequence = 0;
        let batches = headers(&log, "t", partition);
        assert!(batches.len() > 5, "small batches: {}", batches.len());
        for h in batches {
            ids.push(h.producer_id);
            assert_eq!((h.producer_epoch, h.base_sequence), (0, next_sequence));
            next_sequence += h.record_count;
        }
        assert_eq!(next_sequence, 150);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "one producer id: {ids:?}");
    assert_eq!(
        log.describe_topic("t").unwrap().partitions[0].producers[0].last_sequence,
        149
    );
}

#[test]
fn a_batch_appended_twice_is_stored_once_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 1);
    let producer = Producer::new(&log, ProducerConfig::default());
    producer.send(ProducerRecord::new("t", "once")).unwrap();
    producer.flush().unwrap();
    let plog = log.partition("t", 0).unwrap();
    let mut again = plog.read(Offset(0), 1 << 20).unwrap().to_vec();
    let info = log.append("t", 0, &mut again).unwrap();
    assert!(info.duplicate && info.base_offset == Offset(0), "{info:?}");
    assert_eq!(plog.end_offset(), Offset(1));
    assert_eq!(log.describe_topic("t").unwrap().duplicates_dropped, 1);
}

#[test]
fn many_threads_sending_to_one_partition_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 1);
    // Tiny batches and no linger: batches close in `send`, in `flush` and in the linger
    // thread all at once, so appends of one partition race unless they are queued in order.
    let producer = Arc::new(Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 100,
            linger: Duration::ZERO,
            ..ProducerConfig::default()
        },
    ));
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let producer = producer.clone();
            std::thread::spawn(move || {
                for i in 0..300 {
                    let value = format!("{t}:{i}");
                    producer
                        .send(ProducerRecord::new("t", &value).partition(0))
                        .unwrap();
                    if i % 50 == 0 {
                        producer.flush().unwrap();
                    }
                }
                producer.flush().unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let plog = log.partition("t", 0).unwrap();
    let records = Record::decode_all(&plog.read(Offset(0), 64 << 20).unwrap(), 64 << 20).unwrap();
    assert_eq!(records.len(), 1800);
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    for r in records {
        let text = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
        let (thread, i) = text.split_once(':').unwrap();
        let i: i64 = i.parse().unwrap();
        let previous = last.insert(thread.to_owned(), i).unwrap_or(-1);
        assert_eq!(i, previous + 1, "thread {thread}'s records out of order");
    }
}

#[test]
fn many_threads_sending_to_many_partitions_keep_order_and_learn_where_each_record_landed() {
    const PARTITIONS: u32 = 64;
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", PARTITIONS);
    // Small batches and a short linger: batches close in `send`, in `flush` and in the linger
    // thread, for partitions the threads share.
    let producer = Arc::new(Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 200,
            linger: Duration::from_millis(1),
            ..ProducerConfig::default()
        },
    ));
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let producer = producer.clone();
            std::thread::spawn(move || {
                let mut sent = Vec::new();
                for i in 0..2_000 {
                    let value = format!("{t}:{i}");
                    let key = format!("key-{}", (i * 7 + t) % 500);
                    let delivery = producer
                        .send(ProducerRecord::new("t", &value).key(&key))
                        .unwrap();
                    sent.push((value, delivery));
                    if i % 500 == 0 {
                        producer.flush().unwrap();
                    }
                }
                producer.flush().unwrap();
                sent.into_iter()
                    .map(|(value, delivery)| (value, delivery.wait().unwrap()))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let delivered: Vec<_> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    let mut stored: BTreeMap<(u32, i64), String> = BTreeMap::new();
    for p in 0..PARTITIONS {
        let plog = log.partition("t", p).unwrap();
        let bytes = plog.read(Offset(0), 64 << 20).unwrap();
        let mut last: BTreeMap<String, i64> = BTreeMap::new();
        for r in Record::decode_all(&bytes, 64 << 20).unwrap() {
            let text = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
            let (thread, i) = text.split_once(':').unwrap();
            let i: i64 = i.parse().unwrap();
            let previous = last.insert(thread.to_owned(), i).unwrap_or(-1);
            assert!(
                i > previous,
                "partition {p}: thread {thread}'s records out of order"
            );
            stored.insert((p, r.offset), text);
        }
    }
    assert_eq!(stored.len(), 12_000, "every record stored once");
    for (value, meta) in delivered {
        assert_eq!(stored.get(&(meta.partition, meta.offset)), Some(&value));
    }
}

#[test]
fn a_producer_id_never_handed_out_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 1);
    let handed = log.init_producer_id().unwrap();
    let mut bogus = BatchBuilder::new(Compression::None).producer(handed + 1, 0, 0);
    bogus.push(0, None, Some(b"x"), &[]);
    assert!(matches!(
        log.append("t", 0, &mut bogus.build(0).unwrap()),
        Err(Error::UnknownProducerId { producer_id }) if producer_id == handed + 1
    ));
    assert_eq!(log.partition("t", 0).unwrap().end_offset(), Offset(0));
    let mut known = BatchBuilder::new(Compression::None).producer(handed, 0, 0);
    known.push(0, None, Some(b"x"), &[]);
    assert!(log.append("t", 0, &mut known.build(0).unwrap()).is_ok());
}

#[test]
fn without_idempotence_batches_carry_no_producer_id() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 1);
    let producer = Producer::new(
        &log,
        ProducerConfig {
            idempotence: false,
            ..ProducerConfig::default()
        },
    );
    producer.send(ProducerRecord::new("t", "plain")).unwrap();
    producer.flush().unwrap();
    let h = headers(&log, "t", 0)[0];
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (-1, -1, -1)
    );
}

#[test]
fn idle_producers_expire_after_the_configured_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 1);
    let producer = Producer::new(&log, ProducerConfig::default());
    producer
        .send(ProducerRecord::new("t", "old").timestamp(1_000))
        .unwrap();
    producer.flush().unwrap();
    let expiration = logd::Config::default().producer_id_expiration_ms;
    assert_eq!(log.expire_producers(1_000 + expiration - 1), 0);
    assert_eq!(log.expire_producers(1_000 + expiration), 1);
    assert!(
        log.describe_topic("t").unwrap().partitions[0]
            .producers
            .is_empty()
    );
}

#[test]
fn deleting_a_topic_deletes_its_producer_state() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "t", 1);
    let id = log.init_producer_id().unwrap();
    let batch = || {
        let mut b = BatchBuilder::new(Compression::None).producer(id, 0, 7);
        b.push(0, None, Some(b"x"), &[]);
        b.build(0).unwrap()
    };
    log.append("t", 0, &mut batch()).unwrap();
    assert!(log.append("t", 0, &mut batch()).unwrap().duplicate);
    log.delete_topic("t").unwrap();
    topic(&log, "t", 1);
    let again = log.append("t", 0, &mut batch()).unwrap();
    assert!(
        !again.duplicate,
        "a new topic of the same name starts with no producers"
    );
    assert_eq!(again.base_offset, Offset(0));
}
