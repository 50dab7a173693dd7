//! DescribeCluster and OffsetForLeaderEpoch, which the Java admin and consumer ask: the node as
//! the one broker and controller with the cluster id; epoch 0 ending at the log end, later
//! epochs undefined, a newer current epoch UNKNOWN_LEADER_EPOCH, an unknown partition
//! UNKNOWN_TOPIC_OR_PARTITION, at every served version.

use crate::common::{call, s};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

fn broker(dir: &std::path::Path) -> Broker {
    let log = Log::open(dir, Config::default()).unwrap();
    let config = TopicConfig {
        partitions: 2,
        ..TopicConfig::default()
    };
    log.create_topic("orders", config).unwrap();
    let mut builder = BatchBuilder::new(Compression::None);
    for _ in 0..3 {
        builder.push(log.clock().now_ms(), None, Some(b"v"), &[]);
    }
    log.append("orders", 0, &mut builder.build(0).unwrap())
        .unwrap();
    Broker::new(log, BrokerConfig::default())
}

#[test]
fn describe_cluster_names_this_node_as_broker_and_controller() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    for version in 0..=2 {
        let mut request = DescribeClusterRequest::default();
        request.include_cluster_authorized_operations = true;
        let response: DescribeClusterResponse =
            call(&broker, ApiKey::DescribeCluster, version, &request);
        assert_eq!(response.error_code, 0, "v{version}");
        assert_eq!(response.brokers.len(), 1);
        assert_eq!(response.brokers[0].broker_id, BrokerId(0));
        assert_eq!(response.controller_id, BrokerId(0));
        assert!(!response.cluster_id.is_empty());
        // Without an authorizer every cluster operation is allowed.
        assert_ne!(response.cluster_authorized_operations, 0);
        assert_ne!(response.cluster_authorized_operations, i32::MIN);
    }
    let mut controllers = DescribeClusterRequest::default();
    controllers.endpoint_type = 2;
    let refused: DescribeClusterResponse = call(&broker, ApiKey::DescribeCluster, 1, &controllers);
    assert_eq!(refused.error_code, 115, "UNSUPPORTED_ENDPOINT_TYPE");
    assert!(refused.brokers.is_empty());
}

#[test]
fn epoch_zero_ends_at_the_log_end_and_other_epochs_are_undefined() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let ask = |partition: i32, current: i32, epoch: i32| {
        let mut p = OffsetForLeaderPartition::default();
        p.partition = partition;
        p.current_leader_epoch = current;
        p.leader_epoch = epoch;
        p
    };
    for version in 2..=4 {
        let mut topic = OffsetForLeaderTopic::default();
        topic.topic = TopicName(s("orders"));
        topic.partitions = vec![
            ask(0, 0, 0),
            ask(1, -1, 0),
            ask(0, 0, 3),
            ask(0, 1, 0),
            ask(7, 0, 0),
        ];
        let mut unknown = OffsetForLeaderTopic::default();
        unknown.topic = TopicName(s("nowhere"));
        unknown.partitions = vec![ask(0, 0, 0)];
        let mut request = OffsetForLeaderEpochRequest::default();
        request.replica_id = BrokerId(-1);
        request.topics = vec![topic, unknown];
        let response: OffsetForLeaderEpochResponse =
            call(&broker, ApiKey::OffsetForLeaderEpoch, version, &request);
        let answers: Vec<(i16, i32, i32, i64)> = response
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| (p.error_code, p.partition, p.leader_epoch, p.end_offset))
            .collect();
        assert_eq!(
            answers,
            vec![
                (0, 0, 0, 3),
                (0, 1, 0, 0),
                (0, 0, -1, -1),
                (75, 0, -1, -1),
                (3, 7, -1, -1),
                (3, 0, -1, -1),
            ],
            "v{version}"
        );
    }
}
