//! DescribeTopicPartitions (v0), the Kafka 4.x admin's `describeTopics`: topics sorted by
//! name (every topic the principal may describe when none is named), each with its
//! partitions, at most `response_partition_limit` of them per answer (and at most 2,000,
//! Kafka's `max.request.partition.size.limit`), the rest behind a cursor, as Kafka's
//! `DescribeTopicPartitionsRequestHandler` pages them. One node leads every partition at
//! epoch 0 with no eligible leader replicas beside it.

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::cluster::TOPIC_OPERATIONS;
use crate::acl::{Operation, ResourceType};
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;

/// Kafka's `max.request.partition.size.limit`: the most partitions one answer carries.
const MAX_PARTITIONS: i32 = 2000;

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// DescribeTopicPartitions.
#[derive(Debug)]
pub(super) struct TopicPartitionsApi {
    pub(super) log: logd::Log,
    pub(super) guard: Guard,
    /// The leader of every partition.
    pub(super) node_id: i32,
}

impl TopicPartitionsApi {
    pub(super) fn describe_topic_partitions(
        &self,
        request: DescribeTopicPartitionsRequest,
        peer: &Peer,
    ) -> DescribeTopicPartitionsResponse {
        let mut response = DescribeTopicPartitionsResponse::default();
        let every_topic = request.topics.is_empty();
        let (cursor_topic, cursor_partition) =
            request.cursor.as_ref().map_or((String::new(), 0), |c| {
                (c.topic_name.to_string(), c.partition_index)
            });
        let mut names: Vec<String> = match every_topic {
            true => self.log.list_topics(),
            false => request.topics.iter().map(|t| t.name.to_string()).collect(),
        };
        names.retain(|name| *name >= cursor_topic);
        names.sort();
        names.dedup();
        let bad_cursor = request.cursor.is_some()
            && (cursor_partition < 0 || (!every_topic && !names.contains(&cursor_topic)));
        if bad_cursor {
            // Kafka refuses the whole request: every topic asked for carries the error.
            response.topics = request
                .topics
                .iter()
                .map(|t| {
                    let mut topic = DescribeTopicPartitionsResponseTopic::default();
                    topic.error_code = codes::INVALID_REQUEST;
                    topic.name = Some(t.name.clone());
                    topic
                })
                .collect();
            return response;
        }
        let mut refused = Vec::new();
        let mut remaining = request.response_partition_limit.clamp(1, MAX_PARTITIONS);
        for name in names {
            // Listing every topic leaves out quietly the ones the principal may not see.
            let allowed = match every_topic {
                true => self.guard.allows(
                    &peer.caller,
                    Operation::Describe,
                    ResourceType::Topic,
                    &name,
                ),
                false => self.guard.allowed(
                    &peer.caller,
                    Operation::Describe,
                    ResourceType::Topic,
                    &name,
                ),
            };
            if !allowed {
                if !every_topic {
                    let mut topic = DescribeTopicPartitionsResponseTopic::default();
                    topic.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                    topic.name = Some(topic_name(&name));
                    refused.push(topic);
                }
                continue;
            }
            if remaining == 0 {
                // The next answer starts at this topic.
                let mut next = Cursor::default();
                next.topic_name = topic_name(&name);
                next.partition_index = 0;
                response.next_cursor = Some(next);
                break;
            }
            let mut topic = DescribeTopicPartitionsResponseTopic::default();
            topic.name = Some(topic_name(&name));
            let Ok((id, count)) = self.log.topic_id_and_partitions(&name) else {
                if !every_topic {
                    topic.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                    response.topics.push(topic);
                }
                continue;
            };
            let count = count as i32;
            let first = if name == cursor_topic {
                cursor_partition
            } else {
                0
            };
            let end = count.min(first.saturating_add(remaining));
            topic.topic_id = Uuid::from_bytes(id);
            topic.topic_authorized_operations = self.guard.authorized_operations(
                &peer.caller,
                ResourceType::Topic,
                &name,
                &TOPIC_OPERATIONS,
            );
            let node = BrokerId(self.node_id);
            topic.partitions = (first..end)
                .map(|index| {
                    let mut partition = DescribeTopicPartitionsResponsePartition::default();
                    partition.partition_index = index;
                    partition.leader_id = node;
                    partition.leader_epoch = 0;
                    partition.replica_nodes = vec![node];
                    partition.isr_nodes = vec![node];
                    partition.eligible_leader_replicas = Some(Vec::new());
                    partition.last_known_elr = Some(Vec::new());
                    partition
                })
                .collect();
            response.topics.push(topic);
            if end < count {
                let mut next = Cursor::default();
                next.topic_name = topic_name(&name);
                next.partition_index = end;
                response.next_cursor = Some(next);
                break;
            }
            remaining -= (end - first).max(0);
        }
        response.topics.extend(refused);
        response
    }
}
