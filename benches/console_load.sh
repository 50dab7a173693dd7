#!/usr/bin/env bash
# What open consoles cost the broker: 10 consoles, each making the page's own requests at the
# page's own pace (every 5 s the overview's five calls, every second the live tail of the topic
# being produced to, and the group view's history), against a release logd (fsync interval).
# 1. logd's CPU time per second (perf stat task-clock on the daemon) over 20 s idle, then 20 s
#    with the 10 consoles open, nothing produced: what the consoles cost by themselves.
# 2. kcat producing N records of 100 B, with and without the consoles, alternated ROUNDS times:
#    the throughput ratio (noisy on this VM, which is why 1. is measured too).
# Usage: [N=4000000] [ROUNDS=5] benches/console_load.sh
# Needs kcat and perf (as root, or perf_event_paranoid low enough to watch another process).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-4000000} ROUNDS=${ROUNDS:-5}
cargo build --quiet --release --bin logd -p logd-server
LOGD=target/release/logd
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${consoles:-}" ] && kill "$consoles" 2>/dev/null; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
python3 -c "import sys; sys.stdout.write(('x' * 100 + '\n') * $N)" > "$work/input"
producer_opts=(-X linger.ms=5 -X batch.num.messages=10000 -X queue.buffering.max.messages=1000000)

start() {
  rm -rf "$work/data"
  "$LOGD" serve --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --data-dir "$work/data" \
    --fsync interval > "$work/addr" 2>/dev/null &
  pid=$!
  while ! grep -q "console on" "$work/addr" 2>/dev/null; do sleep 0.05; done
  addr=$(awk '/listening/ {print $4}' "$work/addr")
  http=$(awk '/console on/ {print $4}' "$work/addr")
  "$LOGD" topics create bench --partitions 4 --bootstrap "$addr" > /dev/null
  # A group with offsets on the topic, and a dead-letter topic, for the views to show.
  "$LOGD" groups reset-offsets billing --topic bench --to-earliest --execute --bootstrap "$addr" > /dev/null
  echo "k|dead" | "$LOGD" produce -t bench.dlq -k "|" --bootstrap "$addr" > /dev/null
}

stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

# 10 consoles until killed: each a thread making the page's requests.
open_consoles() {
  python3 - "$http" > /dev/null <<'EOF' &
import json, sys, threading, time, urllib.request
base = sys.argv[1].rstrip("/")
def call(path):
    with urllib.request.urlopen(base + path) as r:
        return json.load(r)
def console():
    after, last_refresh = None, 0.0
    while True:
        now = time.monotonic()
        if now - last_refresh >= 5:
            for path in ["/api/v1/topics", "/api/v1/groups", "/api/v1/dead-letters",
                         "/api/v1/history", "/api/v1/broker", "/api/v1/groups/billing"]:
                call(path)
            last_refresh = now
        query = "partition=all&limit=500" + ("&after=" + after if after else "&last=50")
        page = call("/api/v1/topics/bench/messages?" + query)
        after = ",".join(f"{p['partition']}:{p['next_offset']}" for p in page["partitions"])
        time.sleep(1)
for _ in range(10):
    threading.Thread(target=console, daemon=True).start()
while True:
    time.sleep(60)
EOF
  consoles=$!
  sleep 2
}

close_consoles() { kill "$consoles"; wait "$consoles" 2>/dev/null || true; consoles=; }

produce_rate() {
  local t0 t1
  t0=$(date +%s.%N)
  kcat -P -t bench -b "$addr" -X acks=all "${producer_opts[@]}" < "$work/input"
  t1=$(date +%s.%N)
  python3 -c "print(f'{$N / ($t1 - $t0) / 1e6:.2f}')"
}

# logd's CPU ms per second over 20 s.
cpu_per_second() {
  perf stat -e task-clock -x, -o "$work/perf" -p "$pid" -- sleep 20
  awk -F, '/task-clock/ {printf "%.1f", $1 / 20}' "$work/perf"
}

echo "== logd CPU per second, nothing produced (20 s each): idle | with 10 consoles open"
start
idle=$(cpu_per_second)
open_consoles
busy=$(cpu_per_second)
close_consoles
stop
python3 -c "print(f'{$idle} ms | {$busy} ms: the consoles cost {$busy - $idle:.1f} ms per second, {($busy - $idle) / 10:.2f} % of one core')"

echo "== kcat produce of $N records of 100 B, M/s, without | with 10 consoles"
for round in $(seq "$ROUNDS"); do
  start; without=$(produce_rate); stop
  start; open_consoles; with=$(produce_rate); close_consoles; stop
  echo "round $round: $without | $with"
done
