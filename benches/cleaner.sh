#!/usr/bin/env bash
# What the log cleaner costs the clients beside it, in release (tests/bin/cleaner_latency.rs):
# produce (one small batch, fsync always) and fetch (64 KiB) latency on a plain topic, with the
# engine's cleaner thread idle and then compacting a topic of MB megabytes in the same engine,
# in alternated rounds; once without a rate limit and once at RATE MB/s (figures in
# docs/benchmarks.md).
# Usage: benches/cleaner.sh [MB] [ROUNDS] [RATE]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p logd-tests --bin logd-cleaner-latency
bin=target/release/logd-cleaner-latency
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "round mode produce_p50_us produce_p99_us fetch_p50_us fetch_p99_us freed_mb"
echo "unlimited:"
"$bin" "$dir/a" "${1:-100}" "${2:-4}" | grep ROUND
echo "at ${3:-25} MB/s:"
"$bin" "$dir/b" "${1:-100}" "${2:-4}" "${3:-25}" | grep ROUND
