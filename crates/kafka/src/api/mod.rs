//! The thin dispatcher: each decoded request goes to the service of its API family, and each
//! service holds only what its APIs need (the engine, the ACL checks, the admin layer, the
//! credentials, the client quotas), so no handler sees the connection machinery or another family's state.
//! Fields a response version does not carry are left at their defaults (the encoder refuses
//! them).

mod acls;
mod cluster;
mod configs;
mod consumer_groups;
mod fetch;
mod group_admin;
mod group_configs;
mod group_offsets;
mod membership;
mod offsets;
mod produce;
mod quotas;
mod share;
mod share_offsets;
mod share_partitions;
mod topic_partitions;
mod topics;
mod txn;
mod users;

use std::sync::Arc;

use kafka_protocol::messages::{
    FetchRequest, FetchResponse, RequestHeader, RequestKind, ResponseKind,
};
use logd_protocol::partition_ranges::{PartitionRangesRequest, PartitionRangesResponse};
use logd_protocol::share_partitions::{SharePartitionsRequest, SharePartitionsResponse};

use crate::admin::Admin;
use crate::auth::Peer;
use crate::auth::credentials::CredentialStore;
use crate::config::BrokerConfig;
use crate::observer::BrokerObserver;
use crate::quota::ClientQuotas;
use crate::versions::api_versions;
use acls::AclsApi;
use cluster::ClusterApi;
use configs::ConfigsApi;
use consumer_groups::ConsumerGroupApi;
use fetch::FetchApi;
use group_admin::GroupAdminApi;
use group_offsets::GroupOffsetsApi;
use membership::MembershipApi;
use offsets::OffsetsApi;
use produce::ProduceApi;
use quotas::QuotasApi;
use share::ShareApi;
use topic_partitions::TopicPartitionsApi;
use topics::TopicsApi;
use txn::TxnApi;
use users::UsersApi;

/// One service per API family.
#[derive(Debug)]
pub(crate) struct Apis {
    produce: ProduceApi,
    fetch: FetchApi,
    offsets: OffsetsApi,
    cluster: ClusterApi,
    topics: TopicsApi,
    configs: ConfigsApi,
    topic_partitions: TopicPartitionsApi,
    membership: MembershipApi,
    group_offsets: GroupOffsetsApi,
    group_admin: GroupAdminApi,
    acls: AclsApi,
    users: UsersApi,
    quotas: QuotasApi,
    share: ShareApi,
    consumer_groups: ConsumerGroupApi,
    txn: TxnApi,
}

impl Apis {
    /// The services of a broker serving `admin`'s engine, checked by its guard.
    pub(crate) fn new(
        config: &BrokerConfig,
        admin: &Admin,
        observer: &Arc<dyn BrokerObserver>,
        credentials: &Arc<CredentialStore>,
        quotas: &Arc<ClientQuotas>,
    ) -> Apis {
        let log = admin.log();
        let guard = admin.guard();
        Apis {
            produce: ProduceApi {
                log: log.clone(),
                guard: guard.clone(),
                observer: observer.clone(),
            },
            fetch: FetchApi {
                log: log.clone(),
                guard: guard.clone(),
                observer: observer.clone(),
            },
            offsets: OffsetsApi {
                log: log.clone(),
                guard: guard.clone(),
            },
            cluster: ClusterApi {
                log: log.clone(),
                guard: guard.clone(),
                admin: admin.clone(),
                node_id: config.node_id,
                cluster_id: config.cluster_id.clone(),
            },
            topics: TopicsApi {
                log: log.clone(),
                guard: guard.clone(),
                admin: admin.clone(),
                node_id: config.node_id,
            },
            configs: ConfigsApi {
                log: log.clone(),
                guard: guard.clone(),
            },
            topic_partitions: TopicPartitionsApi {
                log: log.clone(),
                guard: guard.clone(),
                node_id: config.node_id,
            },
            membership: MembershipApi {
                log: log.clone(),
                guard: guard.clone(),
                node_id: config.node_id,
            },
            group_offsets: GroupOffsetsApi {
                log: log.clone(),
                guard: guard.clone(),
            },
            group_admin: GroupAdminApi {
                log: log.clone(),
                guard: guard.clone(),
                admin: admin.clone(),
            },
            acls: AclsApi {
                guard: guard.clone(),
            },
            users: UsersApi {
                guard: guard.clone(),
                credentials: credentials.clone(),
                super_users: config.super_users.clone(),
            },
            quotas: QuotasApi {
                guard: guard.clone(),
                quotas: quotas.clone(),
            },
            share: ShareApi::new(log.clone(), guard.clone(), config.node_id, observer.clone()),
            consumer_groups: ConsumerGroupApi {
                log: log.clone(),
                guard: guard.clone(),
                ids_issued: Default::default(),
            },
            txn: TxnApi {
                log: log.clone(),
                guard: guard.clone(),
            },
        }
    }

    /// Answers one request; `None` when Kafka sends no response (Produce with acks = 0).
    pub(crate) fn handle(
        &self,
        header: &RequestHeader,
        request: RequestKind,
        version: i16,
        peer: &Peer,
    ) -> Option<ResponseKind> {
        let client_id = header.client_id.as_deref().unwrap_or("");
        Some(match request {
            RequestKind::ApiVersions(request) => {
                if version >= 3 {
                    tracing::info!(
                        client_id,
                        software = &*request.client_software_name,
                        software_version = &*request.client_software_version,
                        "client connected"
                    );
                }
                ResponseKind::ApiVersions(api_versions())
            }
            RequestKind::Metadata(request) => {
                ResponseKind::Metadata(self.cluster.metadata(request, version, peer))
            }
            RequestKind::CreateTopics(request) => {
                ResponseKind::CreateTopics(self.topics.create_topics(request, version, peer))
            }
            RequestKind::DeleteTopics(request) => {
                ResponseKind::DeleteTopics(self.topics.delete_topics(request, version, peer))
            }
            RequestKind::IncrementalAlterConfigs(request) => ResponseKind::IncrementalAlterConfigs(
                self.configs.incremental_alter_configs(request, peer),
            ),
            RequestKind::AlterConfigs(request) => {
                ResponseKind::AlterConfigs(self.configs.alter_configs(request, peer))
            }
            RequestKind::DescribeTopicPartitions(request) => ResponseKind::DescribeTopicPartitions(
                self.topic_partitions
                    .describe_topic_partitions(request, peer),
            ),
            RequestKind::CreatePartitions(request) => {
                ResponseKind::CreatePartitions(self.topics.create_partitions(request, peer))
            }
            RequestKind::InitProducerId(request) => ResponseKind::InitProducerId(
                self.produce
                    .init_producer_id(request, version, peer, &self.txn),
            ),
            RequestKind::AddPartitionsToTxn(request) => ResponseKind::AddPartitionsToTxn(
                self.txn.add_partitions_to_txn(request, version, peer),
            ),
            RequestKind::AddOffsetsToTxn(request) => {
                ResponseKind::AddOffsetsToTxn(self.txn.add_offsets_to_txn(request, version, peer))
            }
            RequestKind::EndTxn(request) => {
                ResponseKind::EndTxn(self.txn.end_txn(request, version, peer))
            }
            RequestKind::TxnOffsetCommit(request) => {
                ResponseKind::TxnOffsetCommit(self.txn.txn_offset_commit(request, version, peer))
            }
            RequestKind::DescribeTransactions(request) => {
                ResponseKind::DescribeTransactions(self.txn.describe_transactions(request, peer))
            }
            RequestKind::ListTransactions(request) => {
                ResponseKind::ListTransactions(self.txn.list_transactions(request, version, peer))
            }
            RequestKind::WriteTxnMarkers(request) => {
                ResponseKind::WriteTxnMarkers(self.txn.write_txn_markers(request, peer))
            }
            RequestKind::DeleteRecords(request) => {
                ResponseKind::DeleteRecords(self.offsets.delete_records(request, peer))
            }
            RequestKind::DescribeProducers(request) => {
                ResponseKind::DescribeProducers(self.produce.describe_producers(request, peer))
            }
            RequestKind::DescribeCluster(request) => {
                ResponseKind::DescribeCluster(self.cluster.describe_cluster(request, peer))
            }
            RequestKind::OffsetForLeaderEpoch(request) => ResponseKind::OffsetForLeaderEpoch(
                self.offsets.offset_for_leader_epoch(request, peer),
            ),
            RequestKind::Produce(request) => {
                return self
                    .produce
                    .produce(request, version, peer)
                    .map(ResponseKind::Produce);
            }
            RequestKind::Fetch(request) => {
                ResponseKind::Fetch(self.fetch.fetch(&request, version, peer))
            }
            RequestKind::ListOffsets(request) => {
                ResponseKind::ListOffsets(self.offsets.list_offsets(request, version, peer))
            }
            RequestKind::DescribeConfigs(request) => {
                ResponseKind::DescribeConfigs(self.configs.describe_configs(request, version, peer))
            }
            RequestKind::DescribeLogDirs(request) => ResponseKind::DescribeLogDirs(
                self.cluster.describe_log_dirs(request, version, peer),
            ),
            RequestKind::FindCoordinator(request) => ResponseKind::FindCoordinator(
                self.membership.find_coordinator(request, version, peer),
            ),
            RequestKind::JoinGroup(request) => ResponseKind::JoinGroup(
                self.membership
                    .join_group(request, version, client_id, peer),
            ),
            RequestKind::SyncGroup(request) => {
                ResponseKind::SyncGroup(self.membership.sync_group(request, version, peer))
            }
            RequestKind::Heartbeat(request) => {
                ResponseKind::Heartbeat(self.membership.heartbeat(request, peer))
            }
            RequestKind::LeaveGroup(request) => {
                ResponseKind::LeaveGroup(self.membership.leave_group(request, version, peer))
            }
            RequestKind::OffsetCommit(request) => {
                ResponseKind::OffsetCommit(self.group_offsets.offset_commit(request, peer))
            }
            RequestKind::OffsetFetch(request) => {
                ResponseKind::OffsetFetch(self.group_offsets.offset_fetch(request, version, peer))
            }
            RequestKind::ListGroups(request) => {
                ResponseKind::ListGroups(self.group_admin.list_groups(request, version, peer))
            }
            RequestKind::DescribeGroups(request) => ResponseKind::DescribeGroups(
                self.group_admin.describe_groups(request, version, peer),
            ),
            RequestKind::DeleteGroups(request) => {
                ResponseKind::DeleteGroups(self.group_admin.delete_groups(request, peer))
            }
            RequestKind::OffsetDelete(request) => {
                ResponseKind::OffsetDelete(self.group_offsets.offset_delete(request, peer))
            }
            RequestKind::DescribeAcls(request) => {
                ResponseKind::DescribeAcls(self.acls.describe_acls(request, peer))
            }
            RequestKind::CreateAcls(request) => {
                ResponseKind::CreateAcls(self.acls.create_acls(request, peer))
            }
            RequestKind::DeleteAcls(request) => {
                ResponseKind::DeleteAcls(self.acls.delete_acls(request, peer))
            }
            RequestKind::DescribeUserScramCredentials(request) => {
                ResponseKind::DescribeUserScramCredentials(
                    self.users.describe_user_scram_credentials(request, peer),
                )
            }
            RequestKind::AlterUserScramCredentials(request) => {
                ResponseKind::AlterUserScramCredentials(
                    self.users.alter_user_scram_credentials(request, peer),
                )
            }
            RequestKind::DescribeClientQuotas(request) => ResponseKind::DescribeClientQuotas(
                self.quotas.describe_client_quotas(request, peer),
            ),
            RequestKind::AlterClientQuotas(request) => {
                ResponseKind::AlterClientQuotas(self.quotas.alter_client_quotas(request, peer))
            }
            RequestKind::ConsumerGroupHeartbeat(request) => ResponseKind::ConsumerGroupHeartbeat(
                self.consumer_groups
                    .consumer_group_heartbeat(request, version, client_id, peer),
            ),
            RequestKind::ConsumerGroupDescribe(request) => ResponseKind::ConsumerGroupDescribe(
                self.consumer_groups
                    .consumer_group_describe(request, version, peer),
            ),
            RequestKind::ShareGroupHeartbeat(request) => ResponseKind::ShareGroupHeartbeat(
                self.share.share_group_heartbeat(request, client_id, peer),
            ),
            RequestKind::ShareGroupDescribe(request) => {
                ResponseKind::ShareGroupDescribe(self.share.share_group_describe(request, peer))
            }
            RequestKind::DescribeShareGroupOffsets(request) => {
                ResponseKind::DescribeShareGroupOffsets(
                    self.share.describe_share_group_offsets(request, peer),
                )
            }
            RequestKind::AlterShareGroupOffsets(request) => ResponseKind::AlterShareGroupOffsets(
                self.share.alter_share_group_offsets(request, peer),
            ),
            RequestKind::DeleteShareGroupOffsets(request) => ResponseKind::DeleteShareGroupOffsets(
                self.share.delete_share_group_offsets(request, peer),
            ),
            RequestKind::ShareFetch(request) => {
                ResponseKind::ShareFetch(self.share.share_fetch(request, peer))
            }
            RequestKind::ShareAcknowledge(request) => {
                ResponseKind::ShareAcknowledge(self.share.share_acknowledge(request, peer))
            }
            other => {
                // The version table admits only the APIs above.
                tracing::error!(api = ?std::mem::discriminant(&other), "request for an API logd does not serve");
                return None;
            }
        })
    }

    /// A fetch answered at its first look, or `None` if it would wait (see
    /// `Broker::respond_without_waiting`).
    pub(crate) fn fetch_without_waiting(
        &self,
        request: &FetchRequest,
        version: i16,
        peer: &Peer,
    ) -> Option<FetchResponse> {
        self.fetch.fetch_without_waiting(request, version, peer)
    }

    /// logd's own DescribePartitionRanges.
    pub(crate) fn partition_ranges(
        &self,
        request: &PartitionRangesRequest,
        peer: &Peer,
    ) -> PartitionRangesResponse {
        self.offsets.partition_ranges(request, peer)
    }

    /// Connection `connection` closed: its share sessions end and their members' records go
    /// back, as Kafka's share session cache does on a disconnect.
    pub(crate) fn connection_closed(&self, connection: u64) {
        self.share.connection_closed(connection);
    }

    /// logd's own DescribeSharePartitions.
    pub(crate) fn share_partitions(
        &self,
        request: &SharePartitionsRequest,
        peer: &Peer,
    ) -> SharePartitionsResponse {
        self.share.share_partitions(request, peer)
    }
}
