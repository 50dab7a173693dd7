//! The consumer group protocol against simulated clients: random joins, heartbeats (a client
//! revokes what it was asked to at once or only at a later heartbeat), leaves, crashes, session
//! expiries, subscription changes and topics that grow. After every step no partition is
//! owned by two clients and the group's holders agree with its members; once the crashed
//! members' sessions are over and everyone heartbeats, every partition of a subscribed topic
//! is owned by exactly one client, its target's member, and every member is stable at the
//! assignment epoch. Restarts save and restore the group at random points. Plus the assignors'
//! own rules and the refusal of saved state that cannot be.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

const TOPICS: [&str; 3] = ["t0", "t1", "t2"];

#[derive(Debug, Clone)]
enum Op {
    Join {
        member: u8,
        topics: u8,
    },
    Beat {
        member: u8,
        revoke: bool,
    },
    Leave {
        member: u8,
    },
    Crash {
        member: u8,
    },
    Expire {
        member: u8,
    },
    Subscribe {
        member: u8,
        topics: u8,
    },
    Grow {
        topic: u8,
    },
    /// The coordinator restarts: the group is saved and restored.
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    let member = 0u8..5;
    prop_oneof![
        (member.clone(), 0u8..8).prop_map(|(member, topics)| Op::Join { member, topics }),
        (member.clone(), any::<bool>()).prop_map(|(member, revoke)| Op::Beat { member, revoke }),
        (member.clone(), any::<bool>()).prop_map(|(member, revoke)| Op::Beat { member, revoke }),
        (member.clone(), any::<bool>()).prop_map(|(member, revoke)| Op::Beat { member, revoke }),
        member.clone().prop_map(|member| Op::Leave { member }),
        member.clone().prop_map(|member| Op::Crash { member }),
        member.clone().prop_map(|member| Op::Expire { member }),
        (member, 0u8..8).prop_map(|(member, topics)| Op::Subscribe { member, topics }),
        (0u8..3).prop_map(|topic| Op::Grow { topic }),
        Just(Op::Restart),
    ]
}

/// A simulated client.
#[derive(Debug, Default)]
struct Client {
    epoch: i32,
    subscribed: BTreeSet<String>,
    owned: Assignment,
    /// What it was asked to give up and still owns.
    revoking: Assignment,
}

fn topics_of(mask: u8) -> BTreeSet<String> {
    TOPICS
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, t)| (*t).to_owned())
        .collect()
}

fn flat(a: &Assignment) -> BTreeSet<(String, u32)> {
    a.iter()
        .flat_map(|(t, ps)| ps.iter().map(move |&p| (t.clone(), p)))
        .collect()
}

struct World {
    group: ConsumerGroup,
    topics: BTreeMap<String, u32>,
    clients: BTreeMap<String, Client>,
    crashed: BTreeSet<String>,
}

impl World {
    fn beat(&mut self, id: &str, revoke: bool) {
        let Some(client) = self.clients.get_mut(id) else {
            return;
        };
        if revoke {
            for (topic, partitions) in std::mem::take(&mut client.revoking) {
                if let Some(owned) = client.owned.get_mut(&topic) {
                    owned.retain(|p| !partitions.contains(p));
                }
            }
            client.owned.retain(|_, ps| !ps.is_empty());
        }
        let beat = Heartbeat {
            member_id: id.to_owned(),
            member_epoch: client.epoch,
            instance_id: None,
            subscribed: Some(client.subscribed.clone()),
            assignor: None,
            owned: Some(client.owned.clone()),
        };
        match self.group.heartbeat(beat, &self.topics) {
            Ok(answer) => {
                client.epoch = answer.member_epoch;
                if let Some(assigned) = answer.assignment {
                    // New partitions are taken at once; revoked ones when it gets to it.
                    let mut revoking = client.owned.clone();
                    for (topic, partitions) in &assigned {
                        client
                            .owned
                            .entry(topic.clone())
                            .or_default()
                            .extend(partitions);
                        if let Some(r) = revoking.get_mut(topic) {
                            r.retain(|p| !partitions.contains(p));
                        }
                    }
                    revoking.retain(|_, ps| !ps.is_empty());
                    client.revoking = revoking;
                }
            }
            // Fenced or unknown: it gives everything up and rejoins.
            Err(_) => {
                client.epoch = 0;
                client.owned.clear();
                client.revoking.clear();
            }
        }
    }

    fn check(&self) {
        let mut owners: BTreeMap<(String, u32), &str> = BTreeMap::new();
        for (id, client) in &self.clients {
            for place in flat(&client.owned) {
                if let Some(other) = owners.insert(place.clone(), id) {
                    panic!("{place:?} owned by {other} and {id}");
                }
            }
        }
        let mut held: BTreeMap<(String, u32), &str> = BTreeMap::new();
        for (id, member) in self.group.members() {
            for place in member.reconciled.held() {
                if let Some(other) = held.insert(place.clone(), id) {
                    panic!("{place:?} held by members {other} and {id}");
                }
                assert_eq!(self.group.holder(&place.0, place.1), Some(id.as_str()));
            }
        }
        for (place, owner) in &owners {
            assert_eq!(
                held.get(place),
                Some(owner),
                "{place:?}: client {owner} owns it, the group does not say so"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_partition_has_two_owners_and_every_one_finds_one(ops in prop::collection::vec(op(), 1..80)) {
        let mut world = World {
            group: ConsumerGroup::default(),
            topics: TOPICS.iter().map(|t| ((*t).to_owned(), 3)).collect(),
            clients: BTreeMap::new(),
            crashed: BTreeSet::new(),
        };
        for op in ops {
            match op {
                Op::Join { member, topics } => {
                    let id = format!("m{member}");
                    if world.clients.contains_key(&id) || world.crashed.contains(&id) {
                        continue;
                    }
                    world.clients.insert(id.clone(), Client {
                        subscribed: topics_of(topics),
                        ..Client::default()
                    });
                    world.beat(&id, true);
                }
                Op::Beat { member, revoke } => world.beat(&format!("m{member}"), revoke),
                Op::Leave { member } => {
                    let id = format!("m{member}");
                    if world.clients.remove(&id).is_some() {
                        let beat = Heartbeat {
                            member_id: id,
                            member_epoch: -1,
                            instance_id: None,
                            subscribed: None,
                            assignor: None,
                            owned: None,
                        };
                        world.group.heartbeat(beat, &world.topics).unwrap();
                    }
                }
                Op::Crash { member } => {
                    let id = format!("m{member}");
                    if world.clients.remove(&id).is_some() {
                        world.crashed.insert(id);
                    }
                }
                Op::Expire { member } => {
                    let id = format!("m{member}");
                    if world.crashed.remove(&id) {
                        world.group.remove(&id);
                    }
                }
                Op::Subscribe { member, topics } => {
                    if let Some(client) = world.clients.get_mut(&format!("m{member}")) {
                        client.subscribed = topics_of(topics);
                    }
                }
                Op::Grow { topic } => {
                    let count = world.topics.get_mut(TOPICS[topic as usize]).unwrap();
                    *count = (*count + 1).min(8);
                }
                Op::Restart => {
                    let saved = serde_json::to_vec(&world.group).unwrap();
                    let restored: ConsumerGroup = serde_json::from_slice(&saved).unwrap();
                    let restored = restored.restored().unwrap();
                    prop_assert_eq!(&restored, &world.group, "the same group, holders rebuilt");
                    world.group = restored;
                }
            }
            world.check();
        }
        for id in std::mem::take(&mut world.crashed) {
            world.group.remove(&id);
        }
        let ids: Vec<String> = world.clients.keys().cloned().collect();
        for _ in 0..6 {
            for id in &ids {
                world.beat(id, true);
                world.check();
            }
        }
        let epoch = world.group.assignment_epoch();
        // Targets are computed at heartbeats: with nobody left to heartbeat, none is due.
        if !world.clients.is_empty() {
            prop_assert_eq!(epoch, world.group.group_epoch());
        }
        let mut owned = BTreeSet::new();
        for (id, client) in &world.clients {
            let member = &world.group.members()[id];
            prop_assert_eq!(member.reconciled.state, MemberState::Stable, "{}", id);
            prop_assert_eq!(member.reconciled.member_epoch, epoch, "{}", id);
            let target = world.group.target(id).cloned().unwrap_or_default();
            prop_assert_eq!(&client.owned, &target, "{} owns its target", id);
            owned.extend(flat(&client.owned));
        }
        let subscribed: BTreeSet<&String> =
            world.clients.values().flat_map(|c| &c.subscribed).collect();
        let all: BTreeSet<(String, u32)> = subscribed
            .into_iter()
            .flat_map(|t| (0..world.topics[t]).map(move |p| (t.clone(), p)))
            .collect();
        prop_assert_eq!(owned, all);
    }

    #[test]
    fn uniform_balances_same_subscriptions_and_keeps_what_it_can(
        members in 1usize..7,
        counts in prop::collection::vec(1u32..9, 1..4),
        leaving in 0usize..7,
    ) {
        let topics: BTreeMap<String, u32> =
            counts.iter().enumerate().map(|(i, &n)| (format!("t{i}"), n)).collect();
        let all: BTreeSet<String> = topics.keys().cloned().collect();
        let subscriptions: BTreeMap<String, BTreeSet<String>> =
            (0..members).map(|m| (format!("m{m}"), all.clone())).collect();
        let first = ServerAssignor::Uniform.assign(&subscriptions, &topics, &BTreeMap::new());
        let loads: Vec<usize> = first.values().map(|a| flat(a).len()).collect();
        prop_assert!(loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 1, "{:?}", loads);
        let given: usize = loads.iter().sum();
        prop_assert_eq!(given, counts.iter().sum::<u32>() as usize);
        // One member leaves: the others keep everything they had.
        let mut fewer = subscriptions.clone();
        if members > 1 {
            fewer.remove(&format!("m{}", leaving % members));
            let second = ServerAssignor::Uniform.assign(&fewer, &topics, &first);
            for (member, had) in &first {
                if let Some(now) = second.get(member) {
                    prop_assert!(flat(had).is_subset(&flat(now)), "{} lost partitions", member);
                }
            }
            let loads: Vec<usize> = second.values().map(|a| flat(a).len()).collect();
            prop_assert!(loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 1);
        }
    }
}

#[test]
fn range_gives_consecutive_partitions_in_member_order() {
    let both: BTreeSet<String> = ["a", "b"].map(String::from).into();
    let subscriptions: BTreeMap<String, BTreeSet<String>> = ["m1", "m2", "m3"]
        .map(|m| (m.to_owned(), both.clone()))
        .into();
    let topics: BTreeMap<String, u32> = [("a".to_owned(), 7), ("b".to_owned(), 3)].into();
    let targets = ServerAssignor::Range.assign(&subscriptions, &topics, &BTreeMap::new());
    let of = |m: &str, t: &str| -> Vec<u32> {
        targets[m]
            .get(t)
            .map_or(Vec::new(), |p| p.iter().copied().collect())
    };
    assert_eq!(of("m1", "a"), [0, 1, 2]);
    assert_eq!(of("m2", "a"), [3, 4]);
    assert_eq!(of("m3", "a"), [5, 6]);
    assert_eq!(
        (of("m1", "b"), of("m2", "b"), of("m3", "b")),
        (vec![0], vec![1], vec![2])
    );
}

#[test]
fn a_partition_moves_only_after_its_owner_revoked_it() {
    let topics: BTreeMap<String, u32> = [("t".to_owned(), 2)].into();
    let mut group = ConsumerGroup::default();
    let join = |id: &str| Heartbeat {
        member_id: id.to_owned(),
        member_epoch: 0,
        instance_id: None,
        subscribed: Some(["t".to_owned()].into()),
        assignor: None,
        owned: Some(Assignment::new()),
    };
    let a = group.heartbeat(join("a"), &topics).unwrap();
    assert_eq!(a.assignment.unwrap()["t"], [0, 1].into());
    let b = group.heartbeat(join("b"), &topics).unwrap();
    // b's target holds a partition a still owns: b waits for it, at the new epoch.
    assert_eq!(b.assignment, Some(Assignment::new()));
    let beat = |id: &str, epoch: i32, owned: &[u32]| Heartbeat {
        member_id: id.to_owned(),
        member_epoch: epoch,
        instance_id: None,
        subscribed: None,
        assignor: None,
        owned: Some([("t".to_owned(), owned.iter().copied().collect())].into()),
    };
    // a is asked to give one up and stays in its epoch until it says it did.
    let asked = group
        .heartbeat(beat("a", a.member_epoch, &[0, 1]), &topics)
        .unwrap();
    assert_eq!(asked.member_epoch, a.member_epoch);
    let kept = asked.assignment.unwrap()["t"].clone();
    assert_eq!(kept.len(), 1);
    let given_up = if kept.contains(&0) { 1 } else { 0 };
    let still = group
        .heartbeat(beat("b", b.member_epoch, &[]), &topics)
        .unwrap();
    assert_eq!(still.assignment, None, "nothing for b while a owns it");
    let kept: Vec<u32> = kept.into_iter().collect();
    let done = group
        .heartbeat(beat("a", a.member_epoch, &kept), &topics)
        .unwrap();
    assert_eq!(done.member_epoch, group.assignment_epoch());
    let now = group
        .heartbeat(beat("b", b.member_epoch, &[]), &topics)
        .unwrap();
    assert_eq!(now.assignment.unwrap()["t"], [given_up].into());
    // An epoch from the future, or an old one with more than it is assigned: fenced.
    let future = group.heartbeat(beat("b", b.member_epoch + 5, &[]), &topics);
    assert!(
        matches!(future, Err(Error::FencedMemberEpoch { .. })),
        "{future:?}"
    );
    let unknown = group.heartbeat(beat("zed", 3, &[]), &topics);
    assert!(matches!(
        unknown,
        Err(Error::Group(GroupError::UnknownMember))
    ));
}

#[test]
fn a_static_member_away_keeps_its_partitions_for_its_successor() {
    let topics: BTreeMap<String, u32> = [("t".to_owned(), 4)].into();
    let mut group = ConsumerGroup::default();
    let beat = |id: &str, epoch: i32, instance: &str, owned: Option<&[u32]>| Heartbeat {
        member_id: id.to_owned(),
        member_epoch: epoch,
        instance_id: Some(instance.to_owned()),
        subscribed: Some(["t".to_owned()].into()),
        assignor: None,
        owned: owned.map(|o| [("t".to_owned(), o.iter().copied().collect())].into()),
    };
    let a = group
        .heartbeat(beat("a", 0, "i1", Some(&[])), &topics)
        .unwrap();
    let given: Vec<u32> = a.assignment.unwrap()["t"].iter().copied().collect();
    assert_eq!(given, [0, 1, 2, 3]);
    let epoch = group.group_epoch();
    // Away (-2): it still holds everything, and the group does not move on.
    let away = group.heartbeat(beat("a", -2, "i1", None), &topics).unwrap();
    assert_eq!(away.member_epoch, -2);
    assert_eq!(group.holder("t", 2), Some("a"));
    // Its successor, a new member id with the same instance id, takes its place whole.
    let back = group
        .heartbeat(beat("a2", 0, "i1", Some(&[])), &topics)
        .unwrap();
    assert_eq!(back.member_epoch, a.member_epoch);
    assert_eq!(
        back.assignment.unwrap()["t"],
        given.iter().copied().collect()
    );
    assert_eq!(group.group_epoch(), epoch, "no rebalance");
    assert!(!group.members().contains_key("a"));
    assert_eq!(group.holder("t", 2), Some("a2"));
    // While a2 is present, nobody else may use its instance id.
    let taken = group.heartbeat(beat("a3", 0, "i1", Some(&[])), &topics);
    assert!(matches!(
        taken,
        Err(Error::Group(GroupError::UnreleasedInstanceId))
    ));
    // Leaving for good (-1) frees the id and the partitions.
    group
        .heartbeat(beat("a2", -1, "i1", None), &topics)
        .unwrap();
    assert_eq!(group.holder("t", 2), None);
    let fresh = group
        .heartbeat(beat("a3", 0, "i1", Some(&[])), &topics)
        .unwrap();
    assert_eq!(fresh.assignment.unwrap()["t"].len(), 4);
}

#[test]
fn saved_state_with_a_partition_or_an_instance_held_twice_is_refused() {
    let topics: BTreeMap<String, u32> = [("t0".to_owned(), 2)].into();
    let mut group = ConsumerGroup::default();
    for id in ["a", "b"] {
        let beat = Heartbeat {
            member_id: id.to_owned(),
            member_epoch: 0,
            instance_id: Some(format!("i-{id}")),
            subscribed: Some(["t0".to_owned()].into()),
            assignor: None,
            owned: Some(Assignment::new()),
        };
        group.heartbeat(beat, &topics).unwrap();
    }
    assert!(group.clone().restored().is_ok());
    let mut twice = group.clone();
    let all: Assignment = [("t0".to_owned(), [0, 1].into())].into();
    for member in twice.members.values_mut() {
        member.reconciled.assigned = all.clone();
    }
    let refused = twice.restored().unwrap_err();
    assert!(refused.contains("held by a and b"), "{refused}");
    let mut same_instance = group.clone();
    same_instance.members.get_mut("b").unwrap().instance_id = Some("i-a".into());
    assert!(
        same_instance
            .restored()
            .unwrap_err()
            .contains("instance i-a")
    );
    let mut stray = group;
    stray.targets.insert("ghost".into(), Assignment::new());
    assert!(stray.restored().unwrap_err().contains("ghost"));
}
