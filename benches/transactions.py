"""Transactions against a logd daemon with confluent-kafka, every figure beside its baseline
in the same run: transactional produce in transactions of 100 and of 10,000 records against
idempotent produce of the same records, and read_committed consume against read_uncommitted
of the same topic (committed transactions only, so both read every record).

Usage: transactions.py BOOTSTRAP [RECORDS]   (see transactions.sh)
"""
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic

b = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
value = b"v" * 100
admin = AdminClient({"bootstrap.servers": b})
topics = ["idem", "tx100", "tx10000"]
for f in admin.create_topics([NewTopic(t, num_partitions=3, replication_factor=1) for t in topics]).values():
    f.result(30)

common = {"bootstrap.servers": b, "linger.ms": 5, "batch.num.messages": 10000,
          "queue.buffering.max.messages": 1000000}


def idempotent():
    p = Producer({**common, "enable.idempotence": True})
    start = time.time()
    for i in range(n):
        while True:
            try:
                p.produce("idem", key=str(i % 1000), value=value)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    assert p.flush(120) == 0
    return n / (time.time() - start)


def transactional(per, topic):
    p = Producer({**common, "transactional.id": f"bench-{per}"})
    p.init_transactions(30)
    start = time.time()
    sent = 0
    while sent < n:
        p.begin_transaction()
        for i in range(sent, min(n, sent + per)):
            while True:
                try:
                    p.produce(topic, key=str(i % 1000), value=value)
                    break
                except BufferError:
                    p.poll(0.01)
            p.poll(0)
        p.commit_transaction(120)
        sent += per
    return n / (time.time() - start)


def consume(topic, level):
    c = Consumer({"bootstrap.servers": b, "group.id": f"read-{topic}-{level}-{time.time()}",
                  "isolation.level": level, "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
    got = 0
    start = time.time()
    while got < n:
        for m in c.consume(num_messages=10000, timeout=1):
            if not m.error():
                got += 1
    elapsed = time.time() - start
    c.close()
    return n / elapsed


idem = idempotent()
tx10000 = transactional(10000, "tx10000")
tx100 = transactional(100, "tx100")
print(f"produce {n} records of 100 B, records/s:")
print(f"  idempotent                 {idem:10.0f}")
print(f"  transactions of 10,000     {tx10000:10.0f}  {tx10000 / idem:.2f}x")
print(f"  transactions of 100        {tx100:10.0f}  {tx100 / idem:.2f}x")
# Alternated, twice each, best kept: the first read of a run also warms the page cache and
# the client's connections.
uncommitted = committed = 0.0
for _ in range(2):
    uncommitted = max(uncommitted, consume("tx10000", "read_uncommitted"))
    committed = max(committed, consume("tx10000", "read_committed"))
print(f"consume {n} committed records, records/s:")
print(f"  read_uncommitted           {uncommitted:10.0f}")
print(f"  read_committed             {committed:10.0f}  {committed / uncommitted:.2f}x")
