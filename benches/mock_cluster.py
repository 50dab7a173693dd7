"""Fills a librdkafka mock cluster (in this process) with N records of 100 bytes in topic
`bench` (4 partitions), prints the mock broker's address, and keeps it up for S seconds, so a
separate kcat can measure its consume ceiling against a broker that serves from memory.
The mock keeps about 45,000 records per partition, so N should stay under 180,000.
Usage: python3 benches/mock_cluster.py N SECONDS   (needs confluent-kafka)"""
import sys
import time

from confluent_kafka import Producer

n, seconds = int(sys.argv[1]), float(sys.argv[2])
p = Producer({"test.mock.num.brokers": 1, "linger.ms": 5, "batch.num.messages": 10000,
              "queue.buffering.max.messages": 1000000})
value = b"x" * 100
for _ in range(n):
    while True:
        try:
            p.produce("bench", value)
            break
        except BufferError:
            p.poll(0.01)
assert p.flush(60) == 0
print(",".join(f"{b.host}:{b.port}" for b in p.list_topics(timeout=5).brokers.values()), flush=True)
time.sleep(seconds)
