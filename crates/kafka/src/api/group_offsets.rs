//! The offset APIs of consumer groups: OffsetCommit, OffsetFetch and OffsetDelete, over the
//! engine's offset store. A commit from a member checks its generation with the coordinator;
//! a commit with no member (generation -1) is an admin's and needs no group.

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use logd_offsets::OffsetCommit;

use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;
use logd::groups::classic::decode_subscription;

use super::membership::check_instance;

/// One partition's answer in an OffsetFetch.
struct CommittedPartition {
    index: i32,
    /// -1 when nothing is committed.
    offset: i64,
    leader_epoch: i32,
    metadata: String,
    error_code: i16,
}

impl CommittedPartition {
    /// Nothing to show: no commit, or refused with `error_code`.
    fn refused(index: i32, error_code: i16) -> CommittedPartition {
        CommittedPartition {
            index,
            offset: -1,
            leader_epoch: -1,
            metadata: String::new(),
            error_code,
        }
    }
}

/// A partition of an OffsetCommit: its index, and its error code or `None` if it is committed
/// with the others.
type PartitionVerdict = (i32, Option<i16>);

fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// OffsetCommit, OffsetFetch and OffsetDelete.
#[derive(Debug)]
pub(super) struct GroupOffsetsApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
}

impl GroupOffsetsApi {
    pub(super) fn offset_commit(
        &self,
        request: OffsetCommitRequest,
        peer: &Peer,
    ) -> OffsetCommitResponse {
        let group = request.group_id.to_string();
        let now = self.log.clock().now_ms();
        let allowed =
            if !self
                .guard
                .allowed(&peer.caller, Operation::Read, ResourceType::Group, &group)
            {
                Err(codes::GROUP_AUTHORIZATION_FAILED)
            } else if group.is_empty() {
                Err(codes::INVALID_GROUP_ID)
            } else {
                check_instance(
                    &self.log,
                    &group,
                    &request.member_id,
                    request.group_instance_id.as_ref(),
                )
                .map_err(engine_codes::for_group_error)
                .and_then(|()| {
                    self.log
                        .validate_group_commit(
                            &group,
                            &request.member_id,
                            request.generation_id_or_member_epoch,
                            now,
                        )
                        .map_err(|e| engine_codes::for_engine_error(&e))
                })
            };
        let max_metadata = self.log.offsets().max_metadata_bytes();
        let mut results: Vec<(TopicName, Vec<PartitionVerdict>)> = Vec::new();
        let mut commits = Vec::new();
        for topic in request.topics {
            let partitions = self.log.partition_count(&topic.name).ok();
            // Kafka checks the group first, then READ on each topic.
            let topic_allowed = allowed.is_err()
                || self.guard.allowed(
                    &peer.caller,
                    Operation::Read,
                    ResourceType::Topic,
                    &topic.name,
                );
            let mut topic_results = Vec::new();
            for p in topic.partitions {
                let metadata = p
                    .committed_metadata
                    .map(|m| m.to_string())
                    .unwrap_or_default();
                let code = match allowed {
                    Err(code) => Some(code),
                    Ok(()) if !topic_allowed => Some(codes::TOPIC_AUTHORIZATION_FAILED),
                    Ok(())
                        if partitions.is_none_or(|n| {
                            !(0..n as i64).contains(&i64::from(p.partition_index))
                        }) =>
                    {
                        Some(codes::UNKNOWN_TOPIC_OR_PARTITION)
                    }
                    Ok(()) if metadata.len() > max_metadata => {
                        Some(codes::OFFSET_METADATA_TOO_LARGE)
                    }
                    Ok(()) if p.committed_offset < 0 => Some(codes::INVALID_REQUEST),
                    Ok(()) => {
                        commits.push(OffsetCommit {
                            topic: topic.name.to_string(),
                            partition: p.partition_index,
                            offset: p.committed_offset,
                            metadata,
                        });
                        None
                    }
                };
                topic_results.push((p.partition_index, code));
            }
            results.push((topic.name, topic_results));
        }
        let stored = if commits.is_empty() {
            codes::NONE
        } else {
            match self.log.offsets().commit(&group, &commits, now) {
                Ok(()) => codes::NONE,
                Err(e) => {
                    tracing::error!(%group, error = %e, "offset commit failed");
                    codes::COORDINATOR_NOT_AVAILABLE
                }
            }
        };
        let mut response = OffsetCommitResponse::default();
        for (name, partitions) in results {
            let mut topic = OffsetCommitResponseTopic::default();
            topic.name = name;
            for (index, code) in partitions {
                let mut partition = OffsetCommitResponsePartition::default();
                partition.partition_index = index;
                partition.error_code = code.unwrap_or(stored);
                topic.partitions.push(partition);
            }
            response.topics.push(topic);
        }
        response
    }

    /// OffsetFetch: one group's committed offsets (v1-7), or several groups' (v8+, KIP-709).
    /// Offsets committed come with leader epoch 0, this node's one epoch (v5+).
    pub(super) fn offset_fetch(
        &self,
        request: OffsetFetchRequest,
        version: i16,
        peer: &Peer,
    ) -> OffsetFetchResponse {
        let mut response = OffsetFetchResponse::default();
        if version >= 8 {
            for asked in request.groups {
                let topics = asked.topics.map(|topics| {
                    topics
                        .into_iter()
                        .map(|t| (t.name.to_string(), t.partition_indexes))
                        .collect()
                });
                let mut group = OffsetFetchResponseGroup::default();
                let stable = request.require_stable;
                // v9: a consumer-protocol member reads with its epoch (KIP-848).
                let member = asked.member_id.as_deref().unwrap_or("");
                let fetched = self
                    .log
                    .validate_group_fetch(&asked.group_id, member, asked.member_epoch)
                    .map_err(|e| engine_codes::for_engine_error(&e))
                    .and_then(|()| self.committed_offsets(&asked.group_id, topics, stable, peer));
                match fetched {
                    Ok(found) => {
                        group.topics = found
                            .into_iter()
                            .map(|(name, partitions)| {
                                let mut topic = OffsetFetchResponseTopics::default();
                                topic.name = TopicName(str_bytes(name));
                                topic.partitions = partitions
                                    .into_iter()
                                    .map(|p| {
                                        let mut out = OffsetFetchResponsePartitions::default();
                                        out.partition_index = p.index;
                                        out.committed_offset = p.offset;
                                        out.committed_leader_epoch = p.leader_epoch;
                                        out.metadata = Some(str_bytes(p.metadata));
                                        out.error_code = p.error_code;
                                        out
                                    })
                                    .collect();
                                topic
                            })
                            .collect();
                    }
                    Err(code) => group.error_code = code,
                }
                group.group_id = asked.group_id;
                response.groups.push(group);
            }
            return response;
        }
        let topics = request.topics.map(|topics| {
            topics
                .into_iter()
                .map(|t| (t.name.to_string(), t.partition_indexes))
                .collect::<Vec<_>>()
        });
        let stable = version >= 7 && request.require_stable;
        let found = match self.committed_offsets(&request.group_id, topics.clone(), stable, peer) {
            Ok(found) => found,
            // v2+ says it once; v1 has no group-level error: each partition carries it.
            Err(code) if version >= 2 => {
                response.error_code = code;
                return response;
            }
            Err(code) => topics
                .unwrap_or_default()
                .into_iter()
                .map(|(name, indexes)| {
                    let refused = indexes
                        .into_iter()
                        .map(|index| CommittedPartition::refused(index, code))
                        .collect();
                    (name, refused)
                })
                .collect(),
        };
        for (name, partitions) in found {
            let mut topic = OffsetFetchResponseTopic::default();
            topic.name = TopicName(str_bytes(name));
            topic.partitions = partitions
                .into_iter()
                .map(|p| {
                    let mut out = OffsetFetchResponsePartition::default();
                    out.partition_index = p.index;
                    out.committed_offset = p.offset;
                    if version >= 5 {
                        out.committed_leader_epoch = p.leader_epoch;
                    }
                    out.metadata = Some(str_bytes(p.metadata));
                    out.error_code = p.error_code;
                    out
                })
                .collect();
            response.topics.push(topic);
        }
        response
    }

    /// A group's committed offsets for `topics` (`None`: every partition it committed, less
    /// the topics the principal may not describe), or the group-level refusal. With
    /// `require_stable` (KIP-447), a partition whose offset an open transaction commits is
    /// UNSTABLE_OFFSET_COMMIT: the client asks again once the transaction ends.
    fn committed_offsets(
        &self,
        group: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
        require_stable: bool,
        peer: &Peer,
    ) -> Result<Vec<(String, Vec<CommittedPartition>)>, i16> {
        if !self.guard.allowed(
            &peer.caller,
            Operation::Describe,
            ResourceType::Group,
            group,
        ) {
            return Err(codes::GROUP_AUTHORIZATION_FAILED);
        }
        let offsets = self.log.offsets();
        let pending = match require_stable {
            true => self.log.pending_transactional_offsets(group),
            false => Default::default(),
        };
        let wanted = match topics {
            Some(topics) => topics,
            None => {
                let mut all: Vec<(String, Vec<i32>)> = Vec::new();
                // Topics the principal may not describe are left out, as Kafka does.
                let visible = offsets
                    .group_offsets(group)
                    .into_iter()
                    .filter(|(topic, _, _)| {
                        self.guard.allows(
                            &peer.caller,
                            Operation::Describe,
                            ResourceType::Topic,
                            topic,
                        )
                    });
                for (topic, partition, _) in visible {
                    match all.last_mut() {
                        Some((t, parts)) if *t == topic => parts.push(partition),
                        _ => all.push((topic, vec![partition])),
                    }
                }
                all
            }
        };
        Ok(wanted
            .into_iter()
            .map(|(name, indexes)| {
                let allowed = self.guard.allowed(
                    &peer.caller,
                    Operation::Describe,
                    ResourceType::Topic,
                    &name,
                );
                let partitions = indexes
                    .into_iter()
                    .map(|index| {
                        if !allowed {
                            return CommittedPartition::refused(
                                index,
                                codes::TOPIC_AUTHORIZATION_FAILED,
                            );
                        }
                        if pending.contains(&(name.clone(), index)) {
                            return CommittedPartition::refused(
                                index,
                                kafka_protocol::error::ResponseError::UnstableOffsetCommit.code(),
                            );
                        }
                        match offsets.fetch(group, &name, index) {
                            Some(committed) => CommittedPartition {
                                index,
                                offset: committed.offset,
                                leader_epoch: 0,
                                metadata: committed.metadata,
                                error_code: codes::NONE,
                            },
                            None => CommittedPartition::refused(index, codes::NONE),
                        }
                    })
                    .collect();
                (name, partitions)
            })
            .collect())
    }

    /// Deletes committed offsets, refused per topic while an active member subscribes to it.
    pub(super) fn offset_delete(
        &self,
        request: OffsetDeleteRequest,
        peer: &Peer,
    ) -> OffsetDeleteResponse {
        let group = request.group_id.to_string();
        if !self
            .guard
            .allowed(&peer.caller, Operation::Delete, ResourceType::Group, &group)
        {
            let mut response = OffsetDeleteResponse::default();
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        let subscribed: Vec<String> = self
            .log
            .coordinator()
            .read_group(&group, |g| {
                g.members()
                    .iter()
                    .flat_map(|m| decode_subscription(&m.metadata).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default();
        let mut response = OffsetDeleteResponse::default();
        for topic in request.topics {
            let name = topic.name.to_string();
            let indexes: Vec<i32> = topic.partitions.iter().map(|p| p.partition_index).collect();
            let code =
                if !self
                    .guard
                    .allowed(&peer.caller, Operation::Read, ResourceType::Topic, &name)
                {
                    codes::TOPIC_AUTHORIZATION_FAILED
                } else if subscribed.contains(&name) {
                    codes::GROUP_SUBSCRIBED_TO_TOPIC
                } else {
                    let doomed: Vec<(String, i32)> =
                        indexes.iter().map(|i| (name.clone(), *i)).collect();
                    match self.log.offsets().delete_offsets(&group, &doomed) {
                        Ok(()) => codes::NONE,
                        Err(e) => {
                            tracing::error!(%group, error = %e, "offset delete failed");
                            codes::COORDINATOR_NOT_AVAILABLE
                        }
                    }
                };
            let mut topic_response = OffsetDeleteResponseTopic::default();
            topic_response.name = topic.name;
            topic_response.partitions = indexes
                .into_iter()
                .map(|index| {
                    let mut partition = OffsetDeleteResponsePartition::default();
                    partition.partition_index = index;
                    partition.error_code = code;
                    partition
                })
                .collect();
            response.topics.push(topic_response);
        }
        response
    }
}
