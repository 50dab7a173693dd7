//! `logd-retry` against a running logd through the Kafka client (the seed scenario: a
//! duplicate, a poison task, a task that fails once), then `logd dlq list` and `replay`: a
//! replayed letter that dies again is visibly a repeat, a fixed one is processed, and the
//! dead-letter depth in `/metrics` falls.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use logd_client::{Client, Remote};
use logd_retry::message::*;
use logd_retry::{
    DedupeConfig, DedupeStore, Failure, IdempotentAppender, Jitter, Message, OutRecord, Outcome,
    RetryConfig, RetryPolicy, RetryWorker, Transport,
};

use super::metrics::scrape;
use super::{Daemon, logd};
use logd_retry::Headers;

const DEPTH: &str = r#"logd_dead_letter_depth{topic="tasks.dlq"}"#;

fn config() -> RetryConfig {
    RetryConfig {
        policy: RetryPolicy {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
            max_attempts: 3,
            jitter: Jitter::Equal,
        },
        tiers: vec![Duration::from_millis(200), Duration::from_secs(1)],
        id_header: Some("task-id".into()),
        seed: 11,
        ..RetryConfig::new("workers", "tasks")
    }
}

/// Every handler call per task: (attempt, when).
pub(super) type Calls = BTreeMap<u32, Vec<(u32, Instant)>>;

/// Runs a worker until `done` holds for its stats (or 30 s pass); `fail_task_3` decides
/// whether task 3 still fails. Returns the tasks processed and every handler call.
fn work(
    addr: &str,
    dir: &std::path::Path,
    fail_task_3: bool,
    done: impl Fn(&logd_retry::Stats) -> bool,
) -> (Vec<u32>, Calls) {
    let dedupe = DedupeStore::open(dir.join("dedupe"), DedupeConfig::default(), 0).unwrap();
    let transport = Remote::new(Client::connect(addr).unwrap());
    let mut worker = RetryWorker::new(transport, config(), Some(dedupe)).unwrap();
    let mut processed = Vec::new();
    let mut calls = Calls::new();
    let started = Instant::now();
    worker
        .run(
            &mut |m: &Message, attempt| {
                let task: u32 = m.header_str("task-id").unwrap().parse().unwrap();
                calls
                    .entry(task)
                    .or_default()
                    .push((attempt, Instant::now()));
                match (task, attempt) {
                    (3, _) if fail_task_3 => {
                        Outcome::Transient(Failure::new("Timeout", "task 3 timed out"))
                    }
                    (5, 1) => Outcome::Transient(Failure::new("Timeout", "task 5 timed out once")),
                    _ => {
                        processed.push(task);
                        Outcome::Success
                    }
                }
            },
            |stats| done(stats) || started.elapsed() > Duration::from_secs(30),
            Duration::from_millis(50),
        )
        .unwrap();
    processed.sort();
    (processed, calls)
}

fn letters(addr: &str) -> Vec<Message> {
    let mut transport = Remote::new(Client::connect(addr).unwrap());
    let mut all = Vec::new();
    for partition in 0..2 {
        all.extend(transport.fetch("tasks.dlq", partition, 0).unwrap());
    }
    all
}

/// The seed scenario against the broker at `addr`, the worker's state under `dir`: tasks 1 to
/// 6 and a duplicate of 2 into `tasks` (2 partitions); task 3 always times out, so after its
/// hops through both tiers it is dead-lettered; task 5 times out once. Returns the tasks
/// processed and every handler call.
pub(super) fn seed_scenario(addr: &str, dir: &std::path::Path) -> (Vec<u32>, Calls) {
    let mut client = Client::connect(addr).unwrap();
    client.create_topic("tasks", 2, &[]).unwrap();
    let mut producer = Remote::new(client);
    let mut appender = IdempotentAppender::new();
    for task in [1u32, 2, 3, 4, 5, 6, 2] {
        let record = OutRecord {
            timestamp: producer.now_ms(),
            key: Some(Bytes::from(task.to_string())),
            value: Some(Bytes::from(format!("task-{task}"))),
            headers: vec![("task-id".into(), Some(Bytes::from(task.to_string())))],
        };
        appender
            .send(&mut producer, "tasks", task % 2, &record)
            .unwrap();
    }
    work(addr, dir, true, |s| {
        s.succeeded == 5 && s.dead_lettered == 1 && s.duplicates == 1
    })
}

#[test]
fn the_seed_scenario_through_the_kafka_client_then_dead_letters_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        &dir.path().join("data"),
        &["--metrics-listen", "127.0.0.1:0"],
    );
    let metrics = daemon.metrics.clone().unwrap();
    let (processed, calls) = seed_scenario(&daemon.addr, dir.path());
    assert_eq!(processed, [1, 2, 4, 5, 6]);
    assert_eq!(calls[&3].len(), 3, "poison after max_attempts");
    let policy = config().policy;
    for (task, task_calls) in &calls {
        for pair in task_calls.windows(2) {
            let ((retry, failed), (_, retried)) = (pair[0], pair[1]);
            let (low, high) = policy.bounds(retry - 1);
            let waited = retried - failed;
            // Real time: never early (due times are wall-clock milliseconds, `waited` a
            // monotonic clock: a few ms of resolution); late by at most the tier it waited in
            // plus scheduling.
            assert!(
                low.saturating_sub(Duration::from_millis(3)) <= waited
                    && waited <= high + Duration::from_millis(1_500),
                "task {task} retry {retry}: waited {waited:?}, bounds {low:?}..={high:?}"
            );
        }
    }
    let dead = letters(&daemon.addr);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].header_str("task-id"), Some("3"));
    assert_eq!(dead[0].header_str(DLQ_ORIGINAL_TOPIC), Some("tasks"));
    assert_eq!(dead[0].header_str(DLQ_REASON), Some("max-attempts"));
    assert_eq!(
        dead[0].header_str(DLQ_ERROR_MESSAGE),
        Some("task 3 timed out")
    );
    assert_eq!(scrape(&metrics)[DEPTH], 1.0);

    let dlq = |args: &[&str]| {
        let mut all = vec!["dlq", "--bootstrap", &daemon.addr];
        all.extend_from_slice(args);
        let (ok, out, err) = logd(&all, "");
        assert!(ok, "logd {all:?}: {err}");
        out
    };
    let listed = dlq(&["list", "tasks.dlq"]);
    assert!(
        listed.contains("tasks/1/") && listed.contains("max-attempts"),
        "{listed}"
    );
    let shown = dlq(&[
        "show",
        "tasks.dlq",
        "--partition",
        &dead[0].partition.to_string(),
        "--offset",
        "0",
    ]);
    assert!(
        shown.contains("header logd.dlq.attempts: 3") && shown.contains("value: task-3"),
        "{shown}"
    );

    let dry = dlq(&["replay", "tasks.dlq", "--dry-run"]);
    assert!(
        dry.contains("would replay") && dry.contains("1 of 1"),
        "{dry}"
    );
    assert_eq!(scrape(&metrics)[DEPTH], 1.0, "a dry run changes nothing");

    // Replayed while still broken: it dies again, visibly a repeat.
    dlq(&["replay", "tasks.dlq"]);
    assert_eq!(scrape(&metrics)[DEPTH], 0.0);
    work(&daemon.addr, dir.path(), true, |s| s.dead_lettered == 1);
    let dead = letters(&daemon.addr);
    assert_eq!(dead.len(), 2);
    let again = dead
        .iter()
        .find(|m| m.header_str(DLQ_REPLAY_COUNT).is_some())
        .expect("the second death carries the replay count");
    assert_eq!(
        again.header_str(DLQ_REPLAY_COUNT),
        Some("1"),
        "a repeat is marked"
    );
    assert_eq!(scrape(&metrics)[DEPTH], 1.0);

    // Fixed: replayed again, processed, and the depth falls.
    let replayed = dlq(&["replay", "tasks.dlq"]);
    assert!(replayed.contains("replay 2"), "{replayed}");
    assert_eq!(scrape(&metrics)[DEPTH], 0.0);
    let (processed, _) = work(&daemon.addr, dir.path(), false, |s| s.succeeded == 1);
    assert_eq!(
        processed,
        [3],
        "the fixed letter is processed, nothing else again"
    );
    assert_eq!(letters(&daemon.addr).len(), 2, "nothing new died");
}
