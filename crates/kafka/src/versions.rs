//! The API versions logd advertises. Minimums are Kafka 4.0's, never higher: librdkafka before
//! 2.11.1 (Debian's kcat) turns features on only if specific old versions are in range.
//! Maximums are Kafka 4.x's (4.1's where `kafka-protocol` carries them), flexible versions
//! included, each version's semantics implemented (`tests/versions.rs` sends every advertised
//! version over a real connection), except where a newer version needs what logd does not
//! have, where the range stops below it as on a Kafka broker with that feature off:
//! Produce stops at v11 (v12 is KIP-890's transactions v2, v13 comes after it), so do
//! EndTxn at v4 and TxnOffsetCommit at v4 (v5 of each is transaction version 2: clients then
//! use version 1, as they do with Redpanda), AddPartitionsToTxn at v3 (v4+ are broker-only),
//! ListTransactions at v1 (v2's id pattern is a Java regex), and InitProducerId at v5 (v6 is
//! KIP-939's two-phase commit). OffsetCommit and OffsetFetch stop
//! at v9: their v10 (topic ids, Kafka 4.1) is not in `kafka-protocol` 0.18. The newest share
//! versions that crate lacks (ShareFetch and ShareAcknowledge v2, DescribeShareGroupOffsets
//! v1) are logd's own codec (`logd_protocol::share_versions`).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

/// (API, min version, max version) that logd serves.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 11),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 4),
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::WriteTxnMarkers, 1, 1),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 2),
    (ApiKey::ShareAcknowledge, 1, 2),
    (ApiKey::DescribeShareGroupOffsets, 0, 1),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
];

/// The served range of `key`, if logd serves it.
pub(crate) fn range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, min, max)| (*min, *max))
}

/// The ApiVersions answer: every API logd serves with its version range.
pub(crate) fn api_versions() -> ApiVersionsResponse {
    let mut response = ApiVersionsResponse::default();
    response.api_keys = SUPPORTED
        .iter()
        .map(|(key, min, max)| {
            let mut v = ApiVersion::default();
            v.api_key = *key as i16;
            v.min_version = *min;
            v.max_version = *max;
            v
        })
        .collect();
    // logd's own APIs, so a client can tell a logd broker from a Kafka one.
    for (key, version) in [
        (
            logd_protocol::partition_ranges::API_KEY,
            logd_protocol::partition_ranges::VERSION,
        ),
        (
            logd_protocol::share_partitions::API_KEY,
            logd_protocol::share_partitions::VERSION,
        ),
    ] {
        let mut own = ApiVersion::default();
        own.api_key = key;
        own.min_version = version;
        own.max_version = version;
        response.api_keys.push(own);
    }
    response
}
