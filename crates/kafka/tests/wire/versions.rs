//! Every (API, version) logd advertises in ApiVersions is served: a request of that version,
//! as `kafka-protocol` encodes it, sent over a real connection, gets a response that decodes at
//! that version with nothing left over. The table below must name every advertised API, so a
//! version advertised but not handled fails here.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd::{Config, Log};
use logd_kafka::{Broker, BrokerConfig, SUPPORTED};
use logd_protocol::share_versions;

/// A broker over a fresh engine with topic `t`, served in process; its address.
fn serve(dir: &std::path::Path) -> String {
    let log = Log::open(dir, Config::default()).unwrap();
    log.create_topic("t", logd::TopicConfig::default()).unwrap();
    crate::served::serve(Arc::new(Broker::new(log, BrokerConfig::default())))
}

/// A request of each API logd serves, with what its handler needs to answer at once (a
/// produce that wants an answer, a fetch that does not wait).
fn request(key: ApiKey) -> Option<RequestKind> {
    let t = || TopicName(StrBytes::from_static_str("t"));
    Some(match key {
        ApiKey::Produce => {
            let mut r = ProduceRequest::default();
            r.acks = -1;
            RequestKind::Produce(r)
        }
        ApiKey::Fetch => {
            let mut r = FetchRequest::default();
            r.replica_id = BrokerId(-1);
            r.max_wait_ms = 0;
            RequestKind::Fetch(r)
        }
        ApiKey::ListOffsets => RequestKind::ListOffsets(ListOffsetsRequest::default()),
        ApiKey::Metadata => {
            let mut topic = metadata_request::MetadataRequestTopic::default();
            topic.name = Some(t());
            let mut r = MetadataRequest::default();
            r.topics = Some(vec![topic]);
            RequestKind::Metadata(r)
        }
        ApiKey::ApiVersions => RequestKind::ApiVersions(ApiVersionsRequest::default()),
        ApiKey::CreateTopics => RequestKind::CreateTopics(CreateTopicsRequest::default()),
        ApiKey::DeleteTopics => RequestKind::DeleteTopics(DeleteTopicsRequest::default()),
        ApiKey::CreatePartitions => {
            let mut topic = create_partitions_request::CreatePartitionsTopic::default();
            topic.name = t();
            topic.count = 1;
            let mut r = CreatePartitionsRequest::default();
            r.topics = vec![topic];
            RequestKind::CreatePartitions(r)
        }
        ApiKey::InitProducerId => {
            let mut r = InitProducerIdRequest::default();
            r.transactional_id = None;
            RequestKind::InitProducerId(r)
        }
        ApiKey::AddPartitionsToTxn => {
            RequestKind::AddPartitionsToTxn(AddPartitionsToTxnRequest::default())
        }
        ApiKey::AddOffsetsToTxn => RequestKind::AddOffsetsToTxn(AddOffsetsToTxnRequest::default()),
        ApiKey::EndTxn => RequestKind::EndTxn(EndTxnRequest::default()),
        ApiKey::TxnOffsetCommit => RequestKind::TxnOffsetCommit(TxnOffsetCommitRequest::default()),
        ApiKey::DescribeTransactions => {
            let mut r = DescribeTransactionsRequest::default();
            r.transactional_ids = vec![TransactionalId(StrBytes::from_static_str("x"))];
            RequestKind::DescribeTransactions(r)
        }
        ApiKey::WriteTxnMarkers => RequestKind::WriteTxnMarkers(WriteTxnMarkersRequest::default()),
        ApiKey::ListTransactions => {
            RequestKind::ListTransactions(ListTransactionsRequest::default())
        }
        ApiKey::DescribeConfigs => RequestKind::DescribeConfigs(DescribeConfigsRequest::default()),
        ApiKey::FindCoordinator => RequestKind::FindCoordinator(FindCoordinatorRequest::default()),
        ApiKey::JoinGroup => RequestKind::JoinGroup(JoinGroupRequest::default()),
        ApiKey::SyncGroup => RequestKind::SyncGroup(SyncGroupRequest::default()),
        ApiKey::Heartbeat => RequestKind::Heartbeat(HeartbeatRequest::default()),
        ApiKey::LeaveGroup => RequestKind::LeaveGroup(LeaveGroupRequest::default()),
        ApiKey::OffsetCommit => RequestKind::OffsetCommit(OffsetCommitRequest::default()),
        ApiKey::OffsetFetch => RequestKind::OffsetFetch(OffsetFetchRequest::default()),
        ApiKey::ListGroups => RequestKind::ListGroups(ListGroupsRequest::default()),
        ApiKey::DescribeGroups => RequestKind::DescribeGroups(DescribeGroupsRequest::default()),
        ApiKey::DeleteGroups => RequestKind::DeleteGroups(DeleteGroupsRequest::default()),
        ApiKey::OffsetDelete => RequestKind::OffsetDelete(OffsetDeleteRequest::default()),
        ApiKey::DescribeLogDirs => RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default()),
        ApiKey::DescribeProducers => {
            RequestKind::DescribeProducers(DescribeProducersRequest::default())
        }
        ApiKey::DescribeCluster => RequestKind::DescribeCluster(DescribeClusterRequest::default()),
        ApiKey::DescribeTopicPartitions => {
            let mut topic = describe_topic_partitions_request::TopicRequest::default();
            topic.name = t();
            let mut cursor = describe_topic_partitions_request::Cursor::default();
            cursor.topic_name = t();
            let mut r = DescribeTopicPartitionsRequest::default();
            r.topics = vec![topic];
            r.response_partition_limit = 10;
            r.cursor = Some(cursor);
            RequestKind::DescribeTopicPartitions(r)
        }
        ApiKey::DeleteRecords => {
            let mut partition = delete_records_request::DeleteRecordsPartition::default();
            partition.offset = -1;
            let mut topic = delete_records_request::DeleteRecordsTopic::default();
            topic.name = t();
            topic.partitions = vec![partition];
            let mut r = DeleteRecordsRequest::default();
            r.topics = vec![topic];
            RequestKind::DeleteRecords(r)
        }
        ApiKey::OffsetForLeaderEpoch => {
            let mut partition =
                offset_for_leader_epoch_request::OffsetForLeaderPartition::default();
            partition.current_leader_epoch = -1;
            let mut topic = offset_for_leader_epoch_request::OffsetForLeaderTopic::default();
            topic.topic = t();
            topic.partitions = vec![partition];
            let mut r = OffsetForLeaderEpochRequest::default();
            r.replica_id = BrokerId(-1);
            r.topics = vec![topic];
            RequestKind::OffsetForLeaderEpoch(r)
        }
        ApiKey::ConsumerGroupHeartbeat => {
            let mut r = ConsumerGroupHeartbeatRequest::default();
            r.group_id = GroupId(StrBytes::from_static_str("g"));
            r.member_id = StrBytes::from_static_str("m");
            r.rebalance_timeout_ms = 30_000;
            r.subscribed_topic_names = Some(vec![t()]);
            r.topic_partitions = Some(Vec::new());
            RequestKind::ConsumerGroupHeartbeat(r)
        }
        ApiKey::ShareGroupHeartbeat => {
            let mut r = ShareGroupHeartbeatRequest::default();
            r.group_id = GroupId(StrBytes::from_static_str("g"));
            r.member_id = StrBytes::from_static_str("m");
            r.subscribed_topic_names = Some(vec![t()]);
            RequestKind::ShareGroupHeartbeat(r)
        }
        ApiKey::ConsumerGroupDescribe => {
            let mut r = ConsumerGroupDescribeRequest::default();
            r.group_ids = vec![GroupId(StrBytes::from_static_str("g"))];
            RequestKind::ConsumerGroupDescribe(r)
        }
        ApiKey::ShareGroupDescribe => {
            let mut r = ShareGroupDescribeRequest::default();
            r.group_ids = vec![GroupId(StrBytes::from_static_str("g"))];
            RequestKind::ShareGroupDescribe(r)
        }
        ApiKey::DescribeShareGroupOffsets => {
            let mut group =
                describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default();
            group.group_id = GroupId(StrBytes::from_static_str("g"));
            let mut r = DescribeShareGroupOffsetsRequest::default();
            r.groups = vec![group];
            RequestKind::DescribeShareGroupOffsets(r)
        }
        ApiKey::AlterShareGroupOffsets => {
            let mut r = AlterShareGroupOffsetsRequest::default();
            r.group_id = GroupId(StrBytes::from_static_str("g"));
            RequestKind::AlterShareGroupOffsets(r)
        }
        ApiKey::DeleteShareGroupOffsets => {
            let mut r = DeleteShareGroupOffsetsRequest::default();
            r.group_id = GroupId(StrBytes::from_static_str("g"));
            RequestKind::DeleteShareGroupOffsets(r)
        }
        ApiKey::ShareFetch => {
            let mut r = ShareFetchRequest::default();
            r.group_id = Some(GroupId(StrBytes::from_static_str("g")));
            r.member_id = Some(StrBytes::from_static_str("m"));
            r.max_records = 10;
            r.max_bytes = 1 << 20;
            RequestKind::ShareFetch(r)
        }
        ApiKey::ShareAcknowledge => {
            let mut r = ShareAcknowledgeRequest::default();
            r.group_id = Some(GroupId(StrBytes::from_static_str("g")));
            r.member_id = Some(StrBytes::from_static_str("m"));
            r.share_session_epoch = -1;
            RequestKind::ShareAcknowledge(r)
        }
        ApiKey::SaslHandshake => RequestKind::SaslHandshake(SaslHandshakeRequest::default()),
        ApiKey::SaslAuthenticate => {
            RequestKind::SaslAuthenticate(SaslAuthenticateRequest::default())
        }
        ApiKey::DescribeUserScramCredentials => {
            RequestKind::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest::default())
        }
        ApiKey::AlterUserScramCredentials => {
            RequestKind::AlterUserScramCredentials(AlterUserScramCredentialsRequest::default())
        }
        ApiKey::DescribeAcls => RequestKind::DescribeAcls(DescribeAclsRequest::default()),
        ApiKey::CreateAcls => RequestKind::CreateAcls(CreateAclsRequest::default()),
        ApiKey::DeleteAcls => RequestKind::DeleteAcls(DeleteAclsRequest::default()),
        ApiKey::AlterConfigs => {
            let mut config = alter_configs_request::AlterableConfig::default();
            config.name = StrBytes::from_static_str("retention.ms");
            config.value = Some(StrBytes::from_static_str("3600000"));
            let mut resource = alter_configs_request::AlterConfigsResource::default();
            resource.resource_type = 2;
            resource.resource_name = StrBytes::from_static_str("t");
            resource.configs = vec![config];
            let mut r = AlterConfigsRequest::default();
            r.resources = vec![resource];
            RequestKind::AlterConfigs(r)
        }
        ApiKey::IncrementalAlterConfigs => {
            RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default())
        }
        ApiKey::DescribeClientQuotas => {
            let mut component = describe_client_quotas_request::ComponentData::default();
            component.entity_type = StrBytes::from_static_str("user");
            component.match_type = 2;
            let mut r = DescribeClientQuotasRequest::default();
            r.components = vec![component];
            RequestKind::DescribeClientQuotas(r)
        }
        ApiKey::AlterClientQuotas => {
            let mut entity = alter_client_quotas_request::EntityData::default();
            entity.entity_type = StrBytes::from_static_str("client-id");
            let mut op = alter_client_quotas_request::OpData::default();
            op.key = StrBytes::from_static_str("producer_byte_rate");
            op.value = 1048576.0;
            let mut entry = alter_client_quotas_request::EntryData::default();
            entry.entity = vec![entity];
            entry.ops = vec![op];
            let mut r = AlterClientQuotasRequest::default();
            r.entries = vec![entry];
            r.validate_only = true;
            RequestKind::AlterClientQuotas(r)
        }
        _ => return None,
    })
}

/// Sends `request` at `version` on `stream` and returns the response body.
fn exchange(stream: &mut TcpStream, key: ApiKey, version: i16, request: &RequestKind) -> BytesMut {
    let mut header = RequestHeader::default();
    header.request_api_key = key as i16;
    header.request_api_version = version;
    header.correlation_id = i32::from(version) * 100 + key as i32;
    header.client_id = Some(StrBytes::from_static_str("versions"));
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, key.request_header_version(version))
        .unwrap();
    // The share versions `kafka-protocol` lacks are logd's own codec's.
    match share_versions::encode_request(request, version, &mut frame) {
        Some(encoded) => encoded.unwrap(),
        None => request.encode(&mut frame, version).unwrap(),
    }
    stream
        .write_all(&(frame.len() as i32).to_be_bytes())
        .unwrap();
    stream.write_all(&frame).unwrap();
    let mut size = [0u8; 4];
    stream
        .read_exact(&mut size)
        .unwrap_or_else(|e| panic!("{key:?} v{version}: no response ({e})"));
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).unwrap();
    let mut body = BytesMut::from(&body[..]);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, i32::from(version) * 100 + key as i32);
    body
}

#[test]
fn every_advertised_version_is_answered_in_that_version() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path());
    let mut answered = 0;
    for (key, min, max) in SUPPORTED {
        let request =
            request(*key).unwrap_or_else(|| panic!("{key:?} is advertised but not tested here"));
        for version in *min..=*max {
            // A connection per request: a SASL request on a listener without SASL is answered
            // and then closed, as Kafka does.
            let mut stream = TcpStream::connect(&addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut body = exchange(&mut stream, *key, version, &request).freeze();
            let decoded = match share_versions::decode_response(*key, version, &mut body) {
                Some(decoded) => decoded.map_err(|e| e.to_string()),
                None => ResponseKind::decode(*key, &mut body, version).map_err(|e| e.to_string()),
            };
            assert!(decoded.is_ok(), "{key:?} v{version}: {decoded:?}");
            assert!(
                !body.has_remaining(),
                "{key:?} v{version}: {} bytes after the response",
                body.remaining()
            );
            answered += 1;
        }
    }
    assert!(answered > 100, "only {answered} versions");
}

#[test]
fn docs_kafka_apis_lists_every_advertised_range() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/kafka-apis.md"
    ))
    .unwrap();
    let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with("| ")).collect();
    for (key, min, max) in SUPPORTED {
        let range = if min == max {
            format!("{min}")
        } else {
            format!("{min}–{max}")
        };
        let wanted = format!("| {key:?} | {} | {range} |", *key as i16);
        assert!(
            rows.iter().any(|r| r.starts_with(&wanted)),
            "docs/kafka-apis.md lacks `{wanted}`"
        );
    }
    // And nothing more: a row per advertised API, plus the header.
    assert_eq!(rows.len(), SUPPORTED.len() + 1, "rows: {rows:#?}");
}
