//! Consumer-protocol groups (KIP-848) survive a restart as classic groups do: members keep
//! heartbeating and committing with their epochs, a reconciliation caught half way goes on
//! where it was (a partition its owner has not revoked does not reach its next owner, so no
//! partition ever has two owners across the restart), a regular-expression subscription keeps
//! matching new topics, and a deleted group stays deleted.

use std::collections::{BTreeMap, BTreeSet};

use logd::groups::classic::GroupError;
use logd::groups::consumer::{Assignment, Heartbeat, HeartbeatAnswer};
use logd::{Error, Log, SubscriptionChange};

use super::{open, topic};

/// A heartbeat of `member` in group `c`; `names` and `regex` as subscription changes.
fn beat(
    log: &Log,
    member: &str,
    epoch: i32,
    owned: Option<Assignment>,
    subscription: SubscriptionChange,
) -> logd::Result<HeartbeatAnswer> {
    let beat = Heartbeat {
        member_id: member.into(),
        member_epoch: epoch,
        instance_id: None,
        subscribed: None,
        assignor: None,
        owned,
    };
    log.consumer_heartbeat("c", beat, subscription, ("app", "/127.0.0.1"), &|_| true)
}

fn names(topics: &[&str]) -> SubscriptionChange {
    SubscriptionChange {
        names: Some(topics.iter().map(|t| t.to_string()).collect()),
        regex: None,
    }
}

fn unchanged() -> SubscriptionChange {
    SubscriptionChange::default()
}

fn count(assignment: &Assignment) -> usize {
    assignment.values().map(BTreeSet::len).sum()
}

/// Every partition of the group held by two members (assigned to one while another still
/// has it assigned): none may be.
fn doubly_held(log: &Log) -> Vec<(String, u32)> {
    let described = log.describe_consumer_group("c").unwrap();
    let mut seen = BTreeMap::new();
    let mut doubles = Vec::new();
    for member in &described.members {
        for (topic, partitions) in &member.assigned {
            for &p in partitions {
                if seen
                    .insert((topic.clone(), p), member.member_id.clone())
                    .is_some()
                {
                    doubles.push((topic.clone(), p));
                }
            }
        }
    }
    doubles
}

#[test]
fn members_keep_their_epochs_and_a_half_done_reconciliation_goes_on_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (a_epoch, a_owned, b_epoch) = {
        let log = open(dir.path());
        topic(&log, "orders", 4);
        let joined = beat(&log, "a", 0, Some(Assignment::new()), names(&["orders"])).unwrap();
        let all = joined.assignment.clone().unwrap();
        assert_eq!(count(&all), 4, "alone, a gets every partition");
        let a = beat(
            &log,
            "a",
            joined.member_epoch,
            Some(all.clone()),
            unchanged(),
        )
        .unwrap();
        // b joins by pattern; a is to give up two partitions and has not yet.
        let regex = SubscriptionChange {
            names: Some(BTreeSet::new()),
            regex: Some("ord.*".into()),
        };
        let b = beat(&log, "b", 0, Some(Assignment::new()), regex).unwrap();
        assert_eq!(
            b.assignment.as_ref().map(count),
            Some(0),
            "a still holds them"
        );
        let a = beat(&log, "a", a.member_epoch, Some(all.clone()), unchanged()).unwrap();
        let kept = a.assignment.clone().unwrap();
        assert_eq!(count(&kept), 2, "a is told to keep two");
        assert!(doubly_held(&log).is_empty());
        (a.member_epoch, all, b.member_epoch)
    };

    let log = open(dir.path());
    let described = log
        .describe_consumer_group("c")
        .expect("the group came back");
    let ids: Vec<&str> = described
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    let b_described = &described.members[1];
    assert_eq!(b_described.regex.as_deref(), Some("ord.*"));
    assert_eq!(b_described.member_epoch, b_epoch);
    // b heartbeats first: a has not reported the two revoked, so b still gets nothing.
    let b = beat(&log, "b", b_epoch, Some(Assignment::new()), unchanged()).unwrap();
    assert_eq!(b.member_epoch, b_epoch, "b keeps its epoch: no rejoin");
    assert!(b.assignment.is_none_or(|a| count(&a) == 0));
    assert!(doubly_held(&log).is_empty());
    // a, still owning all four, heartbeats with the epoch it had before the restart.
    let a = beat(&log, "a", a_epoch, Some(a_owned), unchanged()).unwrap();
    assert_eq!(
        a.member_epoch, a_epoch,
        "a keeps its epoch until it revokes"
    );
    let kept = log.describe_consumer_group("c").unwrap().members[0]
        .assigned
        .clone();
    let a = beat(&log, "a", a_epoch, Some(kept.clone()), unchanged()).unwrap();
    assert!(
        a.member_epoch > a_epoch,
        "revoked: a reaches the target epoch"
    );
    let b = beat(&log, "b", b_epoch, Some(Assignment::new()), unchanged()).unwrap();
    let b_assigned = b.assignment.expect("b now gets the released two");
    assert_eq!(count(&b_assigned), 2);
    assert!(doubly_held(&log).is_empty());
    for (topic, partitions) in &b_assigned {
        assert!(partitions.is_disjoint(&kept[topic]));
    }

    // Commits follow the epochs across the restart.
    let now = log.clock().now_ms();
    log.validate_group_commit("c", "a", a.member_epoch, now)
        .unwrap();
    assert!(matches!(
        log.validate_group_commit("c", "a", a_epoch - 1, now),
        Err(Error::Group(GroupError::StaleMemberEpoch))
    ));

    // b's pattern is still evaluated: a topic created after the restart is picked up.
    topic(&log, "orders-audit", 1);
    let b = beat(&log, "b", b.member_epoch, Some(b_assigned), unchanged()).unwrap();
    let subscribed = &log.describe_consumer_group("c").unwrap().members[1].subscribed;
    assert!(subscribed.contains("orders-audit"), "{subscribed:?}");
    assert!(b.member_epoch > 0);

    // Both leave, the group is deleted, and a restart does not bring it back.
    beat(&log, "a", -1, None, unchanged()).unwrap();
    beat(&log, "b", -1, None, unchanged()).unwrap();
    assert!(log.delete_group("c").unwrap());
    drop(log);
    let log = open(dir.path());
    assert_eq!(log.describe_consumer_group("c"), None);
    assert!(!log.consumer_group_ids().contains(&"c".to_owned()));
}

#[test]
fn a_heartbeat_that_joins_nothing_leaves_no_group_behind() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = open(dir.path());
        let unknown = beat(&log, "ghost", 3, None, unchanged());
        assert!(matches!(
            unknown,
            Err(Error::Group(GroupError::UnknownMember))
        ));
        assert_eq!(log.describe_consumer_group("c"), None);
    }
    let log = open(dir.path());
    assert_eq!(log.describe_consumer_group("c"), None);
}
