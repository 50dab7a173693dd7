#!/usr/bin/env bash
# Transactional produce and read_committed consume against a release logd daemon, each beside
# its baseline in the same run (benches/transactions.py, confluent-kafka). Figures in
# docs/benchmarks.md. Needs the pinned Python clients (`cargo test` provisions them into
# target/test-clients/python).
# Usage: benches/transactions.sh [RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
python=target/test-clients/python/bin/python3
[ -x "$python" ] || { echo "no $python: run the daemon tests once to provision it" >&2; exit 1; }
cargo build --release --bin logd
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
target/release/logd --data-dir "$dir" --listen 127.0.0.1:39093 --http-listen 127.0.0.1:0 \
  > "$dir/logd.log" 2>&1 &
pid=$!
sleep 1
"$python" benches/transactions.py 127.0.0.1:39093 "${1:-200000}"
