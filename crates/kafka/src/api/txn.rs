//! Transactions over the wire (KIP-98, KIP-447, KIP-664; Kafka's transaction version 1):
//! InitProducerId with a transactional id, AddPartitionsToTxn (v0-3: the client versions),
//! AddOffsetsToTxn, TxnOffsetCommit and EndTxn (v0-4: v5 is KIP-890's transaction version
//! 2), DescribeTransactions and ListTransactions (v0-1), and WriteTxnMarkers (v1), which
//! Kafka's admin client sends to abort a hanging transaction (`kafka-transactions.sh abort`). The engine's coordinator decides;
//! this checks the ACLs as Kafka's `KafkaApis` does and translates. Requests older than
//! PRODUCER_FENCED (KIP-588) get INVALID_PRODUCER_EPOCH for it, as Kafka answers them.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedState;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, DescribeTransactionsRequest, DescribeTransactionsResponse,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse, ProducerId,
    TopicName, TransactionalId, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use kafka_protocol::protocol::StrBytes;
use logd::txn::TxnState as EngineState;
use logd_offsets::OffsetCommit;

use super::membership::check_instance;
use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;

/// A topic's partitions, each with the code it was refused with (`None`: not refused).
type TopicVerdicts = (TopicName, Vec<(i32, Option<i16>)>);

/// Transactional producers' APIs.
#[derive(Debug)]
pub(super) struct TxnApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
}

/// The code for `error` in a response of `version`, where versions below `fenced_from`
/// predate PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH for it.
fn code_for(error: &logd::Error, version: i16, fenced_from: i16) -> i16 {
    let code = engine_codes::for_engine_error(error);
    if code == ResponseError::ProducerFenced.code() && version < fenced_from {
        return ResponseError::InvalidProducerEpoch.code();
    }
    code
}

impl TxnApi {
    fn write_allowed(&self, peer: &Peer, transactional_id: &str) -> bool {
        self.guard.allowed(
            &peer.caller,
            Operation::Write,
            ResourceType::TransactionalId,
            transactional_id,
        )
    }

    /// InitProducerId for a transactional producer (WRITE on its id checked by the caller):
    /// its producer id and a new epoch (KIP-360's current id and epoch from v3).
    pub(super) fn init_producer_id(
        &self,
        request: &InitProducerIdRequest,
        transactional_id: &str,
        version: i16,
    ) -> InitProducerIdResponse {
        let mut response = InitProducerIdResponse::default();
        if transactional_id.is_empty() {
            // Kafka's coordinator refuses an empty id as its producer client does.
            response.producer_id = ProducerId(-1);
            response.producer_epoch = -1;
            response.error_code = codes::INVALID_REQUEST;
            return response;
        }
        let expected = (version >= 3 && request.producer_id.0 >= 0)
            .then_some((request.producer_id.0, request.producer_epoch));
        match self.log.init_transactional_producer(
            transactional_id,
            request.transaction_timeout_ms,
            expected,
        ) {
            Ok((producer_id, epoch)) => {
                response.producer_id = ProducerId(producer_id);
                response.producer_epoch = epoch;
            }
            Err(e) => {
                response.producer_id = ProducerId(-1);
                response.producer_epoch = -1;
                response.error_code = code_for(&e, version, 4);
            }
        }
        response
    }

    /// AddPartitionsToTxn v0-3: every partition gets the one outcome, or, if some are
    /// refused (ACLs, unknown), those their code and the rest OPERATION_NOT_ATTEMPTED, as
    /// Kafka answers.
    pub(super) fn add_partitions_to_txn(
        &self,
        request: AddPartitionsToTxnRequest,
        version: i16,
        peer: &Peer,
    ) -> AddPartitionsToTxnResponse {
        let id = request.v3_and_below_transactional_id.to_string();
        let mut verdicts: Vec<TopicVerdicts> = Vec::new();
        let mut wanted = Vec::new();
        let id_allowed = self.write_allowed(peer, &id);
        for topic in &request.v3_and_below_topics {
            let allowed = self.guard.allowed(
                &peer.caller,
                Operation::Write,
                ResourceType::Topic,
                &topic.name,
            );
            let count = self.log.partition_count(&topic.name).ok();
            let mut partitions = Vec::new();
            for &index in &topic.partitions {
                let code = if !id_allowed {
                    Some(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                } else if !allowed {
                    Some(codes::TOPIC_AUTHORIZATION_FAILED)
                } else if count.is_none_or(|n| !(0..i64::from(n)).contains(&i64::from(index))) {
                    Some(codes::UNKNOWN_TOPIC_OR_PARTITION)
                } else {
                    wanted.push((topic.name.to_string(), index as u32));
                    None
                };
                partitions.push((index, code));
            }
            verdicts.push((topic.name.clone(), partitions));
        }
        let refused = verdicts
            .iter()
            .any(|(_, partitions)| partitions.iter().any(|(_, code)| code.is_some()));
        let outcome = match refused {
            true => ResponseError::OperationNotAttempted.code(),
            false => match self.log.add_partitions_to_txn(
                &id,
                request.v3_and_below_producer_id.0,
                request.v3_and_below_producer_epoch,
                &wanted,
            ) {
                Ok(()) => codes::NONE,
                Err(e) => code_for(&e, version, 2),
            },
        };
        let mut response = AddPartitionsToTxnResponse::default();
        for (name, partitions) in verdicts {
            let mut topic = AddPartitionsToTxnTopicResult::default();
            topic.name = name;
            for (index, code) in partitions {
                let mut result = AddPartitionsToTxnPartitionResult::default();
                result.partition_index = index;
                result.partition_error_code = code.unwrap_or(outcome);
                topic.results_by_partition.push(result);
            }
            response.results_by_topic_v3_and_below.push(topic);
        }
        response
    }

    /// AddOffsetsToTxn: WRITE on the transactional id, READ on the group.
    pub(super) fn add_offsets_to_txn(
        &self,
        request: AddOffsetsToTxnRequest,
        version: i16,
        peer: &Peer,
    ) -> AddOffsetsToTxnResponse {
        let mut response = AddOffsetsToTxnResponse::default();
        let id = request.transactional_id.to_string();
        response.error_code = if !self.write_allowed(peer, &id) {
            codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        } else if !self.guard.allowed(
            &peer.caller,
            Operation::Read,
            ResourceType::Group,
            &request.group_id,
        ) {
            codes::GROUP_AUTHORIZATION_FAILED
        } else {
            match self.log.add_offsets_to_txn(
                &id,
                request.producer_id.0,
                request.producer_epoch,
                &request.group_id,
            ) {
                Ok(()) => codes::NONE,
                Err(e) => code_for(&e, version, 2),
            }
        };
        response
    }

    /// EndTxn: WRITE on the transactional id; answered once every marker is durable.
    pub(super) fn end_txn(
        &self,
        request: EndTxnRequest,
        version: i16,
        peer: &Peer,
    ) -> EndTxnResponse {
        let mut response = EndTxnResponse::default();
        let id = request.transactional_id.to_string();
        response.error_code = if !self.write_allowed(peer, &id) {
            codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        } else {
            match self.log.end_txn(
                &id,
                request.producer_id.0,
                request.producer_epoch,
                request.committed,
            ) {
                Ok(()) => codes::NONE,
                Err(e) => code_for(&e, version, 2),
            }
        };
        response
    }

    /// TxnOffsetCommit: WRITE on the transactional id, READ on the group and on each topic;
    /// from v3 the member's generation is checked as an OffsetCommit's (KIP-447), unless the
    /// client names none (an older client's `sendOffsetsToTransaction(offsets, groupId)`).
    pub(super) fn txn_offset_commit(
        &self,
        request: TxnOffsetCommitRequest,
        version: i16,
        peer: &Peer,
    ) -> TxnOffsetCommitResponse {
        let id = request.transactional_id.to_string();
        let group = request.group_id.to_string();
        let now = self.log.clock().now_ms();
        let checked = if !self.write_allowed(peer, &id) {
            Err(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        } else if !self
            .guard
            .allowed(&peer.caller, Operation::Read, ResourceType::Group, &group)
        {
            Err(codes::GROUP_AUTHORIZATION_FAILED)
        } else if version >= 3 && (request.generation_id >= 0 || !request.member_id.is_empty()) {
            check_instance(
                &self.log,
                &group,
                &request.member_id,
                request.group_instance_id.as_ref(),
            )
            .map_err(engine_codes::for_group_error)
            .and_then(|()| {
                self.log
                    .validate_group_commit(&group, &request.member_id, request.generation_id, now)
                    .map_err(|e| engine_codes::for_engine_error(&e))
            })
        } else {
            Ok(())
        };
        let mut verdicts: Vec<TopicVerdicts> = Vec::new();
        let mut commits = Vec::new();
        for topic in request.topics {
            let topic_allowed = self.guard.allowed(
                &peer.caller,
                Operation::Read,
                ResourceType::Topic,
                &topic.name,
            );
            let mut partitions = Vec::new();
            for p in topic.partitions {
                let code = match checked {
                    Err(code) => Some(code),
                    Ok(()) if !topic_allowed => Some(codes::TOPIC_AUTHORIZATION_FAILED),
                    Ok(()) => {
                        commits.push(OffsetCommit {
                            topic: topic.name.to_string(),
                            partition: p.partition_index,
                            offset: p.committed_offset,
                            metadata: p
                                .committed_metadata
                                .map(|m| m.to_string())
                                .unwrap_or_default(),
                        });
                        None
                    }
                };
                partitions.push((p.partition_index, code));
            }
            verdicts.push((topic.name, partitions));
        }
        let staged = match commits.is_empty() {
            true => codes::NONE,
            false => match self.log.txn_offset_commit(
                &id,
                request.producer_id.0,
                request.producer_epoch,
                &group,
                &commits,
            ) {
                Ok(()) => codes::NONE,
                Err(logd::Error::Offsets(logd::OffsetsError::InvalidOffset { .. })) => {
                    codes::INVALID_REQUEST
                }
                Err(e) => code_for(&e, version, 2),
            },
        };
        let mut response = TxnOffsetCommitResponse::default();
        for (name, partitions) in verdicts {
            let mut topic = TxnOffsetCommitResponseTopic::default();
            topic.name = name;
            for (index, code) in partitions {
                let mut partition = TxnOffsetCommitResponsePartition::default();
                partition.partition_index = index;
                partition.error_code = code.unwrap_or(staged);
                topic.partitions.push(partition);
            }
            response.topics.push(topic);
        }
        response
    }

    /// DescribeTransactions: DESCRIBE on each id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), an
    /// unknown one TRANSACTIONAL_ID_NOT_FOUND; the partitions of its open transaction by
    /// topic, those of topics the caller may not describe left out, as Kafka does.
    pub(super) fn describe_transactions(
        &self,
        request: DescribeTransactionsRequest,
        peer: &Peer,
    ) -> DescribeTransactionsResponse {
        let all = self.log.transactions();
        let mut response = DescribeTransactionsResponse::default();
        for asked in request.transactional_ids {
            let mut state = TransactionState::default();
            state.transactional_id = asked.clone();
            state.producer_id = ProducerId(-1);
            state.producer_epoch = -1;
            state.transaction_start_time_ms = -1;
            state.transaction_state = StrBytes::from_static_str("");
            let found = all.iter().find(|t| *t.transactional_id == *asked.0);
            if !self.guard.allowed(
                &peer.caller,
                Operation::Describe,
                ResourceType::TransactionalId,
                &asked,
            ) {
                state.error_code = codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            } else if let Some(t) = found {
                state.transaction_state = StrBytes::from_static_str(t.state.name());
                state.transaction_timeout_ms = t.timeout_ms;
                state.transaction_start_time_ms = t.started_ms;
                state.producer_id = ProducerId(t.producer_id);
                state.producer_epoch = t.epoch;
                for (topic, partition) in &t.partitions {
                    if !self.guard.allows(
                        &peer.caller,
                        Operation::Describe,
                        ResourceType::Topic,
                        topic,
                    ) {
                        continue;
                    }
                    match state.topics.last_mut() {
                        Some(data) if *data.topic.0 == **topic => {
                            data.partitions.push(*partition as i32)
                        }
                        _ => {
                            let mut data = TopicData::default();
                            data.topic = TopicName(StrBytes::from_string(topic.clone()));
                            data.partitions.push(*partition as i32);
                            state.topics.push(data);
                        }
                    }
                }
            } else {
                state.error_code = ResponseError::TransactionalIdNotFound.code();
            }
            response.transaction_states.push(state);
        }
        response
    }

    /// WriteTxnMarkers: each marker written to each partition named (CLUSTER_ACTION on the
    /// cluster, as Kafka's brokers and its admin's abort need), per partition the outcome:
    /// INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED for a stale marker,
    /// UNKNOWN_TOPIC_OR_PARTITION.
    pub(super) fn write_txn_markers(
        &self,
        request: WriteTxnMarkersRequest,
        peer: &Peer,
    ) -> WriteTxnMarkersResponse {
        let allowed = self.guard.allowed(
            &peer.caller,
            Operation::ClusterAction,
            ResourceType::Cluster,
            crate::acl::CLUSTER_NAME,
        );
        let mut response = WriteTxnMarkersResponse::default();
        for asked in request.markers {
            let marker = logd::Marker {
                producer_id: asked.producer_id.0,
                producer_epoch: asked.producer_epoch,
                coordinator_epoch: asked.coordinator_epoch,
                commit: asked.transaction_result,
            };
            let mut result = WritableTxnMarkerResult::default();
            result.producer_id = asked.producer_id;
            for topic in asked.topics {
                let mut topic_result = WritableTxnMarkerTopicResult::default();
                for index in topic.partition_indexes {
                    let mut partition = WritableTxnMarkerPartitionResult::default();
                    partition.partition_index = index;
                    partition.error_code = if !allowed {
                        codes::CLUSTER_AUTHORIZATION_FAILED
                    } else {
                        let index = u32::try_from(index).unwrap_or(u32::MAX);
                        match self.log.write_marker(&topic.name, index, &marker) {
                            Ok(_) => codes::NONE,
                            Err(e) => engine_codes::for_engine_error(&e),
                        }
                    };
                    topic_result.partitions.push(partition);
                }
                topic_result.name = topic.name;
                result.topics.push(topic_result);
            }
            response.markers.push(result);
        }
        response
    }

    /// ListTransactions v0-1: the ids the caller may describe, filtered by state, producer
    /// id and (v1) how long their transaction has been open; an unknown state filter is
    /// named back (Kafka's `unknown_state_filters`).
    pub(super) fn list_transactions(
        &self,
        request: ListTransactionsRequest,
        version: i16,
        peer: &Peer,
    ) -> ListTransactionsResponse {
        let mut response = ListTransactionsResponse::default();
        let mut states = Vec::new();
        for filter in &request.state_filters {
            match EngineState::from_name(filter) {
                Some(state) => states.push(state),
                None => response.unknown_state_filters.push(filter.clone()),
            }
        }
        let now = self.log.clock().now_ms();
        let min_duration = match version >= 1 {
            true => request.duration_filter,
            false => -1,
        };
        for t in self.log.transactions() {
            let state_ok = request.state_filters.is_empty() || states.contains(&t.state);
            let producer_ok = request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .iter()
                    .any(|p| p.0 == t.producer_id);
            let duration_ok = min_duration < 0
                || (t.started_ms >= 0 && now.saturating_sub(t.started_ms) > min_duration);
            let visible = self.guard.allows(
                &peer.caller,
                Operation::Describe,
                ResourceType::TransactionalId,
                &t.transactional_id,
            );
            if state_ok && producer_ok && duration_ok && visible {
                let mut listed = ListedState::default();
                listed.transactional_id =
                    TransactionalId(StrBytes::from_string(t.transactional_id.clone()));
                listed.producer_id = ProducerId(t.producer_id);
                listed.transaction_state = StrBytes::from_static_str(t.state.name());
                response.transaction_states.push(listed);
            }
        }
        response
    }
}
