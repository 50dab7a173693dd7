#!/usr/bin/env bash
# A member joining a busy group of ten (benches/join_latency.py), in release: the time to its
# first record and the longest the other ten stop, with the classic protocol against KIP-848's
# consumer protocol (confluent-kafka, librdkafka's defaults for each). Figures in
# docs/benchmarks.md. Needs the pinned Python clients (`cargo test` provisions them into
# target/test-clients/python).
# Usage: benches/join_latency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python=target/test-clients/python/bin/python3
[ -x "$python" ] || { echo "no $python: run the daemon tests once to provision it" >&2; exit 1; }
cargo build --release --bin logd
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
target/release/logd --data-dir "$dir" --listen 127.0.0.1:39093 --http-listen none \
  --group-initial-rebalance-delay-ms 0 > "$dir/logd.log" 2>&1 &
pid=$!
sleep 1
"$python" benches/join_latency.py 127.0.0.1:39093
