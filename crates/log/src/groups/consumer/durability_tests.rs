//! Consumer-protocol groups on disk, through the engine: every power cut during joins,
//! heartbeats, a leave and an expiry reopens to the group as some member was last answered
//! (or as the heartbeat under way left it), never to a state no one was told; a heartbeat
//! that changes nothing logs nothing, and one member's change logs that member, not the
//! group.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{SimFs, Storage};

use crate::groups::consumer::service::{ConsumerGroupDescription, SubscriptionChange};
use crate::groups::consumer::{Assignment, Heartbeat};
use crate::{Config, Housekeeping, Log, ManualClock, TopicConfig};

fn open_on(storage: Arc<dyn Storage>, dir: &Path, clock: Arc<ManualClock>) -> crate::Result<Log> {
    let config = Config {
        housekeeping: Housekeeping {
            enabled: false,
            ..Housekeeping::default()
        },
        ..Config::default()
    };
    let log = Log::open_with(storage, clock, dir, config)?;
    if log.partition_count("t").is_err() {
        let topic = TopicConfig {
            partitions: 6,
            ..TopicConfig::default()
        };
        log.create_topic("t", topic)?;
    }
    Ok(log)
}

/// One heartbeat of `member` at `epoch`, reporting it owns `owned`; its answer's epoch and
/// assignment.
fn beat(
    log: &Log,
    member: &str,
    epoch: i32,
    owned: &Assignment,
) -> crate::Result<(i32, Option<Assignment>)> {
    let joining = epoch == 0;
    let heartbeat = Heartbeat {
        member_id: member.to_owned(),
        member_epoch: epoch,
        instance_id: None,
        subscribed: None,
        assignor: None,
        owned: Some(owned.clone()),
    };
    let subscription = SubscriptionChange {
        names: joining.then(|| BTreeSet::from(["t".to_owned()])),
        regex: None,
    };
    let answer = log.consumer_heartbeat("g", heartbeat, subscription, ("c", "/h"), &|_| true)?;
    Ok((answer.member_epoch, answer.assignment))
}

/// The group as a member could learn it (who, at which epoch, owning and targeted what).
fn seen(log: &Log) -> Option<ConsumerGroupDescription> {
    log.describe_consumer_group("g")
}

/// Four members join and heartbeat until stable, one leaves, one goes silent and expires;
/// after each answered heartbeat, the group as it was then. Stops at the first failure (the
/// power is out), returning the states answered and the one the failed call may have left.
fn workload(fs: &SimFs) -> Vec<Option<ConsumerGroupDescription>> {
    let clock = Arc::new(ManualClock::new(0));
    let mut answered = Vec::new();
    let Ok(log) = open_on(Arc::new(fs.clone()), Path::new("/e"), clock.clone()) else {
        return answered;
    };
    let members = ["m0", "m1", "m2", "m3"];
    let mut state: Vec<(i32, Assignment)> = vec![(0, Assignment::new()); members.len()];
    let step = |log: &Log, i: usize, state: &mut Vec<(i32, Assignment)>| -> bool {
        let (epoch, owned) = state[i].clone();
        match beat(log, members[i], epoch, &owned) {
            Ok((epoch, assigned)) => {
                state[i].0 = epoch;
                if let Some(assigned) = assigned {
                    state[i].1 = assigned;
                }
                true
            }
            Err(_) => false,
        }
    };
    for round in 0..4 {
        for i in 0..members.len() {
            if round == 0 && i > 0 && !step(&log, i - 1, &mut state) {
                answered.push(seen(&log));
                return answered;
            }
            if !step(&log, i, &mut state) {
                answered.push(seen(&log));
                return answered;
            }
            answered.push(seen(&log));
        }
    }
    // m3 leaves; m2 goes silent and its session runs out.
    if beat(&log, "m3", -1, &Assignment::new()).is_err() {
        answered.push(seen(&log));
        return answered;
    }
    answered.push(seen(&log));
    clock.advance(46_000);
    for i in 0..2 {
        if !step(&log, i, &mut state) {
            answered.push(seen(&log));
            return answered;
        }
        answered.push(seen(&log));
    }
    answered
}

#[test]
fn a_power_cut_reopens_to_a_group_some_member_was_answered() {
    let states = SimFs::every_power_cut(workload, |image, answered, cut, mode| {
        let clock = Arc::new(ManualClock::new(0));
        let log = match open_on(Arc::new(image), Path::new("/e"), clock) {
            Ok(log) => log,
            Err(e) => panic!("cut {cut} {mode:?}: {e}"),
        };
        let restored = seen(&log);
        // The last answered state, or the one the call under way made (durable, but its
        // answer lost with the power); before anything was answered, nothing or that.
        let candidates: Vec<&Option<ConsumerGroupDescription>> =
            answered.iter().rev().take(2).collect();
        let matches = |d: &Option<ConsumerGroupDescription>| {
            let strip = |d: &Option<ConsumerGroupDescription>| {
                d.as_ref().map(|d| {
                    let members: Vec<_> = d
                        .members
                        .iter()
                        .map(|m| {
                            (
                                m.member_id.clone(),
                                m.member_epoch,
                                m.assigned.clone(),
                                m.target.clone(),
                            )
                        })
                        .collect();
                    (d.group_epoch, d.assignment_epoch, members)
                })
            };
            strip(d) == strip(&restored)
        };
        let fits =
            candidates.iter().any(|c| matches(c)) || (answered.len() <= 1 && restored.is_none());
        assert!(
            fits,
            "cut {cut} {mode:?}: reopened to {restored:#?}, last answered {:#?}",
            candidates.first()
        );
    });
    assert!(states > 200, "{states} crash states");
}

/// The bytes in the consumer-groups state log's directory.
fn logged_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("consumer-groups"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
fn one_members_change_logs_that_member_and_a_steady_heartbeat_logs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = open_on(Arc::new(logd_storage::RealFs), dir.path(), clock).unwrap();
    let members: Vec<String> = (0..200).map(|i| format!("member-{i:03}")).collect();
    let mut epochs = vec![0; members.len()];
    for (i, member) in members.iter().enumerate() {
        epochs[i] = beat(&log, member, 0, &Assignment::new()).unwrap().0;
    }
    // Everyone heartbeats until the group is stable (six partitions, so most own none).
    for _ in 0..3 {
        for (i, member) in members.iter().enumerate() {
            let owned = log
                .describe_consumer_group("g")
                .unwrap()
                .members
                .into_iter()
                .find(|m| &m.member_id == member)
                .unwrap()
                .assigned;
            epochs[i] = beat(&log, member, epochs[i], &owned).unwrap().0;
        }
    }
    assert_eq!(seen(&log).unwrap().state, "Stable");
    let group_bytes = {
        let before = logged_bytes(dir.path());
        let last = members.len() - 1;
        let owned = seen(&log).unwrap().members[last].assigned.clone();
        beat(&log, &members[last], epochs[last], &owned).unwrap();
        let steady = logged_bytes(dir.path()) - before;
        assert_eq!(
            steady, 0,
            "a heartbeat that changed nothing logged {steady} bytes"
        );
        before
    };
    // One more member joins a group of 200: what is logged is its own record, its target and
    // the epochs, not the 200 others.
    let before = logged_bytes(dir.path());
    beat(&log, "newcomer", 0, &Assignment::new()).unwrap();
    let join = logged_bytes(dir.path()) - before;
    assert!(
        join < 2_000,
        "a join to a group of 200 logged {join} bytes (the log holds {group_bytes})"
    );
}

#[test]
fn a_log_of_whole_group_records_from_before_still_opens() {
    use crate::groups::consumer::ConsumerGroup;
    use crate::groups::consumer::persist::{self, ConsumerGroupRecord, SavedGroup, SavedMember};
    use std::collections::BTreeMap;

    // A group as the earlier format logged it: one record with the whole group.
    let mut group = ConsumerGroup::default();
    let topics = BTreeMap::from([("t".to_owned(), 6)]);
    let join = Heartbeat {
        member_id: "m0".into(),
        member_epoch: 0,
        instance_id: None,
        subscribed: Some(BTreeSet::from(["t".to_owned()])),
        assignor: None,
        owned: Some(Assignment::new()),
    };
    let answer = group.heartbeat(join, &topics).unwrap();
    let member = SavedMember {
        client_id: "c".into(),
        client_host: "/h".into(),
        names: BTreeSet::from(["t".to_owned()]),
        regex: None,
    };
    let saved = SavedGroup {
        group,
        members: BTreeMap::from([("m0".to_owned(), member)]),
    };
    let dir = tempfile::tempdir().unwrap();
    {
        let (log, _) = persist::open(Arc::new(logd_storage::RealFs), dir.path()).unwrap();
        log.append(ConsumerGroupRecord::Saved("g".into(), saved))
            .unwrap();
    }
    let clock = Arc::new(ManualClock::new(0));
    let log = open_on(Arc::new(logd_storage::RealFs), dir.path(), clock).unwrap();
    let restored = seen(&log).unwrap();
    assert_eq!(restored.members.len(), 1);
    assert_eq!(restored.members[0].member_epoch, answer.member_epoch);
    assert_eq!(
        Some(&restored.members[0].assigned),
        answer.assignment.as_ref()
    );
    // And it goes on under the new records: the member heartbeats, a second joins, and a
    // restart keeps both.
    let owned = restored.members[0].assigned.clone();
    beat(&log, "m0", answer.member_epoch, &owned).unwrap();
    beat(&log, "m1", 0, &Assignment::new()).unwrap();
    let before = seen(&log);
    drop(log);
    let clock = Arc::new(ManualClock::new(0));
    let log = open_on(Arc::new(logd_storage::RealFs), dir.path(), clock).unwrap();
    let after = seen(&log);
    let ids = |d: &Option<ConsumerGroupDescription>| {
        d.as_ref()
            .unwrap()
            .members
            .iter()
            .map(|m| (m.member_id.clone(), m.member_epoch))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&after), ids(&before));
    assert_eq!(ids(&after).len(), 2);
}
