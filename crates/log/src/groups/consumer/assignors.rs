//! The server-side assignors of the consumer group protocol (KIP-848), which a member may name
//! in its heartbeat: `uniform` (Kafka's default) spreads every subscribed partition over the
//! members subscribed to its topic, as evenly as it can, keeping each partition with its
//! current owner where that keeps the balance (so a join or a leave moves few partitions);
//! `range` gives each member, topic by topic, a run of consecutive partitions (members in id
//! order, the first `partitions % members` one more), so members subscribed to the same
//! co-partitioned topics get the same partition numbers of each.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::Assignment;

/// A server-side assignor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ServerAssignor {
    /// Kafka's `uniform`: balanced and sticky.
    #[default]
    Uniform,
    /// Kafka's `range`: consecutive partitions per topic.
    Range,
}

impl ServerAssignor {
    /// The assignor a client names (`uniform`, `range`), `None` for any other name.
    pub fn named(name: &str) -> Option<ServerAssignor> {
        match name {
            "uniform" => Some(ServerAssignor::Uniform),
            "range" => Some(ServerAssignor::Range),
            _ => None,
        }
    }

    /// Its name as clients give it.
    pub fn name(self) -> &'static str {
        match self {
            ServerAssignor::Uniform => "uniform",
            ServerAssignor::Range => "range",
        }
    }

    /// Each member's target: `subscriptions` by member id, `partitions` the count of each
    /// topic that exists (a subscribed topic that does not is skipped), `current` the targets
    /// before (for stickiness). Every partition of a subscribed topic goes to exactly one
    /// member subscribed to it.
    pub fn assign(
        self,
        subscriptions: &BTreeMap<String, BTreeSet<String>>,
        partitions: &BTreeMap<String, u32>,
        current: &BTreeMap<String, Assignment>,
    ) -> BTreeMap<String, Assignment> {
        let mut targets: BTreeMap<String, Assignment> = subscriptions
            .keys()
            .map(|m| (m.clone(), Assignment::new()))
            .collect();
        match self {
            ServerAssignor::Range => range(subscriptions, partitions, &mut targets),
            ServerAssignor::Uniform => uniform(subscriptions, partitions, current, &mut targets),
        }
        targets
    }
}

/// Members subscribed to each existing topic, in id order.
fn subscribers<'a>(
    subscriptions: &'a BTreeMap<String, BTreeSet<String>>,
    partitions: &BTreeMap<String, u32>,
) -> BTreeMap<String, Vec<&'a str>> {
    let mut by_topic: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (member, topics) in subscriptions {
        for topic in topics.iter().filter(|t| partitions.contains_key(*t)) {
            by_topic.entry(topic.clone()).or_default().push(member);
        }
    }
    by_topic
}

fn give(targets: &mut BTreeMap<String, Assignment>, member: &str, topic: &str, partition: u32) {
    if let Some(target) = targets.get_mut(member) {
        target
            .entry(topic.to_owned())
            .or_default()
            .insert(partition);
    }
}

fn range(
    subscriptions: &BTreeMap<String, BTreeSet<String>>,
    partitions: &BTreeMap<String, u32>,
    targets: &mut BTreeMap<String, Assignment>,
) {
    for (topic, members) in subscribers(subscriptions, partitions) {
        let count = partitions[&topic];
        let (each, extra) = (count / members.len() as u32, count % members.len() as u32);
        let mut next = 0;
        for (i, member) in members.iter().enumerate() {
            let take = each + u32::from((i as u32) < extra);
            for partition in next..next + take {
                give(targets, member, &topic, partition);
            }
            next += take;
        }
    }
}

fn uniform(
    subscriptions: &BTreeMap<String, BTreeSet<String>>,
    partitions: &BTreeMap<String, u32>,
    current: &BTreeMap<String, Assignment>,
    targets: &mut BTreeMap<String, Assignment>,
) {
    let by_topic = subscribers(subscriptions, partitions);
    let assignable: u32 = by_topic.keys().map(|t| partitions[t]).sum();
    let members = subscriptions.len().max(1) as u32;
    let (floor, mut extra) = (assignable / members, assignable % members);
    let mut load: BTreeMap<&str, u32> = subscriptions.keys().map(|m| (m.as_str(), 0)).collect();
    let mut placed: BTreeSet<(String, u32)> = BTreeSet::new();
    // Sticky first: a member keeps what it had (still subscribed, still existing) up to the
    // floor, then up to one more while the partitions left over by an even split last.
    for pass in 0..2 {
        for (member, had) in current {
            let Some(topics) = subscriptions.get(member) else {
                continue;
            };
            for (topic, kept) in had.iter().filter(|(t, _)| topics.contains(*t)) {
                let Some(&count) = partitions.get(topic) else {
                    continue;
                };
                for &partition in kept.iter().filter(|&&p| p < count) {
                    let key = (topic.clone(), partition);
                    let n = load[member.as_str()];
                    let room = match pass {
                        0 => n < floor,
                        _ => n == floor && extra > 0,
                    };
                    if !room || placed.contains(&key) {
                        continue;
                    }
                    if pass == 1 {
                        extra -= 1;
                    }
                    *load.get_mut(member.as_str()).expect("a subscribed member") += 1;
                    give(targets, member, topic, partition);
                    placed.insert(key);
                }
            }
        }
    }
    // The rest, each to the least loaded member subscribed to its topic (ties: lowest id).
    for (topic, members) in &by_topic {
        for partition in 0..partitions[topic] {
            if placed.contains(&(topic.clone(), partition)) {
                continue;
            }
            let member = members
                .iter()
                .min_by_key(|m| (load[**m], **m))
                .expect("a topic listed has a subscriber");
            *load.get_mut(member).expect("a subscribed member") += 1;
            give(targets, member, topic, partition);
        }
    }
}
