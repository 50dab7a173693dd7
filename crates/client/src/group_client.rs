//! [`AsyncClient`]'s consumer-group calls, for `logd groups`: list, describe, committed offsets,
//! commits from outside the group (generation -1, as Kafka's offset tools do) and delete. Each
//! goes to the group's coordinator; listing asks every broker.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, GroupId, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::routing::Route;
use logd_protocol::consumer_protocol::decode_assignment;

const LIST_GROUPS: i16 = 2;
const DESCRIBE_GROUPS: i16 = 4;
const OFFSET_FETCH: i16 = 5;
const OFFSET_COMMIT: i16 = 7;
const DELETE_GROUPS: i16 = 1;

/// A group as DescribeGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// Kafka's state name: `Empty`, `PreparingRebalance`, `CompletingRebalance`, `Stable` or
    /// `Dead` (unknown).
    pub state: String,
    /// The chosen assignor.
    pub protocol: String,
    /// Its members.
    pub members: Vec<GroupMember>,
}

/// One member of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub host: String,
    /// Its partitions, read from the consumer protocol's assignment (empty if it is not one).
    pub partitions: Vec<(String, u32)>,
}

fn group_id(group: &str) -> GroupId {
    GroupId(StrBytes::from_string(group.to_owned()))
}

fn check(what: impl FnOnce() -> String, code: i16) -> Result<()> {
    match code {
        0 => Ok(()),
        code => Err(Error::Kafka { what: what(), code }),
    }
}

impl AsyncClient {
    /// Every group's id, sorted: each broker lists the groups it coordinates, so every
    /// broker is asked (as Kafka's admin client does).
    pub async fn list_groups(&mut self) -> Result<Vec<String>> {
        let mut groups = std::collections::BTreeSet::new();
        for broker in self.wire.every_broker().await? {
            let route = broker.map_or(Route::Any, Route::Broker);
            let response: ListGroupsResponse = self
                .wire
                .call_to(
                    route,
                    ApiKey::ListGroups,
                    LIST_GROUPS,
                    &ListGroupsRequest::default(),
                )
                .await?;
            check(|| "listing groups".into(), response.error_code)?;
            groups.extend(response.groups.into_iter().map(|g| g.group_id.to_string()));
        }
        Ok(groups.into_iter().collect())
    }

    /// A group's state and members.
    pub async fn describe_group(&mut self, group: &str) -> Result<GroupInfo> {
        let mut request = DescribeGroupsRequest::default();
        request.groups = vec![group_id(group)];
        let response: DescribeGroupsResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::DescribeGroups,
                DESCRIBE_GROUPS,
                &request,
                |r: &DescribeGroupsResponse| r.groups.first().map_or(0, |g| g.error_code),
            )
            .await?;
        let described = response
            .groups
            .into_iter()
            .next()
            .ok_or_else(|| Error::Kafka {
                what: format!("group {group}"),
                code: -1,
            })?;
        check(|| format!("group {group}"), described.error_code)?;
        Ok(GroupInfo {
            state: described.group_state.to_string(),
            protocol: described.protocol_data.to_string(),
            members: described
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id.to_string(),
                    instance_id: m.group_instance_id.map(|i| i.to_string()),
                    client_id: m.client_id.to_string(),
                    host: m.client_host.to_string(),
                    partitions: decode_assignment(&m.member_assignment).unwrap_or_default(),
                })
                .collect(),
        })
    }

    /// Every offset `group` has committed: (topic, partition, offset), sorted.
    pub async fn committed_offsets(&mut self, group: &str) -> Result<Vec<(String, i32, i64)>> {
        // No topics: every partition with a commit.
        self.fetch_committed(group, None).await
    }

    /// The offset `group` committed in `topic`'s `partition`, if any (asking for that
    /// partition only, as consumers do).
    pub async fn committed_offset(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>> {
        let mut wanted = OffsetFetchRequestTopic::default();
        wanted.name = TopicName(StrBytes::from_string(topic.to_owned()));
        wanted.partition_indexes = vec![partition];
        let found = self.fetch_committed(group, Some(vec![wanted])).await?;
        Ok(found
            .into_iter()
            .find(|(t, p, _)| t == topic && *p == partition)
            .map(|(_, _, offset)| offset))
    }

    /// OffsetFetch for `topics` (`None`: all) of `group`: (topic, partition, offset), sorted.
    async fn fetch_committed(
        &mut self,
        group: &str,
        topics: Option<Vec<OffsetFetchRequestTopic>>,
    ) -> Result<Vec<(String, i32, i64)>> {
        let mut request = OffsetFetchRequest::default();
        request.group_id = group_id(group);
        request.topics = topics;
        let response: OffsetFetchResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::OffsetFetch,
                OFFSET_FETCH,
                &request,
                |r: &OffsetFetchResponse| r.error_code,
            )
            .await?;
        check(|| format!("offsets of group {group}"), response.error_code)?;
        let mut offsets = Vec::new();
        for topic in response.topics {
            for p in topic.partitions {
                check(
                    || {
                        format!(
                            "offset of group {group} in {}-{}",
                            &*topic.name, p.partition_index
                        )
                    },
                    p.error_code,
                )?;
                if p.committed_offset >= 0 {
                    offsets.push((
                        topic.name.to_string(),
                        p.partition_index,
                        p.committed_offset,
                    ));
                }
            }
        }
        offsets.sort();
        Ok(offsets)
    }

    /// Commits `offsets` (topic, partition, next offset to read) for `group` from outside it;
    /// the broker refuses this while the group has members.
    pub async fn commit_offsets(
        &mut self,
        group: &str,
        offsets: &[(String, i32, i64)],
    ) -> Result<()> {
        let mut request = OffsetCommitRequest::default();
        request.group_id = group_id(group);
        request.generation_id_or_member_epoch = -1;
        for (topic, partition, offset) in offsets {
            let mut p = OffsetCommitRequestPartition::default();
            p.partition_index = *partition;
            p.committed_offset = *offset;
            p.committed_metadata = Some(StrBytes::default());
            match request.topics.last_mut() {
                Some(t) if &*t.name == topic.as_str() => t.partitions.push(p),
                _ => {
                    let mut t = OffsetCommitRequestTopic::default();
                    t.name = TopicName(StrBytes::from_string(topic.clone()));
                    t.partitions.push(p);
                    request.topics.push(t);
                }
            }
        }
        let response: OffsetCommitResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::OffsetCommit,
                OFFSET_COMMIT,
                &request,
                |r: &OffsetCommitResponse| {
                    r.topics
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .map(|p| p.error_code)
                        .find(|&code| code != 0)
                        .unwrap_or(0)
                },
            )
            .await?;
        for topic in response.topics {
            for p in topic.partitions {
                check(
                    || {
                        format!(
                            "commit for group {group} in {}-{}",
                            &*topic.name, p.partition_index
                        )
                    },
                    p.error_code,
                )?;
            }
        }
        Ok(())
    }

    /// Deletes a group's offsets and state; refused while it has members.
    pub async fn delete_group(&mut self, group: &str) -> Result<()> {
        let mut request = DeleteGroupsRequest::default();
        request.groups_names = vec![group_id(group)];
        let response: DeleteGroupsResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::DeleteGroups,
                DELETE_GROUPS,
                &request,
                |r: &DeleteGroupsResponse| r.results.first().map_or(0, |g| g.error_code),
            )
            .await?;
        let code = response.results.first().map_or(-1, |r| r.error_code);
        check(|| format!("group {group}"), code)
    }
}
