//! Every `logd` client command against a real Apache Kafka cluster (three KRaft nodes,
//! `kafka_cluster.rs`), as a user who outgrew one machine runs them: `topics create|alter|
//! list|describe|delete`, `produce` (each keyed record on its key's partition, through that
//! partition's leader), `consume` and `replay` (a range, `--into` another topic), `groups
//! list|describe|reset-offsets|delete` on a group librdkafka made, and `dlq list|show|replay`.
//! The cluster is shared with other tests: every name here starts with `tools.`.

use super::cluster_admin::{lag, ok};
use super::cluster_tools::records;
use super::kafka_cluster::kafka_cluster;
use super::{librdkafka, wait_until};

use std::time::Duration;

const ORDERS: &str = "tools.orders";

/// Partition rows of `logd topics describe`: (partition, log start, log end).
fn partitions(bootstrap: &str, topic: &str) -> Vec<(u32, i64, i64)> {
    ok(bootstrap, &["topics", "describe", topic], "")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let partition = f[0].parse::<u32>().ok()?;
            Some((partition, f[1].parse().unwrap(), f[2].parse().unwrap()))
        })
        .collect()
}

/// Our topics `logd topics list` shows.
fn ours(bootstrap: &str) -> Vec<String> {
    ok(bootstrap, &["topics", "list"], "")
        .lines()
        .filter(|t| t.starts_with("tools."))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_logd_command_works_on_a_kafka_cluster() {
    let b = kafka_cluster().bootstrap.as_str();

    // Topics: created with four partitions, grown to six; the other brokers learn of each
    // change a moment after the controller.
    for topic in [ORDERS, "tools.copy", "tools.orders.dlq"] {
        let out = ok(b, &["topics", "create", topic, "--partitions", "4"], "");
        assert!(out.contains(topic), "{out}");
    }
    ok(b, &["topics", "alter", ORDERS, "--partitions", "6"], "");
    wait_until(
        "every broker knows six partitions",
        Duration::from_secs(15),
        || partitions(b, ORDERS).len() == 6,
    );
    assert_eq!(ours(b), ["tools.copy", "tools.orders", "tools.orders.dlq"]);

    // Produce: each keyed record on the partition its key hashes to, as Kafka's Java client.
    let lines: String = (0..60).map(|i| format!("key-{i}:value-{i}\n")).collect();
    let out = ok(b, &["produce", "-t", ORDERS, "-k", ":"], &lines);
    assert!(out.contains("60 records acknowledged"), "{out}");
    let consume = |extra: &[&str]| {
        let mut args = vec!["consume", "-t", ORDERS, "--format", "json"];
        args.extend_from_slice(extra);
        records(&ok(b, &args, ""))
    };
    let all = consume(&[]);
    assert_eq!(all.len(), 60);
    for (partition, _, key, value) in &all {
        let expected = (logd_partition::murmur2(key.as_bytes()) as u32 & 0x7fff_ffff) % 6;
        assert_eq!(*partition, expected, "{key} landed on its key's partition");
        assert_eq!(value, &key.replace("key", "value"));
    }
    let ends: i64 = partitions(b, ORDERS).iter().map(|p| p.2 - p.1).sum();
    assert_eq!(ends, 60, "each partition's offsets from its leader");
    let last = consume(&["-p", "1", "-o", "-1"]);
    assert_eq!(last.len(), 1);

    // Replay: a range of partition 1, then every partition into another topic.
    let range = records(&ok(
        b,
        &[
            "replay", "-t", ORDERS, "-p", "1", "-o", "0", "--to", "2", "--format", "json",
        ],
        "",
    ));
    assert_eq!(range.iter().map(|r| r.1).collect::<Vec<_>>(), [0, 1]);
    ok(
        b,
        &[
            "replay",
            "-t",
            ORDERS,
            "-o",
            "beginning",
            "--into",
            "tools.copy",
        ],
        "",
    );
    let copied = records(&ok(
        b,
        &["consume", "-t", "tools.copy", "--format", "json"],
        "",
    ));
    let mut values: Vec<&str> = copied.iter().map(|r| r.3.as_str()).collect();
    values.sort();
    let mut expected: Vec<&str> = all.iter().map(|r| r.3.as_str()).collect();
    expected.sort();
    assert_eq!(values, expected);

    // Groups: one made by librdkafka's balanced consumer, listed, described with its lag,
    // reset to the start, deleted.
    let read = librdkafka::consume_in_group(b, "tools.billing", ORDERS);
    assert_eq!(read.len(), 60);
    let groups = ok(b, &["groups", "list"], "");
    assert!(
        groups
            .lines()
            .any(|l| l.split_whitespace().next() == Some("tools.billing")),
        "{groups}"
    );
    let rows = lag(b, "tools.billing", ORDERS);
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert_eq!(rows.values().map(|r| r.1).sum::<i64>(), 60);
    assert!(rows.values().all(|r| r.2 == 0), "all read: {rows:?}");
    ok(
        b,
        &[
            "groups",
            "reset-offsets",
            "--to-earliest",
            "--topic",
            ORDERS,
            "--execute",
            "tools.billing",
        ],
        "",
    );
    let rows = lag(b, "tools.billing", ORDERS);
    assert_eq!(rows.values().map(|r| r.2).sum::<i64>(), 60, "{rows:?}");
    ok(b, &["groups", "delete", "tools.billing"], "");
    let groups = ok(b, &["groups", "list"], "");
    assert!(!groups.contains("tools.billing"), "deleted: {groups}");

    // Dead letters as a retry worker writes them, listed, shown and replayed to their
    // partition (the replays topic is created by the broker on first use).
    let mut args = vec![
        "produce",
        "-t",
        "tools.orders.dlq",
        "-p",
        "3",
        "-H",
        "logd.dlq.original.topic=tools.orders",
        "-H",
        "logd.dlq.original.partition=1",
        "-H",
        "logd.dlq.reason=poison",
    ];
    args.push("-k");
    args.push(":");
    ok(b, &args, "k:dead-1\nk:dead-2\n");
    let dlq = |extra: &[&str]| {
        let mut args = vec!["dlq"];
        args.extend_from_slice(extra);
        ok(b, &args, "")
    };
    let listed = dlq(&["list", "tools.orders.dlq"]);
    assert_eq!(listed.matches("poison").count(), 2, "{listed}");
    let shown = dlq(&[
        "show",
        "tools.orders.dlq",
        "--partition",
        "3",
        "--offset",
        "1",
    ]);
    assert!(shown.contains("value: dead-2"), "{shown}");
    let replayed = dlq(&["replay", "tools.orders.dlq"]);
    assert!(replayed.contains("replayed 2 of 2"), "{replayed}");
    let listed = dlq(&["list", "tools.orders.dlq"]);
    assert_eq!(listed.matches("poison").count(), 0, "{listed}");
    let back = consume(&["-p", "1", "-o", "-2"]);
    let values: Vec<&str> = back.iter().map(|r| r.3.as_str()).collect();
    assert_eq!(values, ["dead-1", "dead-2"]);

    // Deleted: gone from the list once every broker knows.
    for topic in [
        ORDERS,
        "tools.copy",
        "tools.orders.dlq",
        "tools.orders.dlq.replays",
    ] {
        ok(b, &["topics", "delete", topic], "");
    }
    wait_until(
        "every broker forgot the topics",
        Duration::from_secs(15),
        || ours(b).is_empty(),
    );
}
