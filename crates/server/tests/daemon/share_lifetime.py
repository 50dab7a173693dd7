# A share group over a topic's lifetime, with confluent-kafka's ShareConsumer (librdkafka
# 2.16): the same script against logd and against Apache Kafka 4.4, whose printed lines must
# be the same. argv: bootstrap, scenario (delete-records, read-committed, recreated, crashed),
# prefix for topic and group names.
import os, subprocess, sys, time
from confluent_kafka import ShareConsumer, Producer, AcknowledgeType, TopicPartition, KafkaException
from confluent_kafka.admin import (AdminClient, NewTopic, ConfigResource, ConfigEntry,
    AlterConfigOpType, ResourceType)

addr, scenario, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
topic, group = prefix + "-jobs", prefix + "-workers"
admin = AdminClient({"bootstrap.servers": addr})


def create_topic():
    end = time.time() + 60
    while True:
        try:
            for _, f in admin.create_topics([NewTopic(topic, num_partitions=1)]).items():
                f.result()
            break
        except KafkaException as e:
            # A topic just deleted is still going away on Kafka for a moment.
            if time.time() > end:
                raise
            time.sleep(0.5)
    # Metadata reaches every broker of a cluster in its time.
    while topic not in admin.list_topics(timeout=10).topics:
        time.sleep(0.2)


def group_configs(**configs):
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    r = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for _, f in admin.incremental_alter_configs([r]).items():
        f.result()


def produce(count, tag):
    p = Producer({"bootstrap.servers": addr})
    for i in range(count):
        p.produce(topic, f"{tag}-{i}".encode())
    assert p.flush(30) == 0


def consumer():
    c = ShareConsumer({"bootstrap.servers": addr, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    return c


counts = {}


def drain(expected, quiet=3.0, limit=90.0):
    """Accepts every record until `expected` came and then `quiet` seconds bring nothing more:
    the offsets, and how many came twice (each one's delivery count in `counts`)."""
    c = consumer()
    got, twice = [], 0
    end, last = time.time() + limit, time.time()
    while time.time() < end and (len(got) < expected or time.time() - last < quiet):
        for msg in c.poll(0.5):
            if msg.error():
                print("ERROR", msg.error())
                continue
            if msg.offset() in got:
                twice += 1
            got.append(msg.offset())
            counts[msg.offset()] = msg.delivery_count()
            c.acknowledge(msg, AcknowledgeType.ACCEPT)
            last = time.time()
        c.commit_sync()
    c.close()
    return sorted(got), twice


def show(name, offsets, twice):
    runs, start = [], None
    for i, o in enumerate(offsets):
        if start is None:
            start = o
        if i + 1 == len(offsets) or offsets[i + 1] != o + 1:
            runs.append(f"{start}-{o}")
            start = None
    print(name, "offsets", " ".join(runs) or "none", "twice", twice)


create_topic()
group_configs(share_auto_offset_reset="earliest")

if scenario == "delete-records":
    produce(3000, "old")
    # A member takes some records and leaves without acknowledging them: they are released,
    # available again, below where DeleteRecords goes.
    first, held, end = consumer(), 0, time.time() + 60
    while held == 0 and time.time() < end:
        held = len([m for m in first.poll(0.5) if not m.error()])
    first.close()
    print("held some", held > 0)
    for _, f in admin.delete_records([TopicPartition(topic, 0, 3000)]).items():
        print("log start", f.result().low_watermark)
    produce(3000, "new")
    show("after delete-records", *drain(3000))
elif scenario == "read-committed":
    group_configs(share_isolation_level="read_committed")
    p = Producer({"bootstrap.servers": addr, "transactional.id": prefix + "-txn"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, f"aborted-{i}".encode())
    # Sent before the abort: librdkafka drops what an abort finds unsent.
    assert p.flush(30) == 0
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, f"committed-{i}".encode())
    p.commit_transaction(30)
    show("read_committed", *drain(5))
elif scenario == "recreated":
    produce(10, "first")
    show("first topic", *drain(10))
    for _, f in admin.delete_topics([topic]).items():
        f.result()
    while topic in admin.list_topics(timeout=10).topics:
        time.sleep(0.2)
    create_topic()
    produce(5, "second")
    show("recreated topic", *drain(5))
elif scenario == "crashed":
    # A member process takes records and dies without closing (its connection closes with
    # it): its records come back at once, not after their 30 s locks.
    produce(10, "work")
    child = """
import os, sys, time
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                   "share.acknowledgement.mode": "explicit"})
c.subscribe([sys.argv[3]])
end, held = time.time() + 60, 0
while held == 0 and time.time() < end:
    held = len([m for m in c.poll(0.5) if not m.error()])
print(held, flush=True)
os._exit(0)
"""
    out = subprocess.run([sys.executable, "-c", child, addr, group, topic],
                         capture_output=True, text=True, timeout=90)
    print("the crashed member held some", int(out.stdout.split()[0]) > 0)
    offsets, twice = drain(10, limit=20.0)
    show("after the crash", offsets, twice)
    # The held ones come again counted twice, the others once.
    print("redelivered at once", 2 in counts.values() and set(counts.values()) <= {1, 2})
else:
    raise SystemExit("unknown scenario " + scenario)
