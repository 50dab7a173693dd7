//! Serves logd's own DescribePartitionRanges (its codec is `logd_protocol::partition_ranges`):
//! each partition of a topic divided as the log cleaner sees it.

use logd_protocol::acl::{Operation, ResourceType};
use logd_protocol::codes;
use logd_protocol::partition_ranges::{
    PartitionRanges, PartitionRangesRequest, PartitionRangesResponse,
};

use crate::auth::Peer;
use crate::broker::Broker;
use crate::engine_codes;

impl Broker {
    /// Answers DescribePartitionRanges: needs DESCRIBE on the topic, as ListOffsets does.
    pub(crate) fn partition_ranges(
        &self,
        request: &PartitionRangesRequest,
        peer: &Peer,
    ) -> PartitionRangesResponse {
        let refused = |error_code, message: String| PartitionRangesResponse {
            error_code,
            error_message: Some(message),
            partitions: Vec::new(),
        };
        let topic = &request.topic;
        if !self.guard().allowed(
            &peer.caller,
            Operation::Describe,
            ResourceType::Topic,
            topic,
        ) {
            return refused(
                codes::TOPIC_AUTHORIZATION_FAILED,
                format!("not authorized to describe topic {topic}"),
            );
        }
        match self.log.cleaner_ranges(topic) {
            Ok(ranges) => PartitionRangesResponse {
                error_code: 0,
                error_message: None,
                partitions: ranges
                    .into_iter()
                    .map(|r| PartitionRanges {
                        partition: r.partition as i32,
                        log_start: r.log_start,
                        cleaned_up_to: r.cleaned_up_to,
                        cleanable_end: r.cleanable_end,
                        active_start: r.active_start,
                        log_end: r.log_end,
                    })
                    .collect(),
            },
            Err(e) => refused(engine_codes::for_engine_error(&e), e.to_string()),
        }
    }
}
