//! OffsetForLeaderEpoch, v2 to v4 as Kafka 4.x serves it to clients: a consumer validating its
//! position after a leader change asks where an epoch ended. logd is one node whose only leader
//! epoch is 0, so epoch 0 ends at the log end offset and a later epoch is unknown (-1, -1), as
//! Kafka's epoch cache answers; a client that believes in a newer current epoch than 0 is
//! answered UNKNOWN_LEADER_EPOCH. DESCRIBE on each topic, as Kafka checks it for consumers;
//! a follower's request (a replica id) needs CLUSTER_ACTION, which no logd client has reason
//! to send.

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use crate::acl::{Operation, ResourceType};
use crate::auth::Peer;
use crate::broker::Broker;
use crate::codes;
use crate::engine_codes;

/// The one leader epoch a single node ever has.
const LEADER_EPOCH: i32 = 0;

impl Broker {
    pub(crate) fn offset_for_leader_epoch(
        &self,
        request: OffsetForLeaderEpochRequest,
        peer: &Peer,
    ) -> OffsetForLeaderEpochResponse {
        let follower = request.replica_id.0 >= 0;
        let follower_refused = follower
            && !self
                .guard()
                .allowed_on_cluster(&peer.caller, Operation::ClusterAction);
        let mut response = OffsetForLeaderEpochResponse::default();
        for topic in request.topics {
            let refused = follower_refused
                || !self.guard().allowed(
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
}
