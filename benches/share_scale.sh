#!/usr/bin/env bash
# Share groups scaling out on one partition (benches/share_scale.py), in release: 1 and 4
# share-consumer processes (confluent-kafka's ShareConsumer, a 1 ms handler each record)
# against one classic consumer, and the broker's CPU per record; then the engine's memory with
# 10,000 records in flight (logd-share-worker-bench memory). Figures in docs/benchmarks.md. Needs the pinned Python clients (`cargo test` provisions them into
# target/test-clients/python).
# Usage: benches/share_scale.sh [RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
python=target/test-clients/python/bin/python3
[ -x "$python" ] || { echo "no $python: run the daemon tests once to provision it" >&2; exit 1; }
cargo build --release --bin logd -p logd-tests --bin logd-share-worker-bench
target/release/logd-share-worker-bench memory
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
target/release/logd --data-dir "$dir" --listen 127.0.0.1:39092 --http-listen 127.0.0.1:0 \
  --group-initial-rebalance-delay-ms 0 > "$dir/logd.log" 2>&1 &
pid=$!
sleep 1
"$python" benches/share_scale.py 127.0.0.1:39092 "$pid" "${1:-6000}"
