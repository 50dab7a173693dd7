//! The admin APIs of consumer groups: ListGroups, DescribeGroups and DeleteGroups, read from
//! the engine's coordinator and offset store; a deletion goes through the admin layer, as the
//! console's does.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    GroupId, ListGroupsRequest, ListGroupsResponse,
};
use kafka_protocol::protocol::StrBytes;
use logd::groups::classic::GroupPhase;

use crate::acl::{Operation, ResourceType};
use crate::admin::Refused;
use crate::admin::{Admin, Guard};
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes;

/// The type of every group logd runs (KIP-848 calls the JoinGroup/SyncGroup protocol
/// `classic`).
const CLASSIC: &str = "classic";

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

/// The operations a group has, for its authorized-operations bit field.
const GROUP_OPERATIONS: [Operation; 3] = [Operation::Read, Operation::Describe, Operation::Delete];

/// ListGroups, DescribeGroups and DeleteGroups.
#[derive(Debug)]
pub(super) struct GroupAdminApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    /// Deletions go through it.
    pub(super) admin: Admin,
}

impl GroupAdminApi {
    /// Every group with DESCRIBE on the cluster, otherwise the groups the principal may
    /// describe; never an error, as in Kafka.
    ///
    /// v4 filters by state (KIP-518) and v5 by type (KIP-848: every logd group is `classic`),
    /// both case-insensitively as Kafka; each group comes with its state from v4 and its type
    /// from v5.
    pub(super) fn list_groups(
        &self,
        request: ListGroupsRequest,
        version: i16,
        peer: &Peer,
    ) -> ListGroupsResponse {
        let mut response = ListGroupsResponse::default();
        let wanted = |filter: &[StrBytes], value: &str| {
            filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(value))
        };
        let all = self.guard.allows(
            &peer.caller,
            Operation::Describe,
            ResourceType::Cluster,
            crate::acl::CLUSTER_NAME,
        );
        // A group is the consumer protocol's while it has such members, and after they left
        // unless classic members came since.
        let consumer_protocol: Vec<String> = self
            .log
            .consumer_group_ids()
            .into_iter()
            .filter(|id| {
                self.log
                    .consumer_group_members(id)
                    .is_some_and(|(_, m)| !m.is_empty())
                    || !self
                        .log
                        .coordinator()
                        .read_group(id, |g| !g.members().is_empty())
                        .unwrap_or(false)
            })
            .collect();
        response.groups = self
            .log
            .list_groups()
            .into_iter()
            .filter(|id| !consumer_protocol.contains(id))
            .filter(|id| {
                all || self
                    .guard
                    .allows(&peer.caller, Operation::Describe, ResourceType::Group, id)
            })
            .map(|id| (self.group_state(&id), id))
            .filter(|(state, _)| {
                wanted(&request.states_filter, state) && wanted(&request.types_filter, CLASSIC)
            })
            .map(|(state, id)| listed(id, "consumer", state, CLASSIC, version))
            .collect();
        // Consumer-protocol groups (KIP-848): type `consumer`, Stable with members, else Empty.
        for id in consumer_protocol.into_iter().filter(|id| {
            all || self
                .guard
                .allows(&peer.caller, Operation::Describe, ResourceType::Group, id)
        }) {
            let members = self
                .log
                .consumer_group_members(&id)
                .map_or(0, |(_, m)| m.len());
            let state = if members > 0 { "Stable" } else { "Empty" };
            if wanted(&request.states_filter, state) && wanted(&request.types_filter, "consumer") {
                response
                    .groups
                    .push(listed(id, "consumer", state, "consumer", version));
            }
        }
        // Share groups (KIP-932): type and protocol `share`, Stable with members, else Empty.
        let share_groups = self.log.share_group_ids().into_iter().filter(|id| {
            all || self
                .guard
                .allows(&peer.caller, Operation::Describe, ResourceType::Group, id)
        });
        for id in share_groups {
            let members = self
                .log
                .share_group_members(&id)
                .map_or(0, |(_, m)| m.len());
            let state = if members > 0 { "Stable" } else { "Empty" };
            if wanted(&request.states_filter, state) && wanted(&request.types_filter, "share") {
                response
                    .groups
                    .push(listed(id, "share", state, "share", version));
            }
        }
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

    pub(super) fn describe_groups(
        &self,
        request: DescribeGroupsRequest,
        version: i16,
        peer: &Peer,
    ) -> DescribeGroupsResponse {
        let mut response = DescribeGroupsResponse::default();
        for id in request.groups {
            let mut described = DescribedGroup::default();
            if !self
                .guard
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
                    self.guard.authorized_operations(
                        &peer.caller,
                        ResourceType::Group,
                        &id,
                        &GROUP_OPERATIONS,
                    )
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

    pub(super) fn delete_groups(
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
}

/// A ListGroups entry, with the fields `version` carries.
fn listed(id: String, protocol_type: &str, state: &str, kind: &str, version: i16) -> ListedGroup {
    let mut group = ListedGroup::default();
    group.group_id = GroupId(str_bytes(id));
    group.protocol_type = str_bytes(protocol_type);
    if version >= 4 {
        group.group_state = str_bytes(state);
    }
    if version >= 5 {
        group.group_type = str_bytes(kind);
    }
    group
}
