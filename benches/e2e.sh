#!/usr/bin/env bash
# End-to-end benchmark: N records of 100 bytes produced into a real logd by kcat (librdkafka)
# and consumed back, under fsync interval and always, with logd's peak RSS; the client's own
# ceilings measured in the same run against librdkafka's in-process mock cluster; and the same
# workload through the embedded engine. Needs kcat and python3 with confluent-kafka (.ci/run
# installs both). Usage: benches/e2e.sh [N]   (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
cargo build --quiet --release --bin logd -p logd-server
cargo build --quiet --release -p logd --example throughput
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
python3 -c "import sys; sys.stdout.write(('x' * 100 + '\n') * $N)" > "$work/input"
producer_opts=(-X linger.ms=5 -X batch.num.messages=10000 -X queue.buffering.max.messages=1000000)

seconds() { python3 -c "import time; print(time.time())"; }
rate() { python3 -c "print(f'{$N / ($2 - $1):,.0f} records/s  {$N * 100 / ($2 - $1) / 1e6:,.1f} MB/s')"; }

echo "== client ceilings (librdkafka mock cluster, same kcat, same input)"
t0=$(seconds)
kcat -P -t bench -b unused:1 -X test.mock.num.brokers=1 "${producer_opts[@]}" < "$work/input" 2>/dev/null
t1=$(seconds)
echo "produce ceiling: $(rate "$t0" "$t1")"
python3 - "$N" <<'PY'
import subprocess, sys, time
from confluent_kafka import Producer
n = int(sys.argv[1])
p = Producer({"test.mock.num.brokers": 1, "linger.ms": 5, "batch.num.messages": 10000,
              "queue.buffering.max.messages": 1000000})
value = b"x" * 100
for _ in range(n):
    while True:
        try:
            p.produce("bench", value, partition=0)
            break
        except BufferError:
            p.poll(0.01)
p.flush()
mock = [f"{b.host}:{b.port}" for b in p.list_topics().brokers.values()][0]
t0 = time.time()
subprocess.run(["kcat", "-C", "-t", "bench", "-b", mock, "-o", "beginning", "-e", "-q"], stdout=subprocess.DEVNULL, check=True)
t1 = time.time()
print(f"consume ceiling: {n / (t1 - t0):,.0f} records/s  {n * 100 / (t1 - t0) / 1e6:,.1f} MB/s")
PY

for fsync in interval always; do
  echo "== logd, fsync $fsync"
  rm -rf "$work/data"
  target/release/logd serve --listen 127.0.0.1:0 --data-dir "$work/data" --fsync "$fsync" > "$work/addr" 2>/dev/null &
  pid=$!
  while ! grep -q listening "$work/addr" 2>/dev/null; do sleep 0.05; done
  addr=$(awk '{print $4}' "$work/addr")
  t0=$(seconds)
  kcat -P -t bench -b "$addr" -X acks=all "${producer_opts[@]}" < "$work/input"
  t1=$(seconds)
  kcat -C -t bench -b "$addr" -o beginning -e -q > /dev/null
  t2=$(seconds)
  echo "produce: $(rate "$t0" "$t1")"
  echo "consume: $(rate "$t1" "$t2")"
  echo "peak RSS: $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' /proc/$pid/status)"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done

echo "== embedded engine (same N, fsync always)"
target/release/examples/throughput "$N" always
