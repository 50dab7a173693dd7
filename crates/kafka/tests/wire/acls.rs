//! Authorization as Kafka enforces it, API by API: for every request logd serves, the ACLs it
//! needs allow it, leaving out any one of them gets Kafka's exact error code, and a DENY next to
//! the ALLOW refuses it. Then the ACL APIs themselves with bad input, and the listings that
//! filter instead of failing. Requests go through `Broker::handle_frame`, whose connections are
//! unauthenticated, so the principal is Kafka's `User:ANONYMOUS`.

use crate::common::{call, s};
use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use logd::{Config, Log, TopicConfig};
use logd_kafka::acl::{
    AclBinding, AclFilter, Authorizer, AuthorizerConfig, CLUSTER_NAME, Operation, PatternType,
    Permission, ResourceType,
};
use logd_kafka::{Broker, BrokerConfig};
use logd_offsets::OffsetCommit;
use logd_storage::batch::{BatchBuilder, Compression};
use std::sync::Arc;

const ME: &str = "User:ANONYMOUS";

struct Setup {
    _dir: tempfile::TempDir,
    broker: Broker,
    authorizer: Arc<Authorizer>,
}

/// A broker with authorization on, topic `orders` holding one record, and group `billing`
/// with a committed offset and no members.
fn setup(config: AuthorizerConfig) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let engine = Config {
        auto_create_topics: true,
        ..Config::default()
    };
    let log = Log::open(dir.path(), engine).unwrap();
    log.create_topic(
        "orders",
        TopicConfig {
            partitions: 1,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    log.append("orders", 0, &mut batch()).unwrap();
    let commit = OffsetCommit {
        topic: "orders".into(),
        partition: 0,
        offset: 1,
        metadata: String::new(),
    };
    log.offsets().commit("billing", &[commit], 0).unwrap();
    let authorizer = Arc::new(Authorizer::open(dir.path(), config).unwrap());
    let broker = Broker::new(log, BrokerConfig::default()).with_authorizer(authorizer.clone());
    Setup {
        _dir: dir,
        broker,
        authorizer,
    }
}

fn batch() -> Vec<u8> {
    let mut builder = BatchBuilder::new(Compression::None);
    builder.push(0, Some(b"k"), Some(b"v"), &[]);
    builder.build(0).unwrap()
}

fn acl(
    resource_type: ResourceType,
    name: &str,
    operation: Operation,
    permission: Permission,
) -> AclBinding {
    AclBinding {
        resource_type,
        resource_name: name.into(),
        pattern_type: PatternType::Literal,
        principal: ME.into(),
        host: "*".into(),
        operation,
        permission,
    }
}

/// What an API needs: the resource type, its name and the operation, and the code a request
/// gets without it.
type Need = (ResourceType, &'static str, Operation, i16);

/// One row of the table: the request, and the first non-zero error code of its answer.
struct Row {
    api: &'static str,
    needs: Vec<Need>,
    /// The code when every need is granted (0, or an error the handler gives after the checks,
    /// such as UNKNOWN_MEMBER_ID for a heartbeat of a member that never joined).
    granted: i16,
    send: fn(&Broker) -> i16,
}

fn first_error(codes: impl IntoIterator<Item = i16>) -> i16 {
    codes.into_iter().find(|c| *c != 0).unwrap_or(0)
}

const TOPIC: i16 = 29;
const GROUP: i16 = 30;
const CLUSTER: i16 = 31;
const TRANSACTIONAL_ID: i16 = 53;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

fn table() -> Vec<Row> {
    use Operation::*;
    use ResourceType::{Cluster, Group, Topic, TransactionalId};
    vec![
        Row {
            api: "Produce",
            needs: vec![(Topic, "orders", Write, TOPIC)],
            granted: 0,
            send: |b| {
                let mut partition = PartitionProduceData::default();
                partition.index = 0;
                partition.records = Some(Bytes::from(batch()));
                let mut topic = TopicProduceData::default();
                topic.name = TopicName(s("orders"));
                topic.partition_data = vec![partition];
                let mut request = ProduceRequest::default();
                request.acks = -1;
                request.timeout_ms = 1000;
                request.topic_data = vec![topic];
                let r: ProduceResponse = call(b, ApiKey::Produce, 7, &request);
                r.responses[0].partition_responses[0].error_code
            },
        },
        Row {
            api: "Produce (transactional)",
            needs: vec![
                (TransactionalId, "tx", Write, TRANSACTIONAL_ID),
                (Topic, "orders", Write, TOPIC),
            ],
            granted: 0,
            send: |b| {
                let mut partition = PartitionProduceData::default();
                partition.index = 0;
                partition.records = Some(Bytes::from(batch()));
                let mut topic = TopicProduceData::default();
                topic.name = TopicName(s("orders"));
                topic.partition_data = vec![partition];
                let mut request = ProduceRequest::default();
                request.transactional_id = Some(kafka_protocol::messages::TransactionalId(s("tx")));
                request.acks = -1;
                request.timeout_ms = 1000;
                request.topic_data = vec![topic];
                let r: ProduceResponse = call(b, ApiKey::Produce, 7, &request);
                r.responses[0].partition_responses[0].error_code
            },
        },
        Row {
            api: "Fetch",
            needs: vec![(Topic, "orders", Read, TOPIC)],
            granted: 0,
            send: |b| {
                let mut partition = FetchPartition::default();
                partition.partition_max_bytes = 1 << 20;
                let mut topic = FetchTopic::default();
                topic.topic = TopicName(s("orders"));
                topic.partitions = vec![partition];
                let mut request = FetchRequest::default();
                request.replica_id = BrokerId(-1);
                request.max_wait_ms = 0;
                request.max_bytes = 1 << 20;
                request.topics = vec![topic];
                let r: FetchResponse = call(b, ApiKey::Fetch, 11, &request);
                let p = &r.responses[0].partitions[0];
                assert!(p.error_code != 0 || !p.records.as_ref().unwrap().is_empty());
                p.error_code
            },
        },
        Row {
            api: "ListOffsets",
            needs: vec![(Topic, "orders", Describe, TOPIC)],
            granted: 0,
            send: |b| {
                let mut partition = ListOffsetsPartition::default();
                partition.timestamp = -1;
                let mut topic = ListOffsetsTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partitions = vec![partition];
                let mut request = ListOffsetsRequest::default();
                request.replica_id = BrokerId(-1);
                request.topics = vec![topic];
                let r: ListOffsetsResponse = call(b, ApiKey::ListOffsets, 2, &request);
                r.topics[0].partitions[0].error_code
            },
        },
        Row {
            api: "Metadata",
            needs: vec![(Topic, "orders", Describe, TOPIC)],
            granted: 0,
            send: |b| metadata(b, "orders", false),
        },
        Row {
            api: "Metadata (auto-creation)",
            needs: vec![
                (Topic, "fresh", Describe, TOPIC),
                (Topic, "fresh", Create, TOPIC),
            ],
            granted: 0,
            send: |b| metadata(b, "fresh", true),
        },
        Row {
            api: "CreateTopics",
            needs: vec![(Topic, "fresh", Create, TOPIC)],
            granted: 0,
            send: |b| {
                let mut topic = CreatableTopic::default();
                topic.name = TopicName(s("fresh"));
                topic.num_partitions = 1;
                topic.replication_factor = 1;
                let mut request = CreateTopicsRequest::default();
                request.topics = vec![topic];
                request.timeout_ms = 1000;
                let r: CreateTopicsResponse = call(b, ApiKey::CreateTopics, 3, &request);
                r.topics[0].error_code
            },
        },
        Row {
            api: "CreatePartitions",
            needs: vec![(Topic, "orders", Alter, TOPIC)],
            granted: 0,
            send: |b| {
                let mut topic = create_partitions_request::CreatePartitionsTopic::default();
                topic.name = TopicName(s("orders"));
                topic.count = 2;
                topic.assignments = None;
                let mut request = CreatePartitionsRequest::default();
                request.topics = vec![topic];
                let r: CreatePartitionsResponse = call(b, ApiKey::CreatePartitions, 3, &request);
                r.results[0].error_code
            },
        },
        Row {
            api: "IncrementalAlterConfigs",
            needs: vec![(Topic, "orders", AlterConfigs, TOPIC)],
            granted: 0,
            send: |b| alter_config(b, 2, "orders", "retention.ms", "60000"),
        },
        Row {
            api: "IncrementalAlterConfigs (group)",
            needs: vec![(Group, "billing", AlterConfigs, GROUP)],
            granted: 0,
            send: |b| alter_config(b, 32, "billing", "share.delivery.count.limit", "3"),
        },
        Row {
            api: "ConsumerGroupHeartbeat",
            needs: vec![
                (Group, "billing", Read, GROUP),
                (Topic, "orders", Describe, TOPIC),
            ],
            granted: 0,
            send: |b| {
                let mut request = ConsumerGroupHeartbeatRequest::default();
                request.group_id = GroupId(s("billing"));
                request.member_id = s("member-1");
                request.rebalance_timeout_ms = 30_000;
                request.subscribed_topic_names = Some(vec![TopicName(s("orders"))]);
                request.topic_partitions = Some(Vec::new());
                let r: ConsumerGroupHeartbeatResponse =
                    call(b, ApiKey::ConsumerGroupHeartbeat, 1, &request);
                r.error_code
            },
        },
        Row {
            api: "ShareGroupHeartbeat",
            needs: vec![
                (Group, "billing", Read, GROUP),
                (Topic, "orders", Describe, TOPIC),
            ],
            granted: 0,
            send: |b| {
                let mut request = ShareGroupHeartbeatRequest::default();
                request.group_id = GroupId(s("billing"));
                request.member_id = s("member-1");
                request.subscribed_topic_names = Some(vec![TopicName(s("orders"))]);
                let r: ShareGroupHeartbeatResponse =
                    call(b, ApiKey::ShareGroupHeartbeat, 1, &request);
                r.error_code
            },
        },
        Row {
            api: "AlterShareGroupOffsets",
            needs: vec![
                (Group, "queue", Read, GROUP),
                (Topic, "orders", Read, TOPIC),
            ],
            granted: 0,
            send: |b| {
                use alter_share_group_offsets_request::*;
                let mut partition = AlterShareGroupOffsetsRequestPartition::default();
                partition.start_offset = 0;
                let mut topic = AlterShareGroupOffsetsRequestTopic::default();
                topic.topic_name = TopicName(s("orders"));
                topic.partitions = vec![partition];
                let mut request = AlterShareGroupOffsetsRequest::default();
                request.group_id = GroupId(s("queue"));
                request.topics = vec![topic];
                let r: AlterShareGroupOffsetsResponse =
                    call(b, ApiKey::AlterShareGroupOffsets, 0, &request);
                match r.error_code {
                    0 => r.responses[0].partitions[0].error_code,
                    code => code,
                }
            },
        },
        Row {
            api: "DeleteShareGroupOffsets",
            needs: vec![
                (Group, "queue", Delete, GROUP),
                (Topic, "orders", Read, TOPIC),
            ],
            granted: 0,
            send: |b| {
                use delete_share_group_offsets_request::*;
                let mut topic = DeleteShareGroupOffsetsRequestTopic::default();
                topic.topic_name = TopicName(s("orders"));
                let mut request = DeleteShareGroupOffsetsRequest::default();
                request.group_id = GroupId(s("queue"));
                request.topics = vec![topic];
                let r: DeleteShareGroupOffsetsResponse =
                    call(b, ApiKey::DeleteShareGroupOffsets, 0, &request);
                // Allowed in, the group (never a share group here) is not found.
                match (r.error_code, r.responses.first().map(|t| t.error_code)) {
                    (0 | 69, Some(code)) => code,
                    (code, _) => code,
                }
            },
        },
        Row {
            api: "ConsumerGroupDescribe",
            needs: vec![(Group, "billing", Describe, GROUP)],
            granted: 0,
            send: |b| {
                let mut request = ConsumerGroupDescribeRequest::default();
                request.group_ids = vec![GroupId(s("billing"))];
                let r: ConsumerGroupDescribeResponse =
                    call(b, ApiKey::ConsumerGroupDescribe, 1, &request);
                // A group of no consumer-protocol members is not found, once the caller may
                // look.
                match r.groups[0].error_code {
                    69 => 0,
                    code => code,
                }
            },
        },
        Row {
            api: "ShareGroupDescribe",
            needs: vec![(Group, "billing", Describe, GROUP)],
            granted: 0,
            send: |b| {
                let mut request = ShareGroupDescribeRequest::default();
                request.group_ids = vec![GroupId(s("billing"))];
                let r: ShareGroupDescribeResponse =
                    call(b, ApiKey::ShareGroupDescribe, 1, &request);
                // A group that is no share group is not found, once the caller may look.
                match r.groups[0].error_code {
                    69 => 0,
                    code => code,
                }
            },
        },
        Row {
            api: "ShareFetch",
            needs: vec![(Group, "billing", Read, GROUP)],
            granted: 0,
            send: |b| {
                let mut request = ShareFetchRequest::default();
                request.group_id = Some(GroupId(s("billing")));
                request.member_id = Some(s("member-1"));
                let r: ShareFetchResponse = call(b, ApiKey::ShareFetch, 1, &request);
                r.error_code
            },
        },
        Row {
            api: "DeleteTopics",
            needs: vec![(Topic, "orders", Delete, TOPIC)],
            granted: 0,
            send: |b| {
                let mut request = DeleteTopicsRequest::default();
                request.topic_names = vec![TopicName(s("orders"))];
                request.timeout_ms = 1000;
                let r: DeleteTopicsResponse = call(b, ApiKey::DeleteTopics, 1, &request);
                r.responses[0].error_code
            },
        },
        Row {
            api: "DescribeConfigs (topic)",
            needs: vec![(Topic, "orders", DescribeConfigs, TOPIC)],
            granted: 0,
            send: |b| describe_configs(b, 2, "orders"),
        },
        Row {
            api: "DescribeConfigs (group)",
            needs: vec![(Group, "billing", DescribeConfigs, GROUP)],
            granted: 0,
            send: |b| describe_configs(b, 32, "billing"),
        },
        Row {
            api: "DescribeConfigs (broker)",
            needs: vec![(Cluster, CLUSTER_NAME, DescribeConfigs, CLUSTER)],
            granted: 0,
            send: |b| describe_configs(b, 4, "0"),
        },
        Row {
            api: "DescribeLogDirs",
            needs: vec![(Cluster, CLUSTER_NAME, Describe, CLUSTER)],
            granted: 0,
            send: |b| {
                let request = DescribeLogDirsRequest::default();
                let r: DescribeLogDirsResponse = call(b, ApiKey::DescribeLogDirs, 1, &request);
                // v1 has no error field: Kafka answers a refusal with no log directory.
                if r.results.is_empty() { CLUSTER } else { 0 }
            },
        },
        Row {
            api: "DescribeProducers",
            needs: vec![(Topic, "orders", Read, TOPIC)],
            granted: 0,
            send: |b| {
                let mut topic = TopicRequest::default();
                topic.name = TopicName(s("orders"));
                topic.partition_indexes = vec![0];
                let mut request = DescribeProducersRequest::default();
                request.topics = vec![topic];
                let r: DescribeProducersResponse = call(b, ApiKey::DescribeProducers, 0, &request);
                r.topics[0].partitions[0].error_code
            },
        },
        Row {
            api: "InitProducerId",
            needs: vec![(Cluster, CLUSTER_NAME, IdempotentWrite, CLUSTER)],
            granted: 0,
            send: init_producer_id,
        },
        Row {
            api: "InitProducerId (transactional)",
            needs: vec![(TransactionalId, "t", Write, TRANSACTIONAL_ID)],
            granted: 0,
            send: |b| {
                let mut request = InitProducerIdRequest::default();
                request.transactional_id = Some(kafka_protocol::messages::TransactionalId(s("t")));
                request.transaction_timeout_ms = 60_000;
                request.producer_id = ProducerId(-1);
                request.producer_epoch = -1;
                let r: InitProducerIdResponse = call(b, ApiKey::InitProducerId, 4, &request);
                r.error_code
            },
        },
        Row {
            api: "AddPartitionsToTxn",
            needs: vec![
                (TransactionalId, "t", Write, TRANSACTIONAL_ID),
                (Topic, "orders", Write, TOPIC),
            ],
            // No InitProducerId before: the id has no producer.
            granted: INVALID_PRODUCER_ID_MAPPING,
            send: |b| {
                let mut topic = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partitions = vec![0];
                let mut request = AddPartitionsToTxnRequest::default();
                request.v3_and_below_transactional_id =
                    kafka_protocol::messages::TransactionalId(s("t"));
                request.v3_and_below_producer_id = ProducerId(5);
                request.v3_and_below_topics = vec![topic];
                let r: AddPartitionsToTxnResponse =
                    call(b, ApiKey::AddPartitionsToTxn, 3, &request);
                r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            },
        },
        Row {
            api: "AddOffsetsToTxn",
            needs: vec![
                (TransactionalId, "t", Write, TRANSACTIONAL_ID),
                (Group, "billing", Read, GROUP),
            ],
            granted: INVALID_PRODUCER_ID_MAPPING,
            send: |b| {
                let mut request = AddOffsetsToTxnRequest::default();
                request.transactional_id = kafka_protocol::messages::TransactionalId(s("t"));
                request.producer_id = ProducerId(5);
                request.group_id = GroupId(s("billing"));
                let r: AddOffsetsToTxnResponse = call(b, ApiKey::AddOffsetsToTxn, 3, &request);
                r.error_code
            },
        },
        Row {
            api: "EndTxn",
            needs: vec![(TransactionalId, "t", Write, TRANSACTIONAL_ID)],
            granted: INVALID_PRODUCER_ID_MAPPING,
            send: |b| {
                let mut request = EndTxnRequest::default();
                request.transactional_id = kafka_protocol::messages::TransactionalId(s("t"));
                request.producer_id = ProducerId(5);
                let r: EndTxnResponse = call(b, ApiKey::EndTxn, 3, &request);
                r.error_code
            },
        },
        Row {
            api: "TxnOffsetCommit",
            needs: vec![
                (TransactionalId, "t", Write, TRANSACTIONAL_ID),
                (Group, "billing", Read, GROUP),
                (Topic, "orders", Read, TOPIC),
            ],
            granted: INVALID_PRODUCER_ID_MAPPING,
            send: |b| {
                let mut partition =
                    txn_offset_commit_request::TxnOffsetCommitRequestPartition::default();
                partition.committed_offset = 1;
                let mut topic = txn_offset_commit_request::TxnOffsetCommitRequestTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partitions = vec![partition];
                let mut request = TxnOffsetCommitRequest::default();
                request.transactional_id = kafka_protocol::messages::TransactionalId(s("t"));
                request.group_id = GroupId(s("billing"));
                request.producer_id = ProducerId(5);
                request.generation_id = -1;
                request.topics = vec![topic];
                let r: TxnOffsetCommitResponse = call(b, ApiKey::TxnOffsetCommit, 3, &request);
                r.topics[0].partitions[0].error_code
            },
        },
        Row {
            api: "WriteTxnMarkers",
            needs: vec![(Cluster, CLUSTER_NAME, ClusterAction, CLUSTER)],
            granted: 0,
            send: |b| {
                let mut topic = write_txn_markers_request::WritableTxnMarkerTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partition_indexes = vec![0];
                let mut marker = write_txn_markers_request::WritableTxnMarker::default();
                marker.producer_id = ProducerId(5);
                marker.topics = vec![topic];
                let mut request = WriteTxnMarkersRequest::default();
                request.markers = vec![marker];
                let r: WriteTxnMarkersResponse = call(b, ApiKey::WriteTxnMarkers, 1, &request);
                r.markers[0].topics[0].partitions[0].error_code
            },
        },
        Row {
            api: "DescribeTransactions",
            needs: vec![(TransactionalId, "t", Describe, TRANSACTIONAL_ID)],
            granted: TRANSACTIONAL_ID_NOT_FOUND,
            send: |b| {
                let mut request = DescribeTransactionsRequest::default();
                request.transactional_ids = vec![kafka_protocol::messages::TransactionalId(s("t"))];
                let r: DescribeTransactionsResponse =
                    call(b, ApiKey::DescribeTransactions, 0, &request);
                r.transaction_states[0].error_code
            },
        },
        Row {
            api: "FindCoordinator",
            needs: vec![(Group, "billing", Describe, GROUP)],
            granted: 0,
            send: |b| {
                let mut request = FindCoordinatorRequest::default();
                request.key = s("billing");
                let r: FindCoordinatorResponse = call(b, ApiKey::FindCoordinator, 2, &request);
                r.error_code
            },
        },
        Row {
            api: "JoinGroup",
            needs: vec![(Group, "billing", Read, GROUP)],
            // v4 asks a new member to rejoin with the id it is given.
            granted: 79,
            send: |b| {
                let mut request = JoinGroupRequest::default();
                request.group_id = GroupId(s("billing"));
                request.session_timeout_ms = 10_000;
                request.rebalance_timeout_ms = 10_000;
                request.protocol_type = s("consumer");
                let mut protocol = join_group_request::JoinGroupRequestProtocol::default();
                protocol.name = s("range");
                request.protocols = vec![protocol];
                let r: JoinGroupResponse = call(b, ApiKey::JoinGroup, 4, &request);
                r.error_code
            },
        },
        Row {
            api: "SyncGroup",
            needs: vec![(Group, "billing", Read, GROUP)],
            granted: 25, // UNKNOWN_MEMBER_ID: the member never joined
            send: |b| {
                let mut request = SyncGroupRequest::default();
                request.group_id = GroupId(s("billing"));
                request.member_id = s("nobody");
                let r: SyncGroupResponse = call(b, ApiKey::SyncGroup, 3, &request);
                r.error_code
            },
        },
        Row {
            api: "Heartbeat",
            needs: vec![(Group, "billing", Read, GROUP)],
            granted: 25,
            send: |b| {
                let mut request = HeartbeatRequest::default();
                request.group_id = GroupId(s("billing"));
                request.member_id = s("nobody");
                let r: HeartbeatResponse = call(b, ApiKey::Heartbeat, 3, &request);
                r.error_code
            },
        },
        Row {
            api: "LeaveGroup",
            needs: vec![(Group, "billing", Read, GROUP)],
            granted: 25,
            send: |b| {
                let mut request = LeaveGroupRequest::default();
                request.group_id = GroupId(s("billing"));
                request.member_id = s("nobody");
                let r: LeaveGroupResponse = call(b, ApiKey::LeaveGroup, 0, &request);
                r.error_code
            },
        },
        Row {
            api: "OffsetCommit",
            needs: vec![
                (Group, "billing", Read, GROUP),
                (Topic, "orders", Read, TOPIC),
            ],
            granted: 0,
            send: |b| {
                let mut partition = OffsetCommitRequestPartition::default();
                partition.committed_offset = 1;
                let mut topic = OffsetCommitRequestTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partitions = vec![partition];
                let mut request = OffsetCommitRequest::default();
                request.group_id = GroupId(s("billing"));
                request.generation_id_or_member_epoch = -1;
                request.topics = vec![topic];
                let r: OffsetCommitResponse = call(b, ApiKey::OffsetCommit, 7, &request);
                r.topics[0].partitions[0].error_code
            },
        },
        Row {
            api: "OffsetFetch",
            needs: vec![
                (Group, "billing", Describe, GROUP),
                (Topic, "orders", Describe, TOPIC),
            ],
            granted: 0,
            send: |b| {
                let mut topic = OffsetFetchRequestTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partition_indexes = vec![0];
                let mut request = OffsetFetchRequest::default();
                request.group_id = GroupId(s("billing"));
                request.topics = Some(vec![topic]);
                let r: OffsetFetchResponse = call(b, ApiKey::OffsetFetch, 5, &request);
                let partitions = r.topics.iter().flat_map(|t| &t.partitions);
                if r.error_code == 0 {
                    let p = partitions.clone().next().unwrap();
                    assert!(p.error_code != 0 || p.committed_offset == 1);
                }
                first_error(
                    [r.error_code]
                        .into_iter()
                        .chain(partitions.map(|p| p.error_code)),
                )
            },
        },
        Row {
            api: "OffsetFetch v1",
            needs: vec![
                (Group, "billing", Describe, GROUP),
                (Topic, "orders", Describe, TOPIC),
            ],
            granted: 0,
            send: |b| {
                let mut topic = OffsetFetchRequestTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partition_indexes = vec![0];
                let mut request = OffsetFetchRequest::default();
                request.group_id = GroupId(s("billing"));
                request.topics = Some(vec![topic]);
                let r: OffsetFetchResponse = call(b, ApiKey::OffsetFetch, 1, &request);
                r.topics[0].partitions[0].error_code
            },
        },
        Row {
            api: "DescribeGroups",
            needs: vec![(Group, "billing", Describe, GROUP)],
            granted: 0,
            send: |b| {
                let mut request = DescribeGroupsRequest::default();
                request.groups = vec![GroupId(s("billing"))];
                let r: DescribeGroupsResponse = call(b, ApiKey::DescribeGroups, 4, &request);
                r.groups[0].error_code
            },
        },
        Row {
            api: "DeleteGroups",
            needs: vec![(Group, "billing", Delete, GROUP)],
            granted: 0,
            send: |b| {
                let mut request = DeleteGroupsRequest::default();
                request.groups_names = vec![GroupId(s("billing"))];
                let r: DeleteGroupsResponse = call(b, ApiKey::DeleteGroups, 1, &request);
                r.results[0].error_code
            },
        },
        Row {
            api: "OffsetDelete",
            needs: vec![
                (Group, "billing", Delete, GROUP),
                (Topic, "orders", Read, TOPIC),
            ],
            granted: 0,
            send: |b| {
                let mut partition = OffsetDeleteRequestPartition::default();
                partition.partition_index = 0;
                let mut topic = OffsetDeleteRequestTopic::default();
                topic.name = TopicName(s("orders"));
                topic.partitions = vec![partition];
                let mut request = OffsetDeleteRequest::default();
                request.group_id = GroupId(s("billing"));
                request.topics = vec![topic];
                let r: OffsetDeleteResponse = call(b, ApiKey::OffsetDelete, 0, &request);
                first_error(
                    [r.error_code].into_iter().chain(
                        r.topics
                            .iter()
                            .flat_map(|t| &t.partitions)
                            .map(|p| p.error_code),
                    ),
                )
            },
        },
        Row {
            api: "DescribeAcls",
            needs: vec![(Cluster, CLUSTER_NAME, Describe, CLUSTER)],
            granted: 0,
            send: |b| describe_acls(b, &AclFilter::all()).0,
        },
        Row {
            api: "CreateAcls",
            needs: vec![(Cluster, CLUSTER_NAME, Alter, CLUSTER)],
            granted: 0,
            send: |b| {
                let mut request = CreateAclsRequest::default();
                request.creations = vec![creation(2, "other", 3, "User:bob", 3, 3)];
                let r: CreateAclsResponse = call(b, ApiKey::CreateAcls, 3, &request);
                r.results[0].error_code
            },
        },
        Row {
            api: "DeleteAcls",
            needs: vec![(Cluster, CLUSTER_NAME, Alter, CLUSTER)],
            granted: 0,
            send: |b| {
                let mut filter = match_all_filter();
                filter.principal_filter = Some(s("User:bob"));
                delete_acls(b, vec![filter])[0].0
            },
        },
        Row {
            api: "DescribeUserScramCredentials",
            needs: vec![(Cluster, CLUSTER_NAME, Describe, CLUSTER)],
            granted: 0,
            send: |b| {
                let request = DescribeUserScramCredentialsRequest::default();
                let r: DescribeUserScramCredentialsResponse =
                    call(b, ApiKey::DescribeUserScramCredentials, 0, &request);
                r.error_code
            },
        },
        Row {
            api: "AlterUserScramCredentials",
            needs: vec![(Cluster, CLUSTER_NAME, Alter, CLUSTER)],
            granted: 0,
            send: |b| {
                let mut upsert = ScramCredentialUpsertion::default();
                upsert.name = s("carol");
                upsert.mechanism = 1;
                upsert.iterations = 4096;
                upsert.salt = Bytes::from_static(b"0123456789abcdef");
                upsert.salted_password = Bytes::from_static(&[7; 32]);
                let mut request = AlterUserScramCredentialsRequest::default();
                request.upsertions = vec![upsert];
                let r: AlterUserScramCredentialsResponse =
                    call(b, ApiKey::AlterUserScramCredentials, 0, &request);
                r.results[0].error_code
            },
        },
    ]
}

fn metadata(b: &Broker, name: &str, auto_create: bool) -> i16 {
    let mut topic = MetadataRequestTopic::default();
    topic.name = Some(TopicName(s(name)));
    let mut request = MetadataRequest::default();
    request.topics = Some(vec![topic]);
    request.allow_auto_topic_creation = auto_create;
    let r: MetadataResponse = call(b, ApiKey::Metadata, 4, &request);
    let topic = &r.topics[0];
    assert!(topic.error_code != 0 || !topic.partitions.is_empty());
    topic.error_code
}

fn alter_config(b: &Broker, resource_type: i8, name: &str, config: &str, value: &str) -> i16 {
    let mut change = incremental_alter_configs_request::AlterableConfig::default();
    change.name = s(config);
    change.value = Some(s(value));
    let mut resource = incremental_alter_configs_request::AlterConfigsResource::default();
    resource.resource_type = resource_type;
    resource.resource_name = s(name);
    resource.configs = vec![change];
    let mut request = IncrementalAlterConfigsRequest::default();
    request.resources = vec![resource];
    let r: IncrementalAlterConfigsResponse = call(b, ApiKey::IncrementalAlterConfigs, 1, &request);
    r.responses[0].error_code
}

fn describe_configs(b: &Broker, resource_type: i8, name: &str) -> i16 {
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = resource_type;
    resource.resource_name = s(name);
    let mut request = DescribeConfigsRequest::default();
    request.resources = vec![resource];
    let r: DescribeConfigsResponse = call(b, ApiKey::DescribeConfigs, 3, &request);
    r.results[0].error_code
}

fn init_producer_id(b: &Broker) -> i16 {
    let mut request = InitProducerIdRequest::default();
    request.transactional_id = None;
    request.transaction_timeout_ms = -1;
    request.producer_id = ProducerId(-1);
    request.producer_epoch = -1;
    let r: InitProducerIdResponse = call(b, ApiKey::InitProducerId, 4, &request);
    assert_eq!(r.error_code == 0, r.producer_id.0 >= 0);
    r.error_code
}

fn creation(
    resource_type: i8,
    name: &str,
    pattern_type: i8,
    principal: &str,
    operation: i8,
    permission: i8,
) -> AclCreation {
    let mut c = AclCreation::default();
    c.resource_type = resource_type;
    c.resource_name = s(name);
    c.resource_pattern_type = pattern_type;
    c.principal = s(principal);
    c.host = s("*");
    c.operation = operation;
    c.permission_type = permission;
    c
}

fn match_all_filter() -> DeleteAclsFilter {
    let mut f = DeleteAclsFilter::default();
    f.resource_name_filter = None;
    f.principal_filter = None;
    f.host_filter = None;
    f.resource_type_filter = 1;
    f.pattern_type_filter = 1;
    f.operation = 1;
    f.permission_type = 1;
    f
}

/// An ACL as DescribeAcls lists it: type, name, pattern, principal, operation, permission.
type Listed = (i8, String, i8, String, i8, i8);

/// DescribeAcls v3: the error code and every ACL listed.
fn describe_acls(b: &Broker, filter: &AclFilter) -> (i16, Vec<Listed>) {
    let mut request = DescribeAclsRequest::default();
    request.resource_type_filter = filter.resource_type.code();
    request.resource_name_filter = filter.resource_name.as_deref().map(s);
    request.pattern_type_filter = filter.pattern_type.code();
    request.principal_filter = filter.principal.as_deref().map(s);
    request.host_filter = filter.host.as_deref().map(s);
    request.operation = filter.operation.code();
    request.permission_type = filter.permission.code();
    let r: DescribeAclsResponse = call(b, ApiKey::DescribeAcls, 3, &request);
    let mut listed = Vec::new();
    for resource in r.resources {
        for acl in resource.acls {
            listed.push((
                resource.resource_type,
                resource.resource_name.to_string(),
                resource.pattern_type,
                acl.principal.to_string(),
                acl.operation,
                acl.permission_type,
            ));
        }
    }
    (r.error_code, listed)
}

/// DeleteAcls v3: per filter, its error code and the names of the bindings it removed.
fn delete_acls(b: &Broker, filters: Vec<DeleteAclsFilter>) -> Vec<(i16, Vec<String>)> {
    let mut request = DeleteAclsRequest::default();
    request.filters = filters;
    let r: DeleteAclsResponse = call(b, ApiKey::DeleteAcls, 3, &request);
    r.filter_results
        .into_iter()
        .map(|f| {
            (
                f.error_code,
                f.matching_acls
                    .iter()
                    .map(|m| format!("{}:{}", m.principal.as_str(), m.resource_name.as_str()))
                    .collect(),
            )
        })
        .collect()
}

fn grant(authorizer: &Authorizer, needs: &[Need]) {
    let acls: Vec<AclBinding> = needs
        .iter()
        .map(|(rt, name, op, _)| acl(*rt, name, *op, Permission::Allow))
        .collect();
    authorizer.create(&acls).unwrap();
}

#[test]
fn every_api_needs_its_acls_and_a_deny_wins() {
    for row in table() {
        // Everything it needs: allowed.
        let full = setup(AuthorizerConfig::default());
        grant(&full.authorizer, &row.needs);
        assert_eq!(
            (row.send)(&full.broker),
            row.granted,
            "{} with its ACLs",
            row.api
        );

        for (missing, need) in row.needs.iter().enumerate() {
            // All but one need: that need's error.
            let partial = setup(AuthorizerConfig::default());
            let others: Vec<Need> = row
                .needs
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != missing)
                .map(|(_, n)| *n)
                .collect();
            grant(&partial.authorizer, &others);
            assert_eq!(
                (row.send)(&partial.broker),
                need.3,
                "{} without {:?} {} on {}",
                row.api,
                need.2,
                need.1,
                need.0
            );

            // Everything, and a DENY of that need next to its ALLOW.
            let denied = setup(AuthorizerConfig::default());
            grant(&denied.authorizer, &row.needs);
            let (rt, name, op, code) = *need;
            denied
                .authorizer
                .create(&[acl(rt, name, op, Permission::Deny)])
                .unwrap();
            assert_eq!(
                (row.send)(&denied.broker),
                code,
                "{} with {:?} on {name} denied next to its allow",
                row.api,
                op
            );
        }
    }
}

#[test]
fn cluster_create_covers_every_topic_and_write_on_any_topic_gets_a_producer_id() {
    let setup = setup(AuthorizerConfig::default());
    assert_eq!(init_producer_id(&setup.broker), CLUSTER);
    setup
        .authorizer
        .create(&[
            acl(
                ResourceType::Cluster,
                CLUSTER_NAME,
                Operation::Create,
                Permission::Allow,
            ),
            acl(
                ResourceType::Topic,
                "*",
                Operation::Describe,
                Permission::Allow,
            ),
            AclBinding {
                pattern_type: PatternType::Prefixed,
                ..acl(
                    ResourceType::Topic,
                    "out.",
                    Operation::Write,
                    Permission::Allow,
                )
            },
        ])
        .unwrap();
    assert_eq!(init_producer_id(&setup.broker), 0, "WRITE on topics out.*");
    assert_eq!(metadata(&setup.broker, "made-by-metadata", true), 0);
    assert!(
        setup
            .broker
            .log()
            .list_topics()
            .contains(&"made-by-metadata".to_owned())
    );
}

#[test]
fn listings_leave_out_what_the_principal_may_not_describe() {
    let setup = setup(AuthorizerConfig::default());
    for name in ["visible", "hidden"] {
        setup
            .broker
            .log()
            .create_topic(name, TopicConfig::default())
            .unwrap();
        let commit = OffsetCommit {
            topic: "orders".into(),
            partition: 0,
            offset: 0,
            metadata: String::new(),
        };
        setup
            .broker
            .log()
            .offsets()
            .commit(name, &[commit], 0)
            .unwrap();
    }
    setup
        .authorizer
        .create(&[
            acl(
                ResourceType::Topic,
                "visible",
                Operation::Read,
                Permission::Allow,
            ),
            acl(
                ResourceType::Group,
                "visible",
                Operation::Describe,
                Permission::Allow,
            ),
        ])
        .unwrap();
    let mut every_topic = MetadataRequest::default();
    every_topic.topics = None;
    let all: MetadataResponse = call(&setup.broker, ApiKey::Metadata, 4, &every_topic);
    let names: Vec<String> = all
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        ["visible"],
        "READ implies DESCRIBE; the others are left out"
    );
    let groups: ListGroupsResponse = call(
        &setup.broker,
        ApiKey::ListGroups,
        2,
        &ListGroupsRequest::default(),
    );
    assert_eq!(groups.error_code, 0, "ListGroups never fails");
    let ids: Vec<String> = groups
        .groups
        .iter()
        .map(|g| g.group_id.to_string())
        .collect();
    assert_eq!(ids, ["visible"]);
    // DESCRIBE on the cluster lists them all.
    setup
        .authorizer
        .create(&[acl(
            ResourceType::Cluster,
            CLUSTER_NAME,
            Operation::Describe,
            Permission::Allow,
        )])
        .unwrap();
    let groups: ListGroupsResponse = call(
        &setup.broker,
        ApiKey::ListGroups,
        2,
        &ListGroupsRequest::default(),
    );
    assert_eq!(groups.groups.len(), 3);
}

#[test]
fn a_pattern_subscription_gets_only_the_topics_its_member_may_describe() {
    let setup = setup(AuthorizerConfig::default());
    for name in ["jobs-visible", "jobs-hidden"] {
        setup
            .broker
            .log()
            .create_topic(name, TopicConfig::default())
            .unwrap();
    }
    setup
        .authorizer
        .create(&[
            acl(ResourceType::Group, "k", Operation::Read, Permission::Allow),
            acl(
                ResourceType::Topic,
                "jobs-visible",
                Operation::Describe,
                Permission::Allow,
            ),
        ])
        .unwrap();
    let mut request = ConsumerGroupHeartbeatRequest::default();
    request.group_id = GroupId(s("k"));
    request.member_id = s("member-1");
    request.rebalance_timeout_ms = 30_000;
    request.subscribed_topic_regex = Some(s("jobs-.*"));
    request.topic_partitions = Some(Vec::new());
    let r: ConsumerGroupHeartbeatResponse =
        call(&setup.broker, ApiKey::ConsumerGroupHeartbeat, 1, &request);
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let log = setup.broker.log();
    let described = log.describe_consumer_group("k").unwrap();
    let subscribed: Vec<&str> = described.members[0]
        .subscribed
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(subscribed, ["jobs-visible"], "the hidden topic is left out");
    let assigned: Vec<&String> = described.members[0].assigned.keys().collect();
    assert_eq!(assigned, ["jobs-visible"]);
}

#[test]
fn the_acl_apis_store_list_and_delete_and_refuse_bad_input_with_kafkas_codes() {
    let setup = setup(AuthorizerConfig {
        super_users: vec![ME.into()],
        allow_everyone_if_no_acl_found: false,
    });
    let b = &setup.broker;
    let mut request = CreateAclsRequest::default();
    request.creations = vec![
        creation(2, "orders", 3, "User:billing", 3, 3), // READ orders
        creation(2, "orders.retry.", 4, "User:billing", 4, 3), // WRITE orders.retry.*
        creation(3, "billing", 3, "User:billing", 3, 3), // READ group billing
        creation(9, "orders", 3, "User:billing", 3, 3), // unknown resource type
        creation(2, "orders", 3, "User:billing", 42, 3), // unknown operation
        creation(2, "", 4, "User:billing", 3, 3),       // PREFIXED with no name
        creation(2, "orders", 1, "User:billing", 3, 3), // pattern ANY in a binding
        creation(4, "my-cluster", 3, "User:billing", 7, 3), // CLUSTER not kafka-cluster
        creation(2, "orders", 3, "billing", 3, 3),      // principal without a type
    ];
    let response: CreateAclsResponse = call(b, ApiKey::CreateAcls, 1, &request);
    let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, [0, 0, 0, 42, 42, 42, 42, 42, 42]);
    let message = |i: usize| {
        response.results[i]
            .error_message
            .as_deref()
            .unwrap()
            .to_owned()
    };
    assert_eq!(message(3), "invalid resourceType 9");
    assert_eq!(message(5), "resource name should not be empty");

    let (code, listed) = describe_acls(b, &AclFilter::all());
    assert_eq!(code, 0);
    assert_eq!(listed.len(), 3);
    let prefixed_match = AclFilter {
        resource_type: ResourceType::Topic,
        resource_name: Some("orders.retry.10s".into()),
        pattern_type: PatternType::Match,
        ..AclFilter::all()
    };
    let (_, matched) = describe_acls(b, &prefixed_match);
    assert_eq!(
        matched,
        [(2, "orders.retry.".into(), 4, "User:billing".into(), 4, 3)]
    );
    // An unknown code in a filter.
    let mut bad = DescribeAclsRequest::default();
    bad.resource_type_filter = 0;
    bad.pattern_type_filter = 1;
    bad.operation = 1;
    bad.permission_type = 1;
    let r: DescribeAclsResponse = call(b, ApiKey::DescribeAcls, 2, &bad);
    assert_eq!(r.error_code, 42);

    // Each binding is reported under the first filter that matches it.
    let mut group_filter = match_all_filter();
    group_filter.resource_type_filter = 3;
    let mut invalid = match_all_filter();
    invalid.operation = 0;
    let results = delete_acls(b, vec![group_filter, invalid, match_all_filter()]);
    assert_eq!(results[0], (0, vec!["User:billing:billing".to_owned()]));
    assert_eq!(results[1].0, 42);
    assert_eq!(results[2].1.len(), 2);
    assert!(setup.authorizer.is_empty());
}

#[test]
fn a_match_everything_delete_without_alter_is_refused_and_removes_nothing() {
    let setup = setup(AuthorizerConfig::default());
    setup
        .authorizer
        .create(&[acl(
            ResourceType::Topic,
            "orders",
            Operation::All,
            Permission::Allow,
        )])
        .unwrap();
    let results = delete_acls(&setup.broker, vec![match_all_filter()]);
    assert_eq!(results, [(CLUSTER, vec![])]);
    assert_eq!(setup.authorizer.len(), 1);
}

#[test]
fn without_an_authorizer_everything_is_allowed_and_the_acl_apis_say_security_is_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        auto_create_topics: true,
        ..Config::default()
    };
    let broker = Broker::new(
        Log::open(dir.path(), config).unwrap(),
        BrokerConfig::default(),
    );
    assert_eq!(metadata(&broker, "auto", true), 0);
    assert_eq!(init_producer_id(&broker), 0);
    assert_eq!(describe_acls(&broker, &AclFilter::all()).0, 54);
    assert_eq!(delete_acls(&broker, vec![match_all_filter()])[0].0, 54);
}
