//! `broker/*`: the Kafka layer in process. Produce requests (one batch of 100 records of 100 B)
//! through `Broker::handle_frame` with authorization off, and with `--authorizer acl` holding
//! 1,000 ACLs (literal, prefixed and wildcard, most for other principals and topics), in the
//! same run: the ratio is what authorization costs a produce. `broker/authorize/*` times one
//! decision alone, which the produce ratio's noise would hide.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, RequestHeader, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};
use logd::{Config, FsyncPolicy, Log, TopicConfig};
use logd_kafka::acl::{
    AclBinding, Authorizer, AuthorizerConfig, Operation, PatternType, Permission, ResourceType,
};
use logd_kafka::{Broker, BrokerConfig};
use logd_storage::batch::{BatchBuilder, Compression};

const RECORDS_PER_REQUEST: u64 = 100;
/// ACLs loaded in the authorized variant.
const ACLS: usize = 1_000;

/// One Produce v7 frame (without its size prefix) of a 100-record batch to `orders`.
fn produce_frame() -> Bytes {
    let mut builder = BatchBuilder::new(Compression::None);
    for i in 0..RECORDS_PER_REQUEST {
        builder.push(
            i as i64,
            Some(format!("key-{i}").as_bytes()),
            Some(&[b'v'; 100]),
            &[],
        );
    }
    let mut partition = PartitionProduceData::default();
    partition.index = 0;
    partition.records = Some(Bytes::from(builder.build(0).expect("batch")));
    let mut topic = TopicProduceData::default();
    topic.name = TopicName(StrBytes::from_static_str("orders"));
    topic.partition_data = vec![partition];
    let mut request = ProduceRequest::default();
    request.acks = 1;
    request.timeout_ms = 30_000;
    request.topic_data = vec![topic];
    let mut header = RequestHeader::default();
    header.request_api_key = ApiKey::Produce as i16;
    header.request_api_version = 7;
    header.client_id = Some(StrBytes::from_static_str("bench"));
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, ApiKey::Produce.request_header_version(7))
        .expect("header");
    request.encode(&mut frame, 7).expect("request");
    frame.freeze()
}

/// 1,000 ACLs as a multi-tenant deployment has them: per-tenant literal and prefixed grants,
/// a few denials, and the one that lets this principal write `orders`.
fn acls() -> Vec<AclBinding> {
    let acl = |name: String, pattern_type, principal: String, operation, permission| AclBinding {
        resource_type: ResourceType::Topic,
        resource_name: name,
        pattern_type,
        principal,
        host: "*".into(),
        operation,
        permission,
    };
    let mut all = Vec::with_capacity(ACLS);
    for tenant in 0..(ACLS - 2) / 2 {
        let principal = format!("User:tenant-{tenant}");
        all.push(acl(
            format!("tenant-{tenant}.events"),
            PatternType::Literal,
            principal.clone(),
            Operation::Write,
            Permission::Allow,
        ));
        all.push(acl(
            format!("tenant-{tenant}."),
            PatternType::Prefixed,
            principal,
            Operation::Read,
            if tenant % 10 == 0 {
                Permission::Deny
            } else {
                Permission::Allow
            },
        ));
    }
    all.push(acl(
        "*".into(),
        PatternType::Literal,
        "User:auditor".into(),
        Operation::Describe,
        Permission::Allow,
    ));
    all.push(acl(
        "orders".into(),
        PatternType::Literal,
        "User:ANONYMOUS".into(),
        Operation::Write,
        Permission::Allow,
    ));
    all
}

/// A broker over a fresh engine with topic `orders` (fsync never: the authorizer is measured,
/// not the disk; 64 MiB segments and 256 MiB retention keep the run's disk use bounded); with
/// the ACLs when `authorize`.
fn broker(dir: &std::path::Path, authorize: bool) -> Broker {
    let log = Log::open(dir, Config::default()).expect("open");
    let topic = TopicConfig {
        partitions: 1,
        fsync: FsyncPolicy::Never,
        retention_ms: None,
        retention_bytes: Some(256 << 20),
        segment_bytes: 64 << 20,
        ..TopicConfig::default()
    };
    log.create_topic("orders", topic).expect("topic");
    let broker = Broker::new(log, BrokerConfig::default());
    if !authorize {
        return broker;
    }
    let authorizer = Authorizer::open(dir, AuthorizerConfig::default()).expect("authorizer");
    authorizer.create(&acls()).expect("ACLs");
    assert_eq!(authorizer.len(), ACLS);
    broker.with_authorizer(Arc::new(authorizer))
}

fn produce(c: &mut Criterion) {
    let frame = produce_frame();
    let mut group = c.benchmark_group("broker/produce/100x100B");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(RECORDS_PER_REQUEST));
    for (name, authorize) in [("baseline", false), ("acl-1000", true)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let broker = broker(dir.path(), authorize);
        group.bench_function(BenchmarkId::new("handle_frame", name), |b| {
            b.iter(|| {
                let response = broker
                    .handle_frame(frame.clone(), "/127.0.0.1")
                    .expect("served")
                    .expect("a response");
                // Error code of the one partition: right after the base offset.
                black_box(response)
            })
        });
    }
    group.finish();
}

/// One decision over the 1,000 ACLs, for the same produce: the part of the ratio above that
/// is authorization, without the noise of a whole request.
fn decide(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let authorizer = Authorizer::open(dir.path(), AuthorizerConfig::default()).expect("open");
    authorizer.create(&acls()).expect("ACLs");
    let mut group = c.benchmark_group("broker/authorize/acl-1000");
    group.bench_function("write-orders", |b| {
        b.iter(|| {
            black_box(authorizer.authorize(
                black_box("User:ANONYMOUS"),
                "127.0.0.1",
                Operation::Write,
                ResourceType::Topic,
                black_box("orders"),
            ))
        })
    });
    group.bench_function("prefixed-tenant-topic", |b| {
        b.iter(|| {
            black_box(authorizer.authorize(
                black_box("User:tenant-7"),
                "127.0.0.1",
                Operation::Read,
                ResourceType::Topic,
                black_box("tenant-7.events.audit-log"),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, produce, decide);
