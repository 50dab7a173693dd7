#!/usr/bin/env bash
# Retry workers scaling out (tests/bin/group_bench.rs), in release: 1, 2 and 4 worker processes
# in one group on logd's broker over a topic of 12 partitions, each record's handler taking
# 1 ms; prints each round's steady rate of processed records and its ratio to one worker's;
# then one retry worker over a share group of the embedded engine (ShareWorker) with the same
# handler, acquiring 1, 10, 100 and 500 records per poll (figures in docs/benchmarks.md).
# Usage: benches/retry_scale.sh [RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p logd-tests --bin logd-group-bench --bin logd-group-worker \
  --bin logd-share-worker-bench
target/release/logd-group-bench "${1:-12000}" 1
target/release/logd-share-worker-bench "${1:-12000}" 1 1 10 100 500
