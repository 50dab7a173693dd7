//! Scenarios for `logd-retry` over the embedded engine: the seed scenario (duplicates, poison,
//! a transient failure), and a long randomized run with the worker crashed at random moments.

mod crash;
mod ordering;
mod process_kill;
mod seed;
mod waiting;

use std::sync::Arc;

use bytes::Bytes;
use logd::{Config, Log, ManualClock, TopicConfig};
use logd_retry::{Embedded, Message, Transport};
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
    Embedded::new(log.clone())
        .append("tasks", partition, &record)
        .unwrap();
}

/// Every record of `topic`.
pub(crate) fn read_all(log: &Log, topic: &str) -> Vec<Message> {
    let mut transport = Embedded::new(log.clone());
    let mut out = Vec::new();
    for partition in 0..log.partition_count(topic).unwrap() {
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
