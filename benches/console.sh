#!/usr/bin/env bash
# The console's overview at size: a release logd with 1,000 partitions (10 topics of 100, one
# record each) and 100 groups with committed offsets on every partition of a topic; the time
# of the three API calls the overview page makes (/api/v1/topics, /api/v1/groups,
# /api/v1/dead-letters), each timed 30 times from a fresh connection: median and worst; and the
# search's scan rate over 3 M uncompressed 100-byte records.
# Usage: benches/console.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --bin logd -p logd-server
LOGD=target/release/logd
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
"$LOGD" serve --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --data-dir "$work/data" --fsync interval \
  > "$work/addr" 2>/dev/null &
pid=$!
while ! grep -q "console on" "$work/addr" 2>/dev/null; do sleep 0.05; done
addr=$(awk '/listening/ {print $4}' "$work/addr")
http=$(awk '/console on/ {print $4}' "$work/addr")
for t in $(seq 0 9); do
  "$LOGD" topics create "t$t" --partitions 100 --bootstrap "$addr" > /dev/null
  # One record in each partition.
  seq 0 99 | awk '{print "k" $1 ":v"}' | "$LOGD" produce -t "t$t" -k : --bootstrap "$addr" > /dev/null
done
for g in $(seq 0 99); do
  "$LOGD" groups reset-offsets "g$g" --topic "t$((g % 10))" --to-earliest --execute \
    --bootstrap "$addr" > /dev/null
done
# The search's scan rate: 3,000,000 uncompressed records of 100 bytes, searched for text none
# of them holds (every record read, every byte compared).
python3 -c "import sys; sys.stdout.write(('x' * 100 + '\\n') * 3000000)" \
  | "$LOGD" produce -t scan --bootstrap "$addr" > /dev/null
python3 - "$http" <<'EOF'
import json, statistics, sys, time, urllib.request
base = sys.argv[1].rstrip("/")
topics = json.load(urllib.request.urlopen(base + "/api/v1/topics"))["topics"]
groups = json.load(urllib.request.urlopen(base + "/api/v1/groups"))["groups"]
print(f"{sum(t['partitions'] for t in topics)} partitions in {len(topics)} topics, {len(groups)} groups")
for path in ["/api/v1/topics", "/api/v1/groups", "/api/v1/dead-letters"]:
    times = []
    for _ in range(30):
        start = time.perf_counter()
        urllib.request.urlopen(base + path).read()
        times.append((time.perf_counter() - start) * 1000)
    print(f"{path}: median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms")
for _ in range(3):
    start = time.perf_counter()
    step = json.load(urllib.request.urlopen(base + "/api/v1/topics/scan/search?q=needle&scan=10000000"))
    seconds = time.perf_counter() - start
    assert step["done"] and step["scanned"] == 3000000 and not step["matches"], step
    print(f"search: {step['scanned']:,} records in {seconds * 1000:.0f} ms = {step['scanned'] / seconds / 1e6:.1f} M records/s")
EOF
