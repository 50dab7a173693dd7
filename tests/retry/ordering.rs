//! Ordering with retries: by default a key's later records overtake one waiting in retry; with
//! `Ordering::PerKey` they wait for it (also across a restart of the worker) while other keys
//! go on.

use std::time::Duration;

use logd::Clock;
use logd_retry::{
    Embedded, Failure, Jitter, Message, Ordering, Outcome, RetryConfig, RetryPolicy, RetryWorker,
};

use super::{engine, produce_keyed};
use logd_retry::Headers;

/// Tasks 10, 11, 12 on key "k" and 20 on key "other", in one partition; task 10 fails twice
/// before it succeeds. Returns the order of successes; the worker is rebuilt (a restart) before
/// poll number `restart_at`.
fn success_order(ordering: Ordering, restart_at: Option<usize>) -> Vec<u32> {
    let dir = tempfile::tempdir().unwrap();
    let (log, clock) = engine(dir.path(), 1, 1_800_000_000_000);
    for (task, key) in [(10, "k"), (11, "k"), (12, "k"), (20, "other")] {
        produce_keyed(&log, task, key, 0);
    }
    let config = RetryConfig {
        policy: RetryPolicy {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(10),
            max_attempts: 5,
            jitter: Jitter::None,
        },
        ordering,
        tiers: [1, 10].map(Duration::from_secs).to_vec(),
        ..RetryConfig::new("workers", "tasks")
    };
    let mut order = Vec::new();
    let mut handler = |m: &Message, attempt: u32| {
        let task: u32 = m.header_str("task-id").unwrap().parse().unwrap();
        if task == 10 && attempt <= 2 {
            return Outcome::Transient(Failure::new("Flaky", "not yet"));
        }
        order.push(task);
        Outcome::Success
    };
    let new_worker = || RetryWorker::new(Embedded::new(log.clone()), config.clone(), None).unwrap();
    let mut worker = new_worker();
    let mut polls = 0;
    loop {
        polls += 1;
        if Some(polls) == restart_at {
            // A restart: the old worker stops (leaving the group), then a new one starts.
            drop(worker);
            worker = new_worker();
        }
        let poll = worker.poll_once(&mut handler).unwrap();
        if poll.handled > 0 {
            continue;
        }
        match poll.next_due {
            Some(due) => clock.advance(due - clock.now_ms()),
            None => break,
        }
    }
    order
}

#[test]
fn by_default_later_records_of_a_key_overtake_one_in_retry() {
    assert_eq!(success_order(Ordering::Unordered, None), [11, 12, 20, 10]);
}

#[test]
fn per_key_ordering_holds_a_keys_later_records_behind_one_in_retry() {
    assert_eq!(
        success_order(Ordering::PerKey, None),
        [20, 10, 11, 12],
        "other keys go on; k's records keep their order"
    );
}

#[test]
fn per_key_ordering_survives_a_restart_of_the_worker() {
    for restart_at in 2..6 {
        assert_eq!(
            success_order(Ordering::PerKey, Some(restart_at)),
            [20, 10, 11, 12],
            "restart before poll {restart_at}"
        );
    }
}
