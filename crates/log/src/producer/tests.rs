//! The producer's placing, pooling and delivery, against a real engine.

use std::time::Duration;

use logd_storage::batch::{BatchBuilder, Compression};

use super::batches::{
    BufferPool, HOT_PARTITION_BYTES, OPENED_COMPACT_MIN, POOLED_BUFFERS, PartitionBatches, Pending,
};
use super::slot::BatchSlot;
use super::*;
use crate::TopicConfig;

#[test]
fn placing_a_record_touches_only_the_first_cache_line_of_its_partition() {
    let partition = PartitionBatches::default();
    let start = &raw const partition as usize;
    assert_eq!(start % 64, 0, "aligned to a cache line");
    // The lock's state is the mutex's first word, in front of the data it guards.
    assert_eq!(&raw const partition.batches as usize, start);
    let data = partition.batches.data_ptr() as usize - start;
    assert!(data > 0, "the lock's state comes first");
    let mut batches = partition.batches.lock();
    let buffer = Vec::new();
    let open = Pending::new(1, Compression::None, buffer, Arc::from("t"), 0);
    let open = batches.open.insert(open);
    let slot_end = &raw const open.slot as usize - start + size_of::<Arc<BatchSlot>>();
    let builder = &raw const open.builder as usize - start;
    let pushed_end = builder + BatchBuilder::PUSHED_BYTES;
    assert!(
        slot_end <= HOT_PARTITION_BYTES,
        "the slot ends at {slot_end}"
    );
    assert!(
        pushed_end <= HOT_PARTITION_BYTES,
        "the pushed fields end at {pushed_end}"
    );
}

#[test]
fn the_buffer_pool_reuses_buffers_and_keeps_a_bounded_number_of_them() {
    let pool = BufferPool::new(1000);
    let mut used = Vec::with_capacity(900);
    used.extend_from_slice(&[7; 900]);
    let address = used.as_ptr();
    pool.give_back(used);
    let again = pool.take();
    assert_eq!(
        again.as_ptr(),
        address,
        "the returned buffer is handed out again"
    );
    assert!(again.capacity() >= 900);
    // One oversized record's batch is not kept, and the pool stops growing at its bound.
    pool.give_back(Vec::with_capacity(2001));
    assert_eq!(pool.free.lock().len(), 0);
    for _ in 0..POOLED_BUFFERS + 10 {
        pool.give_back(Vec::with_capacity(100));
    }
    assert_eq!(pool.free.lock().len(), POOLED_BUFFERS);
    assert_eq!(pool.take().capacity(), 100);
}

/// An engine in a fresh directory with topic "t" of `partitions` partitions.
fn engine_with_topic(partitions: u32) -> (tempfile::TempDir, Log) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), crate::Config::default()).unwrap();
    let topic = TopicConfig {
        partitions,
        ..TopicConfig::default()
    };
    log.create_topic("t", topic).unwrap();
    (dir, log)
}

/// Every record stored in `topic`'s partition, by offset.
fn stored(log: &Log, topic: &str, partition: u32) -> Vec<logd_storage::batch::Record> {
    let bytes = log
        .partition(topic, partition)
        .unwrap()
        .read(logd_storage::Offset(0), 64 << 20)
        .unwrap();
    logd_storage::batch::Record::decode_all(&bytes, 64 << 20).unwrap()
}

#[test]
fn each_delivery_names_where_its_record_was_stored_across_chunks_and_filled_batches() {
    let (_dir, log) = engine_with_topic(7);
    // Batches that fill every few records, so that chunks close batches part-way, and
    // records of several sizes with and without headers, spread over the partitions.
    let producer = Producer::new(
        &log,
        ProducerConfig {
            batch_bytes: 400,
            ..ProducerConfig::default()
        },
    );
    let sent: Vec<(String, String)> = (0..staging::CHUNK_RECORDS * 3 + 17)
        .map(|i| (format!("key-{i}"), "v".repeat(i % 90)))
        .collect();
    let deliveries: Vec<Delivery> = sent
        .iter()
        .enumerate()
        .map(|(i, (key, value))| {
            let mut record = ProducerRecord::new("t", value).key(key);
            if i % 3 == 0 {
                record = record.header("n", key);
            }
            producer.send(record).unwrap()
        })
        .collect();
    producer.flush().unwrap();
    let mut last_offset = [-1i64; 7];
    for (i, delivery) in deliveries.into_iter().enumerate() {
        let stored_at = delivery.wait().unwrap();
        let partition = stored_at.partition as usize;
        assert!(
            stored_at.offset > last_offset[partition],
            "record {i} stored before an earlier one of its partition"
        );
        last_offset[partition] = stored_at.offset;
        let records = stored(&log, "t", stored_at.partition);
        let record = &records[stored_at.offset as usize];
        let (key, value) = &sent[i];
        assert_eq!(record.key.as_deref(), Some(key.as_bytes()), "record {i}");
        assert_eq!(
            record.value.as_deref(),
            Some(value.as_bytes()),
            "record {i}"
        );
        let headers: Vec<&[u8]> = record.headers.iter().map(|h| &h.key[..]).collect();
        let expected: &[&[u8]] = if i % 3 == 0 { &[b"n"] } else { &[] };
        assert_eq!(headers, expected, "record {i}");
    }
    let total: usize = (0..7).map(|p| stored(&log, "t", p).len()).sum();
    assert_eq!(total, sent.len(), "every record once");
}

#[test]
fn records_whose_deliveries_were_dropped_are_stored_without_keeping_their_batch() {
    let (_dir, log) = engine_with_topic(2);
    let producer = Producer::new(&log, ProducerConfig::default());
    // Records alternate between the partitions; only partition 1's deliveries are kept.
    let mut kept = Vec::new();
    for i in 0..10u32 {
        let delivery = producer
            .send(ProducerRecord::new("t", "v").partition(i % 2))
            .unwrap();
        if i % 2 == 1 {
            kept.push(delivery);
        }
    }
    producer.flush().unwrap();
    for p in 0..2 {
        assert_eq!(stored(&log, "t", p).len(), 5, "partition {p}");
    }
    // The chunk holds partition 1's batch once: with partition 0's records in between
    // kept too, it would hold it once per record (a run of one batch is noted once).
    let (slot, _) = kept[0].placements.wait(kept[0].index);
    assert_eq!(
        Arc::strong_count(&slot),
        2,
        "the chunk's reference and this one"
    );
    for (n, delivery) in kept.into_iter().enumerate() {
        let stored_at = delivery.wait().unwrap();
        assert_eq!((stored_at.partition, stored_at.offset), (1, n as i64));
    }
}

#[test]
fn a_staged_record_is_stored_after_its_linger_without_a_flush() {
    let (_dir, log) = engine_with_topic(1);
    let producer = Producer::new(
        &log,
        ProducerConfig {
            linger: Duration::from_millis(20),
            ..ProducerConfig::default()
        },
    );
    // One record: far from filling a chunk, so only the linger thread places it.
    let delivery = producer.send(ProducerRecord::new("t", "lone")).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(delivery.wait()));
    let stored_at = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the record was stored without a flush")
        .unwrap();
    assert_eq!((stored_at.partition, stored_at.offset), (0, 0));
    assert_eq!(stored(&log, "t", 0).len(), 1);
}

#[test]
fn large_records_are_placed_before_the_staging_holds_more_than_a_chunk_of_bytes() {
    let (_dir, log) = engine_with_topic(1);
    let producer = Producer::new(
        &log,
        ProducerConfig {
            linger: Duration::from_secs(600),
            ..ProducerConfig::default()
        },
    );
    let value = vec![b'x'; 100 << 10];
    for _ in 0..20 {
        producer.send(ProducerRecord::new("t", &value)).unwrap();
        let staged = producer.shared.staging.lock();
        assert!(staged.records.len() < staging::CHUNK_RECORDS);
        assert!(staged.staged_bytes() < staging::CHUNK_BYTES);
    }
    producer.flush().unwrap();
    assert_eq!(stored(&log, "t", 0).len(), 20);
}

#[test]
fn batches_closed_before_their_linger_leave_no_trail() {
    let (_dir, log) = engine_with_topic(1);
    // A long linger, and batches that fill at every second record: each closes early.
    let producer = Producer::new(
        &log,
        ProducerConfig {
            linger: Duration::from_secs(600),
            batch_bytes: 100,
            ..ProducerConfig::default()
        },
    );
    for _ in 0..20_000 {
        producer
            .send(ProducerRecord::new("t", &[b'v'; 40]))
            .unwrap();
    }
    let queued = producer.shared.opened.lock().entries.len();
    assert!(
        queued <= 2 * OPENED_COMPACT_MIN,
        "{queued} entries for one open batch"
    );
    producer.flush().unwrap();
    assert_eq!(
        log.describe_topic("t").unwrap().partitions[0].log_end,
        20_000
    );
}
