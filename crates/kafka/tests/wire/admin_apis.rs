//! The admin APIs the JVM tools need, at the protocol level: DescribeTopicPartitions pages
//! topics and partitions behind a cursor as Kafka does; DeleteRecords moves a partition's
//! start with Kafka's codes; the legacy AlterConfigs replaces a topic's whole set.

use crate::common::{call, s};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

fn broker(dir: &std::path::Path) -> Broker {
    let log = Log::open(dir, Config::default()).unwrap();
    for (name, partitions) in [("a", 3), ("b", 2), ("c", 4)] {
        let config = TopicConfig {
            partitions,
            ..TopicConfig::default()
        };
        log.create_topic(name, config).unwrap();
    }
    let mut builder = BatchBuilder::new(Compression::None);
    for _ in 0..10 {
        builder.push(log.clock().now_ms(), None, Some(b"v"), &[]);
    }
    log.append("a", 0, &mut builder.build(0).unwrap()).unwrap();
    Broker::new(log, BrokerConfig::default())
}

fn name(n: &str) -> TopicName {
    TopicName(s(n))
}

/// A page as (topic, partitions, error code) per topic, and the cursor to the next one.
type Page = (Vec<(String, Vec<i32>, i16)>, Option<(String, i32)>);

/// The (topic, partitions) of an answer and its cursor.
fn page(response: &DescribeTopicPartitionsResponse) -> Page {
    let topics = response
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().unwrap().to_string(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
                t.error_code,
            )
        })
        .collect();
    let cursor = response
        .next_cursor
        .as_ref()
        .map(|c| (c.topic_name.to_string(), c.partition_index));
    (topics, cursor)
}

fn describe(
    broker: &Broker,
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsResponse {
    let mut request = DescribeTopicPartitionsRequest::default();
    request.topics = topics
        .iter()
        .map(|t| {
            let mut topic = describe_topic_partitions_request::TopicRequest::default();
            topic.name = name(t);
            topic
        })
        .collect();
    request.response_partition_limit = limit;
    request.cursor = cursor.map(|(topic, partition)| {
        let mut c = describe_topic_partitions_request::Cursor::default();
        c.topic_name = name(topic);
        c.partition_index = partition;
        c
    });
    call(broker, ApiKey::DescribeTopicPartitions, 0, &request)
}

#[test]
fn describe_topic_partitions_pages_behind_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    // Every topic, sorted, four partitions a page.
    let first = describe(&broker, &[], 4, None);
    assert_eq!(
        page(&first),
        (
            vec![("a".into(), vec![0, 1, 2], 0), ("b".into(), vec![0], 0)],
            Some(("b".into(), 1))
        )
    );
    let topic = &first.topics[0];
    assert_eq!(topic.partitions[0].leader_id, BrokerId(0));
    assert_eq!(topic.partitions[0].isr_nodes, vec![BrokerId(0)]);
    assert_eq!(topic.partitions[0].eligible_leader_replicas, Some(vec![]));
    assert_ne!(topic.topic_id, uuid::Uuid::nil());
    assert_ne!(topic.topic_authorized_operations, 0);
    let second = describe(&broker, &[], 4, Some(("b", 1)));
    assert_eq!(
        page(&second),
        (
            vec![("b".into(), vec![1], 0), ("c".into(), vec![0, 1, 2], 0)],
            Some(("c".into(), 3))
        )
    );
    let last = describe(&broker, &[], 4, Some(("c", 3)));
    assert_eq!(page(&last), (vec![("c".into(), vec![3], 0)], None));
    // A page that ends with a topic points at the next one.
    let exact = describe(&broker, &["a", "b"], 3, None);
    assert_eq!(
        page(&exact),
        (vec![("a".into(), vec![0, 1, 2], 0)], Some(("b".into(), 0)))
    );
    // Named topics: an unknown one is UNKNOWN_TOPIC_OR_PARTITION; a cursor outside the list
    // or negative is INVALID_REQUEST for every topic.
    let named = describe(&broker, &["zz", "b"], 100, None);
    assert_eq!(
        page(&named),
        (
            vec![("b".into(), vec![0, 1], 0), ("zz".into(), vec![], 3)],
            None
        )
    );
    let bad = describe(&broker, &["a"], 100, Some(("b", 0)));
    assert_eq!(page(&bad), (vec![("a".into(), vec![], 42)], None));
    let negative = describe(&broker, &["a"], 100, Some(("a", -1)));
    assert_eq!(page(&negative), (vec![("a".into(), vec![], 42)], None));
}

fn delete(broker: &Broker, version: i16, topic: &str, partition: i32, offset: i64) -> (i64, i16) {
    let mut p = delete_records_request::DeleteRecordsPartition::default();
    p.partition_index = partition;
    p.offset = offset;
    let mut t = delete_records_request::DeleteRecordsTopic::default();
    t.name = name(topic);
    t.partitions = vec![p];
    let mut request = DeleteRecordsRequest::default();
    request.topics = vec![t];
    request.timeout_ms = 1000;
    let response: DeleteRecordsResponse = call(broker, ApiKey::DeleteRecords, version, &request);
    let answer = &response.topics[0].partitions[0];
    (answer.low_watermark, answer.error_code)
}

#[test]
fn delete_records_moves_the_start_with_kafkas_codes() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    assert_eq!(delete(&broker, 0, "a", 0, 4), (4, 0));
    assert_eq!(
        delete(&broker, 1, "a", 0, 2),
        (4, 0),
        "below the start: no change"
    );
    assert_eq!(
        delete(&broker, 2, "a", 0, 11),
        (-1, 1),
        "past the end: OFFSET_OUT_OF_RANGE"
    );
    assert_eq!(
        delete(&broker, 2, "a", 0, -1),
        (10, 0),
        "-1: the high watermark"
    );
    assert_eq!(
        delete(&broker, 2, "a", 7, 0),
        (-1, 3),
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    assert_eq!(delete(&broker, 2, "nope", 0, 0), (-1, 3));
    let log = broker.log();
    log.create_topic(
        "compacted",
        TopicConfig {
            cleanup_policy: logd::CleanupPolicy::Compact,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    assert_eq!(
        delete(&broker, 2, "compacted", 0, 0),
        (-1, 44),
        "POLICY_VIOLATION"
    );
}

fn alter(broker: &Broker, version: i16, configs: &[(&str, Option<&str>)]) -> i16 {
    let mut resource = alter_configs_request::AlterConfigsResource::default();
    resource.resource_type = 2;
    resource.resource_name = s("b");
    resource.configs = configs
        .iter()
        .map(|(n, v)| {
            let mut c = alter_configs_request::AlterableConfig::default();
            c.name = s(n);
            c.value = v.map(s);
            c
        })
        .collect();
    let mut request = AlterConfigsRequest::default();
    request.resources = vec![resource];
    let response: AlterConfigsResponse = call(broker, ApiKey::AlterConfigs, version, &request);
    response.responses[0].error_code
}

#[test]
fn legacy_alter_configs_replaces_the_whole_set() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let config = || broker.log().describe_topic("b").unwrap().config;
    assert_eq!(
        alter(
            &broker,
            0,
            &[("retention.ms", Some("1000")), ("segment.ms", Some("2000"))]
        ),
        0
    );
    assert_eq!(
        (config().retention_ms, config().segment_ms),
        (Some(1000), Some(2000))
    );
    // The next set names only segment.ms: retention goes back to the default.
    assert_eq!(alter(&broker, 2, &[("segment.ms", Some("3000"))]), 0);
    let default = TopicConfig::default();
    assert_eq!(
        (config().retention_ms, config().segment_ms),
        (default.retention_ms, Some(3000))
    );
    // A bad set changes nothing.
    assert_eq!(
        alter(&broker, 1, &[("bogus.config", Some("1"))]),
        40,
        "INVALID_CONFIG"
    );
    assert_eq!(alter(&broker, 1, &[("segment.ms", Some("x"))]), 40);
    assert_eq!(config().segment_ms, Some(3000));
}
