//! Scenarios for `logd-retry` over the embedded engine: the seed scenario (duplicates, poison,
//! a transient failure), and a long randomized run with the worker crashed at random moments.

mod crash;
mod dead_letters;
mod exactly_once;
mod group_processes;
mod ordering;
mod process_kill;
mod scale_out;
mod seed;
#[path = "../support/serve_logd.rs"]
mod serve_logd;
mod share_crash;
mod waiting;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use logd::{Config, Log, ManualClock, TopicConfig};
use logd_retry::Headers;
use logd_retry::{Embedded, Error, Message, Transport};
use logd_storage::RealFs;

/// An engine on a manual clock (starting at `start_ms`) with topic `tasks` of `partitions`.
pub(crate) fn engine(
    dir: &std::path::Path,
    partitions: u32,
    start_ms: i64,
) -> (Log, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(start_ms));
    let log = Log::open_with(Arc::new(RealFs), clock.clone(), dir, Config::default()).unwrap();
    if log.partition_count("tasks").is_err() {
        log.create_topic(
            "tasks",
            TopicConfig {
                partitions,
                ..TopicConfig::default()
            },
        )
        .unwrap();
    }
    (log, clock)
}

/// Produces task `id` with key and `task-id` header `id`, partitioned by id.
pub(crate) fn produce_task(log: &Log, id: u32, partitions: u32) {
    produce_keyed(log, id, &id.to_string(), id % partitions);
}

/// Produces task `id` with `key` into `partition`.
pub(crate) fn produce_keyed(log: &Log, id: u32, key: &str, partition: u32) {
    let record = logd_retry::OutRecord {
        timestamp: log.clock().now_ms(),
        key: Some(Bytes::from(key.to_owned())),
        value: Some(Bytes::from(format!("task-{id}"))),
        headers: vec![("task-id".into(), Some(Bytes::from(id.to_string())))],
    };
    logd_retry::IdempotentAppender::new()
        .send(&mut Embedded::new(log.clone()), "tasks", partition, &record)
        .unwrap();
}

/// Every record of `topic`.
pub(crate) fn read_all(log: &Log, topic: &str) -> Vec<Message> {
    let partitions = log.partition_count(topic).unwrap();
    read_through(&mut Embedded::new(log.clone()), topic, partitions)
}

/// Every record of `topic`'s `partitions` partitions, through `transport`.
pub(crate) fn read_through(
    transport: &mut impl Transport,
    topic: &str,
    partitions: u32,
) -> Vec<Message> {
    let mut out = Vec::new();
    for partition in 0..partitions {
        let mut at = 0;
        loop {
            let batch = transport.fetch(topic, partition, at).unwrap();
            let Some(last) = batch.last() else { break };
            at = last.offset + 1;
            out.extend(batch);
        }
    }
    out
}

/// The embedded transport, instrumented: an append or commit fails once `budget` of them were
/// spent (as a crash stops a worker between two durable steps), and fetches are counted.
pub(crate) struct Probe {
    inner: Embedded,
    budget: Cell<u64>,
    /// Fetches so far.
    pub(crate) fetches: Rc<Cell<u32>>,
}

impl Probe {
    pub(crate) fn new(log: &Log, budget: u64) -> Probe {
        Probe {
            inner: Embedded::new(log.clone()),
            budget: Cell::new(budget),
            fetches: Rc::new(Cell::new(0)),
        }
    }

    fn spend(&self) -> logd_retry::Result<()> {
        match self.budget.get() {
            0 => Err(Error::Transport("crashed".into())),
            n => {
                self.budget.set(n - 1);
                Ok(())
            }
        }
    }
}

impl Transport for Probe {
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
    fn ensure_topic(&mut self, t: &str, p: u32, r: Option<i64>) -> logd_retry::Result<()> {
        self.inner.ensure_topic(t, p, r)
    }
    fn partition_count(&mut self, t: &str) -> logd_retry::Result<u32> {
        self.inner.partition_count(t)
    }
    fn partitions_if_exists(&mut self, t: &str) -> logd_retry::Result<Option<u32>> {
        self.inner.partitions_if_exists(t)
    }
    fn fetch(&mut self, t: &str, p: u32, o: i64) -> logd_retry::Result<Vec<Message>> {
        self.fetches.set(self.fetches.get() + 1);
        self.inner.fetch(t, p, o)
    }
    fn append(&mut self, t: &str, p: u32, batch: Vec<u8>) -> logd_retry::Result<i64> {
        self.spend()?;
        self.inner.append(t, p, batch)
    }
    fn init_producer_id(&mut self) -> logd_retry::Result<i64> {
        self.inner.init_producer_id()
    }
    fn committed(&mut self, g: &str, t: &str, p: u32) -> logd_retry::Result<Option<i64>> {
        self.inner.committed(g, t, p)
    }
    fn commit(&mut self, g: &str, t: &str, p: u32, o: i64) -> logd_retry::Result<()> {
        self.spend()?;
        self.inner.commit(g, t, p, o)
    }
    fn marker(&mut self) -> u64 {
        self.inner.marker()
    }
    fn wait(&mut self, marker: u64, timeout: Duration) {
        self.inner.wait(marker, timeout)
    }
}

/// Copies (in a retry tier or the dead-letter topic) of the same task and attempt written more
/// than once.
pub(crate) fn copies_written_twice(log: &Log) -> usize {
    let mut seen = std::collections::BTreeSet::new();
    let mut twice = 0;
    let copies = log
        .list_topics()
        .into_iter()
        .filter(|t| t.starts_with("tasks.retry.") || t == "tasks.dlq");
    for topic in copies {
        for m in read_all(log, &topic) {
            let attempt = m
                .header_str(logd_retry::message::ATTEMPT)
                .or_else(|| m.header_str(logd_retry::message::DLQ_ATTEMPTS))
                .unwrap()
                .to_owned();
            let task = m.header_str("task-id").unwrap().to_owned();
            if !seen.insert((topic.clone(), task, attempt)) {
                twice += 1;
            }
        }
    }
    twice
}
