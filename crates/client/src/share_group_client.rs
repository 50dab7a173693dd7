//! [`AsyncClient`]'s share-group calls (KIP-932), for `logd groups describe` and
//! `reset-offsets` on share groups: ShareGroupDescribe, DescribeShareGroupOffsets and
//! AlterShareGroupOffsets, each to the group's coordinator, and logd's own
//! DescribeSharePartitions (records in flight by state).

use kafka_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, ApiKey,
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, GroupId,
    ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use logd_protocol::share_partitions::{
    self, SharePartitionCounts, SharePartitionsRequest, SharePartitionsResponse,
};

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use crate::group_client::GroupMember;
use crate::routing::Route;

const SHARE_GROUP_DESCRIBE: i16 = 1;
const DESCRIBE_SHARE_GROUP_OFFSETS: i16 = 0;
const ALTER_SHARE_GROUP_OFFSETS: i16 = 0;
/// GROUP_ID_NOT_FOUND: not a share group.
const GROUP_ID_NOT_FOUND: i16 = 69;

/// A share group as ShareGroupDescribe reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupInfo {
    /// `Empty` or `Stable`.
    pub state: String,
    /// Its epoch.
    pub epoch: i32,
    /// Its members, each with the partitions assigned to it (every member reads every
    /// partition of its topics on logd).
    pub members: Vec<GroupMember>,
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn check(what: impl FnOnce() -> String, code: i16) -> Result<()> {
    match code {
        0 => Ok(()),
        code => Err(Error::Kafka { what: what(), code }),
    }
}

impl AsyncClient {
    /// Share group `group`'s state and members; `None` when it is not a share group.
    pub async fn describe_share_group(&mut self, group: &str) -> Result<Option<ShareGroupInfo>> {
        let mut request = ShareGroupDescribeRequest::default();
        request.group_ids = vec![GroupId(text(group))];
        let response: ShareGroupDescribeResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::ShareGroupDescribe,
                SHARE_GROUP_DESCRIBE,
                &request,
                |r: &ShareGroupDescribeResponse| r.groups.first().map_or(0, |g| g.error_code),
            )
            .await?;
        let Some(described) = response.groups.into_iter().next() else {
            return Ok(None);
        };
        if described.error_code == GROUP_ID_NOT_FOUND {
            return Ok(None);
        }
        check(|| format!("share group {group}"), described.error_code)?;
        Ok(Some(ShareGroupInfo {
            state: described.group_state.to_string(),
            epoch: described.group_epoch,
            members: described
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id.to_string(),
                    instance_id: None,
                    client_id: m.client_id.to_string(),
                    host: m.client_host.to_string(),
                    partitions: m
                        .assignment
                        .topic_partitions
                        .iter()
                        .flat_map(|t| {
                            t.partitions
                                .iter()
                                .map(|p| (t.topic_name.to_string(), *p as u32))
                        })
                        .collect(),
                })
                .collect(),
        }))
    }

    /// Where share group `group` reads each partition it has read from: (topic, partition,
    /// start offset), sorted.
    pub async fn share_group_offsets(&mut self, group: &str) -> Result<Vec<(String, i32, i64)>> {
        let mut wanted = DescribeShareGroupOffsetsRequestGroup::default();
        wanted.group_id = GroupId(text(group));
        // No topics named: every partition the group has read.
        wanted.topics = None;
        let mut request = DescribeShareGroupOffsetsRequest::default();
        request.groups = vec![wanted];
        let response: DescribeShareGroupOffsetsResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::DescribeShareGroupOffsets,
                DESCRIBE_SHARE_GROUP_OFFSETS,
                &request,
                |r: &DescribeShareGroupOffsetsResponse| {
                    r.groups.first().map_or(0, |g| g.error_code)
                },
            )
            .await?;
        let mut starts = Vec::new();
        for g in response.groups {
            check(|| format!("share group {group}"), g.error_code)?;
            for t in g.topics {
                for p in t.partitions {
                    if p.error_code == 0 && p.start_offset >= 0 {
                        starts.push((t.topic_name.to_string(), p.partition_index, p.start_offset));
                    }
                }
            }
        }
        starts.sort();
        Ok(starts)
    }

    /// Each share-partition of share group `group` with its records in flight by state and its
    /// lag, from logd's own DescribeSharePartitions; `None` from a broker that does not serve
    /// it (a Kafka broker), which is never sent it.
    pub async fn share_partitions(
        &mut self,
        group: &str,
    ) -> Result<Option<Vec<SharePartitionCounts>>> {
        if !self.wire.serves_key(share_partitions::API_KEY).await? {
            return Ok(None);
        }
        let malformed =
            crate::error::malformed(share_partitions::API_KEY, share_partitions::VERSION);
        let mut body = bytes::BytesMut::new();
        SharePartitionsRequest {
            group: group.to_owned(),
        }
        .encode(&mut body)
        .map_err(&malformed)?;
        let mut answer = self
            .wire
            .call_raw(
                share_partitions::API_KEY,
                share_partitions::VERSION,
                (
                    share_partitions::REQUEST_HEADER_VERSION,
                    share_partitions::RESPONSE_HEADER_VERSION,
                ),
                &body,
            )
            .await?;
        let response = SharePartitionsResponse::decode(&mut answer).map_err(malformed)?;
        check(|| format!("share group {group}"), response.error_code)?;
        Ok(Some(response.partitions))
    }

    /// Sets where share group `group` reads each (topic, partition, offset) from.
    pub async fn alter_share_group_offsets(
        &mut self,
        group: &str,
        offsets: &[(String, i32, i64)],
    ) -> Result<()> {
        let mut topics: Vec<AlterShareGroupOffsetsRequestTopic> = Vec::new();
        for (topic, partition, offset) in offsets {
            let mut p = AlterShareGroupOffsetsRequestPartition::default();
            p.partition_index = *partition;
            p.start_offset = *offset;
            match topics.iter_mut().find(|t| t.topic_name.as_str() == topic) {
                Some(t) => t.partitions.push(p),
                None => {
                    let mut t = AlterShareGroupOffsetsRequestTopic::default();
                    t.topic_name = TopicName(text(topic));
                    t.partitions = vec![p];
                    topics.push(t);
                }
            }
        }
        let mut request = AlterShareGroupOffsetsRequest::default();
        request.group_id = GroupId(text(group));
        request.topics = topics;
        let response: AlterShareGroupOffsetsResponse = self
            .wire
            .routed(
                Route::Coordinator(group),
                ApiKey::AlterShareGroupOffsets,
                ALTER_SHARE_GROUP_OFFSETS,
                &request,
                |r: &AlterShareGroupOffsetsResponse| r.error_code,
            )
            .await?;
        check(|| format!("share group {group}"), response.error_code)?;
        for t in &response.responses {
            for p in &t.partitions {
                check(
                    || {
                        format!(
                            "share group {group} on {}-{}",
                            t.topic_name.as_str(),
                            p.partition_index
                        )
                    },
                    p.error_code,
                )?;
            }
        }
        Ok(())
    }
}
