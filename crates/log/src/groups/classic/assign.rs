//! The assignors the engine runs for embedded consumers (in Kafka the group leader, a client,
//! runs them), and the byte encodings of subscriptions and assignments embedded members use.
//!
//! Encodings (embedded members only; Kafka members bring their own): a subscription is the
//! topic names separated by `\n`; an assignment is `topic:partition` lines. Kafka topic names
//! cannot contain `:` or `\n`.

use std::collections::BTreeMap;

/// How partitions are spread over members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Assignor {
    /// Kafka's `range`: per topic, consecutive partitions to each member in member-id order,
    /// the first `partitions % members` members getting one more.
    #[default]
    Range,
    /// Kafka's `roundrobin`: all partitions in (topic, partition) order dealt to members in
    /// turn, skipping members not subscribed to the topic.
    RoundRobin,
}

impl Assignor {
    /// The protocol name members advertise.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
        }
    }

    /// The assignor called `name`.
    pub fn from_name(name: &str) -> Option<Assignor> {
        match name {
            "range" => Some(Assignor::Range),
            "roundrobin" => Some(Assignor::RoundRobin),
            _ => None,
        }
    }

    /// Assigns the partitions of `partition_counts` to `members` (member id → subscribed
    /// topics). Every member appears in the result, possibly with nothing.
    pub fn assign(
        self,
        members: &BTreeMap<String, Vec<String>>,
        partition_counts: &BTreeMap<String, u32>,
    ) -> BTreeMap<String, Vec<(String, u32)>> {
        let mut out: BTreeMap<String, Vec<(String, u32)>> =
            members.keys().map(|m| (m.clone(), Vec::new())).collect();
        let subscribers = |topic: &str| -> Vec<&String> {
            members
                .iter()
                .filter(|(_, topics)| topics.iter().any(|t| t == topic))
                .map(|(m, _)| m)
                .collect()
        };
        match self {
            Assignor::Range => {
                for (topic, &count) in partition_counts {
                    let consumers = subscribers(topic);
                    if consumers.is_empty() {
                        continue;
                    }
                    let per = count / consumers.len() as u32;
                    let extra = count % consumers.len() as u32;
                    for (i, member) in consumers.into_iter().enumerate() {
                        let i = i as u32;
                        let start = i * per + i.min(extra);
                        let len = per + u32::from(i < extra);
                        let owned = out.get_mut(member).expect("every member has an entry");
                        owned.extend((start..start + len).map(|p| (topic.clone(), p)));
                    }
                }
            }
            Assignor::RoundRobin => {
                let order: Vec<&String> = members.keys().collect();
                let mut next = 0usize;
                for (topic, &count) in partition_counts {
                    let subscribed = subscribers(topic);
                    if subscribed.is_empty() {
                        continue;
                    }
                    for partition in 0..count {
                        while !subscribed.contains(&order[next % order.len()]) {
                            next += 1;
                        }
                        let member = order[next % order.len()];
                        out.get_mut(member)
                            .expect("every member has an entry")
                            .push((topic.clone(), partition));
                        next += 1;
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(spec: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        spec.iter()
            .map(|(m, ts)| (m.to_string(), ts.iter().map(|t| t.to_string()).collect()))
            .collect()
    }

    #[test]
    fn range_matches_kafkas_range_assignor() {
        // Kafka RangeAssignor: 3 consumers, topic with 7 partitions -> 3, 2, 2.
        let m = members(&[("c0", &["t"]), ("c1", &["t"]), ("c2", &["t"])]);
        let counts = BTreeMap::from([("t".to_owned(), 7)]);
        let got = Assignor::Range.assign(&m, &counts);
        let parts = |c: &str| got[c].iter().map(|(_, p)| *p).collect::<Vec<_>>();
        assert_eq!(parts("c0"), vec![0, 1, 2]);
        assert_eq!(parts("c1"), vec![3, 4]);
        assert_eq!(parts("c2"), vec![5, 6]);
    }

    #[test]
    fn round_robin_deals_in_turn_and_skips_unsubscribed_members() {
        let m = members(&[("a", &["t1", "t2"]), ("b", &["t1"])]);
        let counts = BTreeMap::from([("t1".to_owned(), 3), ("t2".to_owned(), 2)]);
        let got = Assignor::RoundRobin.assign(&m, &counts);
        assert_eq!(
            got["a"],
            vec![
                ("t1".into(), 0),
                ("t1".into(), 2),
                ("t2".into(), 0),
                ("t2".into(), 1)
            ]
        );
        assert_eq!(got["b"], vec![("t1".into(), 1)]);
    }

    #[test]
    fn every_partition_goes_to_exactly_one_member() {
        for assignor in [Assignor::Range, Assignor::RoundRobin] {
            for consumers in 1..5 {
                let m: BTreeMap<String, Vec<String>> = (0..consumers)
                    .map(|i| (format!("m{i}"), vec!["a".into(), "b".into()]))
                    .collect();
                let counts = BTreeMap::from([("a".to_owned(), 6), ("b".to_owned(), 5)]);
                let got = assignor.assign(&m, &counts);
                let mut all: Vec<_> = got.values().flatten().cloned().collect();
                all.sort();
                let expected: Vec<_> = (0..6)
                    .map(|p| ("a".to_owned(), p))
                    .chain((0..5).map(|p| ("b".to_owned(), p)))
                    .collect();
                assert_eq!(all, expected, "{assignor:?} with {consumers} consumers");
            }
        }
    }
}
