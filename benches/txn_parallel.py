"""Transactions from many producers at once: PRODUCERS confluent-kafka producers in this
process, each with its own transactional id and its own partition of one 8-partition topic,
each committing transactions of RECORDS records of 100 bytes one after another for SECONDS.
Prints one line: transactions/s and records/s in total, transactions/s per producer, and the
CPU cores the broker (BROKER_PID) and this client process used over the run, which say which
side sets the limit on a 2-core machine.

Usage: txn_parallel.py BOOTSTRAP PRODUCERS SECONDS RECORDS BROKER_PID
(benches/txn_parallel.sh runs it against logd and Apache Kafka in turn)
"""
import os
import resource
import sys
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, producers, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
records, broker = int(sys.argv[4]), int(sys.argv[5])
topic = f"txp{producers}x{records}"
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(topic, num_partitions=8, replication_factor=1)]).values():
    f.result(30)

counts = [0] * producers
ready = threading.Barrier(producers + 1)
value = b"v" * 100


def run(i):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-{i}",
                  "linger.ms": 0 if records <= 10 else 5})
    p.init_transactions(60)
    ready.wait()
    deadline = start + seconds
    while time.time() < deadline:
        p.begin_transaction()
        for _ in range(records):
            while True:
                try:
                    p.produce(topic, value=value, partition=i % 8)
                    break
                except BufferError:
                    p.poll(0.01)
        p.commit_transaction(60)
        counts[i] += 1


def broker_cpu():
    with open(f"/proc/{broker}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


start = 0.0
threads = [threading.Thread(target=run, args=(i,)) for i in range(producers)]
for t in threads:
    t.start()
start = time.time() + 0.2
ready.wait()
cpu0 = (broker_cpu(), own_cpu())
for t in threads:
    t.join()
elapsed = time.time() - start
cpu = ((broker_cpu() - cpu0[0]) / elapsed, (own_cpu() - cpu0[1]) / elapsed)
total = sum(counts) / elapsed
print(f"{producers:>2} producers x {records:>4} records: {total:>6.0f} transactions/s "
      f"{total * records:>8.0f} records/s ({total / producers:.1f} each); "
      f"cores used: broker {cpu[0]:.2f}, clients {cpu[1]:.2f}")
