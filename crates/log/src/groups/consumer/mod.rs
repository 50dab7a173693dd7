//! The consumer group protocol's coordinator state (KIP-848), pure: no I/O and no clock (the
//! caller brings the topics' partition counts, decides when a silent member's session is over,
//! and persists what must survive). A member heartbeats (ConsumerGroupHeartbeat) with its
//! epoch, its subscription when it changed and the partitions it owns; the group answers with
//! the member's epoch and, when it changed, the partitions it is to own. The broker assigns
//! (`assignors.rs`) and each member reconciles towards its target on its own heartbeats
//! (`reconcile.rs`): a partition goes to its next owner only once its previous owner reported
//! it revoked, so no two members hold a partition at once, and no member waits for the
//! others' rebalance.
//!
//! Epochs: the group epoch grows with every change of membership, subscriptions, assignor or
//! partitions of subscribed topics; targets are computed for a group epoch (the assignment
//! epoch); a member's epoch reaches the assignment epoch as it reconciles. A member joins with
//! epoch 0, leaves with -1 (-2 for a static member that will be back); any other epoch must be
//! its current one, or its previous one while it owns no more than it is assigned (the answer
//! that moved it on may have been lost), else FENCED_MEMBER_EPOCH, and the member gives up its
//! partitions and rejoins.

pub mod assignors;
#[cfg(test)]
mod durability_tests;
mod persist;
pub mod reconcile;
pub(crate) mod service;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::groups::classic::GroupError;
pub use assignors::ServerAssignor;
pub use reconcile::{MemberState, Reconciled};

/// Partitions by topic.
pub type Assignment = BTreeMap<String, BTreeSet<u32>>;

/// One member as the group keeps it (and saves it: every field).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConsumerMember {
    /// The topics it subscribes to.
    pub subscribed: BTreeSet<String>,
    /// The assignor it named, if any.
    pub assignor: Option<ServerAssignor>,
    /// Its static instance id (KIP-345), if any.
    pub instance_id: Option<String>,
    /// A static member that left for now (epoch -2): it keeps its partitions until its
    /// session is over or a member with its instance id takes its place.
    pub away: bool,
    /// Its reconciliation.
    pub reconciled: Reconciled,
    /// What it last reported owning.
    owned: Option<Assignment>,
    /// The assignment last sent to it.
    sent: Option<Assignment>,
}

/// A heartbeat's fields that the state machine reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// The member.
    pub member_id: String,
    /// Its epoch: 0 to join, -1 to leave, -2 for a static member to leave for now.
    pub member_epoch: i32,
    /// Its static instance id, if it has one.
    pub instance_id: Option<String>,
    /// Its subscription, when it changed (always on joining).
    pub subscribed: Option<BTreeSet<String>>,
    /// The assignor it names, when it changed.
    pub assignor: Option<ServerAssignor>,
    /// The partitions it owns, when it changed (always on joining).
    pub owned: Option<Assignment>,
}

/// What a heartbeat is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    /// The member's epoch now (-1 after leaving).
    pub member_epoch: i32,
    /// The partitions it is to own, when that changed since the last answer.
    pub assignment: Option<Assignment>,
}

/// One consumer group's protocol state. It is saved without what follows from the rest
/// (`holders`, `instances`, `subscribers`): [`ConsumerGroup::restored`] rebuilds that. A
/// heartbeat costs what the member's own change costs, not the group's size: what spans the
/// members is kept up to date as they change (who holds what, who subscribes to what), and
/// what changed is noted for the caller to persist ([`ConsumerGroup::take_changes`]); only a
/// new target assignment looks at every member.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ConsumerGroup {
    group_epoch: i32,
    assignment_epoch: i32,
    members: BTreeMap<String, ConsumerMember>,
    targets: BTreeMap<String, Assignment>,
    /// The partition counts of the subscribed topics at the last look.
    partitions: BTreeMap<String, u32>,
    /// Which member holds each partition (assigned, or not yet revoked).
    #[serde(skip)]
    holders: BTreeMap<(String, u32), String>,
    /// The member holding each static instance id.
    #[serde(skip)]
    instances: BTreeMap<String, String>,
    /// How many members subscribe to each topic.
    #[serde(skip)]
    subscribers: BTreeMap<String, usize>,
    /// What changed since the caller last took the changes.
    #[serde(skip)]
    changes: Changes,
}

/// The members and targets that changed (joined, left, moved on, or given a new target): the
/// records a caller persists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Members changed or gone.
    pub members: BTreeSet<String>,
    /// Members whose target changed or went.
    pub targets: BTreeSet<String>,
}

/// What a group keeps beside its members and targets: its epochs and the partition counts it
/// assigned from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMeta {
    /// The group epoch.
    pub group_epoch: i32,
    /// The epoch of the targets.
    pub assignment_epoch: i32,
    /// The partition counts of the subscribed topics at the last look.
    pub partitions: BTreeMap<String, u32>,
}

/// Two groups are the same when what they keep and what follows from it are (what is noted
/// as changed is the caller's bookkeeping, not the group's state).
impl PartialEq for ConsumerGroup {
    fn eq(&self, other: &ConsumerGroup) -> bool {
        self.group_epoch == other.group_epoch
            && self.assignment_epoch == other.assignment_epoch
            && self.members == other.members
            && self.targets == other.targets
            && self.partitions == other.partitions
            && self.holders == other.holders
            && self.instances == other.instances
            && self.subscribers == other.subscribers
    }
}

impl Eq for ConsumerGroup {}

impl ConsumerGroup {
    /// The group as saved, made whole again: who holds each partition and each instance id
    /// follows from its members. Saved state where two members hold one partition or one
    /// instance id, or a target names no member, is refused (said why).
    pub fn restored(mut self) -> std::result::Result<ConsumerGroup, String> {
        self.holders.clear();
        self.instances.clear();
        self.subscribers.clear();
        self.changes = Changes::default();
        for (id, member) in &self.members {
            for topic in &member.subscribed {
                *self.subscribers.entry(topic.clone()).or_default() += 1;
            }
            for held in member.reconciled.held() {
                if let Some(other) = self.holders.insert(held.clone(), id.clone()) {
                    return Err(format!("{}-{} held by {other} and {id}", held.0, held.1));
                }
            }
            if let Some(instance) = &member.instance_id
                && let Some(other) = self.instances.insert(instance.clone(), id.clone())
            {
                return Err(format!("instance {instance} held by {other} and {id}"));
            }
        }
        if let Some(stray) = self.targets.keys().find(|t| !self.members.contains_key(*t)) {
            return Err(format!("a target for {stray}, who is no member"));
        }
        Ok(self)
    }

    /// The members and targets changed since the last call, for the caller to persist.
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// Notes member `id` as changed by what the caller keeps beside it (its client, its
    /// pattern), so that it is persisted with the rest.
    pub fn note_changed(&mut self, id: &str) {
        self.changes.members.insert(id.to_owned());
    }

    /// Its epochs and the partition counts it assigned from.
    pub fn meta(&self) -> GroupMeta {
        GroupMeta {
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            partitions: self.partitions.clone(),
        }
    }

    /// Every topic a member subscribes to.
    pub fn subscribed_topics(&self) -> impl Iterator<Item = &String> {
        self.subscribers.keys()
    }

    /// A saved group's member set to `member` (`None`: gone), as a state log replays its
    /// records; nothing else is kept up to date (the saved form's [`ConsumerGroup::restored`]
    /// rebuilds it).
    pub(crate) fn replay_member(&mut self, id: String, member: Option<ConsumerMember>) {
        match member {
            Some(member) => self.members.insert(id, member),
            None => self.members.remove(&id),
        };
    }

    /// A saved group's target of `id` set to `target` (`None`: gone), as replayed.
    pub(crate) fn replay_target(&mut self, id: String, target: Option<Assignment>) {
        match target {
            Some(target) => self.targets.insert(id, target),
            None => self.targets.remove(&id),
        };
    }

    /// A saved group's epochs and partition counts set to `meta`, as replayed.
    pub(crate) fn replay_meta(&mut self, meta: GroupMeta) {
        self.group_epoch = meta.group_epoch;
        self.assignment_epoch = meta.assignment_epoch;
        self.partitions = meta.partitions;
    }

    /// The group epoch.
    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }

    /// The epoch of the current target assignment.
    pub fn assignment_epoch(&self) -> i32 {
        self.assignment_epoch
    }

    /// Its members by id.
    pub fn members(&self) -> &BTreeMap<String, ConsumerMember> {
        &self.members
    }

    /// Kafka's name for the group's state: `Empty` without members, `Assigning` while a
    /// change waits for its targets, `Reconciling` while a member is not at its target,
    /// else `Stable`.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.assignment_epoch < self.group_epoch {
            "Assigning"
        } else if self.members.values().any(|m| {
            m.reconciled.member_epoch != self.assignment_epoch
                || m.reconciled.state != MemberState::Stable
        }) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// A member's target.
    pub fn target(&self, member: &str) -> Option<&Assignment> {
        self.targets.get(member)
    }

    /// The member holding a partition, if any.
    pub fn holder(&self, topic: &str, partition: u32) -> Option<&str> {
        self.holders
            .get(&(topic.to_owned(), partition))
            .map(String::as_str)
    }

    /// Answers a heartbeat; `topics` gives the partition count of every existing topic
    /// (those subscribed at least).
    pub fn heartbeat(
        &mut self,
        beat: Heartbeat,
        topics: &BTreeMap<String, u32>,
    ) -> Result<HeartbeatAnswer> {
        let id = beat.member_id.clone();
        match beat.member_epoch {
            -2 if self
                .members
                .get(&id)
                .is_some_and(|m| m.instance_id.is_some()) =>
            {
                if let Some(member) = self.members.get_mut(&id)
                    && !member.away
                {
                    member.away = true;
                    self.changes.members.insert(id);
                }
                self.debug_check();
                return Ok(HeartbeatAnswer {
                    member_epoch: -2,
                    assignment: None,
                });
            }
            -1 | -2 => {
                self.remove(&id);
                self.debug_check();
                return Ok(HeartbeatAnswer {
                    member_epoch: beat.member_epoch,
                    assignment: None,
                });
            }
            0 => self.join(&id, beat.instance_id.as_deref())?,
            epoch => self.check_epoch(&id, epoch, beat.owned.as_ref())?,
        }
        let before = self.members.get(&id).cloned();
        let member = self.members.get_mut(&id).expect("joined or checked above");
        if let Some(subscribed) = beat.subscribed
            && subscribed != member.subscribed
        {
            let old = std::mem::replace(&mut member.subscribed, subscribed);
            for topic in &member.subscribed {
                *self.subscribers.entry(topic.clone()).or_default() += 1;
            }
            unsubscribe(&mut self.subscribers, &old);
            self.group_epoch += 1;
        }
        if beat.assignor.is_some() && beat.assignor != member.assignor {
            member.assignor = beat.assignor;
            self.group_epoch += 1;
        }
        if let Some(owned) = beat.owned {
            member.owned = Some(owned);
        }
        self.look_at_topics(topics);
        if self.assignment_epoch < self.group_epoch {
            self.assign();
        }
        self.reconcile(&id);
        let member = self.members.get_mut(&id).expect("still there");
        let assigned = &member.reconciled.assigned;
        let assignment = match member.sent.as_ref() == Some(assigned) {
            true => None,
            false => {
                member.sent = Some(assigned.clone());
                Some(assigned.clone())
            }
        };
        let member_epoch = member.reconciled.member_epoch;
        if before.as_ref() != Some(&*member) {
            self.changes.members.insert(id);
        }
        self.debug_check();
        Ok(HeartbeatAnswer {
            member_epoch,
            assignment,
        })
    }

    /// What the group's bookkeeping must say after every change, checked in debug builds (the
    /// model test's heartbeats, crashes and resubscriptions go through it): every partition a
    /// member holds (assigned, or not yet revoked) has that one member as its holder and no
    /// other; every instance id names its member; targets are for members only; no member is
    /// past the assignment epoch, and that is not past the group epoch.
    fn debug_check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let mut holders = BTreeMap::new();
        for (id, member) in &self.members {
            for held in member.reconciled.held() {
                let other = holders.insert(held.clone(), id.clone());
                debug_assert!(other.is_none(), "{held:?} held by {other:?} and {id}");
            }
            debug_assert!(
                member.reconciled.member_epoch <= self.assignment_epoch,
                "{id} at epoch {} past the assignment epoch {}",
                member.reconciled.member_epoch,
                self.assignment_epoch
            );
        }
        debug_assert_eq!(holders, self.holders, "the holders of partitions");
        let instances: BTreeMap<String, String> = self
            .members
            .iter()
            .filter_map(|(id, m)| Some((m.instance_id.clone()?, id.clone())))
            .collect();
        debug_assert_eq!(instances, self.instances, "the holders of instance ids");
        let mut subscribers: BTreeMap<String, usize> = BTreeMap::new();
        for topic in self.members.values().flat_map(|m| &m.subscribed) {
            *subscribers.entry(topic.clone()).or_default() += 1;
        }
        debug_assert_eq!(subscribers, self.subscribers, "the subscribers of topics");
        debug_assert!(
            self.targets.keys().all(|t| self.members.contains_key(t)),
            "a target for a non-member"
        );
        debug_assert!(self.assignment_epoch <= self.group_epoch);
    }

    /// A member joining (epoch 0): a new one, or one rejoining from nothing (it gave up its
    /// partitions). With the instance id of a static member that is away, it takes that
    /// member's place, partitions and epoch, without a rebalance; with one a present member
    /// holds, it is refused (UNRELEASED_INSTANCE_ID).
    fn join(&mut self, id: &str, instance_id: Option<&str>) -> Result<()> {
        let holder = instance_id.and_then(|i| self.instances.get(i)).cloned();
        match holder {
            Some(holder) if holder != id => {
                if !self.members.get(&holder).is_some_and(|m| m.away) {
                    return Err(Error::Group(GroupError::UnreleasedInstanceId));
                }
                self.remove(id);
                let mut member = self.members.remove(&holder).expect("an instance's holder");
                member.away = false;
                member.sent = None;
                member.owned = None;
                self.members.insert(id.to_owned(), member);
                if let Some(target) = self.targets.remove(&holder) {
                    self.targets.insert(id.to_owned(), target);
                    self.changes.targets.extend([holder.clone(), id.to_owned()]);
                }
                self.changes.members.extend([holder.clone(), id.to_owned()]);
                for held in self.holders.values_mut().filter(|h| **h == holder) {
                    *held = id.to_owned();
                }
                if let Some(instance) = instance_id {
                    self.instances.insert(instance.to_owned(), id.to_owned());
                }
            }
            _ => {
                self.remove(id);
                let member = ConsumerMember {
                    instance_id: instance_id.map(str::to_owned),
                    ..ConsumerMember::default()
                };
                self.members.insert(id.to_owned(), member);
                self.changes.members.insert(id.to_owned());
                if let Some(instance) = instance_id {
                    self.instances.insert(instance.to_owned(), id.to_owned());
                }
                self.group_epoch += 1;
            }
        }
        Ok(())
    }

    /// Removes a member (it left, or its session ran out): what it held is free, and the
    /// others' targets are computed again.
    pub fn remove(&mut self, member: &str) -> bool {
        let Some(gone) = self.members.remove(member) else {
            return false;
        };
        if let Some(instance) = gone.instance_id {
            self.instances.remove(&instance);
        }
        unsubscribe(&mut self.subscribers, &gone.subscribed);
        self.changes.members.insert(member.to_owned());
        if self.targets.remove(member).is_some() {
            self.changes.targets.insert(member.to_owned());
        }
        for held in gone.reconciled.held() {
            self.holders.remove(&held);
        }
        self.group_epoch += 1;
        self.debug_check();
        true
    }

    fn check_epoch(&self, id: &str, epoch: i32, owned: Option<&Assignment>) -> Result<()> {
        let Some(member) = self.members.get(id) else {
            return Err(Error::Group(GroupError::UnknownMember));
        };
        let r = &member.reconciled;
        let fenced = || Error::FencedMemberEpoch {
            member: id.to_owned(),
            epoch,
            current: r.member_epoch,
        };
        if epoch > r.member_epoch {
            return Err(fenced());
        }
        if epoch < r.member_epoch {
            let subset = owned.is_some_and(|owned| {
                owned.iter().all(|(topic, partitions)| {
                    r.assigned
                        .get(topic)
                        .is_some_and(|a| partitions.is_subset(a))
                })
            });
            if epoch != r.previous_epoch || !subset {
                return Err(fenced());
            }
        }
        Ok(())
    }

    /// A change in the partition counts of the subscribed topics moves the group epoch.
    fn look_at_topics(&mut self, topics: &BTreeMap<String, u32>) {
        let now: BTreeMap<String, u32> = self
            .subscribers
            .keys()
            .filter_map(|t| topics.get(t).map(|&n| (t.clone(), n)))
            .collect();
        if now != self.partitions {
            self.partitions = now;
            self.group_epoch += 1;
        }
    }

    /// The assignor the members name most (ties: the first by name), else `uniform`.
    pub fn assignor(&self) -> ServerAssignor {
        let mut named: BTreeMap<&str, (usize, ServerAssignor)> = BTreeMap::new();
        for a in self.members.values().filter_map(|m| m.assignor) {
            named.entry(a.name()).or_insert((0, a)).0 += 1;
        }
        named
            .values()
            .max_by_key(|(n, _)| *n)
            .map_or(ServerAssignor::Uniform, |&(_, a)| a)
    }

    fn assign(&mut self) {
        let subscriptions: BTreeMap<String, BTreeSet<String>> = self
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.subscribed.clone()))
            .collect();
        let targets = self
            .assignor()
            .assign(&subscriptions, &self.partitions, &self.targets);
        let old = std::mem::replace(&mut self.targets, targets);
        let changed = old
            .keys()
            .chain(self.targets.keys())
            .filter(|id| old.get(*id) != self.targets.get(*id))
            .cloned();
        self.changes.targets.extend(changed);
        self.assignment_epoch = self.group_epoch;
    }

    fn reconcile(&mut self, id: &str) {
        let empty = Assignment::new();
        let target = self.targets.get(id).unwrap_or(&empty);
        let holders = &self.holders;
        let held_by_other = |topic: &str, partition: u32| {
            holders
                .get(&(topic.to_owned(), partition))
                .is_some_and(|holder| holder != id)
        };
        let member = self.members.get_mut(id).expect("a member");
        let before = member.reconciled.held();
        member.reconciled.reconcile(
            self.assignment_epoch,
            target,
            &member.subscribed,
            member.owned.as_ref(),
            &held_by_other,
        );
        let after = member.reconciled.held();
        for gone in before.difference(&after) {
            self.holders.remove(gone);
        }
        for came in after.difference(&before) {
            self.holders.insert(came.clone(), id.to_owned());
        }
    }
}

/// One member fewer subscribes to each of `topics`.
fn unsubscribe(subscribers: &mut BTreeMap<String, usize>, topics: &BTreeSet<String>) {
    for topic in topics {
        if let Some(count) = subscribers.get_mut(topic) {
            *count -= 1;
            if *count == 0 {
                subscribers.remove(topic);
            }
        }
    }
}
