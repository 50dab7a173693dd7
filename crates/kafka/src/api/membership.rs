//! The membership APIs of classic consumer groups: FindCoordinator, JoinGroup, SyncGroup,
//! Heartbeat and LeaveGroup. Each translates into the engine's coordinator, where the group
//! rules live. JoinGroup and SyncGroup park the connection's thread until the group answers,
//! as Kafka parks those requests; a client sends its other requests on other connections
//! meanwhile.

use std::time::Duration;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest,
    SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use logd::groups::classic::{GroupError, JoinRequest, JoinStatus};

use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;

/// A parked JoinGroup or SyncGroup gives up this long after the rebalance timeout (the group
/// ends a join phase at that timeout, so this only fires if something is badly wrong).
const PARK_SLACK: Duration = Duration::from_secs(5);

fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// FindCoordinator, JoinGroup, SyncGroup, Heartbeat and LeaveGroup.
#[derive(Debug)]
pub(super) struct MembershipApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    /// The coordinator of every group: this node.
    pub(super) node_id: i32,
}

/// FENCED_INSTANCE_ID if `instance_id` is held by another member than `member_id`.
pub(super) fn check_instance(
    log: &logd::Log,
    group: &str,
    member_id: &str,
    instance_id: Option<&StrBytes>,
) -> Result<(), GroupError> {
    match instance_id {
        Some(instance) => log.coordinator().check_instance(group, instance, member_id),
        None => Ok(()),
    }
}

impl MembershipApi {
    fn now_ms(&self) -> i64 {
        self.log.clock().now_ms()
    }

    /// FindCoordinator: this node, for a group (key type 0, DESCRIBE on it) or a transactional
    /// id (1); one key before v4, a batch of keys from v4 (KIP-699).
    pub(super) fn find_coordinator(
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
            .guard
            .allowed(&peer.caller, Operation::Describe, resource_type, key)
        {
            found.error_code = refused;
            found.error_message = Some(str_bytes("Authorization failed."));
            found.node_id = BrokerId(-1);
            found.host = StrBytes::default();
            found.port = -1;
            return found;
        }
        found.node_id = BrokerId(self.node_id);
        found.host = str_bytes(peer.listener.advertised_host.clone());
        found.port = i32::from(peer.listener.advertised_port);
        found.error_message = None;
        found
    }

    pub(super) fn join_group(
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
        if !self.guard.allowed(
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
        let outcome = self
            .log
            .join_classic_and_wait(&request.group_id, join, wait);
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

    /// SyncGroup; from v5 the member names the protocol type and name it joined with, which
    /// must be the group's (INCONSISTENT_GROUP_PROTOCOL otherwise), and the answer names them.
    pub(super) fn sync_group(
        &self,
        request: SyncGroupRequest,
        version: i16,
        peer: &Peer,
    ) -> SyncGroupResponse {
        let mut response = SyncGroupResponse::default();
        if !self.guard.allowed(
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
        let outcome = check_instance(
            &self.log,
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

    pub(super) fn heartbeat(&self, request: HeartbeatRequest, peer: &Peer) -> HeartbeatResponse {
        let mut response = HeartbeatResponse::default();
        if !self.guard.allowed(
            &peer.caller,
            Operation::Read,
            ResourceType::Group,
            &request.group_id,
        ) {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        let outcome = check_instance(
            &self.log,
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

    pub(super) fn leave_group(
        &self,
        request: LeaveGroupRequest,
        version: i16,
        peer: &Peer,
    ) -> LeaveGroupResponse {
        let mut response = LeaveGroupResponse::default();
        if !self.guard.allowed(
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
}
