//! ConsumerGroupHeartbeat (KIP-848's consumer group protocol) over the engine's
//! `consumer_group` state: topic ids to names and back, the member id a version-0 member
//! leaves to the broker, and Kafka's checks: READ on the group, DESCRIBE on each subscribed
//! topic, a version-1 member with no id INVALID_REQUEST; a regular-expression subscription is
//! not served yet (INVALID_REQUEST, which the client reports; an empty expression is none).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use logd::consumer_group::{Heartbeat, ServerAssignor};

use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes::for_engine_error;

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
        // An empty expression is none (librdkafka sends one with a list of names).
        if request
            .subscribed_topic_regex
            .as_ref()
            .is_some_and(|regex| !regex.is_empty())
        {
            refuse(
                &mut response,
                codes::INVALID_REQUEST,
                "SubscribedTopicRegex is not served by logd yet; subscribe by topic names.".into(),
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
        let subscribed: Option<BTreeSet<String>> = request
            .subscribed_topic_names
            .map(|names| names.iter().map(|t| t.0.to_string()).collect());
        if let Some(topics) = &subscribed
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
            subscribed,
            assignor,
            owned,
        };
        match self
            .log
            .consumer_heartbeat(group, beat, (client_id, &peer.member_host()))
        {
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
}
