//! Where a partition's records are: the reads that answer with offsets rather than records,
//! ListOffsets (v1 to v10), OffsetForLeaderEpoch (v2 to v4) and logd's own
//! DescribePartitionRanges (its codec is `logd_protocol::partition_ranges`: each partition
//! divided as the log cleaner sees it), with DESCRIBE on each topic as Kafka checks it for
//! consumers; and DeleteRecords (v0 to v2), which moves a partition's start (DELETE on the
//! topic).
//!
//! logd is one node whose only leader epoch is 0: epoch 0 ends at the log end offset and a
//! later epoch is unknown (-1, -1), as Kafka's epoch cache answers; a client that believes in a
//! newer current epoch than 0 is answered UNKNOWN_LEADER_EPOCH. A follower's
//! OffsetForLeaderEpoch (a replica id) needs CLUSTER_ACTION, which no logd client has reason
//! to send.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    DeleteRecordsRequest, DeleteRecordsResponse, ListOffsetsRequest, ListOffsetsResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
};
use logd_protocol::partition_ranges::{
    PartitionRanges, PartitionRangesRequest, PartitionRangesResponse,
};

use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;

/// The one leader epoch a single node ever has.
pub(super) const LEADER_EPOCH: i32 = 0;

/// ListOffsets, OffsetForLeaderEpoch, DescribePartitionRanges and DeleteRecords.
#[derive(Debug)]
pub(super) struct OffsetsApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
}

impl OffsetsApi {
    /// ListOffsets v1-10: -2 the log start (and -4, KIP-405's local log start, the same here
    /// without tiered storage), -1 the high watermark (also the last stable offset for
    /// `read_committed`: logd has no transactions), -3 the record with the largest timestamp,
    /// -5 and -6 (tiered storage's) none, a time the first record at or after it; from v4 the
    /// leader epoch is this node's 0, and a client's epoch newer than that is refused.
    pub(super) fn list_offsets(
        &self,
        request: ListOffsetsRequest,
        version: i16,
        peer: &Peer,
    ) -> ListOffsetsResponse {
        let mut response = ListOffsetsResponse::default();
        for topic in request.topics {
            let mut topic_response = ListOffsetsTopicResponse::default();
            let allowed = self.guard.allowed(
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
                        // A read_committed reader's latest is the last stable offset.
                        -1 if request.isolation_level == 1 => {
                            partition.offset = log.last_stable_offset().0
                        }
                        -1 => partition.offset = log.high_watermark().0,
                        ts if ts < 0 => {
                            partition.error_code = codes::INVALID_REQUEST;
                        }
                        ts => match log.offset_for_timestamp(ts) {
                            // What a read_committed reader cannot read yet is not found.
                            Ok(Some(offset))
                                if request.isolation_level == 1
                                    && offset >= log.last_stable_offset() => {}
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

    pub(super) fn offset_for_leader_epoch(
        &self,
        request: OffsetForLeaderEpochRequest,
        peer: &Peer,
    ) -> OffsetForLeaderEpochResponse {
        let follower = request.replica_id.0 >= 0;
        let follower_refused = follower
            && !self
                .guard
                .allowed_on_cluster(&peer.caller, Operation::ClusterAction);
        let mut response = OffsetForLeaderEpochResponse::default();
        for topic in request.topics {
            let refused = follower_refused
                || !self.guard.allowed(
                    &peer.caller,
                    Operation::Describe,
                    ResourceType::Topic,
                    &topic.topic,
                );
            let mut result = OffsetForLeaderTopicResult::default();
            for asked in &topic.partitions {
                let mut answer = EpochEndOffset::default();
                answer.partition = asked.partition;
                answer.leader_epoch = -1;
                answer.end_offset = -1;
                let log = match refused {
                    true => Err(codes::TOPIC_AUTHORIZATION_FAILED),
                    false => self
                        .log
                        .partition(
                            &topic.topic,
                            u32::try_from(asked.partition).unwrap_or(u32::MAX),
                        )
                        .map_err(|e| engine_codes::for_engine_error(&e)),
                };
                match log {
                    Err(code) => answer.error_code = code,
                    Ok(_) if asked.current_leader_epoch > LEADER_EPOCH => {
                        answer.error_code = codes::UNKNOWN_LEADER_EPOCH;
                    }
                    Ok(log) if asked.leader_epoch == LEADER_EPOCH => {
                        answer.leader_epoch = LEADER_EPOCH;
                        answer.end_offset = log.end_offset().0;
                    }
                    // An epoch this node never had: undefined, as Kafka's epoch cache says.
                    Ok(_) => {}
                }
                result.partitions.push(answer);
            }
            result.topic = topic.topic;
            response.topics.push(result);
        }
        response
    }

    /// Answers DescribePartitionRanges: needs DESCRIBE on the topic, as ListOffsets does.
    pub(super) fn partition_ranges(
        &self,
        request: &PartitionRangesRequest,
        peer: &Peer,
    ) -> PartitionRangesResponse {
        let refused = |error_code, message: String| PartitionRangesResponse {
            error_code,
            error_message: Some(message),
            partitions: Vec::new(),
        };
        let topic = &request.topic;
        if !self.guard.allowed(
            &peer.caller,
            Operation::Describe,
            ResourceType::Topic,
            topic,
        ) {
            return refused(
                codes::TOPIC_AUTHORIZATION_FAILED,
                format!("not authorized to describe topic {topic}"),
            );
        }
        match self.log.cleaner_ranges(topic) {
            Ok(ranges) => PartitionRangesResponse {
                error_code: 0,
                error_message: None,
                partitions: ranges
                    .into_iter()
                    .map(|r| PartitionRanges {
                        partition: r.partition as i32,
                        log_start: r.log_start,
                        cleaned_up_to: r.cleaned_up_to,
                        cleanable_end: r.cleanable_end,
                        active_start: r.active_start,
                        log_end: r.log_end,
                    })
                    .collect(),
            },
            Err(e) => refused(engine_codes::for_engine_error(&e), e.to_string()),
        }
    }

    /// DeleteRecords: each partition's log start moved up to the offset asked (-1: the high
    /// watermark), durably, as Kafka's `deleteRecordsOnLeader`; the answer's low watermark is
    /// the start afterwards. Needs DELETE on the topic; an offset above the high watermark
    /// (or below -1) is OFFSET_OUT_OF_RANGE, a topic that only compacts POLICY_VIOLATION.
    pub(super) fn delete_records(
        &self,
        request: DeleteRecordsRequest,
        peer: &Peer,
    ) -> DeleteRecordsResponse {
        let mut response = DeleteRecordsResponse::default();
        for topic in request.topics {
            let allowed = self.guard.allowed(
                &peer.caller,
                Operation::Delete,
                ResourceType::Topic,
                &topic.name.0,
            );
            let mut result = DeleteRecordsTopicResult::default();
            for asked in &topic.partitions {
                let mut answer = DeleteRecordsPartitionResult::default();
                answer.partition_index = asked.partition_index;
                answer.low_watermark = -1;
                let deleted = match (allowed, u32::try_from(asked.partition_index)) {
                    (false, _) => Err(codes::TOPIC_AUTHORIZATION_FAILED),
                    (true, Err(_)) => Err(codes::UNKNOWN_TOPIC_OR_PARTITION),
                    (true, Ok(partition)) => self
                        .log
                        .delete_records(&topic.name.0, partition, asked.offset)
                        .map_err(|e| engine_codes::for_engine_error(&e)),
                };
                match deleted {
                    Ok(low_watermark) => answer.low_watermark = low_watermark,
                    Err(code) => answer.error_code = code,
                }
                result.partitions.push(answer);
            }
            result.name = topic.name;
            response.topics.push(result);
        }
        response
    }
}
