"""A member joining a busy group of ten: classic protocol against KIP-848's consumer protocol.

Driver: `join_latency.py BOOTSTRAP` runs one round per protocol (librdkafka's defaults for each:
the classic protocol with its eager `range,roundrobin` assignors, the consumer protocol with
the broker's `uniform`). A round makes a topic of 22 partitions, produces to it all along
(about 2,000 records a second), starts ten member processes in one group and waits until
every one of them has been consuming steadily, then starts an eleventh. It prints
`ROUND PROTOCOL JOIN_S PAUSE_S REVOKED`: the time from the eleventh member's start to its first
record, the longest one of the ten went without a record between that start and a second after
the eleventh's first record (the stop-the-world cost of the join), and how many partitions the
ten had revoked meanwhile (their revoke callbacks); then the ratios. Exits 1 if the
consumer protocol stopped the ten for more than a second.
Member: `join_latency.py member BOOTSTRAP TOPIC GROUP PROTOCOL NAME` prints `start NAME TIME`
then `rec NAME TIME` per batch of records it gets and `assign|revoke NAME TIME COUNT` from its
callbacks, until killed.
"""
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 22
MEMBERS = 10


def member(bootstrap, topic, group, protocol, name):
    print("start", name, f"{time.time():.6f}", flush=True)
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
              "auto.offset.reset": "latest", "enable.auto.commit": True}
    c = Consumer(config)

    def event(kind):
        return lambda c, parts: print(kind, name, f"{time.time():.6f}", len(parts), flush=True)
    c.subscribe([topic], on_assign=event("assign"), on_revoke=event("revoke"))
    while True:
        batch = [m for m in c.consume(500, 0.05) if m.error() is None]
        if batch:
            print("rec", name, f"{time.time():.6f}", flush=True)


def produce(bootstrap, topic, stop):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    i = 0
    while not stop.is_set():
        for _ in range(20):
            p.produce(topic, key=str(i), value=str(i))
            i += 1
        p.poll(0)
        time.sleep(0.01)
    p.flush(10)


def spawn(bootstrap, topic, group, protocol, name, events):
    child = subprocess.Popen([sys.executable, __file__, "member", bootstrap, topic, group,
                              protocol, name], stdout=subprocess.PIPE, text=True)

    def read():
        for line in child.stdout:
            kind, who, at, *count = line.split()
            events.append((kind, who, float(at), int(count[0]) if count else 0))
    threading.Thread(target=read, daemon=True).start()
    return child


def steady(events, names, now):
    last = {}
    for kind, who, at, _ in events:
        if kind == "rec":
            last[who] = at
    return all(now - last.get(n, 0) < 0.5 for n in names)


def round_(bootstrap, protocol):
    topic, group = f"join-{protocol}", f"join-{protocol}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    stop = threading.Event()
    producer = threading.Thread(target=produce, args=(bootstrap, topic, stop))
    producer.start()
    events = []
    names = [f"m{i}" for i in range(MEMBERS)]
    children = [spawn(bootstrap, topic, group, protocol, n, events) for n in names]
    try:
        deadline = time.time() + 120
        stable_since = None
        while stable_since is None or time.time() - stable_since < 5:
            if time.time() > deadline:
                raise SystemExit(f"{protocol}: the ten never consumed steadily")
            if steady(list(events), names, time.time()):
                stable_since = stable_since or time.time()
            else:
                stable_since = None
            time.sleep(0.1)
        children.append(spawn(bootstrap, topic, group, protocol, "new", events))
        first = None
        deadline = time.time() + 120
        while first is None:
            if time.time() > deadline:
                raise SystemExit(f"{protocol}: the new member never got a record")
            first = next((at for kind, who, at, _ in list(events)
                          if kind == "rec" and who == "new"), None)
            time.sleep(0.05)
        time.sleep(1.5)
        seen = list(events)
        start = next(at for kind, who, at, _ in seen if kind == "start" and who == "new")
        pause = 0.0
        for n in names:
            times = [at for kind, who, at, _ in seen if kind == "rec" and who == n]
            before = [t for t in times if t <= start]
            window = before[-1:] + [t for t in times if start < t <= first + 1.0]
            gaps = [b - a for a, b in zip(window, window[1:])]
            if len(window) < 2:
                gaps = [first + 1.0 - (window[0] if window else start)]
            pause = max(pause, max(gaps))
        revoked = sum(count for kind, who, at, count in seen
                      if kind == "revoke" and who in names and start < at <= first + 1.0)
        return first - start, pause, revoked
    finally:
        stop.set()
        producer.join()
        for child in children:
            child.kill()
            child.wait()


def main():
    if sys.argv[1] == "member":
        member(*sys.argv[2:7])
        return
    bootstrap = sys.argv[1]
    results = {}
    for protocol in ["classic", "consumer"]:
        join, pause, revoked = round_(bootstrap, protocol)
        results[protocol] = (join, pause)
        print(f"ROUND {protocol} {join:.2f} {pause:.2f} {revoked}", flush=True)
    (cj, cp), (kj, kp) = results["classic"], results["consumer"]
    print(f"RATIO join consumer/classic {kj / cj:.2f}  pause of the ten consumer/classic "
          f"{kp / cp:.2f}")
    if kp > 1.0:
        print(f"FAIL: the consumer protocol stopped the ten for {kp:.2f} s")
        sys.exit(1)


if __name__ == "__main__":
    main()
