//! AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932, version 0): where a share
//! group reads a partition from, set or forgotten, as Kafka 4.4 answers them (compared with it
//! by the Java admin). READ on the group for an alter and DELETE for a delete
//! (GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED); a classic
//! group is GROUP_ID_NOT_FOUND ("is not a share group"), one with members NON_EMPTY_GROUP. An
//! alter of an unknown group makes it an empty share group, as on Kafka.

use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, TopicName, alter_share_group_offsets_response,
    delete_share_group_offsets_response,
};
use kafka_protocol::protocol::StrBytes;

use super::share::{ShareApi, text};
use crate::acl::{Operation, ResourceType};
use crate::auth::Peer;
use crate::codes;
use crate::engine_codes::for_engine_error;

/// Kafka's words for a topic or partition it does not have.
const NOT_HOSTED: &str = "This server does not host this topic-partition.";

/// The message beside an engine refusal: none for NON_EMPTY_GROUP (Kafka's client then says
/// its own "The group is not empty."), the engine's words otherwise.
fn engine_message(code: i16, error: &logd::Error) -> Option<StrBytes> {
    (code != codes::NON_EMPTY_GROUP).then(|| text(error.to_string()))
}

impl ShareApi {
    /// GROUP_ID_NOT_FOUND with Kafka's words when `group` is a classic group.
    fn not_a_share_group(&self, group: &str) -> Option<(i16, Option<String>)> {
        self.log.is_classic_group(group).then(|| {
            (
                codes::GROUP_ID_NOT_FOUND,
                Some(format!("Group {group} is not a share group.")),
            )
        })
    }

    pub(super) fn alter_share_group_offsets(
        &self,
        request: AlterShareGroupOffsetsRequest,
        peer: &Peer,
    ) -> AlterShareGroupOffsetsResponse {
        use alter_share_group_offsets_response::{
            AlterShareGroupOffsetsResponsePartition as Partition,
            AlterShareGroupOffsetsResponseTopic as Topic,
        };
        let group = request.group_id.0.as_str();
        let mut response = AlterShareGroupOffsetsResponse::default();
        let refusal =
            if self
                .guard
                .allowed(&peer.caller, Operation::Read, ResourceType::Group, group)
            {
                self.not_a_share_group(group)
            } else {
                Some((codes::GROUP_AUTHORIZATION_FAILED, None))
            };
        let mut wanted = Vec::new();
        for asked in &request.topics {
            let name = asked.topic_name.0.to_string();
            let mut topic = Topic::default();
            topic.topic_name = TopicName(text(name.clone()));
            let (id, uuid) = self.topic_id(&name);
            topic.topic_id = uuid;
            let allowed =
                self.guard
                    .allowed(&peer.caller, Operation::Read, ResourceType::Topic, &name);
            for p in &asked.partitions {
                let mut partition = Partition::default();
                partition.partition_index = p.partition_index;
                if let Some((code, message)) = &refusal {
                    partition.error_code = *code;
                    partition.error_message = message.clone().map(text);
                } else if !allowed {
                    partition.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                } else if id.is_none_or(|(_, count)| {
                    p.partition_index < 0 || p.partition_index as u32 >= count
                }) {
                    partition.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                    partition.error_message = Some(text(NOT_HOSTED));
                } else {
                    wanted.push((name.clone(), p.partition_index as u32, p.start_offset));
                }
                topic.partitions.push(partition);
            }
            response.responses.push(topic);
        }
        if let Some((code, message)) = refusal {
            response.error_code = code;
            response.error_message = message.map(text);
            return response;
        }
        if wanted.is_empty() {
            return response;
        }
        if let Err(e) = self.log.alter_share_offsets(group, &wanted) {
            let code = for_engine_error(&e);
            response.error_code = code;
            response.error_message = engine_message(code, &e);
            // The partitions it would have set carry it too (Kafka's client reads them).
            for topic in &mut response.responses {
                for p in &mut topic.partitions {
                    if p.error_code == codes::NONE {
                        p.error_code = code;
                    }
                }
            }
        }
        response
    }

    pub(super) fn delete_share_group_offsets(
        &self,
        request: DeleteShareGroupOffsetsRequest,
        peer: &Peer,
    ) -> DeleteShareGroupOffsetsResponse {
        use delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic as Topic;
        let group = request.group_id.0.as_str();
        let mut response = DeleteShareGroupOffsetsResponse::default();
        if !self
            .guard
            .allowed(&peer.caller, Operation::Delete, ResourceType::Group, group)
        {
            response.error_code = codes::GROUP_AUTHORIZATION_FAILED;
            return response;
        }
        let mut known = Vec::new();
        for asked in &request.topics {
            let name = asked.topic_name.0.to_string();
            let mut topic = Topic::default();
            topic.topic_name = TopicName(text(name.clone()));
            let (id, uuid) = self.topic_id(&name);
            topic.topic_id = uuid;
            if !self
                .guard
                .allowed(&peer.caller, Operation::Read, ResourceType::Topic, &name)
            {
                topic.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
            } else if id.is_none() {
                topic.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                topic.error_message = Some(text(NOT_HOSTED));
            } else {
                known.push((response.responses.len(), name));
            }
            response.responses.push(topic);
        }
        let refusal = self.not_a_share_group(group).or_else(|| {
            (!self.log.share_group_ids().iter().any(|g| g == group)).then(|| {
                (
                    codes::GROUP_ID_NOT_FOUND,
                    Some(format!("Group {group} not found.")),
                )
            })
        });
        if let Some((code, message)) = refusal {
            response.error_code = code;
            response.error_message = message.map(text);
            return response;
        }
        let names: Vec<String> = known.iter().map(|(_, n)| n.clone()).collect();
        match self.log.delete_share_offsets(group, &names) {
            Ok(had) => {
                for ((at, _), had) in known.iter().zip(had) {
                    if !had {
                        let topic = &mut response.responses[*at];
                        topic.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                        topic.error_message =
                            Some(text("There is no offset information to delete."));
                    }
                }
            }
            Err(e) => {
                let code = for_engine_error(&e);
                response.error_code = code;
                response.error_message = engine_message(code, &e);
            }
        }
        response
    }
}
