//! Outgrowing one machine and coming back: a topic, every record and a consumer group's
//! position carried from logd to a real Apache Kafka cluster with Kafka's own MirrorMaker 2
//! (`connect-mirror`, dedicated mode, `IdentityReplicationPolicy`, so names and offsets stay),
//! the group's offsets with `logd groups copy-offsets` (MirrorMaker's own translation is
//! approximate for a group that is behind); then, with more records produced and read on
//! Kafka, all of it back to a new logd. Records are compared one by one, and each time the
//! group resumes at exactly the record after its last commit. The runbook is
//! `docs/migrating.md`.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;

use super::cluster_admin::ok;
use super::cluster_tools::records;
use super::java_clients::connect;
use super::kafka_cluster::kafka_cluster;
use super::{Daemon, logd};

const TOPIC: &str = "mig.orders";
const GROUP: &str = "mig.billing";

/// A consumer of `GROUP` on `bootstrap` reading `TOPIC` from its committed offsets (or, with
/// none, from `reset`); reads until `count` records or `patience`, committing what it read.
fn read_in_group(bootstrap: &str, reset: &str, count: usize) -> Vec<(i32, i64)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", GROUP)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", reset)
        .create()
        .expect("librdkafka consumer");
    consumer.subscribe(&[TOPIC]).unwrap();
    let mut read = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while read.len() < count && std::time::Instant::now() < deadline {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(200)) {
            read.push((message.partition(), message.offset()));
            consumer
                .commit_message(&message, CommitMode::Sync)
                .expect("commit");
        }
    }
    read
}

/// MirrorMaker 2's configuration for copying `mig.*` from cluster `from` to cluster `to`.
fn mirror_maker_config((from, source): (&str, &str), (to, target): (&str, &str)) -> String {
    format!(
        "clusters = {from}, {to}\n\
         {from}.bootstrap.servers = {source}\n\
         {to}.bootstrap.servers = {target}\n\
         {from}->{to}.enabled = true\n\
         {from}->{to}.topics = mig\\..*\n\
         {to}->{from}.enabled = false\n\
         replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n\
         sync.topic.configs.interval.seconds = 1\n\
         refresh.topics.interval.seconds = 1\n\
         sync.topic.acls.enabled = false\n\
         emit.checkpoints.enabled = false\n\
         replication.factor = 1\n\
         checkpoints.topic.replication.factor = 1\n\
         heartbeats.topic.replication.factor = 1\n\
         offset-syncs.topic.replication.factor = 1\n\
         offset.storage.replication.factor = 1\n\
         status.storage.replication.factor = 1\n\
         config.storage.replication.factor = 1\n\
         tasks.max = 1\n"
    )
}

/// Runs MirrorMaker 2 from `from` to `to` until `TOPIC` on the target has `records` records on
/// three partitions and its `retention.ms`.
fn mirror(dir: &std::path::Path, from: (&str, &str), to: (&str, &str), records: i64) {
    let config = dir.join(format!("{}-to-{}.properties", from.0, to.0));
    std::fs::write(&config, mirror_maker_config(from, to)).unwrap();
    let log = dir.join(format!("{}-to-{}.log", from.0, to.0));
    let mut mirror = connect(
        "org.apache.kafka.connect.mirror.MirrorMaker",
        &[config.to_str().unwrap()],
    )
    .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
    .stderr(Stdio::null())
    .spawn()
    .expect("MirrorMaker 2");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let state = topic_state(to.1);
        let copied = state.as_ref().is_some_and(|(ends, described)| {
            ends.len() == 3
                && ends.iter().sum::<i64>() == records
                && described.contains("retention.ms=86400000")
        });
        if copied {
            break;
        }
        if Instant::now() > deadline {
            let _ = mirror.kill();
            let printed = std::fs::read_to_string(&log).unwrap_or_default();
            let problems: Vec<&str> = printed
                .lines()
                .filter(|l| l.contains("ERROR") || l.contains("WARN") || l.contains("Exception"))
                .take(40)
                .collect();
            panic!(
                "MirrorMaker 2 ({} to {}) did not copy {records} records in 120 s; the target \
                 has {state:?}\n{}",
                from.0,
                to.0,
                problems.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    mirror.kill().unwrap();
    mirror.wait().unwrap();
}

/// Every record of `TOPIC` on `bootstrap`: (partition, offset, key, value), sorted.
fn every_record(bootstrap: &str) -> Vec<(u32, i64, String, String)> {
    let mut all = records(&ok(
        bootstrap,
        &["consume", "-t", TOPIC, "--format", "json"],
        "",
    ));
    all.sort();
    all
}

/// Carries `GROUP`'s offsets from `source` to `target` with `logd groups copy-offsets`.
fn copy_offsets(source: &str, target: &str) {
    let (success, planned, err) = logd(
        &[
            "groups",
            "copy-offsets",
            GROUP,
            "--bootstrap",
            source,
            "--to",
            target,
            "--execute",
        ],
        "",
    );
    assert!(success, "{err}");
    assert!(planned.contains("committed"), "{planned}");
}

/// Asserts that `read` (a group's reads after it moved) starts, on each of the three
/// partitions, right after `committed` (or at 0 where nothing was committed), for a topic
/// whose records are `all`.
fn resumed_after(
    read: &[(i32, i64)],
    committed: &BTreeMap<i32, i64>,
    all: &[(u32, i64, String, String)],
) {
    for partition in 0..3 {
        let first = read
            .iter()
            .filter(|(p, _)| *p == partition)
            .map(|(_, o)| *o)
            .min();
        let end = all.iter().filter(|r| r.0 as i32 == partition).count() as i64;
        let resumed_at = committed.get(&partition).copied().unwrap_or(0);
        let expected = (resumed_at < end).then_some(resumed_at);
        assert_eq!(first, expected, "partition {partition}");
    }
}

/// The offset after the last record of each partition in `read`.
fn commits_of(read: &[(i32, i64)]) -> BTreeMap<i32, i64> {
    read.iter().fold(BTreeMap::new(), |mut at, (p, o)| {
        at.insert(*p, o + 1);
        at
    })
}

/// `(partition, log end)` of `TOPIC` on `bootstrap`, and the configs set on it.
fn topic_state(bootstrap: &str) -> Option<(Vec<i64>, String)> {
    let (success, out, _) = logd(&["topics", "describe", TOPIC, "--bootstrap", bootstrap], "");
    if !success {
        return None;
    }
    let ends = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            f[0].parse::<u32>().ok().map(|_| f[2].parse().unwrap())
        })
        .collect();
    Some((ends, out))
}

#[test]
fn a_topic_and_a_group_move_from_logd_to_kafka_with_mirrormaker_2() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--group-initial-rebalance-delay-ms", "0"]);
    let source = daemon.addr.as_str();
    let kafka = kafka_cluster().bootstrap.as_str();
    ok(
        source,
        &[
            "topics",
            "create",
            TOPIC,
            "--partitions",
            "3",
            "--config",
            "retention.ms=86400000",
        ],
        "",
    );
    let lines: String = (0..100).map(|i| format!("key-{i}:value-{i}\n")).collect();
    ok(source, &["produce", "-t", TOPIC, "-k", ":"], &lines);
    // The group reads 60 of the 100 on logd, committing as it goes.
    let first = read_in_group(source, "earliest", 60);
    assert_eq!(first.len(), 60);

    // MirrorMaker 2 copies the topic, its partitions, its configs and every record, one by
    // one the same: partition, offset, key and value.
    mirror(dir.path(), ("logd", source), ("kafka", kafka), 100);
    let on_logd = every_record(source);
    assert_eq!(on_logd.len(), 100);
    assert_eq!(every_record(kafka), on_logd);

    // The group's offsets, checked against the records on both sides, then committed: on
    // Kafka the group resumes exactly after its last commit on logd.
    copy_offsets(source, kafka);
    let rest = read_in_group(kafka, "earliest", 40);
    assert_eq!(rest.len(), 40, "the forty records left");
    resumed_after(&rest, &commits_of(&first), &on_logd);

    // And back, to a new logd: twenty more records produced on Kafka, the group reads ten of
    // them there, then topic, records and group move to logd.
    let more: String = (100..120).map(|i| format!("key-{i}:value-{i}\n")).collect();
    ok(kafka, &["produce", "-t", TOPIC, "-k", ":"], &more);
    let on_kafka_read = read_in_group(kafka, "earliest", 10);
    assert_eq!(on_kafka_read.len(), 10);
    let mut committed = commits_of(&first);
    committed.extend(commits_of(&rest));
    committed.extend(commits_of(&on_kafka_read));
    // The first logd is gone, and the way back is a MirrorMaker of its own: one with the same
    // cluster names would find the first one's connectors and offsets in its internal topics
    // on Kafka and resume them (copying the first logd's records to Kafka again).
    drop(daemon);
    let back = Daemon::start(
        &dir.path().join("back"),
        &["--group-initial-rebalance-delay-ms", "0"],
    );
    mirror(dir.path(), ("kafka", kafka), ("back", &back.addr), 120);
    let on_kafka = every_record(kafka);
    assert_eq!(on_kafka.len(), 120);
    assert_eq!(every_record(&back.addr), on_kafka);
    copy_offsets(kafka, &back.addr);
    let last = read_in_group(&back.addr, "earliest", 10);
    assert_eq!(last.len(), 10, "the ten records left");
    resumed_after(&last, &committed, &on_kafka);
}

#[test]
fn copy_offsets_refuses_a_target_whose_records_differ() {
    let dir = tempfile::tempdir().unwrap();
    let source = Daemon::start(dir.path().join("a").as_path(), &[]);
    let target = Daemon::start(dir.path().join("b").as_path(), &[]);
    for (daemon, values) in [(&source, "one\ntwo\n"), (&target, "one\nzwei\n")] {
        ok(
            &daemon.addr,
            &["topics", "create", TOPIC, "--partitions", "1"],
            "",
        );
        ok(&daemon.addr, &["produce", "-t", TOPIC, "-p", "0"], values);
    }
    let read = read_in_group(&source.addr, "earliest", 2);
    assert_eq!(read.len(), 2);
    let (success, _, err) = logd(
        &[
            "groups",
            "copy-offsets",
            GROUP,
            "--bootstrap",
            &source.addr,
            "--to",
            &target.addr,
            "--execute",
        ],
        "",
    );
    assert!(!success);
    assert!(err.contains("mig.orders-0 offset 1 differs"), "{err}");
    let (_, described, _) = logd(
        &["groups", "describe", GROUP, "--bootstrap", &target.addr],
        "",
    );
    assert!(
        !described.contains("mig.orders "),
        "nothing committed: {described}"
    );
}
