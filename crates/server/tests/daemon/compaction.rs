//! A compacted topic through the Kafka protocol: created with `cleanup.policy=compact` by
//! `logd topics create`, described by `logd topics describe` (which says the active segment is
//! never cleaned and shows each partition's clean, cleanable and active ranges), the console's API and confluent-kafka's admin client as Kafka would
//! describe it, written by librdkafka, cleaned by the daemon's cleaner thread, and read back from the
//! beginning by librdkafka: each key's latest value at its offset, the consumer carried across
//! what the cleaning removed. A record without a key is refused with INVALID_RECORD. Tombstones
//! produced by confluent-kafka reach a fresh consumer at their offsets (before their delete
//! horizon) while the values they deleted are gone; bad compaction configs are refused with
//! INVALID_CONFIG and change nothing. A daemon killed (SIGKILL) three times while its slowed
//! cleaner works reopens with each key's latest value at its offset.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::Offset;

use super::metrics::get;
use super::{Daemon, librdkafka, logd, python, wait_until};

const DESCRIBE: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, ConfigResource
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
resource = ConfigResource("topic", "table")
configs = admin.describe_configs([resource])[resource].result()
for name in ["cleanup.policy", "min.cleanable.dirty.ratio", "delete.retention.ms", "max.compaction.lag.ms"]:
    entry = configs[name]
    print(name, entry.value, "default" if entry.is_default else "set")
"#;

/// Creates `table`, one partition, compacted, with these segment size and dirty ratio.
fn create_table(addr: &str, segment_bytes: &str, dirty_ratio: &str) {
    let segment = format!("segment.bytes={segment_bytes}");
    let ratio = format!("min.cleanable.dirty.ratio={dirty_ratio}");
    let (ok, _, err) = logd(
        &[
            "topics",
            "--bootstrap",
            addr,
            "create",
            "table",
            "--partitions",
            "1",
            "--config",
            "cleanup.policy=compact",
            "--config",
            &segment,
            "--config",
            &ratio,
        ],
        "",
    );
    assert!(ok, "{err}");
}

/// The partition's size on disk, from `logd topics describe` (its first table).
fn size(addr: &str) -> u64 {
    let (ok, out, err) = logd(&["topics", "--bootstrap", addr, "describe", "table"], "");
    assert!(ok, "{err}");
    out.lines()
        .take_while(|l| !l.starts_with("cleaner ranges"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            f[0].parse::<u32>()
                .ok()
                .map(|_| f[3].parse::<u64>().unwrap())
        })
        .sum()
}

#[test]
fn a_compacted_topic_keeps_each_keys_latest_value_for_kafka_clients() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &[
            "--cleaner-backoff-ms",
            "100",
            "--http-listen",
            "127.0.0.1:0",
        ],
    );
    let addr = daemon.addr.as_str();
    create_table(addr, "32768", "0.1");
    let (ok, shown, err) = logd(&["topics", "--bootstrap", addr, "describe", "table"], "");
    assert!(ok, "{err}");
    assert!(shown.contains("cleanup.policy=compact"), "{shown}");
    assert!(
        shown.contains("the active segment (the last, still written to) is never cleaned"),
        "{shown}"
    );
    // The console's topic page shows the policy, marked as not the default.
    let http = daemon.metrics.clone().unwrap();
    let (_, body) = get(&http, "/api/v1/topics/table");
    let topic: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(topic["config"]["cleanup.policy"], "compact", "{topic}");
    assert_eq!(
        topic["non_default"],
        serde_json::json!([
            "cleanup.policy",
            "min.cleanable.dirty.ratio",
            "segment.bytes"
        ]),
        "{topic}"
    );
    let described = python(DESCRIBE, addr);
    assert!(
        described.contains("cleanup.policy compact set"),
        "{described}"
    );
    assert!(
        described.contains("min.cleanable.dirty.ratio 0.1 set"),
        "{described}"
    );
    assert!(
        described.contains("delete.retention.ms 86400000 default"),
        "{described}"
    );
    assert!(
        described.contains("max.compaction.lag.ms 9223372036854775807 default"),
        "{described}"
    );

    // 2,000 records of about 100 bytes over 20 keys, in ten rounds (each a batch or a few,
    // smaller than a segment).
    let pad = "x".repeat(100);
    let mut latest = BTreeMap::new();
    for round in 0..10 {
        let lines: Vec<String> = (round * 200..(round + 1) * 200)
            .map(|i| format!("k{}:v{i}-{pad}", i % 20))
            .collect();
        let placed = librdkafka::produce(addr, "table", "none", &lines);
        for (line, (_, offset)) in lines.iter().zip(&placed) {
            let (key, value) = line.split_once(':').unwrap();
            latest.insert(key.to_owned(), (*offset, value.to_owned()));
        }
    }
    // What was written, at least (the cleaner may have started meanwhile).
    let written: u64 = 2_000 * (pad.len() as u64 + 8);
    wait_until(
        "the cleaner compacted the topic",
        Duration::from_secs(30),
        || size(addr) < written / 4,
    );
    // One per key from the cleaned segments, and the active segment's (up to 32 KiB, about
    // 280 records), which is never cleaned. A segment rolled while the size was awaited may
    // still be being cleaned, so read until the cleaner has caught up.
    let mut read = Vec::new();
    wait_until(
        "one record per key is left outside the active segment",
        Duration::from_secs(30),
        || {
            read = librdkafka::consume(addr, "table", Offset::Beginning);
            read.len() < 20 + 300
        },
    );

    // The cleaner's work shows in /metrics (counted as a cleaning ends, just after its
    // segments are swapped in).
    let mut metrics = String::new();
    wait_until(
        "the cleaner's removals are counted",
        Duration::from_secs(30),
        || {
            metrics = get(&http, "/metrics").1;
            let removed: f64 = metrics
                .lines()
                .find_map(|l| l.strip_prefix("logd_cleaner_records_removed_total "))
                .unwrap_or_else(|| panic!("{metrics}"))
                .parse()
                .unwrap();
            removed >= 1_500.0
        },
    );
    assert!(
        metrics.contains("logd_cleaner_failures_total 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("logd_cleaner_uncleanable_partitions 0"),
        "{metrics}"
    );
    // Per partition: its dirty ratio, when it was last cleaned, what its cleanings freed.
    let labels = r#"{topic="table",partition="0"}"#;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}{labels} ")))
            .unwrap_or_else(|| panic!("{name}: {metrics}"))
            .parse()
            .unwrap()
    };
    assert!(value("logd_cleaner_reclaimed_bytes") > 100_000.0);
    assert!(value("logd_cleaner_last_cleaned_timestamp_seconds") > 1.7e9);
    assert!((0.0..=1.0).contains(&value("logd_cleaner_dirty_ratio")));

    // The console shows where the active segment starts and how far the partition is clean.
    let (_, body) = get(&http, "/api/v1/topics/table");
    let topic: serde_json::Value = serde_json::from_str(&body).unwrap();
    let partition = &topic["partitions"][0];
    let (active, cleaned) = (
        partition["active_from"].as_i64().unwrap(),
        partition["cleaned_up_to"].as_i64().unwrap(),
    );
    let cleanable = partition["cleanable_end"].as_i64().unwrap();
    assert!(
        0 < cleaned && cleaned <= cleanable && cleanable <= active && active < 2_000,
        "{partition}"
    );
    // `logd topics describe` shows the same ranges (logd's own DescribePartitionRanges).
    let (ok, described, err) = logd(&["topics", "--bootstrap", addr, "describe", "table"], "");
    assert!(ok, "{err}");
    let row: Vec<&str> = described
        .lines()
        .skip_while(|l| !l.starts_with("partition\tclean\tcleanable\ttoo_new\tactive"))
        .nth(1)
        .unwrap_or_else(|| panic!("{described}"))
        .split('\t')
        .collect();
    assert_eq!(
        row[..2],
        ["0".to_owned(), format!("0..{cleaned}")],
        "{described}"
    );
    assert!(row[4].starts_with(&format!("{active}..")), "{described}");

    let mut last_seen = BTreeMap::new();
    for record in &read {
        last_seen.insert(
            record.key.clone().unwrap(),
            (record.offset, record.value.clone()),
        );
    }
    assert_eq!(last_seen, latest, "each key's latest value at its offset");

    // A record without a key: refused, as Kafka refuses it on a compacted topic.
    let (ok, _, err) = logd(
        &["produce", "--bootstrap", addr, "-t", "table"],
        "no key here\n",
    );
    assert!(!ok, "a keyless record was taken");
    assert!(err.contains("INVALID_RECORD"), "{err}");
}

const TOMBSTONES: &str = r#"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
for key in ["k0", "k1"]:
    p.produce("table", key=key, value=None)
p.flush(20)
"#;

const READ_ALL: &str = r#"
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "fresh", "enable.auto.commit": False,
              "enable.partition.eof": True})
c.assign([TopicPartition("table", 0, 0)])
while True:
    m = c.poll(10)
    if m is None or (m.error() and m.error().code() == -191):
        break
    print(m.offset(), m.key().decode(), "TOMBSTONE" if m.value() is None else m.value().decode())
"#;

#[test]
fn tombstones_reach_a_fresh_consumer_and_bad_compaction_configs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--cleaner-backoff-ms", "100"]);
    let addr = daemon.addr.as_str();
    let topics = |args: &[&str]| {
        let mut all = vec!["topics", "--bootstrap", addr];
        all.extend_from_slice(args);
        logd(&all, "")
    };
    // Bad configs: Kafka's INVALID_CONFIG, nothing created or changed.
    for bad in [
        "cleanup.policy=shred",
        "delete.retention.ms=-1",
        "min.cleanable.dirty.ratio=2",
    ] {
        let (ok, _, err) = topics(&["create", "table", "--config", bad]);
        assert!(!ok && err.contains("invalid topic config"), "{bad}: {err}");
    }
    let (_, listed, _) = topics(&["list"]);
    assert!(!listed.contains("table"), "{listed}");
    create_table(addr, "4096", "0.01");
    let (ok, _, err) = topics(&["alter", "table", "--config", "delete.retention.ms=-5"]);
    assert!(!ok && err.contains("invalid topic config"), "{err}");

    // Values for k0..k4, then tombstones for k0 and k1, then enough to seal them in.
    let lines: Vec<String> = (0..5).map(|i| format!("k{i}:first-{i}")).collect();
    librdkafka::produce(addr, "table", "none", &lines);
    python(TOMBSTONES, addr);
    let filler: Vec<String> = (0..200)
        .map(|i| format!("k{}:later-{i}-{}", 2 + i % 3, "y".repeat(60)))
        .collect();
    for chunk in filler.chunks(40) {
        librdkafka::produce(addr, "table", "none", chunk);
    }
    wait_until(
        "the cleaner dropped the older values",
        Duration::from_secs(30),
        || {
            let read = python(READ_ALL, addr);
            !read.contains("first-0") && !read.contains("first-2")
        },
    );
    let read = python(READ_ALL, addr);
    // The tombstones stay (delete.retention.ms is a day), at their offsets 5 and 6; the
    // values they deleted are gone.
    assert!(read.lines().any(|l| l == "5 k0 TOMBSTONE"), "{read}");
    assert!(read.lines().any(|l| l == "6 k1 TOMBSTONE"), "{read}");
    for gone in ["first-0", "first-1", "first-3", "first-4"] {
        assert!(!read.contains(gone), "{gone} was superseded: {read}");
    }
}

#[test]
fn a_daemon_killed_while_it_cleans_reopens_with_each_keys_latest_value() {
    let dir = tempfile::tempdir().unwrap();
    // A slow cleaner (1 MB/s), so the kills land inside its passes.
    let args = [
        "--cleaner-backoff-ms",
        "10",
        "--cleaner-io-max-bytes-per-sec",
        "1000000",
    ];
    let daemon = Daemon::start(dir.path(), &args);
    let addr = daemon.addr.clone();
    create_table(&addr, "65536", "0.01");
    let pad = "z".repeat(200);
    let mut latest = BTreeMap::new();
    for round in 0..20 {
        let lines: Vec<String> = (round * 100..(round + 1) * 100)
            .map(|i| format!("k{}:v{i}-{pad}", i % 50))
            .collect();
        for (line, (_, offset)) in lines
            .iter()
            .zip(librdkafka::produce(&addr, "table", "none", &lines))
        {
            let (key, value) = line.split_once(':').unwrap();
            latest.insert(key.to_owned(), (offset, value.to_owned()));
        }
    }
    let mut daemon = Some(daemon);
    // Killed three times at different moments of its cleaning, reopened on the same port.
    for pause in [150, 400, 700] {
        std::thread::sleep(Duration::from_millis(pause));
        daemon.take().unwrap().kill();
        daemon = Some(Daemon::start_on(dir.path(), &addr, &args));
    }
    let read = librdkafka::consume(&addr, "table", Offset::Beginning);
    let mut last_seen = BTreeMap::new();
    for record in &read {
        last_seen.insert(
            record.key.clone().unwrap(),
            (record.offset, record.value.clone()),
        );
    }
    assert_eq!(last_seen, latest, "each key's latest value, at its offset");
}
