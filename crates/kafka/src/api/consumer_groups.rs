//! ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848's consumer group protocol) over
//! the engine's `consumer_group` state: topic ids to names and back, the member id a version-0
//! member leaves to the broker, and Kafka's checks: READ on the group, DESCRIBE on each
//! subscribed topic, a version-1 member with no id or a join without what a join must bring
//! INVALID_REQUEST, a regular expression that does not compile INVALID_REGULAR_EXPRESSION (an
//! empty one is none; the engine resolves one against the topics at each of the member's
//! heartbeats).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, TopicName, consumer_group_describe_response,
};
use kafka_protocol::protocol::StrBytes;
use logd::SubscriptionChange;
use logd::groups::consumer::{Heartbeat, ServerAssignor};

use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes::for_engine_error;

/// What Kafka's coordinator refuses as INVALID_REQUEST in a heartbeat (beside an empty group
/// or member id, checked first), in Kafka's words: a join (epoch 0) must bring its rebalance
/// timeout, an empty owned list and a subscription; a static member leaving for now (-2) its
/// instance id; no other negative epoch exists. The join checks are replayed against Kafka
/// 4.4 by the daemon test `consumer_protocol_requests_answer_on_logd_as_on_kafka`; the others
/// follow Kafka's `GroupMetadataManager`.
fn invalid_heartbeat(request: &ConsumerGroupHeartbeatRequest) -> Option<&'static str> {
    if request.instance_id.as_ref().is_some_and(|i| i.is_empty()) {
        return Some("InstanceId can't be empty.");
    }
    if request.rack_id.as_ref().is_some_and(|r| r.is_empty()) {
        return Some("RackId can't be empty.");
    }
    match request.member_epoch {
        0 => {
            if request.rebalance_timeout_ms == -1 {
                return Some("RebalanceTimeoutMs must be provided in first request.");
            }
            if request
                .topic_partitions
                .as_ref()
                .is_none_or(|owned| !owned.is_empty())
            {
                return Some("TopicPartitions must be empty when (re-)joining.");
            }
            let names = request
                .subscribed_topic_names
                .as_ref()
                .is_some_and(|n| !n.is_empty());
            let regex = request
                .subscribed_topic_regex
                .as_ref()
                .is_some_and(|r| !r.is_empty());
            if !names && !regex {
                return Some(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                );
            }
            None
        }
        -2 if request.instance_id.is_none() => Some("InstanceId can't be null."),
        epoch if epoch < -2 => Some("MemberEpoch is invalid."),
        _ => None,
    }
}

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// ConsumerGroupHeartbeat.
#[derive(Debug)]
pub(super) struct ConsumerGroupApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    /// Member ids issued to version-0 members.
    pub(super) ids_issued: AtomicU64,
}

impl ConsumerGroupApi {
    pub(super) fn consumer_group_heartbeat(
        &self,
        request: ConsumerGroupHeartbeatRequest,
        version: i16,
        client_id: &str,
        peer: &Peer,
    ) -> ConsumerGroupHeartbeatResponse {
        let mut response = ConsumerGroupHeartbeatResponse::default();
        let group = request.group_id.0.as_str();
        let refuse = |response: &mut ConsumerGroupHeartbeatResponse, code, message: String| {
            response.error_code = code;
            response.error_message = Some(text(message));
        };
        if !self
            .guard
            .allowed(&peer.caller, Operation::Read, ResourceType::Group, group)
        {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        if group.is_empty() {
            refuse(
                &mut response,
                codes::INVALID_REQUEST,
                "GroupId can't be empty.".into(),
            );
            return response;
        }
        let mut member_id = request.member_id.to_string();
        if member_id.is_empty() {
            if version >= 1 || request.member_epoch != 0 {
                refuse(
                    &mut response,
                    codes::INVALID_REQUEST,
                    "MemberId can't be empty.".into(),
                );
                return response;
            }
            // Version 0 left the id to the broker: unique in this process's life, and across
            // restarts by the time in it.
            let issued = self.ids_issued.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            member_id = format!("{client_id}-{nanos:x}-{issued:x}");
        }
        if let Some(invalid) = invalid_heartbeat(&request) {
            refuse(&mut response, codes::INVALID_REQUEST, invalid.into());
            return response;
        }
        let names: Option<BTreeSet<String>> = request
            .subscribed_topic_names
            .map(|names| names.iter().map(|t| t.0.to_string()).collect());
        if let Some(topics) = &names
            && let Some(refused) = topics.iter().find(|t| {
                !self
                    .guard
                    .allowed(&peer.caller, Operation::Describe, ResourceType::Topic, t)
            })
        {
            refuse(
                &mut response,
                codes::TOPIC_AUTHORIZATION_FAILED,
                format!("Topic {refused} is not authorized."),
            );
            return response;
        }
        let assignor = match request.server_assignor.as_deref() {
            None => None,
            Some(name) => match ServerAssignor::named(name) {
                Some(assignor) => Some(assignor),
                None => {
                    refuse(
                        &mut response,
                        ResponseError::UnsupportedAssignor.code(),
                        format!(
                            "ServerAssignor {name} is not supported. Supported assignors: uniform, range."
                        ),
                    );
                    return response;
                }
            },
        };
        // Owned partitions of topics that are gone no longer count.
        let owned = request.topic_partitions.map(|owned| {
            let mut by_name: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
            for tp in owned {
                if let Some(name) = self.log.topic_name_by_id(tp.topic_id.as_bytes()) {
                    by_name
                        .entry(name)
                        .or_default()
                        .extend(tp.partitions.iter().filter_map(|&p| u32::try_from(p).ok()));
                }
            }
            by_name
        });
        let beat = Heartbeat {
            member_id: member_id.clone(),
            member_epoch: request.member_epoch,
            instance_id: request.instance_id.map(|i| i.to_string()),
            // The engine resolves the subscription (names and expression) to topics.
            subscribed: None,
            assignor,
            owned,
        };
        let subscription = SubscriptionChange {
            names,
            regex: request.subscribed_topic_regex.map(|r| r.to_string()),
        };
        match self.log.consumer_heartbeat(
            group,
            beat,
            subscription,
            (client_id, &peer.member_host()),
            &|topic| {
                self.guard.allowed(
                    &peer.caller,
                    Operation::Describe,
                    ResourceType::Topic,
                    topic,
                )
            },
        ) {
            Ok(answer) => {
                response.member_id = Some(text(member_id));
                response.member_epoch = answer.member_epoch;
                response.heartbeat_interval_ms =
                    i32::try_from(self.log.consumer_heartbeat_interval_ms(group)).unwrap_or(5_000);
                response.assignment = answer.assignment.map(|assigned| {
                    let mut assignment = Assignment::default();
                    assignment.topic_partitions = assigned
                        .into_iter()
                        .filter_map(|(topic, partitions)| {
                            let (id, _) = self.log.topic_id_and_partitions(&topic).ok()?;
                            let mut tp = TopicPartitions::default();
                            tp.topic_id = uuid::Uuid::from_bytes(id);
                            tp.partitions = partitions.iter().map(|&p| p as i32).collect();
                            Some(tp)
                        })
                        .collect();
                    assignment
                });
            }
            Err(e) => refuse(&mut response, for_engine_error(&e), e.to_string()),
        }
        response
    }

    /// ConsumerGroupDescribe: each group's state, epochs, assignor and members with their
    /// subscriptions, assignments and targets; DESCRIBE on the group; a group that is not of
    /// the consumer protocol is GROUP_ID_NOT_FOUND, on which Kafka's admin describes it with
    /// DescribeGroups instead.
    pub(super) fn consumer_group_describe(
        &self,
        request: ConsumerGroupDescribeRequest,
        version: i16,
        peer: &Peer,
    ) -> ConsumerGroupDescribeResponse {
        use consumer_group_describe_response::{
            Assignment, DescribedGroup, Member, TopicPartitions,
        };
        let mut response = ConsumerGroupDescribeResponse::default();
        let by_name = |assignment: &logd::groups::consumer::Assignment| {
            let mut described = Assignment::default();
            described.topic_partitions = assignment
                .iter()
                .filter_map(|(topic, partitions)| {
                    let (id, _) = self.log.topic_id_and_partitions(topic).ok()?;
                    let mut tp = TopicPartitions::default();
                    tp.topic_id = uuid::Uuid::from_bytes(id);
                    tp.topic_name = TopicName(text(topic.clone()));
                    tp.partitions = partitions.iter().map(|&p| p as i32).collect();
                    Some(tp)
                })
                .collect();
            described
        };
        for id in request.group_ids {
            let mut group = DescribedGroup::default();
            group.group_id = id.clone();
            group.authorized_operations = i32::MIN;
            let name = id.0.as_str();
            let described = self.log.describe_consumer_group(name);
            if !self
                .guard
                .allowed(&peer.caller, Operation::Describe, ResourceType::Group, name)
            {
                group.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            } else if let Some(d) = described {
                group.group_state = text(d.state);
                group.group_epoch = d.group_epoch;
                group.assignment_epoch = d.assignment_epoch;
                group.assignor_name = text(d.assignor);
                group.members = d
                    .members
                    .iter()
                    .map(|m| {
                        let mut member = Member::default();
                        member.member_id = text(m.member_id.clone());
                        member.member_epoch = m.member_epoch;
                        member.client_id = text(m.client_id.clone());
                        member.client_host = text(m.client_host.clone());
                        member.subscribed_topic_names = m
                            .subscribed
                            .iter()
                            .map(|t| TopicName(text(t.clone())))
                            .collect();
                        member.subscribed_topic_regex = m.regex.clone().map(text);
                        member.assignment = by_name(&m.assigned);
                        member.target_assignment = by_name(&m.target);
                        if version >= 1 {
                            // 1: the consumer protocol's member (0 would be a classic one).
                            member.member_type = 1;
                        }
                        member
                    })
                    .collect();
            } else {
                group.error_code = codes::GROUP_ID_NOT_FOUND;
                group.error_message = Some(text(format!("Group {name} is not a consumer group.")));
            }
            response.groups.push(group);
        }
        response
    }
}
