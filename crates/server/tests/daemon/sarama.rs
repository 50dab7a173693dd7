//! Go's sarama 1.22 (Kafka protocol 2.0, as Debian packages it) against a real daemon: it
//! creates a topic, produces, consumes in a group of two and resumes where the group left off.
//! Its batches state a max timestamp of -1, which logd refused as corrupt until it set the max
//! timestamp as Kafka's `LogValidator` does; `/metrics` counts those rewrites. The client sets
//! an offset retention, as a sarama 1.22 user must against Kafka 4: without one it commits with
//! OffsetCommit v1, which Kafka 4.0 dropped (KIP-896) and logd does not serve either.

use std::collections::BTreeMap;
use std::process::Command;

use super::Daemon;
use super::metrics::scrape;

/// Runs the sarama client with `args`; its stdout.
fn sarama(args: &[&str]) -> String {
    let output = Command::new(super::go_clients::sarama())
        .args(args)
        .output()
        .expect("run the sarama client");
    assert!(
        output.status.success(),
        "sarama {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The records a consume printed: (partition, offset) to (member, key, value).
fn records(out: &str) -> BTreeMap<(i32, i64), (u32, String, String)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("record "))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                (f[1].parse().unwrap(), f[2].parse().unwrap()),
                (f[0].parse().unwrap(), f[3].to_owned(), f[4].to_owned()),
            )
        })
        .collect()
}

/// The values of `records`, sorted.
fn values(records: &BTreeMap<(i32, i64), (u32, String, String)>) -> Vec<String> {
    let mut values: Vec<String> = records.values().map(|(_, _, v)| v.clone()).collect();
    values.sort();
    values
}

fn expected(from: u32, count: u32) -> Vec<String> {
    let mut values: Vec<String> = (from..from + count).map(|i| format!("v{i}")).collect();
    values.sort();
    values
}

#[test]
fn sarama_produces_consumes_in_a_group_of_two_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let b = daemon.addr.as_str();
    assert_eq!(
        sarama(&["produce", b, "orders", "3", "0", "300"]),
        "produced 300\n"
    );
    let metrics = scrape(daemon.metrics.as_deref().unwrap());
    let normalized = metrics[r#"logd_batches_normalized_total{topic="orders"}"#];
    assert!(
        normalized >= 1.0,
        "sarama's batches were normalised: {normalized}"
    );

    let first = records(&sarama(&["consume", b, "billing", "orders", "2", "300"]));
    assert_eq!(values(&first), expected(0, 300), "every record, once");
    for ((_, _), (_, key, value)) in &first {
        assert_eq!(key[1..], value[1..], "{key} carries {value}");
    }

    // The group resumes after what it committed: only the new records come.
    assert_eq!(
        sarama(&["produce", b, "orders", "3", "300", "100"]),
        "produced 100\n"
    );
    let second = records(&sarama(&["consume", b, "billing", "orders", "2", "100"]));
    assert_eq!(values(&second), expected(300, 100));
    assert!(
        second.keys().all(|place| !first.contains_key(place)),
        "nothing read twice"
    );
    let members: std::collections::BTreeSet<u32> = first.values().map(|(m, _, _)| *m).collect();
    assert_eq!(members.len(), 2, "both members of the group got partitions");
}
