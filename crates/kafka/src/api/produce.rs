//! The write family: Produce (each batch appended to its partition, the idempotent
//! producer's duplicates answered with their first offsets), InitProducerId and
//! DescribeProducers. Holds the engine, the ACL checks, and where traffic is reported.

use std::sync::Arc;

use kafka_protocol::ResponseError;

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse as ProducersPartitionResponse, ProducerState,
    TopicResponse as ProducersTopicResponse,
};
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse};
use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse, ProducerId,
};
use kafka_protocol::protocol::StrBytes;

use crate::acl::{CLUSTER_NAME, Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;
use crate::observer::BrokerObserver;

/// Produce, InitProducerId and DescribeProducers.
#[derive(Debug)]
pub(super) struct ProduceApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    pub(super) observer: Arc<dyn BrokerObserver>,
}

/// A refused append as a produce answer gives it: the code, the message, and the index of the
/// refused record when one record was the reason. A keyless record on a compacted topic gets
/// Kafka's own words. A transactional batch that fails its verification is answered as
/// Kafka's leaders answer it (`AddPartitionsToTxnManager`): a fenced epoch
/// INVALID_PRODUCER_EPOCH, which producers expect there; a partition outside the open
/// transaction TRANSACTION_ABORTABLE from version 11, INVALID_TXN_STATE before it.
fn refusal(
    error: &logd::Error,
    topic: &str,
    partition: i32,
    version: i16,
) -> (i16, Option<String>, Option<i32>) {
    let code = match error {
        logd::Error::ProducerFenced { .. } => ResponseError::InvalidProducerEpoch.code(),
        logd::Error::InvalidTxnState(_) if version >= 11 => {
            ResponseError::TransactionAbortable.code()
        }
        _ => engine_codes::for_engine_error(error),
    };
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

impl ProduceApi {
    pub(super) fn produce(
        &self,
        request: ProduceRequest,
        version: i16,
        peer: &Peer,
    ) -> Option<ProduceResponse> {
        let acks_valid = matches!(request.acks, -1..=1);
        // A transactional producer needs WRITE on its transactional id too.
        let transaction_refused = request.transactional_id.as_ref().is_some_and(|id| {
            !self.guard.allowed(
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
            } else if !self.guard.allowed(
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
                            .map_err(|e| refusal(&e, &topic.name.0, data.index, version))
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

    /// A fresh producer id with epoch 0 for an idempotent producer. Without a transactional
    /// id Kafka hands out a new id whatever the request carries (KIP-360's current id and
    /// epoch, v3+, matter only to transactional producers), so every version is answered
    /// alike. With one, the transaction coordinator answers (`txn.rs`).
    ///
    /// Needs IDEMPOTENT_WRITE on the cluster or WRITE on any topic, as Kafka's
    /// `handleInitProducerIdRequest` (and WRITE on the transactional id, for one that has it).
    pub(super) fn init_producer_id(
        &self,
        request: InitProducerIdRequest,
        version: i16,
        peer: &Peer,
        transactions: &super::txn::TxnApi,
    ) -> InitProducerIdResponse {
        let mut response = InitProducerIdResponse::default();
        let refused = match &request.transactional_id {
            Some(id)
                if self.guard.allowed(
                    &peer.caller,
                    Operation::Write,
                    ResourceType::TransactionalId,
                    id,
                ) =>
            {
                return transactions.init_producer_id(&request, id, version);
            }
            Some(_) => Some(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            None => {
                let allowed = self.guard.allows(
                    &peer.caller,
                    Operation::IdempotentWrite,
                    ResourceType::Cluster,
                    CLUSTER_NAME,
                ) || self.guard.allows_any(&peer.caller, Operation::Write, ResourceType::Topic)
                    // Counted and logged as Kafka words it: IDEMPOTENT_WRITE on the cluster.
                    || self.guard.allowed_on_cluster(&peer.caller, Operation::IdempotentWrite);
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
    pub(super) fn describe_producers(
        &self,
        request: DescribeProducersRequest,
        peer: &Peer,
    ) -> DescribeProducersResponse {
        let mut response = DescribeProducersResponse::default();
        for topic in request.topics {
            let mut topic_response = ProducersTopicResponse::default();
            let allowed = self.guard.allowed(
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
                                state.coordinator_epoch = p.coordinator_epoch;
                                state.current_txn_start_offset = p.txn_first_offset.unwrap_or(-1);
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
}
