//! The consumer-group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups and OffsetDelete. Each
//! translates into the engine's coordinator and offset store, where the group rules live.
//! JoinGroup and SyncGroup park the connection's thread until the group answers, as Kafka parks
//! those requests; a client sends its other requests on other connections meanwhile.

use std::time::Duration;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
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
    BrokerId, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use logd::group::{GroupError, GroupPhase, JoinRequest, JoinStatus};
use logd_offsets::OffsetCommit;

use crate::acl::{Operation, ResourceType};
use crate::admin::Refused;
use crate::auth::Peer;
use crate::broker::Broker;
use crate::codes;
use crate::engine_codes;
use logd::group::decode_subscription;

/// The type of every group logd runs (KIP-848 calls the JoinGroup/SyncGroup protocol
/// `classic`).
const CLASSIC: &str = "classic";

/// A parked JoinGroup or SyncGroup gives up this long after the rebalance timeout (the group
/// ends a join phase at that timeout, so this only fires if something is badly wrong).
const PARK_SLACK: Duration = Duration::from_secs(5);

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

/// Kafka's name for a group state.
fn state_name(phase: Option<GroupPhase>) -> &'static str {
    match phase {
        Some(GroupPhase::Empty) => "Empty",
        Some(GroupPhase::PreparingRebalance) => "PreparingRebalance",
        Some(GroupPhase::CompletingRebalance) => "CompletingRebalance",
        Some(GroupPhase::Stable) => "Stable",
        None => "Dead",
    }
}

impl Broker {
    fn now_ms(&self) -> i64 {
        self.log.clock().now_ms()
    }

    /// FindCoordinator: this node, for a group (key type 0, DESCRIBE on it) or a transactional
    /// id (1); one key before v4, a batch of keys from v4 (KIP-699).
    pub(crate) fn find_coordinator(
        &self,
        request: FindCoordinatorRequest,
        version: i16,
        peer: &Peer,
    ) -> FindCoordinatorResponse {
        let mut response = FindCoordinatorResponse::default();
        if version < 4 {
            let found = self.coordinator_for(request.key_type, &request.key, peer);
            response.error_code = found.error_code;
            response.node_id = found.node_id;
            response.host = found.host;
            response.port = found.port;
            if version >= 1 {
                response.error_message = found.error_message;
            }
            return response;
        }
        response.coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| self.coordinator_for(request.key_type, key, peer))
            .collect();
        response
    }

    fn coordinator_for(&self, key_type: i8, key: &StrBytes, peer: &Peer) -> Coordinator {
        tracing::debug!(key = key.as_str(), "find coordinator");
        let mut found = Coordinator::default();
        found.key = key.clone();
        let (resource_type, refused) = match key_type {
            1 => (
                ResourceType::TransactionalId,
                codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            ),
            _ => (ResourceType::Group, codes::GROUP_AUTHORIZATION_FAILED),
        };
        if !self
            .guard()
            .allowed(&peer.caller, Operation::Describe, resource_type, key)
        {
            found.error_code = refused;
            found.error_message = Some(str_bytes("Authorization failed."));
            found.node_id = BrokerId(-1);
            found.host = StrBytes::default();
            found.port = -1;
            return found;
        }
        found.node_id = BrokerId(self.config.node_id);
        found.host = str_bytes(peer.listener.advertised_host.clone());
        found.port = i32::from(peer.listener.advertised_port);
        found.error_message = None;
        found
    }

    pub(crate) fn join_group(
        &self,
        request: JoinGroupRequest,
        version: i16,
        client_id: &str,
        peer: &Peer,
    ) -> JoinGroupResponse {
        let mut response = JoinGroupResponse::default();
        response.generation_id = -1;
        response.protocol_name = Some(StrBytes::default());
        response.member_id = request.member_id.clone();
        if !self.guard().allowed(
            &peer.caller,
            Operation::Read,
            ResourceType::Group,
            &request.group_id,
        ) {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        if request.group_id.is_empty() {
            response.error_code = codes::INVALID_GROUP_ID;
            return response;
        }
        if let Some(reason) = request.reason.as_deref().filter(|r| !r.is_empty()) {
            tracing::info!(
                group = request.group_id.as_str(),
                member = request.member_id.as_str(),
                reason,
                "member joins"
            );
        }
        let client_host = peer.member_host();
        let rebalance_timeout_ms = if version == 0 {
            request.session_timeout_ms // v0 has no rebalance timeout: Kafka uses the session's
        } else {
            request.rebalance_timeout_ms
        };
        let join = JoinRequest {
            member_id: (!request.member_id.is_empty()).then(|| request.member_id.to_string()),
            group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
            client_id: client_id.to_owned(),
            client_host,
            require_known_member_id: version >= 4,
            protocol_type: request.protocol_type.to_string(),
            protocols: request
                .protocols
                .iter()
                .map(|p| (p.name.to_string(), p.metadata.clone()))
                .collect(),
            session_timeout_ms: i64::from(request.session_timeout_ms),
            rebalance_timeout_ms: i64::from(rebalance_timeout_ms),
        };
        let wait = Duration::from_millis(rebalance_timeout_ms.max(0) as u64) + PARK_SLACK;
        let outcome =
            self.log
                .coordinator()
                .join_and_wait(&request.group_id, join, self.log.clock(), wait);
        match outcome {
            Ok(JoinStatus::Joined(joined)) => {
                response.generation_id = joined.generation;
                if version >= 7 {
                    response.protocol_type = Some(request.protocol_type.clone());
                }
                response.protocol_name = Some(str_bytes(joined.protocol));
                response.leader = str_bytes(joined.leader);
                response.member_id = str_bytes(joined.member_id);
                response.members = joined
                    .members
                    .into_iter()
                    .map(|(member_id, instance_id, metadata)| {
                        let mut member = JoinGroupResponseMember::default();
                        member.member_id = str_bytes(member_id);
                        if version >= 5 {
                            member.group_instance_id = instance_id.map(str_bytes);
                        }
                        member.metadata = metadata;
                        member
                    })
                    .collect();
            }
            Ok(JoinStatus::MemberIdRequired { member_id }) => {
                response.error_code = codes::MEMBER_ID_REQUIRED;
                response.member_id = str_bytes(member_id);
            }
            Ok(JoinStatus::Waiting { .. }) => {
                response.error_code = codes::REBALANCE_IN_PROGRESS;
            }
            Err(e) => response.error_code = engine_codes::for_group_error(e),
        }
        // From v7 an answer without a protocol says so with null, as Kafka's.
        if version >= 7 && response.generation_id == -1 {
            response.protocol_name = None;
        }
        response
    }

    /// FENCED_INSTANCE_ID if `instance_id` is held by another member than `member_id`.
    fn check_instance(
        &self,
        group: &str,
        member_id: &str,
        instance_id: Option<&StrBytes>,
    ) -> Result<(), GroupError> {
        match instance_id {
            Some(instance) => self
                .log
                .coordinator()
                .check_instance(group, instance, member_id),
            None => Ok(()),
        }
    }

    /// SyncGroup; from v5 the member names the protocol type and name it joined with, which
    /// must be the group's (INCONSISTENT_GROUP_PROTOCOL otherwise), and the answer names them.
    pub(crate) fn sync_group(
        &self,
        request: SyncGroupRequest,
        version: i16,
        peer: &Peer,
    ) -> SyncGroupResponse {
        let mut response = SyncGroupResponse::default();
        if !self.guard().allowed(
            &peer.caller,
            Operation::Read,
            ResourceType::Group,
            &request.group_id,
        ) {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        if version >= 5 {
            let (protocol_type, protocol) = self
                .log
                .coordinator()
                .read_group(&request.group_id, |g| {
                    (
                        g.protocol_type().map(str::to_owned),
                        g.protocol().map(str::to_owned),
                    )
                })
                .unwrap_or_default();
            let differs = |asked: &Option<StrBytes>, held: &Option<String>| matches!((asked, held), (Some(a), Some(h)) if a.as_str() != h);
            if differs(&request.protocol_type, &protocol_type)
                || differs(&request.protocol_name, &protocol)
            {
                response.error_code = codes::INCONSISTENT_GROUP_PROTOCOL;
                return response;
            }
            response.protocol_type = protocol_type.map(str_bytes);
            response.protocol_name = protocol.map(str_bytes);
        }
        let outcome = self
            .check_instance(
                &request.group_id,
                &request.member_id,
                request.group_instance_id.as_ref(),
            )
            .and_then(|()| {
                let assignments = request
                    .assignments
                    .into_iter()
                    .map(|a| (a.member_id.to_string(), a.assignment))
                    .collect();
                let wait = self.log.coordinator().rebalance_timeout(&request.group_id) + PARK_SLACK;
                self.log.coordinator().sync_and_wait(
                    &request.group_id,
                    &request.member_id,
                    request.generation_id,
                    Some(assignments),
                    self.log.clock(),
                    wait,
                )
            });
        match outcome {
            Ok(assignment) => response.assignment = assignment,
            Err(e) => response.error_code = engine_codes::for_group_error(e),
        }
        response
    }

    pub(crate) fn heartbeat(&self, request: HeartbeatRequest, peer: &Peer) -> HeartbeatResponse {
        let mut response = HeartbeatResponse::default();
        if !self.guard().allowed(
            &peer.caller,
            Operation::Read,
            ResourceType::Group,
            &request.group_id,
        ) {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        let outcome = self
            .check_instance(
                &request.group_id,
                &request.member_id,
                request.group_instance_id.as_ref(),
            )
            .and_then(|()| {
                self.log.coordinator().heartbeat(
                    &request.group_id,
                    &request.member_id,
                    request.generation_id,
                    self.now_ms(),
                )
            });
        if let Err(e) = outcome {
            response.error_code = engine_codes::for_group_error(e);
        }
        response
    }

    pub(crate) fn leave_group(
        &self,
        request: LeaveGroupRequest,
        version: i16,
        peer: &Peer,
    ) -> LeaveGroupResponse {
        let mut response = LeaveGroupResponse::default();
        if !self.guard().allowed(
            &peer.caller,
            Operation::Read,
            ResourceType::Group,
            &request.group_id,
        ) {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        let coordinator = self.log.coordinator();
        let now = self.now_ms();
        if version < 3 {
            if let Err(e) = coordinator.leave(&request.group_id, &request.member_id, now) {
                response.error_code = engine_codes::for_group_error(e);
            }
            return response;
        }
        for identity in request.members {
            if let Some(reason) = identity.reason.as_deref().filter(|r| !r.is_empty()) {
                tracing::info!(
                    group = request.group_id.as_str(),
                    member = identity.member_id.as_str(),
                    reason,
                    "member leaves"
                );
            }
            let outcome = match &identity.group_instance_id {
                Some(instance) => coordinator
                    .leave_instance(&request.group_id, instance, Some(&identity.member_id), now)
                    .map(|_| ()),
                None => coordinator.leave(&request.group_id, &identity.member_id, now),
            };
            let mut member = MemberResponse::default();
            member.member_id = identity.member_id;
            member.group_instance_id = identity.group_instance_id;
            if let Err(e) = outcome {
                member.error_code = engine_codes::for_group_error(e);
            }
            response.members.push(member);
        }
        response
    }

    pub(crate) fn offset_commit(
        &self,
        request: OffsetCommitRequest,
        peer: &Peer,
    ) -> OffsetCommitResponse {
        let group = request.group_id.to_string();
        let now = self.now_ms();
        let allowed =
            if !self
                .guard()
                .allowed(&peer.caller, Operation::Read, ResourceType::Group, &group)
            {
                Err(codes::GROUP_AUTHORIZATION_FAILED)
            } else if group.is_empty() {
                Err(codes::INVALID_GROUP_ID)
            } else {
                self.check_instance(
                    &group,
                    &request.member_id,
                    request.group_instance_id.as_ref(),
                )
                .and_then(|()| {
                    self.log.coordinator().validate_commit(
                        &group,
                        &request.member_id,
                        request.generation_id_or_member_epoch,
                        now,
                    )
                })
                .map_err(engine_codes::for_group_error)
            };
        let max_metadata = self.log.offsets().max_metadata_bytes();
        let mut results: Vec<(TopicName, Vec<PartitionVerdict>)> = Vec::new();
        let mut commits = Vec::new();
        for topic in request.topics {
            let partitions = self.log.partition_count(&topic.name).ok();
            // Kafka checks the group first, then READ on each topic.
            let topic_allowed = allowed.is_err()
                || self.guard().allowed(
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
    pub(crate) fn offset_fetch(
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
                match self.committed_offsets(&asked.group_id, topics, peer) {
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
        let found = match self.committed_offsets(&request.group_id, topics.clone(), peer) {
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
    /// the topics the principal may not describe), or the group-level refusal.
    fn committed_offsets(
        &self,
        group: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
        peer: &Peer,
    ) -> Result<Vec<(String, Vec<CommittedPartition>)>, i16> {
        if !self.guard().allowed(
            &peer.caller,
            Operation::Describe,
            ResourceType::Group,
            group,
        ) {
            return Err(codes::GROUP_AUTHORIZATION_FAILED);
        }
        let offsets = self.log.offsets();
        let wanted = match topics {
            Some(topics) => topics,
            None => {
                let mut all: Vec<(String, Vec<i32>)> = Vec::new();
                // Topics the principal may not describe are left out, as Kafka does.
                let visible = offsets
                    .group_offsets(group)
                    .into_iter()
                    .filter(|(topic, _, _)| {
                        self.guard().allows(
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
                let allowed = self.guard().allowed(
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

    /// Every group with DESCRIBE on the cluster, otherwise the groups the principal may
    /// describe; never an error, as in Kafka.
    ///
    /// v4 filters by state (KIP-518) and v5 by type (KIP-848: every logd group is `classic`),
    /// both case-insensitively as Kafka; each group comes with its state from v4 and its type
    /// from v5.
    pub(crate) fn list_groups(
        &self,
        request: ListGroupsRequest,
        version: i16,
        peer: &Peer,
    ) -> ListGroupsResponse {
        let mut response = ListGroupsResponse::default();
        let wanted = |filter: &[StrBytes], value: &str| {
            filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(value))
        };
        let all = self.guard().allows(
            &peer.caller,
            Operation::Describe,
            ResourceType::Cluster,
            crate::acl::CLUSTER_NAME,
        );
        response.groups = self
            .log
            .list_groups()
            .into_iter()
            .filter(|id| {
                all || self.guard().allows(
                    &peer.caller,
                    Operation::Describe,
                    ResourceType::Group,
                    id,
                )
            })
            .map(|id| (self.group_state(&id), id))
            .filter(|(state, _)| {
                wanted(&request.states_filter, state) && wanted(&request.types_filter, CLASSIC)
            })
            .map(|(state, id)| {
                let mut group = ListedGroup::default();
                group.group_id = GroupId(str_bytes(id));
                group.protocol_type = str_bytes("consumer");
                if version >= 4 {
                    group.group_state = str_bytes(state);
                }
                if version >= 5 {
                    group.group_type = str_bytes(CLASSIC);
                }
                group
            })
            .collect();
        response
    }

    /// A group's state as Kafka names it: its phase while it has a live record, `Empty` when
    /// only its committed offsets remain, `Dead` when it is unknown.
    fn group_state(&self, id: &str) -> &'static str {
        match self.log.coordinator().read_group(id, |g| g.phase()) {
            Some(phase) => state_name(Some(phase)),
            None if !self.log.offsets().group_offsets(id).is_empty() => {
                state_name(Some(GroupPhase::Empty))
            }
            None => state_name(None),
        }
    }

    pub(crate) fn describe_groups(
        &self,
        request: DescribeGroupsRequest,
        version: i16,
        peer: &Peer,
    ) -> DescribeGroupsResponse {
        let mut response = DescribeGroupsResponse::default();
        for id in request.groups {
            let mut described = DescribedGroup::default();
            if !self
                .guard()
                .allowed(&peer.caller, Operation::Describe, ResourceType::Group, &id)
            {
                described.error_code = codes::GROUP_AUTHORIZATION_FAILED;
                if version >= 3 {
                    described.authorized_operations = i32::MIN;
                }
                described.group_id = id;
                response.groups.push(described);
                continue;
            }
            let live = self.log.coordinator().read_group(&id, |g| {
                (
                    g.phase(),
                    g.protocol_type().unwrap_or("consumer").to_owned(),
                    g.protocol().map(str::to_owned),
                    g.members(),
                )
            });
            let has_offsets = !self.log.offsets().group_offsets(&id).is_empty();
            match live {
                Some((phase, protocol_type, protocol, members)) => {
                    described.group_state = str_bytes(state_name(Some(phase)));
                    described.protocol_type = str_bytes(protocol_type);
                    described.protocol_data = str_bytes(protocol.unwrap_or_default());
                    described.members = members
                        .into_iter()
                        .map(|m| {
                            let mut member = DescribedGroupMember::default();
                            member.member_id = str_bytes(m.member_id);
                            if version >= 4 {
                                member.group_instance_id = m.group_instance_id.map(str_bytes);
                            }
                            member.client_id = str_bytes(m.client_id);
                            member.client_host = str_bytes(m.client_host);
                            member.member_metadata = m.metadata;
                            member.member_assignment = m.assignment;
                            member
                        })
                        .collect();
                }
                None if has_offsets => {
                    described.group_state = str_bytes(state_name(Some(GroupPhase::Empty)));
                    described.protocol_type = str_bytes("consumer");
                }
                None => {
                    described.group_state = str_bytes(state_name(None));
                    // v6 says so (KIP-1043); before, an unknown group is just `Dead`.
                    if version >= 6 {
                        described.error_code = codes::GROUP_ID_NOT_FOUND;
                        described.error_message =
                            Some(str_bytes(format!("Group {} not found.", id.0)));
                    }
                }
            }
            if version >= 3 {
                described.authorized_operations = if request.include_authorized_operations {
                    self.group_operations(peer, &id)
                } else {
                    // Not requested: Kafka's "unknown" marker.
                    i32::MIN
                };
            }
            described.group_id = id;
            response.groups.push(described);
        }
        response
    }

    /// The operations `peer` may do on group `id`, as Kafka's bit field (bit n for the
    /// operation of code n) over those a group has: READ, DESCRIBE, DELETE.
    fn group_operations(&self, peer: &Peer, id: &str) -> i32 {
        [Operation::Read, Operation::Describe, Operation::Delete]
            .into_iter()
            .filter(|op| {
                self.guard()
                    .allows(&peer.caller, *op, ResourceType::Group, id)
            })
            .fold(0, |bits, op| bits | (1 << op.code()))
    }

    pub(crate) fn delete_groups(
        &self,
        request: DeleteGroupsRequest,
        peer: &Peer,
    ) -> DeleteGroupsResponse {
        let mut response = DeleteGroupsResponse::default();
        for id in request.groups_names {
            let mut result = DeletableGroupResult::default();
            result.error_code = match self.admin.delete_group(&peer.caller, &id) {
                Ok(true) => codes::NONE,
                Ok(false) => codes::GROUP_ID_NOT_FOUND,
                Err(Refused::Engine(logd::Error::Group(e))) => engine_codes::for_group_error(e),
                Err(Refused::Engine(e)) => {
                    tracing::error!(group = %id.0, error = %e, "delete group failed");
                    codes::COORDINATOR_NOT_AVAILABLE
                }
                Err(refused) => refused.code(),
            };
            result.group_id = id;
            response.results.push(result);
        }
        response
    }

    /// Deletes committed offsets, refused per topic while an active member subscribes to it.
    pub(crate) fn offset_delete(
        &self,
        request: OffsetDeleteRequest,
        peer: &Peer,
    ) -> OffsetDeleteResponse {
        let group = request.group_id.to_string();
        if !self
            .guard()
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
                    .guard()
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
