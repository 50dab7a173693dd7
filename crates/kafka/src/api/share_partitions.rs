//! logd's own DescribeSharePartitions (its codec is `logd_protocol::share_partitions`): each
//! share-partition of a share group with its records in flight by state and Kafka's share lag,
//! which no Kafka API carries. DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), as
//! DescribeShareGroupOffsets; partitions of topics the caller may not describe are left out.

use logd_protocol::share_partitions::{
    SharePartitionCounts, SharePartitionsRequest, SharePartitionsResponse,
};

use super::share::ShareApi;
use crate::acl::{Operation, ResourceType};
use crate::auth::Peer;
use crate::codes;

impl ShareApi {
    pub(super) fn share_partitions(
        &self,
        request: &SharePartitionsRequest,
        peer: &Peer,
    ) -> SharePartitionsResponse {
        let group = &request.group;
        let allowed = |operation, resource, name: &str| {
            self.guard.allowed(&peer.caller, operation, resource, name)
        };
        if !allowed(Operation::Describe, ResourceType::Group, group) {
            return SharePartitionsResponse {
                error_code: codes::GROUP_AUTHORIZATION_FAILED,
                error_message: Some(format!("Group {group} is not authorized.")),
                partitions: Vec::new(),
            };
        }
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let partitions = self
            .log
            .share_partitions(group)
            .into_iter()
            .filter(|p| allowed(Operation::Describe, ResourceType::Topic, &p.topic))
            .map(|p| {
                let lag = self
                    .log
                    .partition(&p.topic, p.partition)
                    .ok()
                    .and_then(|log| p.lag(log.high_watermark().0));
                let [available, acquired, acknowledged, archived] = p.counts;
                SharePartitionCounts {
                    partition: p.partition as i32,
                    start_offset: p.start_offset,
                    end_offset: p.end_offset,
                    available: count(available),
                    acquired: count(acquired),
                    acknowledged: count(acknowledged),
                    archived: count(archived),
                    lag: lag.unwrap_or(-1),
                    topic: p.topic,
                }
            })
            .collect();
        SharePartitionsResponse {
            error_code: 0,
            error_message: None,
            partitions,
        }
    }
}
