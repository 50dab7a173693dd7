//! [`Group`]: one consumer group's classic-protocol state machine.
//!
//! Phases: `Empty → PreparingRebalance → CompletingRebalance → Stable`, and back to
//! `PreparingRebalance` whenever a member joins, leaves or times out. The join phase ends when
//! every known member has rejoined or the rebalance deadline passes (members that did not
//! rejoin are removed); the generation then goes up by one and the leader must send the
//! assignment in its sync.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::GroupError;

/// The state of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupPhase {
    /// No members.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
}

/// A join request, as JoinGroup carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRequest {
    /// The member's id, `None` on its first join.
    pub member_id: Option<String>,
    /// Static membership id (KIP-345), if any.
    pub group_instance_id: Option<String>,
    /// The client's id, used to build a new member id.
    pub client_id: String,
    /// `"consumer"` for consumers.
    pub protocol_type: String,
    /// Supported protocols (assignor names) in order of preference, each with its metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// Without a heartbeat for this long the member is removed.
    pub session_timeout_ms: i64,
    /// How long a rebalance waits for this member to rejoin.
    pub rebalance_timeout_ms: i64,
}

/// What a member learns when the join phase completes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinResponse {
    /// The new generation.
    pub generation: i32,
    /// The chosen protocol (assignor).
    pub protocol: String,
    /// The leader's member id.
    pub leader: String,
    /// This member's id.
    pub member_id: String,
    /// For the leader only: every member's id, instance id and metadata for the protocol.
    pub members: Vec<(String, Option<String>, Bytes)>,
}

/// Outcome of a join call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinStatus {
    /// The join phase completed for this member.
    Joined(JoinResponse),
    /// Other members have yet to rejoin; ask again with this member id.
    Waiting {
        /// The (possibly new) member id.
        member_id: String,
    },
}

/// Outcome of a sync call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncStatus {
    /// The member's assignment for this generation.
    Assigned(Bytes),
    /// The leader has not sent the assignment yet.
    Waiting,
}

/// One member as `describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Its assignment in the current generation (empty before sync).
    pub assignment: Bytes,
}

#[derive(Debug, Clone)]
struct Member {
    instance_id: Option<String>,
    client_id: String,
    protocols: Vec<(String, Bytes)>,
    session_timeout_ms: i64,
    rebalance_timeout_ms: i64,
    last_seen: i64,
    /// Rejoined in the current join phase.
    joined: bool,
    /// Order of first join, for a stable leader choice.
    seq: u64,
    assignment: Option<Bytes>,
}

/// One consumer group.
#[derive(Debug, Clone)]
pub struct Group {
    id: String,
    phase: GroupPhase,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: BTreeMap<String, Member>,
    rebalance_deadline: i64,
    next_seq: u64,
}

impl Group {
    /// A new, empty group.
    pub fn new(id: impl Into<String>) -> Group {
        Group {
            id: id.into(),
            phase: GroupPhase::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            rebalance_deadline: 0,
            next_seq: 0,
        }
    }

    /// The group id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Current phase.
    pub fn phase(&self) -> GroupPhase {
        self.phase
    }

    /// Current generation (0 before the first completed join).
    pub fn generation(&self) -> i32 {
        self.generation
    }

    /// The chosen protocol, once a join phase completed.
    pub fn protocol(&self) -> Option<&str> {
        self.protocol.as_deref()
    }

    /// The leader's member id.
    pub fn leader(&self) -> Option<&str> {
        self.leader.as_deref()
    }

    /// Members and their assignments.
    pub fn members(&self) -> Vec<MemberDescription> {
        self.members
            .iter()
            .map(|(id, m)| MemberDescription {
                member_id: id.clone(),
                group_instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                assignment: m.assignment.clone().unwrap_or_default(),
            })
            .collect()
    }

    /// A member joins or rejoins. Starts a rebalance unless one is already being prepared.
    pub fn join(&mut self, request: JoinRequest, now: i64) -> Result<JoinStatus, GroupError> {
        if let Some(existing) = &self.protocol_type
            && !self.members.is_empty()
            && *existing != request.protocol_type
        {
            return Err(GroupError::InconsistentProtocol);
        }
        let member_id = self.resolve_member_id(&request)?;
        if !self.members.is_empty() && !self.shares_a_protocol(&member_id, &request.protocols) {
            return Err(GroupError::InconsistentProtocol);
        }
        let seq = match self.members.get(&member_id) {
            Some(m) => m.seq,
            None => {
                self.next_seq += 1;
                self.next_seq
            }
        };
        self.protocol_type = Some(request.protocol_type.clone());
        self.members.insert(
            member_id.clone(),
            Member {
                instance_id: request.group_instance_id,
                client_id: request.client_id,
                protocols: request.protocols,
                session_timeout_ms: request.session_timeout_ms,
                rebalance_timeout_ms: request.rebalance_timeout_ms,
                last_seen: now,
                joined: true,
                seq,
                assignment: None,
            },
        );
        if self.phase != GroupPhase::PreparingRebalance {
            self.start_rebalance(now, Some(&member_id));
        }
        self.maybe_complete_join(now);
        self.poll_join(&member_id)
    }

    fn resolve_member_id(&self, request: &JoinRequest) -> Result<String, GroupError> {
        if let Some(instance) = &request.group_instance_id
            && let Some((id, _)) = self
                .members
                .iter()
                .find(|(_, m)| m.instance_id.as_ref() == Some(instance))
        {
            return match &request.member_id {
                Some(given) if given != id => Err(GroupError::FencedInstance),
                _ => Ok(id.clone()),
            };
        }
        match &request.member_id {
            Some(id) if self.members.contains_key(id) => Ok(id.clone()),
            Some(_) => Err(GroupError::UnknownMember),
            None => Ok(format!(
                "{}-{}-{}",
                request.client_id,
                self.id,
                self.next_seq + 1
            )),
        }
    }

    fn shares_a_protocol(&self, joining: &str, protocols: &[(String, Bytes)]) -> bool {
        protocols.iter().any(|(name, _)| {
            self.members
                .iter()
                .filter(|(id, _)| id.as_str() != joining)
                .all(|(_, m)| m.protocols.iter().any(|(n, _)| n == name))
        })
    }

    fn start_rebalance(&mut self, now: i64, rejoined: Option<&str>) {
        self.phase = GroupPhase::PreparingRebalance;
        let longest = self
            .members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0);
        self.rebalance_deadline = now + longest;
        for (id, member) in &mut self.members {
            member.joined = Some(id.as_str()) == rejoined;
            member.assignment = None;
        }
    }

    /// Ends the join phase once everyone rejoined or the deadline passed.
    fn maybe_complete_join(&mut self, now: i64) {
        if self.phase != GroupPhase::PreparingRebalance {
            return;
        }
        let everyone = self.members.values().all(|m| m.joined);
        if !everyone && now < self.rebalance_deadline {
            return;
        }
        self.members.retain(|_, m| m.joined);
        self.generation += 1;
        if self.members.is_empty() {
            self.phase = GroupPhase::Empty;
            self.leader = None;
            self.protocol = None;
            return;
        }
        self.protocol = self.choose_protocol();
        if self
            .leader
            .as_ref()
            .is_none_or(|l| !self.members.contains_key(l))
        {
            self.leader = self
                .members
                .iter()
                .min_by_key(|(_, m)| m.seq)
                .map(|(id, _)| id.clone());
        }
        self.phase = GroupPhase::CompletingRebalance;
    }

    /// The protocol every member supports that gets the most first-choice votes, as Kafka picks.
    fn choose_protocol(&self) -> Option<String> {
        let first = self.members.values().next()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(p, _)| p == *n))
            })
            .collect();
        let votes = |name: &String| {
            self.members
                .values()
                .filter(|m| {
                    m.protocols
                        .iter()
                        .find(|(p, _)| candidates.contains(&p))
                        .is_some_and(|(p, _)| p == name)
                })
                .count()
        };
        let mut best: Option<(&String, usize)> = None;
        for name in &candidates {
            let v = votes(name);
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((name, v));
            }
        }
        best.map(|(n, _)| n.clone())
    }

    /// Asks whether the join phase has completed for `member_id`.
    pub fn poll_join(&self, member_id: &str) -> Result<JoinStatus, GroupError> {
        let Some(member) = self.members.get(member_id) else {
            return Err(GroupError::UnknownMember);
        };
        if self.phase == GroupPhase::PreparingRebalance || !member.joined {
            return Ok(JoinStatus::Waiting {
                member_id: member_id.to_owned(),
            });
        }
        let protocol = self.protocol.clone().unwrap_or_default();
        let leader = self.leader.clone().unwrap_or_default();
        let members = if leader == member_id {
            self.members
                .iter()
                .map(|(id, m)| {
                    let metadata = m
                        .protocols
                        .iter()
                        .find(|(n, _)| *n == protocol)
                        .map(|(_, md)| md.clone());
                    (
                        id.clone(),
                        m.instance_id.clone(),
                        metadata.unwrap_or_default(),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(JoinStatus::Joined(JoinResponse {
            generation: self.generation,
            protocol,
            leader,
            member_id: member_id.to_owned(),
            members,
        }))
    }

    fn member_in_generation(
        &mut self,
        member_id: &str,
        generation: i32,
    ) -> Result<&mut Member, GroupError> {
        let current = self.generation;
        let member = self
            .members
            .get_mut(member_id)
            .ok_or(GroupError::UnknownMember)?;
        if generation != current {
            return Err(GroupError::IllegalGeneration);
        }
        Ok(member)
    }

    /// A member syncs; the leader passes every member's assignment.
    pub fn sync(
        &mut self,
        member_id: &str,
        generation: i32,
        assignments: Option<Vec<(String, Bytes)>>,
        now: i64,
    ) -> Result<SyncStatus, GroupError> {
        if self.phase == GroupPhase::PreparingRebalance {
            self.members
                .get(member_id)
                .ok_or(GroupError::UnknownMember)?;
            return Err(GroupError::RebalanceInProgress);
        }
        self.member_in_generation(member_id, generation)?.last_seen = now;
        if self.phase == GroupPhase::CompletingRebalance
            && self.leader.as_deref() == Some(member_id)
            && let Some(assignments) = assignments
        {
            let mut given: BTreeMap<String, Bytes> = assignments.into_iter().collect();
            for (id, member) in &mut self.members {
                member.assignment = Some(given.remove(id).unwrap_or_default());
            }
            self.phase = GroupPhase::Stable;
        }
        Ok(
            match (
                self.phase,
                self.members
                    .get(member_id)
                    .and_then(|m| m.assignment.clone()),
            ) {
                (GroupPhase::Stable, Some(assignment)) => SyncStatus::Assigned(assignment),
                _ => SyncStatus::Waiting,
            },
        )
    }

    /// A heartbeat: keeps the member alive, or tells it to rejoin.
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        generation: i32,
        now: i64,
    ) -> Result<(), GroupError> {
        let rebalancing = self.phase == GroupPhase::PreparingRebalance;
        let member = self
            .members
            .get_mut(member_id)
            .ok_or(GroupError::UnknownMember)?;
        member.last_seen = now;
        if rebalancing {
            return Err(GroupError::RebalanceInProgress);
        }
        if generation != self.generation {
            return Err(GroupError::IllegalGeneration);
        }
        Ok(())
    }

    /// A member leaves; the others rebalance.
    pub fn leave(&mut self, member_id: &str, now: i64) -> Result<(), GroupError> {
        self.members
            .remove(member_id)
            .ok_or(GroupError::UnknownMember)?;
        self.members_removed(now);
        self.maybe_complete_join(now);
        Ok(())
    }

    /// After members were removed outside a join phase: an empty group goes to `Empty` (a new
    /// generation, so stale members are fenced), otherwise the rest rebalance.
    fn members_removed(&mut self, now: i64) {
        if self.members.is_empty() {
            self.phase = GroupPhase::Empty;
            self.leader = None;
            self.generation += 1;
        } else {
            self.start_rebalance(now, None);
        }
    }

    /// Removes members whose session expired and ends a join phase whose deadline passed.
    /// During a rebalance, members that already rejoined are waiting on the group and are kept;
    /// the others still expire with their session, as in Kafka, so a crashed member delays a
    /// rebalance by its session timeout at most. Returns true if anything changed.
    pub fn tick(&mut self, now: i64) -> bool {
        let before = (self.phase, self.generation, self.members.len());
        let rebalancing = self.phase == GroupPhase::PreparingRebalance;
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| !(rebalancing && m.joined) && now - m.last_seen > m.session_timeout_ms)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            self.members.remove(id);
        }
        if !expired.is_empty() && !rebalancing {
            self.members_removed(now);
        }
        self.maybe_complete_join(now);
        before != (self.phase, self.generation, self.members.len())
    }

    /// Whether an offset commit from `member_id` at `generation` is accepted, as Kafka decides:
    /// current-generation members in `Stable` or `PreparingRebalance`; members-less commits
    /// (generation -1, empty member id) only while the group has no members.
    pub fn validate_commit(&self, member_id: &str, generation: i32) -> Result<(), GroupError> {
        if generation < 0 && member_id.is_empty() {
            return if self.members.is_empty() {
                Ok(())
            } else {
                Err(GroupError::UnknownMember)
            };
        }
        if !self.members.contains_key(member_id) {
            return Err(GroupError::UnknownMember);
        }
        if generation != self.generation {
            return Err(GroupError::IllegalGeneration);
        }
        if self.phase == GroupPhase::CompletingRebalance {
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(())
    }
}
