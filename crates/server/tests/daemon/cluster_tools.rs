//! `logd`'s client subcommands against a Kafka cluster of three brokers (librdkafka's mock
//! cluster, in the test process): bootstrapped from the broker that leads nothing, `produce`
//! puts each keyed record on the partition its key hashes to through that partition's leader,
//! `consume` and `replay` (every partition, one partition, a range, `--into`) read through the
//! leaders, a leader moved between commands is followed, `dlq list|show|replay` keep the
//! dead-letter position in a group coordinated by another broker, and `topics list|describe`
//! gather each partition's offsets from its leader.
//!
//! The mock cluster answers neither CreateTopics, DeleteTopics, ListGroups nor DescribeGroups:
//! `topics create|alter|delete` and `groups` run against three brokers of the test façade in
//! front of a real daemon instead (`cluster_admin.rs`).

use rdkafka::mocking::{MockCluster, MockCoordinator};
use rdkafka::producer::DefaultProducerContext;

use super::logd;

const TOPIC: &str = "orders";
const PARTITIONS: i32 = 6;

/// Three brokers; `orders`, `copy`, `orders.dlq` and its replays topic with six partitions
/// each, led by brokers 1 and 2 (made here as a cluster's administrators would: the mock
/// answers no CreateTopics), and the dead-letter position's group coordinated by broker 3;
/// returns the cluster and the address of broker 3, which leads nothing.
fn cluster() -> (MockCluster<'static, DefaultProducerContext>, String) {
    let mock = MockCluster::new(3).unwrap();
    for topic in [TOPIC, "copy", "orders.dlq", "orders.dlq.replays"] {
        mock.create_topic(topic, PARTITIONS, 1).unwrap();
        for partition in 0..PARTITIONS {
            mock.partition_leader(topic, partition, Some(1 + partition % 2))
                .unwrap();
        }
    }
    // The dead-letter position's group is coordinated by broker 3.
    mock.coordinator(MockCoordinator::Group("logd-dlq-replay".into()), 3)
        .unwrap();
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let client: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", mock.bootstrap_servers())
        .create()
        .unwrap();
    let metadata = client
        .fetch_metadata(None, std::time::Duration::from_secs(10))
        .unwrap();
    let broker3 = metadata.brokers().iter().find(|b| b.id() == 3).unwrap();
    let broker3 = format!("{}:{}", broker3.host(), broker3.port());
    (mock, broker3)
}

/// Records as `logd consume --format json` prints them: (partition, offset, key, value).
pub(super) fn records(out: &str) -> Vec<(u32, i64, String, String)> {
    out.lines()
        .map(|line| {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                r["partition"].as_u64().unwrap() as u32,
                r["offset"].as_i64().unwrap(),
                r["key"].as_str().unwrap_or_default().to_owned(),
                r["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ok(args: &[&str], stdin: &str) -> String {
    let (success, out, err) = logd(args, stdin);
    assert!(success, "logd {args:?}: {err}");
    out
}

#[test]
fn produce_consume_and_replay_go_through_each_partitions_leader_on_a_cluster() {
    let (mock, broker3) = cluster();
    let lines: String = (0..60).map(|i| format!("key-{i}:value-{i}\n")).collect();
    let out = ok(
        &["produce", "--bootstrap", &broker3, "-t", TOPIC, "-k", ":"],
        &lines,
    );
    assert!(out.contains("60 records acknowledged"), "{out}");

    let consume = |extra: &[&str]| {
        let mut args = vec![
            "consume",
            "--bootstrap",
            &broker3,
            "-t",
            TOPIC,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        records(&ok(&args, ""))
    };
    let all = consume(&[]);
    assert_eq!(all.len(), 60);
    for (partition, _, key, value) in &all {
        let expected = (logd_partition::murmur2(key.as_bytes()) as u32 & 0x7fff_ffff) % 6;
        assert_eq!(*partition, expected, "{key} landed on its key's partition");
        assert_eq!(value, &key.replace("key", "value"));
    }
    let per_partition = |p: u32| all.iter().filter(|r| r.0 == p).count();

    // Partition 0's leadership moves to broker 3; the tools follow it.
    mock.partition_leader(TOPIC, 0, Some(3)).unwrap();
    let out = ok(
        &["produce", "--bootstrap", &broker3, "-t", TOPIC, "-p", "0"],
        "after the move\n",
    );
    assert!(out.contains("1 records acknowledged"), "{out}");
    let zero = consume(&["-p", "0", "-o", "-1"]);
    assert_eq!(zero.len(), 1);
    assert_eq!(zero[0].1, per_partition(0) as i64);
    assert_eq!(zero[0].3, "after the move");

    // Replay a range of partition 1, and every partition into another topic.
    let range = records(&ok(
        &[
            "replay",
            "--bootstrap",
            &broker3,
            "-t",
            TOPIC,
            "-p",
            "1",
            "-o",
            "1",
            "--to",
            "3",
            "--format",
            "json",
        ],
        "",
    ));
    let offsets: Vec<i64> = range.iter().map(|r| r.1).collect();
    assert_eq!(offsets, [1, 2]);
    ok(
        &[
            "replay",
            "--bootstrap",
            &broker3,
            "-t",
            TOPIC,
            "-o",
            "beginning",
            "--into",
            "copy",
        ],
        "",
    );
    let copied = records(&ok(
        &[
            "consume",
            "--bootstrap",
            &broker3,
            "-t",
            "copy",
            "--format",
            "json",
        ],
        "",
    ));
    assert_eq!(copied.len(), 61);
    let mut values: Vec<&str> = copied.iter().map(|r| r.3.as_str()).collect();
    values.sort();
    let mut expected: Vec<&str> = all.iter().map(|r| r.3.as_str()).collect();
    expected.push("after the move");
    expected.sort();
    assert_eq!(values, expected);

    // Two dead letters of partition 1, as a retry worker writes them (the headers that say
    // where they came from and why), listed, shown and replayed to their partition.
    let headers = [
        "-H",
        "logd.dlq.original.topic=orders",
        "-H",
        "logd.dlq.original.partition=1",
        "-H",
        "logd.dlq.reason=poison",
    ];
    let mut args = vec![
        "produce",
        "--bootstrap",
        &broker3,
        "-t",
        "orders.dlq",
        "-p",
        "4",
    ];
    args.extend_from_slice(&headers);
    ok(&args, "dead-1\ndead-2\n");
    let dlq = |extra: &[&str]| {
        let mut args = vec!["dlq", "--bootstrap", &broker3];
        args.extend_from_slice(extra);
        ok(&args, "")
    };
    let listed = dlq(&["list", "orders.dlq"]);
    assert_eq!(listed.matches("poison").count(), 2, "{listed}");
    let shown = dlq(&["show", "orders.dlq", "--partition", "4", "--offset", "1"]);
    assert!(shown.contains("value: dead-2"), "{shown}");
    let replayed = dlq(&["replay", "orders.dlq"]);
    assert!(replayed.contains("replayed 2 of 2"), "{replayed}");
    let listed = dlq(&["list", "orders.dlq"]);
    assert_eq!(listed.matches("poison").count(), 0, "{listed}");
    // `topics list` and `describe` (offsets from each leader; the mock cluster serves neither
    // DescribeLogDirs, DescribeProducers nor DescribeConfigs, so sizes show as unknown and
    // configs as not available).
    let listed = ok(&["topics", "--bootstrap", &broker3, "list"], "");
    assert_eq!(listed, "copy\norders\norders.dlq\norders.dlq.replays\n");
    let described = ok(&["topics", "--bootstrap", &broker3, "describe", TOPIC], "");
    assert!(
        described.starts_with("topic orders: 6 partitions"),
        "{described}"
    );
    assert!(described.contains("configs: not available"), "{described}");
    let rows: Vec<&str> = described
        .lines()
        .skip(2)
        .filter(|l| {
            l.split('\t')
                .next()
                .is_some_and(|p| p.parse::<u32>().is_ok())
        })
        .collect();
    assert_eq!(rows.len(), 6, "{described}");
    let total: i64 = rows
        .iter()
        .map(|row| {
            let fields: Vec<&str> = row.split('\t').collect();
            assert_eq!(fields[3], "-", "{row}");
            fields[2].parse::<i64>().unwrap() - fields[1].parse::<i64>().unwrap()
        })
        .sum();
    assert_eq!(
        total,
        61 + 2,
        "every record produced, the two replayed letters with them"
    );
    let one = consume(&["-p", "1", "-o", "-2"]);
    let values: Vec<&str> = one.iter().map(|r| r.3.as_str()).collect();
    assert_eq!(values, ["dead-1", "dead-2"]);
}
