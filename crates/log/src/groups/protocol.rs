//! One protocol per group id. A classic join, a KIP-848 heartbeat at epoch 0 and a share-group
//! heartbeat at epoch 0 each claim their id here: under one lock, the protocol whose group
//! holds members is looked up, and the join runs only if the id is free or already that
//! protocol's. Wire and embedded callers go through the same claim, so they get the same
//! answer, and the broker keeps no rule of its own. Only joins take the lock: a member that
//! is in a group already holds the id for its protocol.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::engine::Log;
use crate::groups::classic::{GroupError, JoinRequest, JoinStatus};

/// The group protocols that share one namespace of group ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupProtocol {
    /// The classic protocol (JoinGroup and SyncGroup; embedded consumers).
    Classic,
    /// KIP-848's consumer protocol (ConsumerGroupHeartbeat).
    Consumer,
    /// KIP-932's share groups (ShareGroupHeartbeat).
    Share,
}

/// The lock every join's claim of a group id is made under.
#[derive(Debug, Default)]
pub(crate) struct ProtocolClaims {
    lock: Mutex<()>,
}

impl Log {
    /// The protocol whose group `group` has members, if any does.
    pub fn group_protocol(&self, group: &str) -> Option<GroupProtocol> {
        let has = |members: Option<usize>| members.is_some_and(|n| n > 0);
        if has(self
            .shared
            .coordinator
            .read_group(group, |g| g.members().len()))
        {
            Some(GroupProtocol::Classic)
        } else if has(self.consumer_group_members(group).map(|(_, m)| m.len())) {
            Some(GroupProtocol::Consumer)
        } else if has(self.share_group_members(group).map(|(_, m)| m.len())) {
            Some(GroupProtocol::Share)
        } else {
            None
        }
    }

    /// A classic JoinGroup in `group`, without waiting, once the id is claimed for the
    /// classic protocol.
    pub fn join_classic(
        &self,
        group: &str,
        request: JoinRequest,
        now: i64,
    ) -> Result<JoinStatus, GroupError> {
        let coordinator = &self.shared.coordinator;
        self.claim_group(group, GroupProtocol::Classic, || {
            coordinator.join(group, request, now)
        })
    }

    /// [`Log::join_classic`], then waits until the join phase completes (or `timeout`
    /// passes). Returns [`JoinStatus::Joined`], or [`JoinStatus::MemberIdRequired`] for a
    /// KIP-394 first join. The wire's JoinGroup and the embedded consumer both join here.
    pub fn join_classic_and_wait(
        &self,
        group: &str,
        request: JoinRequest,
        timeout: Duration,
    ) -> Result<JoinStatus, GroupError> {
        let started = Instant::now();
        let clock = self.clock();
        let status = self.join_classic(group, request, clock.now_ms())?;
        self.shared
            .coordinator
            .wait_joined(group, status, clock, started, timeout)
    }

    /// Runs `join` if `group` is free or held by `wanted`, under the claims' lock so that no
    /// other protocol's join slips in between the look and the join. Classic and consumer
    /// groups refuse each other with INCONSISTENT_GROUP_PROTOCOL (logd does not convert a
    /// group while its members are in it); a share group and a group of either other
    /// protocol refuse each other with GROUP_ID_NOT_FOUND, as Kafka does.
    pub(crate) fn claim_group<T, E: From<GroupError>>(
        &self,
        group: &str,
        wanted: GroupProtocol,
        join: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let _held = self.shared.claims.lock.lock();
        match self.group_protocol(group) {
            Some(held) if held != wanted => Err(refusal(held, wanted).into()),
            _ => join(),
        }
    }
}

fn refusal(held: GroupProtocol, wanted: GroupProtocol) -> GroupError {
    use GroupProtocol::*;
    match (held, wanted) {
        (Classic, Consumer) | (Consumer, Classic) => GroupError::InconsistentProtocol,
        _ => GroupError::OtherGroupType,
    }
}
