//! A worker waiting for a retry to come due sleeps until then: it neither handles the record
//! early nor spins looking at the log (counted through the transport).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use logd::{Config, Log, SystemClock, TopicConfig};
use logd_retry::{
    Embedded, Failure, Jitter, Message, OutRecord, Outcome, RetryConfig, RetryPolicy, RetryWorker,
    Transport,
};
use logd_storage::RealFs;

use super::produce_task;

/// Counts fetches.
struct Counting {
    inner: Embedded,
    fetches: Rc<Cell<u32>>,
}

impl Transport for Counting {
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
    fn ensure_topic(&mut self, t: &str, p: u32, r: Option<i64>) -> logd_retry::Result<()> {
        self.inner.ensure_topic(t, p, r)
    }
    fn partition_count(&mut self, t: &str) -> logd_retry::Result<u32> {
        self.inner.partition_count(t)
    }
    fn fetch(&mut self, t: &str, p: u32, o: i64) -> logd_retry::Result<Vec<Message>> {
        self.fetches.set(self.fetches.get() + 1);
        self.inner.fetch(t, p, o)
    }
    fn append(&mut self, t: &str, p: u32, r: &OutRecord) -> logd_retry::Result<i64> {
        self.inner.append(t, p, r)
    }
    fn committed(&mut self, g: &str, t: &str, p: u32) -> logd_retry::Result<Option<i64>> {
        self.inner.committed(g, t, p)
    }
    fn commit(&mut self, g: &str, t: &str, p: u32, o: i64) -> logd_retry::Result<()> {
        self.inner.commit(g, t, p, o)
    }
    fn marker(&mut self) -> u64 {
        self.inner.marker()
    }
    fn wait(&mut self, marker: u64, timeout: Duration) {
        self.inner.wait(marker, timeout)
    }
}

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
    let fetches = Rc::new(Cell::new(0));
    let transport = Counting {
        inner: Embedded::new(log.clone()),
        fetches: fetches.clone(),
    };
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
