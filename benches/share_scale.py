"""Share groups scaling out on one partition (KIP-932), and the broker's CPU per record.

Driver: `share_scale.py BOOTSTRAP LOGD_PID RECORDS` makes a one-partition topic per round,
produces RECORDS records, and runs 1 then 4 share-consumer processes (confluent-kafka's
`ShareConsumer`, implicit acknowledgement, a 1 ms handler per record) in one share group,
then one classic consumer (commit after each fetched batch) with the same handler. It prints
each round's steady rate (records handled between a tenth and nine tenths of them, by handling
time across the processes), its ratio to one share consumer's, and the broker's CPU time
(utime + stime of LOGD_PID) per record handled.
Worker: `share_scale.py worker|classic BOOTSTRAP TOPIC GROUP RECORDS` handles records until
RECORDS were seen by all (it stops after 5 s without one) and prints each handling time.
"""
import os
import subprocess
import sys
import time

from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

HANDLER_S = 0.001


def worker(kind, bootstrap, topic, group):
    if kind == "worker":
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    else:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    quiet_until = time.time() + 60
    times = []
    while time.time() < quiet_until:
        batch = c.poll(0.2) if kind == "worker" else c.consume(500, 0.2)
        batch = [m for m in batch if m.error() is None]
        for _ in batch:
            time.sleep(HANDLER_S)
            times.append(time.time())
        if batch:
            quiet_until = time.time() + 5
            if kind == "worker":
                c.commit_sync()
            else:
                c.commit(asynchronous=False)
    c.close()
    print("\n".join(f"{t:.6f}" for t in times))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_(bootstrap, pid, records, kind, processes, name):
    topic, group = f"share-bench-{name}", f"share-bench-{name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, num_partitions=1)]).values():
        f.result()
    if kind == "worker":
        r = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([r]).values():
            f.result()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        p.produce(topic, f"record-{i}".encode())
    p.flush(30)
    cpu_before = cpu_seconds(pid)
    procs = [subprocess.Popen([sys.executable, __file__, kind, bootstrap, topic, group],
                              stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    times = sorted(float(t) for proc in procs for t in proc.communicate()[0].split())
    # The workers' last 5 quiet seconds cost the broker little; counted as the CPU spent.
    cpu = cpu_seconds(pid) - cpu_before
    lo, hi = times[len(times) // 10], times[len(times) * 9 // 10]
    rate = (len(times) * 8 // 10) / (hi - lo)
    return rate, len(times), cpu


def main():
    bootstrap, pid, records = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    one = None
    for kind, processes in [("worker", 1), ("worker", 4), ("classic", 1)]:
        name = f"{kind}-{processes}-{int(time.time())}"
        rate, handled, cpu = round_(bootstrap, pid, records, kind, processes, name)
        one = one or rate
        label = "share consumers" if kind == "worker" else "classic consumer (commit per batch)"
        print(f"{processes} {label}: {rate:,.0f} records/s ({rate / one:.2f}x), "
              f"{handled} handled of {records}, broker CPU {cpu * 1e6 / handled:,.0f} us/record")


if __name__ == "__main__":
    if sys.argv[1] in ("worker", "classic"):
        worker(*sys.argv[1:5])
    else:
        main()
