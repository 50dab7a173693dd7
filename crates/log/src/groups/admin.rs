//! The engine's view and administration of consumer groups: the groups there are (live or
//! with offsets), a group's members and lag, its deletion, and offset resets (refused while it
//! has members, as Kafka refuses them).

use logd_offsets::{OffsetCommit, PartitionRange, PlannedReset, ResetTarget};
use logd_storage::Offset;

use crate::engine::Log;
use crate::error::Result;
use crate::groups::classic::{GroupError, GroupPhase, MemberDescription, decode_assignment};
use crate::isolation::IsolationLevel;

/// One partition's line in a group description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPartitionLag {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: u32,
    /// Committed offset (next to read).
    pub committed: i64,
    /// Partition's high watermark, or its last stable offset for a read_committed group.
    pub log_end: i64,
    /// `log_end - committed`, at least 0.
    pub lag: i64,
}

/// A group as `describe_group` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// Group id.
    pub group: String,
    /// Phase, `None` if the group only has stored offsets and no live state.
    pub phase: Option<GroupPhase>,
    /// Generation.
    pub generation: i32,
    /// Members with their assignments (decoded for embedded members).
    pub members: Vec<(MemberDescription, Vec<(String, u32)>)>,
    /// Committed offsets with log end and lag.
    pub offsets: Vec<GroupPartitionLag>,
    /// Whether the group reads committed records only ([`Log::group_isolation`]): then its
    /// log end is each partition's last stable offset, else its high watermark.
    pub isolation: IsolationLevel,
}

impl Log {
    /// Groups with live members or committed offsets, sorted.
    pub fn list_groups(&self) -> Vec<String> {
        let mut groups = self.shared.offsets.list_groups();
        for id in self.shared.coordinator.group_ids() {
            let live = self
                .shared
                .coordinator
                .read_group(&id, |g| !g.members().is_empty())
                .unwrap_or(false);
            if live && !groups.contains(&id) {
                groups.push(id);
            }
        }
        for id in self.consumer_group_ids() {
            let live = self
                .consumer_group_members(&id)
                .is_some_and(|(_, members)| !members.is_empty());
            if live && !groups.contains(&id) {
                groups.push(id);
            }
        }
        groups.sort();
        groups
    }

    /// A group's state, members and per-partition committed offset, log end and lag.
    pub fn describe_group(&self, group: &str) -> Result<GroupDescription> {
        let live = self.shared.coordinator.read_group(group, |g| {
            let members = g.members().into_iter().map(|m| {
                let assigned = decode_assignment(&m.assignment).unwrap_or_default();
                (m, assigned)
            });
            (g.phase(), g.generation(), members.collect::<Vec<_>>())
        });
        let isolation = self.group_isolation(group);
        let mut offsets = Vec::new();
        for (topic, partition, committed) in self.shared.offsets.group_offsets(group) {
            let Ok(log) = self.partition(&topic, partition as u32) else {
                continue;
            };
            let log_end = isolation.end(&log);
            offsets.push(GroupPartitionLag {
                topic,
                partition: partition as u32,
                committed: committed.offset,
                log_end,
                lag: (log_end - committed.offset).max(0),
            });
        }
        // A group of the consumer protocol (KIP-848) with members: its members, each with its
        // assignment, and the group epoch for a generation.
        let consumer_protocol = self
            .consumer_group_members(group)
            .filter(|(_, members)| !members.is_empty())
            .map(|(epoch, members)| {
                let members = members.into_iter().map(|m| {
                    let assigned = m
                        .assigned
                        .iter()
                        .flat_map(|(t, ps)| ps.iter().map(move |&p| (t.clone(), p)))
                        .collect();
                    let described = MemberDescription {
                        member_id: m.member_id,
                        group_instance_id: None,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        metadata: Default::default(),
                        assignment: Default::default(),
                    };
                    (described, assigned)
                });
                (GroupPhase::Stable, epoch, members.collect::<Vec<_>>())
            });
        let (phase, generation, members) = match consumer_protocol.or(live) {
            Some((phase, generation, members)) => (Some(phase), generation, members),
            None => (None, 0, Vec::new()),
        };
        Ok(GroupDescription {
            group: group.to_owned(),
            phase,
            generation,
            members,
            offsets,
            isolation,
        })
    }

    /// Deletes a group's offsets and state; refused while it has members. Whether there was
    /// such a group: one the coordinator knows (an empty group whose offsets were all deleted
    /// still exists, as on Kafka, until it is deleted) or one with committed offsets.
    pub fn delete_group(&self, group: &str) -> Result<bool> {
        // A share group or a consumer-protocol group with members is refused, as a classic one
        // is.
        let was_consumer_group = self.delete_consumer_group(group)?;
        let was_share_group = self.shared.share_groups.delete(group)?;
        let had_share_state = self.shared.shares.delete_group(group)?;
        let known = self.shared.coordinator.delete_group(group)?;
        let had_offsets = self.shared.offsets.delete_group(group)?;
        Ok(known || had_offsets || was_share_group || had_share_state || was_consumer_group)
    }

    /// Plans (and with `execute`, applies) an offset reset for `group` on `topics` (all
    /// partitions of each). Refused while the group has members, as Kafka does. Targets are
    /// clamped to each partition's range; the plan reports every clamp.
    pub fn reset_offsets(
        &self,
        group: &str,
        topics: &[String],
        target: ResetTarget,
        execute: bool,
    ) -> Result<Vec<PlannedReset>> {
        let active = self
            .shared
            .coordinator
            .read_group(group, |g| !g.members().is_empty())
            .unwrap_or(false);
        let consumer_members = self
            .consumer_group_members(group)
            .is_some_and(|(_, members)| !members.is_empty());
        if active || consumer_members {
            return Err(GroupError::NonEmptyGroup.into());
        }
        let mut plan = Vec::new();
        for topic in topics {
            let partitions = self.topic(topic)?.partition_count();
            for partition in 0..partitions {
                let log = self.partition(topic, partition)?;
                let current = self
                    .shared
                    .offsets
                    .fetch(group, topic, partition as i32)
                    .map(|c| c.offset);
                let range = PartitionRange {
                    log_start: log.log_start_offset().0,
                    log_end: log.high_watermark().0,
                };
                let lookup = |ts| {
                    log.offset_for_timestamp(ts)
                        .ok()
                        .flatten()
                        .map(|o: Offset| o.0)
                };
                plan.push(target.plan(topic, partition as i32, current, range, lookup));
            }
        }
        if execute {
            let commits: Vec<OffsetCommit> = plan
                .iter()
                .map(|p| OffsetCommit {
                    topic: p.topic.clone(),
                    partition: p.partition,
                    offset: p.target,
                    metadata: String::new(),
                })
                .collect();
            self.shared
                .offsets
                .commit(group, &commits, self.shared.clock.now_ms())?;
        }
        Ok(plan)
    }
}
