//! Admin and group behaviours as Kafka 4.x has them, through confluent-kafka's AdminClient and
//! consumer (librdkafka 2.16) and `logd topics alter`: a topic created with the broker's
//! default partition count (KIP-464, which librdkafka sends only to brokers serving CreateTopics
//! v4+), partitions added and seen by a subscribed consumer, topic configs altered
//! incrementally and described back, group configs set and described (GROUP resources), and
//! consumer groups listed by state and described with the state Kafka reports.

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

# Group configs (GROUP resources, type 32), which need no group yet.
group = ConfigResource(ResourceType.GROUP, "workers", incremental_configs=[
    ConfigEntry("share.record.lock.duration.ms", "20000", incremental_operation=AlterConfigOpType.SET),
    ConfigEntry("share.delivery.count.limit", "4", incremental_operation=AlterConfigOpType.SET)])
for r, f in a.incremental_alter_configs([group]).items():
    f.result()
for r, f in a.describe_configs([ConfigResource(ResourceType.GROUP, "workers")]).items():
    e = f.result()
    print("GROUP CONFIGS", e["share.record.lock.duration.ms"].value, e["share.record.lock.duration.ms"].source,
        e["share.delivery.count.limit"].value, e["share.isolation.level"].value, e["share.isolation.level"].source)
bad = ConfigResource(ResourceType.GROUP, "workers", incremental_configs=[
    ConfigEntry("share.delivery.count.limit", "11", incremental_operation=AlterConfigOpType.SET)])
try:
    a.incremental_alter_configs([bad])[bad].result()
    print("BAD GROUP CONFIG accepted")
except KafkaException as e:
    print("BAD GROUP CONFIG", e.args[0].name(), e.args[0].str())

# The legacy AlterConfigs replaces the group's whole set, as on Kafka 4.4.
legacy = ConfigResource(ResourceType.GROUP, "workers", set_config={"share.delivery.count.limit": "5"})
a.alter_configs([legacy])[legacy].result()
for r, f in a.describe_configs([ConfigResource(ResourceType.GROUP, "workers")]).items():
    print("GROUP SET", sorted((k, v.value) for k, v in f.result().items() if v.source == 8))

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

# The group's offsets through the admin client (OffsetFetch as librdkafka 2.x sends it), all
# partitions and named ones.
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
for g, f in a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("idle")]).items():
    print("OFFSETS", g, sorted((p.topic, p.partition, p.offset) for p in f.result().topic_partitions))
named = ConsumerGroupTopicPartitions("idle", [TopicPartition("grow", 0), TopicPartition("grow", 2)])
for g, f in a.list_consumer_group_offsets([named]).items():
    print("NAMED", g, sorted((p.topic, p.partition, p.offset) for p in f.result().topic_partitions))
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
        // Source 8: GROUP_CONFIG, set on the group; 5: the default.
        "GROUP CONFIGS 20000 8 4 read_uncommitted 5",
        "BAD GROUP CONFIG INVALID_CONFIG share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        "GROUP SET [('share.delivery.count.limit', '5')]",
        "NEW PARTITION 2",
        "EMPTY ['growers', 'idle']",
        "STABLE []",
        "DESCRIBED idle ConsumerGroupState.EMPTY",
        // The one record `idle` read was on partition 2 at offset 0: it committed 1.
        "OFFSETS idle [('grow', 2, 1)]",
        "NAMED idle [('grow', 0, -1001), ('grow', 2, 1)]",
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
    let (ok, _, err) = topics(&["alter", "orders", "--config", "bogus.config=1"]);
    assert!(
        !ok && err.contains("unsupported topic config bogus.config"),
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

/// A cooperative-sticky consumer subscribed by pattern: a new matching topic is assigned, and
/// a deleted one revoked, within a few metadata refreshes, long before the session (45 s) or
/// rebalance (300 s) timeouts a client falls back on.
const PATTERN: &str = r#"
import sys, time
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
addr = sys.argv[1]
a = AdminClient({"bootstrap.servers": addr})
a.create_topics([NewTopic("events.a", num_partitions=2)])["events.a"].result()
owned = set()
def on_assign(c, parts):
    owned.update((p.topic, p.partition) for p in parts)
def on_revoke(c, parts):
    owned.difference_update((p.topic, p.partition) for p in parts)
c = Consumer({"bootstrap.servers": addr, "group.id": "pattern",
    "partition.assignment.strategy": "cooperative-sticky",
    "topic.metadata.refresh.interval.ms": 1000, "auto.offset.reset": "earliest"})
c.subscribe(["^events\\..*"], on_assign=on_assign, on_revoke=on_revoke)
def wait(cond, limit=60):
    t0 = time.time()
    while not cond() and time.time() - t0 < limit:
        c.poll(0.1)
    return time.time() - t0
wait(lambda: ("events.a", 1) in owned)
a.create_topics([NewTopic("events.b", num_partitions=2)])["events.b"].result()
print("ADDED %.1f" % wait(lambda: {("events.b", 0), ("events.b", 1)} <= owned))
a.delete_topics(["events.b"])["events.b"].result()
print("REMOVED %.1f" % wait(lambda: not any(t == "events.b" for t, _ in owned)))
print("KEPT", sorted(owned))
c.close()
"#;

/// Two cooperative-sticky members subscribed to two topics by name; one topic is deleted:
/// both give up its partitions within a few metadata refreshes and keep the other's.
const DELETED: &str = r#"
import sys, time
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
addr = sys.argv[1]
a = AdminClient({"bootstrap.servers": addr})
for t in ["gone", "stays"]:
    a.create_topics([NewTopic(t, num_partitions=2)])[t].result()
def member():
    owned = set()
    def on_assign(c, parts):
        owned.update((p.topic, p.partition) for p in parts)
    def on_revoke(c, parts):
        owned.difference_update((p.topic, p.partition) for p in parts)
    c = Consumer({"bootstrap.servers": addr, "group.id": "deleted",
        "partition.assignment.strategy": "cooperative-sticky",
        "topic.metadata.refresh.interval.ms": 1000, "auto.offset.reset": "earliest"})
    c.subscribe(["gone", "stays"], on_assign=on_assign, on_revoke=on_revoke)
    return c, owned
(c1, o1), (c2, o2) = member(), member()
def spin(cond, limit=60):
    t0 = time.time()
    while not cond() and time.time() - t0 < limit:
        c1.poll(0.05)
        c2.poll(0.05)
    return time.time() - t0
spin(lambda: len(o1) + len(o2) == 4 and o1 and o2)
a.delete_topics(["gone"])["gone"].result()
print("REMOVED %.1f" % spin(lambda: not any(t == "gone" for t, _ in o1 | o2)))
print("KEPT", sorted(o1 | o2))
"#;

/// Static members (`group.instance.id`): one joining a running group, one coming back within
/// its session (no rebalance: the others keep what they own), each assigned promptly.
const STATIC: &str = r#"
import sys, time
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
addr = sys.argv[1]
admin = AdminClient({"bootstrap.servers": addr})
admin.create_topics([NewTopic("st", num_partitions=4)])["st"].result()
events = []
def member(name):
    owned = set()
    def on_assign(c, parts):
        owned.update(p.partition for p in parts)
    def on_revoke(c, parts):
        events.append((name, "revoked"))
        owned.difference_update(p.partition for p in parts)
    c = Consumer({"bootstrap.servers": addr, "group.id": "static", "group.instance.id": name,
        "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
        "auto.offset.reset": "earliest"})
    c.subscribe(["st"], on_assign=on_assign, on_revoke=on_revoke)
    return c, owned
def spin(consumers, cond, limit=30):
    t0 = time.time()
    while not cond() and time.time() - t0 < limit:
        for c in consumers:
            c.poll(0.05)
    return time.time() - t0
ca, oa = member("a")
spin([ca], lambda: len(oa) == 4)
cb, ob = member("b")
print("JOINED %.1f" % spin([ca, cb], lambda: len(oa) == 2 and len(ob) == 2))
b_owned = sorted(ob)
cb.close()
del events[:]
cb, ob = member("b")
print("RETURNED %.1f" % spin([ca, cb], lambda: len(ob) == 2))
print("SAME", sorted(ob) == b_owned, "OTHERS REVOKED", [e for e in events if e[0] == "a"])
"#;

fn run(script: &str, addr: &str) -> String {
    let out = python_script(script, &[addr]).output().expect("python3");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout.into_owned()
}

/// The seconds printed after `tag` in `out`.
fn seconds(out: &str, tag: &str) -> f64 {
    out.lines()
        .find_map(|l| l.strip_prefix(tag))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {tag} in {out}"))
}

#[test]
fn a_pattern_subscription_picks_up_new_topics_and_drops_deleted_ones_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let out = run(PATTERN, &daemon.addr);
    assert!(seconds(&out, "ADDED") < 10.0, "{out}");
    assert!(seconds(&out, "REMOVED") < 10.0, "{out}");
    assert!(
        out.contains("KEPT [('events.a', 0), ('events.a', 1)]"),
        "{out}"
    );
}

#[test]
fn members_subscribed_by_name_drop_a_deleted_topic_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let out = run(DELETED, &daemon.addr);
    assert!(seconds(&out, "REMOVED") < 10.0, "{out}");
    assert!(out.contains("KEPT [('stays', 0), ('stays', 1)]"), "{out}");
}

#[test]
fn static_members_are_assigned_promptly_and_a_returning_one_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--group-initial-rebalance-delay-ms", "0"]);
    let out = run(STATIC, &daemon.addr);
    // A join waits for the other member's next heartbeat (every second here).
    assert!(seconds(&out, "JOINED") < 5.0, "{out}");
    assert!(seconds(&out, "RETURNED") < 2.0, "{out}");
    assert!(out.contains("SAME True OTHERS REVOKED []"), "{out}");
}

/// Two producers and two consumers of a group, every client reporting statistics every 100 ms
/// (which makes librdkafka poll every broker's state), for ten seconds: every record is
/// consumed once, and each client delivers its statistics throughout.
const STATISTICS: &str = r#"
import sys, time, json
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
addr = sys.argv[1]
admin = AdminClient({"bootstrap.servers": addr})
admin.create_topics([NewTopic("busy", num_partitions=4)])["busy"].result()
stats = {}
# Where each record was stored, or why not: says which side lost a record if one is missing.
delivered = {}
def on_delivery(err, msg):
    delivered[msg.value()] = str(err) if err else (msg.partition(), msg.offset())
def counter(name):
    def on_stats(raw):
        json.loads(raw)
        stats[name] = stats.get(name, 0) + 1
    return on_stats
producers = [Producer({"bootstrap.servers": addr, "statistics.interval.ms": 100,
    "stats_cb": counter("p%d" % i), "linger.ms": 5}) for i in range(2)]
consumers = [Consumer({"bootstrap.servers": addr, "group.id": "busy", "statistics.interval.ms": 100,
    "stats_cb": counter("c%d" % i), "auto.offset.reset": "earliest"}) for i in range(2)]
for c in consumers:
    c.subscribe(["busy"])
seen = set()
sent = 0
t0 = time.time()
def consume(timeout):
    for c in consumers:
        for m in c.consume(500, timeout):
            if not m.error():
                seen.add(m.value())
# About 2,000 records a second for ten seconds.
while time.time() - t0 < 10:
    tick = time.time()
    for p in producers:
        for _ in range(20):
            p.produce("busy", b"%d" % sent, key=b"%d" % (sent % 97), on_delivery=on_delivery)
            sent += 1
        p.poll(0)
    consume(0.005)
    time.sleep(max(0.0, 0.02 - (time.time() - tick)))
for p in producers:
    p.flush(10)
t1 = time.time()
while len(seen) < sent and time.time() - t1 < 30:
    consume(0.1)
for c in consumers:
    c.close()
print("SENT", sent, "SEEN", len(seen))
missing = [b"%d" % i for i in range(sent) if b"%d" % i not in seen]
print("MISSING", [(v, delivered.get(v)) for v in missing[:20]])
print("STATS", sorted(stats.items()))
"#;

#[test]
fn clients_reporting_statistics_keep_working_through_a_busy_run() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--fsync", "interval"]);
    let out = run(STATISTICS, &daemon.addr);
    let line = out.lines().find(|l| l.starts_with("SENT")).expect("counts");
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(numbers[0] > 5_000 && numbers[0] == numbers[1], "{out}");
    // Ten seconds at 100 ms: each client reported statistics many times.
    let stats = out.lines().find(|l| l.starts_with("STATS")).expect("stats");
    for client in ["c0", "c1", "p0", "p1"] {
        let count: u64 = stats
            .split(&format!("('{client}', "))
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(count >= 50, "{client}: {stats}");
    }
}
