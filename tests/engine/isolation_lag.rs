//! A read_committed group's lag ends at the last stable offset: embedded consumers of three
//! groups read a partition holding an open transaction; the read_committed one is described
//! with each log end at the stable offset, the read_uncommitted ones at the high watermark,
//! also one sharing the read_committed one's client id (it committed past the stable offset,
//! which no read_committed consumer does).

use std::time::Duration;

use logd::groups::classic::GroupConfig;
use logd::{AutoOffsetReset, Config, Consumer, ConsumerConfig, IsolationLevel, Log, TopicConfig};
use logd_storage::batch::{BatchBuilder, Compression};

/// A transactional batch of `value` to `out`-0 inside producer `t`'s transaction.
fn send(log: &Log, (pid, epoch): (i64, i16), sequence: i32, value: &str) {
    let part = [("out".to_owned(), 0)];
    log.add_partitions_to_txn("t", pid, epoch, &part).unwrap();
    let mut batch = BatchBuilder::new(Compression::None)
        .producer(pid, epoch, sequence)
        .transactional();
    batch.push(0, None, Some(value.as_bytes()), &[]);
    log.append("out", 0, &mut batch.build(0).unwrap()).unwrap();
}

#[test]
fn a_read_committed_groups_log_end_is_the_last_stable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        groups: GroupConfig {
            initial_rebalance_delay_ms: 0,
            ..GroupConfig::default()
        },
        ..Config::default()
    };
    let log = Log::open(dir.path(), config).unwrap();
    log.create_topic("out", TopicConfig::default()).unwrap();
    let producer = log.init_transactional_producer("t", 60_000, None).unwrap();
    // Offsets: c1 0, its commit marker 1, "open" 2 (its transaction still open).
    send(&log, producer, 0, "c1");
    log.end_txn("t", producer.0, producer.1, true).unwrap();
    send(&log, producer, 1, "open");
    let member = |group: &str, client: &str, isolation| {
        let mut consumer = Consumer::new(
            &log,
            ConsumerConfig {
                group_id: Some(group.into()),
                client_id: client.into(),
                auto_offset_reset: AutoOffsetReset::Earliest,
                isolation,
                ..ConsumerConfig::default()
            },
        );
        consumer.subscribe(vec!["out".into()]).unwrap();
        let mut read = Vec::new();
        for _ in 0..20 {
            for r in consumer.poll(Duration::from_millis(50)).unwrap() {
                read.push(r.value.map(|v| v.to_vec()));
            }
        }
        consumer.commit().unwrap();
        (consumer, read)
    };
    let (_rc, read) = member("rc", "app", IsolationLevel::ReadCommitted);
    assert_eq!(read, vec![Some(b"c1".to_vec())]);
    let (_ru, read) = member("ru", "app", IsolationLevel::ReadUncommitted);
    assert_eq!(read.len(), 2);
    let (_plain, _) = member("plain", "other", IsolationLevel::ReadUncommitted);
    let ends = |group: &str| {
        let description = log.describe_group(group).unwrap();
        let o = &description.offsets[0];
        (description.isolation, o.committed, o.log_end, o.lag)
    };
    assert_eq!(ends("rc"), (IsolationLevel::ReadCommitted, 2, 2, 0));
    assert_eq!(ends("ru"), (IsolationLevel::ReadUncommitted, 3, 3, 0));
    assert_eq!(ends("plain"), (IsolationLevel::ReadUncommitted, 3, 3, 0));
    // Once the transaction commits, the stable offset is the high watermark: rc lags by the
    // committed record it has not read.
    log.end_txn("t", producer.0, producer.1, true).unwrap();
    assert_eq!(ends("rc"), (IsolationLevel::ReadCommitted, 2, 4, 2));
}
