# One step of the accelerated share-group lifetime (share_lifetime_rounds.rs) with
# confluent-kafka's ShareConsumer. argv: bootstrap, step, round, then the step's own:
#   produce ROUND FRESH   (re)create the topic when FRESH is "new" or "recreate", set the
#                         group's configs, then write 40 plain records, an aborted transaction
#                         of 10 and a committed one of 20, each value "ROUND-kind-i"
#   hold ROUND            a member takes records and dies without closing (os._exit)
#   leftover ROUND        300 plain records "ROUND-x-i" nobody drains: retention deletes them
#   drain ROUND           a member accepts until this round's 60 committed values came (or
#                         60 s), then 3 s more; prints "GOT t value count" per delivery and
#                         "ACKED t value" once its acceptance was answered ("UNACKED" if its
#                         partition's was refused; t: CLOCK_MONOTONIC, shared by the processes
#                         of one machine)
import os, sys, time
from confluent_kafka import ShareConsumer, Producer, AcknowledgeType, KafkaException
from confluent_kafka.admin import (AdminClient, NewTopic, ConfigResource, ConfigEntry,
    AlterConfigOpType, ResourceType)

addr, step, rnd = sys.argv[1], sys.argv[2], sys.argv[3]
topic, group = "lifetime", "lifetime-workers"
admin = AdminClient({"bootstrap.servers": addr})


def consumer():
    c = ShareConsumer({"bootstrap.servers": addr, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    return c


if step == "produce":
    fresh = sys.argv[4]
    if fresh == "recreate":
        for _, f in admin.delete_topics([topic]).items():
            f.result()
        while topic in admin.list_topics(timeout=10).topics:
            time.sleep(0.2)
    if fresh in ("new", "recreate"):
        configs = {"retention.ms": "8000", "segment.ms": "1000"}
        for _, f in admin.create_topics([NewTopic(topic, num_partitions=2, config=configs)]).items():
            f.result()
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in [
            ("share.auto.offset.reset", "earliest"),
            ("share.isolation.level", "read_committed"),
            ("share.record.lock.duration.ms", "60000"),
            ("share.partition.max.record.locks", "100")]]
        r = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
        for _, f in admin.incremental_alter_configs([r]).items():
            f.result()
    p = Producer({"bootstrap.servers": addr})
    for i in range(40):
        p.produce(topic, f"{rnd}-p-{i}".encode())
    assert p.flush(30) == 0
    t = Producer({"bootstrap.servers": addr, "transactional.id": "lifetime-txn"})
    t.init_transactions(30)
    t.begin_transaction()
    for i in range(10):
        t.produce(topic, f"{rnd}-a-{i}".encode())
    assert t.flush(30) == 0
    t.abort_transaction(30)
    t.begin_transaction()
    for i in range(20):
        t.produce(topic, f"{rnd}-c-{i}".encode())
    t.commit_transaction(30)
    print("PRODUCED", rnd)
elif step == "leftover":
    p = Producer({"bootstrap.servers": addr})
    for i in range(300):
        p.produce(topic, f"{rnd}-x-{i}".encode())
    assert p.flush(30) == 0
    print("LEFT", rnd)
elif step == "hold":
    c, held, end = consumer(), 0, time.time() + 60
    while held == 0 and time.time() < end:
        held = len([m for m in c.poll(0.5) if not m.error()])
    print("HELD", held, flush=True)
    os._exit(0)
elif step == "drain":
    c = consumer()
    wanted = {f"{rnd}-p-{i}" for i in range(40)} | {f"{rnd}-c-{i}" for i in range(20)}
    end, last = time.time() + 60, time.time()
    while time.time() < end and (wanted or time.time() - last < 3):
        got = []
        for msg in c.poll(0.5):
            if msg.error():
                print("ERROR", msg.error(), flush=True)
                continue
            value = msg.value().decode()
            print("GOT", time.clock_gettime(time.CLOCK_MONOTONIC), value, msg.delivery_count(),
                  flush=True)
            c.acknowledge(msg, AcknowledgeType.ACCEPT)
            got.append((msg.partition(), value))
            wanted.discard(value)
            last = time.time()
        if got:
            results = c.commit_sync()
            now = time.clock_gettime(time.CLOCK_MONOTONIC)
            ok = {tp.partition for tp, error in results.items() if error is None}
            for partition, value in got:
                print("ACKED" if partition in ok else "UNACKED", now, value, flush=True)
    c.close()
    print("MISSING", len(wanted), flush=True)
else:
    raise SystemExit("unknown step " + step)
