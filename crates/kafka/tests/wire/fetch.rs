//! Fetch's byte limits as KIP-74 sets them: only the first batch of the first partition with
//! data may exceed the response's `max_bytes`; a later partition whose next batch would pass it
//! waits for the next fetch. And an answer never carries records past the high watermark it
//! states, while appends go on.

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

use crate::common::{call, s};

fn batch(value_len: usize) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, None, Some(&vec![b'x'; value_len]), &[]);
    builder.build(0).unwrap()
}

/// One Fetch (v11) of topic `t` that does not wait: each of `partitions` (index, fetch
/// offset) up to 1 MiB, the response up to `max_bytes`.
fn fetch_now(broker: &Broker, partitions: &[(i32, i64)], max_bytes: i32) -> FetchResponse {
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(s("t"));
    topic.partitions = partitions
        .iter()
        .map(|&(index, offset)| {
            let mut partition = FetchPartition::default();
            partition.partition = index;
            partition.fetch_offset = offset;
            partition.partition_max_bytes = 1 << 20;
            partition
        })
        .collect();
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_wait_ms = 0;
    request.min_bytes = 1;
    request.max_bytes = max_bytes;
    request.topics = vec![topic];
    call(broker, ApiKey::Fetch, 11, &request)
}

/// One Fetch of partitions 0 and 1 from offset 0: the bytes each partition returned.
fn fetch(broker: &Broker, max_bytes: i32) -> Vec<usize> {
    fetch_now(broker, &[(0, 0), (1, 0)], max_bytes).responses[0]
        .partitions
        .iter()
        .map(|p| p.records.as_ref().map_or(0, Bytes::len))
        .collect()
}

#[test]
fn only_the_first_batch_may_exceed_the_responses_max_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Config::default()).unwrap();
    log.create_topic(
        "t",
        TopicConfig {
            partitions: 2,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let size = batch(1000).len();
    for p in 0..2 {
        log.append("t", p, &mut batch(1000)).unwrap();
    }
    let broker = Broker::new(log, BrokerConfig::default());
    // Room for one batch and a half: partition 1's batch waits.
    assert_eq!(fetch(&broker, (size * 3 / 2) as i32), [size, 0]);
    // Smaller than one batch: the first still comes (progress), the second does not.
    assert_eq!(fetch(&broker, 10), [size, 0]);
    // Room for both.
    assert_eq!(fetch(&broker, (size * 2) as i32), [size, size]);
}

/// One Fetch of partition 0 from `offset`: the stated high watermark and the offset after
/// the last record returned.
fn fetch_from(broker: &Broker, offset: i64) -> (i64, i64) {
    let response = fetch_now(broker, &[(0, offset)], 1 << 20);
    let answer = &response.responses[0].partitions[0];
    let records = answer.records.clone().unwrap_or_default();
    let mut end = offset;
    for item in logd_storage::batch::BatchIter::new(&records, 0) {
        end = item.unwrap().1.header.next_offset();
    }
    (answer.high_watermark, end)
}

#[test]
fn a_fetch_never_returns_records_past_the_high_watermark_it_states() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Config::default()).unwrap();
    log.create_topic(
        "t",
        TopicConfig {
            fsync: logd::FsyncPolicy::Never,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    let appender = {
        let log = log.clone();
        std::thread::spawn(move || {
            for _ in 0..100_000 {
                log.append("t", 0, &mut batch(10)).unwrap();
            }
        })
    };
    let broker = Broker::new(log, BrokerConfig::default());
    // Fetching at the end, where the appends land while the fetch looks.
    let mut next = 0;
    while !appender.is_finished() {
        let (high_watermark, end) = fetch_from(&broker, next);
        assert!(
            end <= high_watermark,
            "records up to {end} past the stated high watermark {high_watermark}"
        );
        next = end;
    }
    appender.join().unwrap();
}
