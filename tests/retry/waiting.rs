//! A worker waiting for a retry to come due sleeps until then: it neither handles the record
//! early nor spins looking at the log (counted through the transport).

use std::sync::Arc;
use std::time::{Duration, Instant};

use logd::{Config, Log, SystemClock, TopicConfig};
use logd_retry::{Failure, Jitter, Message, Outcome, RetryConfig, RetryPolicy, RetryWorker};
use logd_storage::RealFs;

use super::{Probe, produce_task};

#[test]
fn a_worker_sleeps_until_a_retry_is_due() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open_with(
        Arc::new(RealFs),
        Arc::new(SystemClock),
        dir.path(),
        Config::default(),
    )
    .unwrap();
    log.create_topic("tasks", TopicConfig::default()).unwrap();
    produce_task(&log, 1, 1);
    let config = RetryConfig {
        policy: RetryPolicy {
            base: Duration::from_millis(600),
            jitter: Jitter::None,
            ..RetryPolicy::default()
        },
        ..RetryConfig::new("workers", "tasks")
    };
    let transport = Probe::new(&log, u64::MAX);
    let fetches = transport.fetches.clone();
    let mut worker = RetryWorker::new(transport, config, None).unwrap();
    let mut calls = Vec::new();
    let started = Instant::now();
    worker
        .run(
            &mut |_: &Message, attempt| {
                calls.push(started.elapsed());
                if attempt == 1 {
                    Outcome::Transient(Failure::new("Timeout", "later"))
                } else {
                    Outcome::Success
                }
            },
            |stats| stats.succeeded == 1 || started.elapsed() > Duration::from_secs(10),
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!(calls.len(), 2);
    // Due times are wall-clock milliseconds and `calls` a monotonic clock: allow a few ms.
    let waited = calls[1] - calls[0];
    assert!(
        waited >= Duration::from_millis(590),
        "not before it is due: {waited:?}"
    );
    // Each poll fetches the source and the four tiers: a spinning worker would poll thousands
    // of times in 600 ms.
    assert!(
        fetches.get() <= 30,
        "{} fetches while waiting",
        fetches.get()
    );
}
