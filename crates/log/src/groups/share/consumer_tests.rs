//! Share groups through the engine: embedded share consumers sharing one partition, release,
//! reject, lock expiry, the group's configs, a restart, and power cuts of the share log.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use logd_storage::{SimFs, Storage};

use super::store::Window;
use super::*;
use crate::{Config, Log, ManualClock, Producer, ProducerConfig, ProducerRecord, TopicConfig};

fn setup(dir: &Path, clock: Arc<ManualClock>, records: usize) -> Log {
    let log = Log::open_with(
        Arc::new(logd_storage::RealFs),
        clock,
        dir,
        Config::default(),
    )
    .unwrap();
    if log.partition_count("jobs").is_err() {
        log.create_topic(
            "jobs",
            TopicConfig {
                partitions: 1,
                ..TopicConfig::default()
            },
        )
        .unwrap();
    }
    let producer = Producer::new(&log, ProducerConfig::default());
    for i in 0..records {
        producer
            .send(ProducerRecord::new("jobs", format!("job-{i}").as_str()))
            .unwrap()
            .wait()
            .unwrap();
    }
    log
}

pub(super) fn member(log: &Log, mode: AcknowledgementMode) -> ShareConsumer {
    let mut consumer = ShareConsumer::new(
        log,
        ShareConsumerConfig {
            group_id: "workers".into(),
            max_poll_records: 7,
            acknowledgement_mode: mode,
            ..ShareConsumerConfig::default()
        },
    );
    consumer.subscribe(vec!["jobs".into()]).unwrap();
    consumer
}

fn earliest(log: &Log) {
    log.alter_group_configs(
        "workers",
        &[("share.auto.offset.reset", Some("earliest"))],
        false,
    )
    .unwrap();
}

#[test]
fn members_share_one_partition_and_each_record_is_accepted_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = setup(dir.path(), Arc::new(ManualClock::new(0)), 100);
    earliest(&log);
    let mut members = [
        member(&log, AcknowledgementMode::Implicit),
        member(&log, AcknowledgementMode::Implicit),
        member(&log, AcknowledgementMode::Implicit),
    ];
    let mut seen = BTreeMap::new();
    let mut idle = 0;
    while idle < 2 {
        idle += 1;
        for (i, m) in members.iter_mut().enumerate() {
            for r in m.poll(Duration::ZERO).unwrap() {
                assert_eq!(r.delivery_count, 1);
                assert!(
                    seen.insert(r.record.offset, i).is_none(),
                    "{} twice",
                    r.record.offset
                );
                idle = 0;
            }
        }
    }
    assert_eq!(seen.len(), 100);
    // Each member had some: they read the one partition side by side.
    let by: BTreeSet<usize> = seen.values().copied().collect();
    assert_eq!(by.len(), 3);
    for m in members {
        m.close().unwrap();
    }
    let state = &log.share_partitions("workers")[0];
    assert_eq!((state.start_offset, state.end_offset), (100, 100));
}

#[test]
fn released_records_come_back_counted_and_rejected_ones_never() {
    let dir = tempfile::tempdir().unwrap();
    let log = setup(dir.path(), Arc::new(ManualClock::new(0)), 3);
    earliest(&log);
    let mut a = member(&log, AcknowledgementMode::Explicit);
    let mut b = member(&log, AcknowledgementMode::Explicit);
    let got = a.poll(Duration::ZERO).unwrap();
    assert_eq!(got.len(), 3);
    a.acknowledge(&got[0], AcknowledgeType::Release).unwrap();
    a.acknowledge(&got[1], AcknowledgeType::Reject).unwrap();
    a.acknowledge(&got[2], AcknowledgeType::Accept).unwrap();
    a.commit().unwrap();
    let again = b.poll(Duration::ZERO).unwrap();
    assert_eq!(
        again
            .iter()
            .map(|r| (r.record.offset, r.delivery_count))
            .collect::<Vec<_>>(),
        vec![(0, 2)]
    );
    // Unacknowledged in explicit mode: the next poll gives it back, and it comes again.
    let third = b.poll(Duration::ZERO).unwrap();
    assert_eq!(third[0].delivery_count, 3);
    b.acknowledge(&third[0], AcknowledgeType::Accept).unwrap();
    b.close().unwrap();
    assert!(a.poll(Duration::ZERO).unwrap().is_empty());
    let state = &log.share_partitions("workers")[0];
    assert_eq!((state.start_offset, state.counts), (3, [0, 0, 0, 0]));
}

#[test]
fn an_expired_lock_hands_the_records_to_another_member() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = setup(dir.path(), clock.clone(), 5);
    earliest(&log);
    log.alter_group_configs(
        "workers",
        &[("share.record.lock.duration.ms", Some("15000"))],
        false,
    )
    .unwrap();
    let mut stuck = member(&log, AcknowledgementMode::Explicit);
    let mut other = member(&log, AcknowledgementMode::Explicit);
    let held = stuck.poll(Duration::ZERO).unwrap();
    assert_eq!(held.len(), 5);
    clock.advance(14_999);
    assert!(other.poll(Duration::ZERO).unwrap().is_empty());
    clock.advance(1);
    let got = other.poll(Duration::ZERO).unwrap();
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|r| r.delivery_count == 2));
    // The stuck member's late acknowledgement is refused, and changes nothing.
    for r in &held {
        stuck.acknowledge(r, AcknowledgeType::Accept).unwrap();
    }
    assert!(matches!(
        stuck.commit(),
        Err(crate::Error::InvalidRecordState(_))
    ));
    assert_eq!(log.share_partitions("workers")[0].counts, [0, 5, 0, 0]);
}

#[test]
fn a_renewal_keeps_records_past_their_lock_and_they_are_accepted_later() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = setup(dir.path(), clock.clone(), 3);
    earliest(&log);
    log.alter_group_configs(
        "workers",
        &[("share.record.lock.duration.ms", Some("15000"))],
        false,
    )
    .unwrap();
    let mut slow = member(&log, AcknowledgementMode::Explicit);
    let mut other = member(&log, AcknowledgementMode::Explicit);
    let held = slow.poll(Duration::ZERO).unwrap();
    assert_eq!(held.len(), 3);
    clock.advance(14_000);
    // Renewed at once: two of three run 15 s from here, the third's lock runs out at 15 s.
    for r in &held[..2] {
        slow.acknowledge(r, AcknowledgeType::Renew).unwrap();
    }
    clock.advance(14_000);
    let got = other.poll(Duration::ZERO).unwrap();
    assert_eq!(
        got.iter()
            .map(|r| (r.record.offset, r.delivery_count))
            .collect::<Vec<_>>(),
        [(2, 2)]
    );
    for r in &held[..2] {
        slow.acknowledge(r, AcknowledgeType::Accept).unwrap();
    }
    slow.commit().unwrap();
    other.acknowledge(&got[0], AcknowledgeType::Accept).unwrap();
    other.commit().unwrap();
    let state = &log.share_partitions("workers")[0];
    assert_eq!((state.start_offset, state.counts), (3, [0, 0, 0, 0]));
}

#[test]
fn the_delivery_limit_and_logds_backoff_come_from_the_groups_configs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = setup(dir.path(), clock.clone(), 1);
    earliest(&log);
    log.alter_group_configs(
        "workers",
        &[
            ("share.delivery.count.limit", Some("2")),
            ("logd.share.redelivery.backoff.ms", Some("1000")),
        ],
        false,
    )
    .unwrap();
    let mut m = member(&log, AcknowledgementMode::Explicit);
    let got = m.poll(Duration::ZERO).unwrap();
    m.acknowledge(&got[0], AcknowledgeType::Release).unwrap();
    m.commit().unwrap();
    // Waits 1,000 to 1,250 ms before its second delivery.
    assert!(m.poll(Duration::ZERO).unwrap().is_empty());
    clock.advance(1_250);
    let got = m.poll(Duration::ZERO).unwrap();
    assert_eq!(got[0].delivery_count, 2);
    m.acknowledge(&got[0], AcknowledgeType::Release).unwrap();
    m.commit().unwrap();
    clock.advance(10_000);
    assert!(m.poll(Duration::ZERO).unwrap().is_empty());
    let state = &log.share_partitions("workers")[0];
    assert_eq!(state.start_offset, 1, "archived at the limit");
}

#[test]
fn after_a_restart_acknowledged_records_stay_done_and_held_ones_come_back_counted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = setup(dir.path(), clock.clone(), 6);
    earliest(&log);
    let mut m = member(&log, AcknowledgementMode::Explicit);
    let got = m.poll(Duration::ZERO).unwrap();
    assert_eq!(got.len(), 6);
    for r in &got[..3] {
        m.acknowledge(r, AcknowledgeType::Accept).unwrap();
    }
    m.commit().unwrap();
    // The process dies holding offsets 3 to 5.
    drop(m);
    drop(log);
    let log = setup(dir.path(), clock, 0);
    let mut next = member(&log, AcknowledgementMode::Implicit);
    let got = next.poll(Duration::ZERO).unwrap();
    assert_eq!(
        got.iter()
            .map(|r| (r.record.offset, r.delivery_count))
            .collect::<Vec<_>>(),
        vec![(3, 2), (4, 2), (5, 2)]
    );
}

#[test]
fn a_share_group_is_deleted_durably_once_it_has_no_members() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = setup(dir.path(), clock.clone(), 3);
    earliest(&log);
    let mut m = member(&log, AcknowledgementMode::Implicit);
    assert_eq!(m.poll(Duration::ZERO).unwrap().len(), 3);
    m.close().unwrap();
    log.share_heartbeat("workers", "w", 0, Some(vec!["jobs".into()]), ("c", "/h"))
        .unwrap();
    assert!(matches!(
        log.delete_group("workers"),
        Err(crate::Error::Group(
            crate::groups::classic::GroupError::NonEmptyGroup
        ))
    ));
    assert_eq!(log.share_partitions("workers").len(), 1);
    log.share_heartbeat("workers", "w", -1, None, ("c", "/h"))
        .unwrap();
    assert!(log.delete_group("workers").unwrap());
    assert!(!log.delete_group("workers").unwrap());
    assert!(log.share_group_ids().is_empty());
    drop(log);
    let log = setup(dir.path(), clock, 0);
    assert!(log.share_group_ids().is_empty());
    // The group's configs stay, as on Kafka: it starts again from the earliest record.
    let mut again = member(&log, AcknowledgementMode::Implicit);
    assert_eq!(again.poll(Duration::ZERO).unwrap().len(), 3);
}

/// A window of the whole log from `from` to `end`, nothing skipped.
pub(super) fn window(from: i64, end: i64) -> Window<()> {
    Window {
        from,
        end,
        skipped: Vec::new(),
        batch_ends: Vec::new(),
        read: (),
    }
}

/// What the power-cut workload was answered: offsets acquired (with their counts), offsets
/// whose acceptance was answered, and the one whose acceptance was sent when the power went.
type Answered = (BTreeMap<i64, u16>, BTreeSet<i64>, Option<i64>);

/// Acquires and acknowledges on a simulated disk until done or the power is cut.
fn workload(fs: &SimFs) -> Answered {
    let mut acquired = BTreeMap::new();
    let mut accepted = BTreeSet::new();
    let limits = ShareLimits::default();
    let key = ("g".to_owned(), "t".to_owned(), 0);
    if logd_storage::create_dir_durable(fs, Path::new("/d")).is_err() {
        return (acquired, accepted, None);
    }
    let Ok(states) = ShareStates::open(Arc::new(fs.clone()), Path::new("/d")) else {
        return (acquired, accepted, None);
    };
    if states.archive_at_limit(|_| limits, |_| None).is_err() {
        return (acquired, accepted, None);
    }
    for step in 0..6i64 {
        let Ok((ranges, _, ())) = states.acquire(
            key.clone(),
            "m",
            3,
            &limits,
            &|| None,
            step,
            0,
            || Ok(0),
            |_| i64::MIN,
            |_| Ok(window(i64::MIN, 8 + 4 * step)),
        ) else {
            return (acquired, accepted, None);
        };
        for r in &ranges {
            for offset in r.first_offset..=r.last_offset {
                acquired.insert(offset, r.delivery_count);
            }
        }
        // Accept the first of them, release the others.
        let Some(first) = ranges.first().map(|r| r.first_offset) else {
            continue;
        };
        let batches: Vec<_> = ranges
            .iter()
            .flat_map(|r| r.first_offset..=r.last_offset)
            .map(|o| {
                let kind = if o == first {
                    AcknowledgeType::Accept
                } else {
                    AcknowledgeType::Release
                };
                (o, o, vec![kind])
            })
            .collect();
        if states
            .acknowledge(
                &key,
                "m",
                &batches,
                &limits,
                &|| None,
                &BTreeMap::new(),
                step,
            )
            .is_err()
        {
            return (acquired, accepted, Some(first));
        }
        accepted.insert(first);
    }
    (acquired, accepted, None)
}

#[test]
fn a_power_cut_never_redelivers_an_answered_acceptance_nor_undercounts_a_delivery() {
    let limits = ShareLimits::default();
    let key = ("g".to_owned(), "t".to_owned(), 0);
    let states = SimFs::every_power_cut(
        workload,
        |image, (acquired, accepted, unanswered), cut, mode| {
            let _ = image.create_dir_all(Path::new("/d"));
            let recovered = ShareStates::open(Arc::new(image), Path::new("/d"))
                .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: reopen failed: {e}"));
            recovered
                .archive_at_limit(|_| limits, |_| None)
                .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: archiving failed: {e}"));
            let Ok((ranges, _, ())) = recovered.acquire(
                key.clone(),
                "n",
                100,
                &limits,
                &|| None,
                99,
                0,
                || Ok(0),
                |_| i64::MIN,
                |_| Ok(window(i64::MIN, 100)),
            ) else {
                panic!("cut {cut} {mode:?}: acquire after recovery failed");
            };
            let again: BTreeMap<i64, u16> = ranges
                .iter()
                .flat_map(|r| (r.first_offset..=r.last_offset).map(move |o| (o, r.delivery_count)))
                .collect();
            for offset in accepted {
                assert!(
                    !again.contains_key(offset),
                    "cut {cut} {mode:?}: accepted {offset} delivered again"
                );
            }
            for (offset, count) in acquired {
                if !accepted.contains(offset) && *unanswered != Some(*offset) {
                    let now = again.get(offset).copied();
                    assert!(
                        now.is_some_and(|n| n > *count),
                        "cut {cut} {mode:?}: offset {offset} was delivered {count} times, now {now:?}"
                    );
                }
            }
        },
    );
    assert!(states > 100, "{states} crash states");
}

#[test]
fn altered_and_deleted_start_offsets_survive_a_restart_and_need_an_empty_group() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let log = setup(dir.path(), clock.clone(), 6);
    earliest(&log);
    let mut m = member(&log, AcknowledgementMode::Implicit);
    assert_eq!(m.poll(Duration::ZERO).unwrap().len(), 6);
    // The embedded consumer is a member of the group, as a wire client is.
    let (_, members) = log.share_group_members("workers").unwrap();
    assert_eq!(
        members
            .iter()
            .map(|m| (m.member_id.as_str(), m.client_id.as_str()))
            .collect::<Vec<_>>(),
        [(m.member_id(), "logd-embedded")]
    );
    let refused = log.alter_share_offsets("workers", &[("jobs".into(), 0, 2)]);
    assert!(
        matches!(
            refused,
            Err(crate::Error::Group(
                crate::groups::classic::GroupError::NonEmptyGroup
            ))
        ),
        "{refused:?}"
    );
    m.close().unwrap();
    assert!(log.share_group_members("workers").unwrap().1.is_empty());
    log.alter_share_offsets("workers", &[("jobs".into(), 0, 2)])
        .unwrap();
    drop(log);
    let log = setup(dir.path(), clock.clone(), 0);
    let state = &log.share_partitions("workers")[0];
    assert_eq!((state.start_offset, state.counts), (2, [0, 0, 0, 0]));
    let mut again = member(&log, AcknowledgementMode::Implicit);
    let got: Vec<i64> = again
        .poll(Duration::ZERO)
        .unwrap()
        .iter()
        .map(|r| r.record.offset)
        .collect();
    assert_eq!(got, [2, 3, 4, 5]);
    again.close().unwrap();
    assert_eq!(
        log.delete_share_offsets("workers", &["jobs".into()])
            .unwrap(),
        [true]
    );
    assert_eq!(
        log.delete_share_offsets("workers", &["jobs".into()])
            .unwrap(),
        [false]
    );
    drop(log);
    let log = setup(dir.path(), clock, 0);
    assert!(log.share_partitions("workers").is_empty());
}
