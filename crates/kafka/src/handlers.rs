//! One handler per API: a decoded request in, a response out, engine calls in between. Fields
//! a response version does not carry are left at their defaults (the encoder refuses them).

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse as ProducersPartitionResponse, ProducerState,
    TopicResponse as ProducersTopicResponse,
};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse};
use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ListOffsetsRequest, ListOffsetsResponse,
    ProduceRequest, ProduceResponse, ProducerId, RequestHeader, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::acl::{CLUSTER_NAME, Operation, ResourceType};
use crate::auth::Peer;
use crate::broker::Broker;
use crate::codes;
use crate::engine_codes;

/// A refused append as a produce answer gives it: the code, the message, and the index of the
/// refused record when one record was the reason. A keyless record on a compacted topic gets
/// Kafka's own words.
fn refusal(error: &logd::Error, topic: &str, partition: i32) -> (i16, Option<String>, Option<i32>) {
    let code = engine_codes::for_engine_error(error);
    match error {
        logd::Error::Storage(logd_storage::Error::KeylessRecord { index, .. }) => (
            code,
            Some(format!(
                "Compacted topic cannot accept message without key in topic partition {topic}-{partition}."
            )),
            i32::try_from(*index).ok(),
        ),
        _ => (code, Some(error.to_string()), None),
    }
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

impl Broker {
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
                ResponseKind::ApiVersions(crate::versions::api_versions())
            }
            RequestKind::Metadata(request) => {
                ResponseKind::Metadata(self.metadata(request, version, peer))
            }
            RequestKind::CreateTopics(request) => {
                ResponseKind::CreateTopics(self.create_topics(request, version, peer))
            }
            RequestKind::DeleteTopics(request) => {
                ResponseKind::DeleteTopics(self.delete_topics(request, version, peer))
            }
            RequestKind::IncrementalAlterConfigs(request) => {
                ResponseKind::IncrementalAlterConfigs(self.incremental_alter_configs(request, peer))
            }
            RequestKind::CreatePartitions(request) => {
                ResponseKind::CreatePartitions(self.create_partitions(request, peer))
            }
            RequestKind::InitProducerId(request) => {
                ResponseKind::InitProducerId(self.init_producer_id(request, peer))
            }
            RequestKind::DescribeProducers(request) => {
                ResponseKind::DescribeProducers(self.describe_producers(request, peer))
            }
            RequestKind::DescribeCluster(request) => {
                ResponseKind::DescribeCluster(self.describe_cluster(request, peer))
            }
            RequestKind::OffsetForLeaderEpoch(request) => {
                ResponseKind::OffsetForLeaderEpoch(self.offset_for_leader_epoch(request, peer))
            }
            RequestKind::Produce(request) => {
                return self
                    .produce(request, version, peer)
                    .map(ResponseKind::Produce);
            }
            RequestKind::Fetch(request) => ResponseKind::Fetch(self.fetch(&request, version, peer)),
            RequestKind::ListOffsets(request) => {
                ResponseKind::ListOffsets(self.list_offsets(request, version, peer))
            }
            RequestKind::DescribeConfigs(request) => {
                ResponseKind::DescribeConfigs(self.describe_configs(request, version, peer))
            }
            RequestKind::DescribeLogDirs(request) => {
                ResponseKind::DescribeLogDirs(self.describe_log_dirs(request, version, peer))
            }
            RequestKind::FindCoordinator(request) => {
                ResponseKind::FindCoordinator(self.find_coordinator(request, version, peer))
            }
            RequestKind::JoinGroup(request) => {
                ResponseKind::JoinGroup(self.join_group(request, version, client_id, peer))
            }
            RequestKind::SyncGroup(request) => {
                ResponseKind::SyncGroup(self.sync_group(request, version, peer))
            }
            RequestKind::Heartbeat(request) => {
                ResponseKind::Heartbeat(self.heartbeat(request, peer))
            }
            RequestKind::LeaveGroup(request) => {
                ResponseKind::LeaveGroup(self.leave_group(request, version, peer))
            }
            RequestKind::OffsetCommit(request) => {
                ResponseKind::OffsetCommit(self.offset_commit(request, peer))
            }
            RequestKind::OffsetFetch(request) => {
                ResponseKind::OffsetFetch(self.offset_fetch(request, version, peer))
            }
            RequestKind::ListGroups(request) => {
                ResponseKind::ListGroups(self.list_groups(request, version, peer))
            }
            RequestKind::DescribeGroups(request) => {
                ResponseKind::DescribeGroups(self.describe_groups(request, version, peer))
            }
            RequestKind::DeleteGroups(request) => {
                ResponseKind::DeleteGroups(self.delete_groups(request, peer))
            }
            RequestKind::OffsetDelete(request) => {
                ResponseKind::OffsetDelete(self.offset_delete(request, peer))
            }
            RequestKind::DescribeAcls(request) => {
                ResponseKind::DescribeAcls(self.describe_acls(request, peer))
            }
            RequestKind::CreateAcls(request) => {
                ResponseKind::CreateAcls(self.create_acls(request, peer))
            }
            RequestKind::DeleteAcls(request) => {
                ResponseKind::DeleteAcls(self.delete_acls(request, peer))
            }
            RequestKind::DescribeUserScramCredentials(request) => {
                ResponseKind::DescribeUserScramCredentials(
                    self.describe_user_scram_credentials(request, peer),
                )
            }
            RequestKind::AlterUserScramCredentials(request) => {
                ResponseKind::AlterUserScramCredentials(
                    self.alter_user_scram_credentials(request, peer),
                )
            }
            other => {
                // The version table admits only the APIs above.
                tracing::error!(api = ?std::mem::discriminant(&other), "request for an API logd does not serve");
                return None;
            }
        })
    }

    fn produce(
        &self,
        request: ProduceRequest,
        version: i16,
        peer: &Peer,
    ) -> Option<ProduceResponse> {
        let acks_valid = matches!(request.acks, -1..=1);
        // A transactional producer needs WRITE on its transactional id too.
        let transaction_refused = request.transactional_id.as_ref().is_some_and(|id| {
            !self.guard().allowed(
                &peer.caller,
                Operation::Write,
                ResourceType::TransactionalId,
                id,
            )
        });
        let mut response = ProduceResponse::default();
        for topic in request.topic_data {
            let mut topic_response = TopicProduceResponse::default();
            let refused = if transaction_refused {
                Some(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            } else if !self.guard().allowed(
                &peer.caller,
                Operation::Write,
                ResourceType::Topic,
                &topic.name.0,
            ) {
                Some(codes::TOPIC_AUTHORIZATION_FAILED)
            } else {
                None
            };
            for data in topic.partition_data {
                let mut partition = PartitionProduceResponse::default();
                partition.index = data.index;
                partition.base_offset = -1;
                let outcome = match (refused, &data.records, acks_valid) {
                    (Some(code), _, _) => Err((code, None, None)),
                    (None, _, false) => Err((codes::INVALID_REQUIRED_ACKS, None, None)),
                    (None, None, true) => Err((codes::CORRUPT_MESSAGE, None, None)),
                    (None, Some(_), true)
                        if request.acks == -1
                            && let Ok(wanted @ 2..) =
                                self.log.min_insync_replicas(&topic.name.0) =>
                    {
                        // A one-broker Kafka's answer: its in-sync set is itself alone.
                        Err((
                            codes::NOT_ENOUGH_REPLICAS,
                            Some(format!(
                                "The size of the current ISR Set(1) is insufficient to satisfy \
                                 the min.isr requirement of {wanted} for partition {}-{}",
                                topic.name.0, data.index
                            )),
                            None,
                        ))
                    }
                    (None, Some(records), true) => {
                        // One copy: the batches' base offsets are rewritten in place.
                        let mut batches = records.to_vec();
                        let partition_index = u32::try_from(data.index).unwrap_or(u32::MAX);
                        self.log
                            .append(&topic.name.0, partition_index, &mut batches)
                            .map_err(|e| refusal(&e, &topic.name.0, data.index))
                    }
                };
                match outcome {
                    Ok(info) => {
                        // A duplicate answers with the original offsets, as Kafka does.
                        partition.base_offset = info.base_offset.0;
                        let records = (info.last_offset.0 - info.base_offset.0 + 1).max(0);
                        let bytes = data.records.as_ref().map_or(0, |r| r.len());
                        // Duplicates are counted by the engine, per topic.
                        if !info.duplicate {
                            self.observer
                                .produced(&topic.name.0, records as u64, bytes as u64);
                        }
                        if info.normalized > 0 {
                            self.observer
                                .batches_normalized(&topic.name.0, info.normalized as u64);
                        }
                        partition.log_append_time_ms = info.log_append_time.unwrap_or(-1);
                        if version >= 5
                            && let Ok(log) = self.log.partition(&topic.name.0, data.index as u32)
                        {
                            partition.log_start_offset = log.log_start_offset().0;
                        }
                    }
                    Err((code, message, record)) => {
                        partition.error_code = code;
                        // v8+ says why (KIP-467), as Kafka does for a batch it refuses, and
                        // which record was refused.
                        if version >= 8 {
                            partition.error_message = message.map(StrBytes::from_string);
                            if let Some(index) = record {
                                let mut refused = BatchIndexAndErrorMessage::default();
                                refused.batch_index = index;
                                partition.record_errors = vec![refused];
                            }
                        }
                    }
                }
                topic_response.partition_responses.push(partition);
            }
            topic_response.name = topic.name;
            response.responses.push(topic_response);
        }
        // acks = 0: the client expects no response at all.
        (request.acks != 0).then_some(response)
    }

    /// A fresh producer id with epoch 0. Without a transactional id Kafka hands out a new id
    /// whatever the request carries (KIP-360's current id and epoch, v3+, matter only to
    /// transactional producers), so every version is answered alike.
    ///
    /// Needs IDEMPOTENT_WRITE on the cluster or WRITE on any topic, as Kafka's
    /// `handleInitProducerIdRequest` (and WRITE on the transactional id, for one that has it).
    fn init_producer_id(
        &self,
        request: InitProducerIdRequest,
        peer: &Peer,
    ) -> InitProducerIdResponse {
        let mut response = InitProducerIdResponse::default();
        let refused = match &request.transactional_id {
            Some(id) => (!self.guard().allowed(
                &peer.caller,
                Operation::Write,
                ResourceType::TransactionalId,
                id,
            ))
            .then_some(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            None => {
                let allowed = self.guard().allows(
                    &peer.caller,
                    Operation::IdempotentWrite,
                    ResourceType::Cluster,
                    CLUSTER_NAME,
                ) || self.guard().allows_any(&peer.caller, Operation::Write, ResourceType::Topic)
                    // Counted and logged as Kafka words it: IDEMPOTENT_WRITE on the cluster.
                    || self.guard().allowed_on_cluster(&peer.caller, Operation::IdempotentWrite);
                (!allowed).then_some(codes::CLUSTER_AUTHORIZATION_FAILED)
            }
        };
        if let Some(code) = refused {
            response.producer_id = ProducerId(-1);
            response.producer_epoch = -1;
            response.error_code = code;
            return response;
        }
        match self.log.init_producer_id() {
            Ok(id) => {
                response.producer_id = ProducerId(id);
                response.producer_epoch = 0;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot hand out a producer id");
                response.producer_id = ProducerId(-1);
                response.producer_epoch = -1;
                response.error_code = engine_codes::for_engine_error(&e);
            }
        }
        response
    }

    /// The idempotent producers each asked-for partition tracks (Kafka's DescribeProducers,
    /// as `kafka-transactions.sh describe-producers` and the consoles show them).
    fn describe_producers(
        &self,
        request: DescribeProducersRequest,
        peer: &Peer,
    ) -> DescribeProducersResponse {
        let mut response = DescribeProducersResponse::default();
        for topic in request.topics {
            let mut topic_response = ProducersTopicResponse::default();
            let allowed = self.guard().allowed(
                &peer.caller,
                Operation::Read,
                ResourceType::Topic,
                &topic.name.0,
            );
            for index in topic.partition_indexes {
                let mut partition = ProducersPartitionResponse::default();
                partition.partition_index = index;
                if !allowed {
                    partition.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                    topic_response.partitions.push(partition);
                    continue;
                }
                match self
                    .log
                    .partition(&topic.name.0, u32::try_from(index).unwrap_or(u32::MAX))
                {
                    Ok(log) => {
                        partition.active_producers = log
                            .producers()
                            .into_iter()
                            .map(|p| {
                                let mut state = ProducerState::default();
                                state.producer_id = ProducerId(p.producer_id);
                                state.producer_epoch = i32::from(p.epoch);
                                state.last_sequence = p.last_sequence;
                                state.last_timestamp = p.last_timestamp;
                                state.coordinator_epoch = -1;
                                state.current_txn_start_offset = -1;
                                state
                            })
                            .collect();
                    }
                    Err(e) => partition.error_code = engine_codes::for_engine_error(&e),
                }
                topic_response.partitions.push(partition);
            }
            topic_response.name = topic.name;
            response.topics.push(topic_response);
        }
        response
    }

    /// One log directory (the data directory) with the size of each requested partition
    /// (every partition when `topics` is null); unknown topics and partitions are left out, as
    /// Kafka does. Needs DESCRIBE on the cluster: without it the answer is empty before v3
    /// (no error field) and the refusal's code from v3; v4 adds the file system's size and free
    /// space.
    fn describe_log_dirs(
        &self,
        request: DescribeLogDirsRequest,
        version: i16,
        peer: &Peer,
    ) -> DescribeLogDirsResponse {
        if !self
            .guard()
            .allowed_on_cluster(&peer.caller, Operation::Describe)
        {
            let mut refused = DescribeLogDirsResponse::default();
            if version >= 3 {
                refused.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
            }
            return refused;
        }
        let wanted: Vec<(String, Option<Vec<i32>>)> = match request.topics {
            None => self
                .log
                .list_topics()
                .into_iter()
                .map(|t| (t, None))
                .collect(),
            Some(topics) => topics
                .into_iter()
                .map(|t| (t.topic.to_string(), Some(t.partitions)))
                .collect(),
        };
        let mut result = DescribeLogDirsResult::default();
        result.log_dir = StrBytes::from_string(self.log.dir().display().to_string());
        for (name, partitions) in wanted {
            let Ok(count) = self.log.partition_count(&name) else {
                continue;
            };
            let indexes = partitions.unwrap_or_else(|| (0..count as i32).collect());
            let mut topic = DescribeLogDirsTopic::default();
            for index in indexes {
                let Ok(log) = self
                    .log
                    .partition(&name, u32::try_from(index).unwrap_or(u32::MAX))
                else {
                    continue;
                };
                let mut partition = DescribeLogDirsPartition::default();
                partition.partition_index = index;
                partition.partition_size = log.size_bytes() as i64;
                topic.partitions.push(partition);
            }
            topic.name = topic_name(&name);
            result.topics.push(topic);
        }
        if version >= 4 {
            (result.total_bytes, result.usable_bytes) = logd_storage::disk_space(self.log.dir());
        }
        let mut response = DescribeLogDirsResponse::default();
        response.results = vec![result];
        response
    }

    /// ListOffsets v1-10: -2 the log start (and -4, KIP-405's local log start, the same here
    /// without tiered storage), -1 the high watermark (also the last stable offset for
    /// `read_committed`: logd has no transactions), -3 the record with the largest timestamp,
    /// -5 and -6 (tiered storage's) none, a time the first record at or after it; from v4 the
    /// leader epoch is this node's 0, and a client's epoch newer than that is refused.
    fn list_offsets(
        &self,
        request: ListOffsetsRequest,
        version: i16,
        peer: &Peer,
    ) -> ListOffsetsResponse {
        let mut response = ListOffsetsResponse::default();
        for topic in request.topics {
            let mut topic_response = ListOffsetsTopicResponse::default();
            let allowed = self.guard().allowed(
                &peer.caller,
                Operation::Describe,
                ResourceType::Topic,
                &topic.name.0,
            );
            for requested in &topic.partitions {
                let mut partition = ListOffsetsPartitionResponse::default();
                partition.partition_index = requested.partition_index;
                partition.timestamp = -1;
                partition.offset = -1;
                if version >= 4 {
                    partition.leader_epoch = -1;
                }
                if !allowed {
                    partition.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                    topic_response.partitions.push(partition);
                    continue;
                }
                if version >= 4 && requested.current_leader_epoch > LEADER_EPOCH {
                    partition.error_code = codes::UNKNOWN_LEADER_EPOCH;
                    topic_response.partitions.push(partition);
                    continue;
                }
                match self.log.partition(
                    &topic.name.0,
                    u32::try_from(requested.partition_index).unwrap_or(u32::MAX),
                ) {
                    Err(e) => partition.error_code = engine_codes::for_engine_error(&e),
                    Ok(log) => match requested.timestamp {
                        -2 | -4 => partition.offset = log.log_start_offset().0,
                        // KIP-1005's earliest pending upload and latest tiered offset: none
                        // without tiered storage.
                        -5 | -6 => {}
                        -3 => match log.max_timestamp() {
                            Ok(Some((timestamp, offset))) => {
                                partition.offset = offset.0;
                                partition.timestamp = timestamp;
                            }
                            Ok(None) => {}
                            Err(e) => {
                                partition.error_code = engine_codes::for_engine_error(&e.into())
                            }
                        },
                        -1 => partition.offset = log.high_watermark().0,
                        ts if ts < 0 => {
                            partition.error_code = codes::INVALID_REQUEST;
                        }
                        ts => match log.offset_for_timestamp(ts) {
                            Ok(Some(offset)) => {
                                partition.offset = offset.0;
                                partition.timestamp =
                                    log.timestamp_of(offset).ok().flatten().unwrap_or(ts);
                            }
                            Ok(None) => {}
                            Err(e) => {
                                partition.error_code = engine_codes::for_engine_error(&e.into())
                            }
                        },
                    },
                }
                if version >= 4 && partition.offset >= 0 {
                    partition.leader_epoch = LEADER_EPOCH;
                }
                topic_response.partitions.push(partition);
            }
            topic_response.name = topic.name;
            response.topics.push(topic_response);
        }
        response
    }
}

/// The leader epoch of every partition: one node, never a new leader.
pub(crate) const LEADER_EPOCH: i32 = 0;
