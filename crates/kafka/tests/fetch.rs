//! Fetch's byte limits as KIP-74 sets them: only the first batch of the first partition with
//! data may exceed the response's `max_bytes`; a later partition whose next batch would pass it
//! waits for the next fetch.

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

mod common;
use common::{call, s};

fn batch(value_len: usize) -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, None, Some(&vec![b'x'; value_len]), &[]);
    builder.build(0).unwrap()
}

/// One Fetch (v11) of partitions 0 and 1 from offset 0: the bytes each partition returned.
fn fetch(broker: &Broker, max_bytes: i32) -> Vec<usize> {
    let partitions = (0..2)
        .map(|p| {
            let mut partition = FetchPartition::default();
            partition.partition = p;
            partition.fetch_offset = 0;
            partition.partition_max_bytes = 1 << 20;
            partition
        })
        .collect();
    let mut topic = FetchTopic::default();
    topic.topic = TopicName(s("t"));
    topic.partitions = partitions;
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_wait_ms = 0;
    request.min_bytes = 1;
    request.max_bytes = max_bytes;
    request.topics = vec![topic];
    let response: FetchResponse = call(broker, ApiKey::Fetch, 11, &request);
    response.responses[0]
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
