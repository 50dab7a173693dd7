//! Admin and group behaviours as Kafka 4.x has them, through confluent-kafka's AdminClient and
//! consumer (librdkafka 2.16) and `logd topics alter`: a topic created with the broker's
//! default partition count (KIP-464, which librdkafka sends only to brokers serving CreateTopics
//! v4+), partitions added and seen by a subscribed consumer, topic configs altered
//! incrementally and described back, and consumer groups listed by state and described with
//! the state Kafka reports.

use super::{Daemon, logd, python_script};

const ADMIN: &str = r#"
import sys, time
from confluent_kafka import Consumer, Producer, KafkaException, KafkaError, ConsumerGroupState
from confluent_kafka.admin import (AdminClient, NewTopic, NewPartitions, ConfigResource,
    ConfigEntry, AlterConfigOpType, ResourceType)
addr = sys.argv[1]
a = AdminClient({"bootstrap.servers": addr})

# KIP-464: no partition count, no replication factor.
for t, f in a.create_topics([NewTopic("defaults")]).items():
    f.result()
print("PARTITIONS", len(a.list_topics(timeout=10).topics["defaults"].partitions))

# More partitions; a count that does not grow is refused, validate_only changes nothing.
a.create_partitions([NewPartitions("defaults", 5)])["defaults"].result()
try:
    a.create_partitions([NewPartitions("defaults", 4)])["defaults"].result()
    print("SHRINK accepted")
except KafkaException as e:
    print("SHRINK", e.args[0].name())
a.create_partitions([NewPartitions("defaults", 9)], validate_only=True)["defaults"].result()
print("GROWN", len(a.list_topics(timeout=10).topics["defaults"].partitions))

# Incremental config changes, described back.
resource = ConfigResource(ResourceType.TOPIC, "defaults", incremental_configs=[
    ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
for r, f in a.incremental_alter_configs([resource]).items():
    f.result()
configs = a.describe_configs([ConfigResource(ResourceType.TOPIC, "defaults")])
for r, f in configs.items():
    entry = f.result()["retention.ms"]
    print("RETENTION", entry.value, entry.source)
bad = ConfigResource(ResourceType.TOPIC, "defaults", incremental_configs=[
    ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
try:
    a.incremental_alter_configs([bad])[bad].result()
    print("BAD accepted")
except KafkaException as e:
    print("BAD", e.args[0].name())

# A subscribed consumer sees partitions added while it runs.
for t, f in a.create_topics([NewTopic("grow", num_partitions=1)]).items():
    f.result()
c = Consumer({"bootstrap.servers": addr, "group.id": "growers",
    "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500})
c.subscribe(["grow"])
deadline = time.time() + 20
while not c.assignment() and time.time() < deadline:
    c.poll(0.2)
a.create_partitions([NewPartitions("grow", 3)])["grow"].result()
p = Producer({"bootstrap.servers": addr, "topic.metadata.refresh.interval.ms": 500})
seen = None
while seen is None and time.time() < deadline:
    p.produce("grow", b"to the new partition", partition=2) if len(p.list_topics("grow", timeout=5).topics["grow"].partitions) == 3 else None
    p.flush(5)
    m = c.poll(0.5)
    if m is not None and not m.error():
        seen = m.partition()
print("NEW PARTITION", seen)
c.close()

# An empty group: listed and described as Empty, filtered by state.
c = Consumer({"bootstrap.servers": addr, "group.id": "idle", "auto.offset.reset": "earliest"})
c.subscribe(["grow"])
deadline = time.time() + 20
while time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and not m.error():
        c.commit(m, asynchronous=False)
        break
c.close()
empty = a.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result()
print("EMPTY", sorted(g.group_id for g in empty.valid))
stable = a.list_consumer_groups(states={ConsumerGroupState.STABLE}).result()
print("STABLE", sorted(g.group_id for g in stable.valid))
for g, f in a.describe_consumer_groups(["idle"]).items():
    print("DESCRIBED", g, f.result().state)
"#;

#[test]
fn confluent_kafkas_admin_client_creates_grows_alters_and_lists_as_on_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--default-partitions", "3"]);
    let out = python_script(ADMIN, &[&daemon.addr])
        .output()
        .expect("python3");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for expected in [
        "PARTITIONS 3",
        "SHRINK INVALID_PARTITIONS",
        "GROWN 5",
        // Source 1: DYNAMIC_TOPIC_CONFIG, set on the topic.
        "RETENTION 3600000 1",
        "BAD INVALID_CONFIG",
        "NEW PARTITION 2",
        "EMPTY ['growers', 'idle']",
        "STABLE []",
        "DESCRIBED idle ConsumerGroupState.EMPTY",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected:?} missing:\n{stdout}\n{stderr}"
        );
    }
}

/// The partition lines of `logd topics describe`.
fn partitions(described: &str) -> usize {
    described
        .lines()
        .filter(|l| {
            l.split('\t')
                .next()
                .is_some_and(|p| p.parse::<u32>().is_ok())
        })
        .count()
}

#[test]
fn logd_topics_alter_grows_a_topic_and_changes_its_configs() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let topics = |args: &[&str]| {
        let mut all = vec!["topics"];
        all.extend_from_slice(args);
        all.extend(["--bootstrap", &daemon.addr]);
        logd(&all, "")
    };
    let (ok, _, err) = topics(&["create", "orders", "--partitions", "2"]);
    assert!(ok, "{err}");
    let (ok, out, err) = topics(&[
        "alter",
        "orders",
        "--partitions",
        "4",
        "--config",
        "retention.ms=60000",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "topic orders now has 4 partitions\ntopic orders: configs altered\n"
    );
    let (ok, out, _) = topics(&["describe", "orders"]);
    assert!(ok);
    assert_eq!(partitions(&out), 4, "{out}");
    // Shrinking, an unknown config, a bad value: refused with the broker's reason.
    let (ok, _, err) = topics(&["alter", "orders", "--partitions", "3"]);
    assert!(
        !ok && err
            .contains("Topic currently has 4 partitions, which is higher than the requested 3."),
        "{err}"
    );
    let (ok, _, err) = topics(&["alter", "orders", "--config", "flush.ms=1"]);
    assert!(
        !ok && err.contains("unsupported topic config flush.ms"),
        "{err}"
    );
    let (ok, _, err) = topics(&["alter", "orders", "--config", "segment.bytes=10"]);
    assert!(!ok && err.contains("segment"), "{err}");
    let (ok, _, err) = topics(&["alter", "orders"]);
    assert!(!ok && err.contains("nothing to change"), "{err}");
    // Back to the default, and the change survives a restart.
    let (ok, _, err) = topics(&["alter", "orders", "--delete-config", "retention.ms"]);
    assert!(ok, "{err}");
    let (ok, _, err) = topics(&["alter", "orders", "--config", "retention.bytes=1048576"]);
    assert!(ok, "{err}");
    drop(daemon);
    let daemon = Daemon::start(dir.path(), &[]);
    let log = daemon.addr.clone();
    let (ok, out, err) = logd(&["topics", "describe", "orders", "--bootstrap", &log], "");
    assert!(ok, "{err}");
    assert_eq!(partitions(&out), 4, "{out}");
}
