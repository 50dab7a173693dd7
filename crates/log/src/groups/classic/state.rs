//! [`Group`]: one consumer group's classic-protocol state machine.
//!
//! Phases: `Empty → PreparingRebalance → CompletingRebalance → Stable`, and back to
//! `PreparingRebalance` whenever a member joins, leaves or times out. The join phase ends when
//! every known member has rejoined or the rebalance deadline passes (members that did not
//! rejoin are removed); the generation then goes up by one and the leader must send the
//! assignment in its sync.

use std::collections::BTreeMap;
use std::hash::BuildHasher;

use bytes::Bytes;

use super::error::GroupError;
use super::messages::{
    GroupPhase, JoinRequest, JoinResponse, JoinStatus, MemberDescription, SyncStatus,
};
use super::persist::{SavedGroup, SavedMember};

#[derive(Debug, Clone)]
struct Member {
    instance_id: Option<String>,
    client_id: String,
    client_host: String,
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
    /// Member ids handed out by KIP-394 and not yet used, with when each expires.
    pending: BTreeMap<String, i64>,
    /// Random per group instance, so member ids are not reused after a restart.
    nonce: u64,
    ids_issued: u64,
    /// A rebalance of an empty group waits this long for more joiners (Kafka
    /// `group.initial.rebalance.delay.ms`), so a burst of consumers lands in one generation.
    initial_delay_ms: i64,
    /// While the initial delay runs, the join phase stays open until this time.
    join_open_until: i64,
    /// Counts settles (see [`Group::settled`]).
    settles: u64,
    /// The state at the last settle, what is saved.
    last_settled: Option<SavedGroup>,
}

/// Most KIP-394 ids a group keeps waiting for their second join; beyond it the ones closest to
/// expiry are dropped, so clients that never come back cannot grow the group without bound.
const MAX_PENDING_MEMBERS: usize = 1024;

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
            pending: BTreeMap::new(),
            nonce: std::collections::hash_map::RandomState::new().hash_one(0u8),
            ids_issued: 0,
            initial_delay_ms: 0,
            join_open_until: 0,
            settles: 0,
            last_settled: None,
        }
    }

    /// A group as it was saved, its members' sessions starting `now`.
    pub(crate) fn restore(saved: SavedGroup, now: i64) -> Group {
        let mut group = Group::new(saved.id.clone());
        group.generation = saved.generation;
        group.protocol_type = saved.protocol_type.clone();
        group.protocol = saved.protocol.clone();
        group.leader = saved.leader.clone();
        group.next_seq = saved.next_seq;
        for m in &saved.members {
            group.members.insert(
                m.id.clone(),
                Member {
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(name, md)| (name.clone(), Bytes::from(md.clone())))
                        .collect(),
                    session_timeout_ms: m.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    last_seen: now,
                    joined: true,
                    seq: m.seq,
                    assignment: Some(Bytes::from(m.assignment.clone())),
                },
            );
        }
        group.phase = if group.members.is_empty() {
            GroupPhase::Empty
        } else {
            GroupPhase::Stable
        };
        group.last_settled = Some(saved);
        group
    }

    /// How many times the group settled (its leader's assignment arrived, it emptied, or a
    /// static member's id changed): a change means its saved state is out of date.
    pub(crate) fn settled(&self) -> u64 {
        self.settles
    }

    /// The state at the last settle.
    pub(crate) fn last_settled(&self) -> Option<&SavedGroup> {
        self.last_settled.as_ref()
    }

    fn settle(&mut self) {
        self.settles += 1;
        self.last_settled = Some(SavedGroup {
            id: self.id.clone(),
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            next_seq: self.next_seq,
            members: self
                .members
                .iter()
                .map(|(id, m)| SavedMember {
                    id: id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(name, md)| (name.clone(), md.to_vec()))
                        .collect(),
                    session_timeout_ms: m.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    seq: m.seq,
                    assignment: m
                        .assignment
                        .as_ref()
                        .map(|a| a.to_vec())
                        .unwrap_or_default(),
                })
                .collect(),
        });
    }

    /// The same group, waiting `delay_ms` for more joiners when a rebalance starts while it is
    /// empty.
    pub fn with_initial_delay(mut self, delay_ms: i64) -> Group {
        self.initial_delay_ms = delay_ms;
        self
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

    /// The members' protocol type (`consumer` for consumers), once one joined.
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
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
                client_host: m.client_host.clone(),
                metadata: self.metadata_of(m),
                assignment: m.assignment.clone().unwrap_or_default(),
            })
            .collect()
    }

    /// A member joins or rejoins. Starts a rebalance unless one is already being prepared, or
    /// unless a static member restarts with what it had while the group is stable.
    pub fn join(&mut self, request: JoinRequest, now: i64) -> Result<JoinStatus, GroupError> {
        if let Some(existing) = &self.protocol_type
            && !self.members.is_empty()
            && *existing != request.protocol_type
        {
            return Err(GroupError::InconsistentProtocol);
        }
        if let Some(instance) = &request.group_instance_id
            && let Some(holder) = self.static_holder(instance)
        {
            match &request.member_id {
                Some(given) if *given != holder => return Err(GroupError::FencedInstance),
                Some(_) => {}
                None => return self.replace_static_member(holder, request, now),
            }
        }
        let member_id = match &request.member_id {
            Some(id) if self.members.contains_key(id) => id.clone(),
            Some(id) if self.pending.remove(id).is_some() => id.clone(),
            Some(_) => return Err(GroupError::UnknownMember),
            None => {
                let id = self.new_member_id(&request.client_id);
                if request.require_known_member_id && request.group_instance_id.is_none() {
                    self.add_pending(id.clone(), now + request.session_timeout_ms);
                    return Ok(JoinStatus::MemberIdRequired { member_id: id });
                }
                id
            }
        };
        if !self.members.is_empty() && !self.shares_a_protocol(&member_id, &request.protocols) {
            return Err(GroupError::InconsistentProtocol);
        }
        let seq = match self.members.get(&member_id) {
            Some(m) => m.seq,
            None => {
                self.next_seq += 1;
                if self.phase == GroupPhase::PreparingRebalance && now < self.join_open_until {
                    // Kafka extends the initial delay for each newcomer, up to the deadline.
                    self.join_open_until =
                        (now + self.initial_delay_ms).min(self.rebalance_deadline);
                }
                self.next_seq
            }
        };
        self.protocol_type = Some(request.protocol_type.clone());
        self.members.insert(
            member_id.clone(),
            Member {
                instance_id: request.group_instance_id,
                client_id: request.client_id,
                client_host: request.client_host,
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
        self.debug_check();
        self.poll_join(&member_id)
    }

    /// The member id that holds static instance `instance`.
    fn static_holder(&self, instance: &str) -> Option<String> {
        self.members
            .iter()
            .find(|(_, m)| m.instance_id.as_deref() == Some(instance))
            .map(|(id, _)| id.clone())
    }

    /// A static member restarted (joins with its instance id and no member id): it gets a new
    /// member id, the old one is fenced, and as in Kafka a stable group whose assignor stays the
    /// same does not rebalance: the member keeps its assignment (a leader gets the member list
    /// again, and its sync in a stable group returns its current assignment).
    fn replace_static_member(
        &mut self,
        old_id: String,
        request: JoinRequest,
        now: i64,
    ) -> Result<JoinStatus, GroupError> {
        let mut member = self
            .members
            .remove(&old_id)
            .ok_or(GroupError::UnknownMember)?;
        let new_id = self.new_member_id(&request.client_id);
        member.client_id = request.client_id;
        member.client_host = request.client_host;
        member.protocols = request.protocols;
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.last_seen = now;
        member.joined = true;
        let was_leader = self.leader.as_deref() == Some(old_id.as_str());
        if was_leader {
            self.leader = Some(new_id.clone());
        }
        self.members.insert(new_id.clone(), member);
        // Kafka's rule: no rebalance unless the group's protocol (assignor) would change.
        let same_protocol = self.choose_protocol() == self.protocol;
        if self.phase == GroupPhase::Stable && same_protocol {
            self.settle();
        } else {
            if self.phase != GroupPhase::PreparingRebalance {
                self.start_rebalance(now, Some(&new_id));
            }
            self.maybe_complete_join(now);
        }
        self.debug_check();
        self.poll_join(&new_id)
    }

    fn new_member_id(&mut self, client_id: &str) -> String {
        self.ids_issued += 1;
        format!("{client_id}-{:016x}-{:08x}", self.nonce, self.ids_issued)
    }

    fn add_pending(&mut self, id: String, expires_at: i64) {
        if self.pending.len() >= MAX_PENDING_MEMBERS
            && let Some(soonest) = self
                .pending
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(id, _)| id.clone())
        {
            self.pending.remove(&soonest);
        }
        self.pending.insert(id, expires_at);
    }

    /// A member's metadata for the group's protocol (its first protocol's before one is chosen).
    fn metadata_of(&self, member: &Member) -> Bytes {
        let chosen = self
            .protocol
            .as_ref()
            .and_then(|p| member.protocols.iter().find(|(n, _)| n == p));
        chosen
            .or(member.protocols.first())
            .map(|(_, md)| md.clone())
            .unwrap_or_default()
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
        self.rebalance_deadline = now + self.rebalance_timeout_ms();
        self.join_open_until = if self.phase == GroupPhase::Empty {
            (now + self.initial_delay_ms).min(self.rebalance_deadline)
        } else {
            now
        };
        self.phase = GroupPhase::PreparingRebalance;
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
        if (!everyone || now < self.join_open_until) && now < self.rebalance_deadline {
            return;
        }
        self.members.retain(|_, m| m.joined);
        self.generation += 1;
        if self.members.is_empty() {
            self.phase = GroupPhase::Empty;
            self.leader = None;
            self.protocol = None;
            self.settle();
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
                .map(|(id, m)| (id.clone(), m.instance_id.clone(), self.metadata_of(m)))
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
            self.settle();
        }
        self.debug_check();
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
        self.debug_check();
        Ok(())
    }

    /// FENCED_INSTANCE_ID if static instance `instance` is held by another member than
    /// `member_id`.
    pub fn check_instance(&self, instance: &str, member_id: &str) -> Result<(), GroupError> {
        match self.static_holder(instance) {
            Some(holder) if holder != member_id => Err(GroupError::FencedInstance),
            _ => Ok(()),
        }
    }

    /// The longest rebalance timeout among the members (how long a join phase may last).
    pub fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// A static member leaves by instance id; returns the member id that left.
    pub fn leave_instance(
        &mut self,
        instance_id: &str,
        member_id: Option<&str>,
        now: i64,
    ) -> Result<String, GroupError> {
        let holder = self
            .static_holder(instance_id)
            .ok_or(GroupError::UnknownMember)?;
        if member_id.is_some_and(|given| !given.is_empty() && given != holder) {
            return Err(GroupError::FencedInstance);
        }
        self.leave(&holder, now)?;
        Ok(holder)
    }

    /// After members were removed outside a join phase: an empty group goes to `Empty` (a new
    /// generation, so stale members are fenced, and no protocol: Kafka describes an empty
    /// group's assignor as ""), otherwise the rest rebalance.
    fn members_removed(&mut self, now: i64) {
        if self.members.is_empty() {
            self.phase = GroupPhase::Empty;
            self.leader = None;
            self.protocol = None;
            self.generation += 1;
            self.settle();
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
        self.pending.retain(|_, expires_at| *expires_at > now);
        if !expired.is_empty() && !rebalancing {
            self.members_removed(now);
        }
        self.maybe_complete_join(now);
        self.debug_check();
        before != (self.phase, self.generation, self.members.len())
    }

    /// The phases' rules, checked after every change in debug builds (not after a restore, so
    /// bad bytes on disk never meet an assertion): an empty group has no members and no
    /// leader; from the end of a join phase on, the leader is a member; a stable group has
    /// every member's assignment; a static instance id has one member; the member ids waiting
    /// for their second join stay within their bound.
    fn debug_check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let id = &self.id;
        if self.phase == GroupPhase::Empty {
            debug_assert!(
                self.members.is_empty() && self.leader.is_none(),
                "{id}: empty with members or a leader"
            );
        }
        if matches!(
            self.phase,
            GroupPhase::CompletingRebalance | GroupPhase::Stable
        ) {
            debug_assert!(
                self.leader
                    .as_ref()
                    .is_some_and(|l| self.members.contains_key(l)),
                "{id}: {:?} led by {:?}, who is no member",
                self.phase,
                self.leader
            );
        }
        if self.phase == GroupPhase::Stable {
            debug_assert!(
                self.members.values().all(|m| m.assignment.is_some()),
                "{id}: stable with a member unassigned"
            );
        }
        let instances: Vec<&String> = self
            .members
            .values()
            .filter_map(|m| m.instance_id.as_ref())
            .collect();
        let unique: std::collections::BTreeSet<&&String> = instances.iter().collect();
        debug_assert_eq!(unique.len(), instances.len(), "{id}: an instance id twice");
        debug_assert!(self.pending.len() <= MAX_PENDING_MEMBERS);
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
