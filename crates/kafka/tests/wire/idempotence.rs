//! Idempotent producers on the wire, through `Broker::handle_frame` over a real engine:
//! InitProducerId at every served version hands out fresh ids that survive a restart, Produce
//! answers a retry with the original offsets and Kafka's codes for gaps, fenced epochs, ids
//! never handed out and malformed producer fields, storing nothing for any of them, and
//! DescribeProducers shows the state.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

use crate::common::{call, s};

fn broker(dir: &std::path::Path) -> Broker {
    let log = Log::open(dir, Config::default()).unwrap();
    if !log.list_topics().contains(&"orders".to_owned()) {
        log.create_topic("orders", TopicConfig::default()).unwrap();
    }
    Broker::new(log, BrokerConfig::default())
}

fn init_producer_id(broker: &Broker, version: i16) -> i64 {
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = None;
    request.transaction_timeout_ms = 60_000;
    if version >= 3 {
        request.producer_id = ProducerId(-1);
        request.producer_epoch = -1;
    }
    let response: InitProducerIdResponse = call(broker, ApiKey::InitProducerId, version, &request);
    assert_eq!((response.error_code, response.producer_epoch), (0, 0));
    response.producer_id.0
}

/// Produces one batch of `count` records from `id`/`epoch` at `sequence` (acks = all):
/// (error code, base offset).
fn produce(broker: &Broker, id: i64, epoch: i16, sequence: i32, count: usize) -> (i16, i64) {
    let mut builder = BatchBuilder::new(Compression::None).producer(id, epoch, sequence);
    for i in 0..count {
        builder.push(
            1_700_000_000_000,
            None,
            Some(format!("r{i}").as_bytes()),
            &[],
        );
    }
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(Bytes::from(builder.build(0).unwrap()));
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(s("orders"));
    topic.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = -1;
    request.timeout_ms = 10_000;
    request.topic_data = vec![topic];
    let response: ProduceResponse = call(broker, ApiKey::Produce, 7, &request);
    let partition = &response.responses[0].partition_responses[0];
    (partition.error_code, partition.base_offset)
}

fn end_offset(broker: &Broker) -> i64 {
    broker.log().partition("orders", 0).unwrap().end_offset().0
}

#[test]
fn init_producer_id_hands_out_fresh_ids_at_every_version_and_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    {
        let broker = broker(dir.path());
        for version in 0..=5 {
            ids.push(init_producer_id(&broker, version));
        }
    }
    let broker = broker(dir.path());
    ids.push(init_producer_id(&broker, 4));
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, ids, "fresh and increasing: {ids:?}");
    assert!(
        ids[6] >= 1000,
        "the restart skips the rest of the block: {ids:?}"
    );
}

#[test]
fn produce_answers_as_kafka_for_retries_gaps_fences_and_bad_producer_fields() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let id = init_producer_id(&broker, 1);
    assert_eq!(produce(&broker, id, 0, 0, 3), (0, 0));
    assert_eq!(produce(&broker, id, 0, 3, 2), (0, 3));
    // A lost response: the client sends the first batch again.
    assert_eq!(produce(&broker, id, 0, 0, 3), (0, 0), "original offsets");
    assert_eq!(end_offset(&broker), 5, "stored once");
    let code = |e: ResponseError| e.code();
    assert_eq!(
        produce(&broker, id, 0, 9, 1).0,
        code(ResponseError::OutOfOrderSequenceNumber)
    );
    // A new epoch starts at 0 and fences the old one.
    assert_eq!(
        produce(&broker, id, 1, 4, 1).0,
        code(ResponseError::OutOfOrderSequenceNumber)
    );
    assert_eq!(produce(&broker, id, 1, 0, 1), (0, 5));
    assert_eq!(
        produce(&broker, id, 0, 5, 1).0,
        code(ResponseError::InvalidProducerEpoch)
    );
    assert_eq!(
        produce(&broker, id + 1, 0, 0, 1).0,
        code(ResponseError::UnknownProducerId),
        "an id never handed out"
    );
    assert_eq!(
        produce(&broker, id, 1, -1, 1).0,
        code(ResponseError::InvalidRecord),
        "a negative sequence"
    );
    assert_eq!(
        produce(&broker, id, -1, 1, 1).0,
        code(ResponseError::InvalidRecord),
        "an id without an epoch"
    );
    assert_eq!(end_offset(&broker), 6, "no refused batch stored anything");
    // A sequence range that wraps past i32::MAX is Kafka's wrap, not an overflow: a producer
    // unknown to the partition may start anywhere, and continues at 1 after MAX-1 + 3 records.
    let other = init_producer_id(&broker, 1);
    assert_eq!(produce(&broker, other, 0, i32::MAX - 1, 3), (0, 6));
    assert_eq!(produce(&broker, other, 0, 1, 1), (0, 9));
    // And batches without a producer id are stored as before.
    assert_eq!(produce(&broker, -1, -1, -1, 1), (0, 10));
}

#[test]
fn describe_producers_shows_each_partitions_producers() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let id = init_producer_id(&broker, 0);
    produce(&broker, id, 0, 0, 4);
    let mut topic = TopicRequest::default();
    topic.name = TopicName(s("orders"));
    topic.partition_indexes = vec![0, 7];
    let mut request = DescribeProducersRequest::default();
    request.topics = vec![topic];
    let response: DescribeProducersResponse = call(&broker, ApiKey::DescribeProducers, 0, &request);
    let partitions = &response.topics[0].partitions;
    assert_eq!(partitions[0].error_code, 0);
    let producer = &partitions[0].active_producers[0];
    assert_eq!(
        (
            producer.producer_id.0,
            producer.producer_epoch,
            producer.last_sequence,
            producer.last_timestamp
        ),
        (id, 0, 3, 1_700_000_000_000)
    );
    assert_eq!(
        partitions[1].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}
