//! Metadata at the versions Kafka 4.x serves: the stable topic id (v10+) and topics asked for
//! by id, UNKNOWN_TOPIC_ID for an id no topic has, leader epoch 0 (v7+), authorized operations
//! when asked (v8+), and what a client pinned to an old broker version sends (sarama configured
//! for Kafka 2.0 asks with v5).

use crate::common::{call, s};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use uuid::Uuid;

fn broker(dir: &std::path::Path) -> (Broker, [u8; 16]) {
    let log = Log::open(dir, Config::default()).unwrap();
    let topic = TopicConfig {
        partitions: 2,
        ..TopicConfig::default()
    };
    let id = log.create_topic("orders", topic).unwrap().id;
    (Broker::new(log, BrokerConfig::default()), id)
}

fn by_name(name: &str) -> MetadataRequestTopic {
    let mut topic = MetadataRequestTopic::default();
    topic.name = Some(TopicName(s(name)));
    topic
}

fn by_id(id: Uuid) -> MetadataRequestTopic {
    let mut topic = MetadataRequestTopic::default();
    topic.name = None;
    topic.topic_id = id;
    topic
}

/// By id as Kafka's Java admin asks (`describeTopics(TopicCollection.ofTopicIds(..))`): with an
/// empty name beside the id, which Kafka ignores.
fn by_id_with_empty_name(id: Uuid) -> MetadataRequestTopic {
    let mut topic = by_id(id);
    topic.name = Some(TopicName(s("")));
    topic
}

#[test]
fn topics_come_with_their_ids_and_can_be_asked_for_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, id) = broker(dir.path());
    let stranger = Uuid::from_bytes([9; 16]);
    for version in 10..=13 {
        let mut request = MetadataRequest::default();
        request.topics = Some(vec![
            by_name("orders"),
            by_id(Uuid::from_bytes(id)),
            by_id_with_empty_name(Uuid::from_bytes(id)),
            by_id(stranger),
        ]);
        request.include_topic_authorized_operations = true;
        let response: MetadataResponse = call(&broker, ApiKey::Metadata, version, &request);
        let [named, identified, java, unknown] = &response.topics[..] else {
            panic!("four topics: {response:?}");
        };
        for topic in [named, identified, java] {
            assert_eq!(topic.error_code, 0);
            assert_eq!(topic.name.as_ref().map(|n| n.as_str()), Some("orders"));
            assert_eq!(topic.topic_id, Uuid::from_bytes(id), "v{version}");
            assert_eq!(topic.partitions.len(), 2);
            assert!(topic.partitions.iter().all(|p| p.leader_epoch == 0));
            // No authorizer: every operation a topic has, bit n for the operation of code n:
            // READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
            // ALTER_CONFIGS 11 (not CLUSTER_ACTION 9, a cluster operation).
            let all = [3, 4, 5, 6, 7, 8, 10, 11]
                .iter()
                .fold(0, |b, op| b | (1 << op));
            assert_eq!(topic.topic_authorized_operations, all, "v{version}");
        }
        assert_eq!(unknown.error_code, 100, "UNKNOWN_TOPIC_ID");
        assert_eq!(unknown.topic_id, stranger);
        assert!(unknown.name.is_none());
    }
}

#[test]
fn a_client_pinned_to_kafka_2_0_gets_its_metadata() {
    // sarama with `Version = V2_0_0_0` asks with Metadata v5 for all topics.
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = broker(dir.path());
    let mut request = MetadataRequest::default();
    request.topics = None;
    let response: MetadataResponse = call(&broker, ApiKey::Metadata, 5, &request);
    assert_eq!(response.topics.len(), 1);
    assert_eq!(response.topics[0].partitions.len(), 2);
    assert_eq!(response.controller_id.0, 0);
    assert!(response.topics[0].partitions[0].offline_replicas.is_empty());
    // Not asked: Kafka's "unknown" marker for the operations.
    let response: MetadataResponse = call(&broker, ApiKey::Metadata, 8, &request);
    assert_eq!(response.topics[0].topic_authorized_operations, i32::MIN);
    assert_eq!(response.cluster_authorized_operations, i32::MIN);
}
