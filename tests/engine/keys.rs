//! Same key, same partition, order kept per key, across a producer restart; two groups each
//! see every record once.

use std::collections::BTreeMap;
use std::time::Duration;

use logd::{
    AutoOffsetReset, Consumer, ConsumerConfig, Producer, ProducerConfig, ProducerRecord,
    TopicPartition,
};

use super::{open, topic};

fn send_keyed(producer: &Producer, from: usize, to: usize) -> Vec<(String, u32, i64)> {
    let deliveries: Vec<_> = (from..to)
        .map(|i| {
            let key = format!("user-{}", i % 13);
            let value = format!("{key}:{i}");
            let delivery = producer
                .send(ProducerRecord::new("events", &value).key(&key))
                .unwrap();
            (key, delivery)
        })
        .collect();
    deliveries
        .into_iter()
        .map(|(k, d)| {
            let m = d.wait().unwrap();
            (k, m.partition, m.offset)
        })
        .collect()
}

#[test]
fn a_key_keeps_its_partition_and_order_across_producer_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "events", 4);
    let first = send_keyed(&Producer::new(&log, ProducerConfig::default()), 0, 200);
    // A new producer, as after a restart.
    let second = send_keyed(&Producer::new(&log, ProducerConfig::default()), 200, 400);
    let mut partition_of: BTreeMap<String, u32> = BTreeMap::new();
    for (key, partition, _) in first.iter().chain(&second) {
        assert_eq!(
            *partition_of.entry(key.clone()).or_insert(*partition),
            *partition,
            "{key} moved"
        );
    }
    assert!(
        partition_of
            .values()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1,
        "keys spread"
    );

    let mut consumer = Consumer::new(&log, ConsumerConfig::default());
    consumer
        .assign((0..4).map(|p| TopicPartition::new("events", p)).collect())
        .unwrap();
    for p in 0..4 {
        consumer
            .seek_to_beginning(&TopicPartition::new("events", p))
            .unwrap();
    }
    let mut last_seq: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen = 0;
    while seen < 400 {
        for record in consumer.poll(Duration::from_secs(5)).unwrap() {
            let text = String::from_utf8(record.value.unwrap().to_vec()).unwrap();
            let (key, seq) = text.split_once(':').unwrap();
            let seq: usize = seq.parse().unwrap();
            assert_eq!(record.key.as_deref(), Some(key.as_bytes()));
            assert_eq!(record.partition, partition_of[key]);
            if let Some(prev) = last_seq.insert(key.to_owned(), seq) {
                assert!(seq > prev, "{key}: {seq} after {prev}");
            }
            seen += 1;
        }
    }
}

#[test]
fn two_groups_each_see_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    topic(&log, "events", 3);
    let producer = Producer::new(&log, ProducerConfig::default());
    for i in 0..300 {
        producer
            .send(ProducerRecord::new("events", &format!("{i}")).key(&format!("k{i}")))
            .unwrap();
    }
    producer.flush().unwrap();
    for group in ["billing", "audit"] {
        let mut consumer = Consumer::new(
            &log,
            ConsumerConfig {
                group_id: Some(group.into()),
                auto_offset_reset: AutoOffsetReset::Earliest,
                session_timeout: Duration::from_secs(10),
                ..ConsumerConfig::default()
            },
        );
        consumer.subscribe(vec!["events".into()]).unwrap();
        let mut values = Vec::new();
        while values.len() < 300 {
            let records = consumer.poll(Duration::from_secs(5)).unwrap();
            assert!(!records.is_empty(), "{group} stalled at {}", values.len());
            values.extend(
                records
                    .into_iter()
                    .map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap()),
            );
            consumer.commit().unwrap();
        }
        assert!(
            consumer.poll(Duration::from_millis(50)).unwrap().is_empty(),
            "{group}: nothing twice"
        );
        values.sort_by_key(|v| v.parse::<u32>().unwrap());
        assert_eq!(
            values,
            (0..300).map(|i| i.to_string()).collect::<Vec<_>>(),
            "{group}"
        );
        consumer.close();
    }
    let described = log.describe_group("billing").unwrap();
    assert!(described.offsets.iter().all(|p| p.lag == 0));
}
