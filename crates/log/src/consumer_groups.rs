//! Groups of the next consumer group protocol (KIP-848) in the engine: each group's
//! [`ConsumerGroup`] behind one lock, when each member was last heard from (a member silent for
//! the group's `consumer.session.timeout.ms` is removed at the group's next heartbeat), and the
//! commit rule of such groups: a member commits with its current member epoch
//! (STALE_MEMBER_EPOCH otherwise), anyone else only while the group has no members. A group
//! id is one protocol's at a time: a classic group with members refuses consumer-protocol
//! members. Membership is not durable (members rejoin after a restart, with epoch 0);
//! committed offsets are, in the offset store.

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::Mutex;

use crate::consumer_group::{ConsumerGroup, Heartbeat, HeartbeatAnswer};
use crate::engine::Log;
use crate::error::{Error, Result};
use crate::group::GroupError;

/// Every consumer-protocol group.
#[derive(Debug, Default)]
pub(crate) struct ConsumerGroups {
    groups: Mutex<BTreeMap<String, Entry>>,
}

#[derive(Debug, Default)]
struct Entry {
    group: ConsumerGroup,
    /// Per member: when it was last heard from (ms), its client id and host.
    heard: BTreeMap<String, (i64, String, String)>,
}

/// A consumer-protocol member as described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberDescription {
    /// Its id.
    pub member_id: String,
    /// Its client id.
    pub client_id: String,
    /// Its host.
    pub client_host: String,
    /// Its epoch.
    pub member_epoch: i32,
    /// The topics it subscribes to.
    pub subscribed: BTreeSet<String>,
    /// The partitions it is to own.
    pub assigned: crate::consumer_group::Assignment,
}

impl Log {
    /// A ConsumerGroupHeartbeat in `group` from `client` (client id, host); members silent for
    /// the group's session timeout are removed first.
    pub fn consumer_heartbeat(
        &self,
        group: &str,
        beat: Heartbeat,
        client: (&str, &str),
    ) -> Result<HeartbeatAnswer> {
        if beat.member_epoch == 0
            && self
                .shared
                .coordinator
                .read_group(group, |g| !g.members().is_empty())
                .unwrap_or(false)
        {
            return Err(GroupError::InconsistentProtocol.into());
        }
        let now = self.clock().now_ms();
        let timeout = self
            .shared
            .group_configs
            .int(group, "consumer.session.timeout.ms");
        let mut groups = self.shared.consumer_groups.groups.lock();
        let entry = groups.entry(group.to_owned()).or_default();
        expire(group, entry, now, timeout);
        let mut subscribed: BTreeSet<String> = entry
            .group
            .members()
            .values()
            .flat_map(|m| m.subscribed.iter().cloned())
            .collect();
        subscribed.extend(beat.subscribed.iter().flatten().cloned());
        let topics: BTreeMap<String, u32> = subscribed
            .into_iter()
            .filter_map(|t| Some((t.clone(), self.partition_count(&t).ok()?)))
            .collect();
        let (member, epoch) = (beat.member_id.clone(), beat.member_epoch);
        let answer = entry.group.heartbeat(beat, &topics)?;
        match epoch {
            -1 | -2 => {
                entry.heard.remove(&member);
            }
            _ => {
                let (client_id, host) = (client.0.to_owned(), client.1.to_owned());
                entry.heard.insert(member, (now, client_id, host));
            }
        }
        Ok(answer)
    }

    /// Removes the members of every consumer-protocol group whose session ran out by `now`,
    /// so a group whose members all died empties without a heartbeat.
    pub(crate) fn expire_consumer_members(&self, now: i64) {
        let mut groups = self.shared.consumer_groups.groups.lock();
        for (group, entry) in groups.iter_mut() {
            let timeout = self
                .shared
                .group_configs
                .int(group, "consumer.session.timeout.ms");
            expire(group, entry, now, timeout);
        }
    }

    /// The heartbeat interval of consumer group `group` (`consumer.heartbeat.interval.ms`).
    pub fn consumer_heartbeat_interval_ms(&self, group: &str) -> i64 {
        self.shared
            .group_configs
            .int(group, "consumer.heartbeat.interval.ms")
    }

    /// Every group that had consumer-protocol members since the engine started, sorted.
    pub fn consumer_group_ids(&self) -> Vec<String> {
        self.shared
            .consumer_groups
            .groups
            .lock()
            .keys()
            .cloned()
            .collect()
    }

    /// Forgets consumer-protocol group `group` (DeleteGroups); refused while it has members.
    /// Whether there was one.
    pub(crate) fn delete_consumer_group(&self, group: &str) -> Result<bool> {
        let mut groups = self.shared.consumer_groups.groups.lock();
        match groups.get(group) {
            Some(entry) if !entry.group.members().is_empty() => {
                Err(GroupError::NonEmptyGroup.into())
            }
            Some(_) => {
                groups.remove(group);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Consumer-protocol group `group`'s epoch and members, `None` if it has had none since
    /// the engine started.
    pub fn consumer_group_members(
        &self,
        group: &str,
    ) -> Option<(i32, Vec<ConsumerMemberDescription>)> {
        let groups = self.shared.consumer_groups.groups.lock();
        let entry = groups.get(group)?;
        let members = entry
            .group
            .members()
            .iter()
            .map(|(id, m)| {
                let (_, client_id, client_host) = entry.heard.get(id).cloned().unwrap_or_default();
                ConsumerMemberDescription {
                    member_id: id.clone(),
                    client_id,
                    client_host,
                    member_epoch: m.reconciled.member_epoch,
                    subscribed: m.subscribed.clone(),
                    assigned: m.reconciled.assigned.clone(),
                }
            })
            .collect();
        Some((entry.group.group_epoch(), members))
    }

    /// Whether an OffsetCommit (or TxnOffsetCommit) by `member` with `epoch` may commit in
    /// `group`: for a group of the consumer protocol with members, the member's current epoch
    /// (else STALE_MEMBER_EPOCH, or UNKNOWN_MEMBER_ID); otherwise the classic group's rules.
    pub fn validate_group_commit(
        &self,
        group: &str,
        member: &str,
        epoch: i32,
        now: i64,
    ) -> Result<()> {
        {
            let groups = self.shared.consumer_groups.groups.lock();
            if let Some(entry) = groups.get(group)
                && !entry.group.members().is_empty()
            {
                if epoch < 0 && member.is_empty() {
                    return Err(GroupError::UnknownMember.into());
                }
                let Some(found) = entry.group.members().get(member) else {
                    return Err(GroupError::UnknownMember.into());
                };
                if found.reconciled.member_epoch != epoch {
                    return Err(GroupError::StaleMemberEpoch.into());
                }
                return Ok(());
            }
        }
        self.shared
            .coordinator
            .validate_commit(group, member, epoch, now)
            .map_err(Error::from)
    }
}

/// Removes the members of `group` silent for longer than `timeout_ms`.
fn expire(group: &str, entry: &mut Entry, now: i64, timeout_ms: i64) {
    let silent: Vec<String> = entry
        .heard
        .iter()
        .filter(|(_, (at, _, _))| now - at > timeout_ms)
        .map(|(id, _)| id.clone())
        .collect();
    for member in silent {
        tracing::info!(
            group,
            member = member.as_str(),
            "consumer-group member's session expired"
        );
        entry.heard.remove(&member);
        entry.group.remove(&member);
    }
}
