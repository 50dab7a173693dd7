//! Produce and ListOffsets at the newest versions Kafka 4.x serves without transactions:
//! flexible Produce (v9+) stores and answers as before, v8+ says why a batch is refused (a
//! keyless record on a compacted topic in Kafka's words, with the record's index);
//! ListOffsets v4+ answers with leader epoch 0 and refuses a newer epoch, knows KIP-405's local
//! log start (-4) and answers tiered storage's offsets (-5, -6) with none.

use crate::common::{call, s};
use bytes::Bytes;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

fn broker(dir: &std::path::Path) -> Broker {
    let log = Log::open(dir, Config::default()).unwrap();
    log.create_topic(
        "orders",
        TopicConfig {
            partitions: 1,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    Broker::new(log, BrokerConfig::default())
}

fn produce(broker: &Broker, version: i16, records: Bytes) -> (i16, i64, Option<String>) {
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(records);
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(s("orders"));
    topic.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.transactional_id = None;
    request.acks = -1;
    request.timeout_ms = 1000;
    request.topic_data = vec![topic];
    let response: ProduceResponse = call(broker, ApiKey::Produce, version, &request);
    let p = &response.responses[0].partition_responses[0];
    (
        p.error_code,
        p.base_offset,
        p.error_message.as_ref().map(|m| m.to_string()),
    )
}

fn batch(n: usize) -> Bytes {
    let mut builder = BatchBuilder::new(Compression::None);
    for i in 0..n {
        builder.push(1_000 + i as i64, None, Some(b"v"), &[]);
    }
    Bytes::from(builder.build(0).unwrap())
}

#[test]
fn flexible_produce_stores_and_v8_says_why_a_batch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    assert_eq!(produce(&broker, 9, batch(2)), (0, 0, None));
    assert_eq!(produce(&broker, 11, batch(3)), (0, 2, None));
    let mut corrupt = batch(1).to_vec();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let (code, _, message) = produce(&broker, 8, Bytes::from(corrupt.clone()));
    assert_eq!(code, 2, "CORRUPT_MESSAGE");
    assert!(message.is_some_and(|m| m.contains("checksum") || m.contains("CRC")));
    // Before v8 the answer has no message field.
    let (code, _, message) = produce(&broker, 7, Bytes::from(corrupt));
    assert_eq!((code, message), (2, None));
}

#[test]
fn a_keyless_record_on_a_compacted_topic_is_refused_in_kafkas_words_naming_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Config::default()).unwrap();
    let compacted = TopicConfig {
        cleanup_policy: logd::CleanupPolicy::Compact,
        ..TopicConfig::default()
    };
    log.create_topic("table", compacted).unwrap();
    let broker = Broker::new(log.clone(), BrokerConfig::default());
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(1, Some(b"k"), Some(b"keyed"), &[]);
    builder.push(1, None, Some(b"keyless"), &[]);
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(Bytes::from(builder.build(0).unwrap()));
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(s("table"));
    topic.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = -1;
    request.timeout_ms = 1000;
    request.topic_data = vec![topic];
    let response: ProduceResponse = call(&broker, ApiKey::Produce, 9, &request);
    let p = &response.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 87, "INVALID_RECORD");
    assert_eq!(
        p.error_message.as_deref(),
        Some("Compacted topic cannot accept message without key in topic partition table-0.")
    );
    let refused: Vec<i32> = p.record_errors.iter().map(|r| r.batch_index).collect();
    assert_eq!(refused, [1], "the second record has no key");
    assert_eq!(
        log.partition("table", 0).unwrap().end_offset().0,
        0,
        "nothing stored"
    );
}

fn list_offset(broker: &Broker, version: i16, timestamp: i64, epoch: i32) -> (i16, i64, i32) {
    let mut partition = ListOffsetsPartition::default();
    partition.timestamp = timestamp;
    partition.current_leader_epoch = epoch;
    let mut topic = ListOffsetsTopic::default();
    topic.name = TopicName(s("orders"));
    topic.partitions = vec![partition];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = BrokerId(-1);
    request.topics = vec![topic];
    let response: ListOffsetsResponse = call(broker, ApiKey::ListOffsets, version, &request);
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.offset, p.leader_epoch)
}

#[test]
fn list_offsets_answers_with_the_one_leader_epoch_and_knows_the_newer_specials() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    produce(&broker, 9, batch(4));
    for version in [4, 7, 9, 10] {
        assert_eq!(
            list_offset(&broker, version, -1, -1),
            (0, 4, 0),
            "latest v{version}"
        );
        assert_eq!(
            list_offset(&broker, version, -2, 0),
            (0, 0, 0),
            "earliest v{version}"
        );
        assert_eq!(list_offset(&broker, version, 1_002, 0), (0, 2, 0));
        // A client that saw a newer epoch than this node's.
        assert_eq!(
            list_offset(&broker, version, -1, 3).0,
            75,
            "UNKNOWN_LEADER_EPOCH"
        );
    }
    assert_eq!(
        list_offset(&broker, 8, -4, -1),
        (0, 0, 0),
        "local log start"
    );
    assert_eq!(
        list_offset(&broker, 9, -5, -1),
        (0, -1, -1),
        "nothing pending upload"
    );
    assert_eq!(
        list_offset(&broker, 10, -3, -1),
        (0, 3, 0),
        "largest timestamp"
    );
    assert_eq!(list_offset(&broker, 10, -9, -1).0, 42, "an unknown special");
}

/// Fetch at `version` of partition 0 of the topic with `id` (v13+) or named `orders`.
fn fetch(broker: &Broker, version: i16, id: uuid::Uuid, epoch: i32) -> (i16, usize) {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let mut partition = FetchPartition::default();
    partition.current_leader_epoch = epoch;
    partition.partition_max_bytes = 1 << 20;
    let mut topic = FetchTopic::default();
    if version >= 13 {
        topic.topic_id = id;
    } else {
        topic.topic = TopicName(s("orders"));
    }
    topic.partitions = vec![partition];
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(-1);
    request.max_bytes = 1 << 20;
    request.topics = vec![topic];
    let response: FetchResponse = call(broker, ApiKey::Fetch, version, &request);
    let t = &response.responses[0];
    if version >= 13 {
        assert_eq!(t.topic_id, id);
    }
    let p = &t.partitions[0];
    (p.error_code, p.records.as_ref().map_or(0, |r| r.len()))
}

#[test]
fn fetch_finds_topics_by_id_from_v13_and_refuses_a_newer_leader_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    produce(&broker, 9, batch(4));
    let id = uuid::Uuid::from_bytes(broker.log().describe_topic("orders").unwrap().id);
    let stored = batch(4).len();
    for version in [12, 13, 15, 16, 17] {
        assert_eq!(fetch(&broker, version, id, 0), (0, stored), "v{version}");
        assert_eq!(
            fetch(&broker, version, id, -1),
            (0, stored),
            "no epoch, v{version}"
        );
        assert_eq!(
            fetch(&broker, version, id, 1).0,
            75,
            "UNKNOWN_LEADER_EPOCH v{version}"
        );
    }
    let stranger = uuid::Uuid::from_bytes([3; 16]);
    assert_eq!(fetch(&broker, 13, stranger, 0).0, 100, "UNKNOWN_TOPIC_ID");
}
