//! `DeadLetters` over the embedded engine: tasks that always fail, permanently or after their
//! attempts, are listed with their origin, shown one by one, replayed selectively (a dry run
//! first, which changes nothing) to their original topic with a replay count, each replay
//! recorded with who asked; letters a replay skipped stay pending, one can be replayed by its
//! place, and nothing is replayed twice by accident.

use std::time::Duration;

use logd::Clock;

use logd_retry::message::*;
use logd_retry::{
    DeadLetters, Embedded, Failure, Headers, LetterFilter, Message, Outcome, ReplayOptions,
    RetryConfig, RetryPolicy, RetryWorker,
};

use super::{engine, produce_task, read_all};

#[test]
fn dead_letters_are_listed_shown_and_replayed_selectively() {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = engine(&dir.path().join("log"), 2, 1_800_000_000_000);
    for task in 0..6 {
        produce_task(&log, task, 2);
    }
    let config = RetryConfig {
        policy: RetryPolicy {
            max_attempts: 2,
            ..RetryPolicy::default()
        },
        tiers: vec![Duration::from_secs(1)],
        ..RetryConfig::new("workers", "tasks")
    };
    let mut worker = RetryWorker::new(Embedded::new(log.clone()), config, None).unwrap();
    // Even tasks fail permanently, task 1 runs out of attempts, the rest succeed.
    let mut handler = |m: &Message, _attempt: u32| match m.header_str("task-id") {
        Some("0" | "2" | "4") => Outcome::Permanent(Failure::new("BadInput", "malformed")),
        Some("1") => Outcome::Transient(Failure::new("Timeout", "slow")),
        _ => Outcome::Success,
    };
    loop {
        let poll = worker.poll_once(&mut handler).unwrap();
        match (poll.handled, poll.next_due) {
            (0, Some(due)) => clock.advance(due - clock.now_ms()),
            (0, None) => break,
            _ => {}
        }
    }

    let mut transport = Embedded::new(log.clone());
    let mut letters = DeadLetters::new(&mut transport, "tasks.dlq");
    let pending = letters.list(true).unwrap();
    let mut tasks: Vec<&str> = pending
        .iter()
        .filter_map(|m| m.header_str("task-id"))
        .collect();
    tasks.sort_unstable();
    assert_eq!(tasks, ["0", "1", "2", "4"]);
    let first = &pending[0];
    let shown = letters
        .show(first.partition, first.offset)
        .unwrap()
        .unwrap();
    assert_eq!(shown.header_str(DLQ_ORIGINAL_TOPIC), Some("tasks"));
    assert!(letters.show(first.partition, 999).unwrap().is_none());

    let permanent = ReplayOptions {
        filter: LetterFilter {
            reason: Some("permanent".into()),
            ..LetterFilter::default()
        },
        by: Some("User:ops".into()),
        ..ReplayOptions::default()
    };
    let plan = letters
        .replay(&ReplayOptions {
            dry_run: true,
            ..permanent.clone()
        })
        .unwrap();
    assert_eq!((plan.scanned, plan.replays.len()), (4, 3));
    let source_before = read_all(&log, "tasks").len();
    assert_eq!(
        letters.list(true).unwrap().len(),
        4,
        "a dry run moves nothing"
    );

    let done = letters.replay(&permanent).unwrap();
    assert_eq!(
        done.replays, plan.replays,
        "the dry run planned exactly this"
    );
    assert!(
        done.replays
            .iter()
            .all(|r| r.target == "tasks" && r.count == 1)
    );
    let source = read_all(&log, "tasks");
    assert_eq!(source.len(), source_before + 3);
    let replayed: Vec<&str> = source
        .iter()
        .filter(|m| m.header_str(DLQ_REPLAY_COUNT) == Some("1"))
        .filter_map(|m| m.header_str("task-id"))
        .collect();
    assert_eq!(
        replayed.len(),
        3,
        "the permanent failures, once each: {replayed:?}"
    );
    let recorded = letters.replays().unwrap();
    assert_eq!(recorded.len(), 3);
    for (record, replay) in recorded.iter().zip(&done.replays) {
        assert_eq!(
            (
                record.partition,
                record.offset,
                &record.target,
                record.count
            ),
            (replay.partition, replay.offset, &replay.target, 1)
        );
        assert_eq!(record.by.as_deref(), Some("User:ops"));
        let copy = source
            .iter()
            .find(|m| m.partition == record.target_partition && m.offset == record.target_offset)
            .expect("the record names the copy's place");
        assert_eq!(copy.header_str(DLQ_REPLAY_COUNT), Some("1"));
    }

    // The letter the filter skipped is still pending; replaying again finds nothing else.
    let pending = letters.list(true).unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].header_str("task-id"), Some("1"));
    assert_eq!(letters.replay(&permanent).unwrap().replays, [], "not twice");

    // One letter by its place.
    let one = ReplayOptions {
        filter: LetterFilter {
            letters: Some([(pending[0].partition, pending[0].offset)].into()),
            ..LetterFilter::default()
        },
        ..ReplayOptions::default()
    };
    let done = letters.replay(&one).unwrap();
    assert_eq!(done.replays.len(), 1);
    assert!(letters.list(true).unwrap().is_empty());
    assert_eq!(letters.replays().unwrap().len(), 4);
    assert_eq!(letters.replays().unwrap()[3].by, None);
    assert_eq!(
        letters.list(false).unwrap().len(),
        4,
        "the letters stay in the topic"
    );
    // Every letter is handled now, so the position is past all of them.
    for partition in 0..2 {
        let end = log
            .partition("tasks.dlq", partition)
            .unwrap()
            .high_watermark()
            .0;
        let committed = logd_retry::Transport::committed(
            &mut Embedded::new(log.clone()),
            logd_retry::REPLAY_GROUP,
            "tasks.dlq",
            partition,
        )
        .unwrap();
        assert_eq!(committed.unwrap_or(0), end, "partition {partition}");
    }
    // Asked for explicitly, a rescan from the start replays again, with the next count.
    let again = letters
        .replay(&ReplayOptions {
            from_beginning: true,
            ..permanent
        })
        .unwrap();
    assert_eq!(again.replays.len(), 3);
    assert!(
        again.replays.iter().all(|r| r.count == 1),
        "counts come from the letter"
    );
}
