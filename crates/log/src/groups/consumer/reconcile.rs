//! One member's reconciliation towards its target assignment, as Kafka's
//! `CurrentAssignmentBuilder` does it: a member keeps what is in both its current and its
//! target assignment; what it must give up it is asked to revoke, and it stays in its epoch
//! (`UnrevokedPartitions`) until a heartbeat reports it no longer owns those partitions; only
//! then does it reach the target epoch and receive its new partitions, and of those only the
//! ones no other member still holds (the rest come later, `UnreleasedPartitions`). So a
//! partition is never held by two members at once.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::Assignment;

/// Where a member is in its reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum MemberState {
    /// At its target (as far as the partitions free allow).
    #[default]
    Stable,
    /// Waiting for the member to report partitions revoked.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions other members still hold.
    UnreleasedPartitions,
}

impl MemberState {
    /// Kafka's name for the state (ConsumerGroupDescribe's `member_type` aside).
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "stable",
            MemberState::UnrevokedPartitions => "unrevoked_partitions",
            MemberState::UnreleasedPartitions => "unreleased_partitions",
        }
    }
}

/// A member's reconciliation state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Reconciled {
    /// Its epoch.
    pub member_epoch: i32,
    /// Its epoch before the last change (a heartbeat with it is still accepted when the
    /// member owns no more than it is assigned: the answer that moved it on may be lost).
    pub previous_epoch: i32,
    /// Its state.
    pub state: MemberState,
    /// The partitions it is to own.
    pub assigned: Assignment,
    /// The partitions it must give up and has not reported revoked yet: still its own.
    pub pending_revocation: Assignment,
}

impl Reconciled {
    /// Every partition it holds: assigned or not yet revoked.
    pub fn held(&self) -> BTreeSet<(String, u32)> {
        flatten(&self.assigned)
            .chain(flatten(&self.pending_revocation))
            .collect()
    }

    fn move_to_epoch(&mut self, epoch: i32) {
        self.previous_epoch = self.member_epoch;
        self.member_epoch = epoch;
    }

    /// One step towards `target` (at `target_epoch`), for a member subscribed to `subscribed`
    /// that reports owning `owned` (`None`: it did not say); `held_by_other` says whether
    /// another member holds a partition.
    pub fn reconcile(
        &mut self,
        target_epoch: i32,
        target: &Assignment,
        subscribed: &BTreeSet<String>,
        owned: Option<&Assignment>,
        held_by_other: &dyn Fn(&str, u32) -> bool,
    ) {
        match self.state {
            MemberState::Stable if self.member_epoch == target_epoch => {
                self.drop_unsubscribed(subscribed, owned)
            }
            MemberState::UnrevokedPartitions if owns_any(owned, &self.pending_revocation) => {
                self.drop_unsubscribed(subscribed, owned)
            }
            _ => self.next(target_epoch, target, subscribed, owned, held_by_other),
        }
    }

    /// Topics the member no longer subscribes to leave its assignment at once (to be revoked
    /// if it still owns them), without waiting for a new target.
    fn drop_unsubscribed(&mut self, subscribed: &BTreeSet<String>, owned: Option<&Assignment>) {
        let gone: Vec<String> = self
            .assigned
            .keys()
            .filter(|t| !subscribed.contains(*t))
            .cloned()
            .collect();
        if gone.is_empty() {
            return;
        }
        for topic in gone {
            if let Some(partitions) = self.assigned.remove(&topic) {
                self.pending_revocation
                    .entry(topic)
                    .or_default()
                    .extend(partitions);
            }
        }
        if owns_any(owned, &self.pending_revocation) {
            self.state = MemberState::UnrevokedPartitions;
        } else {
            self.pending_revocation.clear();
        }
        let epoch = self.member_epoch;
        self.move_to_epoch(epoch);
    }

    fn next(
        &mut self,
        target_epoch: i32,
        target: &Assignment,
        subscribed: &BTreeSet<String>,
        owned: Option<&Assignment>,
        held_by_other: &dyn Fn(&str, u32) -> bool,
    ) {
        let empty = BTreeSet::new();
        let topics: BTreeSet<&String> = target.keys().chain(self.assigned.keys()).collect();
        let (mut keep, mut revoke, mut add) =
            (Assignment::new(), Assignment::new(), Assignment::new());
        let mut unreleased = false;
        for topic in topics {
            let wanted = match subscribed.contains(topic) {
                true => target.get(topic).unwrap_or(&empty),
                false => &empty,
            };
            let had = self.assigned.get(topic).unwrap_or(&empty);
            let kept: BTreeSet<u32> = had.intersection(wanted).copied().collect();
            let revoked: BTreeSet<u32> = had.difference(&kept).copied().collect();
            let mine = self.pending_revocation.get(topic).unwrap_or(&empty);
            let mut added = BTreeSet::new();
            for &p in wanted.difference(&kept) {
                // One this member is still revoking is its own, not another's.
                if held_by_other(topic, p) && !mine.contains(&p) {
                    unreleased = true;
                } else {
                    added.insert(p);
                }
            }
            for (set, part) in [(&mut keep, kept), (&mut revoke, revoked), (&mut add, added)] {
                if !part.is_empty() {
                    set.insert(topic.clone(), part);
                }
            }
        }
        if !revoke.is_empty() && owns_any(owned, &revoke) {
            self.state = MemberState::UnrevokedPartitions;
            self.assigned = keep;
            self.pending_revocation = revoke;
            let epoch = self.member_epoch;
            self.move_to_epoch(epoch);
            return;
        }
        for (topic, partitions) in add {
            keep.entry(topic).or_default().extend(partitions);
        }
        self.state = match unreleased {
            true => MemberState::UnreleasedPartitions,
            false => MemberState::Stable,
        };
        self.assigned = keep;
        self.pending_revocation.clear();
        self.move_to_epoch(target_epoch);
    }
}

/// Whether `owned` (unknown counts as yes) holds any partition of `of`.
fn owns_any(owned: Option<&Assignment>, of: &Assignment) -> bool {
    let Some(owned) = owned else { return true };
    of.iter().any(|(topic, partitions)| {
        owned
            .get(topic)
            .is_some_and(|o| partitions.iter().any(|p| o.contains(p)))
    })
}

fn flatten(assignment: &Assignment) -> impl Iterator<Item = (String, u32)> + '_ {
    assignment
        .iter()
        .flat_map(|(topic, partitions)| partitions.iter().map(move |&p| (topic.clone(), p)))
}
