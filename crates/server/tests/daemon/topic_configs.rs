//! Topic configs as Kafka 4.x defines them, through confluent-kafka's admin, producer and
//! consumer against a real daemon: every config is accepted at creation and reported by
//! DescribeConfigs (all of them when no names are asked, with value and source); those that
//! mean something on one node act (`min.insync.replicas` above 1 refuses `acks=all` with
//! NOT_ENOUGH_REPLICAS, `message.timestamp.type=LogAppendTime` stamps records with the append
//! time, records an hour ahead of the broker are refused with INVALID_TIMESTAMP); unknown names
//! are INVALID_CONFIG; a manual replica assignment creates as many partitions as it lists, and
//! one naming another broker is INVALID_REPLICA_ASSIGNMENT.

use super::{Daemon, python};

const CONFIGS: &str = r#"
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition, KafkaException, TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource
b = sys.argv[1]
admin = AdminClient({"bootstrap.servers": b})

def create(topic):
    try:
        admin.create_topics([topic])[topic.topic].result(10)
        return "created"
    except KafkaException as e:
        return e.args[0].name()

framework = {
    "compression.type": "lz4", "preallocate": "true", "unclean.leader.election.enable": "false",
    "segment.index.bytes": "10485760", "local.retention.ms": "-2", "flush.ms": "1000",
    "flush.messages": "9223372036854775807", "message.timestamp.before.max.ms": "86400000",
}
print("framework", create(NewTopic("framework", 1, 1, config=framework)))
print("unknown", create(NewTopic("unknown", 1, 1, config={"bogus.config": "1"})))
print("bad value", create(NewTopic("bad", 1, 1, config={"compression.type": "brotli"})))
print("no topics made", sorted(admin.list_topics(timeout=10).topics))

configs = admin.describe_configs([ConfigResource("topic", "framework")])
configs = list(configs.values())[0].result(10)
print("configs", len(configs))
for name in sorted(framework) + ["retention.ms", "max.message.bytes", "cleanup.policy"]:
    c = configs[name]
    # Kafka's config sources: 1 = set on the topic, 5 = the broker's default.
    print(name, c.value, c.source)

print("assigned", create(NewTopic("assigned", 4, replica_assignment=[[0], [0], [0], [0]])))
print("partitions", len(admin.list_topics("assigned", timeout=10).topics["assigned"].partitions))
print("elsewhere", create(NewTopic("elsewhere", 2, replica_assignment=[[0], [1]])))

print("isr", create(NewTopic("isr", 1, 1, config={"min.insync.replicas": "2"})))
print("stamped", create(NewTopic("stamped", 1, 1, config={"message.timestamp.type": "LogAppendTime"})))
results = {}
def report(err, msg):
    results[(msg.topic(), msg.value().decode())] = err.name() if err else "ok"
for acks in ["all", "1"]:
    p = Producer({"bootstrap.servers": b, "acks": acks, "enable.idempotence": False,
                  "retries": 0, "message.timeout.ms": 5000})
    p.produce("isr", ("acks=" + acks).encode(), on_delivery=report)
    p.flush(10)
p = Producer({"bootstrap.servers": b, "retries": 0, "message.timeout.ms": 5000})
hour = 3600 * 1000
now = int(time.time() * 1000)
# One at a time: a refused record fails its whole batch, as on Kafka.
for topic, value, ts in [("stamped", b"old", now - 10 * hour), ("framework", b"ahead", now + 2 * hour),
                         ("framework", b"stale", now - 25 * hour), ("framework", b"now", now)]:
    p.produce(topic, value, timestamp=ts, on_delivery=report)
    p.flush(10)
for key in sorted(results):
    print("delivery", key[0], key[1], results[key])

c = Consumer({"bootstrap.servers": b, "group.id": "t", "enable.auto.commit": False})
c.assign([TopicPartition("stamped", 0, 0)])
m = None
deadline = time.time() + 20
while m is None and time.time() < deadline:
    m = c.poll(0.5)
kind, ts = m.timestamp()
print("log append time", kind == TIMESTAMP_LOG_APPEND_TIME, abs(ts - now) < 60000)
c.close()
"#;

#[test]
fn every_kafka_topic_config_is_accepted_reported_and_the_meaningful_ones_act() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let output = python(CONFIGS, &daemon.addr);
    let expected = "\
framework created
unknown INVALID_CONFIG
bad value INVALID_CONFIG
no topics made ['framework']
configs 37
compression.type lz4 1
flush.messages 9223372036854775807 1
flush.ms 1000 1
local.retention.ms -2 1
message.timestamp.before.max.ms 86400000 1
preallocate true 1
segment.index.bytes 10485760 1
unclean.leader.election.enable false 1
retention.ms 604800000 5
max.message.bytes 1048588 5
cleanup.policy delete 5
assigned created
partitions 4
elsewhere INVALID_REPLICA_ASSIGNMENT
isr created
stamped created
delivery framework ahead INVALID_TIMESTAMP
delivery framework now ok
delivery framework stale INVALID_TIMESTAMP
delivery isr acks=1 ok
delivery isr acks=all NOT_ENOUGH_REPLICAS
delivery stamped old ok
log append time True True
";
    assert_eq!(output, expected);
}

const LEGACY_ALTER: &str = r#"
import sys
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
admin.create_topics([NewTopic("legacy", 1, 1, config={"retention.ms": "3600000", "segment.ms": "600000"})])["legacy"].result(10)

def alter(configs):
    resource = ConfigResource("topic", "legacy", set_config=configs)
    try:
        list(admin.alter_configs([resource]).values())[0].result(10)
        return "altered"
    except KafkaException as e:
        return e.args[0].name()

def show():
    c = list(admin.describe_configs([ConfigResource("topic", "legacy")]).values())[0].result(10)
    for name in ["retention.ms", "max.message.bytes", "segment.ms"]:
        print(" ", name, c[name].value, c[name].source)

print("whole set", alter({"retention.ms": "7200000", "max.message.bytes": "2000000"}))
show()
print("unknown", alter({"retention.ms": "1000", "bogus.config": "1"}))
show()
"#;

/// The legacy AlterConfigs (confluent-kafka's `alter_configs`, MirrorMaker 2's fallback)
/// replaces a topic's whole set: configs not given go back to the default; a bad set changes
/// nothing.
#[test]
fn legacy_alter_configs_replaces_the_whole_set() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let output = python(LEGACY_ALTER, &daemon.addr);
    assert_eq!(
        output,
        "whole set altered\n  \
         retention.ms 7200000 1\n  \
         max.message.bytes 2000000 1\n  \
         segment.ms 604800000 5\n\
         unknown INVALID_CONFIG\n  \
         retention.ms 7200000 1\n  \
         max.message.bytes 2000000 1\n  \
         segment.ms 604800000 5\n"
    );
}
