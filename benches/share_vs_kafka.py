"""Share groups with no handler (KIP-932): acknowledged records/s and the broker's CPU per
acknowledged record, the same run against logd or Apache Kafka (benches/vs_kafka.sh calls it
for each side in alternated rounds).

Driver: `share_vs_kafka.py BOOTSTRAP BROKER_PID RECORDS PARTITIONS CONSUMERS NAME` makes a
topic of PARTITIONS partitions, produces RECORDS records of 100 bytes spread evenly over them,
sets the share group's `share.auto.offset.reset` to earliest, and starts CONSUMERS processes of
confluent-kafka's `ShareConsumer` in one share group (implicit acknowledgement: each poll
acknowledges the records of the one before, as a consumer with no handler would). It prints
one line: the steady rate (records polled between the tenth and the ninth tenth of them, by
poll time across the processes), the broker's CPU (utime + stime of BROKER_PID, sampled every
20 ms) over that same span per record, and the records seen twice. It fails unless every
record came.
Worker: `share_vs_kafka.py worker BOOTSTRAP TOPIC GROUP` polls until 3 s bring nothing, then
acknowledges what it holds and closes; it prints each poll's time and count, then the
records it saw as partition:offset.
"""
import bisect
import os
import subprocess
import sys
import threading
import time

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)


def worker(bootstrap, topic, group):
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe([topic])
    polls, seen = [], []
    quiet_until = time.time() + 60
    while time.time() < quiet_until:
        batch = [m for m in c.poll(0.2) if m.error() is None]
        if batch:
            polls.append((time.time(), len(batch)))
            seen.extend(f"{m.partition()}:{m.offset()}" for m in batch)
            quiet_until = time.time() + 3
    c.commit_sync()
    c.close()
    out = [f"{t:.6f} {n}" for t, n in polls] + ["--"] + seen
    sys.stdout.write("\n".join(out) + "\n")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sample_cpu(pid, samples, stop):
    while not stop.is_set():
        samples.append((time.time(), cpu_seconds(pid)))
        time.sleep(0.02)


def cpu_at(samples, t):
    """The broker's CPU seconds at time `t`, between the two samples around it."""
    times = [s[0] for s in samples]
    i = min(max(bisect.bisect_left(times, t), 1), len(samples) - 1)
    (t0, c0), (t1, c1) = samples[i - 1], samples[i]
    return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1


def main():
    bootstrap, pid, records = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    partitions, consumers, name = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    topic, group = f"share-{name}", f"share-{name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, num_partitions=partitions)]).values():
        f.result()
    while topic not in admin.list_topics(timeout=10).topics:
        time.sleep(0.1)
    r = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([r]).values():
        f.result()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                  "queue.buffering.max.messages": 1000000})
    value = b"x" * 100
    for i in range(records):
        p.produce(topic, value, partition=i % partitions)
        if i % 100000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    samples, stop = [], threading.Event()
    sampler = threading.Thread(target=sample_cpu, args=(pid, samples, stop))
    sampler.start()
    procs = [subprocess.Popen([sys.executable, __file__, "worker", bootstrap, topic, group],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(consumers)]
    outs = [proc.communicate()[0] for proc in procs]
    stop.set()
    sampler.join()
    polls, seen = [], set()
    twice = 0
    for out in outs:
        head, _, tail = out.partition("--\n")
        polls += [(float(t), int(n)) for t, n in (line.split() for line in head.splitlines())]
        for key in tail.split():
            twice += key in seen
            seen.add(key)
    if len(seen) != records:
        sys.exit(f"{len(seen)} of {records} records came")
    # Each polled record's time, in order: the span from the tenth to the ninth tenth.
    times = sorted(t for t, n in polls for _ in range(n))
    lo, hi = times[len(times) // 10], times[len(times) * 9 // 10]
    steady = len(times) * 8 // 10
    cpu = cpu_at(samples, hi) - cpu_at(samples, lo)
    print(f"{steady / (hi - lo):.0f} {cpu * 1e6 / steady:.2f} {twice}")


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(*sys.argv[2:5])
    else:
        main()
