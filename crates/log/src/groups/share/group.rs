//! Share-group membership, as Kafka's coordinator keeps it for ShareGroupHeartbeat (KIP-932,
//! on KIP-848's member epochs): a member joins with epoch 0 and the id it chose, heartbeats
//! with the epoch it was given, and leaves with -1; a stale epoch is FENCED_MEMBER_EPOCH and an
//! unknown member UNKNOWN_MEMBER_ID. The broker assigns: every member gets every partition of
//! the topics it subscribes to (members share partitions; records, not partitions, are what
//! they divide), and a member's epoch moves to the group's when its assignment changes. A
//! member silent for `share.session.timeout.ms` is removed and its records given back, at
//! another member's heartbeat or in housekeeping's round, whichever comes first.
//! Membership is not durable: as in Kafka, members rejoin after a coordinator restart. A group
//! stays (empty, with its epoch) after its last member leaves.

use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// One member.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    epoch: i32,
    client_id: String,
    client_host: String,
    subscribed: Vec<String>,
    /// What it was last given: topic to partitions.
    assignment: BTreeMap<String, Vec<u32>>,
    last_heard_ms: i64,
}

#[derive(Debug, Default)]
struct Group {
    epoch: i32,
    members: BTreeMap<String, Member>,
}

/// What a heartbeat answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareHeartbeat {
    /// The member's epoch now (-1 after leaving).
    pub member_epoch: i32,
    /// Its assignment, when it changed (always on joining): topic to partitions.
    pub assignment: Option<BTreeMap<String, Vec<u32>>>,
}

/// A share group's member as described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareMemberDescription {
    /// Its id.
    pub member_id: String,
    /// The client id it joined with.
    pub client_id: String,
    /// The host it joined from.
    pub client_host: String,
    /// Its epoch.
    pub member_epoch: i32,
    /// The topics it subscribes to.
    pub subscribed: Vec<String>,
    /// Its assignment: topic to partitions.
    pub assignment: BTreeMap<String, Vec<u32>>,
}

/// Every share group's members.
#[derive(Debug, Default)]
pub(crate) struct ShareGroups {
    groups: Mutex<BTreeMap<String, Group>>,
}

impl ShareGroups {
    /// A heartbeat of `member` in `group` at `now`; `subscribed` is given on joining and when
    /// it changes; `assign` says which partitions topics have. Members silent for
    /// `session_timeout_ms` are removed first and returned, for their records to be given back.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn heartbeat(
        &self,
        group: &str,
        member: &str,
        member_epoch: i32,
        subscribed: Option<Vec<String>>,
        client: (&str, &str),
        session_timeout_ms: i64,
        now_ms: i64,
        assign: impl Fn(&[String]) -> BTreeMap<String, Vec<u32>>,
    ) -> (Result<ShareHeartbeat>, Vec<String>) {
        let mut groups = self.groups.lock();
        let g = groups.entry(group.to_owned()).or_default();
        let expired: Vec<String> = g
            .members
            .iter()
            .filter(|(id, m)| {
                id.as_str() != member && now_ms - m.last_heard_ms >= session_timeout_ms
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            g.members.remove(id);
        }
        if !expired.is_empty() {
            g.epoch += 1;
        }
        let answer = Self::beat(g, member, member_epoch, subscribed, client, now_ms, assign);
        (answer, expired)
    }

    fn beat(
        g: &mut Group,
        member: &str,
        member_epoch: i32,
        subscribed: Option<Vec<String>>,
        (client_id, client_host): (&str, &str),
        now_ms: i64,
        assign: impl Fn(&[String]) -> BTreeMap<String, Vec<u32>>,
    ) -> Result<ShareHeartbeat> {
        if member.is_empty() {
            return Err(Error::InvalidShareRequest(
                "MemberId can't be empty.".into(),
            ));
        }
        match member_epoch {
            -1 => {
                if g.members.remove(member).is_some() {
                    g.epoch += 1;
                }
                return Ok(ShareHeartbeat {
                    member_epoch: -1,
                    assignment: None,
                });
            }
            0 => {
                let Some(subscribed) = subscribed.clone() else {
                    return Err(Error::InvalidShareRequest(
                        "SubscribedTopicNames must be set in first request.".into(),
                    ));
                };
                g.epoch += 1;
                g.members.insert(
                    member.to_owned(),
                    Member {
                        epoch: 0,
                        client_id: client_id.to_owned(),
                        client_host: client_host.to_owned(),
                        subscribed,
                        assignment: BTreeMap::new(),
                        last_heard_ms: now_ms,
                    },
                );
            }
            epoch => match g.members.get(member) {
                None => {
                    return Err(Error::Group(
                        crate::groups::classic::GroupError::UnknownMember,
                    ));
                }
                Some(m) if m.epoch != epoch => {
                    return Err(Error::FencedMemberEpoch {
                        member: member.to_owned(),
                        epoch,
                        current: m.epoch,
                    });
                }
                Some(_) => {}
            },
        }
        let group_epoch = g.epoch;
        let m = g.members.get_mut(member).expect("joined or checked above");
        m.last_heard_ms = now_ms;
        if let Some(subscribed) = subscribed
            && subscribed != m.subscribed
        {
            m.subscribed = subscribed;
        }
        let target = assign(&m.subscribed);
        let changed = member_epoch == 0 || target != m.assignment;
        if changed {
            m.assignment = target.clone();
            m.epoch = group_epoch;
        }
        Ok(ShareHeartbeat {
            member_epoch: m.epoch,
            assignment: changed.then_some(target),
        })
    }

    /// Removes every member of every group silent for its group's session timeout
    /// (`session_timeout_ms` of the group) as of `now` (housekeeping's round, so a group's
    /// last member expires too, with nobody heartbeating); returns (group, member) of each,
    /// for their records to be given back.
    pub(crate) fn expire(
        &self,
        session_timeout_ms: impl Fn(&str) -> i64,
        now_ms: i64,
    ) -> Vec<(String, String)> {
        let mut groups = self.groups.lock();
        let mut expired = Vec::new();
        for (id, g) in groups.iter_mut() {
            let timeout = session_timeout_ms(id);
            let before = g.members.len();
            g.members.retain(|member, m| {
                let alive = now_ms - m.last_heard_ms < timeout;
                if !alive {
                    expired.push((id.clone(), member.clone()));
                }
                alive
            });
            if g.members.len() != before {
                g.epoch += 1;
            }
        }
        expired
    }

    /// Counts as hearing from `member` of `group` at `now`, if it is a member.
    pub(crate) fn touch(&self, group: &str, member: &str, now_ms: i64) {
        if let Some(m) = self
            .groups
            .lock()
            .get_mut(group)
            .and_then(|g| g.members.get_mut(member))
        {
            m.last_heard_ms = now_ms;
        }
    }

    /// Forgets share group `group` (whether it was one); refused while it has members.
    pub(crate) fn delete(&self, group: &str) -> Result<bool> {
        let mut groups = self.groups.lock();
        match groups.get(group) {
            Some(g) if !g.members.is_empty() => Err(Error::Group(
                crate::groups::classic::GroupError::NonEmptyGroup,
            )),
            Some(_) => Ok(groups.remove(group).is_some()),
            None => Ok(false),
        }
    }

    /// Makes `group` known as an empty share group if it is not known (an offset alter of an
    /// unknown group makes one, as on Kafka).
    pub(crate) fn ensure(&self, group: &str) {
        self.groups.lock().entry(group.to_owned()).or_default();
    }

    /// Whether `member` is in `group`.
    pub(crate) fn is_member(&self, group: &str, member: &str) -> bool {
        self.groups
            .lock()
            .get(group)
            .is_some_and(|g| g.members.contains_key(member))
    }

    /// Every share group that had a member since the engine started.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.groups.lock().keys().cloned().collect()
    }

    /// The members of `group` and its epoch, `None` if it never had one since the engine
    /// started.
    pub(crate) fn describe(&self, group: &str) -> Option<(i32, Vec<ShareMemberDescription>)> {
        let groups = self.groups.lock();
        let g = groups.get(group)?;
        Some((
            g.epoch,
            g.members
                .iter()
                .map(|(id, m)| ShareMemberDescription {
                    member_id: id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    member_epoch: m.epoch,
                    subscribed: m.subscribed.clone(),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        ))
    }
}
