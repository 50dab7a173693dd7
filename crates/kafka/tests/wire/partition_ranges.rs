//! logd's own DescribePartitionRanges (API key 10000) at the Kafka layer: ApiVersions lists
//! it, a compacted partition's ranges move as the cleaner works, an unknown topic and a topic
//! the ACLs hide are refused with Kafka's codes, and a version logd does not serve closes the
//! connection as an unknown API would.

use crate::common::call;
use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use logd::{CleanupPolicy, Config, Housekeeping, Log, TopicConfig};
use logd_kafka::{Broker, BrokerConfig, codes};
use logd_protocol::partition_ranges::{
    API_KEY, PartitionRanges, PartitionRangesRequest, PartitionRangesResponse,
};
use logd_storage::batch::{BatchBuilder, Compression};

fn engine(dir: &std::path::Path) -> Log {
    let config = Config {
        housekeeping: Housekeeping {
            enabled: false,
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let log = Log::open(dir, config).unwrap();
    log.create_topic(
        "table",
        TopicConfig {
            cleanup_policy: CleanupPolicy::Compact,
            segment_bytes: 1024,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    for i in 0..40 {
        let mut builder = BatchBuilder::new(Compression::None);
        let key = format!("k{}", i % 4);
        builder.push(1_000, Some(key.as_bytes()), Some(&[b'v'; 60]), &[]);
        log.append("table", 0, &mut builder.build(0).unwrap())
            .unwrap();
    }
    log
}

/// Sends DescribePartitionRanges for `topic` at `version`; the decoded answer, or `None`
/// when the broker closes the connection.
fn ranges(broker: &Broker, topic: &str, version: i16) -> Option<PartitionRangesResponse> {
    let mut frame = BytesMut::new();
    frame.put_i16(API_KEY);
    frame.put_i16(version);
    frame.put_i32(11);
    frame.put_i16(6);
    frame.put_slice(b"tester");
    PartitionRangesRequest {
        topic: topic.to_owned(),
    }
    .encode(&mut frame)
    .unwrap();
    let mut response = broker
        .handle_frame(frame.freeze(), "/10.0.0.9")
        .ok()?
        .expect("an answer")
        .freeze();
    assert_eq!(response.get_i32() as usize, response.remaining());
    assert_eq!(response.get_i32(), 11, "correlation id");
    let decoded = PartitionRangesResponse::decode(&mut response).unwrap();
    assert!(response.is_empty());
    Some(decoded)
}

#[test]
fn api_versions_lists_it_so_a_client_can_tell_logd_from_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::new(engine(dir.path()), BrokerConfig::default());
    let versions: ApiVersionsResponse = call(
        &broker,
        ApiKey::ApiVersions,
        3,
        &ApiVersionsRequest::default(),
    );
    let listed = versions.api_keys.iter().find(|k| k.api_key == API_KEY);
    assert_eq!(listed.map(|k| (k.min_version, k.max_version)), Some((0, 0)));
}

#[test]
fn a_compacted_partitions_ranges_follow_the_cleaner() {
    let dir = tempfile::tempdir().unwrap();
    let log = engine(dir.path());
    let broker = Broker::new(log.clone(), BrokerConfig::default());
    let active = log.partition("table", 0).unwrap().active_segment_base().0;

    let before = ranges(&broker, "table", 0).unwrap();
    assert_eq!(before.error_code, 0);
    assert_eq!(
        before.partitions,
        vec![PartitionRanges {
            partition: 0,
            log_start: 0,
            cleaned_up_to: 0,
            cleanable_end: active,
            active_start: active,
            log_end: 40,
        }]
    );
    log.clean_topics(i64::MAX / 2, 1 << 20, None);
    let after = ranges(&broker, "table", 0).unwrap();
    assert_eq!(after.partitions[0].cleaned_up_to, active);

    let unknown = ranges(&broker, "nope", 0).unwrap();
    assert_eq!(unknown.error_code, codes::UNKNOWN_TOPIC_OR_PARTITION);
    assert!(unknown.partitions.is_empty());

    assert!(
        ranges(&broker, "table", 1).is_none(),
        "an unserved version closes the connection"
    );
}

#[test]
fn the_acls_refuse_a_topic_the_principal_may_not_describe() {
    let dir = tempfile::tempdir().unwrap();
    let log = engine(dir.path());
    let authorizer = std::sync::Arc::new(
        logd_kafka::acl::Authorizer::open(
            dir.path(),
            logd_kafka::acl::AuthorizerConfig {
                super_users: Vec::new(),
                allow_everyone_if_no_acl_found: false,
            },
        )
        .unwrap(),
    );
    let broker = Broker::new(log, BrokerConfig::default()).with_authorizer(authorizer);
    let refused = ranges(&broker, "table", 0).unwrap();
    assert_eq!(refused.error_code, codes::TOPIC_AUTHORIZATION_FAILED);
    assert!(refused.partitions.is_empty());
}
