//! The seed scenario: tasks 1 to 6, then task 2 again (a duplicate delivery). Task 3 always
//! fails (poison after 3 attempts, or at once when its failure is permanent); task 5 fails once
//! transiently, then succeeds. Tasks 1, 2, 4, 5, 6 are processed exactly once, the duplicate is
//! skipped by the dedupe store, the dead-letter topic holds exactly task 3 with its error and
//! origin, and every backoff observed is within the policy's bounds.

use std::collections::BTreeMap;
use std::time::Duration;

use logd::Clock;
use logd_retry::message::*;
use logd_retry::{
    DedupeConfig, DedupeStore, Embedded, Failure, Jitter, Outcome, RetryConfig, RetryPolicy,
    RetryWorker,
};

use super::{engine, produce_task, read_all};
use logd_retry::Headers;

const START: i64 = 1_800_000_000_000;

fn scenario(task_3_permanent: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = engine(&dir.path().join("log"), 2, START);
    for id in [1, 2, 3, 4, 5, 6, 2] {
        produce_task(&log, id, 2);
    }
    let policy = RetryPolicy {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(60),
        max_attempts: 3,
        jitter: Jitter::Equal,
    };
    let config = RetryConfig {
        policy,
        seed: 7,
        id_header: Some("task-id".into()),
        tiers: [1, 10, 60].map(Duration::from_secs).to_vec(),
        ..RetryConfig::new("workers", "tasks")
    };
    let dedupe =
        DedupeStore::open(dir.path().join("dedupe"), DedupeConfig::default(), START).unwrap();
    let mut worker =
        RetryWorker::new(Embedded::new(log.clone()), config.clone(), Some(dedupe)).unwrap();

    let mut processed: Vec<u32> = Vec::new();
    // task -> (attempt, time) of every call
    let mut calls: BTreeMap<u32, Vec<(u32, i64)>> = BTreeMap::new();
    let mut handler = |m: &Message, attempt: u32| {
        let task: u32 = m.header_str("task-id").unwrap().parse().unwrap();
        calls
            .entry(task)
            .or_default()
            .push((attempt, clock.now_ms()));
        match (task, attempt) {
            (3, _) if task_3_permanent => {
                Outcome::Permanent(Failure::new("BadInput", "task 3 is malformed"))
            }
            (3, _) => Outcome::Transient(Failure::new("Timeout", "task 3 timed out")),
            (5, 1) => Outcome::Transient(Failure::new("Timeout", "task 5 timed out once")),
            _ => {
                processed.push(task);
                Outcome::Success
            }
        }
    };
    loop {
        let poll = worker.poll_once(&mut handler).unwrap();
        if poll.handled > 0 {
            continue;
        }
        match poll.next_due {
            Some(due) => clock.advance(due - clock.now_ms()),
            None => break,
        }
    }
    processed.sort();
    assert_eq!(processed, [1, 2, 4, 5, 6], "each processed exactly once");
    let stats = worker.stats();
    assert_eq!(stats.duplicates, 1, "the second task 2 was skipped");
    assert_eq!(stats.dead_lettered, 1);

    let dead = read_all(&log, "tasks.dlq");
    assert_eq!(dead.len(), 1, "exactly task 3");
    let letter = &dead[0];
    assert_eq!(letter.value.as_deref(), Some(&b"task-3"[..]));
    assert_eq!(letter.key.as_deref(), Some(&b"3"[..]));
    assert_eq!(
        letter.header_str("task-id"),
        Some("3"),
        "original headers kept"
    );
    let source = read_all(&log, "tasks")
        .into_iter()
        .find(|m| m.header_str("task-id") == Some("3"))
        .unwrap();
    assert_eq!(
        letter.timestamp, source.timestamp,
        "original timestamp kept"
    );
    assert_eq!(letter.header_str(DLQ_ORIGINAL_TOPIC), Some("tasks"));
    assert_eq!(
        letter.header_i64(DLQ_ORIGINAL_PARTITION),
        Some(source.partition as i64)
    );
    assert_eq!(letter.header_i64(DLQ_ORIGINAL_OFFSET), Some(source.offset));
    assert_eq!(
        letter.header_i64(DLQ_ORIGINAL_TIMESTAMP),
        Some(source.timestamp)
    );
    assert_eq!(letter.header_str(DLQ_GROUP), Some("workers"));
    let attempts = calls[&3].len();
    assert_eq!(letter.header_i64(DLQ_ATTEMPTS), Some(attempts as i64));
    assert_eq!(
        letter.header_i64(DLQ_FIRST_FAILURE_TS),
        Some(calls[&3][0].1)
    );
    assert_eq!(
        letter.header_i64(DLQ_LAST_FAILURE_TS),
        Some(calls[&3][attempts - 1].1)
    );
    assert!(
        letter
            .headers
            .iter()
            .all(|(k, _)| !k.starts_with("logd.retry."))
    );
    if task_3_permanent {
        assert_eq!(attempts, 1, "poison goes straight to the dead-letter topic");
        assert_eq!(letter.header_str(DLQ_REASON), Some("permanent"));
        assert_eq!(letter.header_str(DLQ_ERROR_CLASS), Some("BadInput"));
        assert_eq!(
            letter.header_str(DLQ_ERROR_MESSAGE),
            Some("task 3 is malformed")
        );
    } else {
        assert_eq!(attempts, 3, "max_attempts");
        assert_eq!(letter.header_str(DLQ_REASON), Some("max-attempts"));
        assert_eq!(letter.header_str(DLQ_ERROR_CLASS), Some("Timeout"));
    }

    // Every retry waited within the policy's bounds for its retry number.
    for (task, task_calls) in &calls {
        for pair in task_calls.windows(2) {
            let ((retry, failed_at), (_, retried_at)) = (pair[0], pair[1]);
            let (low, high) = policy.bounds(retry - 1);
            let waited = Duration::from_millis((retried_at - failed_at) as u64);
            assert!(
                low <= waited && waited <= high,
                "task {task} retry {retry}: waited {waited:?}, bounds {low:?}..={high:?}"
            );
        }
    }
    assert_eq!(calls[&5].iter().map(|c| c.0).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn a_poison_task_is_dead_lettered_after_its_attempts_and_the_rest_processed_once() {
    scenario(false);
}

#[test]
fn a_permanent_failure_is_dead_lettered_at_once() {
    scenario(true);
}
