#!/usr/bin/env bash
# Many partitions with the embedded engine, in release (tests/bin/many_partitions.rs): ten
# topics of 1,000 partitions under an open-file limit of 1,024 with 512 files kept open (the
# time their creation took, open after a clean close, in milliseconds, and the anonymous
# memory per idle partition), then produce spread over those 10,000 partitions against one partition in the same run (randomly
# keyed 100-byte records, 3,000,000 per round, three rounds), under fsync interval with 512,
# 10,000 (what `logd` keeps open under a limit of 20,000) and 16,000 open files, and under fsync
# never with 16,000 (figures in docs/benchmarks.md).
# Usage: benches/partitions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p logd-tests --bin logd-many-partitions
bin=target/release/logd-many-partitions
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "create (ms the topic creations took), then open (partitions, open ms, anonymous bytes per partition):"
"$bin" create "$dir/a" 10 1000 1024 512
"$bin" open "$dir/a" 10 1000 1024 512
rm -rf "$dir/a"
for args in "1024 512" "20000 10000" "20000 16000" "20000 16000 never"; do
  echo "produce, limit and open files $args (round, one partition/s, 10,000 partitions/s, ratio):"
  # shellcheck disable=SC2086
  "$bin" produce "$dir/p" 10 1000 $args | grep ROUND
  rm -rf "$dir/p"
done
