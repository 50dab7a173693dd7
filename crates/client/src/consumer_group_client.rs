//! [`AsyncClient`]'s view of a group of the next consumer group protocol (KIP-848) for
//! `logd groups describe`: ConsumerGroupDescribe to the group's coordinator, as Kafka's admin
//! client asks before falling back to DescribeGroups (which does not see such groups).

use kafka_protocol::messages::consumer_group_describe_response::Assignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::group_client::GroupMember;
use crate::routing::Route;

const CONSUMER_GROUP_DESCRIBE: i16 = 0;
/// GROUP_ID_NOT_FOUND: not a consumer-protocol group.
const GROUP_ID_NOT_FOUND: i16 = 69;

/// A consumer-protocol group as ConsumerGroupDescribe reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupInfo {
    /// `Empty`, `Assigning`, `Reconciling` or `Stable`.
    pub state: String,
    /// The group epoch.
    pub epoch: i32,
    /// The server-side assignor the targets come from.
    pub assignor: String,
    /// Its members, each with the partitions it is to own now.
    pub members: Vec<GroupMember>,
}

fn partitions(assignment: &Assignment) -> Vec<(String, u32)> {
    assignment
        .topic_partitions
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|&p| (t.topic_name.to_string(), p as u32))
        })
        .collect()
}

impl AsyncClient {
    /// Group `group` of the consumer protocol; `None` when it is not one, or the broker does
    /// not serve the protocol (before Kafka 4.0).
    pub async fn describe_consumer_group(
        &mut self,
        group: &str,
    ) -> Result<Option<ConsumerGroupInfo>> {
        if !self
            .wire
            .serves_key(ApiKey::ConsumerGroupDescribe as i16)
            .await?
        {
            return Ok(None);
        }
        let mut request = ConsumerGroupDescribeRequest::default();
        request.group_ids = vec![GroupId(StrBytes::from_string(group.to_owned()))];
        let response: ConsumerGroupDescribeResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::ConsumerGroupDescribe,
                CONSUMER_GROUP_DESCRIBE,
                &request,
                |r: &ConsumerGroupDescribeResponse| r.groups.first().map_or(0, |g| g.error_code),
            )
            .await?;
        let Some(described) = response.groups.into_iter().next() else {
            return Ok(None);
        };
        match described.error_code {
            GROUP_ID_NOT_FOUND => return Ok(None),
            0 => {}
            code => {
                let what = format!("consumer group {group}");
                return Err(Error::Kafka { what, code });
            }
        }
        Ok(Some(ConsumerGroupInfo {
            state: described.group_state.to_string(),
            epoch: described.group_epoch,
            assignor: described.assignor_name.to_string(),
            members: described
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id.to_string(),
                    instance_id: m.instance_id.map(|i| i.to_string()),
                    client_id: m.client_id.to_string(),
                    host: m.client_host.to_string(),
                    partitions: partitions(&m.assignment),
                })
                .collect(),
        }))
    }
}
