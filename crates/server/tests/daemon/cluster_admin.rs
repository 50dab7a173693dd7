//! `logd topics` and `logd groups` against a cluster of three brokers (the test façade of
//! `cluster_facade.rs` over a real daemon), bootstrapped from the broker that leads,
//! coordinates and controls nothing: topic creation, new partitions and deletion reach the
//! controller, the group calls reach the group's coordinator, `groups list` asks every broker
//! (only the coordinator knows the group), and no request reaches a broker that would refuse it.

use std::collections::BTreeMap;

use kafka_protocol::messages::{ApiKey, DescribeGroupsRequest, GroupId};
use kafka_protocol::protocol::StrBytes;

use super::cluster_facade::{BYSTANDER, Facade};
use super::{Daemon, librdkafka, logd, write_request};

pub(super) fn ok(bootstrap: &str, args: &[&str], stdin: &str) -> String {
    let mut all = vec![args[0], "--bootstrap", bootstrap];
    all.extend_from_slice(&args[1..]);
    let (success, out, err) = logd(&all, stdin);
    assert!(success, "logd {all:?}: {err}");
    out
}

/// Per partition of `topic`: (committed, log end, lag) from `logd groups describe`.
pub(super) fn lag(bootstrap: &str, group: &str, topic: &str) -> BTreeMap<u32, (i64, i64, i64)> {
    ok(bootstrap, &["groups", "describe", group], "")
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(topic))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f[i].parse::<i64>().unwrap();
            (f[1].parse().unwrap(), (n(2), n(3), n(4)))
        })
        .collect()
}

#[test]
fn topics_and_groups_reach_the_controller_and_the_coordinator_of_a_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--group-initial-rebalance-delay-ms", "0"]);
    let cluster = Facade::start(&daemon.addr);
    let bootstrap = cluster.broker(BYSTANDER);

    // Topics: created with four partitions, grown to six, described from each leader.
    let out = ok(
        bootstrap,
        &["topics", "create", "orders", "--partitions", "4"],
        "",
    );
    assert!(out.contains("orders"), "{out}");
    ok(
        bootstrap,
        &["topics", "alter", "orders", "--partitions", "6"],
        "",
    );
    let lines: String = (0..60).map(|i| format!("key-{i}:value-{i}\n")).collect();
    let out = ok(bootstrap, &["produce", "-t", "orders", "-k", ":"], &lines);
    assert!(out.contains("60 records acknowledged"), "{out}");
    let listed = ok(bootstrap, &["topics", "list"], "");
    assert!(listed.lines().any(|l| l.starts_with("orders")), "{listed}");
    let described = ok(bootstrap, &["topics", "describe", "orders"], "");
    // partition, log start, log end, size: each partition's offsets from its leader.
    let ends: Vec<i64> = described
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            f[0].parse::<u32>().ok().map(|_| f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(ends.len(), 6, "six partitions: {described}");
    assert_eq!(ends.iter().sum::<i64>(), 60, "{described}");

    // A group made by librdkafka's balanced consumer (its own routing, through the same
    // brokers): it reads all sixty and commits at its coordinator.
    let read = librdkafka::consume_in_group(bootstrap, "billing", "orders");
    assert_eq!(read.len(), 60);
    for record in &read {
        let key = record.key.as_deref().unwrap();
        let expected = (logd_partition::murmur2(key.as_bytes()) & 0x7fff_ffff) as u32 % 6;
        assert_eq!(
            record.partition as u32, expected,
            "{key} on its key's partition of six"
        );
    }

    // Groups: listed (only broker 1 lists it), described with its lag, reset, deleted.
    let groups = ok(bootstrap, &["groups", "list"], "");
    assert!(
        groups
            .lines()
            .any(|l| l.split_whitespace().next() == Some("billing")),
        "the coordinator's group is listed: {groups}"
    );
    let rows = lag(bootstrap, "billing", "orders");
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert_eq!(rows.values().map(|r| r.1).sum::<i64>(), 60);
    assert!(rows.values().all(|r| r.2 == 0), "all read: {rows:?}");
    ok(
        bootstrap,
        &[
            "groups",
            "reset-offsets",
            "--to-earliest",
            "--topic",
            "orders",
            "--execute",
            "billing",
        ],
        "",
    );
    let rows = lag(bootstrap, "billing", "orders");
    assert_eq!(rows.values().map(|r| r.2).sum::<i64>(), 60, "{rows:?}");
    ok(bootstrap, &["groups", "delete", "billing"], "");
    let groups = ok(bootstrap, &["groups", "list"], "");
    assert!(!groups.contains("billing"), "deleted: {groups}");

    ok(bootstrap, &["topics", "delete", "orders"], "");
    let listed = ok(bootstrap, &["topics", "list"], "");
    assert!(!listed.contains("orders"), "deleted: {listed}");

    assert_eq!(
        cluster.misroutes(),
        Vec::<String>::new(),
        "every request reached the broker that answers it on a cluster"
    );

    // The façade does notice a request at the wrong broker.
    let mut stream = std::net::TcpStream::connect(bootstrap).unwrap();
    let mut request = DescribeGroupsRequest::default();
    request.groups = vec![GroupId(StrBytes::from_static_str("billing"))];
    write_request(&mut stream, ApiKey::DescribeGroups, 5, 1, &request);
    let mut size = [0u8; 4];
    std::io::Read::read_exact(&mut stream, &mut size).unwrap();
    assert_eq!(cluster.misroutes().len(), 1, "{:?}", cluster.misroutes());
}
